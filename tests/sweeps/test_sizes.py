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
    # one shape: its first link, the template's probe and check; the rest filled in
    assert nf == {"points": 10, "links": 3, "instances": 9}
    sw = serq.sweep(VLLM, grid, seeds=[1], horizon=20, warmup=0, jobs=1)
    assert sw.links == nf
    assert sw.rows == serq.sweep(VLLM, grid, seeds=[1], horizon=20, warmup=0, jobs=1, link_each=True).rows


PD = "examples/pd-disaggregation/llmd_nixl_pull.sq"
ROUTING = "examples/multi-turn/routing.sq"


def _families(p) -> dict:
    out: dict = {}
    for d in list(p.pools) + list(p.stages):
        out[d.name] = out.get(d.name, 0) + 1
    return out


def test_a_familys_size_is_an_input_from_set_an_instance_and_python(tmp_path):
    from click.testing import CliRunner
    from serq.cli import main
    one = serq.load(PD, set={"NP": 1, "ND": 3}).ir
    fam = _families(one)
    assert (fam["P"], fam["P.kv"], fam["P.nic"], fam["D"], fam["D.kv"], fam["D.nic.latency"]) == (1, 1, 1, 3, 3, 3)
    r = CliRunner().invoke(main, ["check", PD, "--set", "NP=1", "--set", "ND=3"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[1] == "  pools    4: P.reqs[1], P.kv[1], D.reqs[3], D.kv[3]"
    inst = tmp_path / "i.sq"
    inst.write_text("run { horizon 50; NP 1; ND 3; }\n")
    r = CliRunner().invoke(main, ["ir", PD, "--instance", str(inst)])
    assert r.exit_code == 0, r.output
    from serq import ir as I
    via_instance = I.loads(r.stdout, "<ir>")
    assert _families(via_instance) == fam and via_instance.horizon == 50.0
    # the replicas of the routing program
    assert _families(serq.load(ROUTING, set={"N": 2}).ir)["R"] == 2


def test_a_sweep_of_np_and_nd_links_each_size_once_and_runs_each(tmp_path):
    grid = {"NP": [1, 2], "ND": [1, 2], "B": [4096, 8192, 16384, 32768]}
    fast, n = _irs(PD, grid, False, horizon=30, warmup=0)
    each, _ = _irs(PD, grid, True, horizon=30, warmup=0)
    assert fast == each
    # four sizes, each its own shape: its first link, the template's probe and check; the rest filled in
    assert n == {"points": 16, "links": 12, "instances": 12}
    sw = serq.sweep(PD, {"NP": [1, 2], "ND": [1, 2]}, seeds=[1], horizon=30, warmup=0, jobs=2,
                    out=str(tmp_path / "pd.csv"))
    assert [(r["NP"], r["ND"]) for r in sw.rows] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    for r in sw.rows:
        assert ("stage.P[1].completed" in r) == (r["NP"] == 2) and ("stage.D[1].completed" in r) == (r["ND"] == 2)
        rep = serq.load(PD, set={"NP": r["NP"], "ND": r["ND"]}).run(horizon=30, warmup=0, seed=1)
        want = {"NP": r["NP"], "ND": r["ND"], **rep.row()}
        assert r.keys() == want.keys() and all(r[k] == want[k] or (r[k] != r[k] and want[k] != want[k]) for k in r)
    cols, rows = serq.read_table(str(tmp_path / "pd.csv"))
    assert rows[0]["stage.P[1].completed"] is None and rows[3]["stage.P[1].completed"] is not None
