"""Sweeps: every row is the run it names, the table does not depend on the
jobs or the backend (a real Dask cluster of worker processes included), the
spread across seeds, the CLI."""

import csv
import io
import math
import os
import re

import pytest
from click.testing import CliRunner

import serq
from serq.cli import main
from serq.tables.spread import spread

VLLM = "examples/multi-turn/vllm.sq"
MG1 = "examples/single-turn/mg1.sq"
H = "40"


def small(**kw):
    kw.setdefault("jobs", 1)
    return serq.sweep(VLLM, {"Lambda": [0.3, 0.9], "B": 2048}, seeds="1-2", horizon=40, warmup=4, **kw)


def test_each_row_is_the_run_of_its_point_and_seed():
    sw = small()
    assert [(r["Lambda"], r["B"], r["seed"]) for r in sw.rows] == [
        (0.3, 2048, 1), (0.3, 2048, 2), (0.9, 2048, 1), (0.9, 2048, 2)]
    assert sw.columns[:3] == ["Lambda", "B", "seed"]
    for r in sw.rows:
        rep = serq.load(VLLM, set={"Lambda": r["Lambda"], "B": 2048}).run(horizon=40, warmup=4, seed=r["seed"])
        assert r == {"Lambda": r["Lambda"], "B": 2048, **rep.row()}


