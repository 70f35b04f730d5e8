"""Diagnostics: source spans, errors a user can cause, and their rendering.

Every error a program can cause is a :class:`SerqError` carrying one or more
:class:`Diagnostic` s.  A diagnostic renders as::

    path:line:col: error[CODE]: message
       |
    12 |     hold kvv (1) { … }
       |          ^^^
       = help: did you mean `kv`?

No user input may produce a Python traceback: the CLI maps ``SerqError`` to
exit status 1 and prints :func:`render`.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from dataclasses import field
from typing import Iterable, Optional, Sequence

from .records import dataclass


@dataclass(frozen=True)
class Span:
    """A region of one source file; lines and columns count from 1."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int  # exclusive

    @staticmethod
    def point(file: str, line: int, col: int) -> "Span":
        return Span(file, line, col, line, col + 1)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# A line of a source ends with LF, CR LF or a lone CR (a file saved on an old Mac).
LINE_END = re.compile(r"\r\n?|\n")
LONE_CR = re.compile(r"\r(?!\n)")


def source_lines(text: str) -> list:
    """The lines of a source's text, as its spans count them."""
    return LINE_END.split(text)


def number_text(v) -> str:
    """A number as a message about a program writes it: a whole number
    below 10^16 without a point, ``inf``, ``-inf``, ``NaN``, else Python's
    shortest repr (``1e+308``: as digits, a float that large was 309 of them,
    `warmup 1000000000000000010979…`)."""
    if isinstance(v, float):
        if math.isfinite(v) and v == math.floor(v) and abs(v) < 1e16:
            return str(int(v))
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if math.isnan(v):
            return "NaN"
    return str(v)


SOURCE_BYTES = 1 << 28       # the most serq reads of a file, 256 MB (the oracle's inputs' bound too)


class Sources:
    """The text of every file read in one compilation, for rendering."""

    _texts: dict[str, str] = {}
    _lines: dict[tuple, str] = {}      # (path, line) -> its text, for a data file not kept whole

    @classmethod
    def add(cls, path: str, text: str) -> None:
        cls._texts[path] = text

    @classmethod
    def add_line(cls, path: str, line: int, text: str) -> None:
        """One line of a data file (a trace's row) for a diagnostic there; a
        line too long to show is cut after 200 characters."""
        cls._lines[(path, line)] = text if len(text) <= 200 else text[:200] + " …"

    @classmethod
    def paths(cls) -> list:
        """Every file read so far (a program, its libraries): an output never
        lands on one (serq/files.py)."""
        return list(cls._texts)

    @classmethod
    def line(cls, path: str, line: int) -> Optional[str]:
        if (path, line) in cls._lines:
            return cls._lines[(path, line)]
        text = cls._texts.get(path)
        if text is None:
            try:
                with open(path, "rb") as f:       # (at most what serq reads of a file: /dev/zero has no end)
                    text = f.read(SOURCE_BYTES).decode("utf-8", errors="replace")
            except OSError:
                return None
            cls._texts[path] = text
        lines = source_lines(text)
        if 1 <= line <= len(lines):
            return lines[line - 1]
        return None


@dataclass
class Diagnostic:
    """One problem.  ``span`` is where it is in the source; a problem of an
    IR file, which has no source there, names its ``field`` instead, as a
    path into the file's JSON (``$.blocks[3].stmts[0]``)."""

    code: str
    message: str
    span: Optional[Span] = None
    help: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    severity: str = "error"
    field: Optional[str] = None

    def render(self) -> str:
        head = f"{self.severity}[{self.code}]: {self.message}"
        if self.span is None:
            out = [f"{self.field}: {head}" if self.field else head]
        else:
            out = [f"{self.span}: {head}"]
            src = Sources.line(self.span.file, self.span.line)
            if src is not None:
                num = str(self.span.line)
                pad = " " * len(num)
                start = self.span.col - 1
                end = self.span.end_col - 1 if self.span.end_line == self.span.line else len(src)
                width = max(1, _display_width(src[start:end]) + max(0, end - max(start, len(src))))
                caret = " " * _display_width(src[:start]) + "^" * width
                out.append(f"{pad} |")
                out.append(f"{num} | {src}")
                out.append(f"{pad} | {caret}")
        for note in self.notes:
            out.append(f"  = note: {note}")
        if self.help:
            out.append(f"  = help: {self.help}")
        return visible("\n".join(out))


