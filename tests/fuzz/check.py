"""One mutant through the toolchain, and the property its outcome must have.

``outcome(m)`` is one of

* ``ok``: it linked (or read) and ran to its end, or to the run's limit;
* ``error``: a ``SerqError`` every diagnostic of which names a location
  (``path:line:col``) or an IR field path (``$.pools[0].cap``);
* ``unlocated``: a ``SerqError`` with a diagnostic that names neither;
* ``crash``: any other exception (a traceback);
* ``timeout``: the harness' own time limit ran out (a run the simulator's
  limits did not stop, or a linker that does not finish);
* ``past``, ``wrong``, ``lost``, ``orphan``: a surface's own property broken
  (tests/fuzz/surfaces.py): a malformed IR past the validator, a wrong
  answer, a user's file lost or a standard stream closed, a process left.

All but the first two are findings."""

from __future__ import annotations

import inspect
import json
import os
import re
import signal
import traceback
from dataclasses import dataclass

from .mutate import Mutant

# The simulator's limits for one mutant's short run, and the harness' own.
MAX_EVENTS = 20_000
MAX_SECONDS = 2.0
HARD_SECONDS = 20.0

_LOCATED = re.compile(r"^\S[^\n]*?:\d+:\d+: (error|warning|note)\[")
_FIELD = re.compile(r"\$(\.[A-Za-z_][A-Za-z_0-9]*|\[\d+\])+")


@dataclass
class Outcome:
    status: str                 # ok | error | unlocated | crash | timeout
    detail: str = ""            # the error's rendering, or the exception
    trace: str = ""             # the traceback of a crash
    where: str = ""             # a crash's class: exception type and innermost serq frame

    @property
    def finding(self) -> bool:
        return self.status not in ("ok", "error")


class Finding(Exception):
    """Worse than an error (a surface's own property broken, tests/fuzz/surfaces.py
    and interrupts.py): ``status`` is past | wrong | lost | orphan | crash."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class _Timeout(BaseException):
    """The harness' time limit (a BaseException: no handler of serq's
    catches it)."""


def _alarm(signum, frame):
    raise _Timeout()


def located(d) -> bool:
    """A diagnostic that says where: a source span, or an IR field path."""
    if getattr(d, "span", None) is not None:
        return True
    if getattr(d, "field", None):
        return True
    return bool(_FIELD.search(d.message))


def _limits() -> dict:
    from serq.sim import simulate
    params = inspect.signature(simulate).parameters
    out = {}
    if "max_events" in params:
        out["max_events"] = MAX_EVENTS
    if "max_seconds" in params:
        out["max_seconds"] = MAX_SECONDS
    return out


def _simulate(program):
    """The run under the harness's limits: its report (None when the limits
    stopped it inside an event), its text and JSON made."""
    from serq.sim import simulate
    try:
        report = simulate(program, **_limits())
    except _stopped() as stop:    # the harness' own limits: the partial report is the outcome
        report = stop.report
        stop.render()
        if report is None:        # (stopped inside an event: none)
            return None
    report.text()
    json.dumps(report.data(), sort_keys=True, allow_nan=False)
    return report


def _stopped():
    from serq import sim
    return getattr(sim, "RunStopped", ())


def _program(m: Mutant):
    if m.kind == "ir":
        from serq import ir
        program = ir.loads(json.dumps(m.data), f"{m.example}.ir.json")
        ir.validate(program)
        return program
    from serq.link import compile_source
    return compile_source(m.text, m.example, horizon=m.horizon)


def _run(m: Mutant):
    """``"error"`` when a surface's run says its input was refused cleanly
    (a command's exit 1 or 2), else None (a SerqError raised is one too)."""
    from .surfaces import KINDS as SURFACES
    if m.kind in SURFACES:
        return SURFACES[m.kind][1](m, _simulate)
    program = _program(m)
    _simulate(program)
    return None


# the harness's time limit of a kind whose inputs take longer (a process, a sandbox)
HARD = {"signals": 300.0, "cli": 60.0, "api": 60.0}
# the kinds whose errors are a call's or a command's refusal: any SerqError is
# clean (a located one is for inputs that have a place: files, programs)
CALLS = ("api", "cli", "signals")


def _located(m: Mutant, d) -> bool:
    """A diagnostic that says where; of a file surface, naming the file
    (its path in the harness's temporary directory) says where too."""
    if located(d):
        return True
    return m.kind in ("trace", "oracle", "table") and "serq-fuzz-" in d.message


def outcome(m: Mutant, hard_seconds: float = HARD_SECONDS) -> Outcome:
    from serq.diag import SerqError
    hard_seconds = max(hard_seconds, HARD.get(m.kind, 0.0))
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, hard_seconds)
    try:
        try:
            said = _run(m)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        return Outcome("timeout", f"no end after {hard_seconds:g} s", where="timeout")
    except Finding as f:
        return Outcome(f.status, f.detail, where=f"{f.status}: {_shape(f.detail)}")
    except SerqError as e:
        try:
            text = e.render()
        except Exception as r:  # the rendering itself failed: a crash
            return _crash(r)
        if m.kind in CALLS or all(_located(m, d) for d in e.diagnostics):
            return Outcome("error", text)
        return Outcome("unlocated", text, where="unlocated: " + _first_unlocated(e))
    except RecursionError as r:
        return _crash(r)
    except Exception as r:
        return _crash(r)
    finally:
        signal.signal(signal.SIGALRM, old)
    return Outcome("error" if said == "error" else "ok")


def _shape(text: str) -> str:
    """A finding's class: its words, numbers and quoted values left out."""
    t = re.sub(r"[0-9]+", "N", text.split(":")[0])
    return re.sub(r"'[^']*'|`[^`]*`", "…", t)[:80]


def _first_unlocated(e) -> str:
    for d in e.diagnostics:
        if not located(d):
            return f"{d.code} {re.sub(r'[0-9]+', 'N', d.message)[:80]}"
    return ""


def _crash(exc: BaseException) -> Outcome:
    tb = traceback.extract_tb(exc.__traceback__)
    frame = None
    for fr in reversed(tb):
        if f"{os.sep}serq{os.sep}" in fr.filename or f"{os.sep}leangen{os.sep}" in fr.filename \
                or fr.filename.startswith("<serq"):
            frame = fr
            break
    if frame is None and tb:
        frame = tb[-1]
    where = type(exc).__name__
    if frame is not None:
        where += f" at {_short(frame.filename)}:{frame.lineno} ({frame.name})"
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return Outcome("crash", f"{type(exc).__name__}: {exc}"[:500], text, where)


def _short(path: str) -> str:
    for root in ("serq", "leangen"):
        k = path.rfind(f"{os.sep}{root}{os.sep}")
        if k >= 0:
            return path[k + 1:]
    return path
