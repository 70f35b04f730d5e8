"""Sample statistics: the mean with a batch-means confidence interval, the
squared coefficient of variation and the percentiles p50, p90, p95, p99.

Confidence interval (observations and the client section): the samples, in
the order they were recorded, are cut into 20 contiguous batches of equal
size (the first ``n mod 20`` samples are left out so the batches are equal);
the half-width is ``t(0.975, 19) * sd(batch means) / sqrt(20)``.  Below 40
samples the interval is NaN.  Gauges use 20 equal windows of time over
[warmup, end] instead, each window's time average a batch mean.

``cv2`` is the sample variance (n - 1) over the squared mean (NaN with fewer
than two samples or a zero mean); a percentile (``QUANTILES``) interpolates
linearly between the order statistics (numpy's default rule).
"""

from __future__ import annotations

import bisect
import math
from array import array
from itertools import chain

from ..signals import imported

BATCHES = 20
T_975_19 = 2.093024054408263
MIN_CI_SAMPLES = 40

NAN = math.nan

# the percentiles a summary gives: (key, q)
QUANTILES = (("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99))
FIELDS = ("count", "mean", "ci", "cv2") + tuple(k for k, _ in QUANTILES)


def summary(values) -> dict:
    """The statistics of ``values`` (a list or an ``array('d')``, in the
    order they were recorded); a statistic the values do not define is NaN
    (none or one value, a zero mean) or an infinity (a sum beyond the
    largest float)."""
    n = len(values)
    if n == 0:
        return dict.fromkeys(FIELDS, NAN) | {"count": 0}
    total = fsum(values)
    mean = total / n
    if n >= _NUMPY_FROM:
        # the same floats, faster: numpy's elementwise IEEE operations give
        # the very terms the Python expression gives, fsum sums them exactly,
        # and a selection finds the same order statistics a sort does (no NaN)
        _np = imported("numpy")   # here, not at import: `serq` starts without it
        if isinstance(values, array):
            a = _np.frombuffer(values, dtype=_np.float64)
        else:
            a = _np.fromiter(values, dtype=_np.float64, count=n)
        with _np.errstate(all="ignore"):     # Python's float operators do not warn either
            d = a - mean
            if 0 < abs(mean) < _TINY:     # the square of the mean underflows: cv2 scaled
                d /= mean
                d *= d
                cv2 = fsum(d) / (n - 1)
            else:
                d *= d
                cv2 = _cv2(fsum(d) / (n - 1), mean)
            del d
        qs = _percentiles_np(a) if not _np.isnan(a).any() else _percentiles(sorted(values))
        return {"count": n, "mean": mean, "ci": batch_ci(values), "cv2": cv2, **qs}
    if n >= 2:
        if 0 < abs(mean) < _TINY:     # the square of the mean underflows: cv2 scaled
            cv2 = fsum([((v - mean) / mean) * ((v - mean) / mean) for v in values]) / (n - 1)
        else:
            var = fsum([(v - mean) * (v - mean) for v in values]) / (n - 1)
            cv2 = _cv2(var, mean)
    else:
        cv2 = NAN
    return {"count": n, "mean": mean, "ci": batch_ci(values), "cv2": cv2, **_percentiles(sorted(values))}


_TINY = 1e-154     # a mean whose square is below the least normal float


def _cv2(var: float, mean: float) -> float:
    return var / (mean * mean) if mean != 0 else NAN


def fsum(values) -> float:
    """``math.fsum`` of a sequence (a list, an ``array('d')`` or a numpy
    array, read in chunks: no list of all its floats), with IEEE
    arithmetic's answer where fsum raises: an infinity for a sum beyond the
    largest float, NaN for inf and -inf together."""
    try:
        return math.fsum(_floats(values))
    except OverflowError:    # the exact sum overflows; its sign is the scaled sum's
        return math.copysign(math.inf, math.fsum(v * 2.0 ** -600 for v in _floats(values)))
    except ValueError:       # inf + -inf
        return NAN


_CHUNK = 1 << 16


def _floats(values):
    """The values as Python floats, a numpy array's one chunk at a time (its
    doubles copied into an ``array('d')``, which fsum reads faster than a
    list of them)."""
    if hasattr(values, "tolist") and not isinstance(values, array):
        n = len(values)
        return chain.from_iterable(array("d", values[k:k + _CHUNK].tobytes()) for k in range(0, n, _CHUNK))
    return values


_NUMPY_FROM = 256


def _ranks(n: int, q: float):
    """The order statistics a percentile interpolates between: (h, lo, hi)."""
    h = (n - 1) * q
    lo = math.floor(h)
    return h, lo, min(lo + 1, n - 1)


def _percentiles_np(a) -> dict:
    """``QUANTILES`` of an array without NaN, by one selection: the order
    statistics a sort finds."""
    _np = imported("numpy")
    n = len(a)
    ranks = [_ranks(n, q) for _, q in QUANTILES]
    part = _np.partition(a, sorted({i for _, lo, hi in ranks for i in (lo, hi)}))
    out = {}
    for (key, _), (h, lo, hi) in zip(QUANTILES, ranks):
        x0 = float(part[lo])
        x1 = float(part[hi])
        out[key] = x0 + (h - lo) * (x1 - x0)
    return out


def _percentiles(xs: list) -> dict:
    """``QUANTILES`` of sorted values (at least one)."""
    out = {}
    for key, q in QUANTILES:
        h, lo, hi = _ranks(len(xs), q)
        out[key] = xs[lo] + (h - lo) * (xs[hi] - xs[lo])
    return out


def batch_ci(values: list) -> float:
    n = len(values)
    if n < MIN_CI_SAMPLES:
        return NAN
    size = n // BATCHES
    start = n - size * BATCHES
    means = [fsum(values[start + k * size:start + (k + 1) * size]) / size for k in range(BATCHES)]
    return ci_of_means(means)


def ci_of_means(means: list) -> float:
    k = len(means)
    if k < 2 or any(m != m for m in means):
        return NAN
    mu = fsum(means) / k
    var = fsum([(m - mu) * (m - mu) for m in means]) / (k - 1)
    return T_975_19 * math.sqrt(var / k)


def percentile(values: list, q: float) -> float:
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return NAN
    h, lo, hi = _ranks(n, q)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def time_windows(times, values, t0: float, t1: float, windows: int = BATCHES):
    """Time average, windowed batch-means CI, least and greatest value held
    for a positive time, of a step function given by its change points
    (``values[i]`` holds from ``times[i]`` to the next time) over [t0, t1].
    A NaN held for a positive time makes the average (and its window's mean)
    NaN; the least and greatest are of the numbers held; a window too narrow
    for the clock to tell its ends apart has a NaN mean."""
    if t1 <= t0 or not times:
        return NAN, NAN, NAN, NAN
    width = (t1 - t0) / windows
    edges = [t0 + k * width for k in range(windows)] + [t1]
    areas = [0.0] * windows
    total = 0.0
    lo = math.inf
    hi = -math.inf
    n = len(times)
    for i in range(n):
        t = times[i]
        v = values[i]
        end = times[i + 1] if i + 1 < n else t1
        a = max(t, t0)
        b = min(end, t1)
        if b <= a:
            continue
        if v == v:
            lo = min(lo, v)
            hi = max(hi, v)
        total += v * (b - a)
        # the windows [edges[k], edges[k+1]) the piece [a, b) overlaps
        k = min(max(bisect.bisect_right(edges, a) - 1, 0), windows - 1)
        while a < b and k < windows:
            seg_end = b if k == windows - 1 else min(b, edges[k + 1])
            if seg_end > a:
                areas[k] += v * (seg_end - a)
                a = seg_end
            k += 1
    mean = total / (t1 - t0)
    means = [areas[k] / w if (w := edges[k + 1] - edges[k]) else NAN for k in range(windows)]
    if lo > hi:
        lo = hi = NAN
    return mean, ci_of_means(means), lo, hi