# what a diagnostic shows of a control character, one column as the
# character was counted: a tab as a space; the C0 controls and DEL as their
# Unicode pictures (NUL as ␀, ESC as ␛); the C1 controls and the
# bidirectional overrides and isolates, which reorder what a terminal shows
# (a line of a file can hide its own text), as U+FFFD.  A file's bytes, a
# path or a value quoted in a message never reach the terminal as commands.
_VISIBLE = {**{c: 0x2400 + c for c in range(0x20)}, 0x09: 0x20, 0x0A: 0x0A, 0x7F: 0x2421,
            **{c: 0xFFFD for c in range(0x80, 0xA0)},
            **{c: 0xFFFD for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}}


def visible(text: str) -> str:
    """``text`` with its control characters shown (``_VISIBLE``), its line
    ends kept."""
    return text.translate(_VISIBLE)


def _display_width(text: str) -> int:
    """The columns a terminal gives the text as the line is shown: a tab
    one (shown as one space), a wide character (CJK, most emoji) two, a
    combining mark none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


class SerqError(Exception):
    """One or more diagnostics; what every user-caused failure raises."""

    def __init__(self, diagnostics: "Diagnostic | Sequence[Diagnostic]"):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__(self.render())

    def render(self) -> str:
        parts = [d.render() for d in self.diagnostics]
        n = len(self.diagnostics)
        if n > 1:
            parts.append(f"error: {n} errors")
        return "\n\n".join(parts)


def error(code: str, message: str, span: Optional[Span] = None, help: Optional[str] = None,
          notes: Iterable[str] = ()) -> SerqError:
    return SerqError(Diagnostic(code, message, span, help, list(notes)))


class Collector:
    """Gathers diagnostics so that a pass reports all of them at once."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, code: str, message: str, span: Optional[Span] = None,
            help: Optional[str] = None, notes: Iterable[str] = (), field: Optional[str] = None) -> None:
        self.items.append(Diagnostic(code, message, span, help, list(notes), field=field))

    def extend(self, err: SerqError) -> None:
        self.items.extend(err.diagnostics)

    def check(self) -> None:
        if self.items:
            seen, unique = set(), []
            for d in self.items:
                key = (d.code, d.message, d.span, d.field)
                if key not in seen:
                    seen.add(key)
                    unique.append(d)
            self.items = unique
            # stable order: by file, line, column, then insertion
            order = sorted(range(len(self.items)), key=lambda i: (
                (self.items[i].span.file, self.items[i].span.line, self.items[i].span.col)
                if self.items[i].span else ("", 0, 0), i))    # (IR fields: in the order found)
            raise SerqError([self.items[i] for i in order])

    def __bool__(self) -> bool:
        return bool(self.items)


def read_text(path: str, what: str = "") -> str:
    """A source file's text: UTF-8, a byte-order mark skipped.  A file that
    cannot be read, is more than SOURCE_BYTES (`serq check /dev/zero` read
    until the machine's memory was gone) or is not UTF-8 (named at its first
    bad byte), is a SerqError."""
    try:
        with open(path, "rb") as f:
            data = f.read(SOURCE_BYTES + 1)
    except OSError as e:
        raise SerqError(Diagnostic("E001", f"cannot read {what}{path}: {e.strerror}"))
    if len(data) > SOURCE_BYTES:
        raise SerqError(Diagnostic("E001", f"cannot read {what}{path}: it is more than {SOURCE_BYTES >> 20} MB, "
                                           "the most serq reads of a file"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        shown = data.decode("utf-8", errors="replace")
        Sources.add(path, shown)
        before = source_lines(data[:e.start].decode("utf-8", errors="replace"))
        line, col = len(before), len(before[-1]) + 1
        raise SerqError(Diagnostic(
            "E002", f"the {what or 'file '}is not UTF-8 text: byte 0x{data[e.start]:02x} does not decode",
            Span.point(path, line, col), help="save the file as UTF-8")) from None
    return text[1:] if text.startswith("\ufeff") else text


def did_you_mean(name: str, candidates: Iterable[str]) -> Optional[str]:
    """A close match among ``candidates``, phrased as a help line."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    if close:
        return f"did you mean `{close[0]}`?"
    return None
