"""Colours and strokes, shared by the SVG and TikZ writers so both formats
look alike.  A style is picked by the first of an element's roles (its
space-separated classes) that has one."""

from __future__ import annotations

INK = "111827"
SOFT = "374151"

# name -> (stroke, fill, stroke width pt, dash (on, off) or None, text colour)
NODE = [
    ("unreached", ("94A3B8", "F8FAFC", 1.0, (3, 2), "64748B")),
    ("placeholder", ("94A3B8", "FFFFFF", 0.8, (3, 2), "64748B")),
    ("note", ("A16207", "FEF9C3", 1.0, None, INK)),
    ("step", ("1D4ED8", "DBEAFE", 1.8, None, INK)),
    ("router", ("0E7490", "ECFEFF", 1.5, None, INK)),
    ("workload", ("047857", "ECFDF5", 1.3, None, INK)),
    ("delay", ("334155", "F8FAFC", 1.3, None, INK)),
    ("fifo", ("1F2937", "FFFFFF", 1.4, None, INK)),
    ("ps", ("1F2937", "FFFFFF", 1.4, None, INK)),
    ("queue", ("92400E", "FFFFFF", 1.2, None, INK)),
    ("source", ("475569", "F1F5F9", 1.2, None, INK)),
    ("sink", ("475569", "F1F5F9", 1.2, None, INK)),
    ("turn", ("15803D", "DCFCE7", 1.3, None, INK)),
    ("branch", ("C2410C", "FFF7ED", 1.2, None, INK)),
    ("while", ("C2410C", "FFF7ED", 1.2, None, INK)),
    ("loop", ("C2410C", "FFF7ED", 1.2, None, INK)),
    ("end", ("111827", "1F2937", 1.2, None, "FFFFFF")),
    ("fork", ("111827", "1F2937", 1.0, None, "FFFFFF")),
    ("join", ("111827", "1F2937", 1.0, None, "FFFFFF")),
    ("server", ("1D4ED8", "E0ECFF", 1.1, None, INK)),
    ("client", ("334155", "FFFFFF", 1.1, None, INK)),
]
NODE_DEFAULT = ("334155", "FFFFFF", 1.1, None, INK)

# enclosures: (stroke, fill, stroke width, dash, fill opacity)
CLUSTER = {
    "pool": ("B45309", "FFFBEB", 1.4, (6, 3), 0.75),
    "hold": ("7C3AED", "F5F3FF", 1.2, None, 0.75),
    "server": ("1D4ED8", "EFF6FF", 1.1, (4, 3), 0.6),
    "init": ("64748B", "F8FAFC", 1.0, (2, 2), 0.6),
    "queue": ("0F766E", "F0FDFA", 1.6, None, 0.55),
    "router": ("0E7490", "ECFEFF", 1.5, None, 1.0),     # a router's node, as the legend shows it
}
CLUSTER_DEFAULT = ("64748B", "FFFFFF", 1.0, None, 0.5)

# edges: (stroke, width, dash)
EDGE = {
    "flow": ("334155", 1.2, None),
    "back": ("C2410C", 1.2, None),
    "fork": ("7C3AED", 1.2, (5, 3)),
    "admit": ("1D4ED8", 1.1, (2, 2)),
    "memory": ("B45309", 1.1, (2, 2)),
    "also": ("64748B", 1.1, (4, 2)),
    "note": ("A16207", 0.9, (1, 2)),
    "relation": ("0F766E", 1.5, (6, 2)),
}


def node_style(role: str):
    classes = role.split()
    for name, st in NODE:
        if name in classes:
            return st
    return NODE_DEFAULT


def cluster_style(kind: str):
    return CLUSTER.get(kind, CLUSTER_DEFAULT)


def edge_style(role: str):
    return EDGE.get(role, EDGE["flow"])


def colours() -> list[str]:
    """Every colour used, sorted (the TikZ writer defines each once)."""
    out = {INK, SOFT, "FFFFFF", "92400E"}
    for _, st in NODE:
        out.update((st[0], st[1], st[4]))
    out.update((NODE_DEFAULT[0], NODE_DEFAULT[1], NODE_DEFAULT[4]))
    for st in list(CLUSTER.values()) + [CLUSTER_DEFAULT]:
        out.update((st[0], st[1]))
    for st in EDGE.values():
        out.add(st[0])
    return sorted(out)
