#!/usr/bin/env python3
"""Write the parser's tables (serq/syntax/grammar.tables) from the grammar
(serq/syntax/grammar.lark) with the lark installed: what serQ's driver
(serq.syntax.lalr) runs, so that no command imports lark (serq.syntax.tables).
`--check` compares instead of writing (make check runs it): the tables must
be the grammar's; built by the same lark, they must be the same bytes.

    .venv/bin/python tools/gen_parser.py [--check]
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import lark  # noqa: E402

from serq.syntax import tables as T  # noqa: E402

HOW = "run tools/gen_parser.py"


def main(argv) -> int:
    check = "--check" in argv
    grammar = T.read_grammar()
    new = T.tables(grammar)
    rel = os.path.relpath(T.TABLES, ROOT)
    if not check:
        tmp = T.TABLES + ".tmp"
        with open(tmp, "wb") as f:
            f.write(new)
        os.replace(tmp, T.TABLES)
        print(f"wrote {rel} ({len(new)} bytes)")
        return 0
    try:
        with open(T.TABLES, "rb") as f:
            old = f.read()
    except OSError:
        print(f"MISSING: {rel} ({HOW})")
        return 1
    head = old.split(b"\n", 1)[0] + b"\n"
    if head == T.header(grammar, lark.__version__):
        if old != new:
            print(f"STALE: {rel}: not what this grammar and lark build ({HOW})")
            return 1
        print("parser tables: current")
        return 0
    if not head.startswith(T.header(grammar, "").rsplit(b" ", 1)[0] + b" "):
        print(f"STALE: {rel}: built from another grammar ({HOW})")
        return 1
    # the grammar's, built by another lark: commands run them as they are;
    # the tests hold the driver to the lark installed
    print(f"parser tables: the grammar's, built by another lark than {lark.__version__} "
          f"({head.decode().split('lark=')[-1].strip()}); tests/test_parser_tables.py compares the driver "
          f"with this one ({HOW} to build them with it)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
