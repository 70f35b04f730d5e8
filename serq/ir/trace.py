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


# ---------------------------------------------------------------------------
# Mooncake's timestamped traces (FAST'25 release): one JSON object a line,
# {"timestamp": ms, "input_length": n, "output_length": o, "hash_ids": [...]},
# hash_ids[j] naming the prompt's tokens j·512 … (j+1)·512 − 1 (the last
# block partial); equal ids mean equal tokens.

MOONCAKE_BLOCK = 512
MOONCAKE_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


@dataclass(frozen=True)
class MooncakeRow:
    timestamp: int
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]

    def content(self) -> tuple[tuple[float, float], ...]:
        """The prompt as content segments: token k is (hash_ids[k // 512], k % 512)."""
        n = self.input_length
        last = len(self.hash_ids) - 1
        return tuple((float(h), float(MOONCAKE_BLOCK if j < last else n - MOONCAKE_BLOCK * last))
                     for j, h in enumerate(self.hash_ids))


def is_mooncake(path: str) -> bool:
    return path.endswith(".jsonl")


def _fields(obj: dict) -> str:
    """What a row's fields lack and have too many, against a Mooncake row's."""
    lack = [k for k in MOONCAKE_KEYS if k not in obj]
    extra = sorted(k for k in obj if k not in MOONCAKE_KEYS)
    parts = ([f"it lacks {', '.join(f'`{k}`' for k in lack)}"] if lack else []) + \
        ([f"it has {', '.join(f'`{k}`' for k in extra)}, which a row does not"] if extra else [])
    return f"a row has the fields {', '.join(MOONCAKE_KEYS)}: " + " and ".join(parts)


def hash_ids_count(have: int, tokens: int, block: int) -> str:
    """A row whose hash ids do not cover its input, in words."""
    need = -(-tokens // block)
    return (f"{tokens} input tokens need {need} hash id{'s' if need != 1 else ''} (one per block of {block} "
            f"tokens), not {have}")


def read_mooncake(path: str, first: int = 0, count: int = None) -> list[MooncakeRow]:
    """Rows first … first + count − 1 of a Mooncake trace (all from `first`
    when count is None); every row is checked, timestamps must not decrease."""
    import json
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise SerqError(Diagnostic("E294", f"cannot read trace {path}: {e.strerror}"))
    rows = []
    last_ts = None
    with f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            i = line_no - 1
            if i < first:
                continue
            if count is not None and len(rows) >= count:
                break

            def bad(msg, _n=line_no):
                raise SerqError(Diagnostic("E294", f"{path}:{_n}: {msg}",
                                           help="a Mooncake trace has one JSON object a line: "
                                                '{"timestamp", "input_length", "output_length", "hash_ids"}'))
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                bad(f"not JSON: {e.msg}")
            if not isinstance(obj, dict) or set(obj) != set(MOONCAKE_KEYS):
                bad(_fields(obj) if isinstance(obj, dict) else "not a JSON object")
            vals = [obj[k] for k in MOONCAKE_KEYS[:3]]
            for k, v in zip(MOONCAKE_KEYS, vals):
                if isinstance(v, bool) or not isinstance(v, int) or v < (1 if k != "timestamp" else 0):
                    bad(f"`{k}` is {json.dumps(v)}: a whole number ≥ {1 if k != 'timestamp' else 0}")
            ts, n, o = vals
            ids = obj["hash_ids"]
            if not isinstance(ids, list) or any(isinstance(h, bool) or not isinstance(h, int) or h < 0
                                                for h in ids):
                bad("`hash_ids` is a list of whole numbers ≥ 0")
            if len(ids) != -(-n // MOONCAKE_BLOCK):
                bad(hash_ids_count(len(ids), n, MOONCAKE_BLOCK))
            if last_ts is not None and ts < last_ts:
                bad(f"the timestamp {ts} is before the previous row's {last_ts}")
            last_ts = ts
            rows.append(MooncakeRow(ts, n, o, tuple(ids)))
    if not rows:
        raise SerqError(Diagnostic("E294", f"{path}: no rows" + (f" from line {first + 1}" if first else "")))
    return rows
