"""Claims: the propositions a program states about its paths, checked on the
path the simulator runs (§Claims).

A claim reads and does not act: nothing here writes the machine's state, its
random streams or its statistics, so a program runs the same with its claims
removed (``tests/claims/test_claims.py`` holds the report to that).

* ``every iteration of S (e)`` is read when an iteration of the step stage S
  starts, after its batch is scheduled (where ``execute`` is read): it holds,
  or fails at the first iteration where ``e`` is 0 (or NaN).
* ``some iteration of S (e)`` is witnessed at the first iteration where ``e``
  is non-zero, or not witnessed.
* ``at end (e)`` is read when the run ends: it holds or fails, and is not
  evaluated when sessions are still live (the run did not reach the end the
  claim is about; ``--arrivals N`` drains them).
* ``given (g)`` is read for each session once its init block has run (and an
  explicit session's preset attributes are written); the first session that
  reads 0 puts the claim out of the run's scope, and it is checked no
  further, whatever it found before.

Warm-up does not apply: iterations are counted, and the aggregates read, from
time 0.  An iteration is numbered from 1, over the stage's iterations from the
start of the run (an iteration that only preempted counts, one that scheduled
nothing and preempted nobody is none).

What the report gives of a claim (JSON ``claims[]``): ``name``, ``form``
(``every iteration``, ``some iteration``, ``at end``), ``stage`` (the engine's
label, or null), ``verdict`` (one of ``VERDICTS``), ``time`` and
``iteration`` (the failing or witnessing iteration; the end for a claim at
end; the arrival of the session that put the claim out of scope),
``iterations`` (the iterations the claim was read at), ``session`` (the one
that put it out of scope) and ``read``: what the claim's expression read
there, by the names the source reads them (``demand``, ``tokens``,
``used(kv)``, ``total(latency)``; for ``out_of_scope`` the session's
attributes the given reads), or null.
"""

from __future__ import annotations

from ..ir import model as M
from ..ir.expr import walk
from .compile import CTX
from .errors import Fault
from .stats import fsum
from .stages import MODE_DECODE

VERDICTS = ("holds", "fails", "witnessed", "not_witnessed", "out_of_scope", "not_evaluated")

# How a claim spells the context variables it reads (§Claims): the cost's
# variables bare, as a claim over iterations names them.
SPELLING = {
    "Now": "now", "Demand": "demand", "Served": "served", "Arrived": "arrived",
    "Ntok": "tokens", "Npre": "prefilled", "Ndec": "decoders", "Nres": "residents",
    "Kvb": "kv_decode", "Kvp": "kv_prefill", "Attn": "attention",
}
QUERY_SPELLING = {"Used": "used", "Free": "free", "Holders": "holders", "Queued": "queued",
                  "Queue": "queue", "Busy": "busy"}
AGG_SPELLING = {"Total": "total", "Count": "count", "Largest": "largest", "Smallest": "smallest",
                "PrefixTotal": "prefix_total"}

C_DEMAND, C_SERVED, C_ARRIVED = CTX["Demand"], CTX["Served"], CTX["Arrived"]

EVERY, SOME, AT_END = "every iteration", "some iteration", "at end"


def _true(v: float) -> bool:
    return v != 0.0 and v == v


class ClaimCheck:
    """One claim's check on the path: its compiled expression and given, the
    leaves it reads (to report them), and what it found."""

    def __init__(self, sim, decl: M.Claim):
        comp = sim.comp
        self.decl = decl
        self.name = decl.name
        kind = type(decl.kind)
        self.form = EVERY if kind is M.CEvery else SOME if kind is M.CSome else AT_END
        self.stage = None if kind is M.CAtEnd else decl.kind.stage
        self.f = comp.expr(decl.expr)
        self.reads = _leaves(sim, decl.expr)
        self.given = None if decl.given is None else comp.expr(decl.given)
        self.given_reads = [] if decl.given is None else _leaves(sim, decl.given)
        self.verdict = None
        self.time = None
        self.iteration = None
        self.iterations = 0
        self.session = None
        self.read = None
        self.scope = True
        self.live = None        # not_evaluated: the sessions live at the end
        self.decided = False    # failed or witnessed: read no further

    # -- reading ---------------------------------------------------------------
    def value(self, carrier) -> float:
        try:
            return self.f(carrier)
        except Fault:   # a claim cannot stop the run: what it cannot read is not true
            return float("nan")

    def snapshot(self, leaves, carrier) -> dict:
        out = {}
        for label, f in leaves:
            try:
                out[label] = f(carrier)
            except Fault:
                out[label] = float("nan")
        return out

    def entry(self, sim) -> dict:
        """The claim's record in the JSON report."""
        return {
            "name": self.name,
            "form": self.form,
            "stage": None if self.stage is None else sim.program.stage_label(self.stage),
            "verdict": self.verdict,
            "time": self.time,
            "iteration": self.iteration,
            "iterations": None if self.stage is None else self.iterations,
            "session": self.session,
            "read": self.read,
        }


