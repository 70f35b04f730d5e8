"""serq.calib.evaluate computes an IR expression over arrays as the IR's own
arithmetic computes it at each point (serq.ir.expr: the linker's constant
folding, the simulator's closures), to the bit, NaN and infinities included."""

import dataclasses
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from serq.calib import evaluate as EV
from serq.ir import model as M
from serq.ir.expr import const_value

VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e-9, 1e300, -7.25, math.inf, -math.inf, math.nan]
BINOPS = ["Add", "Sub", "Mul", "Div", "Pow", "Lt", "Le", "Gt", "Ge", "Eq", "Ne", "And", "Or"]
FNS = {"Min": 2, "Max": 2, "Abs": 1, "Floor": 1, "Ceil": 1, "Sqrt": 1, "Exp": 1, "Ln": 1, "Pow": 2}
VARS = EV.BATCH_VARS


def exprs():
    leaf = st.one_of(st.sampled_from(VALUES).map(M.ENum),
                     st.sampled_from(VALUES).map(lambda v: M.ENum(v, "c")),
                     st.sampled_from(VARS).map(M.ECtx))

    def grow(children):
        return st.one_of(
            st.tuples(st.sampled_from(["Neg", "Not"]), children).map(lambda t: M.EUnary(*t)),
            st.tuples(st.sampled_from(BINOPS), children, children).map(lambda t: M.EBinary(*t)),
            st.sampled_from(sorted(FNS)).flatmap(
                lambda f: st.lists(children, min_size=FNS[f], max_size=FNS[f]).map(lambda a: M.EFn(f, tuple(a)))),
            st.tuples(children, children, children).map(lambda t: M.ECond(*t)))
    return st.recursive(leaf, grow, max_leaves=12)


def at_point(e, point: dict, c: float):
    """``e`` with its context variables and its named number at one point: a constant."""
    t = type(e)
    if t is M.ECtx:
        return M.ENum(point[e.var])
    if t is M.ENum:
        return M.ENum(c) if e.input is not None else e
    if t is M.EUnary:
        return dataclasses.replace(e, arg=at_point(e.arg, point, c))
    if t is M.EBinary:
        return dataclasses.replace(e, lhs=at_point(e.lhs, point, c), rhs=at_point(e.rhs, point, c))
    if t is M.EFn:
        return dataclasses.replace(e, args=tuple(at_point(a, point, c) for a in e.args))
    if t is M.ECond:
        return M.ECond(at_point(e.cond, point, c), at_point(e.then, point, c), at_point(e.other, point, c))
    raise AssertionError(e)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)) or a == b


@settings(max_examples=300, deadline=None)
@given(exprs(), st.lists(st.sampled_from(VALUES), min_size=len(VARS) * 4, max_size=len(VARS) * 4),
       st.sampled_from(VALUES))
def test_evaluate_is_the_irs_arithmetic_point_by_point(e, vals, c):
    n = 4
    ctx = {v: np.array(vals[i * n:(i + 1) * n]) for i, v in enumerate(VARS)}
    got = EV.evaluate(e, ctx, {"c": c})
    for k in range(n):
        want = const_value(at_point(e, {v: float(ctx[v][k]) for v in VARS}, c))
        assert same(float(got[k]), want), (e, k, float(got[k]), want)
