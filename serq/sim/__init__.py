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
             step_log: bool = False, client_log: bool = False, samples: bool = True,
             max_events: Optional[int] = None, max_seconds: Optional[float] = None, interrupt=None,
             strokes: bool = True, origin: Optional[dict] = None, batch_log: bool = False) -> Report:
    """Run ``program`` (its horizon, warm-up, seed and arrivals are the IR's
    execution settings) and return its report.

    ``progress``: a progress line on stderr with an estimate of the time
    left, only when stderr is a terminal.
    ``check_hook``: called with the machine after every event has settled
    (for tests: invariants such as ``used + cached <= cap``).
    ``step_log``: keep one record per engine iteration in ``Report.step_log``
    (``{stage, time, tokens: {session: n}, admitted, preempted, free}``).
    ``client_log``: keep ``(session, first token, answer)`` of every answered
    turn, in the order they were answered, in ``Report.client_log``; the first
    token is sampled when the turn's first prefill ends (vLLM keeps it through
    a preemption: _preempt_request resets num_computed_tokens and keeps the
    output tokens, scheduler.py:1821-1822), or by its first
    decode when no prefill ended before it, None for a turn that made none.
    (The report's ``ttft`` reads the prefill that ended last before the first
    decode, §What the client sees: the two differ when a request is preempted
    between its prefill and its first decode.)
    ``samples``: keep each observation's time, session and turn beside its
    value (``Report.samples``, ``Report.dump``); without, a run keeps 8 bytes
    an observation.
    ``max_events``, ``max_seconds``: stop the run after that many events or
    seconds of wall time; ``interrupt``: an object whose ``is_set()`` stops
    the run when it turns true (the CLI's Ctrl-C).  A run that stops raises
    :class:`RunStopped`, whose ``report`` is what it measured until then,
    marked partial (None when it stopped inside one long event).
    ``strokes``: advance an engine's identical decode iterations in one go
    (serq.sim.stroke); False runs every iteration step by step, to the same
    bytes.
    ``batch_log``: keep what every engine iteration computed, in
    ``Report.batch_log``: ``{stage, time, prefill: [(tokens, KV before them),
    …], decode: [KV before the decode, …], ctx: {…}}`` with ``ctx`` the batch
    quantities its `execute` read (``tokens``, ``prefilled``, ``decoding``,
    ``kv_decode``, ``kv_prefill``, ``attention``, ``residents``), for the
    calibration at a run's own batches (serq.calib); a KV position is None
    where the engine has no memory pool.
    ``origin``: what the report says made the run beside the IR's settings
    (``program``: its path as given, ``instance``: the instance file read,
    ``inputs``: name -> the value's text as given); by default the IR's first
    file, and the inputs unknown."""
    from .machine import Sim
    sim = Sim(program, progress=progress, check_hook=check_hook, step_log=step_log,
              client_log=client_log, samples=samples, max_events=max_events,
              max_seconds=max_seconds, interrupt=interrupt, strokes=strokes, batch_log=batch_log)
    sim.run()
    if sim.inside:
        raise RunStopped(sim.stopped[0], sim.stopped[1], None, sim.now, program.horizon)
    report = Report(sim, origin)
    report.step_log = sim.step_log
    report.client_log = sim.client_log
    report.batch_log = sim.batch_log
    if sim.stopped is not None:
        raise RunStopped(sim.stopped[0], sim.stopped[1], report, sim.end_time, program.horizon)
    return report
