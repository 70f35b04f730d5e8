"""Helpers of the draw tests: compiled examples, cached figures, and reading
an SVG back as rectangles."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from functools import lru_cache

from serq.draw import figure, render
from serq.draw.check import SVG_NS
from serq.ir import model as M

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@lru_cache(maxsize=None)
def program(path: str) -> M.Program:
    from serq.link import compile_file
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return compile_file(path)
    finally:
        os.chdir(cwd)


@lru_cache(maxsize=None)
def drawn(path: str, view: str, fmt: str) -> str:
    return render(program(path), view=view, fmt=fmt)


@lru_cache(maxsize=None)
def placed(path: str, view: str):
    return figure(program(path), view)


# ---------------------------------------------------------------- the IR, read independently

def child_blocks(s) -> list[int]:
    t = type(s)
    if t is M.SHold or t is M.SLoop or t is M.SWhile or t is M.SFork:
        return [s.body]
    if t is M.SBranch:
        return [s.then] + ([s.other] if s.other is not None else [])
    return []


def station_of(ref: M.Ref) -> str:
    """The station a stage reference is drawn as: ``st<index>`` for one stage
    or a member named by a number, ``st<base>x<count>`` for a family whose
    member is picked at run time (drawn once)."""
    if ref.index is None:
        return f"st{ref.base}"
    if type(ref.index) is M.ENum:
        return f"st{ref.base + int(ref.index.value)}"
    return f"st{ref.base}x{ref.count}"


def stages_run(p: M.Program, block: int) -> set[str]:
    """The stations that the statements of ``block`` run, through every
    nested block."""
    out: set[str] = set()
    for s in p.blocks[block].stmts:
        if type(s) is M.SRun:
            for ref in (s.stage,) + tuple(s.also):
                out.add(station_of(ref))
        for c in child_blocks(s):
            out |= stages_run(p, c)
    return out


def pool_of(ref: M.Ref) -> tuple[int, ...]:
    """The pools a reference is drawn as: one, or a family picked at run time."""
    if ref.index is None:
        return (ref.base,)
    if type(ref.index) is M.ENum:
        return (ref.base + int(ref.index.value),)
    return tuple(range(ref.base, ref.base + ref.count))


def all_holds(p: M.Program) -> list[tuple[str, M.SHold]]:
    """(``path:line:col``, hold) for every hold reachable from init and the
    session."""
    out = []

    def go(b: int):
        blk = p.blocks[b]
        for s, loc in zip(blk.stmts, blk.locs):
            if type(s) is M.SHold:
                out.append((p.loc_str(loc), s))
            for c in child_blocks(s):
                go(c)
    for root in ([p.init] if p.init is not None else []) + [p.session]:
        go(root)
    return out


def descendants(p: M.Program, block: int) -> set[int]:
    out = {block}
    for s in p.blocks[block].stmts:
        for c in child_blocks(s):
            out |= descendants(p, c)
    return out


# ---------------------------------------------------------------- the SVG, read back

def _num(el, k) -> float:
    return float(el.get(k))


def bbox(g) -> tuple[float, float, float, float]:
    """The box of an element group's first shape: x, y, w, h."""
    for el in g:
        tag = el.tag[len(SVG_NS):]
        if tag == "rect":
            return _num(el, "x"), _num(el, "y"), _num(el, "width"), _num(el, "height")
        if tag == "circle":
            r = _num(el, "r")
            return _num(el, "cx") - r, _num(el, "cy") - r, 2 * r, 2 * r
        if tag == "ellipse":
            rx, ry = _num(el, "rx"), _num(el, "ry")
            return _num(el, "cx") - rx, _num(el, "cy") - ry, 2 * rx, 2 * ry
        if tag in ("polygon", "polyline"):
            pts = [tuple(float(v) for v in pt.split(",")) for pt in el.get("points").split()]
            xs, ys = [x for x, _ in pts], [y for _, y in pts]
            return min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)
    raise AssertionError(f"no shape in <g id={g.get('id')}>")


def inside(inner, outer, tol=0.01) -> bool:
    x, y, w, h = inner
    X, Y, W, H = outer
    return X - tol <= x and x + w <= X + W + tol and Y - tol <= y and y + h <= Y + H + tol


def groups(svg: str, cls: str) -> list:
    root = ET.fromstring(svg.encode("utf-8"))
    return [g for g in root.iter(SVG_NS + "g") if cls in g.get("class", "").split()]


def texts(svg: str) -> str:
    root = ET.fromstring(svg.encode("utf-8"))
    return "\n".join((t.text or "") for t in root.iter(SVG_NS + "text"))


def enclosures(svg: str, kind: str) -> list:
    """The enclosure groups of one kind (pool, hold, server, init)."""
    return [g for g in groups(svg, "enclosure") if kind in g.get("class", "").split()]
