"""Plots of serQ's outputs (matplotlib, the extra ``serq[plot]``):

* ``table(source, x=, y=, by=)`` — a sweep's metric against an input: per
  x, the mean (or median) across seeds (a line), the seeds' least to
  greatest (a band), each seed (a dot) and each unstable seed (a cross); one
  line per value of ``by``, and per table when several are compared;
* ``samples(source)`` — an observation's samples (``--dump DIR`` writes
  ``DIR/NAME.csv``): a histogram and the empirical CDF side by side;
* ``gauge(source)`` — a gauge's change points (``DIR/gauge/NAME.csv``) as a
  step function of time.

Each returns a matplotlib ``Figure`` (shown by Jupyter; ``save(fig, path)``
writes PNG or SVG by the extension).  Nothing here touches pyplot's global
state."""

from __future__ import annotations

import math
import os
from typing import Optional

from ..api.extras import extra
from ..diag import Diagnostic, SerqError, did_you_mean

FORMATS = (".png", ".svg")

__all__ = ["table", "samples", "gauge", "save", "FORMATS"]


def _err(message: str, help: Optional[str] = None) -> SerqError:
    return SerqError(Diagnostic("E973", message, help=help))


def _figure(ncols: int = 1, width: float = 6.4):
    Figure = extra("matplotlib.figure", "plot").Figure

    class SerqFigure(Figure):
        """A Figure that shows itself in Jupyter whatever the backend."""

        def _repr_png_(self):
            import io
            buf = io.BytesIO()
            self.savefig(buf, format="png")
            return buf.getvalue()

    fig = SerqFigure(figsize=(width * (1.6 if ncols == 2 else 1), 4.2), layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def save(fig, path, force: bool = False, inputs=()) -> None:
    """Write the figure as PNG or SVG (by the extension); an SVG carries no
    date.  Either names `serq plot` in its metadata, which is how a later
    save knows the file for its own: any other file at ``path`` is replaced
    only with ``force``, an input (``inputs``: the table plotted) never
    (serq/files.py)."""
    from .. import files
    from .. import args
    path = args.path("serq.plot.save", "path", path)
    force = args.flag("serq.plot.save", "force", force)
    ext = plot_format(path)
    if not hasattr(fig, "savefig"):
        raise args.wrong("serq.plot.save", "fig", "a matplotlib Figure", fig)
    extra("matplotlib", "plot")
    import io
    import matplotlib
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "serq"}):
        if ext == ".svg":
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "serq plot"})
        else:
            fig.savefig(buf, format="png", dpi=120, metadata={"Software": "serq plot"})
    files.write_file(path, buf.getvalue(), what="", mark=files.PLOT, force=force, inputs=inputs)


