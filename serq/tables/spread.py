"""The spread of a metric across seeds: the mean, a Student-t 95 % interval,
the median, the least and the greatest.  Each seed is one independent replication, so
the interval is ``t(0.975, n - 1) · s / √n`` over the n seeds' values (NaN
below two seeds); NaN values (a run that recorded nothing) are left out and
counted apart."""

from __future__ import annotations

import math
from dataclasses import dataclass

NAN = math.nan


@dataclass(frozen=True)
class Spread:
    n: int          # the seeds whose value is a number
    mean: float
    half: float     # the t-interval's half-width
    min: float
    max: float
    missing: int = 0  # the seeds whose value is NaN
    median: float = NAN  # the middle value (the mean of the two middle ones for an even count)


def spread(values, level: float = 0.95) -> Spread:
    values = list(values)
    xs = [float(v) for v in values if v is not None and v == v]
    missing = len(values) - len(xs)
    n = len(xs)
    if n == 0:
        return Spread(0, NAN, NAN, NAN, NAN, missing)
    mean = math.fsum(xs) / n
    if n >= 2 and all(math.isfinite(x) for x in xs):
        var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
        half = t_quantile(0.5 + level / 2, n - 1) * math.sqrt(var / n)
    else:
        half = NAN
    o = sorted(xs)
    median = o[n // 2] if n % 2 else (o[n // 2 - 1] + o[n // 2]) / 2
    return Spread(n, mean, half, min(xs), max(xs), missing, median)


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > 1/2) of Student's t with ``df`` degrees of freedom,
    by bisection on its distribution function."""
    if not (0.5 < p < 1) or df < 1:
        raise ValueError("t_quantile needs 1/2 < p < 1 and df >= 1")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return (lo + hi) / 2


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t: 1 - I_x(df/2, 1/2) / 2 at x = df / (df + t²), t >= 0."""
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2, 0.5, x)
    return 1 - tail if t >= 0 else tail


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued
    fraction (evaluated with the modified Lentz method), on the side of the
    symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(ln_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(ln_front) * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300

    def fix(v):
        return tiny if abs(v) < tiny else v

    c = 1.0
    d = 1 / fix(1 - (a + b) * x / (a + 1))
    h = d
    for m in range(1, 1000):
        # the even step d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m))
        num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1 / fix(1 + num * d)
        c = fix(1 + num / c)
        h *= d * c
        # the odd step d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
        num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1 / fix(1 + num * d)
        c = fix(1 + num / c)
        step = d * c
        h *= step
        if abs(step - 1) < 1e-16:
            break
    return h
