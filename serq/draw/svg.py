"""Figure -> standalone SVG.

Every element is a ``<g>`` whose first child is a ``<title>`` naming its
source line (``path:line:col``, then what it is): a browser shows it as the
tooltip.  Colours are presentation attributes (no CSS, no ``var()``), so
librsvg, cairosvg and browsers paint the same thing.  ``data-*`` attributes
carry what a test needs (a hold's stations, a station's stages).
"""

from __future__ import annotations

from .figure import Figure, FNode, FText, fmt, outline
from .style import INK, SOFT, cluster_style, edge_style, node_style
from .text import STYLES, xml

FONT = "Helvetica, Arial, 'Liberation Sans', 'DejaVu Sans', sans-serif"


def _dash(d) -> str:
    return f' stroke-dasharray="{d[0]} {d[1]}"' if d else ""


def _text(t: FText, colour: str) -> str:
    size, bold, _ = STYLES[t.style]
    weight = ' font-weight="bold"' if bold else ""
    anchor = "middle" if t.anchor == "middle" else "start"
    fill = colour if t.style != "s" or colour != INK else SOFT
    return (f'<text x="{fmt(t.x)}" y="{fmt(t.y)}" font-size="{fmt(size)}"{weight} '
            f'text-anchor="{anchor}" fill="#{fill}">{xml(t.text)}</text>')


def _data(d: dict) -> str:
    return "".join(f' data-{k}="{xml(str(v))}"' for k, v in sorted(d.items()))


def _pts(points) -> str:
    return " ".join(f"{fmt(x)},{fmt(y)}" for x, y in points)


def _shape(prim: tuple, stroke: str, fill: str, width: float, dash) -> str:
    common = f'stroke="#{stroke}" stroke-width="{fmt(width)}"{_dash(dash)}'
    k = prim[0]
    if k == "rect":
        _, x, y, w, h, r = prim
        rr = f' rx="{fmt(r)}"' if r else ""
        return f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}"{rr} fill="#{fill}" {common}/>'
    if k == "circle":
        _, cx, cy, r = prim
        return f'<circle cx="{fmt(cx)}" cy="{fmt(cy)}" r="{fmt(r)}" fill="#{fill}" {common}/>'
    if k == "ring":
        _, cx, cy, r = prim
        return f'<circle cx="{fmt(cx)}" cy="{fmt(cy)}" r="{fmt(r)}" fill="none" {common}/>'
    if k == "ellipse":
        _, cx, cy, rx, ry = prim
        return (f'<ellipse cx="{fmt(cx)}" cy="{fmt(cy)}" rx="{fmt(rx)}" ry="{fmt(ry)}" '
                f'fill="#{fill}" {common}/>')
    if k == "poly":
        return f'<polygon points="{_pts(prim[1])}" fill="#{fill}" {common}/>'
    return f'<polyline points="{_pts(prim[1])}" fill="none" {common}/>'


def _node(n: FNode) -> list[str]:
    stroke, fill, width, dash, ink = node_style(n.role)
    out = [f'<g id="{xml(n.id)}" class="node {xml(n.role)}"{_data(n.data)}>',
           f"<title>{xml(n.title)}</title>"]
    if n.shape == "queue":
        out.append(f'<rect x="{fmt(n.x)}" y="{fmt(n.y)}" width="{fmt(n.w)}" height="{fmt(n.h)}" '
                   f'fill="#FFFFFF" fill-opacity="0.7" stroke="none"/>')
    for prim in outline(n):
        out.append(_shape(prim, stroke, fill, width, dash))
    out.extend(_text(t, ink) for t in n.texts)
    out.append("</g>")
    return out


def _path(points) -> str:
    if not points:
        return ""
    d = [f"M{fmt(points[0][0])},{fmt(points[0][1])}"]
    rest = points[1:]
    for i in range(0, len(rest) - len(rest) % 3, 3):
        (a, b), (c, e), (f, g) = rest[i], rest[i + 1], rest[i + 2]
        d.append(f"C{fmt(a)},{fmt(b)} {fmt(c)},{fmt(e)} {fmt(f)},{fmt(g)}")
    return " ".join(d)


def legend_sample(role: str, x: float, y: float) -> list[tuple]:
    """What a legend entry draws, as ("edge", role, x0, x1, y) or
    ("box", kind, x, y, w, h)."""
    if role in ("pool", "hold", "server", "init", "queue", "router"):
        return [("box", role, x, y - 5.0, 26.0, 10.0)]
    return [("edge", role, x, x + 26.0, y)]


def render(fig: Figure) -> str:
    W, H = fmt(fig.width), fmt(fig.height)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'font-family="{FONT}">',
           f"<title>{xml(fig.caption_title)} serq draw: {fig.view} view</title>",
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="#FFFFFF"/>',
           f'<g class="caption"><title>{xml(fig.caption_title)} the program</title>']
    out.extend(_text(t, INK) for t in fig.caption)
    out.append("</g>")
    for c in fig.clusters:
        stroke, fill, width, dash, op = cluster_style(c.kind)
        out.append(f'<g id="{xml(c.id)}" class="enclosure {xml(c.kind)}" data-depth="{c.depth}"{_data(c.data)}>')
        out.append(f"<title>{xml(c.title)}</title>")
        out.append(f'<rect x="{fmt(c.x)}" y="{fmt(c.y)}" width="{fmt(c.w)}" height="{fmt(c.h)}" rx="8" '
                   f'fill="#{fill}" fill-opacity="{fmt(op)}" stroke="#{stroke}" stroke-width="{fmt(width)}"'
                   f'{_dash(dash)}/>')
        out.extend(_text(t, INK) for t in c.texts)
        out.append("</g>")
    for e in fig.edges:
        stroke, width, dash = edge_style(e.role)
        out.append(f'<g id="{xml(e.id)}" class="edge {xml(e.role)}" data-src="{xml(e.src)}" '
                   f'data-dst="{xml(e.dst)}">')
        out.append(f"<title>{xml(e.title)}</title>")
        out.append(f'<path d="{_path(e.points)}" fill="none" stroke="#{stroke}" stroke-width="{fmt(width)}"'
                   f'{_dash(dash)}/>')
        if e.arrow:
            out.append(f'<polygon points="{_pts(e.arrow)}" fill="#{stroke}" stroke="#{stroke}" '
                       f'stroke-width="0.6"/>')
        if e.label_box:
            x, y, w, h = e.label_box
            out.append(f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}" fill="#FFFFFF" '
                       f'fill-opacity="0.85" stroke="none"/>')
        out.extend(_text(t, SOFT) for t in e.texts)
        out.append("</g>")
    for n in fig.nodes:
        out.extend(_node(n))
    if fig.legend:
        out.append('<g class="legend"><title>legend: what the lines and boxes mean</title>')
        for lg in fig.legend:
            for s in legend_sample(lg.role, lg.x, lg.y):
                if s[0] == "box":
                    stroke, fill, width, dash, op = cluster_style(s[1])
                    out.append(f'<rect x="{fmt(s[2])}" y="{fmt(s[3])}" width="{fmt(s[4])}" height="{fmt(s[5])}" '
                               f'rx="3" fill="#{fill}" stroke="#{stroke}" stroke-width="{fmt(width)}"{_dash(dash)}/>')
                else:
                    stroke, width, dash = edge_style(s[1])
                    out.append(f'<line x1="{fmt(s[2])}" y1="{fmt(s[4])}" x2="{fmt(s[3])}" y2="{fmt(s[4])}" '
                               f'stroke="#{stroke}" stroke-width="{fmt(width)}"{_dash(dash)}/>')
            out.append(_text(lg.text, SOFT))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
