"""Gauges and claims: what the program measures and states of a run, linked after the workload."""

from __future__ import annotations

from ..ir import model as M
from ..ir.expr import const_value
from ..syntax import ast as A
from .env import Env


class Measures:
    """*Part of Linker*: a gauge's expression, a claim's form and stage."""

    def gauge(self, g: A.GaugeDecl):
        if g.name in self.observe_index:
            self.fail("E210", f"`{g.name}` is already an observation; a gauge takes another name",
                      g.name_span)
        e = self.expr(g.expr, Env(clause="gauge"))
        self.gauges.append(M.Gauge(g.name, e, self.loc(g.span)))

    def claim(self, c: A.ClaimDecl):
        given = self.expr(c.given, Env(clause="given")) if c.given is not None else None
        if c.form == "end":
            e = self.expr(c.expr, Env(clause="claim_end"))
            kind = M.CAtEnd()
        else:
            ref = self.ref_of(c.stage, Env(clause="const"), "stage")
            st = self.stages_meta[ref.base]
            if type(st.kind) is not M.KStep:
                self.fail("E302", f"`{st.name}` is not an engine: a claim over iterations names an engine",
                          c.stage.span)
            idx = ref.base if ref.index is None else ref.base + int(const_value(ref.index))
            if ref.index is not None and const_value(ref.index) is None:
                self.fail("E403", "a claim names an engine's member by a constant index", c.stage.span)
            e = self.expr(c.expr, Env(clause="claim_iter"))
            kind = M.CEvery(idx) if c.form == "every" else M.CSome(idx)
        self.claims.append(M.Claim(c.name, kind, e, given, self.loc(c.span)))

