"""What the mutators start from: every example program, its tokens, its
numbers, and its IR as JSON data.  Paths are relative to the repository's
root, which the harness runs in (an example's `use` and trace paths are)."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from tools.examples import programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A token of the language, roughly: a string, a comment, a name, a number,
# a two-character operator or any other character.
TOKEN = re.compile(r'"[^"\n]*"|//[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\d+\.?\d*(?:[eE][+-]?\d+)?'
                   r'|==|!=|<=|>=|&&|\|\||\S')

# The short run of a linked example: long enough that its sessions arrive,
# queue and finish (the papers run on their own clocks).
HORIZON = {
    "examples/papers/dai_sarathi.sq": 2e5,
    "examples/papers/dai_fastertransformer.sq": 2e5,
    "examples/papers/bari_rad.sq": 2e5,
    "examples/papers/kong_svf.sq": 2e3,
}
DEFAULT_HORIZON = 10.0


def horizon(path: str) -> float:
    return HORIZON.get(path, DEFAULT_HORIZON)


@lru_cache(maxsize=None)
def examples() -> tuple[str, ...]:
    """Every example program (tools/examples.py: a library or an instance file is not one)."""
    return tuple(programs())


@lru_cache(maxsize=None)
def source(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


@lru_cache(maxsize=None)
def tokens(path: str) -> tuple[tuple[int, int, str], ...]:
    """The program's tokens (comments left out) as (start, end, text)."""
    return tuple((m.start(), m.end(), m.group()) for m in TOKEN.finditer(source(path))
                 if not m.group().startswith("//"))


@lru_cache(maxsize=None)
def all_tokens() -> tuple[str, ...]:
    """Every distinct token of every example, for insertion."""
    return tuple(sorted({t for p in examples() for _, _, t in tokens(p)}))


@lru_cache(maxsize=None)
def lines(path: str) -> tuple[str, ...]:
    """The program's non-blank lines: fragments to paste elsewhere."""
    return tuple(ln for ln in source(path).split("\n") if ln.strip())


@lru_cache(maxsize=None)
def numbers(path: str) -> tuple[tuple[int, int], ...]:
    """The spans of the program's numeric literals."""
    return tuple((a, b) for a, b, t in tokens(path) if t[0].isdigit())


@lru_cache(maxsize=None)
def ir_data(path: str):
    """The example linked for a short run, as the IR's JSON data (a fresh
    copy is the caller's to make)."""
    from serq.ir import to_data
    from serq.link import compile_source
    return to_data(compile_source(source(path), path, horizon=horizon(path), warmup=0.0))


@lru_cache(maxsize=None)
def ir_strings() -> tuple[str, ...]:
    """Every string in every example's IR (tags, names, operators), for
    swapping one for another."""
    out = set()

    def visit(x):
        if isinstance(x, str):
            out.add(x)
        elif isinstance(x, list):
            for y in x:
                visit(y)
        elif isinstance(x, dict):
            for k, v in x.items():
                out.add(k)
                visit(v)
    for p in examples():
        visit(ir_data(p))
    return tuple(sorted(out))
