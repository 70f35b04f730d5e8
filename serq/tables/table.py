"""A sweep's table: one row per point and seed, written as CSV or Parquet,
and read back (``serq plot``, ``serq.read_table``).

CSV: a header, then one line per row; a float is written as Python's
shortest repr (``0.1``, ``1e-07``), so reading it back gives the very float,
NaN as ``NaN``, an infinity as ``inf`` / ``-inf``, a whole number as itself,
a text (a claim's verdict, an input given as an expression) as itself; a
cell a row does not have (a pool only some points declare) is empty.
Parquet (``pyarrow``, the extra ``serq[parquet]``): a column of whole
numbers is int64, of numbers float64, else a string; a missing cell is null.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re

from ..diag import Diagnostic, SerqError
from ..api.extras import extra
from ..datafile import csv_lines, data_error

FORMATS = (".csv", ".parquet")
_INT = re.compile(r"[+-]?\d+")


def columns(rows: list[dict], first: list[str]) -> list[str]:
    """``first``, then every other column in the order rows first have it."""
    out = list(first)
    seen = set(out)
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                out.append(k)
    return out


def table_format(path: str, reading: bool = False) -> str:
    """The table's format, by its extension: ``.csv`` or ``.parquet``; any
    other is E971, said for a table read (``serq plot T.txt``: its help named
    --out, which plot's TABLE is not) or written."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        if reading:
            raise SerqError(Diagnostic("E971", f"{path}: a table is read as .csv or .parquet, not `{ext or path}`",
                                       help="a sweep's table: serq sweep --out T.csv or --out T.parquet"))
        raise SerqError(Diagnostic("E971", f"{path}: a table is written as .csv or .parquet, not "
                                           f"`{ext or path}`", help="--out table.csv or --out table.parquet"))
    return ext


def cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def csv_text(cols: list[str], rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([cell(r.get(c)) for c in cols])
    return buf.getvalue()


def write(path: str, cols: list[str], rows: list[dict], force: bool = False, inputs=()) -> None:
    """Write the table (its format by the extension), whole or not at all, and
    only over a table a sweep wrote unless ``force`` (serq/files.py)."""
    from .. import files
    ext = table_format(path)
    if ext == ".csv":
        files.write_file(path, csv_text(cols, rows), what="", mark=files.TABLE, force=force, inputs=inputs)
        return
    pa = extra("pyarrow")
    pq = extra("pyarrow.parquet", "parquet")
    arrays = [_arrow_column(pa, [r.get(c) for r in rows]) for c in cols]
    table = pa.table(arrays, names=cols).replace_schema_metadata({files.PARQUET_KEY: b"serq sweep"})
    with files.writing(path, what="", mark=files.TABLE, force=force, inputs=inputs) as tmp:
        try:
            pq.write_table(table, tmp)
        except OSError as e:
            raise SerqError(Diagnostic("E004", f"cannot write {path}: {e.strerror or e}")) from None


def check_place(path: str, force: bool = False, inputs=()) -> None:
    """Refuse a table's place before a sweep runs (serq/files.py)."""
    from .. import files
    files.check_file(path, what="", mark=files.TABLE, force=force, inputs=inputs)


INT64 = 2 ** 63


def _arrow_column(pa, values: list):
    """A column as int64 (whole numbers that fit), float64 (numbers a float
    holds) or text (anything else, a whole number beyond both included)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) and not isinstance(v, bool) and -INT64 <= v < INT64 for v in present):
        return pa.array(values, type=pa.int64())
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) and _floats(v) for v in present):
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _floats(v) -> bool:
    try:
        float(v)
        return True
    except OverflowError:
        return False


def parse_cell(text: str):
    if text == "":
        return None
    if _INT.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def read(path) -> tuple[list[str], list[dict]]:
    """A table written by a sweep (or any CSV / Parquet with a header):
    (columns, rows), each row a dict of numbers and texts (None: missing).
    Every problem is an error at the file (and, in a CSV, the line and
    column): a file that is not a table of its extension's format, not
    UTF-8, empty, with a row of the wrong width or a column named twice."""
    from .. import args
    path = args.path("serq.read_table", "path", path)
    ext = table_format(path, reading=True)
    if ext == ".parquet":
        return _read_parquet(path)
    reader, line = csv_lines(path, "E972", "the table")
    try:
        cols = next(reader, None)
        if cols is None:
            raise SerqError(Diagnostic("E972", f"{path} is empty: a table has a header line"))
        _distinct(path, cols)
        rows = []
        for cells in reader:
            if not cells:
                continue
            if len(cells) != len(cols):
                raise data_error("E972", path, reader.line_num, 1, f"{len(cells)} cells, the header has "
                                 f"{len(cols)}", line())
            rows.append({c: parse_cell(v) for c, v in zip(cols, cells)})
    except csv.Error as e:
        raise data_error("E972", path, reader.line_num, 1, f"not a CSV table: {e}", line()) \
            from None
    return cols, rows


def _distinct(path: str, cols: list) -> None:
    seen = set()
    for c in cols:
        if c in seen:
            raise SerqError(Diagnostic("E972", f"{path}: the column `{str(c)[:60]}` is named twice in the header"))
        seen.add(c)


def _read_parquet(path: str) -> tuple[list, list]:
    pa = extra("pyarrow")
    pq = extra("pyarrow.parquet", "parquet")
    try:
        t = pq.read_table(path)
    except OSError as e:
        raise SerqError(Diagnostic("E972", f"cannot read the table {path}: {e.strerror or e}")) from None
    except (pa.ArrowException, ValueError) as e:        # ArrowInvalid: not Parquet, empty, corrupt
        raise SerqError(Diagnostic("E972", f"{path}: not a Parquet table: {str(e).splitlines()[0][:160]}",
                                   help="a .parquet table is one pyarrow reads (serq sweep --out T.parquet)")) \
            from None
    cols = [str(c) for c in t.column_names]
    _distinct(path, cols)
    try:
        rows = t.to_pylist()
    except (pa.ArrowException, ValueError, OverflowError) as e:
        raise SerqError(Diagnostic("E972", f"{path}: a column pyarrow cannot read into Python: "
                                           f"{str(e).splitlines()[0][:160]}")) from None
    for r in rows:
        for c, v in r.items():
            if v is not None and not isinstance(v, (bool, int, float, str)):
                raise SerqError(Diagnostic("E972", f"{path}: the column `{c}` holds {type(v).__name__} values: a "
                                                   "table's cells are numbers or texts"))
    return cols, rows
