"""A sweep tells the truth about each point (issue 23): a run still growing
or stuck is flagged in its row, counted per point in the summary beside the
median, named in the notes, counted out of `--under`'s verdict with a note
that a longer horizon may change it, and drawn as a cross."""

import pytest
from click.testing import CliRunner

import serq
from serq.cli import main

MG1 = "examples/single-turn/mg1.sq"


@pytest.fixture(scope="module")
def sw():
    # load 0.5 settles; load 1.3 grows without bound, on every seed
    return serq.sweep(MG1, {"lambda": [0.5, 1.3]}, seeds="1-3", horizon=4000, warmup=400, jobs=1)


def test_each_row_says_what_grew(sw):
    assert [r["run.growing"] for r in sw.rows if r["lambda"] == 0.5] == ["-", "-", "-"]
    for r in sw.rows:
        if r["lambda"] == 1.3:
            assert set(r["run.growing"].split()) == {"run.live", "pool.svc.queue"} or \
                set(r["run.growing"].split()) >= {"run.live"}
            assert r["run.stuck"] == 0


def test_the_summary_counts_unstable_seeds_beside_the_median(sw):
    rows = sw.summary(["client.response.mean"])
    stable, grown = rows
    assert (stable["lambda"], stable["unstable"]) == (0.5, 0) and (grown["lambda"], grown["unstable"]) == (1.3, 3)
    vals = sorted(r["client.response.mean"] for r in sw.rows if r["lambda"] == 1.3)
    assert grown["median"] == vals[1]
    text = sw.text(["client.response.mean"])
    assert text.splitlines()[0].split() == ["lambda", "metric", "seeds", "mean", "95%", "t", "median", "min", "max",
                                            "unstable"]
    notes = [l for l in text.splitlines() if l.startswith("unstable:")]
    assert notes[:3] == [f"unstable: lambda=1.3 seed {s}: still growing: "
                         + ", ".join(serq.tables.summary.count_words(n) for n in r["run.growing"].split())
                         for s, r in zip((1, 2, 3), [r for r in sw.rows if r["lambda"] == 1.3])]
    assert notes[3] == ("unstable: 3 of 6 runs, at 1 of 2 points: their means are not a steady state's (a longer "
                        "run would measure others); read the median and each seed's row")


def test_under_counts_the_seeds_and_says_when_a_longer_horizon_may_change_it(sw):
    # every seed of the overloaded point is under 1000 s at this horizon, and every one is still growing
    u = sw.under("client.response.mean", 1000)
    assert [(x["lambda"], len(x["under"]), len(x["seeds"]), x["shaky"]) for x in u] == [
        (0.5, 3, 3, []), (1.3, 3, 3, [1, 2, 3])]
    text = sw.text(["client.response.mean"], under=[("client.response.mean", 1000)])
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("lambda  client.response.mean < 1000"))
    assert [l.split() for l in lines[head + 2:head + 4]] == [
        ["0.5", "3", "of", "3", "seeds", "under", "-", "-"], ["1.3", "3", "of", "3", "seeds", "under", "-", "1,", "2,", "3"]]
    assert ("horizon: lambda=1.3: client.response.mean is under 1000 on seeds 1, 2, 3, whose run is unstable: a "
            "longer horizon may put them over (try --horizon 8000)") in text.splitlines()
    # the stable point beside an unstable one: a rare overload a longer horizon may meet
    assert ("horizon: lambda=0.5: every seed is under 1000 and stable, but at lambda=1.3 3 of 3 seeds are "
            "unstable: an overload there is a rare event here, which a longer horizon may meet (try --horizon "
            "8000)") in text.splitlines()
    # a bound the seeds are over: none under, each over named with its value
    (_, hi) = sw.under("client.response.mean", 3)
    assert hi["under"] == [] and [s for s, _ in hi["over"]] == [1, 2, 3]


def test_the_command_prints_under_and_the_unstable_runs(tmp_path):
    out = tmp_path / "t.csv"
    r = CliRunner().invoke(main, ["sweep", MG1, "--set", "lambda=0.5,1.3", "--seeds", "1-3", "--horizon", "4000",
                                  "--warmup", "400", "--jobs", "1", "--under", "client.response.mean=1000",
                                  "--show", "client.response.mean", "--out", str(out)])
    assert r.exit_code == 0, r.output
    sw = serq.sweep(MG1, {"lambda": [0.5, 1.3]}, seeds="1-3", horizon=4000, warmup=400, jobs=1)
    assert r.stdout == sw.text(["client.response.mean"], under=[("client.response.mean", 1000)]) + "\n"
    cols, rows = serq.read_table(str(out))
    assert [x["run.growing"] != "-" for x in rows] == [False, False, False, True, True, True]


def test_the_default_column_is_one_the_program_has(sw):
    # no engine: no TTFT, so the response time, beside the program's own observe
    assert sw.default_metrics() == ["sojourn.mean", "client.response.mean"]


def test_the_plot_marks_unstable_seeds_and_compares_tables(sw, tmp_path):
    pytest.importorskip("matplotlib")
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    sw.write(a)
    serq.sweep(MG1, {"lambda": [0.5, 1.3]}, seeds="1-3", horizon=4000, warmup=400, jobs=1,
               instance=None).write(b)
    fig = serq.plot.table([str(a), str(b)], x="lambda", y="client.response.mean", labels=["one", "two"],
                          stat="median")
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert [l.get_label() for l in lines] == ["one", "two"]
    want = [sorted(r["client.response.mean"] for r in sw.rows if r["lambda"] == x)[1] for x in (0.5, 1.3)]
    assert list(lines[0].get_ydata()) == want
    crosses = [c for c in ax.collections if c.get_label() == serq.plot.UNSTABLE]
    assert len(crosses) == 1 and len(crosses[0].get_offsets()) == 3
    assert ax.get_title() == "client.response.mean against lambda: median and range over 3 seeds"
    r = CliRunner().invoke(main, ["plot", str(a), str(b), "--label", "one", "--label", "two", "--x", "lambda",
                                  "--y", "client.response.mean", "--out", str(tmp_path / "ab.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "ab.png").read_bytes()[:4] == b"\x89PNG"
    r = CliRunner().invoke(main, ["plot", str(a), str(b), "--label", "one", "--x", "lambda", "--y",
                                  "client.response.mean", "--out", str(tmp_path / "ab.png")])
    assert r.exit_code == 2 and "1 label for 2 tables" in r.output
