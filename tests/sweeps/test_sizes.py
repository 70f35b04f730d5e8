"""A sweep links once per shape of its inputs (serq/sweeps/linking.py, the
oracle's serq/link/shapes.py): the same IR, byte for byte, as a full link of
every point, with fewer links."""

import serq
from serq.sweeps import grid as G
from serq.sweeps.linking import link_points

VLLM = "examples/multi-turn/vllm.sq"


def _irs(path, sets, link_each, **kw):
    prog = serq.load(path)
    pts = G.points(G.value_lists(sets))
    return link_points(prog, pts, horizon=kw.get("horizon"), warmup=kw.get("warmup"), arrivals=None, trace=None,
                       link_each=link_each)


def test_a_sweep_links_once_per_shape_to_the_same_ir():
    grid = {"B": [1024, 2048, 4096, 8192, 16384], "blocks": [8000, 16000]}
    fast, nf = _irs(VLLM, grid, False, horizon=20, warmup=0)
    each, ne = _irs(VLLM, grid, True, horizon=20, warmup=0)
    assert fast == each and len(set(fast)) == 10
    assert ne == {"points": 10, "links": 10, "instances": 0}
    # the first point in full, then one shape: its first link, the template's probe and check
    assert nf == {"points": 10, "links": 4, "instances": 8}
    sw = serq.sweep(VLLM, grid, seeds=[1], horizon=20, warmup=0, jobs=1)
    assert sw.links == nf
    assert sw.rows == serq.sweep(VLLM, grid, seeds=[1], horizon=20, warmup=0, jobs=1, link_each=True).rows
