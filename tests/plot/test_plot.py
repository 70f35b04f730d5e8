"""Plots: their structure (axes, labels, series, the numbers drawn), not their pixels."""

import math
import os

import pytest
from click.testing import CliRunner

import serq
from serq.cli import main
from serq.tables.spread import spread

pytest.importorskip("matplotlib")

VLLM = "examples/multi-turn/vllm.sq"
MG1 = "examples/single-turn/mg1.sq"
GAUGED = """use "std/args";
fn main() {
  stage svc : fifo;
  workload { arrive poisson(0.8); turn { set s = ~exp(1); } }
  server { set t0 = now; run svc (cost(svc, s)); observe sojourn = now - t0; }
  gauge in_queue = queue(svc);
}
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "t.csv"
    sw = serq.sweep(VLLM, {"Lambda": [0.3, 0.6, 0.9], "B": [2048, 4096]}, seeds="1-3", horizon=40,
                    warmup=4, jobs=2, out=str(path))
    return sw, str(path)


def test_a_metric_against_an_input_one_line_per_by(table):
    sw, path = table
    fig = serq.plot.table(path, x="Lambda", y="client.ttft.mean", by="B")
    (ax,) = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Lambda", "client.ttft.mean")
    assert ax.get_title() == "client.ttft.mean against Lambda: mean and range over 3 seeds"
    lines = ax.get_lines()
    assert [l.get_label() for l in lines] == ["B = 2048", "B = 4096"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["B = 2048", "B = 4096"]
    for line, b in zip(lines, (2048, 4096)):
        assert list(line.get_xdata()) == [0.3, 0.6, 0.9]
        means = [spread([r["client.ttft.mean"] for r in sw.rows if r["B"] == b and r["Lambda"] == x]).mean
                 for x in (0.3, 0.6, 0.9)]
        assert list(line.get_ydata()) == means
    # a band (least to greatest over the seeds) and the seeds' dots per line
    bands = [c for c in ax.collections if type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
    dots = [c for c in ax.collections if type(c).__name__ == "PathCollection"]
    assert len(bands) == 2 and len(dots) == 2
    assert len(dots[0].get_offsets()) == 9
    ys = bands[0].get_paths()[0].vertices[:, 1]
    lo = min(r["client.ttft.mean"] for r in sw.rows if r["B"] == 2048 and r["Lambda"] == 0.9)
    hi = max(r["client.ttft.mean"] for r in sw.rows if r["B"] == 2048 and r["Lambda"] == 0.9)
    assert min(ys) <= lo and hi in list(ys) and lo in list(ys)


def test_the_same_plot_from_a_sweep_and_a_frame(table):
    sw, path = table
    a = sw.plot(x="Lambda", y="pool.kv.preemptions", by="B").axes[0].get_lines()
    pytest.importorskip("pandas")
    b = serq.plot.table(sw.to_frame(), x="Lambda", y="pool.kv.preemptions", by="B").axes[0].get_lines()
    assert [list(l.get_ydata()) for l in a] == [list(l.get_ydata()) for l in b]


def test_another_input_that_varies_is_refused(table):
    _, path = table
    with pytest.raises(serq.SerqError) as e:
        serq.plot.table(path, x="Lambda", y="client.ttft.mean")
    assert e.value.render() == (f"error[E973]: the table {path} varies B too, so a point of the plot would mix "
                                "its values\n  = help: --by B, or keep one value: --where B=2048")
    fig = serq.plot.table(path, x="Lambda", y="client.ttft.mean", where={"B": 4096})
    assert [l.get_label() for l in fig.axes[0].get_lines()] == ["mean over seeds"]
    with pytest.raises(serq.SerqError) as e:
        serq.plot.table(path, x="Lambda", y="client.ttft.maen", by="B")
    assert e.value.render() == (f"error[E973]: the table {path} has no column `client.ttft.maen` (--y)\n"
                                "  = help: did you mean `client.ttft.mean`?")


def test_samples_histogram_and_cdf(tmp_path):
    rep = serq.load(MG1).run(horizon=300, warmup=30)
    rep.dump(str(tmp_path))
    fig = serq.plot.samples(str(tmp_path / "sojourn.csv"), bins=25)
    hist, cdf = fig.axes
    n = rep.observes["sojourn"].count
    assert (hist.get_xlabel(), hist.get_ylabel(), cdf.get_ylabel()) == ("sojourn", "samples", "fraction ≤ x")
    assert len(hist.patches) == 25 and sum(p.get_height() for p in hist.patches) == n
    step = cdf.get_lines()[0]
    assert len(step.get_xdata()) == n and step.get_ydata()[-1] == 1.0
    labels = [t.get_text() for t in hist.get_legend().get_texts()]
    mean = rep.observes["sojourn"].mean
    assert labels[1:] == [f"mean {mean:.4g}", f"p99 {rep.observes['sojourn'].p99:.4g}"]
    # the same from the report's samples, and two series compared
    fig = serq.plot.samples(rep.samples("sojourn"), name="sojourn")
    assert sum(p.get_height() for p in fig.axes[0].patches) == n
    other = serq.load(MG1, set={"lambda": 0.5}).run(horizon=300, warmup=30)
    fig = serq.plot.samples({"0.8": rep.samples("sojourn"), "0.5": other.samples("sojourn")}, name="sojourn")
    assert [l.get_label() for l in fig.axes[1].get_lines()] == ["0.8", "0.5"]


def test_a_gauge_is_its_change_points(tmp_path):
    prog = serq.loads(GAUGED)
    prog.run(horizon=100).dump(str(tmp_path))
    path = tmp_path / "gauge" / "in_queue.csv"
    pts = [tuple(map(float, l.split(","))) for l in path.read_text().splitlines()[1:]]
    fig = serq.plot.gauge(str(path))
    (ax,) = fig.axes
    (line,) = ax.get_lines()
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("time", "in_queue", "gauge in_queue")
    assert list(zip(line.get_xdata(), line.get_ydata())) == pts
    assert line.get_drawstyle() == "steps-post"


def test_the_command_writes_png_and_svg(table, tmp_path):
    _, path = table
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    r = CliRunner().invoke(main, ["plot", path, "--x", "Lambda", "--y", "client.ttft.mean", "--by", "B",
                                  "--logy", "--out", str(png)])
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = CliRunner().invoke(main, ["plot", path, "--x", "Lambda", "--y", "client.ttft.mean",
                                  "--where", "B=2048", "--out", str(svg)])
    assert r.exit_code == 0, r.output
    text = svg.read_text()
    assert text.startswith("<?xml") and "<svg" in text and "<dc:date>" not in text


def test_command_usage():
    def run(*a):
        return CliRunner().invoke(main, ["plot", *a])
    r = run("--out", "x.png")
    assert r.exit_code == 2 and "give one of TABLE, --samples FILE or --gauge FILE" in r.output
    r = run("t.csv", "--samples", "s.csv", "--out", "x.png")
    assert r.exit_code == 2 and "(not TABLE and --samples)" in r.output
    r = run("t.csv", "--x", "a", "--y", "b", "--out", "x.pdf")
    assert r.exit_code == 2 and "a figure is written as .png or .svg, not `.pdf`" in r.output
    r = run("t.csv", "--out", "x.png")
    assert r.exit_code == 2 and "needs --x INPUT and --y COLUMN" in r.output
    r = run("missing.csv", "--x", "a", "--y", "b", "--out", "x.png")
    assert r.exit_code == 1 and r.output == ("error[E972]: cannot read the table missing.csv: "
                                             "No such file or directory\n")


def test_a_table_of_another_extension_is_said_to_be_read_not_written(tmp_path):
    """`serq plot t.txt` was told that a table is *written* as .csv or .parquet,
    with the help `--out table.csv`: plot's TABLE is what it reads."""
    t = tmp_path / "t.txt"
    t.write_text("a,b\n1,2\n")
    r = CliRunner().invoke(main, ["plot", str(t), "--x", "a", "--y", "b", "--out", str(tmp_path / "p.svg")])
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", (
        f"error[E971]: {t}: a table is read as .csv or .parquet, not `.txt`\n"
        "  = help: a sweep's table: serq sweep --out T.csv or --out T.parquet\n"))
    assert sorted(os.listdir(tmp_path)) == ["t.txt"]


