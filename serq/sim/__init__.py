"""The simulator: a discrete-event interpreter of the IR (``serq run``).

It reads the IR and nothing else (never ``serq.syntax`` or ``serq.link``):

    from serq.sim import simulate
    report = simulate(program)          # a serq.ir.model.Program
    print(report.text())                # the development guide's report
    report.data()                       # the --json report (a dict)
    report.dump("samples/")             # one CSV per observe
    report.stuck_sessions               # the CLI exits 1 when not 0

A run-time error of the program (§Amounts and indices, §Branching, §Every
instant settles, …) raises :class:`RunError`, a ``SerqError`` whose
diagnostic points at the statement and whose message ends with
``(session S, turn T, time X)`` (``(time X)`` for the machine's own errors).
"""

from __future__ import annotations

from typing import Optional

from ..ir import model as _M
from .errors import RunError, RunStopped
from .report import Report

__all__ = ["simulate", "Report", "RunError", "RunStopped"]


def simulate(program: _M.Program, *, progress: bool = False, check_hook=None,
             step_log: bool = False, samples: bool = True, max_events: Optional[int] = None,
             max_seconds: Optional[float] = None, interrupt=None) -> Report:
    """Run ``program`` (its horizon, warm-up, seed and arrivals are the IR's
    execution settings) and return its report.

    ``progress``: a progress line on stderr with an estimate of the time
    left, only when stderr is a terminal.
    ``check_hook``: called with the machine after every event has settled
    (for tests: invariants such as ``used + cached <= cap``).
    ``step_log``: keep one record per engine iteration in ``Report.step_log``
    (``{stage, time, tokens: {session: n}, admitted, preempted, free}``).
    ``samples``: keep each observation's time, session and turn beside its
    value (``Report.samples``, ``Report.dump``); without, a run keeps 8 bytes
    an observation.
    ``max_events``, ``max_seconds``: stop the run after that many events or
    seconds of wall time; ``interrupt``: an object whose ``is_set()`` stops
    the run when it turns true (the CLI's Ctrl-C).  A run that stops raises
    :class:`RunStopped`, whose ``report`` is what it measured until then,
    marked partial (None when it stopped inside one long event)."""
    from .machine import Sim
    sim = Sim(program, progress=progress, check_hook=check_hook, step_log=step_log, samples=samples,
              max_events=max_events, max_seconds=max_seconds, interrupt=interrupt)
    sim.run()
    if sim.inside:
        raise RunStopped(sim.stopped[0], sim.stopped[1], None, sim.now, program.horizon)
    report = Report(sim)
    report.step_log = sim.step_log
    if sim.stopped is not None:
        raise RunStopped(sim.stopped[0], sim.stopped[1], report, sim.end_time, program.horizon)
    return report