def plot_format(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise _err(f"{path}: a figure is written as .png or .svg, not `{ext or path}`",
                   help="--out figure.png or --out figure.svg")
    return ext


# ---------------------------------------------------------------- a sweep's table

def _rows(source) -> tuple[list, list, list]:
    """(columns, rows, inputs) of a sweep's table: a path, a ``Sweep`` (a
    table's ``columns`` and ``rows``), a pandas DataFrame or ``(columns,
    rows)``.  The inputs are the columns with no dot but ``seed``."""
    from .. import args
    from ..tables.table import read
    if isinstance(source, (str, os.PathLike)):
        cols, rows = read(args.path("serq.plot.table", "source", source))
    elif hasattr(source, "to_dict") and hasattr(source, "columns"):
        cols, rows = [str(c) for c in source.columns], source.to_dict("records")
    elif hasattr(source, "columns") and hasattr(source, "rows"):    # a Sweep, read as its table
        cols, rows = source.columns, source.rows
    elif (isinstance(source, (tuple, list)) and len(source) == 2 and isinstance(source[0], (list, tuple))
          and all(isinstance(c, str) for c in source[0]) and isinstance(source[1], (list, tuple))
          and all(isinstance(r, dict) for r in source[1])):
        cols, rows = source
    else:
        raise args.wrong("serq.plot.table", "source", "a table's path, a Sweep, a DataFrame or (columns, rows)",
                         source)
    inputs = [c for c in cols if "." not in c and c != "seed"]
    return list(cols), list(rows), inputs


def _column(name: str, cols: list, what: str, table: str = "the table") -> None:
    if name not in cols:
        raise _err(f"{table} has no column `{name}` ({what})",
                   help=did_you_mean(name, cols) or f"its columns: {', '.join(cols[:12])}"
                   + (", …" if len(cols) > 12 else ""))


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def table(source, x: str, y: str, by: Optional[str] = None, where: Optional[dict] = None,
          logx: bool = False, logy: bool = False, title: Optional[str] = None, stat: str = "mean",
          labels: Optional[list] = None):
    """``y`` against ``x`` across a sweep: per x, the mean over the seeds (or
    their median, ``stat="median"``) as a line, their least to greatest as a
    band, each seed as a dot, and each unstable seed (a count still growing at
    the end or stuck sessions, ``serq.tables.summary``) as a cross; one line
    per value of ``by``.  ``source`` is a table (a path, a ``Sweep``, a
    DataFrame, ``(columns, rows)``) or several to compare in one plot: a list
    (named by ``labels``, else by their paths) or a dict ``{label: table}``.
    ``where`` keeps the rows whose inputs have these values (``{"B": 2048}``).
    Every other input of a table must be constant.  A value the axes cannot
    hold (not finite, beyond ±1e306) is left out and counted in the title."""
    from .. import args
    from ..tables.spread import spread
    from ..tables.summary import is_unstable
    where_ = "serq.plot.table"
    for name, v in (("x", x), ("y", y)):
        args.text(where_, name, v)
    args.text(where_, "by", by, optional=True)
    args.text(where_, "title", title, optional=True)
    args.text(where_, "stat", stat)
    args.flag(where_, "logx", logx)
    args.flag(where_, "logy", logy)
    if where is not None and not isinstance(where, dict):
        raise args.wrong(where_, "where", "a dict of inputs' values", where)
    if labels is not None and (not isinstance(labels, (list, tuple)) or not all(isinstance(v, str) for v in labels)):
        raise args.wrong(where_, "labels", "a list of str", labels)
    if stat not in STATS:
        raise _err(f"stat={stat!r} is not one of {', '.join(STATS)}", help=did_you_mean(str(stat), STATS))
    tables = _tables(source, labels)
    series = []      # (label, {x: [(y, unstable)]})
    all_x, numeric_x, nseeds, off = [], True, set(), 0
    for label, src in tables:
        cols, rows, inputs = _rows(src)
        rows, left = _kept(cols, rows, inputs, x, y, by, where, label, src)
        off += left
        xs_all = [r.get(x) for r in rows]
        numeric_x = numeric_x and all(_is_num(v) for v in xs_all)
        all_x.extend(xs_all)
        nseeds |= {(label, r.get("seed")) for r in rows} if "seed" in cols else {(label, None)}
        groups: dict = {}
        for r in rows:
            groups.setdefault(r.get(by) if by else None, {}).setdefault(r.get(x), []).append(
                (r.get(y), is_unstable(r)))
        for g, by_x in groups.items():
            name = ", ".join(p for p in (label, f"{by} = {_fmt(g)}" if by else None) if p) or \
                f"{stat} over seeds"
            series.append((name, by_x))
    if logx and numeric_x:
        _positive(all_x, "--logx", x)
    if logy:
        _positive([v for _, by_x in series for ys in by_x.values() for v, _ in ys], "--logy", y)
    fig, (ax,) = _figure()
    order = list(dict.fromkeys(all_x))
    pos = {v: i for i, v in enumerate(order)}
    marked = False
    for gi, (label, by_x) in enumerate(series):
        xs = sorted(by_x, key=lambda v: v if numeric_x else pos[v])
        px = [v if numeric_x else pos[v] for v in xs]
        stats = [spread([v for v, _ in by_x[xv]]) for xv in xs]
        color = f"C{gi % 10}"
        ax.plot(px, [getattr(s, stat) for s in stats], marker=MARKERS[gi % len(MARKERS)],
                linestyle=LINES[gi % len(LINES)], color=color, label=label)
        ax.fill_between(px, [s.min for s in stats], [s.max for s in stats], color=color, alpha=0.2,
                        linewidth=0)
        dots = [(p, v) for p, xv in zip(px, xs) for v, bad in by_x[xv] if _finite(v) and not bad]
        if dots:
            ax.scatter([d[0] for d in dots], [d[1] for d in dots], s=14, color=color, alpha=0.6,
                       linewidths=0)
        bad = [(p, v) for p, xv in zip(px, xs) for v, b in by_x[xv] if _finite(v) and b]
        if bad:
            ax.scatter([d[0] for d in bad], [d[1] for d in bad], s=48, marker="x", color=color, linewidths=1.6,
                       label=None if marked else UNSTABLE, zorder=3)
            marked = True
    if not numeric_x:
        ax.set_xticks(range(len(order)), [_fmt(v) for v in order])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    seeds = {s for _, s in nseeds}
    n = len(seeds)
    ax.set_title(title or f"{y} against {x}: {stat} and range over {n} seed{'s' if n != 1 else ''}"
                 + (f" ({_left_out(off)})" if off else ""))
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(title=None, fontsize="small")
    return fig


STATS = ("mean", "median")
UNSTABLE = "unstable seed (still growing or stuck)"


def _finite(v) -> bool:
    return v is not None and v == v


def _positive(values, flag: str, what: str) -> None:
    """A log axis shows only values above 0: none is refused (matplotlib
    would warn and draw an empty axis)."""
    if not any(_is_num(v) and v > 0 for v in values):
        raise _err(f"{flag} needs positive values of {what}, and it has none")


def _tables(source, labels) -> list:
    """``[(label, table)]``: one table (label None) or several."""
    if isinstance(source, dict):
        if labels is not None:
            raise _err("labels= names a list of tables; a dict's keys are its labels")
        items = [(str(k), v) for k, v in source.items()]
    elif isinstance(source, list):
        if labels is not None and len(labels) != len(source):
            raise _err(f"{len(labels)} label{'s' if len(labels) != 1 else ''} for {len(source)} tables",
                       help="one --label per table, in their order")
        items = [(str(labels[i]) if labels is not None else _table_name(t, i), t) for i, t in enumerate(source)]
    else:
        if labels is not None and len(labels) != 1:
            raise _err(f"{len(labels)} labels for one table", help="one --label per table, in their order")
        return [(None if labels is None else str(labels[0]), source)]
    if not items:
        raise _err("no table to plot")
    names = [k for k, _ in items]
    dup = next((k for i, k in enumerate(names) if k in names[:i]), None)
    if dup is not None:
        raise _err(f"two tables are labelled `{dup}`", help="give each its own --label")
    return items


def _table_name(t, i: int) -> str:
    if isinstance(t, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(t)))[0]
    return f"table {i + 1}"


