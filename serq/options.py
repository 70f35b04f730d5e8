"""The option types serq's commands share: serq/cli.py's and those it loads
when first asked for (serq/sweeps/command.py, serq/plot/command.py), below
all of them so none imports the command line itself."""

from __future__ import annotations

import math

import click

# `-` where a command writes: stdout, as for every Unix tool
STDOUT = "-"


class Path(click.Path):
    """click's path, refusing an empty one: `--dump ""` (an unset `$DIR`)
    was taken for no option at all, the command ending 0 without the output
    asked for, or for a file named ``""`` (E004)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == "":
            self.fail("an empty path names no file", param, ctx)
        return super().convert(value, param, ctx)


class Out(Path):
    """A path a command writes, a file or (``file_okay=False``) a directory.
    ``-`` is stdout, the one rule of every writing option: where the option
    writes to stdout when left out (``stdout=True``: ``serq draw --out``,
    ``serq mooncake-trace --out``) it is :data:`STDOUT`, for the command to
    write there; anywhere else (a directory, a file beside a report on
    stdout) it is a usage error at the option, ``why`` saying why (``./-``
    names a file called ``-``).  It was a file or a directory named ``-``."""

    def __init__(self, *args, stdout: bool = False, why: str = "", **kw):
        super().__init__(*args, **kw)
        self.stdout = stdout
        self.why = why

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == STDOUT:
            if self.stdout:
                return STDOUT
            kind = "a directory" if not self.file_okay else "a file"
            self.fail(f"- is stdout{self.why}: give {kind} (./- names one called -)", param, ctx)
        return super().convert(value, param, ctx)


def positive(ctx, param, value):
    """A callback: a finite number above 0 (--horizon, --max-seconds)."""
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise click.BadParameter("must be a finite positive number")
    return value


def nonneg(ctx, param, value):
    """A callback: a finite number ≥ 0 (--warmup)."""
    if value is not None and not (value >= 0 and math.isfinite(value)):
        raise click.BadParameter("must be a finite number ≥ 0")
    return value


def seed_value(ctx, param, value):
    """A callback: a seed in serq's one range, 0 to 2^64 − 1."""
    from .ir.model import SEEDS, SEEDS_TEXT
    if value is not None and not 0 <= value < SEEDS:
        raise click.BadParameter(f"a seed is {SEEDS_TEXT}, not {value}")
    return value
