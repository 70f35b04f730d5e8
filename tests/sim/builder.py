"""A small builder of IR programs for the simulator's tests.

    b = Builder()
    svc = b.stage("svc", M.KFifo(1))
    t0 = b.attr("t0")
    b.session([b.turn(), b.set(t0, now(), side="server"),
               b.run(svc, exp(1.0), side="server"),
               b.observe("response", now() - A(t0), side="server")])
    prog = b.program(arrival=M.APoisson(0.8), horizon=1e4)

Expressions are wrapped in :class:`X`, which overloads the arithmetic and
comparison operators; amounts are wrapped in ``cost(...)`` automatically so
the IR validator accepts them.
"""

from __future__ import annotations

import dataclasses
import math

from serq.ir import model as M
from serq.ir.validate import validate

INF = math.inf


class X:
    __slots__ = ("e",)

    def __init__(self, e):
        self.e = e

    def _b(self, op, other, rev=False):
        o = lift(other)
        return X(M.EBinary(op, o.e, self.e) if rev else M.EBinary(op, self.e, o.e))

    def __add__(self, o): return self._b("Add", o)
    def __radd__(self, o): return self._b("Add", o, True)
    def __sub__(self, o): return self._b("Sub", o)
    def __rsub__(self, o): return self._b("Sub", o, True)
    def __mul__(self, o): return self._b("Mul", o)
    def __rmul__(self, o): return self._b("Mul", o, True)
    def __truediv__(self, o): return self._b("Div", o)
    def __rtruediv__(self, o): return self._b("Div", o, True)
    def __lt__(self, o): return self._b("Lt", o)
    def __le__(self, o): return self._b("Le", o)
    def __gt__(self, o): return self._b("Gt", o)
    def __ge__(self, o): return self._b("Ge", o)
    def eq(self, o): return self._b("Eq", o)
    def ne(self, o): return self._b("Ne", o)
    def and_(self, o): return self._b("And", o)
    def or_(self, o): return self._b("Or", o)
    def __neg__(self): return X(M.EUnary("Neg", self.e))


def lift(v) -> X:
    if isinstance(v, X):
        return v
    return X(M.ENum(float(v)))


def N(v) -> X:
    return X(M.ENum(float(v)))


def A(slot: int) -> X:
    return X(M.EAttr(slot))


def ctx(var: str) -> X:
    return X(M.ECtx(var))


def now() -> X:
    return ctx("Now")


def sample(dist, *args) -> X:
    return X(M.ESample(dist, tuple(lift(a).e for a in args)))


def exp(mean) -> X:
    return sample("Exp", mean)


def det(x) -> X:
    return sample("Det", x)


def h2(mean, cv2) -> X:
    return sample("H2", mean, cv2)


def bernoulli(p) -> X:
    return sample("Bernoulli", p)


def fmin(a, b) -> X:
    return X(M.EFn("Min", (lift(a).e, lift(b).e)))


def fmax(a, b) -> X:
    return X(M.EFn("Max", (lift(a).e, lift(b).e)))


def floor(a) -> X:
    return X(M.EFn("Floor", (lift(a).e,)))


def cond(c, a, b) -> X:
    return X(M.ECond(lift(c).e, lift(a).e, lift(b).e))


def reg(i) -> X:
    return X(M.EReg(i))


def query(q: str, ref: M.Ref) -> X:
    return X(M.EQuery(q, ref))


def cost(kind: str, refs, e) -> X:
    if isinstance(refs, M.Ref):
        refs = [refs]
    return X(M.ECost(tuple(M.Target(kind, r.base) for r in refs), lift(e).e))


LOC = None


