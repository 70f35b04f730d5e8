"""Sweeps: a program run at every combination of some inputs' values, on
several seeds each (``serq sweep``, ``serq.sweep``).

Every point is linked here first (so a value the program refuses stops the
sweep before a run starts), each (point, seed) is one run wherever it runs
(``backends``), and the rows come back in the grid's order — points in
order, the first input varying slowest, then the seeds — so the table does
not depend on the jobs or the backend.  A row is the point's inputs, the
seed and the report's flat row (``serq.api.report.row``)."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Optional

from ..diag import SerqError
from . import grid as G
from ..tables.spread import spread

__all__ = ["sweep", "Sweep"]


class Sweep:
    """A finished sweep: ``inputs`` (the swept names, in order), ``seeds``,
    ``rows`` (one dict per point and seed), ``columns``, ``seconds`` (the wall
    time); ``to_frame()``, ``write(path)``, ``summary()``, ``under(metric,
    bound)``, ``text()``, ``plot(x=, y=, by=)``.  ``reads``: the files its runs
    read (the program, its instance, its trace), which ``write`` never
    writes over."""

    def __init__(self, inputs: list, seeds: list, rows: list, seconds: float = 0.0, where: str = "",
                 reads: tuple = ()):
        from ..tables.table import columns
        self.reads = tuple(p for p in reads if p is not None)
        self.inputs = list(inputs)
        self.seeds = list(seeds)
        self.rows = rows
        self.columns = columns(rows, self.inputs + ["seed"])
        self.seconds = seconds
        self.where = where

    def __len__(self):
        return len(self.rows)

    def __repr__(self):
        pts = len(self.rows) // max(1, len(self.seeds))
        return (f"<serq.Sweep: {pts} points × {len(self.seeds)} seeds = {len(self.rows)} runs; "
                f"inputs {', '.join(self.inputs) or '-'}>")

    # -- tables --------------------------------------------------------------------
    def to_frame(self):
        """The table as a pandas DataFrame (the extra ``serq[frames]``)."""
        from ..api.report import pandas
        return pandas().DataFrame(self.rows, columns=self.columns)

    def write(self, path, force: bool = False) -> None:
        """Write the table as ``.csv`` or ``.parquet``: over a table a sweep
        wrote, or anything else with ``force`` (serq/files.py)."""
        from .. import args
        from ..tables.table import write
        write(args.path("Sweep.write", "path", path), self.columns, self.rows,
              force=args.flag("Sweep.write", "force", force), inputs=self.reads)

    def csv(self) -> str:
        from ..tables.table import csv_text
        return csv_text(self.columns, self.rows)

    # -- the spread across seeds ------------------------------------------------
    def default_metrics(self) -> list:
        """The columns ``text()`` shows by default: each observe's mean, the
        client's TTFT (its response time when no run recorded a TTFT: a
        program without an engine), each pool's preemptions (where one has
        any)."""
        out = [c for c in self.columns if c.count(".") == 1 and c.endswith(".mean") and not c.startswith("run.")]
        for name in ("ttft", "response"):
            if any(isinstance(r.get(f"client.{name}.count"), int) and r[f"client.{name}.count"] > 0
                   for r in self.rows):
                out.append(f"client.{name}.mean")
                break
        out += [c for c in self.columns if c.startswith("pool.") and c.endswith(".preemptions")
                and any((r.get(c) or 0) != 0 for r in self.rows)]
        return out

    def summary(self, metrics: Optional[list] = None) -> list:
        """Per point and metric, the spread across seeds: dicts of the point's
        inputs, ``metric``, ``seeds``, ``mean``, ``half`` (the t-interval's
        half-width, 95 %), ``median``, ``min``, ``max``, ``unstable`` (the
        point's seeds whose run is unstable: a count still growing at the end
        or stuck sessions, ``serq.tables.summary``)."""
        from ..tables.summary import summarise
        metrics = self._metrics(metrics)
        return [{**point, "metric": m, **summarise(rows, m)} for point, rows in self._points() for m in metrics]

    def under(self, metric: str, bound: float) -> list:
        """Per point, how many seeds keep ``metric`` under ``bound`` (strictly):
        dicts of the point's inputs, ``metric``, ``bound``, ``seeds``,
        ``under`` (the seeds under), ``over`` (``(seed, value)`` of the others),
        ``missing`` (the seeds without a value), ``unstable`` (the seeds whose
        run is unstable) and ``shaky`` (those under whose run is unstable: a
        longer horizon may put them over)."""
        from .. import args
        from ..tables.summary import under
        args.text("Sweep.under", "metric", metric)
        self._metrics([metric])
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound != bound:
            from ..api.program import usage
            raise usage(f"the bound of {metric} is a number, not {bound!r}")
        bound = args.number("Sweep.under", "bound", bound)       # (a whole number beyond a float refused)
        out = []
        for point, rows in self._points():
            u = under(rows, metric, bound)
            out.append({**point, "metric": metric, "bound": bound, "seeds": u.seeds, "under": u.under,
                        "over": u.over, "missing": u.missing, "unstable": u.unstable, "shaky": u.shaky})
        return out

    def _metrics(self, metrics):
        from .. import args
        from ..api.report import missing
        if metrics is not None and (isinstance(metrics, str) or not isinstance(metrics, (list, tuple))
                                    or not all(isinstance(m, str) for m in metrics)):
            raise args.wrong("Sweep.summary", "metrics", "a list of column names", metrics)
        metrics = self.default_metrics() if metrics is None else list(metrics)
        for m in metrics:
            if m not in self.columns:
                raise missing("column", m, self.columns)
            if any(isinstance(r.get(m), str) for r in self.rows):
                raise SerqError(_diag(f"the column `{m}` is not a number"))
        return metrics

    def _points(self):
        groups: dict = {}
        for r in self.rows:
            key = tuple(r[n] for n in self.inputs)
            groups.setdefault(key, []).append(r)
        return [(dict(zip(self.inputs, k)), rows) for k, rows in groups.items()]

    def text(self, metrics: Optional[list] = None, under: Optional[list] = None) -> str:
        """The spread across seeds as a table (what ``serq sweep`` prints);
        with ``under`` (``[(metric, bound), …]``), per point how many seeds
        keep each metric under its bound; then the notes."""
        from ..sim.report import _f, _table
        from ..tables.summary import fmt_bound
        from .. import args
        if under is not None and (not isinstance(under, (list, tuple)) or not all(
                isinstance(b, (list, tuple)) and len(b) == 2 and isinstance(b[0], str) for b in under)):
            raise args.wrong("Sweep.text", "under", "a list of (column, bound)", under)
        shown, fixed = self._shown()
        rows = []
        for s in self.summary(metrics):
            rows.append([_param(s[n]) for n in shown] +
                        [s["metric"], str(s["seeds"]), _f(s["mean"], 4),
                         "NaN" if s["half"] != s["half"] else f"±{s['half']:.4f}",
                         _f(s["median"], 4), _f(s["min"], 4), _f(s["max"], 4), str(s["unstable"])])
        header = shown + ["metric", "seeds", "mean", "95% t", "median", "min", "max", "unstable"]
        blocks = [_table(header, rows, left=0)] if rows else []
        if fixed and rows:
            blocks.insert(0, ["every point: " + " ".join(f"{n}={_param(self.rows[0][n])}" for n in fixed)])
        for metric, bound in under or []:
            table = []
            for u in self.under(metric, bound):
                table.append([_param(u[n]) for n in shown] +
                             [f"{len(u['under'])} of {len(u['seeds'])} seeds under",
                              ", ".join(f"{s} ({_f(v, 4)})" for s, v in u["over"]) or "-",
                              ", ".join(map(str, u["unstable"])) or "-"])
            blocks.append(_table(shown + [f"{metric} < {fmt_bound(bound)}", "over (seed, value)",
                                          "unstable seeds"], table, left=len(shown) + 3))
        notes = self.notes(under)
        lines = []
        for b in blocks:
            lines += ([""] if lines and len(b) > 1 else []) + b
        return "\n".join(lines + ([""] if lines and notes else []) + notes)

    def _shown(self) -> tuple:
        """(the inputs whose values vary across the points, in order; those
        given one value): the text shows the first per point, the others once."""
        shown = [n for n in self.inputs if len({repr(r.get(n)) for r in self.rows}) > 1]
        return shown, [n for n in self.inputs if n not in shown]

    def notes(self, under: Optional[list] = None) -> list:
        """Lines about runs whose means are not over all the traffic or not a
        steady state's: each unstable run and why, rejected requests at a
        pool, and with ``under`` each point whose seeds under a bound include
        unstable ones (a longer horizon may change the verdict)."""
        from ..tables.summary import fmt_bound, is_unstable, why_unstable
        out = []
        shown, _ = self._shown()
        bad = [r for r in self.rows if is_unstable(r)]
        for r in bad:
            where = " ".join(f"{n}={_param(r[n])}" for n in shown)
            out.append(f"unstable: {where + ' ' if where else ''}seed {r.get('seed')}: {why_unstable(r)}")
        if bad:
            pts = len({tuple(r[n] for n in self.inputs) for r in bad})
            out.append(f"unstable: {len(bad)} of {len(self.rows)} runs"
                       + (f", at {pts} of {len(self._points())} points" if self.inputs else "")
                       + ": their means are not a steady state's (a longer run would measure others); "
                         "read the median and each seed's row")
        for c in self.columns:
            if c.startswith("pool.") and c.endswith(".rejected"):
                n = sum(1 for r in self.rows if (r.get(c) or 0) > 0)
                if n:
                    out.append(f"note: {n} of {len(self.rows)} runs have rejected requests at pool "
                               f"{c[len('pool.'):-len('.rejected')]} (column {c})")
        horizon = next((r.get("made.horizon") for r in self.rows if r.get("made.horizon") is not None), None)
        longer = f" (try --horizon {_param(2 * horizon)})" if isinstance(horizon, (int, float)) else ""
        for metric, bound in under or []:
            us = self.under(metric, bound)
            for u in us:
                where = " ".join(f"{n}={_param(u[n])}" for n in shown)
                if u["shaky"]:
                    seeds = ", ".join(map(str, u["shaky"]))
                    out.append(f"horizon: {where + ': ' if where else ''}{metric} is under {fmt_bound(bound)} on "
                               f"seed{'s' if len(u['shaky']) != 1 else ''} {seeds}, whose run is unstable: a longer "
                               f"horizon may put {'them' if len(u['shaky']) != 1 else 'it'} over" + longer)
                elif len(u["under"]) == len(u["seeds"]):
                    near = _neighbour(self.inputs, u, us)
                    if near is not None:
                        there = " ".join(f"{n}={_param(near[n])}" for n in shown)
                        out.append(f"horizon: {where}: every seed is under {fmt_bound(bound)} and stable, but at "
                                   f"{there} {len(near['unstable'])} of {len(near['seeds'])} seeds "
                                   f"{'is' if len(near['unstable']) == 1 else 'are'} unstable: an "
                                   f"overload there is a rare event here, which a longer horizon may meet" + longer)
        return out

    def _repr_html_(self):
        import html
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.inputs + ["metric", "seeds", "mean", "95% t",
                                                                             "median", "min", "max", "unstable"])
        body = []
        for s in self.summary():
            cells = [_param(s[n]) for n in self.inputs] + [s["metric"], str(s["seeds"])] + \
                [f"{v:.6g}" for v in (s["mean"], s["half"], s["median"], s["min"], s["max"])] + [str(s["unstable"])]
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        return (f"<p>{html.escape(repr(self))}</p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table>")

    def plot(self, x: str, y: str, by: Optional[str] = None, **kw):
        """``serq.plot.table(self, x=…, y=…, by=…)``: a matplotlib Figure."""
        from ..plot import table
        return table(self, x=x, y=y, by=by, **kw)


def _neighbour(inputs: list, u: dict, points: list):
    """The point next to ``u`` along one input (the next larger of its
    values, the others the same) when that point has unstable seeds; else
    None."""
    for name in inputs:
        if not isinstance(u[name], (int, float)):
            continue
        same = [q for q in points if all(q[n] == u[n] for n in inputs if n != name)
                and isinstance(q[name], (int, float)) and q[name] > u[name]]
        if same:
            nxt = min(same, key=lambda q: q[name])
            if nxt["unstable"]:
                return nxt
    return None


def _diag(message: str, help=None):
    from ..diag import Diagnostic
    return Diagnostic("E971", message, help=help)


def _param(v) -> str:
    if isinstance(v, float):
        return repr(v) if v != int(v) or abs(v) >= 1e15 else str(int(v))
    return str(v)


def sweep(program, set: Optional[dict] = None, *, seeds=(1,), horizon=None, warmup=None,
          arrivals=None, trace=None, jobs: Optional[int] = None, dask=None,
          progress: Optional[bool] = None, out: Optional[str] = None, force: bool = False,
          instance: Optional[str] = None, columns: Optional[list] = None) -> Sweep:
    """Run ``program`` (a path or a :class:`serq.Program`) at every combination
    of the inputs' values in ``set`` (``{"Lambda": [0.3, 0.6, 0.9], "B": 2048}``)
    on every seed (``range(1, 6)`` or ``"1-5"``), each run with ``horizon``,
    ``warmup``, ``arrivals`` and ``trace`` as ``prog.run`` takes them: a
    setting left out is the instance's (``instance=``, else the program's
    default instance), as for ``serq run``.

    ``jobs``: processes (default: every core); ``dask``: ``"local"`` (a
    LocalCluster of ``jobs`` worker processes), a scheduler's address, or a
    ``distributed.Client``.  ``progress``: a progress bar on stderr (default:
    when stderr is a terminal).  ``out``: also write the table there (refused
    before the first run when it holds a file a sweep did not write, unless
    ``force``).  ``columns``: the names of columns the caller will read (a
    summary's metrics): one the first finished run's row does not have is
    refused then (E970), the other runs stopped, not found after them all
    (every run of a program makes the same columns, data or none)."""
    from . import backends
    from .. import args as A
    from ..api.program import Program, load, usage
    from ..tables.table import check_place, table_format
    t0 = time.perf_counter()
    if not isinstance(program, Program):
        program = load(A.path("serq.sweep", "program", program),
                       instance=None if instance is None else A.path("serq.sweep", "instance", instance))
    elif instance is not None:
        raise usage("instance= is for a program's path; a loaded program has its instance",
                    help="serq.load(path, instance=FILE)")
    lists = G.value_lists(set)
    seed_list = G.parse_seeds(seeds)
    if columns is not None and (isinstance(columns, str) or not isinstance(columns, (list, tuple))
                                or not all(isinstance(c, str) for c in columns)):
        raise A.wrong("serq.sweep", "columns", "a list of column names", columns)
    if lists and program.from_ir:
        raise usage(f"{program.path} is IR: its constants are already folded, so its inputs cannot be swept",
                    help="sweep the .sq program")
    # (the program's own trace too: `trace "data/short.csv";` is no table to write over)
    from ..files import read_by
    reads = (program.path, instance, trace, *read_by(program.ir))
    if out is not None:
        out = A.path("serq.sweep", "out", out)
        table_format(out)
        check_place(out, force=A.flag("serq.sweep", "force", force), inputs=reads)
    if jobs is None:
        jobs = backends.cpus()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise usage(f"jobs={jobs!r}: a number of processes ≥ 1")
    pts = G.points(lists, len(seed_list))
    # the workers start (and import the simulator) while the points are linked
    pool = backends.start(jobs, len(pts) * len(seed_list)) if dask is None else None
    bar = None
    try:
        # link every point before running any (serq.sweeps.links: one parse,
        # and a template for the points of one shape where they are many)
        irs = []
        from .. import ir as I
        from ..api.program import set_texts
        from .links import Links
        link = Links(program, [set_texts(point) for point in pts])
        for point in pts:
            p = program.linked(point, link).settings(horizon=horizon, warmup=warmup, arrivals=arrivals,
                                                     trace=trace)
            if p.trace is not None and not os.path.isabs(p.trace):
                p = dataclasses.replace(p, trace=os.path.abspath(p.trace))
            irs.append(I.dumps(p))
    except BaseException:
        if pool is not None:
            backends.stop(pool)       # (a signal while the points link: the workers go now)
        raise
    tasks = [(i * len(seed_list) + j, irs[i], s) for i in range(len(pts)) for j, s in enumerate(seed_list)]
    bar = _bar(len(tasks), progress)
    results = {}
    try:
        for index, row, diags in backends.run(tasks, jobs=jobs, dask_target=dask, pool=pool,
                                              on_done=bar.update if bar else (lambda: None)):
            if diags is not None:
                point = pts[index // len(seed_list)]
                where = " ".join(f"{k}={v}" for k, v in point.items())
                diags[-1].notes.append(f"in the sweep's run {where + ' ' if where else ''}seed "
                                       f"{seed_list[index % len(seed_list)]}")
                raise SerqError(diags)
            if columns and not results:
                from ..tables.table import columns as columns_of
                _has_columns(columns, columns_of([row], [*lists, "seed"]))
            results[index] = row
    finally:
        if bar:
            bar.close()
    rows = []
    for index in range(len(tasks)):
        point = pts[index // len(seed_list)]
        rows.append({**{k: G.column_value(v) for k, v in point.items()}, **results[index]})
    used = min(jobs, len(tasks))      # (the processes a local pool had: never more than the runs)
    where = (f"dask {dask}" if isinstance(dask, str) else "dask") if dask is not None else \
        f"{used} job{'s' if used != 1 else ''}"
    result = Sweep(list(lists), seed_list, rows, seconds=time.perf_counter() - t0, where=where, reads=reads)
    if out is not None:
        result.write(out, force=force)
    return result


def _has_columns(names: list, known: list) -> None:
    """Each of ``names`` is one of ``known`` (a run's columns), else E970 as
    :meth:`Sweep.summary` says it, noting that no other run was finished."""
    from ..api.report import missing
    for name in names:
        if name not in known:
            e = missing("column", name, known)
            e.diagnostics[-1].notes.append("found at the sweep's first finished run; the other runs were stopped")
            raise e


def _bar(total: int, progress: Optional[bool]):
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, file=sys.stderr, unit="run", desc="sweep", leave=False)
