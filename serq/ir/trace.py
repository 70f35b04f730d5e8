"""Trace CSVs (`session,turn,new,out,think[,forced]`): reading, and inlining
an ordered trace into a program's explicit sessions (`serq ir --inline-trace`)."""

from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass

from ..diag import Diagnostic, SerqError
from . import model as M

COLUMNS = ("session", "turn", "new", "out", "think")


@dataclass(frozen=True)
class TraceTurn:
    new: float
    out: float
    think: float
    forced: float


def read_trace(path: str) -> list[list[TraceTurn]]:
    """The trace's sessions, in order of first appearance, each its turns in
    order of their `turn` column."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise SerqError(Diagnostic("E232", f"cannot read trace {path}: {e.strerror}", field="$.trace"))
    except (UnicodeDecodeError, csv.Error) as e:
        raise SerqError(Diagnostic("E233", f"{path}: not a CSV trace in UTF-8 ({e})", field="$.trace")) from None
    reader = iter(rows)
    try:
        header = next(reader)
    except StopIteration:
        raise SerqError(Diagnostic("E233", f"{path}: the trace is empty",
                                   help="the first row names the columns: "
                                        "session,turn,new,out,think[,forced]"))
    header = [h.strip() for h in header]
    if tuple(header[:5]) != COLUMNS or len(header) > 6 or (len(header) == 6 and header[5] != "forced"):
        raise SerqError(Diagnostic("E233", f"{path}:1: the columns are {','.join(header)}",
                                   help="a trace's columns are session,turn,new,out,think[,forced]"))
    sessions: dict[str, list[tuple[float, TraceTurn]]] = {}
    order: list[str] = []
    for row_no, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise SerqError(Diagnostic("E233", f"{path}:{row_no}: {len(row)} fields, the header has "
                                       f"{len(header)}"))
        vals = []
        for name, cell in zip(header[1:], row[1:]):
            try:
                v = float(cell)
            except ValueError:
                raise SerqError(Diagnostic("E233", f"{path}:{row_no}: column `{name}` is `{cell}`, "
                                           "not a number"))
            if not math.isfinite(v) or v < 0:
                raise SerqError(Diagnostic("E233", f"{path}:{row_no}: column `{name}` is {cell}: a "
                                           "trace's numbers are finite and not negative"))
            vals.append(v)
        turn_no, new, out, think = vals[:4]
        forced = vals[4] if len(vals) > 4 else 0.0
        key = row[0].strip()
        if key not in sessions:
            sessions[key] = []
            order.append(key)
        sessions[key].append((turn_no, TraceTurn(new, out, think, forced)))
    if not order:
        raise SerqError(Diagnostic("E233", f"{path}: the trace has no turns"))
    return [[t for _, t in sorted(sessions[k], key=lambda x: x[0])] for k in order]


def turn_attrs(turn: TraceTurn, more: bool) -> tuple[tuple[int, float], ...]:
    S = M.SLOT
    return ((S["new"], turn.new), (S["out"], turn.out), (S["think"], turn.think),
            (S["forced"], turn.forced), (S["more"], 1.0 if more else 0.0))


def inline_trace(p: M.Program) -> M.Program:
    """An ordered trace written into the program as explicit sessions: session
    i of `arrive batch(n)` replays trace session i modulo the trace's."""
    if p.trace is None:
        raise SerqError(Diagnostic("E234", "--inline-trace: the program replays no trace"))
    if not p.trace_ordered:
        raise SerqError(Diagnostic("E234", "--inline-trace needs an ordered trace "
                                   "(`trace \"…\" ordered;`): an unordered one samples sessions as it runs"))
    if type(p.arrival) is not M.ABatch:
        raise SerqError(Diagnostic("E234", "--inline-trace needs `arrive batch(n);`: explicit sessions "
                                   "all arrive at time 0"))
    trace = read_trace(p.trace)
    sessions = []
    for i in range(p.arrival.n):
        turns = trace[i % len(trace)]
        spec_turns = tuple(turn_attrs(t, k + 1 < len(turns)) for k, t in enumerate(turns))
        sessions.append(M.SessionSpec(attrs=(), turns=spec_turns))
    return dataclasses.replace(p, arrival=M.ASessions(tuple(sessions)), trace=None, trace_ordered=False)
