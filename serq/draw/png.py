"""Figure -> PNG, painted with matplotlib (the extra ``serq[plot]``) from the
same placed geometry the SVG and TikZ writers draw (``figure.py``, the
styles of ``style.py``): nothing here decides a coordinate.  A point of the
figure is a point of the image (72 to the inch), rendered at ``DPI``.

The bytes depend on matplotlib's version and its bundled font (DejaVu Sans),
so PNGs are not golden files; ``tests/draw/test_png.py`` reads the image
back and checks what it paints."""

from __future__ import annotations

import io

from .figure import Figure, FNode, FText, outline
from .style import INK, SOFT, cluster_style, edge_style, node_style
from .svg import legend_sample
from .text import STYLES

DPI = 144


def render(fig: Figure) -> bytes:
    """The PNG's bytes.  matplotlib is the caller's to have checked (``serq
    draw`` and ``Program.draw`` say which extra installs it)."""
    from ..signals import imported
    MFigure = imported("matplotlib.figure").Figure
    FigureCanvasAgg = imported("matplotlib.backends.backend_agg").FigureCanvasAgg

    W, H = max(fig.width, 1.0), max(fig.height, 1.0)
    m = MFigure(figsize=(W / 72.0, H / 72.0), dpi=DPI)
    FigureCanvasAgg(m)
    ax = m.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, W)
    ax.set_ylim(H, 0)
    ax.set_axis_off()
    p = _Painter(ax)
    p.rect(0, 0, W, H, 0, "FFFFFF", "FFFFFF", 0, None, z=0)
    for t in fig.caption:
        p.text(t, INK, z=1)
    for c in fig.clusters:
        stroke, fill, width, dash, op = cluster_style(c.kind)
        p.rect(c.x, c.y, c.w, c.h, 8.0, stroke, fill, width, dash, alpha=op, z=1 + c.depth * 0.01)
        for t in c.texts:
            p.text(t, INK, z=2)
    for e in fig.edges:
        stroke, width, dash = edge_style(e.role)
        p.spline(e.points, stroke, width, dash, z=3)
        if e.arrow:
            p.poly(e.arrow, stroke, stroke, 0.6, None, z=3)
        if e.label_box:
            x, y, w, h = e.label_box
            p.rect(x, y, w, h, 0, None, "FFFFFF", 0, None, alpha=0.85, z=3.5)
        for t in e.texts:
            p.text(t, SOFT, z=3.6)
    for n in fig.nodes:
        _node(p, n)
    for lg in fig.legend:
        for s in legend_sample(lg.role, lg.x, lg.y):
            if s[0] == "box":
                stroke, fill, width, dash, _ = cluster_style(s[1])
                p.rect(s[2], s[3], s[4], s[5], 3.0, stroke, fill, width, dash, z=5)
            else:
                stroke, width, dash = edge_style(s[1])
                p.spline([(s[2], s[4]), (s[2], s[4]), (s[3], s[4]), (s[3], s[4])], stroke, width, dash, z=5)
        p.text(lg.text, SOFT, z=5)
    buf = io.BytesIO()
    # the title names serq draw, as the SVG's does: how a later serq draw
    # knows the file at --out for its own (serq/files.py's DRAW)
    m.savefig(buf, format="png", dpi=DPI,
              metadata={"Software": None, "Title": f"{fig.caption_title} serq draw: {fig.view} view"})
    return buf.getvalue()


def _node(p: "_Painter", n: FNode) -> None:
    stroke, fill, width, dash, ink = node_style(n.role)
    if n.shape == "queue":
        p.rect(n.x, n.y, n.w, n.h, 0, None, "FFFFFF", 0, None, alpha=0.7, z=4)
    for prim in outline(n):
        k = prim[0]
        if k == "rect":
            _, x, y, w, h, r = prim
            p.rect(x, y, w, h, r, stroke, fill, width, dash, z=4)
        elif k in ("circle", "ring"):
            _, cx, cy, r = prim
            p.ellipse(cx, cy, r, r, stroke, fill if k == "circle" else None, width, dash, z=4)
        elif k == "ellipse":
            _, cx, cy, rx, ry = prim
            p.ellipse(cx, cy, rx, ry, stroke, fill, width, dash, z=4)
        elif k == "poly":
            p.poly(prim[1], stroke, fill, width, dash, z=4)
        else:
            p.line(prim[1], stroke, width, dash, z=4)
    for t in n.texts:
        p.text(t, ink, z=4.5)


class _Painter:
    """matplotlib patches in the figure's units (points, y down)."""

    def __init__(self, ax):
        self.ax = ax

    @staticmethod
    def _c(hex6):
        return None if hex6 is None else "#" + hex6

    @staticmethod
    def _dash(dash, width):
        # matplotlib scales a dash pattern by the line width; the figure's is in points
        if not dash or not width:
            return "solid"
        return (0, (dash[0] / width, dash[1] / width))

    def rect(self, x, y, w, h, r, stroke, fill, width, dash, alpha=1.0, z=1.0):
        from matplotlib.patches import FancyBboxPatch
        r = min(r, w / 2, h / 2)
        box = "round,pad=0,rounding_size=%g" % r if r else "square,pad=0"
        if fill is not None and alpha < 1.0:
            self.ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=box, facecolor=self._c(fill), alpha=alpha,
                                             edgecolor="none", linewidth=0, zorder=z))
            fill = None
        self.ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=box, facecolor=self._c(fill) or "none",
                                         edgecolor=self._c(stroke) or "none", linewidth=width,
                                         linestyle=self._dash(dash, width), zorder=z))

    def ellipse(self, cx, cy, rx, ry, stroke, fill, width, dash, z=1.0):
        from matplotlib.patches import Ellipse
        self.ax.add_patch(Ellipse((cx, cy), 2 * rx, 2 * ry, facecolor=self._c(fill) or "none",
                                  edgecolor=self._c(stroke), linewidth=width, linestyle=self._dash(dash, width),
                                  zorder=z))

    def poly(self, pts, stroke, fill, width, dash, z=1.0):
        from matplotlib.patches import Polygon
        self.ax.add_patch(Polygon(list(pts), closed=True, facecolor=self._c(fill) or "none",
                                  edgecolor=self._c(stroke), linewidth=width, linestyle=self._dash(dash, width),
                                  zorder=z))

    def line(self, pts, stroke, width, dash, z=1.0):
        xs, ys = zip(*pts)
        self.ax.plot(xs, ys, color=self._c(stroke), linewidth=width, linestyle=self._dash(dash, width), zorder=z,
                     solid_capstyle="butt")

    def spline(self, pts, stroke, width, dash, z=1.0):
        from matplotlib.patches import PathPatch
        from matplotlib.path import Path
        if not pts:
            return
        verts, codes = [pts[0]], [Path.MOVETO]
        rest = pts[1:]
        for i in range(0, len(rest) - len(rest) % 3, 3):
            verts += [rest[i], rest[i + 1], rest[i + 2]]
            codes += [Path.CURVE4] * 3
        self.ax.add_patch(PathPatch(Path(verts, codes), facecolor="none", edgecolor=self._c(stroke),
                                    linewidth=width, linestyle=self._dash(dash, width), zorder=z))

    def text(self, t: FText, colour: str, z=1.0):
        size, bold, _ = STYLES[t.style]
        fill = colour if t.style != "s" or colour != INK else SOFT
        self.ax.text(t.x, t.y, t.text, fontsize=size, fontweight="bold" if bold else "normal",
                     ha="center" if t.anchor == "middle" else "left", va="baseline", color=self._c(fill),
                     zorder=z, fontfamily="DejaVu Sans")
