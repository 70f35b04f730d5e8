"""The Lean fragment: which IR programs the Lean semantics runs, and their
translation into the terms of `lean/Serq/Spec/Syntax.lean`.

A program is in the fragment exactly when the development guide's "What fits
in the fragment" holds:

* the time is the step clock: one step engine, stage 0, with cost 1 (`execute
  (1)`), serving its residents in admission order (no serve clause but the
  default, no schedule body, no granule), and every other stage a delay;
* the pools are LRU, and either admitted via the engine or the engine's memory
  with `preempt lifo`, with no queue key and no spill;
* nothing is drawn: no `~`, no poisson arrivals; the sessions are explicit
  (`Sessions`), with preset attributes, and the workload has no turn block and
  no trace (`serq ir --inline-trace` writes a trace out as sessions);
* the statements are turn, hold, run, set, observe, branch, loop and end, and
  the expressions are naturals, attributes, now, cachedin, budget_left, min,
  max, +, -, *, floor(a / b), comparisons and ?:.

What the guide leaves implicit is read as follows (docs/lean.md): the engine's
`tokens cap` and `each at most` also read running.count and waiting.count
(vLLM's threshold, which every oracle program writes); budget_left is read
only by a hold the engine admits; a growing run grows the engine's memory; a
hold has no lease; no pool reserves held; every constant and amount is a
natural number (a fraction or inf has no ℕ); registers, `share` and families
of pools or stages (`kv[4]`) are outside.  A claim's expression may also read
`&&`, `||`, `!` and the variables of its form (Claims); gauges do not change
a run and are not translated.

Translation is the check: `translate` either returns the program's terms or
raises `Outside` naming the first construct it cannot write, with its source
location.
"""

from __future__ import annotations

import math
from typing import Optional

from serq.ir import model as M

from .lterms import Claim, Engine, HoldPool, Pool, Program, Session


class Outside(Exception):
    """The program is outside the Lean fragment: `what` at `where`."""

    def __init__(self, what: str, where: str):
        super().__init__(f"{what} at {where}")
        self.what = what
        self.where = where

    def line(self) -> str:
        return f"FAIL: outside the Lean fragment: {self.what} at {self.where}"


BINOPS = {"Add": "add", "Sub": "sub", "Mul": "mul", "Lt": "lt", "Le": "le", "Gt": "gt", "Ge": "ge",
          "Eq": "eq", "Ne": "ne"}
SPELL_OP = {"Div": "a division outside floor(a / b)", "Pow": "a power (^)", "And": "`&&`",
            "Or": "`||`"}
ITER_VARS = {"Ntok": "tokens", "Npre": "prefilled", "Ndec": "decoders", "Nres": "residents",
             "Kvb": "kvDecode", "Kvp": "kvPrefill", "Demand": "demand", "Served": "served",
             "Arrived": "arrived"}
AGGS = {"Total": "total", "Count": "count", "Largest": "largest", "Smallest": "smallest",
        "PrefixTotal": "prefixTotal"}
CTX_SPELL = {"Now": "now", "Waited": "waited", "Size": "size", "Age": "age", "Last": "last",
             "Waiting": "waiting", "Present": "present", "Nres": "running.count",
             "Ndec": "running.decoding", "Kvb": "running.kv_decode", "Kvp": "running.kv_prefill",
             "Ntok": "batch.tokens", "Npre": "batch.prefilled", "Attn": "batch.attention",
             "Decoding": "decoding", "Admission": "admission", "Remaining": "remaining",
             "Position": "position", "Admitted": "waiting.admitted", "Preempted": "running.preempted",
             "Demand": "demand", "Served": "served", "Arrived": "arrived"}
QUERY_SPELL = {"Used": "used", "Free": "free", "CachedIn": "cachedin", "Holders": "holders",
               "Queued": "queued", "Queue": "queue", "Busy": "busy", "Work": "work",
               "EstLambda": "est_lambda", "EstRho": "est_rho", "EstWait": "est_wait",
               "BudgetLeft": "budget_left"}
