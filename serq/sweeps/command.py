"""`serq sweep`: the click command (registered by serq/cli.py)."""

from __future__ import annotations

import sys

import click

from ..options import Path, nonneg, positive
from ..diag import SerqError


def _bad(e: SerqError, hint: str) -> click.BadParameter:
    d = e.diagnostics[0]
    return click.BadParameter(d.message + (f" ({d.help})" if d.help else ""), param_hint=hint)


class _notes:
    """What the Python API warns of (a ``UserWarning``: the instance's warm-up
    not used, …) said as ``serq run`` says it, ``note: …`` on stderr, once
    each; it was Python's warning, its file, line and source line."""

    def __enter__(self):
        import warnings
        self.said = set()
        self.saved = warnings.catch_warnings()
        self.saved.__enter__()
        warnings.simplefilter("always", UserWarning)
        shown = warnings.showwarning

        def show(message, category, *rest, **kw):
            if not issubclass(category, UserWarning):
                return shown(message, category, *rest, **kw)
            if str(message) not in self.said:
                self.said.add(str(message))
                click.echo(f"note: {message}", err=True)
        warnings.showwarning = show
        return self

    def __exit__(self, *exc):
        return self.saved.__exit__(*exc)


@click.command()
@click.argument("file", type=Path(dir_okay=False))
@click.option("--set", "sets", multiple=True, metavar="NAME=V1,V2,…",
              help="an input's values (commas outside parentheses separate them); repeat for a grid")
@click.option("--seeds", default="1", show_default=True, metavar="SEEDS",
              help="the seeds of every point: 1-5, 1,3,7 or 1-3,10")
@click.option("--horizon", type=float, callback=positive, help="each run's length (default: the instance's)")
@click.option("--warmup", type=float, callback=nonneg,
              help="time discarded before recording (default: the instance's)")
@click.option("--instance", type=Path(dir_okay=False),
              help="an instance file (default: the program's, instances/NAME.sq beside it)")
@click.option("--arrivals", type=click.IntRange(min=1), help="run exactly N arrivals and drain")
@click.option("--trace", type=Path(dir_okay=False), help="replace the program's trace")
@click.option("--jobs", type=click.IntRange(min=1), help="processes (default: every core); with "
              "--dask local, the cluster's workers")
@click.option("--dask", "dask_target", metavar="ADDRESS|local",
              help="run on a Dask cluster: a scheduler's address, or `local` for a LocalCluster")
@click.option("--out", required=True, metavar="TABLE.csv|TABLE.parquet|-",
              help="the table, one row per point and seed (`-`: CSV on stdout, no summary)")
@click.option("--show", "show", multiple=True, metavar="COLUMN",
              help="a column to summarise across seeds (default: the observes' means, the client's "
                   "TTFT, the pools' preemptions)")
@click.option("--under", "unders", multiple=True, metavar="COLUMN=VALUE",
              help="per point, how many seeds keep COLUMN under VALUE (e.g. client.ttft.p95=0.5)")
@click.option("--force", is_flag=True, help="write over a --out file that is not a table a sweep wrote")
def sweep(file, sets, seeds, horizon, warmup, instance, arrivals, trace, jobs, dask_target, out, show, unders,
          force):
    """Run FILE at every combination of the --set values on every seed; write
    the table and print, per point, the spread across seeds (mean, interval,
    median, least, greatest) and how many seeds were unstable."""
    from . import grid as G, sweep as run_sweep
    from ..tables.table import check_place, table_format
    try:
        lists = G.value_lists(G.cli_sets(sets))
    except SerqError as e:
        raise _bad(e, "--set")
    try:
        seed_list = G.parse_seeds(seeds)
    except SerqError as e:
        raise _bad(e, "--seeds")
    if out != "-":
        try:
            table_format(out)
        except SerqError as e:
            raise _bad(e, "--out")
    from ..tables.summary import parse_under
    bounds = []
    for u in unders:
        b = parse_under(u)
        if b is None:
            raise click.BadParameter(f"`{u}` is not COLUMN=NUMBER", param_hint="--under")
        bounds.append(b)
    if file.endswith(".json") and instance:
        raise click.UsageError("--instance is refused on an IR file: it holds its settings; "
                               "give --horizon, --warmup, --arrivals or --trace")
    if horizon is None and instance is None and not file.endswith(".json"):
        from ..instance import default_for, default_path
        if default_for(file) is None:
            raise click.UsageError(
                "no horizon: a model says what the deployment is, the run says how long. Give "
                "--horizon T (and --warmup), or an instance file with --instance FILE "
                f"(`run {{ horizon T; warmup W; }}`); `{default_path(file)}` would be this program's "
                "default instance")
    if dask_target is not None and dask_target != "local" and jobs is not None:
        raise click.UsageError("--jobs sizes a local pool or --dask local; a running Dask cluster has "
                               "the workers it has")
    if lists and file.endswith(".json"):
        raise click.UsageError("--set is refused on an IR file: its constants are already folded; "
                               "give --set to the .sq program")
    from ..api.program import load
    program = load(file, instance=instance)
    if out != "-":
        from ..files import read_by
        check_place(out, force=force, inputs=[file, trace, instance, *read_by(program.ir)])
    with _notes():
        result = run_sweep(program, lists, seeds=seed_list, horizon=horizon, warmup=warmup, arrivals=arrivals,
                           trace=trace, jobs=jobs, dask=dask_target, columns=[*show, *(b[0] for b in bounds)])
    if out == "-":
        click.echo(result.csv(), nl=False)
    else:
        from ..signals import landing
        with landing():           # once the table is in place, a signal no longer stops the sweep
            result.write(out, force=force)
        text = result.text(list(show) if show else None, under=bounds)
        if text:
            click.echo(text)
    pts = len(result.rows) // len(result.seeds)
    click.echo(f"sweep: {pts} point{'s' if pts != 1 else ''} × {len(result.seeds)} "
               f"seed{'s' if len(result.seeds) != 1 else ''} = {len(result.rows)} runs in "
               f"{result.seconds:.1f} s ({result.where})" + (f"; table {out}" if out != "-" else ""),
               err=True)
    sys.exit(0)
