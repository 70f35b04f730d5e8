"""What the linker's modules share: the failure that abandons a construct, the AST's names and texts."""

from __future__ import annotations

import math
from typing import Optional

from ..syntax import ast as A


class LinkAbort(Exception):
    """Raised to abandon one expression after its error was recorded."""


def head_name(a) -> Optional[str]:
    if isinstance(a, A.Name):
        return a.name
    if isinstance(a, A.Index) and isinstance(a.obj, A.Name):
        return a.obj.name
    if isinstance(a, A.Ref) and len(a.parts) == 1:
        return a.parts[0].name
    return None


def text_of(e) -> str:
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Dot):
        return f"{text_of(e.obj)}.{e.attr}"
    if isinstance(e, A.Index):
        return f"{text_of(e.obj)}[…]"
    if isinstance(e, A.Ref):
        return e.text()
    return "…"


def fmt(v: float) -> str:
    if math.isfinite(v) and v == math.floor(v):
        return str(int(v))
    return str(v)


def names_read(node) -> dict:
    """How many times each bare name is read in an AST subtree."""
    counts: dict[str, int] = {}

    def visit(x):
        if isinstance(x, A.Name):
            counts[x.name] = counts.get(x.name, 0) + 1
            return
        if isinstance(x, A.RefPart):
            counts[x.name] = counts.get(x.name, 0) + 1
            if x.index is not None:
                visit(x.index)
            return
        if isinstance(x, list):
            for y in x:
                visit(y)
            return
        if isinstance(x, tuple):
            for y in x:
                visit(y)
            return
        if isinstance(x, A.Node):
            for k, v in vars(x).items():
                if k in ("span", "name_span"):
                    continue
                if isinstance(v, (A.Node, list, tuple)):
                    visit(v)

    visit(node)
    return counts

