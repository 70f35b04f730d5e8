"""The command line: summaries, IR round trips through files, exit codes."""

import json
import subprocess
import sys

from click.testing import CliRunner

from serq.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_check_prints_a_summary():
    r = run("check", "examples/multi-turn/vllm.sq")
    assert r.exit_code == 0
    assert r.output == ("examples/multi-turn/vllm.sq: ok\n"
                        "  pools    2: kv, reqs\n"
                        "  stages   2: vllm: engine, tool: delay\n"
                        "  observes 2: hit, prefill_tokens\n"
                        "  gauges   0: -\n"
                        "  claims   0: -\n")


def test_ir_then_check_of_the_json(tmp_path):
    r = run("ir", "examples/multi-turn/vllm.sq", "--horizon", "300", "--seed", "7")
    assert r.exit_code == 0
    path = tmp_path / "x.json"
    path.write_text(r.output)
    assert json.loads(r.output)["seed"] == 7
    r2 = run("check", str(path))
    assert r2.exit_code == 0 and "pools    2: kv, reqs" in r2.output
    # the IR of the IR is the IR
    r3 = run("ir", str(path))
    assert r3.output == r.output


def test_ir_without_a_horizon_inspects(tmp_path):
    """`serq ir` of a program with no horizon and no instance is for inspection:
    its horizon is the placeholder 1; with a default instance, that instance's."""
    prog = tmp_path / "p.sq"
    with open("examples/single-turn/mg1.sq", encoding="utf-8") as f:
        prog.write_text(f.read(), encoding="utf-8")
    r = run("ir", str(prog))
    assert r.exit_code == 0 and '"horizon": 1.0' in r.output
    r = run("ir", "examples/single-turn/mg1.sq")
    assert r.exit_code == 0 and '"horizon": 20000.0' in r.output


def test_set_is_refused_on_json(tmp_path):
    r = run("ir", "examples/single-turn/mg1.sq", "--horizon", "5")
    path = tmp_path / "x.json"
    path.write_text(r.output)
    r2 = run("check", str(path), "--set", "lambda=0.5")
    assert r2.exit_code == 2 and "--set is refused on an IR file" in r2.output


def test_program_error_exits_1_with_the_located_message(tmp_path):
    bad = tmp_path / "bad.sq"
    bad.write_text("fn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); }\n"
                   "  server { run svc (cost(svc, x)); }\n}\n")
    r = CliRunner().invoke(main, ["check", str(bad)])
    assert r.exit_code == 1
    assert f"{bad}:4:31: error[E201]: unknown name `x`" in r.output


def test_bad_set_syntax_is_a_usage_error():
    r = run("check", "examples/single-turn/mg1.sq", "--set", "lambda")
    assert r.exit_code == 2 and "not name=expr" in r.output


def test_set_changes_the_ir():
    r = run("ir", "examples/single-turn/mg1.sq", "--horizon", "5", "--warmup", "0", "--set", "lambda=0.5")
    assert json.loads(r.output)["arrival"] == {"Poisson": 0.5}


def test_inline_trace_gives_explicit_sessions():
    r = run("ir", "examples/replay/vllm_replay.sq", "--horizon", "100", "--inline-trace")
    assert r.exit_code == 0
    d = json.loads(r.output)
    sessions = d["arrival"]["Sessions"]
    assert len(sessions) == 4 and d["trace"] is None
    more = [dict(map(tuple, t))[7] for t in sessions[0]["turns"]]
    assert more[-1] == 0.0 and all(m == 1.0 for m in more[:-1])


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "serq.cli", "check", "examples/single-turn/ps.sq"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("examples/single-turn/ps.sq: ok")


def test_the_reports_ir_digest_is_the_sha256_of_serq_ir():
    import hashlib
    args = ("examples/multi-turn/vllm.sq", "--horizon", "20", "--warmup", "0", "--seed", "3")
    ir = run("ir", *args, "--", "Lambda=0.4")
    rep = run("run", *args, "--json", "--", "Lambda=0.4")
    assert ir.exit_code == rep.exit_code == 0
    made = json.loads(rep.output)["made"]
    assert made["ir"] == "sha256:" + hashlib.sha256(ir.output.encode("utf-8")).hexdigest()
    assert made["inputs"] == {"Lambda": "0.4"} and made["seed"] == 3
    other = json.loads(run("run", *args, "--json", "--", "Lambda=0.5").output)["made"]
    assert other["ir"] != made["ir"]
