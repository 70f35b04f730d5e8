"""A placed figure: the geometry both writers (``svg.py``, ``tikz.py``) draw
and the tests measure.  Coordinates are points, the origin is the top-left
corner, y grows downwards.  No writer decides a coordinate."""

from __future__ import annotations

from dataclasses import field
from typing import Optional

from ..records import dataclass


@dataclass
class FText:
    x: float
    y: float              # the baseline
    text: str
    style: str            # a key of text.STYLES
    anchor: str = "middle"  # middle | start


@dataclass
class FNode:
    id: str
    shape: str
    x: float              # top-left corner
    y: float
    w: float
    h: float
    texts: list[FText]
    title: str
    role: str
    data: dict = field(default_factory=dict)

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass
class FCluster:
    id: str
    kind: str
    x: float
    y: float
    w: float
    h: float
    texts: list[FText]
    title: str
    role: str
    depth: int
    data: dict = field(default_factory=dict)

    def contains(self, n: FNode, tol: float = 0.01) -> bool:
        return (self.x - tol <= n.x and n.x + n.w <= self.x + self.w + tol and
                self.y - tol <= n.y and n.y + n.h <= self.y + self.h + tol)


@dataclass
class FEdge:
    id: str
    src: str
    dst: str
    role: str
    title: str
    points: list[tuple[float, float]]   # a cubic B-spline's control points: 1 + 3k of them
    arrow: Optional[list[tuple[float, float]]]  # the arrowhead's triangle
    texts: list[FText] = field(default_factory=list)
    label_box: Optional[tuple[float, float, float, float]] = None  # x, y, w, h


@dataclass
class FLegend:
    role: str
    x: float
    y: float              # the sample's centre line
    text: FText


@dataclass
class Figure:
    view: str
    width: float
    height: float
    caption: list[FText]
    caption_title: str
    clusters: list[FCluster]     # outer before inner
    edges: list[FEdge]
    nodes: list[FNode]
    legend: list[FLegend] = field(default_factory=list)
    notes: list[FText] = field(default_factory=list)

    def node(self, id: str) -> FNode:
        for n in self.nodes:
            if n.id == id:
                return n
        raise KeyError(id)


def fmt(v: float) -> str:
    """A coordinate as written: at most two decimals, no trailing zeros."""
    s = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def outline(n: FNode) -> list[tuple]:
    """A box's outline as drawing primitives, the same for both writers:
    ``("rect", x, y, w, h, radius)``, ``("circle", cx, cy, r)``,
    ``("ellipse", cx, cy, rx, ry)``, ``("poly", points)`` (closed, filled) and
    ``("line", points)`` (open, stroked only)."""
    x, y, w, h, cx, cy = n.x, n.y, n.w, n.h, n.cx, n.cy
    s = n.shape
    if s == "circle":
        return [("circle", cx, cy, w / 2)]
    if s == "dcircle":
        return [("circle", cx, cy, w / 2), ("ring", cx, cy, w / 2 - 3.0)]
    if s == "ellipse":
        return [("ellipse", cx, cy, w / 2, h / 2)]
    if s == "diamond":
        return [("poly", [(cx, y), (x + w, cy), (cx, y + h), (x, cy)])]
    if s == "hexagon":
        d = min(8.0, w / 4)
        return [("poly", [(x + d, y), (x + w - d, y), (x + w, cy), (x + w - d, y + h), (x + d, y + h), (x, cy)])]
    if s == "note":
        d = 8.0
        return [("poly", [(x, y), (x + w - d, y), (x + w, y + d), (x + w, y + h), (x, y + h)]),
                ("line", [(x + w - d, y), (x + w - d, y + d), (x + w, y + d)])]
    if s == "queue":
        gw, gh = min(w - 8.0, 44.0), 14.0
        gx, gy = cx - gw / 2, y + 3.0
        out: list[tuple] = [("line", [(gx, gy), (gx + gw, gy), (gx + gw, gy + gh), (gx, gy + gh)])]
        for k in (1, 2, 3):
            sx = gx + gw - k * gw / 5
            out.append(("line", [(sx, gy), (sx, gy + gh)]))
        return out
    if s == "rrect":
        return [("rect", x, y, w, h, 6.0)]
    if s == "bar":
        return [("rect", x, y, w, h, 2.0)]
    return [("rect", x, y, w, h, 0.0)]