def test_a_dump_file_that_is_not_one(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(serq.SerqError) as e:
        serq.plot.samples(str(bad))
    assert e.value.render().startswith(f"error[E973]: {bad}: the header has no `time`")


@pytest.mark.parametrize("value", [5.0, 0.3])
def test_a_log_histogram_of_one_value(value):
    """`serq plot --samples F --logx` of samples all equal: an internal error
    (numpy: "`bins` must increase monotonically"), as for 0.3 to 0.3 when
    geomspace rounds an inner edge above the last.  The half-decade each side."""
    hist, _ = serq.plot.samples([value, value], bins=4, logx=True).axes
    edges = [p.get_x() for p in hist.patches] + [hist.patches[-1].get_x() + hist.patches[-1].get_width()]
    assert edges[0] == pytest.approx(value / 10 ** 0.5) and edges[-1] == pytest.approx(value * 10 ** 0.5)
    assert [p.get_height() for p in hist.patches] == [0, 0, 2, 0]


def test_a_log_axis_with_nothing_above_zero_is_refused(table, tmp_path):
    """matplotlib warned ("Data has no positive values, and therefore cannot
    be log-scaled") and drew an empty axis; the histogram refused already."""
    _, path = table
    gauge = tmp_path / "g.csv"
    gauge.write_text("time,value\n1,0\n2,-1\n")
    out = tmp_path / "g.png"
    r = CliRunner().invoke(main, ["plot", "--gauge", str(gauge), "--logy", "--out", str(out)])
    assert (r.exit_code, r.output) == (1, "error[E973]: --logy needs positive values of g, and it has none\n")
    assert not out.exists()
    with pytest.raises(serq.SerqError) as e:
        serq.plot.table(path, x="Lambda", y="run.stuck", by="B", logy=True)
    assert e.value.render() == "error[E973]: --logy needs positive values of run.stuck, and it has none"
    with pytest.raises(serq.SerqError) as e:
        serq.plot.samples([0.0, -1.0], logx=True)
    assert e.value.render() == "error[E973]: --logx needs positive samples"
