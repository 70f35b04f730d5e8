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
distinct seeds give unrelated streams.  A run gets its per-session streams
from :class:`Streams`, which makes them in blocks once it is asked for many
(the same numbers, faster).
"""

from __future__ import annotations

import math
import random
from array import array

from ..ir.expr import MAX_H2_CV2, MAX_PHASES, dist_problem
from ..signals import imported
from .errors import Fault

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
    bits.  ``buf[lo:i]`` are the stream's next draws, made ahead, the next
    one last (see :class:`Streams`), and ``s`` the state after them."""

    __slots__ = ("s", "buf", "i", "lo")

    def __init__(self, state: int, buf=None, i: int = 0, lo: int = 0):
        self.s = state      # below 2**64
        self.buf = buf
        self.i = i
        self.lo = lo

    def random(self) -> float:
        i = self.i
        if i > self.lo:
            i -= 1
            self.i = i
            return self.buf[i]
        s = (self.s + _G) & _M64
        self.s = s
        z = ((s ^ (s >> 30)) * _C1) & _M64
        z = ((z ^ (z >> 27)) * _C2) & _M64
        return ((z ^ (z >> 31)) >> 11) * 1.1102230246251565e-16


_BASES: dict = {}


def _base(seed: int, kind: int) -> int:
    base = _BASES.get((seed, kind))
    if base is None:
        base = _BASES[(seed, kind)] = _mix(_mix(((seed & _M64) * _G + kind) & _M64) ^ _C2)
    return base


def _state(base: int, a: int, b: int) -> int:
    """The initial state of the stream (seed, kind, a, b), ``base`` being
    (seed, kind)'s: the SplitMix64 finaliser, written out."""
    z = base ^ (((a & _M64) + 1) * _C1 & _M64)
    z = ((z ^ (z >> 30)) * _C1) & _M64
    z = ((z ^ (z >> 27)) * _C2) & _M64
    h = z ^ (z >> 31)
    if b:
        z = h ^ ((b & _M64) * _C2 & _M64)
        z = ((z ^ (z >> 30)) * _C1) & _M64
        z = ((z ^ (z >> 27)) * _C2) & _M64
        h = z ^ (z >> 31)
    return h


def substream(seed: int, kind: int, a: int = 0, b: int = 0) -> SplitMix:
    """A per-session / per-turn / per-leg stream."""
    return SplitMix(_state(_base(seed, kind), a, b) & _M64)


class Streams:
    """The per-session, per-turn and per-leg streams of one run: the stream
    (seed, kind, a, b) is ``substream(seed, kind, a, b)``, draw for draw.

    Seeding a stream and drawing from it are a few 64-bit integer operations,
    which Python does on big integers (about 0.3 µs a draw).  A run creates
    such a stream for (nearly) every session, so where one (kind, b) is asked
    for often (``HOT`` times: the turn-1 streams of an open workload, the
    session streams), the streams of ``2**SHIFT`` consecutive sessions are
    seeded at once with numpy's wrapping uint64 arithmetic, with their
    first draws (``AHEAD``, or as many as the consumer takes); a stream
    then starts with those draws in its ``buf``, and a consumer that takes
    no more than it knows (a turn block, ``draws``) gets just the list.  The
    numbers are the same either way (the float of a draw is
    ``(z >> 11) * 2**-53``, exact in both); only the time differs."""

    def __init__(self, seed: int):
        self.seed = seed
        self.kinds = {}

    def kind(self, kind: int) -> "_Kind":
        """The streams of one kind (what generated code holds on to)."""
        k = self.kinds.get(kind)
        if k is None:
            k = self.kinds[kind] = _Kind(_base(self.seed, kind))
        return k

    def get(self, kind: int, a: int, b: int = 0) -> SplitMix:
        return self.kind(kind).get(a, b)


_HALF = 1 << 63
HOT = 64        # streams of one (kind, b) asked for before they are made in blocks
SHIFT = 10      # a block: 2**SHIFT consecutive values of a
AHEAD = 4       # draws made ahead in a block (for a consumer that may draw any number)
KEEP = 4        # blocks kept per (kind, b)


class _Kind:
    """The streams of one kind, by (a, b)."""

    __slots__ = ("base", "keys")

    def __init__(self, base: int):
        self.base = base
        self.keys = {}        # b -> _Key

    def get(self, a: int, b: int = 0) -> SplitMix:
        """The stream (a, b)."""
        key = self.keys.get(b)
        if key is None:
            key = self.keys[b] = _Key(self.base, b)
        blk = key.block_of(a, AHEAD)
        if blk is None:
            return SplitMix(_state(self.base, a, b))
        r = a & _LOW
        i = r * blk.ahead
        return SplitMix(int(blk.states[r]), blk.draws, i + blk.ahead, i)

    def draws(self, a: int, b: int, d: int) -> list:
        """The first ``d`` (at most ``AHEAD``) draws of the stream (a, b), the
        first last (``pop()`` takes them in order): for a consumer that
        draws no more than ``d`` times."""
        key = self.keys.get(b)
        if key is not None and a >> SHIFT == key.q and d <= key.ahead:   # the block at hand
            i = ((a & _LOW) + 1) * key.ahead
            return key.draws[i - d:i]
        if key is None:
            key = self.keys[b] = _Key(self.base, b)
        blk = key.block_of(a, d or 1)
        if blk is not None and d <= blk.ahead:
            i = ((a & _LOW) + 1) * blk.ahead
            return blk.draws[i - d:i]
        sm = SplitMix(_state(self.base, a, b))
        out = [sm.random() for _ in range(d)]
        out.reverse()
        return out


_LOW = (1 << SHIFT) - 1


