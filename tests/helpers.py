"""Small helpers shared by the front-end tests."""

from serq.link import compile_source

PRE = 'use "std/args";\nfn main() {\n'
POST = '\n}\n'


def link(body: str, **kw):
    """Link a main body (wrapped in `fn main() { … }`)."""
    return compile_source(PRE + body + POST, "t.sq", **kw)


def stmts(p, block=None):
    """The statements of a block (default: the session's), as class names."""
    b = p.blocks[p.session if block is None else block]
    return [type(s).__name__ for s in b.stmts]