def test_the_table_is_the_same_for_one_job_and_two(tmp_path):
    one, two = small(jobs=1), small(jobs=2)
    assert one.rows == two.rows or _nan_equal(one.rows, two.rows)
    one.write(tmp_path / "a.csv")
    two.write(tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def _nan_equal(a, b):
    return all(x.keys() == y.keys() and all(x[k] == y[k] or (x[k] != x[k] and y[k] != y[k]) for k in x)
               for x, y in zip(a, b)) and len(a) == len(b)


def test_a_dask_cluster_of_worker_processes_gives_the_same_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    local = small(jobs=1)
    local.write(tmp_path / "local.csv")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        assert len(pids) == 2 and os.getpid() not in pids    # worker processes, not threads
        on_dask = small(dask=client)
        on_dask.write(tmp_path / "client.csv")
        # the CLI, connecting to the scheduler's address
        r = CliRunner().invoke(main, ["sweep", VLLM, "--set", "Lambda=0.3,0.9", "--set", "B=2048",
                                      "--seeds", "1-2", "--horizon", H, "--warmup", "4",
                                      "--dask", cluster.scheduler_address, "--out", str(tmp_path / "cli.csv")])
        assert r.exit_code == 0, r.output
    expect = (tmp_path / "local.csv").read_bytes()
    assert (tmp_path / "client.csv").read_bytes() == expect
    assert (tmp_path / "cli.csv").read_bytes() == expect
    # dask="local" starts (and stops) a LocalCluster of `jobs` worker processes
    mine = small(dask="local", jobs=2)
    assert mine.where == "dask local"
    mine.write(tmp_path / "mine.csv")
    assert (tmp_path / "mine.csv").read_bytes() == expect


def test_the_spread_is_over_the_seeds():
    sw = small()
    rows = sw.summary(["client.ttft.mean"])
    assert [(s["Lambda"], s["B"], s["metric"], s["seeds"]) for s in rows] == [
        (0.3, 2048, "client.ttft.mean", 2), (0.9, 2048, "client.ttft.mean", 2)]
    vals = [r["client.ttft.mean"] for r in sw.rows if r["Lambda"] == 0.9]
    s = spread(vals)
    assert (rows[1]["mean"], rows[1]["half"], rows[1]["min"], rows[1]["max"]) == (s.mean, s.half, min(vals), max(vals))
    with pytest.raises(serq.SerqError) as e:
        sw.summary(["client.ttft.maen"])
    assert e.value.render() == "error[E970]: no column `client.ttft.maen`\n  = help: did you mean `client.ttft.mean`?"


def test_frame_and_parquet_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    sw = small()
    f = sw.to_frame()
    assert list(f.columns) == sw.columns and len(f) == 4
    sw.write(tmp_path / "t.parquet")
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert list(back.columns) == sw.columns
    assert back["pool.kv.preemptions"].dtype == "int64" and back["client.ttft.mean"].dtype == "float64"
    cols, rows = serq.read_table(str(tmp_path / "t.parquet"))
    assert cols == sw.columns and _nan_equal(rows, sw.rows)
    sw.write(tmp_path / "t.csv")
    cols, rows = serq.read_table(str(tmp_path / "t.csv"))
    assert cols == sw.columns and _nan_equal(rows, sw.rows)   # every float back exactly


def test_a_point_the_program_refuses_stops_the_sweep_before_any_run(tmp_path):
    out = tmp_path / "t.csv"
    with pytest.raises(serq.SerqError) as e:
        serq.sweep(VLLM, {"Lambda": [0.3, -1]}, horizon=40, jobs=1, out=str(out))
    assert e.value.render().startswith("examples/multi-turn/vllm.sq:117:20: error[E404]: a poisson rate is "
                                       "positive and finite, not -1")
    assert not out.exists()


RUN_ERROR = """use "std/args";
fn main() {
  let k = args.number("k", 0);
  pool p { cap 10; }
  stage svc : fifo;
  workload { arrive poisson(1); turn { set s = ~exp(1); } }
  server { hold p (cost(p, s - k)) { run svc (cost(svc, s)); } }
}
"""


def test_a_run_error_names_the_point_and_the_seed(tmp_path):
    path = tmp_path / "neg.sq"
    path.write_text(RUN_ERROR)
    with pytest.raises(serq.SerqError) as e:
        serq.sweep(str(path), {"k": [0, 100]}, seeds=[3], horizon=20, jobs=2)
    text = e.value.render()
    assert "error[R" in text and text.endswith("= note: in the sweep's run k=100 seed 3")


def test_ir_programs_sweep_seeds_only(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(serq.load(MG1).json())
    sw = serq.sweep(str(path), seeds="1-2", horizon=100, jobs=1)
    assert [r["seed"] for r in sw.rows] == [1, 2] and sw.columns[0] == "seed"
    with pytest.raises(serq.SerqError, match="its inputs cannot be swept"):
        serq.sweep(str(path), {"lambda": [0.5]}, horizon=100)


# ---------------------------------------------------------------- the command

def run(*args):
    return CliRunner().invoke(main, ["sweep", *args])


def test_the_command_writes_the_table_and_prints_the_spread(tmp_path):
    out = tmp_path / "t.csv"
    r = run(VLLM, "--set", "Lambda=0.3,0.9", "--set", "B=2048", "--seeds", "1-2", "--horizon", H,
            "--warmup", "4", "--jobs", "2", "--out", str(out), "--show", "client.ttft.mean",
            "--show", "pool.kv.preemptions")
    assert r.exit_code == 0, r.output
    sw = small()
    assert out.read_text() == sw.csv()
    lines = r.stdout.splitlines()
    # B has one value: said once; the table shows the input that varies
    assert lines[:2] == ["every point: B=2048", ""]
    lines = lines[2:]
    assert lines[0].split() == ["Lambda", "metric", "seeds", "mean", "95%", "t", "median", "min", "max", "unstable"]
    first = lines[2].split()
    s = sw.summary(["client.ttft.mean"])[0]
    assert first[:3] == ["0.3", "client.ttft.mean", "2"]
    assert first[3:] == [f"{s['mean']:.4f}", f"±{s['half']:.4f}", f"{s['median']:.4f}", f"{s['min']:.4f}",
                         f"{s['max']:.4f}", str(s["unstable"])]
    assert lines[2 + 4:] == ([""] + sw.notes() if sw.notes() else [])
    assert "\r" not in r.output and "run/s" not in r.output    # no progress bar off a terminal
    assert r.stderr.startswith("sweep: 2 points × 2 seeds = 4 runs in ")


def test_the_summary_says_the_processes_the_runs_had(tmp_path):
    """--jobs is at most so many processes: a sweep of 3 runs had 3 however
    many were asked (it said `(100000 jobs)`)."""
    r = run(MG1, "--seeds", "1-3", "--horizon", "10", "--warmup", "0", "--jobs", "100000",
            "--out", str(tmp_path / "t.csv"))
    assert r.exit_code == 0, r.output
    assert re.fullmatch(r"sweep: 1 point × 3 seeds = 3 runs in [0-9.]+ s \(3 jobs\); table .*t\.csv\n", r.stderr)
    r = run(MG1, "--seeds", "1-3", "--horizon", "10", "--warmup", "0", "--jobs", "1", "--out", str(tmp_path / "u.csv"))
    assert re.search(r" \(1 job\); table ", r.stderr)


def test_out_dash_is_csv_alone_on_stdout():
    r = run(VLLM, "--set", "Lambda=0.3,0.9", "--seeds", "1-2", "--horizon", H, "--warmup", "4",
            "--jobs", "1", "--set", "B=2048", "--out", "-")
    assert r.exit_code == 0, r.output
    assert r.stdout == small().csv()
    assert list(csv.reader(io.StringIO(r.stdout)))[0][:3] == ["Lambda", "B", "seed"]


def test_usage_errors():
    r = run(VLLM, "--seeds", "3-1", "--horizon", H, "--out", "t.csv")
    assert r.exit_code == 2 and "Invalid value for --seeds: --seeds 3-1: the range 3-1 is empty" in r.output
    r = run(VLLM, "--horizon", H, "--out", "t.txt")
    assert r.exit_code == 2 and "a table is written as .csv or .parquet, not `.txt`" in r.output
    r = run("docs/tutorial/01_mm1.sq", "--out", "t.csv")
    assert r.exit_code == 2 and ("no horizon: a model says what the deployment is, the run says how long. Give "
                                 "--horizon T") in r.output
    assert "`docs/tutorial/instances/01_mm1.sq` would be this program's default instance" in r.output
    r = run(VLLM, "--under", "client.ttft.p95", "--out", "t.csv")
    assert r.exit_code == 2 and "`client.ttft.p95` is not COLUMN=NUMBER" in r.output
    r = run(VLLM, "--horizon", H, "--out", "t.csv", "--dask", "tcp://127.0.0.1:1", "--jobs", "2")
    assert r.exit_code == 2 and "--jobs sizes a local pool or --dask local" in r.output


def test_a_horizon_or_warmup_out_of_range_is_a_usage_error_as_for_run(tmp_path):
    """`serq sweep P --horizon -5` (inf, a --warmup of nan or -1) linked the program
    and failed at the IR's field, `$.horizon: error[E740]`, exit 1; `serq run`
    refuses them at the option.  So does the sweep now, before anything."""
    for option, value, rule in (("--horizon", "-5", "must be a finite positive number"),
                                ("--horizon", "inf", "must be a finite positive number"),
                                ("--warmup", "nan", "must be a finite number ≥ 0"),
                                ("--warmup", "-1", "must be a finite number ≥ 0")):
        args = ["--horizon", "10", "--warmup", "0"]
        args[args.index(option) + 1] = value
        r = run(MG1, *args, "--out", str(tmp_path / "t.csv"))
        assert (r.exit_code, r.stdout, r.stderr.splitlines()[-1]) == (
            2, "", f"Error: Invalid value for '{option}': {rule}"), (option, value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("ask", [["--show", "client.ttft.maen"], ["--under", "client.ttft.maen=0.5"]])
def test_a_column_the_command_will_not_find_is_refused_at_the_first_run(tmp_path, ask):
    """A misspelt --show or --under column was found after every run, the
    table written; it is refused when the first run ends, the others stopped
    and nothing written."""
    out = tmp_path / "t.csv"
    r = run(VLLM, "--set", "Lambda=0.3,0.9", "--seeds", "1-3", "--horizon", H, "--warmup", "4",
            "--jobs", "2", "--out", str(out), *ask)
    assert r.exit_code == 1
    assert r.stderr == ("error[E970]: no column `client.ttft.maen`\n"
                        "  = note: found at the sweep's first finished run; the other runs were stopped\n"
                        "  = help: did you mean `client.ttft.mean`?\n")
    assert not out.exists()
    with pytest.raises(serq.SerqError) as e:
        serq.sweep(VLLM, {"Lambda": [0.3]}, seeds="1-2", horizon=float(H), warmup=4, jobs=1, columns=["nope"])
    assert e.value.render().startswith("error[E970]: no column `nope`\n"
                                       "  = note: found at the sweep's first finished run; the other runs were stopped\n"
                                       "  = help: the columns are: Lambda, seed, made.horizon, ")
    with pytest.raises(serq.SerqError) as e:
        serq.sweep(VLLM, seeds="1", horizon=float(H), columns="client.ttft.mean")
    assert e.value.render() == "error[E970]: serq.sweep: columns= is a list of column names, not str 'client.ttft.mean'"


def test_a_progress_bar_only_when_asked_or_on_a_terminal(capsys):
    from serq.sweeps import _bar
    assert _bar(3, None) is None          # pytest's stderr is not a terminal
    bar = _bar(3, True)
    bar.close()
    assert "sweep:   0%|          | 0/3" in capsys.readouterr().err


def test_the_tutorials_sweep_prints_what_its_page_shows():
    page = open("docs/tutorial/06_sweep.md", encoding="utf-8").read()
    shown = page.split("```\nlambda", 1)[1].split("```", 1)[0]
    r = run("docs/tutorial/01_mm1.sq", "--set", "lambda=0.3,0.6,0.9", "--seeds", "1-3", "--horizon", "20000",
            "--warmup", "1000", "--show", "client.response.mean", "--jobs", "1", "--out", "-")
    assert r.exit_code == 0
    sw = serq.sweep("docs/tutorial/01_mm1.sq", {"lambda": [0.3, 0.6, 0.9]}, seeds="1-3", horizon=20000,
                    warmup=1000, jobs=1)
    assert r.stdout == sw.csv()
    assert "lambda" + shown == sw.text(["client.response.mean"]) + "\n"


INSTANCED = """use "std/args";
fn main() {
  let lambda = args.number("lambda", 0.5);
  stage svc : fifo;
  workload { arrive poisson(lambda); turn { set s = ~exp(1); } }
  server { run svc (cost(svc, s)); }
}
"""


def test_a_sweep_reads_the_instance_as_run_does(tmp_path):
    """Without --horizon a sweep runs the program's default instance (its
    horizon, warm-up and inputs); a --horizon alone keeps its warm-up; each
    row is the run `serq run` makes of it."""
    prog = tmp_path / "q.sq"
    prog.write_text(INSTANCED)
    (tmp_path / "instances").mkdir()
    (tmp_path / "instances" / "q.sq").write_text("run { horizon 400; warmup 40; seed 7; lambda 0.25; }\n")
    sw = serq.sweep(str(prog), seeds="1-2", jobs=1)
    assert [(r["made.horizon"], r["made.warmup"], r["seed"]) for r in sw.rows] == [(400, 40, 1), (400, 40, 2)]
    one = serq.load(str(prog)).run(seed=2)
    assert one.made.inputs == {"lambda": "0.25"} and sw.rows[1] == one.row()
    sw = serq.sweep(str(prog), {"lambda": [0.5]}, seeds=[3], horizon=1000, jobs=1)
    assert (sw.rows[0]["made.horizon"], sw.rows[0]["made.warmup"]) == (1000, 40)
    r = run(str(prog), "--horizon", "1000", "--seeds", "3", "--set", "lambda=0.5", "--out", "-")
    assert r.exit_code == 0, r.output
    assert r.stdout == sw.csv()
    # a horizon not beyond the instance's warm-up, given alone, runs without one and says so
    with pytest.warns(UserWarning, match=r"the horizon 30 is not beyond the warm-up 40 of the instance .*/q.sq, "
                                         r"so this run has no warm-up \(give one below the horizon"):
        sw = serq.sweep(str(prog), seeds=[1], horizon=30, jobs=1)
    assert (sw.rows[0]["made.horizon"], sw.rows[0]["made.warmup"]) == (30, 0)
    # the command says it as `serq run` does, once: a note, not Python's warning and its source line
    r = run(str(prog), "--horizon", "30", "--seeds", "1-2", "--set", "lambda=0.5,0.6", "--jobs", "1", "--out", "-")
    assert r.exit_code == 0, r.output
    notes = [line for line in r.stderr.splitlines() if not line.startswith("sweep: ")]
    assert notes == [f"note: the horizon 30 is not beyond the warm-up 40 of the instance {tmp_path}/instances/q.sq, "
                     "so this run has no warm-up (give one below the horizon with --warmup W, warmup= from Python)"]
    # another instance, named on the command line
    other = tmp_path / "other.sq"
    other.write_text("run { horizon 200; seed 4; lambda 0.75; }\n")
    r = run(str(prog), "--instance", str(other), "--seeds", "2", "--out", "-")
    assert r.exit_code == 0, r.output
    sw = serq.sweep(str(prog), seeds=[2], instance=str(other), jobs=1)
    assert r.stdout == sw.csv()
    assert (sw.rows[0]["made.horizon"], sw.rows[0]["made.warmup"], sw.rows[0]["seed"]) == (200, 0, 2)
