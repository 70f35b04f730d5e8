"""IR expressions evaluated over arrays: a cost expression at many batch
compositions at once, with its named constants (the numbers that are an
input's value, ``ENum.input``) given values of one's own.

The arithmetic is the language's (serq.ir.expr: ``apply_fn``,
``apply_binary``, ``truth``), element by element, written with numpy so that
ten thousand compositions cost one pass; ``tests/calib/test_evaluate.py``
holds it to those scalar functions on random expressions."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..ir import model as M
from ..ir.expr import walk
from ..ir.moments import CTX_SPELLING

# the batch quantities a profile's compositions supply (serq.calib.fit)
BATCH_VARS = ("Ntok", "Npre", "Ndec", "Kvb", "Kvp", "Attn", "Nres")


class NotEvaluable(Exception):
    """The expression reads something a batch composition does not give."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def inputs_named(e: M.Expr) -> list:
    """The inputs ``e`` names, in the order first met (depth first, left to right)."""
    out: list = []
    for x in walk(e):
        if type(x) is M.ENum and x.input is not None and x.input not in out:
            out.append(x.input)
    return out


def check(e: M.Expr, supplied=BATCH_VARS) -> None:
    for x in walk(e):
        t = type(x)
        if t is M.ECtx and x.var not in supplied:
            raise NotEvaluable(f"`{CTX_SPELLING.get(x.var, x.var)}`")
        if t in (M.EAttr, M.EReg):
            raise NotEvaluable("a session attribute" if t is M.EAttr else "a register")
        if t in (M.EQuery, M.EPrice):
            raise NotEvaluable("a pool's or a stage's observable")
        if t in (M.ESample, M.EAgg):
            raise NotEvaluable("a draw" if t is M.ESample else "an aggregate")


def _truth(x):
    return (x != 0.0) & ~np.isnan(x)


def evaluate(e: M.Expr, ctx: dict, values: Optional[dict] = None) -> np.ndarray:
    """``e`` at each composition: ``ctx`` maps a context variable (``"Ntok"``)
    to an array, ``values`` an input's name to the value it takes (a named
    number not in it keeps its own)."""
    values = values or {}
    n = len(next(iter(ctx.values())))
    with np.errstate(all="ignore"):
        out = _ev(e, ctx, values)
    return np.broadcast_to(np.asarray(out, dtype=float), (n,)).astype(float)


def _ev(e, ctx, values):
    t = type(e)
    if t is M.ENum:
        return values.get(e.input, e.value) if e.input is not None else e.value
    if t is M.ECtx:
        return ctx[e.var]
    if t is M.ECost:
        return _ev(e.expr, ctx, values)
    if t is M.EUnary:
        a = np.asarray(_ev(e.arg, ctx, values), dtype=float)
        if e.op == "Neg":
            return -a
        return np.where(_truth(a), 0.0, 1.0)
    if t is M.EBinary:
        return _binary(e.op, np.asarray(_ev(e.lhs, ctx, values), dtype=float),
                       np.asarray(_ev(e.rhs, ctx, values), dtype=float))
    if t is M.ECond:
        c = np.asarray(_ev(e.cond, ctx, values), dtype=float)
        return np.where(_truth(c), _ev(e.then, ctx, values), _ev(e.other, ctx, values))
    if t is M.EFn:
        args = [np.asarray(_ev(a, ctx, values), dtype=float) for a in e.args]
        return _fn(e.fn, args)
    raise NotEvaluable(type(e).__name__)     # check() refuses these first


def _binary(op, a, b):
    if op == "Add":
        return a + b
    if op == "Sub":
        return a - b
    if op == "Mul":
        return np.where((a == 0) & np.isinf(b) | (b == 0) & np.isinf(a), np.nan, a * b)
    if op == "Div":
        return np.where(b == 0, np.where((a == 0) | np.isnan(a), np.nan, np.copysign(np.inf, a) *
                                         np.copysign(1.0, b)), a / np.where(b == 0, 1.0, b))
    if op == "Pow":
        return _pow(a, b)
    if op in ("Lt", "Le", "Gt", "Ge", "Eq", "Ne"):
        f = {"Lt": np.less, "Le": np.less_equal, "Gt": np.greater, "Ge": np.greater_equal,
             "Eq": np.equal, "Ne": np.not_equal}[op]
        return f(a, b).astype(float)
    if op == "And":
        return (_truth(a) & _truth(b)).astype(float)
    if op == "Or":
        return (_truth(a) | _truth(b)).astype(float)
    raise ValueError(op)


def _pow(a, b):
    # math.pow: a domain error (a negative base to a finite fraction, 0 to a
    # finite negative power) is NaN; an overflow of finite numbers +inf
    out = np.power(a, b)
    fin = np.isfinite(b)
    bad = ((a < 0) & fin & (b != np.floor(np.where(fin, b, 0.0)))) | ((a == 0) & (b < 0) & fin)
    out = np.where(np.isinf(out) & np.isfinite(a) & fin, np.inf, out)
    return np.where(bad, np.nan, out)


def _fn(fn, args):
    if fn in ("Min", "Max"):
        a, b = args
        pick = (a <= b) if fn == "Min" else (a >= b)
        return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(pick, a, b))
    x = args[0]
    if fn == "Abs":
        return np.abs(x)
    if fn == "Floor":
        return np.where(np.isfinite(x), np.floor(x), x)
    if fn == "Ceil":
        return np.where(np.isfinite(x), np.ceil(x), x)
    if fn == "Sqrt":
        return np.where(x >= 0, np.sqrt(np.abs(x)), np.nan)
    if fn == "Exp":
        return np.exp(x)
    if fn == "Ln":
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), np.where(x == 0, -np.inf, np.nan))
    if fn == "Pow":
        return _pow(x, args[1])
    raise ValueError(fn)
