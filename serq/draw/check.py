"""Sanity checks of drawn figures, for the tests and `tools/draw_check.py`.

* an SVG must be well-formed XML whose every element group (node, enclosure,
  edge, caption) opens with a ``<title>`` naming a source line
  ``path:line:col``;
* a TikZ document must be a standalone document with one tikzpicture, braces
  balanced, every colour and every coordinate it refers to defined, ASCII
  only outside comments, and no TeX special character left bare in a text.

LaTeX itself is not needed; where ``pdflatex`` exists the tests compile too.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"
LOC = re.compile(r"^\S+:\d+:\d+ ")
GROUP_CLASSES = ("node", "enclosure", "edge", "caption")


def svg_problems(text: str) -> list[str]:
    out: list[str] = []
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as e:
        return [f"not XML: {e}"]
    if root.tag != SVG_NS + "svg":
        out.append(f"the root is {root.tag}, not svg")
    for attr in ("width", "height", "viewBox"):
        if attr not in root.attrib:
            out.append(f"the svg has no {attr}")
    n = 0
    for g in root.iter(SVG_NS + "g"):
        cls = g.get("class", "").split()
        if not cls or cls[0] not in GROUP_CLASSES:
            continue
        n += 1
        kids = list(g)
        if not kids or kids[0].tag != SVG_NS + "title":
            out.append(f"<g id={g.get('id')!r} class={g.get('class')!r}> has no <title> first")
            continue
        title = kids[0].text or ""
        if not LOC.match(title):
            out.append(f"<g id={g.get('id')!r}>: title {title!r} names no source line")
    if n == 0:
        out.append("no element groups")
    return out


def _strip_comment(line: str) -> str:
    i = 0
    while True:
        j = line.find("%", i)
        if j < 0:
            return line
        if j > 0 and line[j - 1] == "\\":
            i = j + 1
            continue
        return line[:j]


_ESCAPED = re.compile(r"\\[{}$&#%_]|\\text[a-z]+\{\}|\\ldots\{\}")
_MATH = re.compile(r"\$[^$]*\$")


def tikz_problems(text: str) -> list[str]:
    out: list[str] = []
    lines = text.split("\n")
    body = [_strip_comment(l) for l in lines]
    code = "\n".join(body)
    first = next((l for l in body if l.strip()), "")
    if first.strip() != "\\documentclass{standalone}":
        out.append(f"the first line of code is {first!r}, not \\documentclass{{standalone}}")
    if "\\usepackage{tikz}" not in code:
        out.append("tikz is not loaded")
    for env in ("document", "tikzpicture"):
        b, e = code.count(f"\\begin{{{env}}}"), code.count(f"\\end{{{env}}}")
        if b != 1 or e != 1:
            out.append(f"{env}: {b} begin and {e} end")
    if code.find("\\begin{tikzpicture}") < code.find("\\begin{document}"):
        out.append("the picture starts before the document")
    # braces, ignoring escaped ones
    depth = 0
    for no, l in enumerate(body, 1):
        s = l.replace("\\{", "").replace("\\}", "")
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < 0:
                    out.append(f"line {no}: unbalanced }}")
                    depth = 0
    if depth != 0:
        out.append(f"{depth} brace(s) left open")
    for no, l in enumerate(body, 1):
        if any(ord(ch) > 126 for ch in l):
            out.append(f"line {no}: a non-ASCII character outside a comment")
        m = re.match(r"(\\node\[.*?\] at \(.*?\)) \{.*\};$", l)
        path = m.group(1) if m else l  # a text may hold anything
        if path.count("(") != path.count(")"):
            out.append(f"line {no}: unbalanced parentheses")
    # colours and coordinates
    colours = set(re.findall(r"\\definecolor\{(\w+)\}\{HTML\}\{[0-9A-F]{6}\}", code))
    for c in sorted(set(re.findall(r"\bsq[0-9A-F]{6}\b", code)) - colours):
        out.append(f"colour {c} is used but not defined")
    defined = re.findall(r"\\coordinate \(([\w-]+)\)", code)
    dup = sorted({d for d in defined if defined.count(d) > 1})
    if dup:
        out.append(f"coordinates defined twice: {', '.join(dup)}")
    for ref in sorted(set(re.findall(r"\]([A-Za-z][\w-]*)\)", code)) - set(defined)):
        out.append(f"coordinate {ref} is referenced but not defined")
    # text of nodes: no bare special character
    for no, l in enumerate(body, 1):
        m = re.match(r"\\node\[.*?\] at \(.*?\) \{(.*)\};$", l)
        if not m:
            continue
        t = _MATH.sub("", _ESCAPED.sub("", m.group(1)))
        if "$" in t:
            out.append(f"line {no}: unbalanced $")
        bad = sorted(set(t) & set("_#%&^~$<>|\\"))
        if bad:
            out.append(f"line {no}: bare {''.join(bad)} in a text")
    return out
