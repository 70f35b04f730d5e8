"""serq from Python: loading, running, reports, drawings — each against what
the CLI prints for the same program and settings."""

import json
import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import serq
from serq.cli import main

VLLM = "examples/multi-turn/vllm.sq"
MG1 = "examples/single-turn/mg1.sq"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args):
    r = CliRunner().invoke(main, list(args))
    return r


def test_import_serq_loads_nothing_until_a_name_is_used():
    code = ("import sys, serq; "
            "print(sorted(m for m in sys.modules if m.startswith(('serq.', 'numpy', 'lark', 'z3', 'click', "
            "'pandas', 'matplotlib', 'dask'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    code = ("import sys, serq; serq.load; "
            "print(sorted(m for m in sys.modules if m.startswith(('pandas', 'matplotlib', 'dask', 'serq.sim'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_run_is_serq_run_byte_for_byte():
    rep = serq.load(VLLM, set={"Lambda": 0.6}).run(horizon=60, warmup=6, seed=3)
    r = cli("run", VLLM, "--set", "Lambda=0.6", "--horizon", "60", "--warmup", "6", "--seed", "3", "--json")
    assert r.exit_code == 0, r.output
    assert rep.json() == r.output
    r = cli("run", VLLM, "--set", "Lambda=0.6", "--horizon", "60", "--warmup", "6", "--seed", "3")
    assert str(rep) + "\n" == r.output


def test_inputs_as_numbers_texts_or_expressions_link_the_same_program():
    base = serq.load(VLLM, set={"Lambda": 0.6, "B": 4096}).json()
    assert serq.load(VLLM, set={"Lambda": "0.6", "B": "4096"}).json() == base
    assert serq.load(VLLM, set={"Lambda": "1.2 / 2", "B": "2 * 2048"}).json() == base
    assert serq.load(VLLM).set(Lambda=0.6, B=4096).json() == base
    assert serq.load(VLLM).json() != base


def test_an_ir_file_runs_as_its_source_does(tmp_path):
    prog = serq.load(MG1, set={"lambda": 0.5})
    path = tmp_path / "mg1.ir.json"
    path.write_text(prog.json(), encoding="utf-8")
    ir = serq.load(str(path))
    assert ir.from_ir
    src = prog.run(horizon=500, seed=2).data()
    for other in (ir.run(horizon=500, seed=2).data(), serq.loads(prog.json()).run(horizon=500, seed=2).data()):
        # the same run: all but what made it, where a run of IR knows no inputs
        assert {k: v for k, v in other.items() if k != "made"} == {k: v for k, v in src.items() if k != "made"}
        assert other["made"] == src["made"] | {"program": other["made"]["program"], "inputs": None}
    assert src["made"]["inputs"] == {"lambda": "0.5"}


def test_loads_reads_source_text_with_its_path_for_errors():
    text = open(MG1, encoding="utf-8").read()
    assert serq.loads(text, set={"lambda": 0.5}, path=MG1).json() == serq.load(MG1, set={"lambda": 0.5}).json()
    with pytest.raises(serq.SerqError) as e:
        serq.loads(text.replace("stage svc : fifo;", "stage svc : fifoo;"), path="mine.sq")
    assert e.value.render().startswith("mine.sq:13:")


def test_the_report_sections_are_the_json_report():
    rep = serq.load(VLLM, set={"Lambda": 0.9}).run(horizon=200, warmup=20, seed=1)
    d = rep.data()
    assert rep.observes["hit"].mean == d["observes"]["hit"]["mean"]
    assert rep.observes["prefill_tokens"].count == d["observes"]["prefill_tokens"]["count"]
    assert rep.observes["hit"].ci == d["observes"]["hit"]["ci"]
    assert rep.observes["hit"]["p99"] == d["observes"]["hit"]["p99"]
    assert rep.client["ttft"].mean == d["client"]["ttft"]["mean"]
    kv = next(p for p in d["pools"] if p["name"] == "kv")
    assert rep.pools["kv"].preemptions == kv["preemptions"] > 0
    assert math.isnan(rep.pools["kv"].wait) and kv["wait"] is None
    assert rep.stages["vllm"].iterations == d["stages"][0]["iterations"]
    assert list(rep.pools) == ["kv", "reqs"] and list(rep.stages) == ["vllm", "tool"]
    assert (rep.made.seed, rep.made.horizon, rep.run.arrivals) == (1, 200.0, d["run"]["arrivals"])
    assert rep.stuck == rep.raw.stuck_sessions


def test_claims_and_gauges():
    rep = serq.load("examples/papers/kong_svf.sq").run(horizon=200)
    c = rep.claims["queueing_bound"]
    assert (c.verdict, c.form) == ("not_evaluated", "at end")
    text = ("use \"std/args\";\nfn main() {\n  pool slots { cap 3; }\n  stage svc : delay;\n"
            "  workload { arrive batch(2); init { set w = serial == 0 ? 2 : 5; } }\n"
            "  server { hold slots (cost(slots, 1)) { run svc (cost(svc, w)); } }\n"
            "  gauge held = used(slots);\n}\n")
    g = serq.loads(text).run(horizon=10).gauges["held"]
    assert (g.mean, g.min, g.max) == (pytest.approx(0.7), 0.0, 2.0)


def test_samples_are_what_dump_writes(tmp_path):
    rep = serq.load(MG1).run(horizon=200, warmup=20)
    rep.dump(str(tmp_path))
    lines = (tmp_path / "sojourn.csv").read_text().splitlines()[1:]
    got = rep.samples("sojourn")
    assert len(got) == len(lines) == rep.observes["sojourn"].count
    t, s, k, v = lines[0].split(",")
    assert got[0] == serq.Sample(float(t), int(s), int(k), float(v))
    assert got[0].value == float(v)


def test_frames():
    pd = pytest.importorskip("pandas")
    rep = serq.load(MG1).run(horizon=200, warmup=20)
    f = rep.samples_frame("sojourn")
    assert list(f.columns) == ["time", "session", "turn", "value"]
    assert len(f) == rep.observes["sojourn"].count
    assert f["value"].mean() == pytest.approx(rep.observes["sojourn"].mean, rel=1e-12)
    one = rep.to_frame()
    assert list(one.columns) == list(rep.row()) and len(one) == 1
    assert one["sojourn.mean"][0] == rep.observes["sojourn"].mean
    pools = serq.load(VLLM).run(horizon=30).pools.to_frame()
    assert list(pools.index) == ["kv", "reqs"] and "preemptions" in pools.columns
    assert isinstance(pools, pd.DataFrame)


def test_row_names_every_section():
    rep = serq.load(VLLM).run(horizon=30, seed=4)
    row = rep.row()
    assert row["seed"] == 4
    assert row["hit.mean"] == rep.observes["hit"].mean
    assert row["client.ttft.count"] == rep.client["ttft"].count
    assert row["pool.kv.preemptions"] == rep.pools["kv"].preemptions
    assert row["stage.vllm.utilization"] == rep.stages["vllm"].utilization
    assert row["run.turns"] == rep.run.turns
    rep = serq.load("examples/papers/kong_svf.sq").run(horizon=50)
    assert rep.row()["claim.queueing_bound"] == "not_evaluated"


def test_jupyter_shows_a_report_as_tables_and_a_program_as_its_drawing():
    prog = serq.load(MG1)
    html = prog.run(horizon=50)._repr_html_()
    assert "<th>observe</th><th>count</th><th>mean</th>" in html and "<th>sojourn</th>" in html
    svg = prog._repr_svg_()
    r = cli("draw", MG1)
    assert svg == r.output and svg.lstrip().startswith("<")
    session = prog.draw(view="session")
    assert session == cli("draw", MG1, "--view", "session").output
    assert session._repr_svg_() == session
    tikz = prog.draw(fmt="tikz")
    assert tikz == cli("draw", MG1, "--format", "tikz").output and tikz._repr_svg_() is None


# ---------------------------------------------------------------- errors

def test_a_run_needs_a_horizon(tmp_path):
    """A program with no default instance needs one; one with it runs its
    instance, as `serq run` does."""
    prog = tmp_path / "mg1.sq"
    with open(MG1, encoding="utf-8") as f:
        prog.write_text(f.read(), encoding="utf-8")
    with pytest.raises(serq.SerqError) as e:
        serq.load(str(prog)).run()
    assert e.value.render() == ("error[E970]: a run needs a horizon: a model says what the deployment is, "
                                "the run says how long\n  = help: prog.run(horizon=300), or "
                                "serq.load(path, instance=FILE)")
    rep = serq.load(MG1).run()
    assert (rep.made.horizon, rep.made.warmup) == (20000.0, 1000.0)      # examples/single-turn/instances/mg1.sq


def test_an_instance_file_from_python(tmp_path):
    inst = tmp_path / "i.sq"
    inst.write_text("run { horizon 400; warmup 40; seed 3; lambda 0.25; }\n", encoding="utf-8")
    rep = serq.load(MG1, instance=str(inst)).run()
    assert (rep.made.horizon, rep.made.warmup, rep.made.seed) == (400.0, 40.0, 3)
    same = serq.load(MG1, set={"lambda": 0.25}).run(horizon=400, warmup=40, seed=3)
    assert rep.data() == same.data() | {"made": same.data()["made"] | {"instance": str(inst)}}
    assert rep.made.instance == str(inst) and rep.made.inputs == {"lambda": "0.25"}
    assert serq.load(MG1, instance=str(inst)).run(horizon=800).made.horizon == 800.0


def test_bad_settings_are_the_validators_errors():
    with pytest.raises(serq.SerqError) as e:
        serq.load(MG1).run(horizon=10, warmup=20)
    assert e.value.render() == "$.warmup: error[E740]: warmup 20 must be below the horizon 10"
    with pytest.raises(serq.SerqError) as e:
        serq.load(MG1).run(horizon="long")
    assert e.value.render() == "error[E970]: Program.run: horizon= is a number, not str 'long'"
    assert isinstance(e.value, TypeError)


def test_a_bad_input_is_the_error_the_cli_prints():
    with pytest.raises(serq.SerqError) as e:
        serq.load(VLLM, set={"Lambda": -1})
    r = cli("check", VLLM, "--set", "Lambda=-1")
    assert r.exit_code == 1
    assert e.value.render() + "\n" == r.output
    with pytest.raises(serq.SerqError) as e:
        serq.load(VLLM, set={"Lambda": True})
    assert e.value.render() == ("error[E970]: the input Lambda is given bool True; give a number or an "
                                "expression's text")


def test_missing_names_say_what_there_is():
    rep = serq.load(VLLM).run(horizon=20)
    with pytest.raises(serq.SerqError) as e:
        rep.observes["hits"]
    assert e.value.render() == "error[E970]: no observe `hits`\n  = help: did you mean `hit`?"
    with pytest.raises(KeyError):   # a Mapping still
        rep.pools["nope"]
    assert rep.pools.get("nope") is None and "kv" in rep.pools
    with pytest.raises(serq.SerqError) as e:
        rep.samples("ttft")
    assert e.value.render() == "error[E970]: no observe `ttft`\n  = help: the client's is `client.ttft`"
    with pytest.raises(serq.SerqError) as e:
        rep.samples("ttfb")
    assert e.value.render() == ("error[E970]: no observe `ttfb`\n  = help: the observes are: hit, prefill_tokens, "
                                "client.ttft, client.tpot, client.response")
    with pytest.raises(AttributeError, match="observe hit has no field 'p97'; its fields: count, mean"):
        rep.observes["hit"].p97


def test_sets_are_refused_on_ir_and_a_bad_view_is_named(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(serq.load(MG1).json())
    with pytest.raises(serq.SerqError, match=r"error\[E970\]: set= is refused on an IR file"):
        serq.load(str(path), set={"lambda": 1})
    with pytest.raises(serq.SerqError, match="its inputs cannot be set"):
        serq.load(str(path)).set(lambda_=1)
    with pytest.raises(serq.SerqError) as e:
        serq.load(MG1).draw(view="sesion")
    assert e.value.render() == ("error[E970]: view='sesion' is not one of deployment, session\n"
                                "  = help: did you mean `session`?")


def test_a_missing_file():
    with pytest.raises(serq.SerqError) as e:
        serq.load("nope.sq")
    assert e.value.render() == "error[E001]: cannot read nope.sq: No such file or directory"


def test_arrivals_and_trace_are_the_commands_settings(tmp_path):
    rep = serq.load(MG1).run(horizon=1000, warmup=0, arrivals=30, seed=2)
    r = cli("run", MG1, "--horizon", "1000", "--warmup", "0", "--arrivals", "30", "--seed", "2", "--json")
    assert rep.json() == r.output and rep.run.arrivals == 30
    trace = tmp_path / "t.csv"
    rows = open("examples/replay/data/short.csv", encoding="utf-8").read().splitlines()
    trace.write_text("\n".join(rows[:6]) + "\n")      # the first sessions only
    prog = serq.load("examples/replay/vllm_replay.sq")
    rep = prog.run(horizon=5000, trace=str(trace))
    r = cli("run", "examples/replay/vllm_replay.sq", "--horizon", "5000", "--trace", str(trace), "--json")
    assert rep.json() == r.output
    assert rep.json() != prog.run(horizon=5000).json()     # the trace given is the one replayed


def test_a_missing_extra_names_the_pip_extra():
    from serq.api.extras import extra
    with pytest.raises(serq.SerqError) as e:
        extra("no_such_module_for_serq", "frames")
    assert e.value.render() == ("error[E974]: this needs no_such_module_for_serq, which is not installed\n"
                                "  = help: pip install 'serq[frames]'")
