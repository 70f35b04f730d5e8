"""The moments at which an expression is evaluated, and what each supplies.

An expression's position in the IR fixes its moment; a context variable,
an attribute, a draw or an observable is legal only at the moments that
supply it.  This table is the language's rule, read by the IR validator
(which the linker also runs, mapping each problem back to its source span).
"""

from __future__ import annotations

from ..records import dataclass

ALL_QUERIES = frozenset({"Used", "Free", "CachedIn", "Holders", "Queued", "Prefilling", "Queue", "Busy", "Work",
                         "EstLambda", "EstRho", "EstWait", "BudgetLeft", "Price"})


@dataclass(frozen=True)
class Moment:
    name: str
    ctx: frozenset          # context variables supplied
    attrs: bool             # a session is there: attributes may be read
    hidden: bool            # hidden attributes may be read
    draws: bool             # a draw is allowed
    queries: frozenset      # observables allowed
    index_num: bool = False  # a pool/stage index must be a number
    aggs: bool = False       # total(o), count(o), … allowed
    description: str = ""


def _m(name, ctx, attrs, hidden, draws, queries=ALL_QUERIES, index_num=False, aggs=False, description=""):
    return Moment(name, frozenset(ctx), attrs, hidden, draws, frozenset(queries), index_num, aggs,
                  description)


RESIDENTS = ("Nres", "Ndec", "Kvb", "Kvp")

MOMENTS = {m.name: m for m in [
    _m("Session", ["Now"], True, True, True,
       description="a statement"),
    _m("Admit", ["Now"], True, False, False,
       description="a hold's units, reserve and reuse, read when the session is admitted"),
    _m("AdmitEngine", ["Now", "Ntok", "Npre"], True, False, False,
       description="a hold's units, reserve and reuse, read when an engine admits the session "
                   "(with its iteration's batch so far)"),
    _m("Select", ["Waited", "Now"], True, False, False,
       description="a pool's queue keys"),
    _m("Evict", ["Size", "Age", "Last", "Waiting", "Now"], True, False, True,
       description="an eviction key or a spill clause"),
    _m("Ps", ["Present", "Now"], False, False, True,
       description="a ps stage's capacity"),
    _m("Budget", list(RESIDENTS) + ["Now"], False, False, True,
       description="an engine's tokens cap and each at most, read as the iteration starts"),
    _m("Step", list(RESIDENTS) + ["Ntok", "Npre", "Attn", "Now"], False, False, True,
       description="an engine's execute, read after the batch is scheduled"),
    _m("Serve", list(RESIDENTS) + ["Decoding", "Admission", "Remaining", "Now"], True, False, False,
       description="a key or only (p) of advance running / admit waiting, read for one request"),
    _m("Only", list(RESIDENTS) + ["Decoding", "Admission", "Remaining"], True, False, False,
       ALL_QUERIES - {"Work"},
       description="an only (p) predicate, read for one request"),
    _m("Victim", ["Decoding", "Admission", "Position", "Now"], True, False, False,
       ALL_QUERIES - {"BudgetLeft"},
       description="a pool's preemption keys, read for each candidate"),
    _m("Running", list(RESIDENTS) + ["Decoding", "Admission", "Remaining", "Position", "Now"], True, False, False,
       description="the body of sum … in running (…), read for each running request"),
    _m("Held", ["Decoding", "Remaining", "Position", "Reserved", "Now"], True, False, False,
       ALL_QUERIES - {"BudgetLeft", "Work"},
       description="a pool's reserve held (e), read for each live hold"),
    _m("CacheAt", ["Decoding", "Remaining", "Position", "Now"], True, False, False,
       ALL_QUERIES - {"BudgetLeft", "Work"},
       description="a pool's cache at (e), read for a hold an engine's iteration computes in it"),
    _m("Plan", list(RESIDENTS) + ["Ntok", "Npre", "Admitted", "Preempted", "Blocked"], False, False, False,
       ALL_QUERIES - {"Work"},
       description="a schedule's branch guard, while condition or register assignment"),
    _m("Gauge", [], False, False, False,
       ALL_QUERIES - {"CachedIn", "Work", "BudgetLeft", "Price", "EstLambda", "EstRho", "EstWait"},
       index_num=True, description="a gauge"),
    _m("Given", [], True, True, False, frozenset(),
       description="a claim's given, read for each session after its init"),
    _m("Iteration", list(RESIDENTS) + ["Ntok", "Npre", "Attn", "Demand", "Served", "Arrived", "Now"],
       False, False, False, frozenset({"Queue", "Busy", "Used", "Free", "Holders", "Queued"}),
       index_num=True, description="a claim over iterations"),
    _m("End", ["Now"], False, False, False, frozenset(), aggs=True,
       description="a claim at end"),
    _m("Arrival", [], False, False, True, frozenset(),
       description="a renewal gap"),
    _m("Lease", ["Now"], True, True, False,
       description="a lease's duration"),
]}

# How the source spells each context variable (for messages).
CTX_SPELLING = {
    "Now": "now", "Waited": "waited", "Size": "size", "Age": "age", "Last": "last",
    "Waiting": "waiting", "Present": "present",
    "Nres": "running.count", "Ndec": "running.decoding", "Kvb": "running.kv_decode",
    "Kvp": "running.kv_prefill", "Ntok": "batch.tokens", "Npre": "batch.prefilled",
    "Attn": "batch.attention", "Decoding": "decoding", "Admission": "admission",
    "Remaining": "remaining", "Position": "position", "Admitted": "waiting.admitted",
    "Preempted": "running.preempted", "Demand": "demand", "Served": "served",
    "Arrived": "arrived", "Reserved": "reserved", "Blocked": "waiting.blocked",
}

QUERY_SPELLING = {
    "Used": "used", "Free": "free", "CachedIn": "cachedin", "Holders": "holders",
    "Queued": "queued", "Prefilling": "prefilling", "Queue": "queue", "Busy": "busy", "Work": "work",
    "EstLambda": "est_lambda", "EstRho": "est_rho", "EstWait": "est_wait",
    "BudgetLeft": "budget_left", "Price": "price",
}