DISTS = {"Exp": "~exp", "Det": "~det", "Uniform": "~uniform", "Erlang": "~erlang", "H2": "~h2",
         "Bernoulli": "~bernoulli"}

# what an expression may read, by where it stands
PROGRAM, ENGINE, ADMIT, ITERATION, END, GIVEN = "program", "engine", "admit", "iteration", "end", "given"


def whole(x: float, what: str, where: str) -> int:
    if isinstance(x, float) and math.isinf(x):
        raise Outside(f"an infinite {what}", where)
    if x != math.floor(x):
        raise Outside(f"a fractional {what} {fmt(x)}", where)
    if x < 0:
        raise Outside(f"a negative {what} {fmt(x)}", where)
    return int(x)


def fmt(x: float) -> str:
    return str(int(x)) if x == math.floor(x) and not math.isinf(x) else repr(x)


class Translator:
    def __init__(self, p: M.Program, path: str = "program"):
        self.p = p
        self.path = path

    # -- locations ---------------------------------------------------------
    def at(self, loc: Optional[M.Loc]) -> str:
        if loc is None:
            return self.path
        return self.p.loc_str(loc)

    def workload_loc(self) -> str:
        """The arrival and the trace carry no location: name the session
        block's first statement, which stands in the workload."""
        for loc in self.p.blocks[self.p.session].locs:
            if loc is not None:
                return self.at(loc)
        return self.path

    # -- references ---------------------------------------------------------
    def member(self, ref: M.Ref, kind: str, where: str) -> int:
        if ref.count != 1:
            decls = self.p.pools if kind == "pool" else self.p.stages
            raise Outside(f"a family of {kind}s `{decls[ref.base].name}[{ref.count}]`", where)
        return ref.base

    # -- expressions ----------------------------------------------------------
    def expr(self, e: M.Expr, where: str, ctx: str = PROGRAM):
        t = type(e)
        if t is M.ECost:
            return self.expr(e.expr, where, ctx)
        if t is M.ENum:
            return ("num", whole(e.value, "constant", where))
        if t is M.EAttr:
            if ctx in (ENGINE, ITERATION, END):
                raise Outside(f"the attribute `{self.p.attrs[e.slot]}` outside a session", where)
            return ("attr", e.slot)
        if t is M.ESample:
            raise Outside(f"a draw ({DISTS.get(e.dist, e.dist)})", where)
        if t is M.EReg:
            raise Outside("an engine register", where)
        if t is M.EPrice:
            raise Outside("price(…)", where)
        if t is M.ECtx:
            return self.ctx_var(e.var, where, ctx)
        if t is M.EQuery:
            return self.query(e, where, ctx)
        if t is M.EFn:
            if e.fn in ("Min", "Max"):
                return (e.fn.lower(), self.expr(e.args[0], where, ctx), self.expr(e.args[1], where, ctx))
            if e.fn == "Floor":
                a = e.args[0]
                while type(a) is M.ECost:
                    a = a.expr
                if type(a) is M.EBinary and a.op == "Div":
                    return ("floorDiv", self.expr(a.lhs, where, ctx), self.expr(a.rhs, where, ctx))
                raise Outside("floor of something other than a / b", where)
            raise Outside(f"the function `{e.fn.lower()}`", where)
        if t is M.EUnary:
            if e.op == "Not" and ctx in (ITERATION, END):
                return ("lnot", self.expr(e.arg, where, ctx))
            raise Outside("a negation (-)" if e.op == "Neg" else "`!`", where)
        if t is M.EBinary:
            if e.op in BINOPS:
                return ("bin", BINOPS[e.op], self.expr(e.lhs, where, ctx), self.expr(e.rhs, where, ctx))
            if e.op in ("And", "Or") and ctx in (ITERATION, END):
                return ("bin", e.op.lower(), self.expr(e.lhs, where, ctx), self.expr(e.rhs, where, ctx))
            raise Outside(SPELL_OP[e.op], where)
        if t is M.ECond:
            return ("cond", self.expr(e.cond, where, ctx), self.expr(e.then, where, ctx),
                    self.expr(e.other, where, ctx))
        if t is M.EAgg:
            if ctx != END:
                raise Outside("an aggregate outside a claim at end", where)
            return ("agg", AGGS[e.agg], e.observe)
        raise Outside(f"the expression {type(e).__name__}", where)  # pragma: no cover

    def ctx_var(self, var: str, where: str, ctx: str):
        if var == "Now":
            return ("now",)
        if ctx == ENGINE and var == "Nres":
            return ("running",)
        if ctx == ITERATION and var in ITER_VARS:
            return ("iter", ITER_VARS[var])
        raise Outside(f"the context variable `{CTX_SPELL.get(var, var)}`", where)

    def query(self, e: M.EQuery, where: str, ctx: str):
        q = e.query
        if q == "CachedIn" and ctx in (PROGRAM, ADMIT):
            return ("cachedIn", self.member(e.ref, "pool", where))
        if q == "BudgetLeft" and ctx == ADMIT and e.ref.base == 0 and e.ref.count == 1:
            return ("budgetLeft",)
        if q == "Queued" and ctx == ENGINE:
            pid = self.member(e.ref, "pool", where)
            if self.p.pools[pid].admit_via != 0:
                raise Outside(f"waiting.count of `{self.p.pools[pid].name}`, a pool the engine does not admit",
                              where)
            return ("waiting", pid)
        if ctx == ITERATION and q in ("Used", "Holders", "Queued"):
            pid = self.member(e.ref, "pool", where)
            return ({"Used": "used", "Holders": "holders", "Queued": "waiting"}[q], pid)
        if q == "BudgetLeft":
            raise Outside("budget_left outside a hold the engine admits", where)
        return self._bad_query(q, where)

    def _bad_query(self, q: str, where: str):
        raise Outside(f"the observable `{QUERY_SPELL.get(q, q)}`", where)

    # -- declarations ---------------------------------------------------------
    def engine(self) -> Engine:
        p = self.p
        for i, st in enumerate(p.stages):
            where = self.at(st.loc)
            if st.index is not None:
                raise Outside(f"a family of stages `{st.name}[…]`", where)
            k = st.kind
            if type(k) is M.KFifo:
                raise Outside(f"a fifo stage `{st.name}`", where)
            if type(k) is M.KPs:
                raise Outside(f"a ps stage `{st.name}`", where)
            if type(k) is M.KStep and i != 0:
                raise Outside(f"a step engine `{st.name}` that is not stage 0", where)
        if not p.stages or type(p.stages[0].kind) is not M.KStep:
            raise Outside("a program without a step engine", self.path)
        st = p.stages[0]
        k = st.kind
        where = self.at(st.loc)
        if fold_zero(k.cost) != 1.0:
            raise Outside("an iteration cost other than the step clock (execute (1))", where)
        if type(k.serve) is M.ServeExclusivePrefill:
            raise Outside("exclusive prefill", where)
        if k.serve.keys:
            raise Outside("a serving order other than admission order (advance running by …)", where)
        if k.iteration is not None:
            raise Outside("a schedule other than vLLM's (an iteration body)", where)
        if k.granule is not None:
            raise Outside("a granule", where)
        budget = self.expr(k.budget, where, ENGINE)
        chunk = self.expr(k.chunk, where, ENGINE)
        memory = ("none",) if k.memory is None else ("some", k.memory)
        return Engine(budget, chunk, memory)

    def pools(self) -> list:
        p = self.p
        mem = p.stages[0].kind.memory
        out = []
        for i, pool in enumerate(p.pools):
            where = self.at(pool.loc)
            if pool.index is not None:
                raise Outside(f"a family of pools `{pool.name}[…]`", where)
            if type(pool.evict) is not M.EvictLru:
                raise Outside(f"a non-LRU pool `{pool.name}` (evict by)", where)
            if pool.queue is not None:
                raise Outside(f"a queue key on pool `{pool.name}` (queue by)", where)
            if pool.spill is not None:
                raise Outside(f"spill on pool `{pool.name}`", where)
            if pool.reserve_held:
                raise Outside(f"reserve held on pool `{pool.name}`", where)
            via = pool.admit_via == 0
            if pool.admit_via is not None and not via:
                raise Outside(f"pool `{pool.name}` admitted by a stage that is not the engine", where)
            if i == mem:
                if not is_lifo(pool.preempt):
                    raise Outside(f"the engine's memory `{pool.name}` with a preemption other than lifo", where)
            elif not via:
                raise Outside(f"pool `{pool.name}`, neither admitted by the engine nor its memory", where)
            cap = whole(pool.cap, f"capacity of pool `{pool.name}`", where)
            block = 0 if pool.block is None else whole(pool.block, f"block of pool `{pool.name}`", where)
            out.append(Pool(cap, block, via))
        return out

    def sessions(self) -> list:
        p = self.p
        a = p.arrival
        where = self.workload_loc()
        if type(a) is M.APoisson:
            raise Outside("poisson arrivals (arrive poisson(…))", where)
        if type(a) is M.ARenewal:
            raise Outside("renewal arrivals (arrive renewal(…))", where)
        if type(a) is M.AClosed:
            raise Outside("a closed population (arrive closed(…))", where)
        if type(a) is M.ABatch:
            raise Outside("a batch of sessions that are not explicit (arrive batch(…))", where)
        if type(a) is M.ANone:
            raise Outside("a workload without sessions (arrive none)", where)
        out = []
        for s in a.sessions:
            attrs = [(slot, whole(v, f"value of `{p.attrs[slot]}`", where)) for slot, v in s.attrs]
            turns = [] if s.turns is None else \
                [[(slot, whole(v, f"value of `{p.attrs[slot]}`", where)) for slot, v in t] for t in s.turns]
            out.append(Session(attrs, turns, s.turns is not None))
        return out

    # -- statements -------------------------------------------------------------
    def blocks(self) -> list:
        p = self.p
        if p.trace is not None:
            raise Outside(f"a trace ({p.trace}; inline it with serq ir --inline-trace)", self.workload_loc())
        if p.turn is not None:
            blk = p.blocks[p.turn]
            where = self.at(blk.locs[0]) if blk.locs else self.workload_loc()
            raise Outside("a turn block (its attributes are drawn per turn)", where)
        if p.share is not None:
            raise Outside("a run over several stages (share)", self.path)
        if p.registers:
            raise Outside(f"an engine register `{p.registers[0].name}`", self.path)
        out = []
        for bi, b in enumerate(p.blocks):
            stmts = []
            for st, loc in zip(b.stmts, b.locs):
                where = self.at(loc)
                stmts.append(self.stmt(st, where, bi == p.init))
            out.append(stmts)
        return out

    def stmt(self, s: M.Stmt, where: str, in_init: bool):
        p = self.p
        t = type(s)
        if in_init and t is not M.SSet:
            raise Outside("an init block statement other than set", where)
        if t is M.STurn:
            return ("turn",)
        if t is M.SSet:
            return ("set", s.slot, self.expr(s.expr, where))
        if t is M.SObserve:
            return ("observe", s.observe, self.expr(s.expr, where))
        if t is M.SHold:
            if s.lease is not None:
                raise Outside("a lease", where)
            first = self.member(s.pools[0].pool, "pool", where)
            ctx = ADMIT if p.pools[first].admit_via == 0 else PROGRAM
            hps = []
            for hp in s.pools:
                pid = self.member(hp.pool, "pool", where)
                units = self.expr(hp.units, where, ctx)
                reserve = ("none",) if hp.reserve is None else ("some", self.expr(hp.reserve, where, ctx))
                hps.append(HoldPool(pid, units, reserve))
            reuse = ("none",) if s.reuse is None else ("some", self.expr(s.reuse, where, ctx))
            cache = ("none",) if s.cache is None else ("some", self.expr(s.cache, where))
            return ("hold", hps, s.body, reuse, cache)
        if t is M.SRun:
            if s.also:
                raise Outside("a run over several stages", where)
            stage = self.member(s.stage, "stage", where)
            mode = {"Plain": "plain", "Prefill": "prefill", "Decode": "decode"}[s.mode]
            grow = ("none",)
            if s.growing is not None:
                gp = self.member(s.growing, "pool", where)
                if stage != 0 or gp != p.stages[0].kind.memory:
                    raise Outside(f"a growing run on `{p.pools[gp].name}`, which is not the engine's memory",
                                  where)
                grow = ("some", gp)
            return ("run", stage, mode, self.expr(s.work, where), grow)
        if t is M.SBranch:
            other = ("none",) if s.other is None else ("some", s.other)
            return ("branch", self.expr(s.guard, where), s.then, other)
        if t is M.SLoop:
            return ("loop", s.body)
        if t is M.SEnd:
            return ("stop",)
        names = {M.SWhile: "a while loop", M.SChoose: "choose", M.SFork: "a fork", M.SJoin: "join",
                 M.SGrow: "grow", M.SDrop: "drop", M.SRelease: "release", M.SLoad: "load"}
        raise Outside(names[t], where)

    # -- claims ---------------------------------------------------------------------
    def claims(self) -> list:
        out = []
        for c in self.p.claims:
            where = self.at(c.loc)
            if type(c.kind) is M.CAtEnd:
                kind, ctx = "atEnd", END
            else:
                if c.kind.stage != 0:
                    raise Outside(f"a claim over a stage that is not the engine", where)
                kind, ctx = ("everyIter" if type(c.kind) is M.CEvery else "someIter"), ITERATION
            expr = self.expr(c.expr, where, ctx)
            given = ("none",) if c.given is None else ("some", self.expr(c.given, where, GIVEN))
            out.append((c.name, Claim(kind, expr, given)))
        return out

    def program(self) -> Program:
        p = self.p
        engine = self.engine()
        pools = self.pools()
        sessions = self.sessions()
        blocks = self.blocks()
        init = ("none",) if p.init is None else ("some", p.init)
        return Program(len(p.attrs), len(p.observes), pools, engine, blocks, init, p.session, sessions)


