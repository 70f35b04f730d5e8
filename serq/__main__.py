"""The `serq` command's process (the console script, and `python -m serq`).

Its imports run under serq/signals.py's handling too: Ctrl-C, SIGTERM or
SIGHUP while the command starts end it as one during its work does (exit
128 + the signal's number, never a traceback)."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .signals import entry
    except KeyboardInterrupt:           # (Ctrl-C before the handling is in place)
        sys.stderr.write("interrupted\n")
        sys.exit(130)

    def command():
        from .cli import main as serq
        serq()
    entry(command)


if __name__ == "__main__":  # pragma: no cover
    main()
