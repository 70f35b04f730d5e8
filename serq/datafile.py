"""Data files read line by line (a trace, a table): UTF-8 decoded a line at
a time, so that a byte that does not decode, a line too long, a row that is
wrong is an error at its file, line and column with the line shown, and a
file of millions of lines is never held whole."""

from __future__ import annotations

import csv
import json
from typing import Iterator, Optional

from .diag import Diagnostic, SerqError, Sources, Span

MAX_LINE = 1 << 24       # the bytes of one line at most


def data_error(code: str, path: str, line: int, col: int, message: str, text: Optional[str] = None,
               help: Optional[str] = None, width: int = 1) -> SerqError:
    """An error in a data file at ``path:line:col``, its line shown."""
    if text is not None:
        Sources.add_line(path, line, text)
    return SerqError(Diagnostic(code, message, Span(path, line, col, line, col + max(1, width)), help=help))


def data_lines(path: str, code: str, what: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 data file, read line by line (a byte
    that does not decode, or a line beyond MAX_LINE bytes, is an error there;
    a byte-order mark at its head is skipped)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise SerqError(Diagnostic(code, f"cannot read {what} {path}: {e.strerror}")) from None
    with f:
        n = 0
        while True:
            try:
                raw = f.readline(MAX_LINE + 1)
            except OSError as e:
                raise SerqError(Diagnostic(code, f"cannot read {what} {path}: {e.strerror}")) from None
            if not raw:
                return
            n += 1
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                # (its head shown: rendered from the file, the line was read whole, /dev/zero without end)
                raise data_error(code, path, n, 1, f"the line is longer than {MAX_LINE} bytes, the most a row of "
                                 f"{what} may be", raw[:1024].decode("utf-8", errors="replace"))
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                shown = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                col = len(raw[:e.start].decode("utf-8", errors="replace")) + 1
                raise data_error(code, path, n, col, f"{what} is not UTF-8 text: byte 0x{raw[e.start]:02x} does not "
                                 "decode", shown, help="save the file as UTF-8") from None
            yield n, text


def csv_lines(path: str, code: str, what: str):
    """A ``csv.reader`` over the file's lines (``data_lines``) and a function
    giving the text of the line it read last, for an error there."""
    last: dict = {}

    def source():
        for n, text in data_lines(path, code, what):
            last.clear()
            last[n] = text.rstrip("\r\n")
            yield text
    reader = csv.reader(source())
    return reader, lambda: last.get(reader.line_num)


def json_kind(v) -> str:
    """What a JSON value is, in words."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            float: "a number"}.get(type(v), "a number")


def json_text(v) -> str:
    """A JSON value shown, at most 40 characters."""
    try:
        t = json.dumps(v, allow_nan=True)
    except (TypeError, ValueError):
        t = repr(v)
    return t if len(t) <= 40 else t[:37] + "..."


def depth_ok(text: str, most: int) -> bool:
    """``text`` (JSON) nests at most ``most`` brackets deep, strings skipped
    (json reads recursively)."""
    if text.count("[") + text.count("{") <= most:
        return True         # (no deeper than its brackets: a trace's row, read in C)
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > most:
                return False
        elif ch in "]}":
            depth -= 1
    return True


class DuplicateKey(ValueError):
    """A JSON object names a key twice: ``json`` would keep the last value
    and drop the other unsaid.  ``line`` and ``col`` (1-based) are where the
    second one is written."""

    def __init__(self, key: str, line: int, col: int):
        super().__init__(f"the key {json.dumps(key)[:60]} is given twice in one object")
        self.key, self.line, self.col = key, line, col


def json_loads(text: str):
    """``json.loads(text)``, refusing an object that names a key twice
    (``DuplicateKey``).  The parse is json's; only a text with a duplicate
    is scanned again, to say where it is."""
    dup = []

    def pairs(items):
        obj = dict(items)
        if len(obj) != len(items) and not dup:
            dup.append(True)
        return obj
    value = json.loads(text, object_pairs_hook=pairs)
    if dup:
        raise _duplicate_at(text)
    return value


def _duplicate_at(text: str) -> DuplicateKey:
    """The first key written twice in one object of ``text``, valid JSON."""
    stack: list = []            # per open bracket: the keys seen (an object) or None (a list)
    want_key = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if want_key:
                key = json.loads(text[i:j + 1])
                if key in stack[-1]:
                    line = text.count("\n", 0, i) + 1
                    return DuplicateKey(key, line, i - (text.rfind("\n", 0, i) + 1) + 1)
                stack[-1].add(key)
                want_key = False
            i = j + 1
            continue
        if ch == "{":
            stack.append(set())
            want_key = True
        elif ch == "[":
            stack.append(None)
        elif ch in "]}":
            stack.pop()
        elif ch == ",":
            want_key = bool(stack) and stack[-1] is not None
        i += 1
    raise AssertionError("no key is written twice")   # pragma: no cover - json_loads saw one
