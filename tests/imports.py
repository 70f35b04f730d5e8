"""serq's imports read from its source: every module's, at its top or inside
a function (a deferred import closes a circle as surely), as a graph of
modules and as a graph of serq's packages (tests/test_imports.py,
tests/sim/test_imports.py)."""

from __future__ import annotations

import ast
import os

SERQ = os.path.join(os.path.dirname(__file__), "..", "serq")


def modules(root: str = SERQ, prefix: str = "serq") -> dict:
    """The modules under ``root`` (``serq.sim.pools.pool``, a package itself
    as ``serq.sim``) -> (path, whether it is a package's ``__init__``)."""
    mods = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
                pkg = rel[-1] == "__init__"
                name = ".".join(prefix.split(".") + (rel[:-1] if pkg else rel))
                mods[name] = (os.path.join(d, f), pkg)
    return mods


def imports(name: str, path: str, pkg: bool):
    """The imports of a module, at its top or inside a function, as
    (the absolute module, the names taken from it); a string that is a whole
    module's name under serq (``"serq.sweeps.command"``, imported by name
    with ``importlib``, as the CLI's commands are) is an import too."""
    here = name.split(".") if pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value.startswith("serq.") and node.value.replace(".", "").replace("_", "").isalnum()):
            yield node.value, []
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            yield ".".join(base + (node.module.split(".") if node.module else [])), [a.name for a in node.names]


def import_graph(mods: dict) -> dict:
    """Module -> the modules of ``mods`` it imports.  ``from X import a``
    imports the module X.a when there is one, else X.  That importing a
    submodule runs its package's ``__init__`` first is not an edge: every
    package whose ``__init__`` gathers its submodules would be a circle (a
    package's ``__init__`` that imports what imports the package's modules
    is found in ``package_graph``)."""
    graph = {}
    for name, (path, pkg) in mods.items():
        deps = set()
        for target, names in imports(name, path, pkg):
            if not names:
                deps.add(target)
            for a in names:
                deps.add(f"{target}.{a}" if f"{target}.{a}" in mods else target)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def package_of(module: str) -> str:
    """``serq.sim.pools.pool`` -> ``serq.sim``; a module of serq's top
    (``serq.cli``) is its own; the package ``serq`` itself is ``serq``."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict) -> dict:
    """serq's packages (and its top's modules) -> the others their modules
    import: a layer of serq that imports another, whichever of its modules
    does."""
    out: dict = {}
    for m, deps in graph.items():
        p = package_of(m)
        out.setdefault(p, set()).update(package_of(d) for d in deps)
    return {p: deps - {p} for p, deps in out.items()}


def find_cycle(graph: dict):
    """A circle of imports as a list of nodes, from its least one (repeated
    at its end), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    path = []

    def visit(m):
        colour[m] = GREY
        path.append(m)
        for d in sorted(graph[m]):
            if colour[d] == GREY:
                c = path[path.index(d):]
                k = c.index(min(c))     # from its least node, whatever the search's order
                return c[k:] + c[:k] + [min(c)]
            if colour[d] == WHITE:
                c = visit(d)
                if c:
                    return c
        path.pop()
        colour[m] = BLACK
        return None

    for m in sorted(graph):
        if colour[m] == WHITE:
            c = visit(m)
            if c:
                return c
    return None
