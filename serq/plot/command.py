"""`serq plot`: the click command (registered by serq/cli.py)."""

from __future__ import annotations

import click

from ..options import Path
from ..diag import SerqError


@click.command()
@click.argument("tables", nargs=-1, type=Path(dir_okay=False), metavar="[TABLE]...")
@click.option("--x", "x", metavar="INPUT", help="the table's column on the x axis (an input)")
@click.option("--y", "y", metavar="COLUMN", help="the table's column on the y axis (e.g. client.ttft.mean)")
@click.option("--by", metavar="INPUT", help="one line per value of this input")
@click.option("--where", "where", multiple=True, metavar="INPUT=VALUE", help="keep the rows with this value")
@click.option("--label", "labels", multiple=True, metavar="NAME",
              help="a table's name in the legend, one per TABLE in their order (default: the file's name)")
@click.option("--stat", type=click.Choice(["mean", "median"]), default="mean", show_default=True,
              help="the line: the seeds' mean or median (every seed is a dot, an unstable one a cross)")
@click.option("--samples", "samples", multiple=True, type=Path(dir_okay=False), metavar="DIR/NAME.csv",
              help="an observation's samples (serq run --dump DIR): histogram and CDF; repeat to compare")
@click.option("--gauge", "gauges", multiple=True, type=Path(dir_okay=False), metavar="DIR/gauge/NAME.csv",
              help="a gauge's change points (serq run --dump DIR): a time series; repeat to compare")
@click.option("--bins", type=click.IntRange(min=1, max=10_000), default=40, show_default=True,
              help="histogram bins (at most 10 000)")
@click.option("--logx", is_flag=True, help="a logarithmic x axis")
@click.option("--logy", is_flag=True, help="a logarithmic y axis")
@click.option("--out", required=True, metavar="FIGURE.png|FIGURE.svg", help="where the figure is written")
@click.option("--force", is_flag=True, help="write over an --out file that is not a figure serq plot made")
def plot(tables, x, y, by, where, labels, stat, samples, gauges, bins, logx, logy, out, force):
    """Plot a sweep's TABLE (--x INPUT --y COLUMN [--by INPUT]; several tables
    compared in one plot, each named by a --label), an observation's samples
    (--samples) or a gauge (--gauge); PNG or SVG by --out's extension."""
    from . import gauge, plot_format, samples as plot_samples, save, table as plot_table
    table = list(tables)
    given = [n for n, v in (("TABLE", table), ("--samples", samples), ("--gauge", gauges)) if v]
    if len(given) != 1:
        raise click.UsageError("give one of TABLE, --samples FILE or --gauge FILE" +
                               (f" (not {' and '.join(given)})" if given else ""))
    try:
        plot_format(out)
    except SerqError as e:
        raise click.BadParameter(e.diagnostics[0].message, param_hint="--out")
    from .. import files
    sources = [*table, *samples, *gauges]
    files.check_file(out, what="--out ", mark=files.PLOT, force=force, inputs=sources)
    if table:
        if not x or not y:
            raise click.UsageError("a table's plot needs --x INPUT and --y COLUMN "
                                   "(e.g. --x Lambda --y client.ttft.mean)")
        conds = {}
        for w in where:
            if "=" not in w:
                raise click.BadParameter(f"`{w}` is not INPUT=VALUE", param_hint="--where")
            k, v = w.split("=", 1)
            from ..tables.table import parse_cell
            conds[k.strip()] = parse_cell(v.strip())
        if labels and len(labels) != len(table):
            raise click.BadParameter(f"{len(labels)} label{'s' if len(labels) != 1 else ''} for "
                                     f"{len(table)} table{'s' if len(table) != 1 else ''}: one per TABLE, "
                                     "in their order", param_hint="--label")
        source = table[0] if len(table) == 1 and not labels else table
        fig = plot_table(source, x=x, y=y, by=by, where=conds, logx=logx, logy=logy, stat=stat,
                         labels=list(labels) if labels else None)
    else:
        extra_opts = [n for n, v in (("--x", x), ("--y", y), ("--by", by), ("--where", where),
                                     ("--label", labels)) if v]
        if extra_opts:
            raise click.UsageError(f"{extra_opts[0]} is for a table's plot")
        if samples:
            fig = plot_samples(list(samples) if len(samples) > 1 else samples[0], bins=bins, logx=logx)
        else:
            fig = gauge(list(gauges) if len(gauges) > 1 else gauges[0], logy=logy)
    save(fig, out, force=force, inputs=sources)
    click.echo(f"plot: {out}", err=True)
