"""How a sweep links its points: once per shape of their inputs
(``serq.link.shapes``, the oracle's fast path), under the run's settings as
``serq run`` resolves them (the instance read, the settings checked once):
the points of one shape are its first one's IR with its numbers filled in,
checked against full links as ``Shapes`` checks every template.  An input that
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
    shapes = None if link_each else _shapes(program)
    if shapes is None:
        return [finish(full(point)) for point in pts], counts
    # the run's settings, from the program as given (its instance read, checked once)
    base_ir = program.settings(horizon=horizon, warmup=warmup, arrivals=arrivals, trace=trace)
    base = program
    if program.instance is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")       # said once already, by the settings above
            base = program._default_instance(horizon, warmup, None)
    settings = {k: getattr(base_ir, k) for k in ("warmup", "seed", "arrivals", "trace")}
    irs = []
    for point in pts:
        before = dict(shapes.counts)
        p = shapes.link({**base.sets, **point}, base_ir.horizon)
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
