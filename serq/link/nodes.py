"""What every part of the linker shares: an IR node's span, a located failure, the AST's names and texts."""

from __future__ import annotations

from typing import Optional

from ..diag import Span, number_text as fmt
from ..ir import model as M
from ..syntax import ast as A
from .env import Env


class LinkAbort(Exception):
    """Raised to abandon one expression after its error was recorded."""


class Nodes:
    """*Part of Linker*: each IR node made with its span (kept, so that its
    id stays its own), a failure that is recorded and abandons the construct,
    a span as the IR's location."""

    def mk(self, node, span: Span):
        self.spans[id(node)] = span
        self.keep.append(node)
        return node

    def num(self, v: float, span: Span):
        return self.mk(M.ENum(float(v)), span)

    def fail(self, code: str, message: str, span: Span, help: Optional[str] = None,
             env: Optional[Env] = None, notes=()):
        notes = list(notes)
        if env is not None:
            for what, at in reversed(env.expansions):
                notes.append(f"in {what}, used at {at}")
        self.diag.add(code, message, span, help, notes)
        raise LinkAbort()

    def loc(self, span: Optional[Span]) -> Optional[M.Loc]:
        if span is None:
            return None
        try:
            f = self.files.index(span.file)
        except ValueError:
            self.files.append(span.file)
            f = len(self.files) - 1
        return M.Loc(f, span.line, span.col)


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


def a_(word: str) -> str:
    """The word with its article: `a stage`, `an attribute`."""
    return ("an " if word[0] in "aeiou" else "a ") + word


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