def _kept(cols, rows, inputs, x, y, by, where, label, source=None) -> tuple[list, int]:
    """The rows of one table the plot draws, its columns checked, and how many
    values were left out (a y the axes cannot hold is left out of its row, a
    numeric x the axis cannot place leaves its row out)."""
    # (a table read from a file is named in what is said of it)
    named = f"the table {os.fspath(source)}" if isinstance(source, (str, os.PathLike)) else "the table"
    if label and not isinstance(source, (str, os.PathLike)):
        named = f"the table {label}"
    of = f" of {named}"
    _column(x, cols, "--x", named)
    _column(y, cols, "--y", named)
    if by is not None:
        _column(by, cols, "--by", named)
    for k, v in (where or {}).items():
        _column(k, cols, "--where", named)
        rows = [r for r in rows if r.get(k) == v or str(r.get(k)) == str(v)]
        if not rows:
            raise _err(f"no row{of} has {k} = {v}")
    if not rows:
        raise _err(f"{named} has no rows")
    for name in inputs:
        if name in (x, by) or name in (where or {}):
            continue
        vals = {r.get(name) for r in rows}
        if len(vals) > 1:
            some = sorted(map(str, vals))[:2]
            raise _err(f"{named} varies {name} too, so a point of the plot would mix its values",
                       help=f"--by {name}, or keep one value: --where {name}={some[0]}")
    ys = [r.get(y) for r in rows]
    if not all(_is_num(v) or v is None for v in ys):
        raise _err(f"the column `{y}`{of} is not a number")
    off = sum(1 for v in ys if v is not None and not _plottable(v))
    rows = [dict(r, **{y: r.get(y) if r.get(y) is None or _plottable(r.get(y)) else None}) for r in rows]
    if all(_is_num(r.get(x)) for r in rows):       # an x the axis cannot place: its rows left out
        off += sum(1 for r in rows if not _plottable(r.get(x)))
        rows = [r for r in rows if _plottable(r.get(x))]
        if not rows:
            raise _err(f"{named} has no row whose `{x}` a plot's axis holds ({_left_out(off)})")
    return rows, off


