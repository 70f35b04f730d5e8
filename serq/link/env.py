"""The environment an expression is linked in: its clause (which fixes what it
may name), the local substitutions in force (a definition's parameters, an
aggregate's index, `at admission` bindings, an engine request's parameters,
a schedule's lets) and the engine whose clause it is."""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any, Optional

from ..diag import Span
from ..records import dataclass

# The clauses an expression can stand in, and the IR moment each is read at.
CLAUSE_MOMENT = {
    "session": "Session", "cache": "Session", "header": "Admit", "queue_key": "Select",
    "evict": "Evict", "spill": "Evict", "ps": "Ps", "tokens_cap": "Budget", "sched_budget": "Budget",
    "execute": "Step", "sched_serve": "Serve", "sched_only": "Only", "preempt_key": "Victim",
    "sched_plan": "Plan", "gauge": "Gauge", "given": "Given", "claim_iter": "Iteration",
    "claim_end": "End", "arrival": "Arrival", "lease": "Lease", "const": None,
}


@dataclass
class Env:
    clause: str = "session"
    subst: dict = field(default_factory=dict)     # name -> (AST, Env)
    engine: Any = None                            # EngineInfo for engine clauses
    member: int = 0                               # the member of an engine family
    device: Any = None                            # DeviceInfo whose time resources execute reads
    expansions: tuple = ()                        # (what, span) of the definitions being expanded
    in_request: Any = None                        # EngineInfo whose request this is
    entry: Any = None                             # entries.Scope of the queue entry being expanded
    rename: dict = field(default_factory=dict)    # an entry's own attribute -> its IR name (`D.known`)
    assigned: Optional[frozenset] = None          # a header in an entry: its locals set above the hold

    def with_subst(self, extra: dict) -> "Env":
        s = dict(self.subst)
        s.update(extra)
        return replace(self, subst=s)

    def at(self, clause: str) -> "Env":
        return replace(self, clause=clause)

    def fresh(self, **kw) -> "Env":
        """A definition's body: the program's names and its own parameters."""
        return replace(self, subst={}, assigned=None, **kw)

    def expanding(self, what: str, span: Span) -> "Env":
        return replace(self, expansions=self.expansions + ((what, span),))
