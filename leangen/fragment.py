"""The Lean fragment: which IR programs the Lean semantics runs, and their
translation into the terms of `lean/Serq/Spec/Syntax.lean`.

The development guide's "What fits in the fragment", grown so that the
papers' programs (examples/papers/) are inside it (docs/lean.md, "The
fragment"):

* one step engine, stage 0, and every other stage a delay.  Its iteration
  cost is an expression of the batch (tokens, prefilled, decoders, residents,
  kv_decode, kv_prefill, attention; naturals, +, *, min, max, ?:, ceil(a / k)
  for a constant k, floor) whose lower bound is at least 1, so that every
  iteration lasts a positive time (`lower_bound`); its schedule is vLLM's, or
  `advance running [only (p)] [by (keys)]` followed or not by `admit waiting
  [only (q)] while (running.preempted == 0)`; no exclusive prefill, no granule;
* the pools are LRU, and either admitted via the engine or the engine's memory
  with `preempt lifo` (or `preempt none` when no run grows it); a pool may
  have queue keys; no spill;
* nothing is drawn: no `~`; the sessions are explicit (`Sessions`), with
  preset attributes, or arrive by a law — batch, a constant renewal gap,
  poisson — and then a claim is stated over the program's family of
  workloads; no closed population, no turn block, no trace
  (`serq ir --inline-trace` writes a trace out as sessions);
* the statements are turn, hold, run (on the engine, a prefill or a decode),
  set, observe, branch, loop and end, and the expressions are naturals,
  attributes, now, cachedin, budget_left, min, max, +, -, *, floor(a / b),
  comparisons and ?:.

What the guide leaves implicit is read as follows (docs/lean.md): the engine's
`tokens cap` and `each at most` also read running.count and waiting.count
(vLLM's threshold, which every oracle program writes); budget_left is read
only by a hold the engine admits; a growing run grows the engine's memory; a
hold has no lease; no pool reserves held; every constant and amount is a
natural number (a fraction or inf has no ℕ); registers, `share` and families
of pools or stages (`kv[4]`) are outside.  `&&`, `||` and `!` are read by a
claim, its given, an `only` predicate and a serving key, which also read the
resident's decoding, admission and remaining and the residents' counts; a
claim reads the variables of its form (Claims); gauges do not change a run
and are not translated.

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
               "BudgetLeft": "budget_left", "Prefilling": "prefilling"}
DISTS = {"Exp": "~exp", "Det": "~det", "Uniform": "~uniform", "Erlang": "~erlang", "H2": "~h2",
         "Bernoulli": "~bernoulli"}

# what an expression may read, by where it stands: a session's statements, the
# engine's tokens cap and chunk, the header of a hold the engine admits, a claim
# over iterations, a claim at end, a claim's given, an `only` predicate or a
# serving key (per resident), the iteration's cost (per batch), a pool's queue key
PROGRAM, ENGINE, ADMIT, ITERATION, END, GIVEN = "program", "engine", "admit", "iteration", "end", "given"
ONLY, COST, QKEY = "only", "cost", "qkey"
# where `!`, `&&` and `||` are read
LOGIC = (ITERATION, END, GIVEN, ONLY)
# the per-resident variables of an `only` predicate or a serving key
ONLY_VARS = {"Decoding": ("decoding",), "Admission": ("admission",), "Remaining": ("remaining",),
             "Nres": ("running",), "Ndec": ("runDecoding",), "Kvb": ("runKv", True), "Kvp": ("runKv", False)}
# the batch variables an iteration's cost reads (batch.attention apart: `cost_term`)
COST_VARS = {"Ntok": "tokens", "Npre": "prefilled", "Ndec": "decoders", "Nres": "residents",
             "Kvb": "kvDecode", "Kvp": "kvPrefill"}
ATTENTION = "batch.attention outside ceil(a / k), floor(a / k) or an even multiple (half-tokens are not naturals)"
# the bound on a family's number of sessions (language §Claims)
MAX_SESSIONS = 500


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
            if ctx in (ENGINE, ITERATION, END, COST):
                raise Outside(f"the attribute `{self.p.attrs[e.slot]}` outside a session", where)
            return ("attr", e.slot)
        if t is M.ESample:
            raise Outside(f"a draw ({DISTS.get(e.dist, e.dist)})", where)
        if t is M.ERunSum:
            raise Outside("a sum over the running requests (`sum r in running (…)`)", where)
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
            if e.fn == "Ceil" and ctx == COST:
                a, k = self.over_constant(e.args[0])
                if a is None:
                    raise Outside("ceil of something other than a / k for a constant k ≥ 1", where)
                return ("ceilDiv", self.expr(a, where, ctx), ("num", k))
            raise Outside(f"the function `{e.fn.lower()}`", where)
        if t is M.EUnary:
            if e.op == "Not" and ctx in LOGIC:
                return ("lnot", self.expr(e.arg, where, ctx))
            raise Outside("a negation (-)" if e.op == "Neg" else "`!`", where)
        if t is M.EBinary:
            if e.op in BINOPS:
                return ("bin", BINOPS[e.op], self.expr(e.lhs, where, ctx), self.expr(e.rhs, where, ctx))
            if e.op in ("And", "Or") and ctx in LOGIC:
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

    def over_constant(self, e: M.Expr):
        """(a, k) when e is a / k with k a natural constant ≥ 1, else (None, None)."""
        while type(e) is M.ECost:
            e = e.expr
        if type(e) is M.EBinary and e.op == "Div":
            k = fold_zero(e.rhs)
            if k is not None and k >= 1 and k == math.floor(k) and not math.isinf(k):
                return e.lhs, int(k)
        return None, None

    def ctx_var(self, var: str, where: str, ctx: str):
        if var == "Now" and ctx != ONLY:
            return ("now",)
        if ctx == ENGINE and var == "Nres":
            return ("running",)
        if ctx == ITERATION and var in ITER_VARS:
            return ("iter", ITER_VARS[var])
        if ctx == ONLY and var in ONLY_VARS:
            return ONLY_VARS[var]
        if ctx == COST and var in COST_VARS:
            return ("iter", COST_VARS[var])
        if ctx == COST and var == "Attn":
            raise Outside(ATTENTION, where)
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
        if type(k.serve) is M.ServeExclusivePrefill:
            raise Outside("exclusive prefill", where)
        if k.granule is not None:
            raise Outside("a granule", where)
        keys, only, admits, admit_only = self.schedule(k, where)
        budget = self.expr(k.budget, where, ENGINE)
        chunk = self.expr(k.chunk, where, ENGINE)
        memory = ("none",) if k.memory is None else ("some", k.memory)
        cost = self.cost(k.cost, where)
        return Engine(budget, chunk, memory, cost, keys, only, admits, admit_only)

    def schedule(self, k: M.KStep, where: str):
        """The serving keys, the `only` of `advance running`, whether the
        schedule admits, and the `only` of `admit waiting`: the schedule is
        `advance running [only (p)] [by (keys)]`, then, when it admits,
        `admit waiting [only (q)] while (running.preempted == 0)` (vLLM's
        procedure, with or without only and keys; with no iteration body
        it is that procedure with the engine's serving keys)."""
        keys = k.serve.keys
        if k.iteration is None:
            return [self.expr(x, where, ONLY) for x in keys], ("none",), True, ("none",)
        body = k.iteration
        kinds = tuple(type(x) for x in body)
        if kinds not in ((M.IServe,), (M.IServe, M.IAdmit)):
            raise Outside("a schedule other than `advance running …; admit waiting … while "
                          "(running.preempted == 0)` (an iteration body)", where)
        serve = body[0]
        if serve.by is not None:
            keys = serve.by
        only = ("none",) if serve.only is None else ("some", self.expr(serve.only, where, ONLY))
        admit_only = ("none",)
        if len(body) == 2:
            adm = body[1]
            if not no_preemption(adm.gate):
                raise Outside("an admission not gated on the iteration's preemptions "
                              "(admit waiting while (running.preempted == 0))", where)
            if adm.only is not None:
                admit_only = ("some", self.expr(adm.only, where, ONLY))
        return [self.expr(x, where, ONLY) for x in keys], only, len(body) == 2, admit_only

    # -- the iteration's cost -------------------------------------------------
    def cost(self, e: M.Expr, where: str):
        """The cost as an expression of the batch (`Expr.iter`), which the
        machine reads as the iteration starts; every iteration must last a
        positive time.  A cost that is a constant once its zero coefficients
        are dropped is that constant (the replay program's `c0 + 0 * tokens +
        0 * kv`)."""
        c = fold_zero(e)
        if c is not None:
            term = ("num", whole(c, "constant", where))
        else:
            term = self.cost_term(e, where)
        tok = 0 if self.grows_memory() else 1
        if lower_bound(term, tok) < 1:
            raise Outside("an iteration cost that can be 0 (an iteration lasts a positive time: a constant "
                          "term ≥ 1, or batch.tokens with a coefficient ≥ 1 on an engine that never preempts)",
                          where)
        return term

    def cost_term(self, e: M.Expr, where: str):
        while type(e) is M.ECost:
            e = e.expr
        if not reads_attention(e):
            return self.expr(e, where, COST)
        t = type(e)
        if t is M.EBinary and e.op == "Add":
            return ("bin", "add", self.cost_term(e.lhs, where), self.cost_term(e.rhs, where))
        if t is M.EBinary and e.op == "Mul":
            for c, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                v = fold_zero(c)
                if v is not None and not reads_attention(c):
                    n = whole(v, "constant", where)
                    if n % 2 == 0:
                        return ("bin", "mul", ("num", n // 2), self.double(x, where))
        if t is M.EFn and e.fn in ("Ceil", "Floor"):
            a, k = self.over_constant(e.args[0])
            if a is not None:
                return ("ceilDiv" if e.fn == "Ceil" else "floorDiv", self.double(a, where), ("num", 2 * k))
        raise Outside(ATTENTION, where)

    def double(self, e: M.Expr, where: str):
        """Twice e, a natural when e is linear in batch.attention."""
        while type(e) is M.ECost:
            e = e.expr
        t = type(e)
        if t is M.ECtx and e.var == "Attn":
            return ("iter", "attention2")
        if not reads_attention(e):
            return ("bin", "mul", ("num", 2), self.expr(e, where, COST))
        if t is M.EBinary and e.op in ("Add", "Sub"):
            return ("bin", BINOPS[e.op], self.double(e.lhs, where), self.double(e.rhs, where))
        if t is M.EBinary and e.op == "Mul":
            for c, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
                if not reads_attention(c):
                    return ("bin", "mul", self.expr(c, where, COST), self.double(x, where))
        raise Outside(ATTENTION, where)

    def grows_memory(self) -> bool:
        """Whether some run grows a hold (on the engine's memory, the only
        pool a run may grow): only then can the engine preempt."""
        for b in self.p.blocks:
            for st in b.stmts:
                if type(st) is M.SRun and st.growing is not None:
                    return True
        return False

    def pools(self) -> list:
        p = self.p
        mem = p.stages[0].kind.memory
        out = []
        for i, pool in enumerate(p.pools):
            where = self.at(pool.loc)
            if pool.index is not None:
                raise Outside(f"a family of pools `{pool.name}[…]`", where)
            if pool.shared:
                raise Outside(f"a content-addressed pool `{pool.name}` (cache shared; the semantics' "
                              "cache entries are per session)", where)
            if type(pool.evict) is not M.EvictLru:
                raise Outside(f"a non-LRU pool `{pool.name}` (evict by)", where)
            keys = [] if pool.queue is None else [self.expr(x, where, QKEY) for x in pool.queue]
            if pool.spill is not None:
                raise Outside(f"spill on pool `{pool.name}`", where)
            if pool.reserve_held:
                raise Outside(f"reserve held on pool `{pool.name}`", where)
            if pool.cache_at is not None:
                raise Outside(f"cache at on pool `{pool.name}`", where)
            if pool.ordered:
                raise Outside(f"queue ordered by on pool `{pool.name}`", where)
            if type(pool.preempt) is M.PreemptBy and pool.preempt.free is not None:
                raise Outside(f"then free on pool `{pool.name}`", where)
            via = pool.admit_via == 0
            if pool.admit_via is not None and not via:
                raise Outside(f"pool `{pool.name}` admitted by a stage that is not the engine", where)
            if i == mem:
                if not (is_lifo(pool.preempt) or (type(pool.preempt) is M.PreemptNone and not self.grows_memory())):
                    raise Outside(f"the engine's memory `{pool.name}` with a preemption other than lifo", where)
            elif not via:
                raise Outside(f"pool `{pool.name}`, neither admitted by the engine nor its memory", where)
            cap = whole(pool.cap, f"capacity of pool `{pool.name}`", where)
            block = 0 if pool.block is None else whole(pool.block, f"block of pool `{pool.name}`", where)
            out.append(Pool(cap, block, via, keys))
        return out

    def workload(self):
        """("explicit", sessions) for the IR's explicit sessions (all at time
        0), or ("family", law, slots) for sessions that arrive by a law:
        `Serq.Claims.Law` as a tuple, and the slots the init block sets,
        which the family's sessions preset to any natural."""
        p = self.p
        a = p.arrival
        where = self.workload_loc()
        if type(a) is M.AClosed:
            raise Outside("a closed population (arrive closed(…))", where)
        if type(a) is M.ANone:
            raise Outside("a workload without sessions (arrive none)", where)
        if type(a) is M.APoisson:
            return ("family", ("poisson",), self.init_slots())
        if type(a) is M.ABatch:
            return ("family", ("batch",), self.init_slots())
        if type(a) is M.ARenewal:
            g = fold_zero(a.gap)
            if g is None:
                raise Outside("a renewal gap that is not a constant (arrive renewal(…))", where)
            gap = whole(g, "renewal gap", where)
            if gap < 1:
                raise Outside("a renewal gap of 0", where)
            return ("family", ("renewal", gap), self.init_slots())
        if type(a) is M.ATrace:
            raise Outside("sessions that arrive at a trace's timestamps (arrive trace)", where)
        out = []
        for s in a.sessions:
            if s.at or s.content:
                raise Outside("an explicit session with an arrival time or content", where)
            attrs = [(slot, whole(v, f"value of `{p.attrs[slot]}`", where)) for slot, v in s.attrs]
            turns = [] if s.turns is None else \
                [[(slot, whole(v, f"value of `{p.attrs[slot]}`", where)) for slot, v in t] for t in s.turns]
            out.append(Session(0, attrs, turns, s.turns is not None))
        return ("explicit", out)

    def init_slots(self) -> list:
        """The attributes the init block sets, in the order first set."""
        p = self.p
        out = []
        if p.init is not None:
            for st in p.blocks[p.init].stmts:
                if type(st) is M.SSet and st.slot not in out:
                    out.append(st.slot)
        return out

    def sessions(self) -> list:
        w = self.workload()
        return w[1] if w[0] == "explicit" else []

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
            if s.mode == "Await":
                raise Outside("a request that awaits its engine's next iteration (`await;`)", where)
            mode = {"Plain": "plain", "Prefill": "prefill", "Decode": "decode"}[s.mode]
            if stage == 0 and mode == "plain":
                raise Outside(f"a plain run on the engine `{p.stages[0].name}` (neither prefill nor decode)", where)
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
                 M.SGrow: "grow", M.SDrop: "drop", M.SRelease: "release", M.SLoad: "load",
                 M.SContent: "content (what a session's tokens are)"}
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

    def program(self, sessions: Optional[list] = None) -> Program:
        """The program's terms; its sessions are the IR's explicit ones, or
        `sessions` (a workload of its family; none for a family when not
        given)."""
        p = self.p
        engine = self.engine()
        pools = self.pools()
        own = self.sessions()
        blocks = self.blocks()
        init = ("none",) if p.init is None else ("some", p.init)
        return Program(len(p.attrs), len(p.observes), pools, engine, blocks, init, p.session,
                       own if sessions is None else sessions)


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
    """The program's Lean terms, or `Outside`.  A program whose sessions
    arrive by a law has no sessions here (`workload`, `translate_with`)."""
    return Translator(p, path).program()


def translate_with(p: M.Program, sessions: list, path: str = "program") -> Program:
    """The program's terms with the given sessions (`lterms.Session`)."""
    return Translator(p, path).program(sessions)


def workload(p: M.Program, path: str = "program"):
    """("explicit", sessions) or ("family", law, slots): `Translator.workload`."""
    t = Translator(p, path)
    t.program()
    return t.workload()


def law_term(law: tuple) -> str:
    """A `Serq.Claims.Law` in Lean."""
    if law[0] == "renewal":
        return f"(Serq.Claims.Law.renewal {law[1]})"
    return f"Serq.Claims.Law.{law[0]}"


def no_preemption(gate) -> bool:
    """Whether an admission's guard is `running.preempted == 0` (as the IR
    writes it, `!running.preempted`)."""
    pre = M.ECtx("Preempted")
    if gate == M.EUnary("Not", pre):
        return True
    return type(gate) is M.EBinary and gate.op == "Eq" and \
        {gate.lhs, gate.rhs} == {pre, M.ENum(0.0)}


def reads_attention(e: M.Expr) -> bool:
    from serq.ir.expr import walk
    return any(type(x) is M.ECtx and x.var == "Attn" for x in walk(e))


def lower_bound(t, tok: int) -> int:
    """A lower bound of a cost term's value at every iteration, batch.tokens
    being at least `tok` and every other variable at least 0."""
    tag = t[0]
    if tag == "num":
        return t[1]
    if tag == "iter":
        return tok if t[1] == "tokens" else 0
    if tag == "bin":
        a, b = lower_bound(t[2], tok), lower_bound(t[3], tok)
        return a + b if t[1] == "add" else (a * b if t[1] == "mul" else 0)
    if tag in ("min", "max"):
        a, b = lower_bound(t[1], tok), lower_bound(t[2], tok)
        return min(a, b) if tag == "min" else max(a, b)
    if tag in ("floorDiv", "ceilDiv") and t[2][0] == "num" and t[2][1] > 0:
        a, k = lower_bound(t[1], tok), t[2][1]
        return a // k if tag == "floorDiv" else -(-a // k)
    if tag == "cond":
        return min(lower_bound(t[2], tok), lower_bound(t[3], tok))
    return 0


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