MARKERS = ("o", "s", "^", "D", "v", "P")
LINES = ("-", "--", "-.", ":")


def _fmt(v) -> str:
    if isinstance(v, float) and v == v and not math.isinf(v) and v == int(v):
        return str(int(v))
    return str(v)


# ---------------------------------------------------------------- samples and gauges

def _series(source, read_one, what: str) -> dict:
    """``{label: data}`` from a path, a sequence, or a dict of either."""
    if isinstance(source, dict):
        items = list(source.items())
    elif isinstance(source, (str, os.PathLike)):
        items = [(os.fspath(source), source)]
    elif isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        items = [(os.fspath(s), s) for s in source]
    else:
        items = [(None, source)]
    out = {}
    for label, data in items:
        if isinstance(data, (str, os.PathLike)):
            path = os.fspath(data)
            data = read_one(path)
            label = label if label is not None else path
        out[label] = data
    if not out:
        raise _err(f"no {what} to plot")
    return out


def _dump_csv(path: str, want: tuple) -> list:
    from ..tables.table import read
    cols, rows = read(path)
    missing = [c for c in want if c not in cols]
    if missing:
        raise _err(f"{path}: the header has no `{missing[0]}` (a dump file's header is {','.join(want)})",
                   help="serq run … --dump DIR writes DIR/NAME.csv (time,session,turn,value) and "
                        "DIR/gauge/NAME.csv (time,value)")
    for i, r in enumerate(rows, start=2):
        for c in want:
            if not _is_num(r.get(c)):
                raise _err(f"{path}:{i}: the {c} `{r.get(c)}` is not a number")
    return rows


def _values(data) -> list:
    out = []
    try:
        items = iter(data)
    except TypeError:
        from .. import args
        raise args.wrong("serq.plot.samples", "source", "a dump file's path, a list of numbers or Samples, or a "
                         "dict of them", data) from None
    for v in items:
        if isinstance(v, tuple) and hasattr(v, "value"):
            v = v.value
        if not _is_num(v):
            raise _err(f"a sample {str(v)[:40]!r} is not a number")
        try:
            out.append(float(v))
        except OverflowError:
            out.append(math.inf if v > 0 else -math.inf)
    return out


# A value a figure's axes hold: finite and at most LIMIT in magnitude (an axis
# reaches 5 % past its data, which must stay a float); others are left out,
# and the figure says how many.
LIMIT = 1e306


def _plottable(v) -> bool:
    return v == v and -LIMIT <= v <= LIMIT


def _left_out(n: int) -> str:
    return f"{n} value{'s' if n != 1 else ''} not finite or beyond ±1e306 left out"


MAX_BINS = 10_000


def _points(data) -> list:
    """A gauge's ``(time, value)`` points as floats."""
    from .. import args
    out = []
    try:
        for p in data:
            t, v = p
            if not (_is_num(t) and _is_num(v)):
                raise ValueError
            out.append((_float(t), _float(v)))
    except (TypeError, ValueError):
        raise args.wrong("serq.plot.gauge", "source", "a dump file's path, a list of (time, value) or a dict of "
                         "them", data) from None
    return out


def _float(v) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _name(paths: list, default: str) -> str:
    stems = {os.path.splitext(os.path.basename(p))[0] for p in paths if isinstance(p, str)}
    return stems.pop() if len(stems) == 1 else default


