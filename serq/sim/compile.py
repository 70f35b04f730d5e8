"""IR expressions compiled to Python closures, once, before the run.

A compiled expression is a function of one argument, the *carrier* ``t``:
an object with

* ``a``: the attribute list of the session (or leg) the expression reads,
  ``None`` where the moment has no session;
* ``rng``: the random stream a draw reads (``None`` until first needed, then
  ``t.make_rng()`` creates it);
* ``sess``: the session (for ``cachedin``), or ``None``.

A thread (a session or a leg) is such a carrier; the machine's moments use a
small carrier of their own.  Context variables live in the list ``ctx``
(indexed like :data:`serq.ir.model.CTX_VARS`), registers in ``regs``; the
interpreter writes them before evaluating an expression of the moment that
supplies them.  Arithmetic goes through :mod:`serq.ir.expr` wherever Python's
float operators would differ from the language's (division by zero, ``pow``,
``min``/``max`` with NaN), so a constant folded by the linker and a value
computed at run time agree to the bit.

Nothing here looks a name up at run time: attribute slots, pools, stages,
registers and context variables are resolved to list indices and objects
when the closure is built.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Callable

from ..ir import model as M
from ..ir.expr import apply_binary, apply_fn, const_value, dist_problem, power, truth, walk
from .errors import Fault, fmt_num
from .rng import DISTS, h2_consts
from .stages import MODE_DECODE

CTX = {name: i for i, name in enumerate(M.CTX_VARS)}
NOW = CTX["Now"]

Fn = Callable[[object], float]


def reads_ctx(e: M.Expr) -> frozenset:
    return frozenset(x.var for x in walk(e) if type(x) is M.ECtx)


def is_static(e: M.Expr) -> bool:
    """Reads only attributes and numbers (no state, clock, draw or register)."""
    for x in walk(e):
        if type(x) in (M.ECtx, M.ESample, M.EReg, M.EQuery, M.EPrice, M.EAgg):
            return False
    return True


@functools.lru_cache(maxsize=4096)
def code(src: str, filename: str, mode: str):
    """``compile(src, filename, mode)``, once per source (the same code
    object): the oracle makes a machine for each of thousands of programs of
    one shape, and nearly all their generated sources are the same."""
    return compile(src, filename, mode)


class Compiler:
    """Compiles IR expressions to Python functions of the carrier.

    An expression becomes one function: its tree is written out as Python
    source (``lambda t: (t.a[9] - ctx[0])``) and compiled once, so evaluating
    it is one call, whatever its size.  The source refers to the machine's
    objects (pools, stages, helpers) through names bound in the functions'
    globals when the source is written; operations whose Python meaning
    differs from the language's go through the helpers of
    :mod:`serq.ir.expr` (division by zero, ``pow``, ``min``/``max`` with NaN,
    the truth of NaN).  Operands are evaluated left to right, each once, as
    the tree says, so draws are taken in the same order as a tree walk would
    take them; ``&&`` and ``||`` evaluate both operands (no short circuit).
    A subtree nested deeper than ``MAX_DEPTH`` becomes a function of its own,
    so an aggregate the linker wrote out (up to 4 096 terms) compiles.
    """

    MAX_DEPTH = 40

    def __init__(self, sim):
        self.sim = sim
        self.ctx = sim.ctx
        self.regs = sim.regs
        self.k = 0
        # how the source reads the carrier's attributes and stream (see
        # ``inline``)
        self.a_src = "t.a"
        self.rng_src = "(t.rng or t.make_rng())"
        self.draw_method = "random"
        self.now_src = None
        self.ns = {
            "ctx": sim.ctx, "regs": sim.regs, "_div": _div, "_pow": power, "_tr": truth,
            "_min": _min, "_max": _max, "_minn": _minn, "_maxn": _maxn, "_floor": _floor,
            "_and": _and, "_or": _or, "_fn1": _fn1, "_fn2": _fn2, "float": float, "len": len,
            "_log": math.log, "_mean": _mean, "_span": _span, "_prob": _prob,
        }
        for name, d in DISTS.items():
            self.ns["_d_" + name] = d

    def bind(self, obj, prefix="_o") -> str:
        self.k += 1
        name = f"{prefix}{self.k}"
        self.ns[name] = obj
        return name

    # -- references ----------------------------------------------------------
    def member(self, ref: M.Ref, kind: str) -> Callable[[object], int]:
        """A function giving the declaration index of the member ``ref`` names."""
        base, count = ref.base, ref.count
        decls = self.sim.program.pools if kind == "pool" else self.sim.program.stages
        name = decls[base].name
        if ref.index is None:
            return lambda t: base
        v = const_value(ref.index)
        if v is not None:
            if v == math.floor(v) and 0 <= v < count:
                k = base + int(v)
                return lambda t: k
        f = self.expr(ref.index)

        def idx(t):
            i = f(t)
            if i == i and 0 <= i < count and i == math.floor(i):
                return base + int(i)
            raise Fault("R002", f"index {fmt_num(i)} does not name a member of `{name}`, which has "
                                f"{count} member{'s' if count != 1 else ''}: an index is a whole number "
                                f"from 0 to {count - 1}")
        return idx

    def const_member(self, ref: M.Ref):
        """The member a reference names, if it is a constant; else None."""
        if ref.index is None:
            return ref.base
        v = const_value(ref.index)
        if v is None:
            return None
        return ref.base + int(v)

    # -- expressions ---------------------------------------------------------
    def expr(self, e: M.Expr) -> Fn:
        v = const_value(e)
        if v is not None:
            return lambda t: v
        old = sys.getrecursionlimit()
        if old < 30000:
            sys.setrecursionlimit(30000)
        # a function of its own reads the carrier, also when it is made while
        # the source of inlined code is written (a member index, a deep subtree)
        saved = self.a_src, self.rng_src, self.draw_method, self.now_src
        self.a_src, self.rng_src, self.draw_method, self.now_src = "t.a", "(t.rng or t.make_rng())", "random", None
        try:
            src = self.src(e, 0)
        finally:
            self.a_src, self.rng_src, self.draw_method, self.now_src = saved
            sys.setrecursionlimit(old)
        return eval(code(f"lambda t: {src}", "<string>", "eval"), self.ns)  # noqa: S307 - our own source

    def inline(self, e: M.Expr, a_src: str = "a", rng_src: str = "(t.rng or t.make_rng())",
               draw_method: str = "random") -> str:
        """The source of ``e`` for code generated around it (serq.sim.codegen):
        the attributes read as ``a_src``, a uniform draw as
        ``rng_src.draw_method()``, the clock as the local ``now`` (equal to
        ``ctx[Now]`` whenever a statement runs); anything else (a subtree
        past ``MAX_DEPTH``, a member index, a price) reads the carrier as
        ``t``."""
        v = const_value(e)
        if v is not None:
            return self.lit(v)
        old = sys.getrecursionlimit()
        if old < 30000:
            sys.setrecursionlimit(30000)
        self.a_src, self.rng_src, self.draw_method, self.now_src = a_src, rng_src, draw_method, "now"
        try:
            return self.src(e, 0)
        finally:
            self.a_src, self.rng_src, self.draw_method, self.now_src = "t.a", "(t.rng or t.make_rng())", "random", None
            sys.setrecursionlimit(old)

    def lit(self, v: float) -> str:
        if v != v or math.isinf(v):
            return self.bind(v, "_c")
        return repr(float(v))

    def src(self, e: M.Expr, depth: int) -> str:
        v = const_value(e)
        if v is not None:
            return self.lit(v)
        if depth > self.MAX_DEPTH:
            return f"{self.bind(self.expr(e), '_f')}(t)"
        d = depth + 1
        t_ = type(e)
        if t_ is M.EAttr:
            return f"{self.a_src}[{e.slot}]"
        if t_ is M.ECtx:
            if self.now_src is not None and e.var == "Now":
                return self.now_src
            return f"ctx[{CTX[e.var]}]"
        if t_ is M.ECost:
            return self.src(e.expr, depth)
        if t_ is M.EReg:
            return f"regs[{e.index}]"
        if t_ is M.ESample:
            return self.sample(e, d)
        if t_ is M.EFn:
            name = e.fn
            if name in ("Min", "Max"):
                terms = _flatten(e, lambda x: type(x) is M.EFn and x.fn == name)
                parts = [self.src(x, d) for x in terms]
                low = name.lower()
                if len(parts) == 2:
                    return f"_{low}({parts[0]}, {parts[1]})"
                return f"_{low}n(({', '.join(parts)},))"
            if name == "Floor":
                return f"_floor({self.src(e.args[0], d)})"
            if len(e.args) == 1:
                return f"_fn1({name!r}, {self.src(e.args[0], d)})"
            return f"_fn2({name!r}, {self.src(e.args[0], d)}, {self.src(e.args[1], d)})"
        if t_ is M.EUnary:
            a = self.src(e.arg, d)
            if e.op == "Neg":
                return f"(-{a})"
            return f"(0.0 if _tr({a}) else 1.0)"
        if t_ is M.EBinary:
            op = e.op
            if op in ("Add", "Sub", "Mul"):
                sym = {"Add": "+", "Sub": "-", "Mul": "*"}[op]
                return f"({self.src(e.lhs, d)} {sym} {self.src(e.rhs, d)})"
            if op == "Div":
                cb = const_value(e.rhs)
                if cb is not None and cb != 0 and math.isfinite(cb):
                    return f"({self.src(e.lhs, d)} / {self.lit(cb)})"
                return f"_div({self.src(e.lhs, d)}, {self.src(e.rhs, d)})"
            if op == "Pow":
                return f"_pow({self.src(e.lhs, d)}, {self.src(e.rhs, d)})"
            if op in _CMP:
                return f"(1.0 if {self.src(e.lhs, d)} {_CMP[op]} {self.src(e.rhs, d)} else 0.0)"
            if op == "And":
                return f"_and({self.src(e.lhs, d)}, {self.src(e.rhs, d)})"
            if op == "Or":
                return f"_or({self.src(e.lhs, d)}, {self.src(e.rhs, d)})"
            raise ValueError(op)  # pragma: no cover
        if t_ is M.ECond:
            cv = const_value(e.cond)
            if cv is not None:   # only the branch taken is evaluated
                return self.src(e.then if truth(cv) else e.other, depth)
            self.k += 1
            c = f"_c{self.k}"
            return (f"({self.src(e.then, d)} if (({c} := {self.src(e.cond, d)}) != 0.0 and {c} == {c}) "
                    f"else {self.src(e.other, d)})")
        if t_ is M.EQuery:
            return self.query(e, d)
        if t_ is M.EPrice:
            return f"{self.bind(self.price(e), '_f')}(t)"
        if t_ is M.EAgg:
            return f"{self.bind(self.sim.agg_fn(e.agg, e.observe), '_f')}(t)"
        if t_ is M.ERunSum:
            return f"{self.bind(self.running_sum(e), '_f')}(t)"
        raise TypeError(f"unknown expression {e!r}")  # pragma: no cover

    def running_sum(self, e: M.ERunSum):
        """``sum r in running (e)``: e read for each resident of the engine
        as it stands (decoding, admission, remaining and its growing hold's
        position set for it)."""
        f = self.expr(e.expr)
        sim = self.sim
        sid = e.stage
        ctx = sim.ctx
        c_dec, c_adm, c_rem, c_pos = CTX["Decoding"], CTX["Admission"], CTX["Remaining"], CTX["Position"]
        decode = MODE_DECODE   # noqa: F841 (read by run_sum)

        def run_sum(_t):
            saved = ctx[c_dec], ctx[c_adm], ctx[c_rem], ctx[c_pos]
            tot = 0.0
            try:
                for j in sim.stages[sid].residents:
                    if not j.alive:
                        continue
                    ctx[c_dec] = 1.0 if j.mode == decode else 0.0
                    ctx[c_adm] = float(j.order)
                    ctx[c_rem] = j.rem
                    pa = j.pa
                    ctx[c_pos] = pa.pos if pa is not None and not pa.released else 0.0
                    tot += f(j.thread)
            finally:
                ctx[c_dec], ctx[c_adm], ctx[c_rem], ctx[c_pos] = saved
            return tot
        return run_sum

    def sample(self, e: M.ESample, d: int) -> str:
        """A draw.  Where the distribution is a formula of its uniforms
        (``det``, ``exp``, ``uniform``, ``bernoulli``, ``h2`` of constants)
        it is written out, computing what ``rng.d_*`` computes to the bit,
        its arguments evaluated before its draws, as a call evaluates them
        (``max_draws`` counts its uniforms); otherwise ``rng.d_*`` is
        called."""
        args = e.args
        consts = [const_value(a) for a in args]
        dist = e.dist
        u = f"{self.rng_src}.{self.draw_method}()"     # one uniform
        if dist == "Det":
            return self.src(args[0], d)       # d_det draws nothing
        if dist == "Exp":    # -mean * ln(1 - U)
            if consts[0] is not None:    # (the validator has checked a constant's domain)
                return f"({self.lit(-consts[0])} * _log(1.0 - {u}))"
            return f"(-_mean({self.src(args[0], d)}) * _log(1.0 - {u}))"
        if dist == "H2" and None not in consts:   # the phase, then -mean_i * ln(1 - U)
            p1, m1, m2 = (self.lit(x) for x in h2_consts(*consts))
            return f"(-({m1} if {u} < {p1} else {m2}) * _log(1.0 - {u}))"
        if dist == "Uniform":    # lo + (hi - lo) * U
            if None not in consts:
                return f"({self.lit(consts[0])} + {self.lit(consts[1] - consts[0])} * {u})"
            self.k += 1
            lo = f"_u{self.k}"
            return f"(({lo} := {self.src(args[0], d)}) + _span({lo}, {self.src(args[1], d)}) * {u})"
        if dist == "Bernoulli":    # 1 if U < p else 0: p first
            if consts[0] is not None:
                return f"(1.0 if {self.lit(consts[0])} > {u} else 0.0)"
            return f"(1.0 if _prob({self.src(args[0], d)}) > {u} else 0.0)"
        srcs = ", ".join(self.src(a, d) for a in args)
        return f"_d_{dist}({self.rng_src}, {srcs})"

    def query(self, e: M.EQuery, d: int) -> str:
        q = e.query
        pool = q in M.POOL_QUERIES
        kind = "pool" if pool else "stage"
        k = self.const_member(e.ref)
        table = self.sim.pools if pool else self.sim.stages
        if k is not None and table[k] is not None:
            obj = self.bind(table[k])
        elif k is not None:     # an engine not made yet (one engine's expression reading another's queue)
            obj = f"{self.bind(table)}[{k}]"
        else:
            lst = self.bind(table)
            obj = f"{lst}[{self.bind(self.member(e.ref, kind), '_m')}(t)]"
        if q == "Used":
            return f"{obj}.used"
        if q == "Free":
            if k is not None:
                return f"({obj}.cap - {obj}.used)"
            return f"{self.bind(_free, '_f')}({obj})"
        if q == "CachedIn":
            return f"{obj}.cached_of(t.sess)"
        if q == "Holders":
            return f"float(len({obj}.allocs))"
        if q == "Queued":
            return f"float({obj}.nqueued)"
        if q == "Prefilling":
            return f"{obj}.prefilling()"
        if q == "Queue":
            return f"float({obj}.present())"
        if q == "Busy":
            return f"float({obj}.busy())"
        if q == "Work":
            return f"{obj}.work()"
        if q == "EstLambda":
            return f"{obj}.est_lambda()"
        if q == "EstRho":
            return f"{obj}.est_rho()"
        if q == "EstWait":
            return f"{obj}.est_wait()"
        if q == "BudgetLeft":
            return f"{obj}.budget_left_query()"
        raise ValueError(q)  # pragma: no cover

    def price(self, e: M.EPrice) -> Fn:
        stages = self.sim.stages
        mem = self.member(e.ref, "stage")
        fh, fd = self.expr(e.s_hit), self.expr(e.ds)

        def price(t):
            s = stages[mem(t)]
            s_hit = fh(t)
            ds = fd(t)
            lam = s.est_lambda()
            rho = s.est_rho()
            w = s.est_wait()
            s_miss = s_hit + ds
            return ds + lam * (s_miss * s_miss - s_hit * s_hit) / (2 * (1 - rho)) + lam * w * ds / (1 - rho)
        return price


def max_draws(e: M.Expr):
    """The most uniforms ``e`` can draw when every draw is written out
    (``Compiler.sample``); None when one is a call of ``rng.d_*``."""
    v = const_value(e)
    if v is not None:
        return 0
    t = type(e)
    if t is M.ESample:
        own = {"Det": 0, "Exp": 1, "Uniform": 1, "Bernoulli": 1}.get(e.dist)
        if e.dist == "H2" and all(const_value(a) is not None for a in e.args):
            own = 2
        if own is None:
            return None
        kids = e.args
    elif t is M.ECond:
        cv = const_value(e.cond)
        if cv is not None:
            return max_draws(e.then if truth(cv) else e.other)
        parts = [max_draws(x) for x in (e.cond, e.then, e.other)]
        if None in parts:
            return None
        return parts[0] + max(parts[1], parts[2])
    elif t is M.EFn:
        own, kids = 0, e.args
    elif t is M.EUnary:
        own, kids = 0, (e.arg,)
    elif t is M.EBinary:
        own, kids = 0, (e.lhs, e.rhs)
    elif t is M.ECost:
        own, kids = 0, (e.expr,)
    elif t in (M.ENum, M.EAttr, M.ECtx, M.EReg) or (t is M.EQuery and e.ref.index is None):
        own, kids = 0, ()
    else:
        return None
    for x in kids:
        n = max_draws(x)
        if n is None:
            return None
        own += n
    return own


_CMP = {"Lt": "<", "Le": "<=", "Gt": ">", "Ge": ">=", "Eq": "==", "Ne": "!="}


def _flatten(e, same):
    """The operands of a chain of one associative function, in order."""
    out = []
    stack = [e]
    while stack:
        x = stack.pop()
        if same(x):
            stack.extend(reversed(x.args))
        else:
            out.append(x)
    return out


def _div(a: float, b: float) -> float:
    if b != 0:
        return a / b
    return apply_binary("Div", a, b)


def _min(a: float, b: float) -> float:
    if a <= b:
        return a
    if b < a:
        return b
    return math.nan


def _max(a: float, b: float) -> float:
    if a >= b:
        return a
    if b > a:
        return b
    return math.nan


def _minn(xs) -> float:
    r = xs[0]
    for x in xs[1:]:
        r = _min(r, x)
    return r


def _maxn(xs) -> float:
    r = xs[0]
    for x in xs[1:]:
        r = _max(r, x)
    return r


def _floor(x: float) -> float:
    return float(math.floor(x)) if x - x == 0.0 else x


def _and(a: float, b: float) -> float:
    return 1.0 if (a != 0.0 and a == a and b != 0.0 and b == b) else 0.0


def _or(a: float, b: float) -> float:
    return 1.0 if ((a != 0.0 and a == a) or (b != 0.0 and b == b)) else 0.0


def _fn1(name: str, x: float) -> float:
    return apply_fn(name, [x])


def _fn2(name: str, x: float, y: float) -> float:
    return apply_fn(name, [x, y])


def _free(p) -> float:
    return p.cap - p.used


def _mean(m: float) -> float:
    """An ``exp`` mean computed at run time, in its domain."""
    if m >= 0.0 and m - m == 0.0:
        return m
    raise Fault("R016", dist_problem("Exp", (m,)))


def _span(lo: float, hi: float) -> float:
    """``hi - lo`` of a ``uniform`` whose bounds are computed, in its domain."""
    if lo <= hi and lo - lo == 0.0 and hi - hi == 0.0:
        return hi - lo
    raise Fault("R016", dist_problem("Uniform", (lo, hi)))


def _prob(p: float) -> float:
    if p == p:
        return p
    raise Fault("R016", dist_problem("Bernoulli", (p,)))


def check_amount(v: float, what: str) -> float:
    """An amount is not negative and not NaN (§Amounts and indices)."""
    if v >= 0.0:
        return v
    raise Fault("R001", f"the {what} is {fmt_num(v)}: an amount is not negative and not NaN")


def check_guard(v: float) -> bool:
    if v == 1.0:
        return True
    if v == 0.0:
        return False
    raise Fault("R003", f"a guard is {fmt_num(v)}, neither 0 nor 1: a test has two answers")
