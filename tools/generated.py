"""Generated files: compare what the code generates now with what is
committed (`make check`), or rewrite them (`make golden`, `make oracle-ir`)."""

from __future__ import annotations

import os
import sys


def check_generated(pairs, write: bool, how: str = "regenerate it and review the diff") -> list[str]:
    """For each (path, text): write it, or report it STALE when the file differs."""
    problems = []
    for path, text in pairs:
        if write:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            continue
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except OSError:
            old = None
        if old != text:
            problems.append(f"STALE: {path} ({how})")
    return problems


def report(problems: list[str]) -> int:
    for p in problems:
        print(p, file=sys.stderr)
    return len(problems)
