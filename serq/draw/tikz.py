"""Figure -> a standalone LaTeX document with one ``tikzpicture``.

It needs ``standalone`` and ``tikz`` and nothing else (no TikZ library).
Coordinates are the figure's points with y downwards (``y=-1pt``).  Every
element is preceded by a comment naming its source line; every box and
enclosure defines a coordinate (``n-ID``, ``c-ID``) its text is placed from.
The picture between ``\\begin{tikzpicture}`` and ``\\end{tikzpicture}`` can be
``\\input`` into a document that loads tikz.
"""

from __future__ import annotations

from .figure import Figure, FText, fmt, outline
from .style import INK, SOFT, cluster_style, colours, edge_style, node_style
from .svg import legend_sample
from .text import STYLES, tex


def _c(hexa: str) -> str:
    return "sq" + hexa


def _dash(d) -> str:
    return f", dash pattern=on {d[0]}pt off {d[1]}pt" if d else ""


def _p(x: float, y: float) -> str:
    return f"({fmt(x)},{fmt(y)})"


def _font(style: str) -> str:
    size, bold, lh = STYLES[style]
    return f"\\fontsize{{{fmt(size)}}}{{{fmt(lh)}}}\\selectfont\\sffamily" + ("\\bfseries" if bold else "")


def _text(t: FText, colour: str, ref: str = "", ox: float = 0.0, oy: float = 0.0) -> str:
    """A line of text at its baseline; placed from coordinate ``ref`` at
    ``(ox, oy)`` when given."""
    anchor = "base" if t.anchor == "middle" else "base west"
    fill = colour if t.style != "s" or colour != INK else SOFT
    if ref:
        at = f"([xshift={fmt(t.x - ox)}pt, yshift={fmt(-(t.y - oy))}pt]{ref})"
    else:
        at = _p(t.x, t.y)
    return (f"\\node[anchor={anchor}, inner sep=0pt, text={_c(fill)}, font={_font(t.style)}] "
            f"at {at} {{{tex(t.text)}}};")


def _comment(s: str) -> str:
    return "% " + s.replace("\n", " ").encode("ascii", "replace").decode("ascii")


def _shape(prim: tuple, stroke: str, fill: str, width: float, dash) -> str:
    opts = f"draw={_c(stroke)}, line width={fmt(width)}pt{_dash(dash)}"
    k = prim[0]
    if k == "rect":
        _, x, y, w, h, r = prim
        rc = f", rounded corners={fmt(r)}pt" if r else ""
        return f"\\filldraw[{opts}, fill={_c(fill)}{rc}] {_p(x, y)} rectangle {_p(x + w, y + h)};"
    if k == "circle":
        _, cx, cy, r = prim
        return f"\\filldraw[{opts}, fill={_c(fill)}] {_p(cx, cy)} circle[radius={fmt(r)}pt];"
    if k == "ring":
        _, cx, cy, r = prim
        return f"\\draw[{opts}] {_p(cx, cy)} circle[radius={fmt(r)}pt];"
    if k == "ellipse":
        _, cx, cy, rx, ry = prim
        return (f"\\filldraw[{opts}, fill={_c(fill)}] {_p(cx, cy)} "
                f"ellipse[x radius={fmt(rx)}pt, y radius={fmt(ry)}pt];")
    if k == "poly":
        return f"\\filldraw[{opts}, fill={_c(fill)}] " + " -- ".join(_p(x, y) for x, y in prim[1]) + " -- cycle;"
    return f"\\draw[{opts}] " + " -- ".join(_p(x, y) for x, y in prim[1]) + ";"


def _curve(points) -> str:
    out = [_p(*points[0])]
    rest = points[1:]
    for i in range(0, len(rest) - len(rest) % 3, 3):
        out.append(f".. controls {_p(*rest[i])} and {_p(*rest[i + 1])} .. {_p(*rest[i + 2])}")
    return " ".join(out)


def render(fig: Figure) -> str:
    out = [_comment(f"{fig.caption_title} serq draw: {fig.view} view (generated; do not edit)"),
           "\\documentclass{standalone}",
           "\\usepackage{tikz}"]
    for h in colours():
        out.append(f"\\definecolor{{{_c(h)}}}{{HTML}}{{{h}}}")
    out += ["\\begin{document}",
            "\\begin{tikzpicture}[x=1pt, y=-1pt, line join=round, line cap=round]",
            f"\\fill[{_c('FFFFFF')}] (0,0) rectangle {_p(fig.width, fig.height)};",
            _comment(f"{fig.caption_title} the program")]
    out.extend(_text(t, INK) for t in fig.caption)
    for c in fig.clusters:
        stroke, fill, width, dash, op = cluster_style(c.kind)
        ref = f"c-{c.id}"
        out.append(_comment(c.title))
        out.append(f"\\coordinate ({ref}) at {_p(c.x, c.y)};")
        out.append(f"\\filldraw[draw={_c(stroke)}, fill={_c(fill)}, fill opacity={fmt(op)}, "
                   f"line width={fmt(width)}pt{_dash(dash)}, rounded corners=8pt] "
                   f"{_p(c.x, c.y)} rectangle {_p(c.x + c.w, c.y + c.h)};")
        out.extend(_text(t, INK, ref, c.x, c.y) for t in c.texts)
    for e in fig.edges:
        stroke, width, dash = edge_style(e.role)
        out.append(_comment(e.title))
        if e.points:
            out.append(f"\\draw[{_c(stroke)}, line width={fmt(width)}pt{_dash(dash)}] {_curve(e.points)};")
        if e.arrow:
            out.append(f"\\filldraw[{_c(stroke)}, line width=0.6pt] "
                       + " -- ".join(_p(x, y) for x, y in e.arrow) + " -- cycle;")
        if e.label_box:
            x, y, w, h = e.label_box
            out.append(f"\\fill[{_c('FFFFFF')}, fill opacity=0.85] {_p(x, y)} rectangle {_p(x + w, y + h)};")
        out.extend(_text(t, SOFT) for t in e.texts)
    for n in fig.nodes:
        stroke, fill, width, dash, ink = node_style(n.role)
        ref = f"n-{n.id}"
        out.append(_comment(n.title))
        out.append(f"\\coordinate ({ref}) at {_p(n.cx, n.cy)};")
        if n.shape == "queue":
            out.append(f"\\fill[{_c('FFFFFF')}, fill opacity=0.7] {_p(n.x, n.y)} rectangle {_p(n.x + n.w, n.y + n.h)};")
        for prim in outline(n):
            out.append(_shape(prim, stroke, fill, width, dash))
        out.extend(_text(t, ink, ref, n.cx, n.cy) for t in n.texts)
    if fig.legend:
        out.append(_comment("legend: what the lines and boxes mean"))
        for lg in fig.legend:
            for s in legend_sample(lg.role, lg.x, lg.y):
                if s[0] == "box":
                    stroke, fill, width, dash, op = cluster_style(s[1])
                    out.append(f"\\filldraw[draw={_c(stroke)}, fill={_c(fill)}, line width={fmt(width)}pt"
                               f"{_dash(dash)}, rounded corners=3pt] {_p(s[2], s[3])} rectangle "
                               f"{_p(s[2] + s[4], s[3] + s[5])};")
                else:
                    stroke, width, dash = edge_style(s[1])
                    out.append(f"\\draw[{_c(stroke)}, line width={fmt(width)}pt{_dash(dash)}] "
                               f"{_p(s[2], s[4])} -- {_p(s[3], s[4])};")
            out.append(_text(lg.text, SOFT))
    out += ["\\end{tikzpicture}", "\\end{document}"]
    return "\n".join(out) + "\n"
