"""Run-time errors of the simulator.

A :class:`RunError` is a :class:`serq.diag.SerqError` whose single
diagnostic carries the source location of the statement (or declaration)
that failed, and whose message ends with where the run was:
``(session S, turn T, time X)`` for an error a session causes, ``(time X)``
for one the machine causes (an engine's cost, a renewal gap, the drain of
``--arrivals``).

Inside the interpreter, code far from any statement raises
:class:`Fault` (a code and a message); the statement or declaration that was
executing catches it and turns it into a RunError with its location.

Codes:

======  ==============================================================
R001    an amount (work, units, reserve, reuse, grow, load, lease) is
        negative or NaN
R002    an index is not a whole number from 0 below the family's count
R003    a guard (branch, while, admit while, schedule branch) is not 0/1
R004    a session executed a million statements without blocking
R005    a session became ready a thousand times at one instant
R006    an engine iteration that schedules tokens costs 0, or a cost,
        budget or capacity is NaN or negative
R007    a renewal gap is not positive and finite
R008    ``--arrivals N``: the sessions were not drained by the horizon
R009    ``--arrivals N``: the sessions drained at or before the warm-up
R010    a session ended while one of its legs runs
R011    a hold-and-wait deadlock (sessions and legs waiting on each other)
R012    a ``load`` beyond the hold's allocation
R013    two indices of one hold name the same pool member
R014    a trace file cannot be read or is malformed
R015    a trace session has no further turn
R020    a `content` statement whose id or length is not a whole number ≥ 0
======  ==============================================================
"""

from __future__ import annotations

import math
from typing import Optional

from ..diag import Diagnostic, SerqError, Span


class RunError(SerqError):
    """A run-time error: the program did something the language forbids."""

    def __init__(self, code: str, message: str, span: Optional[Span] = None):
        self.code = code
        self.message = message
        super().__init__(Diagnostic(code, message, span))


class Fault(Exception):
    """Raised deep inside the interpreter; converted to RunError where the
    location is known."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def fmt_num(v: float) -> str:
    """A number as the messages print it: whole numbers without a point."""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == math.floor(v) and abs(v) < 1e15:
            return str(int(v))
        return repr(v)
    return str(v)


def fmt_time(v: float) -> str:
    if v == math.floor(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"
