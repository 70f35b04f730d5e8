"""Calibration: a program's iteration cost fitted to a kernel profile.

It reads the program's IR only: each step stage's `execute` cost, and the
constants it names (the numbers that are an input's value, ``ENum.input``).
The profile's batch compositions (serq.calib.compose) give whole-step times;
each composition is also the batch quantities the cost reads
(`batch.tokens`, `batch.prefilled`, `batch.decoding`, `batch.kv_decode`,
`batch.kv_prefill`, `batch.attention`, `running.count`), as serQ's engine
computes them for that batch; the cost is evaluated there with the IR's
arithmetic (serq.calib.evaluate) and its constants are chosen to make its
relative error small:

    minimise  Σ_i w_i² ((cost_i(θ) − T_i) / T_i)²   subject to θ ≥ 0,

with the weights w giving each regime (decode only, prefill only, mixed)
the same total weight on the profile's grid, and every iteration the same
weight on the batches of a replay (``Grid.per_batch``: the batches an engine
makes, each as often as it makes it).  A cost linear in its constants is solved exactly
(non-negative least squares); any other by projected Levenberg–Marquardt
from the program's own values.  Each constant's uncertainty is its standard
error, s²(JᵀJ)⁻¹ with s² the weighted residuals' variance (the form's misfit
counts as noise).  An input the cost names that is not a hardware constant
is held: `layers` is the model's layer count (the model table, or
``layers=``); others are held when asked (``hold``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..diag import Diagnostic, SerqError
from ..ir import codec
from ..ir import model as M
from ..ir.expr import strip_cost
from . import evaluate as EV
from . import solve
from .compose import REGIMES, Grid

E_FIT = "E983"
E_USE = "E984"         # options that do not go together
LAYERS = "layers"
# inputs a kernel profile does not measure: 0 in the fit (the profile's step
# has none of it), kept at their values in the instance it writes, unless the
# fit is told to fit them too: the CPU's work between iterations
NOT_PROFILED = {"gap": "the CPU's time between iterations, which a kernel profile does not measure", "ar_lat": "the interconnect", "ar_tok": "the interconnect"}


@dataclass
class Constant:
    name: str
    value: float
    sigma: Optional[float] = None      # the standard error (None: held)
    held: str = ""                     # why it is held ("" when fitted)
    default: Optional[float] = None    # the program's own value


@dataclass
class Residual:
    regime: str
    n: int
    median: float                      # of |relative error|
    p90: float
    bias: float                        # the median signed relative error


@dataclass
class Calibration:
    stages: list
    constants: list
    residuals: list
    method: str
    grid: Grid
    predicted: np.ndarray              # seconds, one row per stage's cost and composition
    weights: dict = field(default_factory=dict)

    def values(self) -> dict:
        return {c.name: c.value for c in self.constants}

    def profiled_values(self) -> dict:
        """The constants as the fit timed the profile's steps: what a kernel
        profile does not measure (gap, the interconnect), held, is 0."""
        return {c.name: 0.0 if c.held and c.held == NOT_PROFILED.get(c.name) else c.value for c in self.constants}

    def constant(self, name: str) -> Constant:
        return next(c for c in self.constants if c.name == name)


def costs_of(p: M.Program, stages: Optional[list] = None) -> list:
    """``(stage label, cost)`` of the program's step stages (those named in
    ``stages``, else all), one per distinct cost."""
    out, seen = [], {}
    labels = []
    for st in p.stages:
        if type(st.kind) is not M.KStep:
            continue
        label = st.name if st.index is None else f"{st.name}[{st.index}]"
        labels.append(label)
        if stages and st.name not in stages and label not in stages:
            continue
        key = _text(st.kind.cost)
        if key in seen:         # the same cost: one fit, named by every engine that has it
            i = seen[key]
            out[i] = (out[i][0] + ", " + label, out[i][1])
            continue
        seen[key] = len(out)
        out.append((label, st))
    if not labels:
        raise SerqError(Diagnostic(E_FIT, "the program has no engine: no iteration cost to calibrate",
                                   help="calibration fits the constants of an engine's `execute (…)`"))
    if not out:
        raise SerqError(Diagnostic(E_FIT, f"no engine {', '.join(stages)} in the program "
                                          f"(its engines: {', '.join(labels)})"))
    return out


def _text(e: M.Expr) -> str:
    import json
    return json.dumps(codec.to_data(e), sort_keys=True)


def batch_quantities(g: Grid, block: Optional[float]) -> dict:
    """The batch quantities serQ's engine computes for each composition: a
    decode over k tokens of KV holds its blocks for k + 1, a prefill chunk of
    c over k for k + c (whole blocks of ``block``), `batch.attention` is
    c × (k + c/2)."""
    bs = block or 1.0
    up = lambda x: np.ceil(x / bs) * bs   # noqa: E731
    has_pre = (g.pc > 0).astype(float)
    return {"Ntok": g.pc + g.nd, "Npre": g.pc, "Ndec": g.nd, "Kvb": g.nd * up(g.kvd + 1),
            "Kvp": has_pre * up(g.kp + g.pc), "Attn": g.pc * (g.kp + g.pc / 2), "Nres": g.nd + has_pre}


def regime_weights(regime: np.ndarray) -> np.ndarray:
    """Each regime present the same total weight; Σ w² = the rows."""
    w = np.zeros(len(regime))
    present = [r for r in REGIMES if (regime == r).any()]
    for r in present:
        m = regime == r
        w[m] = math.sqrt(len(regime) / (len(present) * m.sum()))
    return w


def calibrate(p: M.Program, g: Grid, *, layers: Optional[int], hold=(), stages=None,
              values: Optional[dict] = None, free_too=()) -> Calibration:
    """Fit the constants the program's costs name to the grid ``g``.
    ``layers``: the model's layer count (for an input named `layers`);
    ``hold``: inputs kept at their values; ``values``: values given for
    named inputs (they win over the program's own); ``free_too``: inputs of
    NOT_PROFILED to fit all the same."""
    chosen = costs_of(p, stages)
    exprs = []
    for label, st in chosen:
        e = strip_cost(st.kind.cost)
        try:
            EV.check(e)
        except EV.NotEvaluable as ne:
            raise SerqError(Diagnostic(E_FIT, f"engine `{label}`'s cost reads {ne.what}, which a profiled batch "
                                              "does not give", help="a cost calibration fits reads the batch: "
                                              "batch.tokens, batch.prefilled, batch.decoding, batch.kv_decode, "
                                              "batch.kv_prefill, batch.attention, running.count")) from None
        exprs.append((label, st, e))
    names: list = []
    defaults: dict = {}
    for _, _, e in exprs:
        for n in EV.inputs_named(e):
            if n not in names:
                names.append(n)
        for x in _nums(e):
            defaults.setdefault(x.input, x.value)
    if not names:
        raise SerqError(Diagnostic(E_FIT, "the cost names no constants: every number in it is written "
                                          "there, so there is nothing to fit",
                                   help='make each constant an input: `let c0 = args.number("c0", 0.01);`'))
    values = dict(values or {})
    fixed: dict = {}
    held: dict = {}
    for option, given in (("--hold", hold), ("--fit", free_too)):
        unknown = [h for h in given if h not in names]
        if unknown:
            raise SerqError(Diagnostic(E_FIT, f"{option} {unknown[0]}: the cost names no constant `{unknown[0]}` "
                                              f"(it names {', '.join(names)})"))
    measured = [h for h in free_too if h not in NOT_PROFILED]
    if measured:
        raise SerqError(Diagnostic(E_FIT, f"--fit {measured[0]}: the profile measures `{measured[0]}`, so it is "
                                          "fitted without --fit",
                                   help=f"--fit names a constant a kernel profile does not measure: "
                                        f"{', '.join(NOT_PROFILED)}"))
    both = [h for h in hold if h in free_too]
    if both:
        raise SerqError(Diagnostic(E_USE, f"--hold {both[0]} and --fit {both[0]}: a constant is held at its value "
                                          "or fitted, not both"))
    if LAYERS in names:
        if LAYERS in values:
            fixed[LAYERS] = values[LAYERS]
            held[LAYERS] = "given"
        elif layers is not None:
            fixed[LAYERS] = float(layers)
            held[LAYERS] = "the model's layer count"
        else:
            raise SerqError(Diagnostic(E_FIT, "the cost names `layers`, and the model's layer count is not known",
                                       help="give it: --layers N"))
    absent = {}
    for h, why in NOT_PROFILED.items():
        if h in names and h not in fixed and h not in free_too:
            fixed[h] = values.get(h, defaults[h])
            absent[h] = 0.0
            held[h] = why
    for h in hold:
        if h not in fixed:
            fixed[h] = values.get(h, defaults[h])
            held[h] = "held"
    free = [n for n in names if n not in fixed]
    if not free:
        raise SerqError(Diagnostic(E_FIT, "every constant the cost names is held: nothing to fit"))
    start = np.array([values.get(n, defaults[n]) for n in free], dtype=float)
    if (start < 0).any() or not np.isfinite(start).all():
        bad = free[int(np.flatnonzero((start < 0) | ~np.isfinite(start))[0])]
        raise SerqError(Diagnostic(E_FIT, f"`{bad}` starts at {start[free.index(bad)]:g}: a fitted constant "
                                          "is a finite number ≥ 0"))
    block = None
    ctxs = []
    for label, st, e in exprs:
        if st.kind.memory is not None:
            block = p.pools[st.kind.memory].block
        ctxs.append(g.ctx if g.per_batch else batch_quantities(g, block))
    T = g.seconds
    reg = g.regime()
    w = np.ones(len(g)) if g.per_batch else regime_weights(reg)
    rows_T = np.concatenate([T] * len(exprs))
    rows_w = np.concatenate([w] * len(exprs)) / math.sqrt(len(exprs))

    def model(theta: np.ndarray) -> np.ndarray:
        vals = dict(fixed)
        vals.update(absent)
        vals.update(zip(free, theta))
        return np.concatenate([EV.evaluate(e, ctx, vals) for (_, _, e), ctx in zip(exprs, ctxs)])

    def residual(theta: np.ndarray) -> np.ndarray:
        return rows_w * (model(theta) - rows_T) / rows_T

    scale = np.where(start > 0, start, 1e-6)
    f0 = model(np.zeros(len(free)))
    G = np.stack([(model(np.eye(len(free))[i] * scale[i]) - f0) / scale[i] for i in range(len(free))], axis=1)
    rng = np.random.default_rng(1)
    probe = scale * rng.uniform(0.5, 2.0, len(free))
    linear = bool(np.all(np.isfinite(G))) and np.allclose(model(probe), f0 + G @ probe, rtol=1e-9,
                                                           atol=1e-12 * max(1e-300, float(np.abs(rows_T).max())))
    A = (rows_w / rows_T)[:, None] * G
    J0 = A if linear else solve.jacobian(residual, start, scale)
    who = solve.entangled(J0, free)
    if who is not None:
        if len(who) == 1:
            msg = f"the profile does not determine `{who[0]}`: the cost is the same whatever its value"
        else:
            msg = (f"the profile cannot tell {', '.join(f'`{n}`' for n in who)} apart: they change the cost "
                   "the same way at every profiled batch")
        raise SerqError(Diagnostic(E_FIT, msg, help=f"hold one at its value (--hold {who[-1]}) or take it out "
                                                    "of the cost"))
    if linear:
        theta = solve.nnls(A, rows_w * (rows_T - f0) / rows_T)
        method = "non-negative least squares (the cost is linear in its constants)"
    else:
        # from the program's own values, and from the bounded Gauss-Newton
        # step of the cost's linearisation there; the better of the two
        a = solve.levenberg_marquardt(residual, start, scale)
        r0 = residual(start)
        b = solve.levenberg_marquardt(residual, solve.nnls(J0, J0 @ start - r0), scale)
        ra, rb = residual(a), residual(b)
        theta = a if float(ra @ ra) <= float(rb @ rb) else b
        method = "Levenberg–Marquardt with the constants ≥ 0 (the cost is not linear in its constants)"
    r = residual(theta)
    if not np.isfinite(r).all():
        raise SerqError(Diagnostic(E_FIT, "the fitted cost is not finite at every profiled batch"))
    J = solve.jacobian(residual, theta, scale, r)
    sig = solve.standard_errors(J, r, theta > 0)
    consts = []
    for n in names:
        if n in fixed:
            consts.append(Constant(n, float(fixed[n]), None, held[n], defaults.get(n)))
        else:
            i = free.index(n)
            consts.append(Constant(n, float(theta[i]), float(sig[i]) if theta[i] > 0 else 0.0, "",
                                   defaults.get(n)))
    pred = model(theta)
    rel = (pred - rows_T) / rows_T
    res = _by_regime(rel, np.concatenate([reg] * len(exprs)), len(exprs), len(g))
    return Calibration([label for label, _, _ in exprs], consts, res, method, g, pred,
                       {rg: float(w[reg == rg][0]) for rg in REGIMES if (reg == rg).any()})


def residuals(p: M.Program, g: Grid, values: dict, stages=None) -> list:
    """The relative error of the costs with these constants at ``g``'s
    batches, per regime and in all (as a fit reports it)."""
    rel, regs = [], []
    block = None
    for _, st in costs_of(p, stages):
        if st.kind.memory is not None:
            block = p.pools[st.kind.memory].block
        e = strip_cost(st.kind.cost)
        ctx = g.ctx if g.per_batch else batch_quantities(g, block)
        rel.append((EV.evaluate(e, ctx, values) - g.seconds) / g.seconds)
        regs.append(g.regime())
    return _by_regime(np.concatenate(rel), np.concatenate(regs), len(rel), len(g))


def _by_regime(rel: np.ndarray, regs: np.ndarray, costs: int, n: int) -> list:
    res = []
    for rg in REGIMES:
        m = regs == rg
        if m.any():
            a = np.abs(rel[m])
            res.append(Residual(rg, int(m.sum()) // costs, float(np.median(a)),
                                float(np.percentile(a, 90)), float(np.median(rel[m]))))
    a = np.abs(rel)
    res.append(Residual("all", n, float(np.median(a)), float(np.percentile(a, 90)), float(np.median(rel))))
    return res


def _nums(e: M.Expr):
    from ..ir.expr import walk
    for x in walk(e):
        if type(x) is M.ENum and x.input is not None:
            yield x
