"""One run of a sweep, where it is run (in this process, a pool's worker or a
Dask worker): the IR as canonical JSON and a seed in, the report's flat row
out.  Every backend calls :func:`run_task`, so the rows are the same
whatever ran them."""

from __future__ import annotations


def run_task(task: tuple):
    """``(index, ir_json, seed)`` → ``(index, row, None)``, or ``(index,
    None, diagnostics)`` when the run fails with a SerqError (returned, not
    raised, so that it crosses a process or the network whole)."""
    index, ir_json, seed = task
    import dataclasses
    from .. import ir
    from ..api.report import Report
    from ..diag import SerqError
    from ..sim import simulate
    try:
        program = dataclasses.replace(_read(ir_json), seed=seed)
        ir.validate(program)
        return index, Report(simulate(program)).row(), None
    except SerqError as e:
        return index, None, e.diagnostics


_READ: dict = {}     # a worker's last points' IR, read once for all their seeds


def _read(ir_json: str):
    from .. import ir
    p = _READ.get(ir_json)
    if p is None:
        if len(_READ) >= 4:
            _READ.clear()
        p = _READ[ir_json] = ir.loads(ir_json, "<sweep>")
    return p


def warm() -> None:
    """A worker's start: import what a run needs (the simulator, the report's
    row, numpy for a long run's statistics) while the sweep still links its
    points, not in its first run."""
    import numpy  # noqa: F401
    from ..api import report  # noqa: F401
    from ..sim import machine  # noqa: F401
