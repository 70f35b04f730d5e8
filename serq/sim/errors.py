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
R002    an index is not a whole number from 0 below the family's count,
        or a ``choose``'s count of candidates is not a whole number ≥ 1
R003    a guard (branch, while, admit while, schedule branch) is not 0/1
R004    a session executed a million statements without blocking
R005    a session became ready a thousand times at one instant
R006    an engine iteration that schedules tokens costs 0, or a cost,
        budget or capacity is NaN or negative
R007    a renewal gap is not positive and finite
R008    ``--arrivals N``: not all N arrived by the horizon (or a trace's last
        row), or the sessions were not drained by it
R009    ``--arrivals N``: the sessions drained at or before the warm-up
R010    a session ended while one of its legs runs
R011    a hold-and-wait deadlock (sessions and legs waiting on each other)
R012    a ``load`` beyond the hold's allocation
R013    two indices of one hold name the same pool member
R014    a trace file cannot be read or is malformed
R015    a trace session has no further turn
R016    a draw's parameters are outside its distribution's domain
R017    ``turn_no``, which a program may set, is not a finite number at a turn
R018    the clock no longer advances: a thousand arrivals at one instant
        from gaps too small for it, or an engine iteration whose cost is
        too small to move it
R019    ``--max-events`` or ``--max-seconds`` stopped the run
        (:class:`RunStopped`)
R020    the run was interrupted (Ctrl-C; :class:`RunStopped`)
R021    a `content` statement whose id or length is not a whole number from 0 to 2^53
R022    a ``grow``, ``load`` or ``growing`` run finds no allocation of its pool in its
        holds (a ``release`` gave it back, or the hold is of another member)
======  ==============================================================
"""

from __future__ import annotations

import math
from typing import Optional

from ..diag import Diagnostic, SerqError, Span
from ..ir.model import SLOT

_TURN_NO = SLOT["turn_no"]


class RunError(SerqError):
    """A run-time error: the program did something the language forbids."""

    def __init__(self, code: str, message: str, span: Optional[Span] = None,
                 field: Optional[str] = None):
        self.code = code
        self.message = message
        super().__init__(Diagnostic(code, message, span, field=None if span is not None else field))


class RunStopped(RunError):
    """The run stopped before its end: ``reason`` is ``max_events``,
    ``max_seconds`` or ``interrupt``, and ``report`` what the run measured
    until then (``report.partial`` says so), or None when it stopped inside
    an event."""

    def __init__(self, reason: str, words: str, report, end: float, horizon: float):
        self.reason = reason
        self.report = report      # None: stopped inside an event, which leaves nothing to report
        super().__init__("R019" if reason != "interrupt" else "R020",
                         f"the run stopped at time {fmt_time(end)} of the horizon {fmt_num(horizon)} "
                         f"({words}): it did not finish, and what it measured is partial")
        if reason != "interrupt":
            self.diagnostics[0].help = "give it more (--max-events, --max-seconds), or a shorter --horizon"


class StopInside(Exception):
    """Raised inside a long event when a deadline or an interrupt stops the
    run there (``Limits.inside``); ``args[0]`` is (reason, words)."""


class Fault(Exception):
    """Raised deep inside the interpreter; converted to RunError where the
    location is known."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class FieldLoc:
    """Where a statement of an IR file without a source location is: its
    field, ``$.blocks[B].stmts[I]``, which a run-time error then names."""

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path


def field_of(loc) -> Optional[str]:
    """The IR field a location without a source position names (None for a
    source location)."""
    return loc.path if type(loc) is FieldLoc else None


def _turn_text(v: float) -> str:
    return str(int(v)) if v - v == 0.0 else fmt_num(v)


class Locating:
    """The machine's located errors (a part of ``serq.sim.machine.Sim``): a
    ``Fault`` turned into a ``RunError`` at a statement or declaration, with
    where the run was."""

    def span(self, loc) -> Optional[Span]:
        if loc is None or type(loc) is FieldLoc:
            return None
        files = self.program.files
        if 0 <= loc.file < len(files):
            return Span.point(files[loc.file], loc.line, loc.col)
        return None

    def session_error(self, f: Fault, t, loc):
        turn = _turn_text(t.a[_TURN_NO]) if t is not None else 0
        sid = t.sess.sid if t is not None else 0
        msg = f"{f.message} (session {sid}, turn {turn}, time {fmt_time(self.now)})"
        return RunError(f.code, msg, self.span(loc), field_of(loc))

    def machine_fault(self, f: Fault, loc, field: Optional[str] = None):
        """Raise the machine's own error ``f`` at the declaration or statement
        ``loc``, or at the IR ``field`` it is about when it has no location."""
        raise RunError(f.code, f"{f.message} (time {fmt_time(self.now)})", self.span(loc),
                       field_of(loc) or field)


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
    if v - v != 0:
        return fmt_num(v)
    if v == math.floor(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"