def _leaves(sim, e: M.Expr) -> list:
    """The values ``e`` reads, in the order it reads them, each once: context
    variables, observables, registers, aggregates and attributes, labelled as
    the source spells them, with a function that reads each."""
    p = sim.program
    comp = sim.comp
    seen = {}
    for x in walk(e):
        t = type(x)
        if t is M.ECtx:
            label = SPELLING.get(x.var, x.var)
        elif t is M.EQuery:
            pool = x.query in M.POOL_QUERIES
            k = comp.const_member(x.ref)
            if k is None:   # a gauge's and a claim's indices are numbers (validated)
                continue
            label = f"{QUERY_SPELLING.get(x.query, x.query.lower())}" \
                    f"({p.pool_label(k) if pool else p.stage_label(k)})"
        elif t is M.EReg:
            label = p.registers[x.index].name
        elif t is M.EAgg:
            label = f"{AGG_SPELLING[x.agg]}({p.observes[x.observe]})"
        elif t is M.EAttr:
            label = p.attrs[x.slot]
        else:
            continue
        if label not in seen:
            seen[label] = comp.expr(x)
    return list(seen.items())


# -- the moments -------------------------------------------------------------------

def check_given(sim, t) -> None:
    """A session's init has run: read each claim's given for it."""
    for c in sim.claims:
        if c.given is None or not c.scope:
            continue
        try:
            v = c.given(t)
        except Fault:
            v = float("nan")
        if not _true(v):
            c.scope = False
            c.verdict = "out_of_scope"
            c.session = t.sess.sid
            c.time = sim.now
            c.iteration = None
            c.read = c.snapshot(c.given_reads, t)


def demand(stage, chunk: float) -> float:
    """What the stage's residents could take in this iteration with an
    unlimited budget: one token for a decode with work left (its remainder if
    less), the remaining prompt up to the chunk for a prefill (§Claims)."""
    total = 0.0
    for j in stage.residents:
        if j.mode == MODE_DECODE:
            total += 1.0 if j.rem >= 1.0 else j.rem
        else:
            total += j.rem if (chunk <= 0 or j.rem <= chunk) else chunk
    return total


def check_iteration(sim, stage, plan) -> None:
    """An iteration of ``stage`` starts, its batch scheduled and the cost's
    variables in the context: read the claims over its iterations."""
    n = stage.iters_all
    live = [c for c in stage.claims_every if c.scope and not c.decided]
    if not live:
        return
    ctx = sim.ctx
    ctx[C_DEMAND] = demand(stage, plan.chunk)
    ctx[C_SERVED] = stage.served_total
    ctx[C_ARRIVED] = float(sim.n_arrived)
    car = sim.mcar
    for c in live:
        c.iterations = n
        ok = _true(c.value(car))
        if (c.form == EVERY) != ok:
            c.decided = True
            c.verdict = "fails" if c.form == EVERY else "witnessed"
            c.time = sim.now
            c.iteration = n
            c.read = c.snapshot(c.reads, car)


def finish(sim) -> None:
    """The run has ended: the claims at end are read, the others concluded."""
    car = sim.mcar
    for c in sim.claims:
        if not c.scope:
            continue
        if sim.stopped is not None:    # a partial run reached neither its end nor a verdict
            if c.verdict is None:
                c.time = sim.end_time
                c.verdict = "not_evaluated"
                c.live = sim.live
            continue
        if c.stage is not None:
            if not c.decided:
                c.iterations = sim.stages[c.stage].iters_all
                c.verdict = "holds" if c.form == EVERY else "not_witnessed"
            continue
        c.time = sim.end_time
        if sim.live > 0:
            c.verdict = "not_evaluated"
            c.live = sim.live
            continue
        c.verdict = "holds" if _true(c.value(car)) else "fails"
        c.read = c.snapshot(c.reads, car)


class Claims:
    """What the machine (``serq.sim.machine.Sim``) answers for its claims: the
    aggregates of an observation over the run (``total(latency)``, read from
    time 0), a session's ``given``, the claims on an engine's iteration."""

    def agg_fn(self, agg: str, k: int):
        def f(t):
            vals = self.all_obs[k] if self.all_obs is not None else []
            if agg == "Total":
                return fsum(vals)
            if agg == "Count":
                return float(len(vals))
            if agg == "Largest":
                return max(vals) if vals else 0.0
            if agg == "Smallest":
                return min(vals) if vals else 0.0
            xs = sorted(vals)
            tot = 0.0
            run = 0.0
            for x in xs:
                run += x
                tot += run
            return tot
        return f

    def check_given(self, t) -> None:
        check_given(self, t)

    def check_iteration_claims(self, stage, plan) -> None:
        check_iteration(self, stage, plan)