class _Key:
    """The streams of one (kind, b): how many were asked for, their blocks,
    and the block at hand (sessions arrive in order): its number ``q``, its
    ``draws`` and ``ahead``.  A stream asked for twice is the same stream
    (it starts from the same state), so a block serves each of its streams
    any number of times."""

    __slots__ = ("base", "b", "asked", "blocks", "q", "last", "draws", "ahead")

    def __init__(self, base: int, b: int):
        self.base = base
        self.b = b
        self.asked = 0
        self.blocks = {}
        self.q = None
        self.last = None
        self.draws = None
        self.ahead = 0

    def block_of(self, a: int, ahead: int):
        """The block of stream a (made with ``ahead`` draws if new), or None
        while this (kind, b) is not yet asked for often."""
        if self.asked < HOT:
            self.asked += 1
            return None
        if not 0 <= a < _HALF:
            return None
        q = a >> SHIFT
        if q == self.q:
            return self.last
        blk = self.blocks.get(q)
        if blk is None:
            blk = self.blocks[q] = _Block(self.base, q << SHIFT, self.b, ahead)
            if len(self.blocks) > KEEP:      # the oldest goes (its streams start anew, scalar)
                del self.blocks[min(self.blocks)]
        self.q = q
        self.last = blk
        self.draws = blk.draws
        self.ahead = blk.ahead
        return blk


class _Block:
    """The streams (base, a, b) for a in [a0, a0 + 2**SHIFT), made at once
    with their first ``ahead`` draws: ``draws[ahead*r : ahead*(r+1)]`` are
    those of stream a0 + r, the first last, ``states[r]`` (numpy) its state
    after them."""

    __slots__ = ("states", "draws", "ahead")

    def __init__(self, base: int, a0: int, b: int, ahead: int):
        np = imported("numpy")   # here, not at import: `serq` starts without it
        u = np.uint64
        n = 1 << SHIFT
        c1, c2 = u(_C1), u(_C2)
        s30, s27, s31, s11 = u(30), u(27), u(31), u(11)

        def mix(z):
            z = (z ^ (z >> s30)) * c1
            z = (z ^ (z >> s27)) * c2
            return z ^ (z >> s31)

        a = np.arange(a0, a0 + n, dtype=np.uint64)
        h = mix(u(base) ^ ((a + u(1)) * c1))
        if b:
            h = mix(h ^ u((b & _M64) * _C2 & _M64))
        steps = np.arange(ahead, 0, -1, dtype=np.uint64) * u(_G)      # k * G mod 2**64, k = ahead .. 1
        s = h[:, None] + steps[None, :]                                # the states of draws ahead .. 1
        u01 = (mix(s) >> s11).astype(np.float64) * 1.1102230246251565e-16
        self.draws = array("d", u01.ravel().tobytes())   # a float made as it is taken
        self.states = s[:, 0]
        self.ahead = ahead


_log = math.log
_sqrt = math.sqrt


def d_exp(r: random.Random, mean: float) -> float:
    # -mean * ln(1 - U), U in [0, 1): finite for every U
    if not (mean >= 0 and mean - mean == 0):
        raise Fault("R016", dist_problem("Exp", (mean,)))
    return -mean * _log(1.0 - r.random())


def d_det(r: random.Random, x: float) -> float:
    return x


def d_uniform(r: random.Random, lo: float, hi: float) -> float:
    if not (lo <= hi and lo - lo == 0 and hi - hi == 0):
        raise Fault("R016", dist_problem("Uniform", (lo, hi)))
    return lo + (hi - lo) * r.random()


def d_erlang(r: random.Random, k: float, mean: float) -> float:
    if not (1 <= k <= MAX_PHASES and k == math.floor(k) and mean >= 0 and mean - mean == 0):
        raise Fault("R016", dist_problem("Erlang", (k, mean)))
    n = int(k)
    m = mean / n
    total = 0.0
    for _ in range(n):
        total += -m * _log(1.0 - r.random())
    return total


def d_h2(r: random.Random, mean: float, cv2: float) -> float:
    """Balanced two-phase hyperexponential of the given mean and squared
    coefficient of variation (below 1 taken as 1): phase i is taken with
    probability p_i and has mean mean / (2 p_i), so p_1/mu_1 = p_2/mu_2."""
    if not (1.0 <= cv2 <= MAX_H2_CV2 and mean >= 0 and mean - mean == 0):
        raise Fault("R016", dist_problem("H2", (mean, cv2)))
    p1 = 0.5 * (1.0 + _sqrt((cv2 - 1.0) / (cv2 + 1.0)))
    u = r.random()
    p = p1 if u < p1 else 1.0 - p1
    return -(mean / (2.0 * p)) * _log(1.0 - r.random())


def h2_consts(mean: float, cv2: float):
    """``d_h2``'s constants for constant arguments: p_1 and each phase's
    mean, with which ``-(m_1 if U < p_1 else m_2) * ln(1 - U')`` draws what
    ``d_h2`` draws, to the bit (the arguments are in the domain)."""
    p1 = 0.5 * (1.0 + _sqrt((cv2 - 1.0) / (cv2 + 1.0)))
    return p1, mean / (2.0 * p1), mean / (2.0 * (1.0 - p1))


def d_bernoulli(r: random.Random, p: float) -> float:
    if p != p:
        raise Fault("R016", dist_problem("Bernoulli", (p,)))
    return 1.0 if r.random() < p else 0.0


DISTS = {
    "Exp": d_exp,
    "Det": d_det,
    "Uniform": d_uniform,
    "Erlang": d_erlang,
    "H2": d_h2,
    "Bernoulli": d_bernoulli,
}