class Builder:
    def __init__(self, file="test.sq"):
        self.attrs = list(M.BUILTIN_ATTRS)
        self.observes = []
        self.pools = []
        self.stages = []
        self.blocks = []
        self.registers = []
        self.file = file
        self.line = 0
        self.session_block = None
        self.init_block = None
        self.turn_block = None
        self.hidden = []
        self.gauges = []
        self.claims = []

    # -- names --------------------------------------------------------------
    def attr(self, name: str) -> int:
        if name in self.attrs:
            return self.attrs.index(name)
        self.attrs.append(name)
        return len(self.attrs) - 1

    def obs(self, name: str) -> int:
        if name not in self.observes:
            self.observes.append(name)
        return self.observes.index(name)

    def loc(self):
        self.line += 1
        return M.Loc(0, self.line, 3)

    # -- declarations ----------------------------------------------------------
    def pool(self, name, cap=INF, block=None, evict=None, preempt=None, queue=None, admit_via=None,
             reserve_held=False, spill=None, count=None, shared=False):
        base = len(self.pools)
        for k in range(count or 1):
            self.pools.append(M.Pool(name, None if count is None else k, float(cap),
                                     None if block is None else float(block),
                                     evict or M.EvictLru(), preempt or M.PreemptNone(),
                                     None if queue is None else tuple(lift(x).e for x in queue),
                                     spill, admit_via, reserve_held, self.loc(), shared=shared))
        return M.Ref(base, count or 1, None)

    def stage(self, name, kind, count=None):
        base = len(self.stages)
        for k in range(count or 1):
            self.stages.append(M.Stage(name, None if count is None else k, kind, self.loc()))
        return M.Ref(base, count or 1, None)

    def step(self, name, budget, cost_, chunk=0, keys=(), memory=None, granule=None, iteration=None,
             exclusive=False):
        serve = M.ServeExclusivePrefill() if exclusive else M.ServeBy(tuple(lift(k).e for k in keys))
        kind = M.KStep(lift(budget).e, lift(cost_).e, lift(chunk).e, serve,
                       None if memory is None else memory.base, granule, iteration)
        return self.stage(name, kind)

    def set_memory(self, stage_ref, pool_ref):
        st = self.stages[stage_ref.base]
        k = st.kind
        self.stages[stage_ref.base] = M.Stage(st.name, st.index, M.KStep(
            k.budget, k.cost, k.chunk, k.serve, pool_ref.base, k.granule, k.iteration), st.loc)

    def set_admit_via(self, pool_ref, stage_ref):
        p = self.pools[pool_ref.base]
        self.pools[pool_ref.base] = dataclasses.replace(p, admit_via=stage_ref.base)

    def register(self, name, stage_ref, init=0.0):
        self.registers.append(M.Register(name, stage_ref.base, float(init)))
        return len(self.registers) - 1

    # -- statements: each returns (stmt, side) --------------------------------
    def block(self, items) -> int:
        stmts, locs, sides = [], [], []
        for it in items:
            s, side = it if isinstance(it, tuple) else (it, "server")
            stmts.append(s)
            locs.append(self.loc())
            sides.append(side)
        self.blocks.append(M.Block(tuple(stmts), tuple(locs), tuple(sides)))
        return len(self.blocks) - 1

    def turn(self):
        return (M.STurn(), "client")

    def set(self, slot, e, side="server"):
        return (M.SSet(slot, lift(e).e), side)

    def observe(self, name, e, side="server"):
        return (M.SObserve(self.obs(name), lift(e).e), side)

    def run(self, stage: M.Ref, work, mode="Plain", growing=None, also=(), side="server", index=None):
        ref = stage if index is None else M.Ref(stage.base, stage.count, lift(index).e)
        refs = [ref] + list(also)
        w = cost("stage", refs, work)
        return (M.SRun(ref, mode, w.e, growing, tuple(also)), side)

    def hold(self, pools, body, reuse=None, cache=None, lease=None, side="server"):
        """pools: [(ref, units[, reserve])]"""
        hps = []
        refs = []
        for item in pools:
            ref, units = item[0], item[1]
            res = item[2] if len(item) > 2 else None
            refs.append(ref)
            hps.append(M.HoldPool(ref, cost("pool", ref, units).e,
                                  None if res is None else cost("pool", ref, res).e))
        b = self.block(body)
        return (M.SHold(tuple(hps), b,
                        None if reuse is None else cost("pool", refs, reuse).e,
                        None if cache is None else cost("pool", refs, cache).e,
                        None if lease is None else M.Lease(lease[0], lift(lease[1]).e)), side)

    def grow(self, ref, d, side="server"):
        return (M.SGrow(ref, cost("pool", ref, d).e), side)

    def load(self, ref, d, side="server"):
        return (M.SLoad(ref, cost("pool", ref, d).e), side)

    def release(self, ref, side="server"):
        return (M.SRelease(ref), side)

    def drop(self, ref, side="server"):
        return (M.SDrop(ref), side)

    def branch(self, guard, then, other=None, side="server"):
        return (M.SBranch(lift(guard).e, self.block(then), None if other is None else self.block(other)), side)

    def loop(self, body, side="server"):
        return (M.SLoop(self.block(body)), side)

    def while_(self, guard, body, side="server"):
        return (M.SWhile(lift(guard).e, self.block(body)), side)

    def choose(self, slot, count, keys, side="server"):
        return (M.SChoose(slot, lift(count).e, tuple(lift(k).e for k in keys)), side)

    def end(self, side="client"):
        return (M.SEnd(), side)

    def fork(self, body, side="server"):
        return (M.SFork(self.block(body)), side)

    def join(self, side="server"):
        return (M.SJoin(), side)

    def content(self, cid, n, side="client"):
        return (M.SContent(lift(cid).e, lift(n).e), side)

    # -- the workload ------------------------------------------------------------
    def session(self, items):
        self.session_block = self.block(items)

    def init(self, items):
        self.init_block = self.block([(s, "client") for s, _ in items])

    def turn_items(self, items):
        self.turn_block = self.block([(s, "client") for s, _ in items])

    def program(self, arrival=None, horizon=100.0, warmup=0.0, seed=1, arrivals=None, trace=None,
                trace_ordered=False, share=None, validate_ir=True) -> M.Program:
        if self.session_block is None:
            raise ValueError("no session")
        p = M.Program(
            files=(self.file,), attrs=tuple(self.attrs), attr_types=tuple("Value" for _ in self.attrs),
            observes=tuple(self.observes), pools=tuple(self.pools), stages=tuple(self.stages),
            arrival=arrival or M.ANone(), blocks=tuple(self.blocks), session=self.session_block,
            init=self.init_block, turn=self.turn_block, trace=trace, trace_ordered=trace_ordered,
            hidden=tuple(self.hidden), share=share, gauges=tuple(self.gauges), claims=tuple(self.claims),
            registers=tuple(self.registers), horizon=float(horizon), warmup=float(warmup), seed=seed,
            arrivals=arrivals)
        if validate_ir:
            validate(p)
        return p


def sessions(*specs, turns=None):
    """Explicit sessions: each spec a dict slot -> value."""
    out = []
    for i, s in enumerate(specs):
        t = None if turns is None else tuple(tuple((k, float(v)) for k, v in tt.items()) for tt in turns[i])
        out.append(M.SessionSpec(tuple((k, float(v)) for k, v in s.items()), t))
    return M.ASessions(tuple(out))


def samples(report, tmp_path, name):
    """An observation's samples as (session, time, value), through --dump's CSV."""
    import csv
    import os
    where = os.path.join(tmp_path, "dump")       # (a dump has a directory of its own)
    report.dump(where)
    with open(os.path.join(where, name + ".csv")) as f:
        return [(int(r["session"]), float(r["time"]), float(r["value"])) for r in csv.DictReader(f)]


def by_session(report, tmp_path, name):
    return {s: v for s, _, v in samples(report, tmp_path, name)}
