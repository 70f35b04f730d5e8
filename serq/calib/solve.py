"""Least squares with the constants held ≥ 0: Lawson and Hanson's
non-negative least squares for a cost that is linear in its constants, and a
projected Levenberg–Marquardt for one that is not (a `max`, a product of two
constants), each with the constants' standard errors from the Jacobian at
the solution."""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np


def nnls(A: np.ndarray, b: np.ndarray, max_iter: Optional[int] = None) -> np.ndarray:
    """argmin ‖A x − b‖ subject to x ≥ 0 (Lawson & Hanson, "Solving Least
    Squares Problems", 1974, ch. 23), on A's columns scaled to unit norm."""
    m, n = A.shape
    norms = np.linalg.norm(A, axis=0)
    norms[norms == 0] = 1.0
    As = A / norms
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    w = As.T @ (b - As @ x)
    tol = 10 * max(m, n) * np.finfo(float).eps * np.linalg.norm(As, 1) * max(1.0, np.abs(b).max())
    it = 0
    max_iter = max_iter or 3 * n + 30
    while (~passive).any() and (w[~passive] > tol).any():
        j = np.argmax(np.where(~passive, w, -np.inf))
        passive[j] = True
        while True:
            it += 1
            if it > max_iter * 10:
                break
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(As[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > tol * 1e-3
            x[~passive] = 0.0
        w = As.T @ (b - As @ x)
    return x / norms


def levenberg_marquardt(residual: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
                        scale: np.ndarray, max_iter: int = 300) -> np.ndarray:
    """argmin ‖residual(x)‖² subject to x ≥ 0, from ``x0``; ``scale`` is each
    constant's size (finite differences step by 1e-6 of it)."""
    x = np.maximum(np.asarray(x0, dtype=float), 0.0)
    r = residual(x)
    cost = float(r @ r)
    lam = 1e-3
    for _ in range(max_iter):
        J = jacobian(residual, x, scale, r)
        g = J.T @ r
        H = J.T @ J
        d = np.diag(H).copy()
        d[d == 0] = 1.0
        improved = False
        for _ in range(30):
            try:
                step = np.linalg.solve(H + lam * np.diag(d), -g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            xn = np.maximum(x + step, 0.0)
            rn = residual(xn)
            cn = float(rn @ rn)
            if np.isfinite(cn) and cn < cost:
                improved = cost - cn > 1e-14 * max(cost, 1e-300)
                x, r, cost = xn, rn, cn
                lam = max(lam / 3, 1e-12)
                break
            lam *= 4
        if not improved:
            break
    return x


def jacobian(residual: Callable, x: np.ndarray, scale: np.ndarray, r0: Optional[np.ndarray] = None) -> np.ndarray:
    """Forward differences (backward at a constant held at 0 from above)."""
    r0 = residual(x) if r0 is None else r0
    J = np.empty((len(r0), len(x)))
    for i in range(len(x)):
        h = 1e-6 * max(abs(x[i]), scale[i])
        xp = x.copy()
        xp[i] += h
        J[:, i] = (residual(xp) - r0) / h
    return J


def standard_errors(J: np.ndarray, r: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The constants' standard errors over the constants ``free`` (not at
    their bound): the sandwich (heteroscedasticity-consistent, White's HC1)
    covariance (JᵀJ)⁻¹ Jᵀ diag(r²) J (JᵀJ)⁻¹ · n/(n − k) of the weighted
    residuals ``r``, which does not assume every residual has one variance
    (the weights give the regimes one weight each; the form's misfit is not
    noise of one size).  NaN where the Jacobian does not determine one.
    (The columns are scaled to unit norm first: the constants' sizes differ
    by ten orders of magnitude.)"""
    out = np.full(J.shape[1], np.nan)
    idx = np.flatnonzero(free)
    if len(idx) == 0:
        return out
    Jf = J[:, idx]
    norms = np.linalg.norm(Jf, axis=0)
    if (norms == 0).any():
        return out
    Js = Jf / norms
    n, k = Js.shape
    try:
        bread = np.linalg.inv(Js.T @ Js)
    except np.linalg.LinAlgError:
        return out
    meat = (Js * (r ** 2)[:, None]).T @ Js
    cov = bread @ meat @ bread * (n / max(1, n - k))
    out[idx] = np.sqrt(np.maximum(np.diag(cov), 0.0)) / norms
    return out


def entangled(J: np.ndarray, names: list, rel_tol: float = 1e-9) -> Optional[list]:
    """The constants the Jacobian cannot tell apart (the largest components
    of its weakest direction), when its columns are (nearly) dependent."""
    norms = np.linalg.norm(J, axis=0)
    dead = [names[i] for i in range(len(names)) if norms[i] == 0]
    if dead:
        return dead
    Js = J / norms
    _, s, vt = np.linalg.svd(Js, full_matrices=False)
    if s[-1] > rel_tol ** 0.5 * s[0]:
        return None
    v = np.abs(vt[-1])
    return [names[i] for i in range(len(names)) if v[i] > 0.2]     # in the cost's order
