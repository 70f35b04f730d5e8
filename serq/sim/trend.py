"""Whether a count is still growing when a run ends: the report's `growing`
note (``run.growing`` in the JSON).

The counts are the live sessions, each pool's queue and each stage's number
present.  Their integrals over time are read, without writing them
(``acc + value * (now - last tick)``), at the *marks*: the four equal
quarters' starts of the run's second half, [m, horizon] with m the middle of
[warm-up, horizon]; the end adds its own.  The machine reads a mark as it
reads the warm-up, before the first event at or after it (``Sim.pass_marks``),
and a stroke stops short of one (``serq.sim.stroke``), so the step-by-step
path and the strokes read the same bytes.

Each count's time average over each quarter, a1 … a4, follows.  A count is
*growing* when the four rise strictly (a1 < a2 < a3 < a4) and the rise
a4 - a1 is at least three times sqrt(a4) (a count's fluctuation is of the
order of its root, more near a capacity) and at least a fifth of a4.  A
stable count fluctuates around its mean, so four quarters rising in a row
by that much are rare (an M/M/1 at load 0.9 over 20 000 mean services: one
seed in twenty); a queue that grows without bound does it every time (at
load 1.02 over 100 000: twenty in twenty).  A run near its capacity told so
is told rightly: its means are not yet a steady state's.  A run that drains
(``--arrivals``) or stops before its horizon is not judged.

Nothing here changes what a run computes: it reads the clock and the
accumulators.
"""

from __future__ import annotations

import math

QUARTERS = 4
NOISE = 3.0
REL_RISE = 0.2


class Trend:
    """The marks of a run and the integrals read at each."""

    def __init__(self, sim):
        self.sim = sim
        p = sim.program
        if p.arrivals is not None or not p.horizon > p.warmup:
            self.marks = []
        else:
            mid = (p.warmup + p.horizon) / 2
            width = (p.horizon - mid) / QUARTERS
            self.marks = [mid + k * width for k in range(QUARTERS)]
        self.read: list = []        # the integrals at each mark passed

    def next_mark(self) -> float:
        """The next mark's time, or inf."""
        k = len(self.read)
        return self.marks[k] if k < len(self.marks) else math.inf

    def pass_until(self, t: float) -> None:
        """Read the marks at or before ``t``: the state is that of the last
        event before ``t`` (the event at ``t`` has not run)."""
        while len(self.read) < len(self.marks) and self.marks[len(self.read)] <= t:
            self.read.append(integrals(self.sim, self.marks[len(self.read)]))


def integrals(sim, now: float) -> tuple:
    """The integrals over [0, now] of the live count, each pool's queue and
    each stage's number (their accumulators read as at ``now``)."""
    out = [sim.acc_live + sim.live * (now - sim.t_live)]
    out.extend(p.acc_queue + p.nqueued * (now - p.t_acc) for p in sim.pools)
    out.extend(s.acc_n + s.n * (now - s.t_acc) for s in sim.stages)
    return tuple(out)


def names(sim) -> list:
    """The counts, as the report's columns name them."""
    return (["run.live"] + [f"pool.{p.label}.queue" for p in sim.pools]
            + [f"stage.{s.label}.number" for s in sim.stages])


def growing(sim, trend: Trend, end: float) -> list:
    """``(name, [a1, a2, a3, a4])`` for each count judged growing, in
    ``names`` order (none when the run did not reach its horizon)."""
    if len(trend.read) < QUARTERS or end != sim.program.horizon:
        return []
    at = trend.read + [integrals(sim, end)]
    bounds = trend.marks + [end]
    out = []
    for i, name in enumerate(names(sim)):
        avg = [(at[k + 1][i] - at[k][i]) / (bounds[k + 1] - bounds[k]) for k in range(QUARTERS)]
        rise = avg[-1] - avg[0]
        if all(a < b for a, b in zip(avg, avg[1:])) and rise >= NOISE * math.sqrt(avg[-1]) \
                and rise >= REL_RISE * avg[-1]:
            out.append((name, avg))
    return out
