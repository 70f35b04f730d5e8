"""`serq run … --claims-only`: one `name: verdict` line per claim, exit 1 when
one fails (for CI); the JSON report's claims; an IR file keeps its claims."""

import json

from click.testing import CliRunner

from serq.cli import main

PROGRAM = """fn main() {
  device gpu { }
  engine llm on gpu { tokens cap 4; schedule { advance running decode first; } execute (1); }
  workload { arrive batch(2); init { set n = 6; set tag = serial; } }
  server { run llm prefill (cost(llm, n)); run llm decode (cost(llm, 2)); observe done = now; }
  claim conserving: every iteration of llm (demand < 4 || tokens == 4);
  claim mixed: some iteration of llm (decoders >= 1 && prefilled == 3);
  claim first_only given (tag < 1): at end (count(done) == 2);
  %s
}
"""


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write(tmp_path, extra=""):
    path = tmp_path / "c.sq"
    path.write_text(PROGRAM % extra)
    return str(path)


def test_claims_only_exits_0_when_none_fails(tmp_path):
    r = run("run", write(tmp_path), "--horizon", "100", "--claims-only")
    assert r.exit_code == 0
    assert r.output == "conserving: holds\nmixed: witnessed\nfirst_only: out_of_scope\n"


def test_claims_only_exits_1_when_one_fails(tmp_path):
    r = run("run", write(tmp_path, "claim full: every iteration of llm (tokens == 4);"),
            "--horizon", "100", "--claims-only")
    assert r.exit_code == 1
    assert r.output.splitlines()[-1] == "full: fails"


def test_not_witnessed_and_not_evaluated_do_not_fail(tmp_path):
    r = run("run", write(tmp_path, "claim never: some iteration of llm (tokens > 4);"
                                   "claim later: at end (count(done) == 2);"),
            "--horizon", "5", "--claims-only")
    assert r.exit_code == 0
    assert r.output.splitlines()[-2:] == ["never: not_witnessed", "later: not_evaluated"]


def test_json_claims_and_an_ir_file(tmp_path):
    src = write(tmp_path)
    r = run("run", src, "--horizon", "100", "--json")
    assert r.exit_code == 0
    cl = json.loads(r.output)["claims"]
    assert [c["name"] for c in cl] == ["conserving", "mixed", "first_only"]
    assert set(cl[0]) == {"name", "form", "stage", "verdict", "time", "iteration", "iterations",
                          "session", "read"}
    assert cl[1]["read"] == {"decoders": 1.0, "prefilled": 3.0}
    ir = tmp_path / "c.json"
    ir.write_text(run("ir", src, "--horizon", "100").output)
    r2 = run("run", str(ir), "--json")
    assert json.loads(r2.output)["claims"] == cl
