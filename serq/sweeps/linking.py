"""How a sweep links its points: the first in full, as ``serq run`` would
(its instance read, its settings checked), the others once per shape of
their inputs (``serq.link.shapes``, the oracle's fast path): the points of
one shape are the first one's IR with its numbers filled in, checked
against full links as ``Shapes`` checks every template.  An input that
sizes a family (`queue D[ND]`, `pool kv[N]`) is part of the shape: each size
is linked again, once.  Every IR is the one a full link of that point
gives, byte for byte (``tests/sweeps/test_sizes.py`` holds it to that);
``link_each=True`` is the plain path, every point linked in full."""

from __future__ import annotations

import dataclasses
import os
import warnings


def link_points(program, pts: list, *, horizon, warmup, arrivals, trace, link_each: bool = False):
    """``(irs, counts)``: each point's IR as canonical JSON, in order, and
    ``{"points", "links", "instances"}`` (full links, and IRs filled in
    from a shape's template)."""
    from .. import ir as I
    counts = {"points": len(pts), "links": 0, "instances": 0}

    def finish(p):
        if p.trace is not None and not os.path.isabs(p.trace):
            p = dataclasses.replace(p, trace=os.path.abspath(p.trace))
        return I.dumps(p)

    def full(point):
        counts["links"] += 1
        return program.linked(point).settings(horizon=horizon, warmup=warmup, arrivals=arrivals, trace=trace)

    if not pts:
        return [], counts
    first = full(pts[0])
    irs = [finish(first)]
    shapes = None if link_each or len(pts) == 1 else _shapes(program)
    if shapes is None:
        irs += [finish(full(point)) for point in pts[1:]]
        return irs, counts
    base = program
    if program.instance is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # said once already, by the first point's settings
            base = program._default_instance(horizon, warmup, None)
    settings = {k: getattr(first, k) for k in ("warmup", "seed", "arrivals", "trace")}
    for point in pts[1:]:
        before = dict(shapes.counts)
        p = shapes.link({**base.sets, **point}, first.horizon)
        counts["links"] += shapes.counts["links"] - before["links"]
        counts["instances"] += shapes.counts["instances"] - before["instances"]
        p = dataclasses.replace(p, **settings)
        I.validate(p)
        irs.append(finish(p))
    return irs, counts


def _shapes(program):
    """A ``Shapes`` for the program's file, when the program is that file's
    text (not a string given to ``serq.loads``, nor IR)."""
    from ..diag import SerqError, read_text
    from ..link.shapes import Shapes
    if program.from_ir or not os.path.isfile(program.path):
        return None
    try:
        if read_text(program.path) != program._text:
            return None
    except SerqError:
        return None
    return Shapes(program.path)
