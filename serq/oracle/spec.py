"""The oracle's inputs checked at the boundary: a scenario, a replay trace,
a Mooncake spec and a P/D scenario are JSON files (or dicts from Python)
whose every value is checked for its type and range before anything reads
it, and a problem is said at the file and the value's JSON path::

    error[E951]: x.json: $.requests[3].prompt is "12": a whole number from 1 below 2^53

The file itself: UTF-8 (a byte that does not decode is an error at its line
and column), JSON (E950 at line:col), nested at most MAX_DEPTH deep and at
most MAX_BYTES long (json reads recursively and whole)."""

from __future__ import annotations

import json
from typing import Iterable, Optional

from ..datafile import DuplicateKey, depth_ok, json_kind, json_loads, json_text
from ..diag import SOURCE_BYTES, Diagnostic, SerqError, Span, Sources, did_you_mean

MAX_DEPTH = 64
MAX_BYTES = SOURCE_BYTES     # 256 MB, the most serq reads of any file
WHOLE = 2 ** 53              # every number an oracle input gives is below it (a float holds it exactly)


def read_json(path: str, what: str):
    """A JSON input file, or a located error (E950)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise SerqError(Diagnostic("E950", f"cannot read {what} {path}: {e.strerror}")) from None
    if len(data) > MAX_BYTES:
        raise SerqError(Diagnostic("E950", f"{path}: {what} is more than {MAX_BYTES >> 20} MB"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, e.start) + 1
        col = len(data[start:e.start].decode("utf-8", errors="replace")) + 1
        end = data.find(b"\n", e.start)
        Sources.add_line(path, line, data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace"))
        raise SerqError(Diagnostic("E950", f"{what} is not UTF-8 text: byte 0x{data[e.start]:02x} does not decode",
                                   Span.point(path, line, col), help="save the file as UTF-8")) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not depth_ok(text, MAX_DEPTH):
        raise SerqError(Diagnostic("E950", f"{path}: {what} nests more than {MAX_DEPTH} deep", field="$"))
    try:
        return json_loads(text)
    except json.JSONDecodeError as e:
        Sources.add(path, text)
        raise SerqError(Diagnostic("E950", f"not JSON: {e.msg}", Span.point(path, e.lineno, e.colno))) from None
    except DuplicateKey as e:
        Sources.add(path, text)
        raise SerqError(Diagnostic("E950", str(e), Span.point(path, e.line, e.col))) from None
    except (ValueError, RecursionError) as e:     # an integer of thousands of digits
        raise SerqError(Diagnostic("E950", f"{path}: not JSON this serq reads: {str(e)[:100]}", field="$")) from None


class Checker:
    """Checks one input's values; ``bad`` raises E951 naming the file, the
    JSON path and what the value must be (``help``: the input's shape)."""

    def __init__(self, where: str, help: str):
        self.where = where
        self.help = help

    def bad(self, path: str, message: str, help: Optional[str] = None) -> SerqError:
        return SerqError(Diagnostic("E951", f"{self.where}: {path} {message}", help=help or self.help))

    def obj(self, v, path: str, keys: Iterable[str], required: Iterable[str] = ()) -> dict:
        """An object of these keys at most (a misspelt one is refused with the
        likely one), each of ``required`` present."""
        if not isinstance(v, dict):
            raise self.bad(path, f"is {json_kind(v)}, not an object")
        keys = list(keys)
        for k in v:
            if k not in keys:
                raise self.bad(f"{path}.{k}", "is not a key here" if not isinstance(k, str) else
                               f"is not a key of {'the input' if path == '$' else path} (its keys: "
                               f"{', '.join(keys)})", help=did_you_mean(str(k), keys) or self.help)
        for k in required:
            if k not in v:
                raise self.bad(f"{path}.{k}", "is missing")
        return v

    def whole(self, v, path: str, lo: int = 0, hi: int = WHOLE) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not (lo <= v < hi):
            top = "2^53" if hi == WHOLE else ("2^64" if hi == 2 ** 64 else str(hi))
            raise self.bad(path, f"is {json_text(v)}: a whole number from {lo} below {top}")
        return v

    def integer(self, v, path: str) -> int:
        """A whole number, negative or not (a priority), of at most 2^53."""
        if isinstance(v, bool) or not isinstance(v, int) or not (-WHOLE < v < WHOLE):
            raise self.bad(path, f"is {json_text(v)}: an integer of magnitude below 2^53")
        return v

    def positive(self, v, path: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < WHOLE):
            raise self.bad(path, f"is {json_text(v)}: a positive number below 2^53")
        return v

    def flag(self, v, path: str) -> bool:
        if not isinstance(v, bool):
            raise self.bad(path, f"is {json_text(v)}: true or false")
        return v

    def items(self, v, path: str, most: int = 1_000_000) -> list:
        """A non-empty list of at most ``most`` items."""
        if not isinstance(v, list):
            raise self.bad(path, f"is {json_kind(v)}, not a list")
        if not v:
            raise self.bad(path, "is empty: give one item at least")
        if len(v) > most:
            raise self.bad(path, f"has {len(v)} items, more than the {most} an oracle input may have")
        return v

    def choice(self, v, path: str, choices: Iterable[str]) -> str:
        choices = list(choices)
        if not isinstance(v, str) or v not in choices:
            raise self.bad(path, f"is {json_text(v)}: one of {', '.join(json.dumps(c) for c in choices)}")
        return v
