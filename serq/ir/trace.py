"""Traces: CSVs (`session,turn,new,out,think[,forced]`) and Mooncake's JSONL
rows, read and checked where they are read (every problem at its file, line
and column; a Mooncake trace read row by row, as far as a replay reaches);
and inlining an ordered trace into a program's explicit sessions
(`serq ir --inline-trace`)."""

from __future__ import annotations

import csv
import dataclasses
import json
from dataclasses import dataclass
from typing import Iterator

from ..datafile import DuplicateKey, csv_lines, data_error, data_lines, depth_ok, json_kind, json_loads, json_text
from ..diag import Diagnostic, SerqError
from . import model as M

COLUMNS = ("session", "turn", "new", "out", "think")


@dataclass(frozen=True)
class TraceTurn:
    new: float
    out: float
    think: float
    forced: float


# A trace's bounds: a JSON row nested at most MAX_DEPTH deep (a line is at
# most serq.datafile.MAX_LINE bytes), every number but a hash id below 2^53
# (so that it is the float it stands for).
MAX_DEPTH = 64
WHOLE = 2 ** 53
HASH = 2 ** 64        # a Mooncake hash id: a 64-bit unsigned integer, kept exact


def _cell_col(text: str, k: int) -> int:
    """The column where cell k of a CSV line starts (1 when quotes hide it)."""
    if '"' in text:
        return 1
    pos = 0
    for _ in range(k):
        j = text.find(",", pos)
        if j < 0:
            return 1
        pos = j + 1
    return pos + 1


def read_trace(path: str) -> list[list[TraceTurn]]:
    """The trace's sessions, in order of first appearance, each its turns in
    order of their `turn` column.  Every row is checked: a cell that is not a
    finite number ≥ 0 (below 2^53), a row of the wrong width, a header that is
    not the columns, a byte that is not UTF-8 is an error at its line and
    column (E233; E232 a file that cannot be read)."""
    reader, line = csv_lines(path, "E232", "the trace")

    def bad(msg, k=0, help=None):
        text = line()
        return data_error("E233", path, reader.line_num, _cell_col(text, k) if text is not None else 1, msg,
                          text, help)
    try:
        header = next(reader, None)
        if header is None:
            raise SerqError(Diagnostic("E233", f"{path}: the trace is empty",
                                       help="the first row names the columns: session,turn,new,out,think[,forced]"))
        header = [h.strip() for h in header]
        if tuple(header[:5]) != COLUMNS or len(header) > 6 or (len(header) == 6 and header[5] != "forced"):
            raise bad(f"the columns are {','.join(header)[:120]}",
                      help="a trace's columns are session,turn,new,out,think[,forced]")
        sessions: dict[str, list[tuple[float, TraceTurn]]] = {}
        order: list[str] = []
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise bad(f"{len(row)} fields, the header has {len(header)}")
            vals = []
            for k, (name, cell) in enumerate(zip(header[1:], row[1:]), start=1):
                try:
                    v = float(cell)
                except ValueError:
                    raise bad(f"column `{name}` is `{cell[:40]}`, not a number", k) from None
                if not (0 <= v < WHOLE):
                    raise bad(f"column `{name}` is {cell[:40]}: a trace's numbers are finite, not negative "
                              "and below 2^53", k)
                vals.append(v)
            turn_no, new, out, think = vals[:4]
            forced = vals[4] if len(vals) > 4 else 0.0
            key = row[0].strip()
            if key not in sessions:
                sessions[key] = []
                order.append(key)
            sessions[key].append((turn_no, TraceTurn(new, out, think, forced)))
    except csv.Error as e:
        raise bad(f"not a CSV trace: {e}") from None
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

    def content(self, block: int = MOONCAKE_BLOCK) -> tuple[tuple[int, int], ...]:
        """The prompt as content segments, whole numbers (a 64-bit hash id kept
        exact): token k is (hash_ids[k // block], k % block)."""
        n = self.input_length
        last = len(self.hash_ids) - 1
        return tuple((h, block if j < last else n - block * last) for j, h in enumerate(self.hash_ids))


def is_mooncake(path: str) -> bool:
    return path.endswith(".jsonl")


def _fields(obj: dict) -> str:
    """What a row's fields lack and have too many, against a Mooncake row's."""
    lack = [k for k in MOONCAKE_KEYS if k not in obj]
    extra = sorted(k for k in obj if k not in MOONCAKE_KEYS)
    parts = ([f"it lacks {', '.join(f'`{k}`' for k in lack)}"] if lack else []) + \
        ([f"it has {', '.join(f'`{str(k)[:40]}`' for k in extra[:3])}{' and more' if len(extra) > 3 else ''}, "
         "which a row does not"] if extra else [])
    return f"a row has the fields {', '.join(MOONCAKE_KEYS)}: " + " and ".join(parts)


