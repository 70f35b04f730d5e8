"""No import circle anywhere in serq/, among its modules or its packages, an
import inside a function included; and its layers go one way: the API
below the oracle's comparisons and the tables, plots reading tables,
sweeps using the API and the plots, the command at the top, its process's
entry above it."""

import pytest

from .imports import find_cycle, import_graph, modules, package_graph

# serq's upper layers, lowest first; a package imports none of a later layer
# (the packages below them — ir, syntax, link, sim, draw, smt, … — import
# none of these at all); the `serq` command's process (serq/__main__.py) on top
LAYERS = [["serq.api"], ["serq.oracle", "serq.tables"], ["serq.plot"], ["serq.sweeps"], ["serq.cli"],
          ["serq.__main__"]]


@pytest.fixture(scope="module")
def graph():
    return import_graph(modules())


def test_the_import_graph_is_read(graph):
    # a relative import, a deferred one (inside a function), `from . import m`,
    # a package's `__init__` and a top module are all read
    assert "serq.smt" in graph["serq.link.engines"]               # `from .. import smt` in chunk_of
    assert "serq.link.entries" in graph["serq.link.exprs"]
    assert "serq.api.program" in graph["serq.sweeps"]
    assert "serq.tables.table" in graph["serq.plot"]
    assert {"serq.oracle.programs", "serq.oracle.campaigns"} <= graph["serq.oracle"]
    assert "serq.api.harness" in graph["serq.oracle.programs"]
    assert "serq.sim.machine" in graph["serq.sim"]
    assert len(graph) > 100
    p = package_graph(graph)
    assert {"serq.api", "serq.plot", "serq.tables"} <= p["serq.sweeps"]
    assert "serq.sweeps" in p["serq.cli"]


def test_no_import_circle_among_serqs_modules(graph):
    assert find_cycle(graph) is None


def test_no_import_circle_among_serqs_packages(graph):
    assert find_cycle(package_graph(graph)) is None


def test_the_layers_go_one_way(graph):
    p = package_graph(graph)
    layer = {pkg: i for i, names in enumerate(LAYERS) for pkg in names}
    upward = sorted((a, b) for a, deps in p.items() for b in deps
                    if b in layer and layer.get(a, -1) <= layer[b] and a != "serq")
    assert upward == []


def test_an_import_circle_would_be_found(graph):
    # the program's sweep method, as it was: serq.api.program -> serq.sweeps
    g = {m: set(d) for m, d in graph.items()}
    g["serq.api.program"].add("serq.sweeps")
    assert find_cycle(g) == ["serq.api.program", "serq.sweeps", "serq.api.program"]
    assert find_cycle(package_graph(g)) == ["serq.api", "serq.sweeps", "serq.api"]
    # the oracle's package re-exporting what the API made of it, as it did
    # (no circle of modules, one of packages)
    g = {m: set(d) for m, d in graph.items()}
    g["serq.api.report"].add("serq.oracle.scenario")
    g["serq.oracle"].add("serq.api.report")
    assert find_cycle(g) is None
    assert find_cycle(package_graph(g)) == ["serq.api", "serq.oracle", "serq.api"]
    # and a plot reading a Sweep, as it did
    g = {m: set(d) for m, d in graph.items()}
    g["serq.plot"].add("serq.sweeps")
    assert find_cycle(package_graph(g)) == ["serq.plot", "serq.sweeps", "serq.plot"]