def fold_zero(e: M.Expr) -> Optional[float]:
    """The value of an expression that is a constant once every term with a
    zero coefficient is dropped (`1 + 0 * batch.tokens` is 1), else None."""
    t = type(e)
    if t is M.ECost:
        return fold_zero(e.expr)
    if t is M.ENum:
        return e.value
    if t is M.EBinary and e.op in ("Add", "Sub", "Mul"):
        a, b = fold_zero(e.lhs), fold_zero(e.rhs)
        if e.op == "Mul" and (a == 0.0 or b == 0.0):
            return 0.0
        if a is None or b is None:
            return None
        return a + b if e.op == "Add" else (a - b if e.op == "Sub" else a * b)
    return None


def is_lifo(pre) -> bool:
    if type(pre) is not M.PreemptBy or pre.tail or len(pre.keys) != 1:
        return False
    k = pre.keys[0]
    return type(k) is M.EUnary and k.op == "Neg" and type(k.arg) is M.ECtx and k.arg.var == "Admission"


def translate(p: M.Program, path: str = "program") -> Program:
    """The program's Lean terms, or `Outside`."""
    return Translator(p, path).program()


def translate_claims(p: M.Program, path: str = "program") -> list:
    """(name, Claim) for each claim of a program inside the fragment."""
    t = Translator(p, path)
    t.program()
    return t.claims()


def check(p: M.Program, path: str = "program") -> None:
    """Raise `Outside` unless the program, claims included, is in the fragment."""
    t = Translator(p, path)
    t.program()
    t.claims()
