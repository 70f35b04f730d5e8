"""The simulator reads the IR and nothing else: it never imports the front end."""

import os
import subprocess
import sys

from ..imports import find_cycle, import_graph as _graph, imports as _imports, modules

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
    return modules(SIM, "serq.sim")


def import_graph() -> dict:
    """Module -> the serq.sim modules it imports, at its top or inside a
    function (tests/imports.py)."""
    return _graph(_sim_modules())


def test_the_import_graph_is_read():
    g = import_graph()
    # what the graph must show if it is read at all: the machine's parts
    # (a package import, a relative `from . import`, a pools' module)
    assert {"serq.sim.codegen", "serq.sim.interp", "serq.sim.pools", "serq.sim.rng",
            "serq.sim.workload"} <= g["serq.sim.machine"]
    assert "serq.sim.pools.pool" in g["serq.sim.pools.growth"]
    assert g["serq.sim.pools"] == {"serq.sim.pools." + m for m in
                                   ("admission", "evict", "growth", "pool", "prefix", "release", "runs", "tree")}
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
