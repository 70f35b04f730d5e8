"""A view's graph before layout: boxes with their text, nested enclosures and
edges.  A view (``deployment``, ``session``) builds a :class:`Scene`; the
layout (``layout.py``) places it and gives a :class:`~serq.draw.figure.Figure`.

Every box, enclosure and edge carries ``title``: the source line it stands
for (``path:line:col``) followed by what it is, which both writers emit as
the element's tooltip / comment.
"""

from __future__ import annotations

from dataclasses import field
from typing import Optional

from ..records import dataclass
from .text import STYLES, block_size

Line = tuple[str, str]  # (text, style): style a key of text.STYLES

# Padding around a box's text, pt.
PAD_X = 8.0
PAD_Y = 5.0


@dataclass
class Node:
    id: str
    shape: str            # rect rrect circle ellipse diamond hexagon queue bar dcircle note
    lines: list[Line]
    title: str
    role: str             # space-separated classes: "station step", "queue", "stmt server", …
    data: dict = field(default_factory=dict)  # data-* attributes (tests read them)
    width: float = 0.0    # pt, set by size()
    height: float = 0.0
    text_top: float = 0.0  # where the text block starts below the box's top, pt

    def size(self) -> "Node":
        tw, th = block_size(self.lines)
        s = self.shape
        if s in ("circle", "dcircle"):
            d = max((tw ** 2 + th ** 2) ** 0.5 + 10.0, 34.0)
            self.width = self.height = d
            self.text_top = (d - th) / 2
        elif s == "ellipse":
            self.width, self.height = tw * 1.3 + 16.0, max(th * 1.5 + 6.0, 28.0)
            self.text_top = (self.height - th) / 2
        elif s == "diamond":
            self.width, self.height = tw * 1.6 + 24.0, th * 2.0 + 14.0
            self.text_top = (self.height - th) / 2
        elif s == "hexagon":
            self.width, self.height = tw + 2 * PAD_X + 16.0, th + 2 * PAD_Y
            self.text_top = PAD_Y
        elif s == "queue":
            # the queue glyph (an open box with slots) above the text
            glyph = 16.0
            self.width = max(tw + 2 * PAD_X, 52.0)
            self.height = glyph + 4.0 + th + PAD_Y
            self.text_top = glyph + 4.0
        elif s == "bar":
            self.width, self.height = max(tw + 2 * PAD_X, 60.0), max(th + 4.0, 8.0)
            self.text_top = (self.height - th) / 2
        else:  # rect rrect note
            self.width, self.height = tw + 2 * PAD_X, th + 2 * PAD_Y
            self.text_top = PAD_Y
        self.width = round(self.width + 0.49)
        self.height = round(self.height + 0.49)
        return self


@dataclass
class Cluster:
    id: str
    kind: str             # pool hold server init …
    lines: list[Line]
    title: str
    role: str
    nodes: list[str] = field(default_factory=list)
    children: list["Cluster"] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def label_size(self) -> tuple[int, int]:
        tw, th = block_size(self.lines)
        return int(round(tw + 2 * 6.0 + 0.49)), int(round(th + 4.0 + 0.49))


@dataclass
class Edge:
    id: str
    src: str
    dst: str
    title: str
    role: str = "flow"    # flow fork admit memory also note
    label: list[Line] = field(default_factory=list)
    constraint: bool = True
    arrow: bool = True
    lhead: Optional[str] = None  # a cluster id the edge ends at the border of
    reverse: bool = False  # laid out as dst -> src (a loop's back edge keeps the body downstream)

    def label_size(self) -> tuple[int, int]:
        tw, th = block_size(self.label)
        return int(round(tw + 4.0 + 0.49)), int(round(th + 2.0 + 0.49))


@dataclass
class Scene:
    view: str
    rankdir: str          # LR or TB
    caption: list[Line]
    caption_title: str
    nodes: dict[str, Node] = field(default_factory=dict)
    roots: list[Cluster] = field(default_factory=list)   # top-level enclosures
    top_nodes: list[str] = field(default_factory=list)   # nodes in no enclosure
    edges: list[Edge] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (role, text)
    notes: list[str] = field(default_factory=list)       # what the figure could not show

    def add_node(self, node: Node, parent: Optional[Cluster]) -> Node:
        assert node.id not in self.nodes, node.id
        self.nodes[node.id] = node.size()
        (parent.nodes if parent is not None else self.top_nodes).append(node.id)
        return node

    def clusters(self) -> list[Cluster]:
        """Every enclosure, parents before children, in creation order."""
        out: list[Cluster] = []

        def go(c: Cluster):
            out.append(c)
            for k in c.children:
                go(k)
        for r in self.roots:
            go(r)
        return out


def line_height(style: str) -> float:
    return STYLES[style][2]
