"""Placing a scene with Graphviz's ``dot`` algorithm.

The engine is ``graphviz-pure`` (a pinned PyPI wheel holding a self-contained
port of Graphviz's ``dot``), run as a subprocess that reads DOT and writes
JSON.  It is given boxes of fixed size and no text to measure: every label is
an empty HTML table of the size ``text.py`` computed, so the layout depends on
the engine's version alone, never on the fonts of the machine.  From the
engine's answer only coordinates are taken (node centres, enclosure boxes,
edge splines, label centres); the writers draw everything themselves.

``SERQ_DRAW_DOT`` names another dot-compatible program (Debian's ``dot``, say)
to use instead; the golden files are made with graphviz-pure.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from typing import Optional

from ..diag import Diagnostic, SerqError
from .figure import FCluster, FEdge, Figure, FLegend, FNode, FText
from .scene import Cluster, Node, Scene
from .text import STYLES, text_width

ENGINE = "graphviz-pure"
ENGINE_VERSION = "0.2.2"
MARGIN = 12.0          # around the figure, pt
CAPTION_GAP = 8.0


def engine_path() -> str:
    """The layout program: ``$SERQ_DRAW_DOT``, else graphviz-pure beside this
    Python (a venv's bin/) or on PATH."""
    override = os.environ.get("SERQ_DRAW_DOT")
    if override:
        found = shutil.which(override)
        if found:
            return found
        raise SerqError(Diagnostic("E960", f"SERQ_DRAW_DOT={override}: no such program"))
    here = os.path.join(os.path.dirname(sys.executable), ENGINE)
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    found = shutil.which(ENGINE)
    if found:
        return found
    raise SerqError(Diagnostic(
        "E960", "`serq draw` needs the layout engine graphviz-pure, which is not installed",
        help=f"pip install {ENGINE}=={ENGINE_VERSION}   (or set SERQ_DRAW_DOT to a Graphviz `dot`)"))


def engine_version() -> str:
    """What the layout program says of its version (``-V``)."""
    r = subprocess.run([engine_path(), "-V"], capture_output=True, text=True, timeout=60)
    return (r.stderr or r.stdout).strip()


def run_engine(dot: str) -> dict:
    exe = engine_path()
    try:
        r = subprocess.run([exe, "-Tjson"], input=dot, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:  # pragma: no cover - a broken install
        raise SerqError(Diagnostic("E961", f"the layout engine {exe} failed: {e}"))
    if r.returncode != 0:
        raise SerqError(Diagnostic("E961", f"the layout engine {exe} failed (exit {r.returncode}): "
                                           f"{r.stderr.strip()[:2000]}"))
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError as e:  # pragma: no cover - a broken install
        raise SerqError(Diagnostic("E961", f"the layout engine {exe} wrote no JSON: {e}"))


# ---------------------------------------------------------------------------
# DOT

_DOT_SHAPE = {
    "rect": "box", "rrect": "box", "note": "box", "queue": "box", "bar": "box",
    "circle": "circle", "dcircle": "circle", "ellipse": "ellipse", "diamond": "diamond",
    "hexagon": "hexagon",
}


def _inches(pt: float) -> str:
    return f"{pt / 72.0:.4f}"


def _table(w: int, h: int) -> str:
    cell = f'FIXEDSIZE="TRUE" WIDTH="{max(w, 1)}" HEIGHT="{max(h, 1)}"'
    return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLPADDING="0" CELLSPACING="0" {cell}>'
            f'<TR><TD {cell}> </TD></TR></TABLE>>')


def to_dot(scene: Scene, newrank: bool = False) -> str:
    out = ["digraph serq {"]
    sep = ("nodesep=0.35, ranksep=0.55" if scene.rankdir == "LR" else "nodesep=0.3, ranksep=0.32")
    out.append(f"  graph [{'newrank=true, ' if newrank else ''}rankdir={scene.rankdir}, compound=true, {sep}, "
               "splines=spline, "
               f"outputorder=edgesfirst, ordering=out];")
    out.append('  node [shape=box, fixedsize=true, label="", margin=0];')
    out.append("  edge [arrowsize=0.8];")

    def node(n: Node, ind: str):
        out.append(f'{ind}{n.id} [shape={_DOT_SHAPE[n.shape]}, width={_inches(n.width)}, '
                   f'height={_inches(n.height)}];')

    def cluster(c: Cluster, ind: str):
        w, h = c.label_size()
        out.append(f"{ind}subgraph cluster_{c.id} {{")
        out.append(f"{ind}  graph [label={_table(w, h)}, labeljust=l, labelloc=t, margin=9];")
        for nid in c.nodes:
            node(scene.nodes[nid], ind + "  ")
        for k in c.children:
            cluster(k, ind + "  ")
        out.append(f"{ind}}}")

    for c in scene.roots:
        cluster(c, "  ")
    for nid in scene.top_nodes:
        node(scene.nodes[nid], "  ")
    for e in scene.edges:
        attrs = [f'id="{e.id}"']
        if e.label:
            w, h = e.label_size()
            attrs.append(f"label={_table(w, h)}")
        if not e.constraint:
            attrs.append("constraint=false")
        if not e.arrow:
            attrs.append("arrowhead=none")
        if e.lhead:
            attrs.append(f"lhead=cluster_{e.lhead}")
        if e.role in ("admit", "memory", "note", "also"):
            attrs.append("weight=0")
        if e.reverse:
            attrs.append("dir=back")
            out.append(f"  {e.dst} -> {e.src} [{', '.join(attrs)}];")
        else:
            out.append(f"  {e.src} -> {e.dst} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# From the engine's answer to a Figure

def _floats(s: str) -> list[float]:
    return [float(x) for x in s.split(",")]


def _baseline(top: float, style: str) -> float:
    size, _, lh = STYLES[style]
    return top + (lh - size) / 2 + size * 0.8


def _stack(lines, x: float, top: float, anchor: str) -> list[FText]:
    out = []
    for text, style in lines:
        out.append(FText(x, _baseline(top, style), text, style, anchor))
        top += STYLES[style][2]
    return out


def _spline(pos: str) -> tuple[list[tuple[float, float]], Optional[tuple[float, float]],
                               Optional[tuple[float, float]]]:
    """Control points, end tip, start tip of a DOT ``pos`` spline (the first
    of several)."""
    part = pos.split(";")[0].split()
    end = start = None
    pts = []
    for tok in part:
        if tok.startswith("e,"):
            x, y = _floats(tok[2:])
            end = (x, y)
        elif tok.startswith("s,"):
            x, y = _floats(tok[2:])
            start = (x, y)
        else:
            x, y = _floats(tok)
            pts.append((x, y))
    return pts, end, start


def _arrowhead(base: tuple[float, float], tip: tuple[float, float]) -> list[tuple[float, float]]:
    dx, dy = tip[0] - base[0], tip[1] - base[1]
    L = math.hypot(dx, dy) or 1.0
    ux, uy = dx / L, dy / L
    half = max(L, 6.0) * 0.36
    return [tip, (base[0] - uy * half, base[1] + ux * half), (base[0] + uy * half, base[1] - ux * half)]


def layout(scene: Scene) -> Figure:
    try:
        data = run_engine(to_dot(scene))
    except SerqError as e:
        # dot's ranking of nested clusters joined by edges that do not
        # constrain the ranks can fail ("trouble in init_rank", Graphviz's
        # own long-standing bug); its global ranking (newrank) lays such a
        # graph out, so the figure is drawn with it instead
        if "trouble in init_rank" not in e.diagnostics[0].message:
            raise
        data = run_engine(to_dot(scene, newrank=True))
    llx, lly, urx, ury = _floats(data["bb"])
    cap_h = sum(STYLES[st][2] for _, st in scene.caption)
    top = MARGIN + cap_h + CAPTION_GAP

    def X(x: float) -> float:
        return round(MARGIN + (x - llx), 2)

    def Y(y: float) -> float:
        return round(top + (ury - y), 2)

    objects = data.get("objects", [])
    by_name = {o["name"]: o for o in objects}

    # enclosures, outer before inner
    clusters: list[FCluster] = []

    def walk(c: Cluster, depth: int):
        o = by_name["cluster_" + c.id]
        x0, y0, x1, y1 = _floats(o["bb"])
        x, y, w, h = X(x0), Y(y1), round(x1 - x0, 2), round(y1 - y0, 2)
        texts = _stack(c.lines, x + 6.0, y + 3.0, "start")
        clusters.append(FCluster(c.id, c.kind, x, y, w, h, texts, c.title, c.role, depth, dict(c.data)))
        for k in c.children:
            walk(k, depth + 1)
    for r in scene.roots:
        walk(r, 0)

    nodes: list[FNode] = []
    for nid, n in scene.nodes.items():
        o = by_name[nid]
        cx, cy = _floats(o["pos"])
        x, y = round(X(cx) - n.width / 2, 2), round(Y(cy) - n.height / 2, 2)
        texts = _stack(n.lines, x + n.width / 2, y + n.text_top, "middle")
        nodes.append(FNode(nid, n.shape, x, y, n.width, n.height, texts, n.title, n.role, dict(n.data)))

    by_id = {e.id: e for e in scene.edges}
    edges: list[FEdge] = []
    for o in data.get("edges", []):
        e = by_id[o["id"]]
        pts, end, start = _spline(o.get("pos", ""))
        points = [(X(px), Y(py)) for px, py in pts]
        arrow = None
        if e.reverse:
            # drawn from dst to src with the arrowhead at the start: turn it round
            points.reverse()
            end = start
        if end is not None and points:
            arrow = _arrowhead(points[-1], (X(end[0]), Y(end[1])))
        texts: list[FText] = []
        box = None
        if e.label and "lp" in o:
            lx, ly = _floats(o["lp"])
            w, h = e.label_size()
            bx, by = X(lx) - w / 2, Y(ly) - h / 2
            box = (round(bx, 2), round(by, 2), float(w), float(h))
            texts = _stack(e.label, X(lx), by + 1.0, "middle")
        edges.append(FEdge(e.id, e.src, e.dst, e.role, e.title, points, arrow, texts, box))
    edges.sort(key=lambda fe: int(fe.id[1:]) if fe.id[1:].isdigit() else 0)

    width = round(MARGIN * 2 + (urx - llx), 2)
    height = top + (ury - lly) + MARGIN
    caption = _stack(scene.caption, MARGIN, MARGIN, "start")

    # the legend: samples in a row under the drawing, wrapped to its width
    legend: list[FLegend] = []
    if scene.legend:
        row_h, sample_w, gap = 14.0, 26.0, 14.0
        avail = max(width - 2 * MARGIN, 320.0)
        x, y = MARGIN, height + 2.0
        for role, label in scene.legend:
            w = sample_w + 5.0 + text_width(label, "s")
            if x > MARGIN and x + w > MARGIN + avail:
                x, y = MARGIN, y + row_h
            legend.append(FLegend(role, round(x, 2), round(y + row_h / 2, 2),
                                  FText(round(x + sample_w + 5.0, 2), round(y + row_h / 2 + 3.0, 2),
                                        label, "s", "start")))
            x += w + gap
        height = y + row_h + MARGIN
        width = max(width, max(lg.text.x + text_width(lg.text.text, "s") for lg in legend) + MARGIN)
    # what the figure could not show: said beside it (`serq draw` on stderr),
    # never drawn in it
    notes = [FText(0.0, 0.0, note, "s", "start") for note in scene.notes]
    width = max(width, MARGIN * 2 + max((text_width(t, s) for t, s in scene.caption), default=0))
    return Figure(scene.view, round(width, 2), round(height, 2), caption, scene.caption_title,
                  clusters, edges, nodes, legend, notes)
