"""Engines: each engine's step stages (budget, cost, granule, memory), its schedule, iterations, chunk."""

from __future__ import annotations

import math
from typing import Optional

from ..diag import Sources, Span
from ..ir import model as M
from ..ir.expr import const_value, walk
from ..syntax import ast as A
from . import entries
from .env import Env
from .nodes import LinkAbort, fmt
from .tables import EngineInfo


class Engines:
    """*Part of Linker*: an engine's clauses lowered member by member into
    `KStep`, once every declaration is known."""

    def engine(self, eng: EngineInfo):
        item = eng.decl
        sched = eng.schedule
        execute = next((i for i in item.items if isinstance(i, A.EExecute)), None)
        granule = next((i for i in item.items if isinstance(i, A.EGranule)), None)
        if sched is None or execute is None or "tokens" not in eng.caps:
            return
        said_budget = False
        for member in range(eng.count):
            base_env = Env(engine=eng, member=member, device=eng.device)
            if eng.name in self.queues:
                base_env = base_env.with_subst(entries.own_pools(self, self.queues[eng.name], member))
            budget = self.try_expr(eng.caps["tokens"][1].expr, base_env.at("tokens_cap"))
            b = const_value(budget)
            if b is not None and b < 0 and not said_budget:
                said_budget = True
                self.diag.add("E403", f"an engine's tokens cap is a number ≥ 0, not {fmt(b)}",
                              eng.caps["tokens"][1].expr.span,
                              help="the tokens an iteration schedules at most (vLLM's max_num_batched_tokens)")
            cost = self.try_expr(execute.expr, base_env.at("execute"))
            gran = None
            if granule is not None:
                g, _ = self.const_expr(granule.expr, Env(clause="const"))
                if not g > 0:
                    self.diag.add("E403", f"a granule is positive, not {fmt(g)}", granule.expr.span)
                gran = g
            serve, iteration, chunk = self.schedule(eng, sched, base_env)
            if gran is not None and type(serve) is M.ServeExclusivePrefill:
                self.diag.add("E249", "a granule cannot be combined with exclusive prefill", granule.span)
            memory = None
            if eng.memory is not None:
                memory = eng.memory + (member if self.pool_fams[self.pools_meta[eng.memory].name].count > 1 else 0)
            kind = M.KStep(budget=budget, cost=cost, chunk=chunk, serve=serve, memory=memory,
                           granule=gran, iteration=iteration)
            self.stages_meta[eng.base + member].kind = kind

    def schedule(self, eng: EngineInfo, sched: A.ESchedule, env: Env):
        lets = {}
        for let in sched.lets:
            if let.name in self.defs or let.name in self.consts:
                self.diag.add("E210", f"a schedule's let `{let.name}` cannot share its name with a "
                              "def or a program's let", let.name_span)
            lets[let.name] = (let.expr, env.at("sched_budget"))
        stmts = sched.stmts
        # each at most: one cap for the whole iteration
        caps = [s.atmost for s in _sched_walk(stmts) if getattr(s, "atmost", None) is not None]
        chunk = self.num(0, sched.span)
        if caps:
            lowered = []
            for c in caps:
                try:
                    lowered.append((self.expr(c, env.at("sched_budget").with_subst(lets)), c))
                except LinkAbort:
                    pass
            if lowered:
                first, cspan = lowered[0]
                for other, ospan in lowered[1:]:
                    if other != first:
                        self.diag.add("E250", "every `each at most` of a schedule says the same cap: "
                                      "one cap per run for the whole iteration", ospan.span)
                chunk = self.chunk_of(first, cspan)
        takings = [s.taking for s in _sched_walk(stmts) if isinstance(s, A.SAdmit) and s.taking]
        if takings:
            eng.taking = takings[0]
            first: dict = {}
            for tk in takings[0].takes if env.member == 0 else []:
                name = _source_text(tk.ref.span) or tk.ref.text()
                if name in first:
                    self.diag.add("E721", f"`taking` names `{name}` twice", tk.ref.span,
                                  notes=[f"first named at {first[name]}"],
                                  help="an admission takes each pool once: add the units into one `POOL (…)`")
                first.setdefault(name, tk.ref.span)
            for t in takings[1:]:
                if _strip(t) != _strip(takings[0]):
                    self.diag.add("E250", "every `admit waiting` of an engine writes the same `taking`",
                                  t.span)
        # the recognised forms
        gate_ok = lambda g: g is not None and self.is_not_preempted(g, env)
        if len(stmts) == 2 and isinstance(stmts[0], A.SAdvance) and isinstance(stmts[1], A.SAdmit) \
                and gate_ok(stmts[1].guard):
            adv, adm = stmts
            keys = self.order_keys(adv.order, env)
            if adv.only is None and adm.only is None:
                return M.ServeBy(keys), None, chunk
            if adv.only is not None and adm.only is not None:
                p1 = self.try_expr(adv.only, env.at("sched_only"))
                p2 = self.try_expr(adm.only, env.at("sched_only"))
                if p1 == p2:
                    gate = self.mk(M.EUnary("Not", self.mk(M.ECtx("Preempted"), adm.guard.span)),
                                   adm.guard.span)
                    return M.ServeBy(keys), (M.IServe(only=p1), M.IAdmit(only=p1, gate=gate)), chunk
        if len(stmts) == 2 and isinstance(stmts[0], A.SExclusive) and isinstance(stmts[1], A.SAdmit) \
                and gate_ok(stmts[1].guard) and stmts[1].only is None:
            return M.ServeExclusivePrefill(), None, chunk
        body = tuple(self.iter_stmts(stmts, env))
        return M.ServeBy(()), body, chunk

    def is_not_preempted(self, g: A.Expr, env: Env) -> bool:
        try:
            v = self.expr(g, env.at("sched_plan"))
        except LinkAbort:
            return False
        pre = M.ECtx("Preempted")
        return v == M.EBinary("Eq", pre, M.ENum(0.0)) or v == M.EUnary("Not", pre)

    def order_keys(self, order: Optional[A.Order], env: Env) -> tuple:
        if order is None or order.kind == "admission":
            return ()
        if order.kind == "decode_first":
            sp = order.span
            return (self.mk(M.ECond(self.mk(M.ECtx("Decoding"), sp), self.num(0, sp), self.num(1, sp)), sp),)
        return tuple(self.try_expr(k, env.at("sched_serve")) for k in order.keys)

    def iter_stmts(self, stmts, env: Env):
        for s in stmts:
            try:
                if isinstance(s, A.SAdvance):
                    only = self.expr(s.only, env.at("sched_only")) if s.only is not None else None
                    by = self.order_keys(s.order, env) if s.order is not None else None
                    yield M.IServe(only=only, by=by)
                elif isinstance(s, A.SAdmit):
                    only = self.expr(s.only, env.at("sched_only")) if s.only is not None else None
                    gate = self.expr(s.guard, env.at("sched_plan")) if s.guard is not None else None
                    yield M.IAdmit(only=only, gate=gate)
                elif isinstance(s, A.SBranch):
                    g = self.expr(s.guard, env.at("sched_plan"))
                    yield M.IBranch(g, tuple(self.iter_stmts(s.then, env)),
                                    tuple(self.iter_stmts(s.other or [], env)))
                elif isinstance(s, A.SSet):
                    if s.name not in self.register_index:
                        self.fail("E201", f"`{s.name}` is not a register of this engine", s.span,
                                  help=f"declare it: `state {s.name} = 0;`")
                    r = self.register_index[s.name]
                    yield M.ISet(r, self.expr(s.expr, env.at("sched_plan")))
                elif isinstance(s, A.SExclusive):
                    self.fail("E251", "`exclusive prefill` appears only as "
                              "`exclusive prefill; admit waiting while (running.preempted == 0);`",
                              s.span)
            except LinkAbort:
                pass

    def chunk_of(self, e: M.Expr, src: A.Expr) -> M.Expr:
        """`each at most (e)` as the kernel's chunk, where 0 means no cap: a cap
        of inf is written 0, and Z3 shows that every value the cap can take,
        for every value of what its condition reads, is above 0 (the kernel
        would read 0 as no cap: the program would mean one thing and run
        another).  A cap whose every branch is a number above 0 needs no
        proof (nor Z3's start-up)."""
        cex = None if _above_zero(e) else self._cap_counterexample(e)
        if cex is not None:
            text = _source_text(src.span)
            named = []
            for x in walk(e):
                if type(x) is M.ENum and not x.value > 0:
                    sp = self.spans.get(id(x))
                    word = _source_text(sp) if sp else None
                    if word and word.isidentifier() and word in self.consts:
                        named.append(f"{word} = {fmt(x.value)}")
            state = ", ".join(f"{n} = {v}" for n, v in cex.assignment)
            if cex.value == "unknown":
                msg = f"each at most ({text}): Z3 cannot show that the cap is above 0"
            else:
                msg = (f"{'with ' + ', '.join(sorted(set(named))) + ', ' if named else ''}"
                       f"each at most ({text}) is {cex.value}" + (f" when {state}" if state else ""))
            self.diag.add("E407", msg, src.span,
                          help="a cap at or below 0 does not link (the kernel reads 0 as no cap): write "
                               "`inf` for no cap, a constant above 0, or `max(k, e)` with a constant k > 0")
            return self.num(0, src.span)

        def conv(x):
            if type(x) is M.ENum and math.isinf(x.value) and x.value > 0:
                return self.num(0, self.spans.get(id(x), src.span))
            if type(x) is M.ECond:
                return self.mk(M.ECond(x.cond, conv(x.then), conv(x.other)),
                               self.spans.get(id(x), src.span))
            return x
        return self.fold(conv(e))


    def _cap_counterexample(self, e: M.Expr):
        from .. import smt

        def ref_name(ref, kind):
            decls = self.pools_meta if kind == "pool" else self.stages_meta
            return decls[ref.base].name if 0 <= ref.base < len(decls) else f"{kind}{ref.base}"

        return smt.cap_counterexample(e, name_of_ref=ref_name, reg_names=tuple(r.name for r in self.registers))


def _above_zero(e: M.Expr) -> bool:
    """Every value ``e`` can take is above 0: a number, or a condition whose
    branches are (``n > 1 ? chunk_cap : inf``)."""
    if type(e) is M.ENum:
        return e.value > 0
    if type(e) is M.ECond:
        return _above_zero(e.then) and _above_zero(e.other)
    return False


def _source_text(span: Optional[Span]) -> Optional[str]:
    if span is None or span.line != span.end_line:
        return None
    line = Sources.line(span.file, span.line)
    if line is None:
        return None
    return line[span.col - 1:span.end_col - 1]


def _sched_walk(stmts):
    for s in stmts:
        yield s
        if isinstance(s, A.SBranch):
            yield from _sched_walk(s.then)
            yield from _sched_walk(s.other or [])


def _strip(node):
    """An AST without spans, for structural comparison."""
    if isinstance(node, list):
        return [_strip(x) for x in node]
    if isinstance(node, A.Node):
        return (type(node).__name__,) + tuple(
            (k, _strip(v)) for k, v in sorted(vars(node).items()) if k not in ("span", "name_span"))
    return node

