"""lark as the reference of serQ's parser driver (serq.syntax.lalr): the
outcome of parsing a text from a start rule, by lark's parser built from the
grammar and by the driver from the tables, each as plain data to compare —
a tree with every node's rule, children and places (the containers'
included) and every token's terminal, text and place; or an error with its
token or character, its place and the terminals expected."""

from __future__ import annotations

from functools import lru_cache

from serq.syntax import lalr, tables as T

PLACES = ("empty", "line", "column", "start_pos", "end_line", "end_column", "end_pos",
          "container_line", "container_column", "container_start_pos",
          "container_end_line", "container_end_column", "container_end_pos")
_NONE = "<unset>"


@lru_cache(maxsize=None)
def lark_parser():
    return T.build_lark(T.read_grammar())


@lru_cache(maxsize=None)
def driver() -> lalr.Parser:
    return lalr.Parser(T.load())


def _token(t) -> tuple:
    return ("token", t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos)


def shape(x):
    """A tree (lark's or the driver's) as nested tuples; no recursion."""
    out: list = []
    stack = [(x, out)]
    while stack:
        node, into = stack.pop()
        if node is None:
            into.append(None)
        elif hasattr(node, "data"):
            kids: list = []
            into.append(("tree", node.data, tuple(getattr(node.meta, a, _NONE) for a in PLACES), kids))
            for c in reversed(node.children):
                stack.append((c, kids))
        else:
            into.append(_token(node))
    return out[0]


def by_lark(text: str, start: str):
    import lark
    try:
        return shape(lark_parser().parse(text, start=start))
    except lark.exceptions.UnexpectedToken as e:
        return ("unexpected token", _token(e.token), sorted(e.expected))
    except lark.exceptions.UnexpectedCharacters as e:
        return ("unexpected character", e.pos_in_stream, e.line, e.column, sorted(e.allowed))


def by_driver(text: str, start: str):
    try:
        return shape(driver().parse(text, start))
    except lalr.UnexpectedToken as e:
        return ("unexpected token", _token(e.token), sorted(e.expected))
    except lalr.UnexpectedCharacters as e:
        return ("unexpected character", e.pos_in_stream, e.line, e.column, sorted(e.allowed))


def differences(text: str, starts=T.START) -> list:
    """[(start rule, lark's outcome, the driver's)] where they differ."""
    out = []
    for start in starts:
        a, b = by_lark(text, start), by_driver(text, start)
        if a != b:
            out.append((start, a, b))
    return out
