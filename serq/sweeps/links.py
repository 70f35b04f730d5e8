"""How a sweep links its points: each is the program linked with the
point's inputs, as ``Program.set`` links it, the program's syntax trees
parsed once for them all; and where many points differ only in whole-number
inputs (one *shape*, serq.link.shapes), those points are made from one
template instead of each linked, as the oracle makes its scenarios.  A
shape's template costs three links (its first point's, a probe and a check),
so it is made only for a shape of at least ``TEMPLATE_FROM`` points; an
instance is the IR a full link gives, byte for byte (tests/sweeps)."""

from __future__ import annotations

import os
from collections import Counter

from ..link import compile_source
from ..link.shapes import Shapes

TEMPLATE_FROM = 4


class Links:
    """``link(text, path, sets)`` for ``Program.linked``: the IR of the
    program at ``path`` with the inputs ``sets`` (all of them, the point's
    and the program's own), for the sweep of ``program`` over ``points``
    (each the point's inputs as ``Program.set`` texts)."""

    def __init__(self, program, points: list):
        self.parsed: dict = {}
        self.shapes = None
        self.many: set = set()
        text = program._text
        if program.from_ir or text is None or not os.path.isfile(program.path) or not points:
            return
        try:
            with open(program.path, encoding="utf-8") as f:
                if f.read() != text:       # the file changed since the program was read
                    return
        except (OSError, UnicodeDecodeError):
            return
        counts = Counter(Shapes.shape({**program.sets, **p}, None) for p in points)
        self.many = {k for k, n in counts.items() if n >= TEMPLATE_FROM}
        if self.many:
            self.shapes = Shapes(program.path)
            self.parsed = self.shapes.parsed

    def __call__(self, text: str, path: str, sets: dict):
        if self.shapes is not None and Shapes.shape(sets, None) in self.many:
            return self.shapes.link(sets, None)
        return compile_source(text, path, sets=sets, parsed=self.parsed)
