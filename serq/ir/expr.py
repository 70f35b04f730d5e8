"""Small helpers over IR expressions: traversal, constants, arithmetic.

The arithmetic here (``apply_fn``, ``apply_binary``) is the language's, used
by constant folding in the linker and by the simulator's compiled closures,
so that a folded constant and a run-time value agree to the bit.
"""

from __future__ import annotations

import math
from typing import Iterator, Optional

from . import model as M


def children(e: M.Expr) -> Iterator[M.Expr]:
    """The direct sub-expressions of ``e`` (a reference's index included)."""
    t = type(e)
    if t in (M.ENum, M.EAttr, M.ECtx, M.EReg, M.EAgg, M.ERunSum):
        return      # (a running sum's body is read for each resident: not a sub-expression here)
    if t is M.ESample or t is M.EFn:
        yield from e.args
    elif t is M.EQuery:
        if e.ref.index is not None:
            yield e.ref.index
    elif t is M.EPrice:
        if e.ref.index is not None:
            yield e.ref.index
        yield e.s_hit
        yield e.ds
    elif t is M.EUnary:
        yield e.arg
    elif t is M.EBinary:
        yield e.lhs
        yield e.rhs
    elif t is M.ECond:
        yield e.cond
        yield e.then
        yield e.other
    elif t is M.ECost:
        yield e.expr
    else:  # pragma: no cover - a new node must be added here
        raise TypeError(f"unknown expression node {e!r}")


def walk(e: M.Expr) -> Iterator[M.Expr]:
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(list(children(x))))


def nodes(root, fields_of=None) -> Iterator:
    """Every IR record under ``root`` (itself included), each once, through
    tuples and lists; an explicit session's numbers are not walked (a
    replay holds thousands, never an expression).  ``fields_of(node)``: the
    names of the fields to descend into (by default all of them), so that a
    caller can leave out the parts it does not ask about."""
    stack = [root]
    seen = set()
    while stack:
        x = stack.pop()
        t = type(x)
        if t is tuple or t is list:
            stack.extend(x)
            continue
        if not hasattr(x, "__dataclass_fields__") or t is M.ASessions or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        names = x.__dataclass_fields__ if fields_of is None else fields_of(x)
        stack.extend(getattr(x, f) for f in names)


def is_constant(e: M.Expr) -> bool:
    """No attribute, context variable, draw, register, query or aggregate."""
    for x in walk(e):
        if type(x) in (M.EAttr, M.ECtx, M.ESample, M.EReg, M.EQuery, M.EPrice, M.EAgg, M.ERunSum):
            return False
    return True


def draws(e: M.Expr) -> bool:
    return any(type(x) is M.ESample for x in walk(e))


def strip_cost(e: M.Expr) -> M.Expr:
    while type(e) is M.ECost:
        e = e.expr
    return e


def truth(x: float) -> bool:
    return x != 0.0 and not math.isnan(x)


def apply_fn(fn: str, args: list[float]) -> float:
    if fn == "Min":
        a, b = args
        if math.isnan(a) or math.isnan(b):
            return math.nan
        return a if a <= b else b
    if fn == "Max":
        a, b = args
        if math.isnan(a) or math.isnan(b):
            return math.nan
        return a if a >= b else b
    (x, *rest) = args
    if fn == "Abs":
        return abs(x)
    if fn == "Floor":
        return float(math.floor(x)) if math.isfinite(x) else x
    if fn == "Ceil":
        return float(math.ceil(x)) if math.isfinite(x) else x
    if fn == "Sqrt":
        return math.sqrt(x) if x >= 0 else math.nan
    if fn == "Exp":
        try:
            return math.exp(x)
        except OverflowError:
            return math.inf
    if fn == "Ln":
        if x > 0:
            return math.log(x)
        return -math.inf if x == 0 else math.nan
    if fn == "Pow":
        return power(x, rest[0])
    raise ValueError(fn)


def power(a: float, b: float) -> float:
    try:
        r = math.pow(a, b)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan
    return r


