"""Instance counts are inputs (issue 23): a family's size from --set, an
instance file, Python and a sweep axis, each size linked again; a shape of a
sweep's inputs (serq.link.shapes, serq.sweeps.links) is keyed by the sizes'
values, so the points of one size are filled in from its template, to the IR
a full link gives."""

import serq
from serq import ir as I
from serq.link import compile_file
from serq.link.shapes import Shapes

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


def test_a_shape_is_keyed_by_the_sizes_so_each_size_has_its_template():
    shapes = Shapes(PD)
    for np_ in (1, 2):
        for b in (4096, 8192, 16384, 32768):
            sets = {"NP": str(np_), "ND": "2", "B": str(b)}
            got = shapes.link(sets, 30.0)
            assert I.dumps(got) == I.dumps(compile_file(PD, sets=sets, horizon=30.0))
    assert shapes.sized == {"NP", "ND"}
    # two sizes, two shapes: each its first link, a probe and a check; the rest filled in
    assert (shapes.counts["shapes"], shapes.counts["links"], shapes.counts["instances"]) == (2, 6, 6)


def test_a_sweep_of_np_and_nd_runs_each_ratio(tmp_path):
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
