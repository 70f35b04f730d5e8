"""A run that cannot finish says so (issue 10, §Every instant settles).

* Before it starts (``check_finite_run``): an open workload of more than
  ``MAX_ARRIVALS`` arrivals over its horizon (or ``--arrivals N``) is R018.
* As it runs (``Limits``): every ``CHECK`` events (``CHECK_EXTRAS`` where
  events are engine iterations) the run stops for ``--max-events``,
  ``--max-seconds`` or an interrupt (Ctrl-C), at an event, with what it
  measured (``Sim.stopped``); an engine iteration over ``WATCH_RESIDENTS``
  residents reads the time and the interrupt inside the event too
  (``inside``: StopInside, no report); on a terminal, a progress line with an
  estimate of the time left.
* Arrival gaps too small to advance the clock (``Stall``): a thousand
  arrivals at one instant are R018.

Nothing here changes what a run computes: it reads the clock and the counts.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Optional

from ..ir import model as M
from ..ir.expr import const_value
from .errors import Fault, StopInside, fmt_num

MAX_ARRIVALS = 1e12     # more than a run can simulate (days at a million events a second)
MAX_AT_ONCE = 1000      # arrivals at one instant whose gaps do not advance the clock
WATCH_RESIDENTS = 256   # residents from which an iteration reads the limits as it goes


class Limits:
    """The limits of one run, its progress line, and when to read them."""

    CHECK = 8192          # events between reads in the plain loop (events of microseconds)
    CHECK_EXTRAS = 128    # ... in the loop with engines, gauges or a drain (events up to milliseconds)

    def __init__(self, sim, progress: bool, max_events: Optional[int], max_seconds: Optional[float], interrupt):
        self.sim = sim
        self.progress = progress and sys.stderr.isatty()
        self.max_events = max_events
        self.max_seconds = max_seconds
        self.interrupt = interrupt
        self.t_start = self.last_report = time.monotonic()
        self.deadline = None if max_seconds is None else self.t_start + max_seconds
        self.inside_too = max_seconds is not None or interrupt is not None
        self.every = self.CHECK

    def start(self, extras: bool) -> int:
        """The event count of the first read (``extras``: the loop of heavy events)."""
        self.every = self.CHECK_EXTRAS if extras else self.CHECK
        return self.next_check(self.sim.nevents)

    def next_check(self, nev: int) -> int:
        n = nev + self.every
        return n if self.max_events is None else min(n, self.max_events)

    def checkpoint(self, nev: int) -> Optional[int]:
        """Stop for ``--max-events``, ``--max-seconds`` or an interrupt (the
        run then ends at this event, ``Sim.stopped`` saying why), or draw the
        progress line; the event count of the next read, or None to stop."""
        sim = self.sim
        if self.interrupt is not None and self.interrupt.is_set():
            sim.stopped = ("interrupt", "interrupted")
            return None
        if self.max_events is not None and nev >= self.max_events:
            sim.stopped = ("max_events", f"--max-events {self.max_events} reached")
            return None
        wall = time.monotonic()
        if self.deadline is not None and wall >= self.deadline:
            sim.stopped = ("max_seconds", f"--max-seconds {fmt_num(self.max_seconds)} reached")
            return None
        if self.progress and wall - self.last_report > 0.5:
            self.last_report = wall
            sys.stderr.write("\r" + self.progress_line(wall))
            sys.stderr.flush()
        return self.next_check(nev)

    def inside(self) -> None:
        """Within one long event (an engine of many residents): a deadline or
        an interrupt stops the run there, with no report (its state is that
        of half an event)."""
        if self.interrupt is not None and self.interrupt.is_set():
            raise StopInside(("interrupt", "interrupted inside an event"))
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise StopInside(("max_seconds", f"--max-seconds {fmt_num(self.max_seconds)} reached inside "
                                             "an event"))

    def progress_line(self, wall: float) -> str:
        """How far the run is, and an estimate of the wall time left from the
        pace so far: in simulated time, or in arrivals for ``--arrivals N``."""
        sim = self.sim
        if sim.draining is not None:
            done = min(1.0, sim.open_arrivals / sim.draining)
        else:
            done = min(1.0, sim.now / sim.horizon)
        spent = wall - self.t_start
        line = f"serq run: {100.0 * done:5.1f}% (t={sim.now:.4g}, {sim.nevents} events)"
        if done > 0:
            line += f", about {_duration(spent * (1.0 - done) / done)} left"
        return line[:78].ljust(78)

    def clear(self) -> None:
        if self.progress:
            sys.stderr.write("\r" + " " * 78 + "\r")
            sys.stderr.flush()


class Stall:
    """Arrival gaps too small to advance the clock at the time they are
    drawn: a thousand at one instant (no draw's chance) stop the run."""

    def __init__(self, sim):
        self.sim = sim
        self.t = -1.0
        self.n = 0

    def gap(self, what: str, field: str) -> None:
        sim = self.sim
        now = sim.now
        if self.t == now:
            self.n += 1
            if self.n >= MAX_AT_ONCE:
                sim.machine_fault(Fault("R018", f"{what} no longer advances the clock: {MAX_AT_ONCE} arrivals "
                                                "at one instant, and the run cannot finish"), None, field)
        else:
            self.t = now
            self.n = 1


def check_finite_run(sim) -> None:
    """An open workload whose arrivals over the horizon (or ``--arrivals
    N``) are beyond what a run can simulate: it cannot finish, so it does
    not start (R018)."""
    a = sim.arrival
    if type(a) is M.APoisson:
        what, field, n = f"`arrive poisson({fmt_num(a.rate)})`", "$.arrival.Poisson", a.rate * sim.horizon
    elif type(a) is M.ARenewal:
        gap = mean_gap(a.gap)
        if gap is None or not gap > 0:
            return
        what, field, n = f"`arrive renewal(…)`, a mean gap of {fmt_num(gap)},", "$.arrival.Renewal", \
            sim.horizon / gap
    else:
        return
    if sim.draining is not None:
        n = min(n, sim.draining)
    if n > MAX_ARRIVALS:
        sim.machine_fault(Fault("R018", f"{what} over the horizon {fmt_num(sim.horizon)} is "
                                        + (f"about {n:.3g}" if n < math.inf else "more than 1e+308")
                                        + f" arrivals, beyond the {MAX_ARRIVALS:.0e} a run can simulate: "
                                        "the run cannot finish"), None, field)


def mean_gap(e: M.Expr) -> Optional[float]:
    """The mean of a renewal gap that is a constant or one draw of constants
    (None for anything else)."""
    v = const_value(e)
    if v is not None:
        return v
    if type(e) is not M.ESample:
        return None
    args = [const_value(x) for x in e.args]
    if None in args:
        return None
    if e.dist == "Uniform":
        return (args[0] + args[1]) / 2
    return args[1] if e.dist == "Erlang" else args[0]    # the mean (det's value, bernoulli's p)


def _duration(s: float) -> str:
    if s < 100:
        return f"{s:.0f} s"
    if s < 6000:
        return f"{s / 60:.0f} min"
    if s < 360000:
        return f"{s / 3600:.1f} h"
    return f"{s / 31557600:.3g} years"