def hash_ids_count(have: int, tokens: int, block: int) -> str:
    """A row whose hash ids do not cover its input, in words."""
    need = -(-tokens // block)
    return (f"{tokens} input tokens need {need} hash id{'s' if need != 1 else ''} (one per block of {block} "
            f"tokens), not {have}")


ROW_HELP = ('a Mooncake row is {"timestamp", "input_length", "output_length", "hash_ids"}: whole numbers, '
            'the hash ids 64-bit (from 0 to 2^64 - 1), one per 512 tokens')


def mooncake_row(obj, block: int = MOONCAKE_BLOCK) -> MooncakeRow:
    """One row, checked: a ``ValueError`` whose args are (message, key) on a
    bad one (the caller says where)."""
    if not isinstance(obj, dict):
        raise ValueError(f"a row is a JSON object, not {json_kind(obj)}", None)
    unknown = sorted(k for k in obj if k not in MOONCAKE_KEYS)
    if unknown or any(k not in obj for k in MOONCAKE_KEYS):
        raise ValueError(_fields(obj), unknown[0] if unknown else None)
    for k in MOONCAKE_KEYS[:3]:
        v, lo = obj[k], (0 if k == "timestamp" else 1)
        if isinstance(v, bool) or not isinstance(v, int) or not (lo <= v < WHOLE):
            raise ValueError(f"`{k}` is {json_text(v)}: a whole number from {lo} below 2^53", k)
    ids = obj["hash_ids"]
    if not isinstance(ids, list):
        raise ValueError(f"`hash_ids` is {json_kind(ids)}: a list of whole numbers", "hash_ids")
    for j, h in enumerate(ids):
        if isinstance(h, bool) or not isinstance(h, int) or not (0 <= h < HASH):
            raise ValueError(f"`hash_ids[{j}]` is {json_text(h)}: a hash id is a whole number from 0 to "
                             "2^64 - 1", "hash_ids")
    n = obj["input_length"]
    if len(ids) != -(-n // block):
        raise ValueError(hash_ids_count(len(ids), n, block), "hash_ids")
    return MooncakeRow(obj["timestamp"], n, obj["output_length"], tuple(ids))


def iter_mooncake(path: str, first: int = 0) -> Iterator[tuple[int, MooncakeRow]]:
    """``(line number, row)`` of a Mooncake trace from line ``first + 1`` on,
    read as it is needed (a replay to a horizon reads the rows it reaches and
    no more); every row is checked where it is read, timestamps must not
    decrease, and a problem is an error at its line and column (E294)."""
    last_ts = None
    for line_no, text in data_lines(path, "E294", "the Mooncake trace"):
        if line_no <= first or not text.strip():
            continue
        shown = text.rstrip("\r\n")

        def bad(msg, key=None):
            col = 1
            if key is not None:
                k = shown.find(json.dumps(key)) if isinstance(key, str) else -1
                col = k + 1 if k >= 0 else 1
            return data_error("E294", path, line_no, col, msg, shown, help=ROW_HELP)
        if not depth_ok(shown, MAX_DEPTH):
            raise bad(f"the row nests more than {MAX_DEPTH} deep")
        try:
            obj = json_loads(shown)
        except json.JSONDecodeError as e:
            raise data_error("E294", path, line_no, e.colno, f"not JSON: {e.msg}", shown, help=ROW_HELP) from None
        except DuplicateKey as e:
            raise data_error("E294", path, line_no, e.col, str(e), shown, help=ROW_HELP) from None
        except (ValueError, RecursionError) as e:      # (an integer of thousands of digits)
            raise bad(f"not JSON this serq reads: {str(e)[:80]}") from None
        try:
            row = mooncake_row(obj)
        except ValueError as e:
            raise bad(e.args[0], e.args[1]) from None
        if last_ts is not None and row.timestamp < last_ts:
            raise bad(f"the timestamp {row.timestamp} is before the previous row's {last_ts}", "timestamp")
        last_ts = row.timestamp
        yield line_no, row


def read_mooncake(path: str, first: int = 0, count: int = None) -> list[MooncakeRow]:
    """Rows first … first + count − 1 of a Mooncake trace (all from `first`
    when count is None), each checked (``iter_mooncake``)."""
    rows = []
    for _, row in iter_mooncake(path, first):
        if count is not None and len(rows) >= count:
            break
        rows.append(row)
    if not rows:
        raise SerqError(Diagnostic("E294", f"{path}: no rows" + (f" from line {first + 1}" if first else "")))
    return rows
