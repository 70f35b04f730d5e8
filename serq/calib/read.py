"""Reading other tools' files at the boundary: CSV tables, JSON, JSON lines
and YAML, each problem a SerqError that names the file and the line (and
the column where the format says one), never a traceback.

Every reader of a profile bundle (serq.calib.profile) or a measured run
(serq.calib.runs) reads through these, so a malformed file is said the same
way whichever file it is."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from typing import Optional

from ..datafile import DuplicateKey, json_loads
from ..diag import Diagnostic, SerqError, Sources, Span, read_text

E_MISSING = "E980"    # a bundle, or a file it must hold, is not there
E_FORMAT = "E981"     # a file is not what its format says (a located error)
E_CONTENT = "E982"    # the files disagree with each other, or a value is out of its range


def missing(what: str, path: str, help: Optional[str] = None, *, folder: bool = False) -> SerqError:
    """``path`` is not there, or is not the folder (``folder``) or the file it should be."""
    from ..files import kind_of
    kind = kind_of(path)
    if kind is None:
        return SerqError(Diagnostic(E_MISSING, f"{what} {path} does not exist", help=help))
    return SerqError(Diagnostic(E_MISSING, f"{what} {path} is {kind}, not {'a directory' if folder else 'a file'}",
                                help=help))


def shown(v) -> str:
    """A value a file gave, as a message shows it: Python's repr, cut short
    (a YAML alias nested nine deep, `model: *i`, is 9^9 strings, whose
    whole repr never ended; a cell of a 16 MB line)."""
    import reprlib
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 2, 4, 4, 4, 4
    r.maxstring = r.maxother = r.maxlong = 60
    return r.repr(v)


def bad(path: str, line: int, message: str, col: int = 1, help: Optional[str] = None) -> SerqError:
    """A located problem of ``path`` at ``line`` (and ``col``)."""
    return SerqError(Diagnostic(E_FORMAT, message, Span.point(path, max(1, line), max(1, col)), help=help))


def content(message: str, path: Optional[str] = None, line: int = 0, help: Optional[str] = None) -> SerqError:
    span = Span.point(path, line, 1) if path is not None and line > 0 else None
    if path is not None and line <= 0:
        message = f"{path}: {message}"
    return SerqError(Diagnostic(E_CONTENT, message, span, help=help))


def need_file(path: str, what: str, help: Optional[str] = None) -> str:
    if not os.path.isfile(path):
        raise missing(what, path, help)
    return path


def text(path: str, what: str) -> str:
    t = read_text(path, what + " ")
    Sources.add(path, t)
    return t


def number(cell: str, path: str, line: int, col_name: str, *, whole: bool = False,
           minimum: Optional[float] = None) -> float:
    """One numeric cell of a table: finite, whole when asked, at least ``minimum``."""
    try:
        v = float(cell)
    except (TypeError, ValueError):
        raise bad(path, line, f"`{col_name}` is {shown(cell)}, not a number") from None
    if not math.isfinite(v):
        raise bad(path, line, f"`{col_name}` is {shown(cell)}, not a finite number")
    if whole and v != math.floor(v):
        raise bad(path, line, f"`{col_name}` is {shown(cell)}, not a whole number")
    if minimum is not None and v < minimum:
        raise bad(path, line, f"`{col_name}` is {shown(cell)}, below {minimum:g}")
    return v


def table(path: str, what: str, columns: tuple, numeric: dict) -> list:
    """The rows of a CSV file with exactly the header ``columns`` (in any
    order, extra columns refused), as dicts with their line number under
    ``"_line"``; ``numeric`` maps a column to ``number``'s keywords (the
    others stay text)."""
    need_file(path, what)
    t = text(path, what)
    reader = csv.reader(io.StringIO(t))
    try:
        header = next(reader)
    except StopIteration:
        raise bad(path, 1, f"the {what} is empty; its first line is the header "
                           f"{','.join(columns)}") from None
    except csv.Error as e:
        raise bad(path, 1, f"not CSV: {e}") from None
    header = [h.strip() for h in header]
    if sorted(header) != sorted(columns):
        miss = [c for c in columns if c not in header]
        extra = [c for c in header if c not in columns]
        words = []
        if miss:
            words.append("no column " + ", ".join(f"`{c}`" for c in miss))
        if extra:
            words.append("an unknown column " + ", ".join(f"`{c}`" for c in extra))
        raise bad(path, 1, f"the header has {' and '.join(words)}",
                  help=f"the {what}'s header is {','.join(columns)}")
    rows = []
    try:
        for cells in reader:
            line = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise bad(path, line, f"{len(cells)} cells where the header has {len(header)}")
            row = {"_line": line}
            for name, cell in zip(header, cells):
                cell = cell.strip()
                if name in numeric:
                    row[name] = number(cell, path, line, name, **numeric[name])
                else:
                    if not cell:
                        raise bad(path, line, f"`{name}` is empty")
                    row[name] = cell
            rows.append(row)
    except csv.Error as e:
        raise bad(path, reader.line_num, f"not CSV: {e}") from None
    if not rows:
        raise bad(path, 2, f"the {what} has a header and no rows")
    return rows


def json_file(path: str, what: str):
    need_file(path, what)
    t = text(path, what)
    try:
        return json_loads(t)
    except json.JSONDecodeError as e:
        raise bad(path, e.lineno, f"not JSON: {e.msg}", e.colno) from None
    except DuplicateKey as e:
        raise bad(path, e.line, str(e), e.col) from None
    except RecursionError:
        raise bad(path, 1, "not JSON this serq reads: it nests too deeply") from None


def json_lines(path: str, what: str) -> list:
    """``(line number, object)`` for each non-blank line of a JSON-lines file."""
    need_file(path, what)
    t = text(path, what)
    out = []
    for n, line in enumerate(t.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json_loads(line)
        except json.JSONDecodeError as e:
            raise bad(path, n, f"not JSON: {e.msg}", e.colno) from None
        except DuplicateKey as e:
            raise bad(path, n, str(e), e.col) from None
        except RecursionError:
            raise bad(path, n, "not JSON this serq reads: it nests too deeply") from None
        if not isinstance(obj, dict):
            raise bad(path, n, f"a line of the {what} is a JSON object, not {type(obj).__name__}")
        out.append((n, obj))
    if not out:
        raise bad(path, 1, f"the {what} has no lines")
    return out


def yaml_file(path: str, what: str):
    """A YAML file (PyYAML's safe loader, the `calib` extra)."""
    from ..signals import imported
    try:
        yaml = imported("yaml")
    except ImportError:
        raise SerqError(Diagnostic("E974", "this needs yaml, which is not installed",
                                   help="pip install 'serq[calib]'")) from None
    need_file(path, what)
    t = text(path, what)
    try:
        return yaml.safe_load(t)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e).split("\n")[0]
        if mark is not None:
            raise bad(path, mark.line + 1, f"not YAML: {problem}", mark.column + 1) from None
        raise bad(path, 1, f"not YAML: {problem}") from None


def field(obj: dict, key: str, path: str, line: int, kind, *, where: str = "",
          optional: bool = False, minimum: Optional[float] = None):
    """``obj[key]`` checked to be of ``kind`` (``int``, ``float`` — an int
    too —, ``str``, ``bool``, ``dict``, ``list``), or None when optional and
    absent or null."""
    at = f"{where}`{key}`"
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise bad(path, line, f"{at} is missing")
    v = obj[key]
    ok = {int: lambda x: isinstance(x, int) and not isinstance(x, bool),
          float: lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x),
          str: lambda x: isinstance(x, str), bool: lambda x: isinstance(x, bool),
          dict: lambda x: isinstance(x, dict), list: lambda x: isinstance(x, list)}[kind](v)
    if not ok:
        words = {int: "a whole number", float: "a number", str: "a string", bool: "true or false",
                 dict: "an object", list: "a list"}[kind]
        raise bad(path, line, f"{at} is {json.dumps(v)[:40]}, not {words}")
    if minimum is not None and v < minimum:
        raise bad(path, line, f"{at} is {v}, below {minimum:g}")
    return float(v) if kind is float else v
