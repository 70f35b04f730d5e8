"""The option types serq's commands share: serq/cli.py's and those it loads
when first asked for (serq/sweeps/command.py, serq/plot/command.py), below
all of them so none imports the command line itself."""

from __future__ import annotations

import click


class Path(click.Path):
    """click's path, refusing an empty one: `--dump ""` (an unset `$DIR`)
    was taken for no option at all, the command ending 0 without the output
    asked for, or for a file named ``""`` (E004)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == "":
            self.fail("an empty path names no file", param, ctx)
        return super().convert(value, param, ctx)
