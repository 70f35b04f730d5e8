"""An oracle harness's program linked for one input: its inputs and horizon as the harness gives
them, its requests as explicit sessions, once per shape of its inputs (serq.link.shapes) or, with
``linking("each")`` (``serq oracle --link-each``), in full.

A harness is a module of ``serq.oracle`` (``scenario``, ``replay``, ``mooncake``, ``pd``) read
through ``program``, ``inputs``, ``horizon`` and ``with_sessions``; ``serq.oracle.programs`` names
the one each command runs."""

from __future__ import annotations

import os

from ..diag import SerqError


def _root() -> str:
    from ..paths import root
    return root()


def _relroot(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


# The oracle's programs linked once per shape of their inputs (serq.link.shapes),
# one cache per program file for the process; `serq oracle --link-each` (and
# ``linking("each")``) links every scenario in full instead.
_SHAPES: dict = {}
_EACH = [False]


class linking:
    """``with linking("each"):`` links every scenario's program in full (the
    plain path); ``linking("shape")`` once per shape (the default)."""

    def __init__(self, how: str):
        if how not in ("each", "shape"):
            raise ValueError(f"linking is 'each' or 'shape', not {how!r}")
        self.how = how

    def __enter__(self):
        self.before = _EACH[0]
        _EACH[0] = self.how == "each"
        return self

    def __exit__(self, *exc):
        _EACH[0] = self.before
        return False


def shapes(path: str):
    """The shape cache of one oracle program (its ``counts``)."""
    from ..link.shapes import Shapes
    cache = _SHAPES.get(path)
    if cache is None:
        cache = _SHAPES[path] = Shapes(path)
    return cache


def shape_caches(forget: bool = False) -> dict:
    """{program: its shape cache} as they are; ``forget``: and empty them."""
    out = dict(_SHAPES)
    if forget:
        _SHAPES.clear()
    return out


def harness_program(harness, s: dict):
    """A harness's program (``harness.PROGRAM``) compiled for its input: the
    inputs and horizon it gives, its requests as explicit sessions."""
    from ..ir import validate
    from ..link import compile_file
    path = _relroot(os.path.join(_root(), harness.program(s)))
    if not _EACH[0]:
        try:
            p = harness.with_sessions(shapes(path).link(harness.inputs(s), harness.horizon(s)), s)
            validate(p)
            return p
        except SerqError:
            pass        # said as the full link says it
    p = compile_file(path, sets=harness.inputs(s), horizon=harness.horizon(s))
    p = harness.with_sessions(p, s)
    validate(p)
    return p
