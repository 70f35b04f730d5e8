"""Z3 encodings of the link-time checks that quantify over what an
expression can read.

Most link-time checks are about constants and are plain folding (a constant
amount, guard, index, population or gap; a constant hold above its pool's
cap).  The one that needs a solver is `each at most (e)`: the cap must be
above 0 *for every value its condition can read* — the residents and the
queues as the iteration starts, the engine's registers — since the kernel
reads a cap of 0 as no cap at all.  ``cap_counterexample`` asks Z3 for a
state in which the cap is at or below 0 and returns it in the program's
names, or None when there is none.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Callable, Optional

import z3

from ..ir import model as M
from ..ir.moments import CTX_SPELLING, QUERY_SPELLING

TIMEOUT_MS = 5000
BIG = 10 ** 18  # stands for inf: a cap with no bound


@dataclass
class Encoder:
    """IR expression → Z3 real term; records the free symbols it introduces."""

    name_of_ref: Callable[[M.Ref, str], str] = lambda ref, kind: f"{kind}{ref.base}"
    reg_names: tuple = ()
    symbols: dict = field(default_factory=dict)       # display name -> z3 var
    constraints: list = field(default_factory=list)
    fresh_n: int = 0

    def sym(self, display: str, nonneg: bool) -> z3.ArithRef:
        v = self.symbols.get(display)
        if v is None:
            v = z3.Real(display)
            self.symbols[display] = v
            if nonneg:
                self.constraints.append(v >= 0)
        return v

    def fresh(self, hint: str) -> z3.ArithRef:
        self.fresh_n += 1
        return z3.Real(f"{hint}#{self.fresh_n}")

    def enc(self, e: M.Expr) -> z3.ArithRef:
        t = type(e)
        if t is M.ENum:
            v = e.value
            if v != v:     # NaN: a constant the validator refuses (E401); here any value
                return self.fresh("nan")
            if math.isinf(v):
                return z3.RealVal(BIG if v > 0 else -BIG)
            # the float's exact value, as a fraction (Z3 reads no exponent)
            return z3.RealVal(int(v)) if float(v).is_integer() else z3.RealVal(str(Fraction(v)))
        if t is M.ECtx:
            return self.sym(CTX_SPELLING.get(e.var, e.var), nonneg=True)
        if t is M.EQuery:
            idx = "" if e.ref.index is None else f"[{_idx(e.ref.index)}]"
            kind = "pool" if e.query in M.POOL_QUERIES else "stage"
            return self.sym(f"{QUERY_SPELLING[e.query]}({self.name_of_ref(e.ref, kind)}{idx})", nonneg=True)
        if t is M.EReg:
            name = self.reg_names[e.index] if e.index < len(self.reg_names) else f"register{e.index}"
            return self.sym(name, nonneg=False)
        if t is M.EAttr:
            return self.sym(f"attribute{e.slot}", nonneg=False)
        if t is M.ECost:
            return self.enc(e.expr)
        if t is M.EUnary:
            a = self.enc(e.arg)
            return -a if e.op == "Neg" else z3.If(a == 0, z3.RealVal(1), z3.RealVal(0))
        if t is M.ECond:
            c = self.enc(e.cond)
            return z3.If(c != 0, self.enc(e.then), self.enc(e.other))
        if t is M.EBinary:
            a, b = self.enc(e.lhs), self.enc(e.rhs)
            op = e.op
            one, zero = z3.RealVal(1), z3.RealVal(0)
            if op == "Add":
                return a + b
            if op == "Sub":
                return a - b
            if op == "Mul":
                return a * b
            if op == "Div":
                return a / b
            cmp = {"Lt": a < b, "Le": a <= b, "Gt": a > b, "Ge": a >= b, "Eq": a == b, "Ne": a != b,
                   "And": z3.And(a != 0, b != 0), "Or": z3.Or(a != 0, b != 0)}.get(op)
            if cmp is not None:
                return z3.If(cmp, one, zero)
            return self.fresh("pow")
        if t is M.EFn:
            args = [self.enc(a) for a in e.args]
            if e.fn == "Min":
                return z3.If(args[0] <= args[1], args[0], args[1])
            if e.fn == "Max":
                return z3.If(args[0] >= args[1], args[0], args[1])
            if e.fn == "Abs":
                return z3.If(args[0] < 0, -args[0], args[0])
            if e.fn == "Floor":
                return z3.ToReal(z3.ToInt(args[0]))
            if e.fn == "Ceil":
                return -z3.ToReal(z3.ToInt(-args[0]))
            return self.fresh(e.fn.lower())
        # draws, prices, aggregates: any value
        return self.fresh("value")


def _idx(e: M.Expr) -> str:
    if type(e) is M.ENum and float(e.value).is_integer():
        return str(int(e.value))
    return "…"


@dataclass
class Counterexample:
    value: str                  # the cap's value there
    assignment: list            # [(name, value)] of the symbols it reads


def _fmt(v: z3.ExprRef) -> str:
    if z3.is_rational_value(v):
        n, d = v.numerator_as_long(), v.denominator_as_long()
        if d == 1:
            return "inf" if n >= BIG else str(n)
        return repr(n / d)
    if z3.is_algebraic_value(v):
        return v.as_decimal(6)
    return str(v)


def cap_counterexample(cap: M.Expr, name_of_ref=None, reg_names=()) -> Optional[Counterexample]:
    """A state in which `each at most (cap)` is at or below 0, or None.

    The cap reads the residents (counts and KV totals, naturals), the queues
    (naturals) and the engine's registers (any value).  ``inf`` is no cap."""
    enc = Encoder(name_of_ref=name_of_ref or (lambda ref, kind: f"{kind}{ref.base}"),
                  reg_names=tuple(reg_names))
    term = enc.enc(cap)
    # An optimizer, so that the state shown is the same whatever Z3 solved
    # before: the fewest residents and queued requests, then each symbol,
    # in name order, as small as it can be (a model Z3 picks on its own
    # depends on the solver's history)
    s = z3.Optimize()
    s.set("timeout", TIMEOUT_MS)
    for c in enc.constraints:
        s.add(c)
    # counts are whole numbers
    counts = []
    for name, v in enc.symbols.items():
        if name.startswith(("running.", "waiting.", "queued(", "holders(", "queue(", "busy(")):
            s.add(v == z3.ToReal(z3.ToInt(v)))
            counts.append(v)
    s.add(term <= 0)
    if counts:
        s.minimize(z3.Sum(counts))
    for name in sorted(enc.symbols):
        s.minimize(enc.symbols[name])
    r = s.check()
    if r == z3.unsat:
        return None
    if r == z3.unknown:
        return Counterexample("unknown", [])
    m = s.model()
    assignment = []
    for name in sorted(enc.symbols):
        v = m.eval(enc.symbols[name], model_completion=True)
        assignment.append((name, _fmt(v)))
    return Counterexample(_fmt(m.eval(term, model_completion=True)), assignment)
