"""The simulator reads the IR and nothing else: it never imports the front end."""

import ast
import os
import subprocess
import sys

SIM = os.path.join(os.path.dirname(__file__), "..", "..", "serq", "sim")


def test_no_front_end_import_in_source():
    for name, (path, pkg) in sorted(_sim_modules().items()):
        for target, names in _imports(name, path, pkg):
            for m in [target] + [f"{target}.{a}" for a in names]:
                assert not (m.startswith("serq.syntax") or m.startswith("serq.link")), (name, m)


def test_no_front_end_module_loaded():
    code = ("import sys, serq.sim, serq.sim.machine; "
            "bad = [m for m in sys.modules if m.startswith(('serq.syntax', 'serq.link'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr


# -- no import circle among serq.sim's modules -------------------------------

def _sim_modules() -> dict:
    """serq.sim's modules (``serq.sim.pools.pool``, the package itself as
    ``serq.sim``) -> (path, whether it is a package's ``__init__``)."""
    mods = {}
    for d, _, files in os.walk(SIM):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), SIM)[:-3].split(os.sep)
                pkg = rel[-1] == "__init__"
                name = ".".join(["serq", "sim"] + (rel[:-1] if pkg else rel))
                mods[name] = (os.path.join(d, f), pkg)
    return mods


def _imports(name: str, path: str, pkg: bool):
    """The imports of a module, at its top or inside a function, as
    (the absolute module, the names taken from it)."""
    here = name.split(".") if pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            yield ".".join(base + (node.module.split(".") if node.module else [])), [a.name for a in node.names]


def import_graph() -> dict:
    """Module -> the serq.sim modules it imports, at its top or inside a
    function (a deferred import closes a circle as surely).  ``from X import
    a`` imports the module X.a when there is one, else X.  That importing a
    submodule runs its package's ``__init__`` first is not an edge: every
    package whose ``__init__`` gathers its submodules would be a circle."""
    mods = _sim_modules()
    graph = {}
    for name, (path, pkg) in mods.items():
        deps = set()
        for target, names in _imports(name, path, pkg):
            if not names:
                deps.add(target)
            for a in names:
                deps.add(f"{target}.{a}" if f"{target}.{a}" in mods else target)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def find_cycle(graph: dict):
    """A circle of imports as a list of modules, from its least one (repeated
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
                k = c.index(min(c))     # from its least module, whatever the search's order
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


def test_the_import_graph_is_read():
    g = import_graph()
    # what the graph must show if it is read at all: the machine's parts
    # (a package import, a relative `from . import`, a pools' module)
    assert {"serq.sim.codegen", "serq.sim.interp", "serq.sim.pools", "serq.sim.rng",
            "serq.sim.workload"} <= g["serq.sim.machine"]
    assert "serq.sim.pools.pool" in g["serq.sim.pools.growth"]
    assert g["serq.sim.pools"] == {"serq.sim.pools." + m for m in
                                   ("admission", "evict", "growth", "pool", "prefix", "release")}
    # the deferred import in simulate() is an edge
    assert "serq.sim.machine" in g["serq.sim"]


def test_no_import_circle_in_the_simulator():
    assert find_cycle(import_graph()) is None


def test_an_import_circle_would_be_found():
    # codegen importing the machine (as it did once, inside a function)
    g = import_graph()
    g["serq.sim.codegen"] = g["serq.sim.codegen"] | {"serq.sim.machine"}
    assert find_cycle(g) == ["serq.sim.codegen", "serq.sim.machine", "serq.sim.codegen"]
    # and a longer one through the pools
    g = import_graph()
    g["serq.sim.pools.pool"] = g["serq.sim.pools.pool"] | {"serq.sim.pools.growth"}
    assert find_cycle(g) == ["serq.sim.pools.growth", "serq.sim.pools.pool", "serq.sim.pools.growth"]