def samples(source, *, name: Optional[str] = None, bins=40, logx: bool = False):
    """A histogram (left) and the empirical CDF (right) of an observation's
    samples: a dump file's path, a sequence of numbers or ``Sample`` s, or a
    dict ``{label: either}`` to compare several.  NaN samples are left out."""
    from .. import args
    if isinstance(bins, bool) or not isinstance(bins, int):
        raise args.wrong("serq.plot.samples", "bins", "a whole number", bins)
    if not 1 <= bins <= MAX_BINS:
        raise _err(f"bins={bins}: a histogram has from 1 to {MAX_BINS} bins")
    args.text("serq.plot.samples", "name", name, optional=True)
    args.flag("serq.plot.samples", "logx", logx)
    series = _series(source, lambda p: [r["value"] for r in _dump_csv(p, ("time", "session", "turn", "value"))],
                     "samples")
    raw = {k: [v for v in _values(d) if v == v] for k, d in series.items()}
    series = {k: [v for v in vs if _plottable(v)] for k, vs in raw.items()}
    off = {k: len(raw[k]) - len(series[k]) for k in raw}
    empty = [k for k, v in series.items() if not v]
    if empty:
        raise _err(f"{empty[0] or 'the series'} has no samples to plot"
                   + (f" ({_left_out(off[empty[0]])})" if off[empty[0]] else ""))
    name = name or _name(list(series), "value")
    fig, (hist, cdf) = _figure(2)
    np = extra("numpy")
    allv = np.concatenate([np.asarray(v) for v in series.values()])
    if logx:
        pos = allv[allv > 0]
        if not len(pos):
            raise _err("--logx needs positive samples")
        lo, hi = float(pos.min()), float(pos.max())
        if lo == hi:        # one value: the half-decade each side of it (a linear axis's ±0.5)
            lo, hi = lo / 10 ** 0.5 or lo, hi * 10 ** 0.5
        # (geomspace's rounding may put an inner edge above the next: 0.3 to 0.3)
        edges = np.maximum.accumulate(np.geomspace(lo, hi, bins + 1))
    else:
        edges = np.histogram_bin_edges(allv, bins=bins)
    one = len(series) == 1
    for i, (label, vals) in enumerate(series.items()):
        color = f"C{i % 10}"
        tag = label if label is not None else name
        a = np.sort(np.asarray(vals))
        hidden = int((a <= 0).sum()) if logx else 0
        note = f"; {hidden} ≤ 0 off the log axis" if hidden else ""
        note += f"; {_left_out(off[label])}" if off.get(label) else ""
        hist.hist(a, bins=edges, color=color, alpha=0.75 if one else 0.45,
                  label=f"{tag} (n = {len(a)}{note})")
        cdf.step(a, np.arange(1, len(a) + 1) / len(a), where="post", color=color, label=tag)
        if one:
            mean = float(a.mean())
            p99 = float(np.percentile(a, 99))
            for ax in (hist, cdf):
                ax.axvline(mean, color="k", linestyle="--", linewidth=1, label=f"mean {mean:.4g}")
                ax.axvline(p99, color="k", linestyle=":", linewidth=1, label=f"p99 {p99:.4g}")
    hist.set_xlabel(name)
    hist.set_ylabel("samples")
    hist.set_title(f"{name}: histogram")
    cdf.set_xlabel(name)
    cdf.set_ylabel("fraction ≤ x")
    cdf.set_ylim(0, 1.02)
    cdf.set_title(f"{name}: empirical CDF")
    for ax in (hist, cdf):
        if logx:
            ax.set_xscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    return fig


def gauge(source, *, name: Optional[str] = None, logy: bool = False):
    """A gauge as a step function of time: a dump file's path
    (``DIR/gauge/NAME.csv``), a sequence of ``(time, value)``, or a dict
    ``{label: either}`` to compare several."""
    from .. import args
    args.text("serq.plot.gauge", "name", name, optional=True)
    args.flag("serq.plot.gauge", "logy", logy)
    series = _series(source, lambda p: [(r["time"], r["value"]) for r in _dump_csv(p, ("time", "value"))],
                     "gauge")
    name = name or _name(list(series), "value")
    lines = []
    for label, pts in series.items():
        pts = _points(pts)
        off = sum(1 for t, v in pts if not (_plottable(t) and _plottable(v)))
        pts = [(t, v) for t, v in pts if _plottable(t) and _plottable(v)]
        if not pts:
            raise _err(f"{label or 'the gauge'} has no points to plot" + (f" ({_left_out(off)})" if off else ""))
        if off:
            label = f"{label or name} ({_left_out(off)})"
        lines.append((label, [t for t, _ in pts], [v for _, v in pts]))
    if logy:
        _positive([v for _, _, vs in lines for v in vs], "--logy", name)
    fig, (ax,) = _figure()
    for i, (label, ts, vs) in enumerate(lines):
        ax.step(ts, vs, where="post", color=f"C{i % 10}", label=label if label is not None else name)
    ax.set_xlabel("time")
    ax.set_ylabel(name)
    ax.set_title(f"gauge {name}")
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize="small")
    return fig
