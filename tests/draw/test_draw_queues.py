"""The deployments a reader should understand at a glance (issue 23): a P/D
program's pools inside their queues and the KV drawn from P to D, a router
where the path picks a family's member, what the figure cannot show said on
stderr (never in it), and `--out x.png` a PNG or refused."""

from __future__ import annotations

import serq
from click.testing import CliRunner

from drawing import bbox, enclosures, groups, inside
from serq.cli import main
from serq.draw import draw, figure, render

PD = "examples/pd-disaggregation/llmd_nixl_pull.sq"
ROUTING = "examples/multi-turn/routing.sq"


def test_a_pd_deployment_is_its_queues_with_their_pools_inside():
    p = serq.load(PD).ir
    fig = figure(p, "deployment")
    kinds = [c.kind for c in fig.clusters]
    assert kinds.count("queue") == 2 and "pool" not in kinds and "hold" not in kinds
    svg = render(p, "deployment", "svg")
    queues = {g.get("id"): bbox(g) for g in enclosures(svg, "queue")}
    # each pool's queue (where its holds wait) is drawn inside its queue's box
    waits = {g.get("id"): bbox(g) for g in groups(svg, "queue") if "enclosure" not in g.get("class")}
    assert set(waits) == {"q0x2", "q4x2", "q6x2"}     # P.reqs, D.reqs, D.kv (P.kv is not waited on)
    assert inside(waits["q0x2"], queues["queue_P"])
    assert inside(waits["q4x2"], queues["queue_D"]) and inside(waits["q6x2"], queues["queue_D"])
    # the queue's label names its pools with their rules
    (qP,) = [c for c in fig.clusters if c.id == "queue_P"]
    assert [t.text for t in qP.texts][:2] == ["queue P[0..1]", "pool P.reqs[0..1] · cap 16 · evict lru · no"]
    assert any(t.text.startswith("pool P.kv[0..1] · cap 160000 · block 16") for t in qP.texts)
    # the KV goes from P to D, the pull said on the arrow
    (rel,) = [e for e in fig.edges if e.role == "relation"]
    assert (fig.node(rel.src).texts[0].text, fig.node(rel.dst).texts[0].text) == ("P[0..1]", "D[0..1]")
    assert " ".join(t.text.strip() for t in rel.texts) == "pull: D reads · latency 0.002 · maxmin"
    # the router's two choices: the decoder, then (on a remote prefill) the prefiller
    routers = [n for n in fig.nodes if n.role == "router"]
    assert [n.texts[0].text for n in routers] == ["router · picks j", "router · picks i"]
    assert any(e.src == "src" and e.dst == routers[0].id for e in fig.edges)
    assert fig.notes == []


def test_a_router_says_which_policy_the_program_runs():
    fig = figure(serq.load(ROUTING).ir, "deployment")
    (r,) = [n for n in fig.nodes if n.role == "router"]
    lines = [t.text for t in r.texts]
    assert lines[0] == "router · picks j"
    assert lines[1] == "this program: j = serial - 4 * floor(serial / 4)"
    assert sum(1 for x in lines if x.startswith("off: ")) == 4
    # the path goes arrivals -> router -> the replicas' queue
    assert {(e.src, e.dst) for e in fig.edges if e.role == "flow"} >= {("src", r.id), (r.id, "q0x4")}
    other = figure(serq.load(ROUTING, set={"policy": 2}).ir, "deployment")
    (r2,) = [n for n in other.nodes if n.role == "router"]
    assert [t.text for t in r2.texts][3:5] == ["this program: choose j in 4 by",
                                               "  (holders(R.reqs[j]) + queued(R.kv[…,"]


CROSSING = """fn main() {
  stage a : fifo;
  stage b : fifo;
  stage c : ps(2);
  pool p { cap 4; }
  pool q { cap 3; }
  workload { arrive poisson(1); turn { set s = 1; } }
  server { hold p (cost(p, 1)) { run a (cost(a, s)); run b (cost(b, s)); }
           hold q (cost(q, 1)) { run b (cost(b, s)); run c (cost(c, s)); } }
}
"""


def test_what_a_figure_cannot_show_is_said_on_stderr_not_in_it(tmp_path):
    prog = tmp_path / "cross.sq"
    prog.write_text(CROSSING)
    text, notes = draw(serq.load(str(prog)).ir, "deployment", "svg")
    assert notes == [f"{prog}:6:3: pool q crosses another enclosure; drawn as a note linked to its stations",
                     f"{prog}:9:12: hold q crosses another enclosure; drawn as a note linked to its stations"]
    assert "crosses another enclosure" not in text
    out = tmp_path / "f.svg"
    r = CliRunner().invoke(main, ["draw", str(prog), "--out", str(out)])
    assert r.exit_code == 0
    assert r.stderr.splitlines() == [f"note: {n}" for n in notes]
    assert out.read_text() == text


def test_out_png_is_a_png_or_refused(tmp_path):
    import matplotlib.image as mpimg
    png = tmp_path / "pd.png"
    r = CliRunner().invoke(main, ["draw", PD, "--out", str(png)])
    assert r.exit_code == 0, r.output
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(str(png))
    fig = figure(serq.load(PD).ir, "deployment")
    from serq.draw.png import DPI
    assert abs(img.shape[0] - fig.height * DPI / 72) <= 1 and abs(img.shape[1] - fig.width * DPI / 72) <= 1
    # it paints the queue boxes' teal (style.CLUSTER["queue"]'s stroke, 0F766E) somewhere
    teal = ((abs(img[:, :, 0] - 0x0F / 255) < 0.06) & (abs(img[:, :, 1] - 0x76 / 255) < 0.06)
            & (abs(img[:, :, 2] - 0x6E / 255) < 0.06))
    assert teal.sum() > 1000
    assert serq.load(PD).draw(fmt="png")[:8] == b"\x89PNG\r\n\x1a\n"
    for args, msg in ((["--out", str(tmp_path / "x.pdf")], "a figure is .svg, .tex or .png"),
                      (["--format", "svg", "--out", str(tmp_path / "y.png")], "--format svg into"),
                      (["--format", "png"], "a PNG is written to a file: give --out FIGURE.png (or --out - for stdout)")):
        r = CliRunner().invoke(main, ["draw", PD, *args])
        assert r.exit_code == 2 and msg in r.output
    assert not (tmp_path / "x.pdf").exists() and not (tmp_path / "y.png").exists()