def apply_binary(op: str, a: float, b: float) -> float:
    if op == "Add":
        return a + b
    if op == "Sub":
        return a - b
    if op == "Mul":
        if (a == 0 and math.isinf(b)) or (b == 0 and math.isinf(a)):
            return math.nan
        return a * b
    if op == "Div":
        if b == 0:
            if a == 0 or math.isnan(a):
                return math.nan
            return math.copysign(math.inf, a) * (math.copysign(1.0, b))
        return a / b
    if op == "Pow":
        return power(a, b)
    if op == "Lt":
        return 1.0 if a < b else 0.0
    if op == "Le":
        return 1.0 if a <= b else 0.0
    if op == "Gt":
        return 1.0 if a > b else 0.0
    if op == "Ge":
        return 1.0 if a >= b else 0.0
    if op == "Eq":
        return 1.0 if a == b else 0.0
    if op == "Ne":
        return 1.0 if a != b else 0.0
    if op == "And":
        return 1.0 if truth(a) and truth(b) else 0.0
    if op == "Or":
        return 1.0 if truth(a) or truth(b) else 0.0
    raise ValueError(op)


def apply_unary(op: str, a: float) -> float:
    if op == "Neg":
        return -a
    if op == "Not":
        return 0.0 if truth(a) else 1.0
    raise ValueError(op)


def const_value(e: M.Expr) -> Optional[float]:
    """The value of a constant expression, or None if it is not constant."""
    if not is_constant(e):
        return None
    return _eval(e)


def _eval(e: M.Expr) -> float:
    t = type(e)
    if t is M.ENum:
        return e.value
    if t is M.EFn:
        return apply_fn(e.fn, [_eval(a) for a in e.args])
    if t is M.EUnary:
        return apply_unary(e.op, _eval(e.arg))
    if t is M.EBinary:
        return apply_binary(e.op, _eval(e.lhs), _eval(e.rhs))
    if t is M.ECond:
        return _eval(e.then) if truth(_eval(e.cond)) else _eval(e.other)
    if t is M.ECost:
        return _eval(e.expr)
    raise ValueError(e)


def is_test(e: M.Expr) -> bool:
    """An expression whose outermost operator is a comparison, &&, || or !."""
    e = strip_cost(e)
    if type(e) is M.EBinary:
        return e.op in M.COMPARISONS or e.op in ("And", "Or")
    if type(e) is M.EUnary:
        return e.op == "Not"
    return False


# ---------------------------------------------------------------------------
# The domains of the distributions.  A draw whose parameters are outside its
# distribution's domain is the program's error: refused when the linker or
# the validator folds them to constants, and by the simulator when it draws.

MAX_PHASES = 1_000_000
MAX_H2_CV2 = 1e15   # beyond, the balanced H2's second phase has no probability a float holds


def dist_problem(dist: str, args) -> Optional[str]:
    """What is wrong with the parameters ``args`` of ``~dist``, in words, or
    None when they are in its domain:

    * ``exp(mean)``: a finite mean ≥ 0;
    * ``det(x)``: any number (a NaN constant does not link, as every NaN
      constant);
    * ``uniform(lo, hi)``: finite bounds, lo ≤ hi;
    * ``erlang(k, mean)``: a whole number of phases from 1 to a million, a
      finite mean ≥ 0;
    * ``h2(mean, cv2)``: a finite mean ≥ 0 and a squared coefficient of
      variation from 1 to 10^15 (an H2 varies at least as much as an
      exponential; ``erlang`` varies less);
    * ``bernoulli(p)``: any number but NaN, 1 with probability p (p ≤ 0:
      never, p ≥ 1: always)."""
    name = f"~{dist.lower()}"
    if dist in ("Exp", "Erlang", "H2"):
        mean = args[0] if dist != "Erlang" else args[1]
        if not (mean >= 0 and mean - mean == 0):
            return f"the mean of `{name}` is a finite number ≥ 0, not {_num(mean)}"
    if dist == "Bernoulli":
        if args[0] != args[0]:
            return f"the probability of `{name}` is NaN"
    elif dist == "Uniform":
        lo, hi = args
        if not (lo - lo == 0 and hi - hi == 0 and lo <= hi):
            return (f"`~uniform(lo, hi)` takes finite bounds with lo ≤ hi, not ({_num(lo)}, "
                    f"{_num(hi)})")
    elif dist == "Erlang":
        k = args[0]
        if not (1 <= k <= MAX_PHASES and k == math.floor(k)):
            return f"the phases of `~erlang` are a whole number from 1 to {MAX_PHASES:,}, not {_num(k)}"
    elif dist == "H2":
        cv2 = args[1]
        if not (1 <= cv2 <= MAX_H2_CV2):
            return (f"the squared coefficient of variation of `~h2` is from 1 to 1e15, not {_num(cv2)}"
                    + (" (below 1, `~erlang` varies less than an exponential)" if cv2 < 1 else ""))
    return None


def _num(v: float) -> str:
    if v != v:
        return "NaN"
    if v - v != 0:
        return "inf" if v > 0 else "-inf"
    if v == math.floor(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)
