"""Random streams and the distributions the language draws from.

The reference (§Workload) gives every consumer of randomness its own stream,
so that two deployments run on one seed see the same traffic:

* the arrival stream (``arrive poisson`` / ``renewal`` gaps);
* the trace stream (an unordered trace's choice of corpus session);
* one stream per (seed, session, turn) for the init block (turn 0) and for
  each turn block (turn k, counted from 1);
* one stream per (seed, session) for the session's statements, and one per
  (seed, session, leg) for each leg a session forks;
* the machine's stream, for eviction keys, spill predicates, costs, budgets
  and ps capacities.

The long-lived streams (arrivals, trace, machine) are :class:`random.Random`
(Mersenne Twister) seeded with an integer that packs (seed, kind) into
disjoint bit fields.  The per-session, per-turn and per-leg streams, of which
a run creates one or more for every session, are SplitMix64 generators
(:class:`SplitMix`, a few integer operations per draw, no seeding cost) whose
initial state is (seed, kind, session, turn) mixed by the SplitMix64
finaliser.  Both are stable across Python versions and platforms (no hash
randomisation is involved), the streams are independent of each other, and
distinct seeds give unrelated streams.
"""

from __future__ import annotations

import math
import random

ARRIVAL = 1
TRACE = 2
WORKLOAD = 3   # (session, turn)
SESSION = 4    # (session,)
LEG = 5        # (session, leg)
MACHINE = 6

_M64 = (1 << 64) - 1


def stream(seed: int, kind: int, a: int = 0, b: int = 0) -> random.Random:
    """A long-lived Mersenne Twister stream."""
    key = (((((seed & _M64) << 8) | kind) << 64 | (a & _M64)) << 64) | (b & _M64)
    return random.Random(key)


_G = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * _C1) & _M64
    z = ((z ^ (z >> 27)) * _C2) & _M64
    return z ^ (z >> 31)


class SplitMix:
    """SplitMix64 (Steele, Lea and Flood 2014): ``random()`` in [0, 1) with 53
    bits."""

    __slots__ = ("s",)

    def __init__(self, state: int):
        self.s = state & _M64

    def random(self) -> float:
        s = (self.s + _G) & _M64
        self.s = s
        z = ((s ^ (s >> 30)) * _C1) & _M64
        z = ((z ^ (z >> 27)) * _C2) & _M64
        return ((z ^ (z >> 31)) >> 11) * 1.1102230246251565e-16


_BASES: dict = {}


def substream(seed: int, kind: int, a: int = 0, b: int = 0) -> SplitMix:
    """A per-session / per-turn / per-leg stream."""
    base = _BASES.get((seed, kind))
    if base is None:
        base = _BASES[(seed, kind)] = _mix(_mix(((seed & _M64) * _G + kind) & _M64) ^ _C2)
    h = _mix(base ^ (((a & _M64) + 1) * _C1 & _M64))
    if b:
        h = _mix(h ^ ((b & _M64) * _C2 & _M64))
    return SplitMix(h)


_log = math.log
_sqrt = math.sqrt


def d_exp(r: random.Random, mean: float) -> float:
    # -mean * ln(1 - U), U in [0, 1): finite for every U
    return -mean * _log(1.0 - r.random())


def d_det(r: random.Random, x: float) -> float:
    return x


def d_uniform(r: random.Random, lo: float, hi: float) -> float:
    return lo + (hi - lo) * r.random()


def d_erlang(r: random.Random, k: float, mean: float) -> float:
    n = int(math.floor(k)) if math.isfinite(k) else 1
    if n < 1:
        n = 1
    m = mean / n
    total = 0.0
    for _ in range(n):
        total += -m * _log(1.0 - r.random())
    return total


def d_h2(r: random.Random, mean: float, cv2: float) -> float:
    """Balanced two-phase hyperexponential of the given mean and squared
    coefficient of variation (below 1 taken as 1): phase i is taken with
    probability p_i and has mean mean / (2 p_i), so p_1/mu_1 = p_2/mu_2."""
    if not (cv2 >= 1.0):
        cv2 = 1.0
    p1 = 0.5 * (1.0 + _sqrt((cv2 - 1.0) / (cv2 + 1.0)))
    u = r.random()
    p = p1 if u < p1 else 1.0 - p1
    return -(mean / (2.0 * p)) * _log(1.0 - r.random())


def d_bernoulli(r: random.Random, p: float) -> float:
    return 1.0 if r.random() < p else 0.0


DISTS = {
    "Exp": d_exp,
    "Det": d_det,
    "Uniform": d_uniform,
    "Erlang": d_erlang,
    "H2": d_h2,
    "Bernoulli": d_bernoulli,
}
