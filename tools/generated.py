"""Generated files: compare what the code generates now with what is
committed (`make check`), or rewrite them (`make golden`, `make oracle-ir`).

Rewriting writes every file or none: a file that is there and was not
generated from the same source (``source``) stops it, and each file is
written whole (serq.files)."""

from __future__ import annotations

import json
import os
import sys


def _read(path: str):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def check_generated(pairs, write: bool, how: str = "regenerate it and review the diff", source=None) -> list[str]:
    """For each (path, text): report it STALE when the file differs, or
    (``write``) write them all.  ``source(path, old, new)`` says why the file
    there was not generated from the source ``new`` is (None: it was)."""
    if not write:
        return [f"STALE: {path} ({how})" for path, text in pairs if _read(path) != text]
    problems = []
    for path, text in pairs:
        old = _read(path)
        if old is not None and old != text and source is not None:
            why = source(path, old, text)
            if why:
                problems.append(f"REFUSED: {path}: {why}; nothing written")
    if problems:
        return problems
    from serq.files import CHECKED, write_file
    for path, text in pairs:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        write_file(path, text, what="", mark=CHECKED)
    return []


def same_program(path: str, old: str, new: str):
    """An IR file there is one of the same program (its first source file)."""
    try:
        was = json.loads(old)["files"][:1]
    except (ValueError, KeyError, TypeError):
        return "it is not an IR file"
    now = json.loads(new)["files"][:1]
    if was != now:
        return f"it is the IR of {was[0] if was else 'no program'}, not of {now[0]}"
    return None


def report(problems: list[str]) -> int:
    for p in problems:
        print(p, file=sys.stderr)
    return len(problems)
