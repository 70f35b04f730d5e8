"""`serq draw`: a program's deployment and session as figures, from the IR.

    render(program, view="deployment" | "session", fmt="svg" | "tikz") -> str

A view builds a :class:`~serq.draw.scene.Scene` (boxes, enclosures, edges,
each naming its source line); ``layout.py`` places it with Graphviz's dot
algorithm (the ``graphviz-pure`` engine) into a
:class:`~serq.draw.figure.Figure`; ``svg.py`` and ``tikz.py`` write that
figure.  The same IR gives the same bytes: nothing depends on the clock, a
hash seed or the machine's fonts.  Reads the IR only.
"""

from __future__ import annotations

from ..ir.model import Program
from .figure import Figure

VIEWS = ("deployment", "session")
FORMATS = ("svg", "tikz", "png")
# the format a figure's file name says (serq draw --out, Drawing.save)
EXTENSIONS = {".svg": "svg", ".tex": "tikz", ".png": "png"}

__all__ = ["render", "draw", "figure", "build_scene", "VIEWS", "FORMATS", "EXTENSIONS"]


def build_scene(program: Program, view: str = "deployment"):
    if view == "deployment":
        from .deployment import scene as build
    elif view == "session":
        from .session import scene as build
    else:
        raise ValueError(f"unknown view {view!r}; one of {', '.join(VIEWS)}")
    return build(program)


def figure(program: Program, view: str = "deployment") -> Figure:
    """The placed figure of ``view`` (what the writers draw and tests measure)."""
    from .layout import layout
    return layout(build_scene(program, view))


def render(program: Program, view: str = "deployment", fmt: str = "svg"):
    """The figure of ``view`` as an SVG document or a standalone TikZ document
    (text), or a PNG image (bytes; needs matplotlib, the extra ``serq[plot]``)."""
    return draw(program, view, fmt)[0]


def draw(program: Program, view: str = "deployment", fmt: str = "svg") -> tuple:
    """``(the figure as render gives it, its notes)``: the notes are what the
    figure could not show (an enclosure that crosses another, drawn as a
    note), said beside the figure rather than in it."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    fig = figure(program, view)
    if fmt == "svg":
        from .svg import render as write
    elif fmt == "tikz":
        from .tikz import render as write
    else:
        from .png import render as write
    return write(fig), [t.text for t in fig.notes]
