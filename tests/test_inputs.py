"""`serq inputs PROGRAM` and `prog.inputs`: each input in the order declared,
its default as written and folded, the value given it (--set, an instance
file, the default instance), the comment after it and the one heading its
block."""

import json

from click.testing import CliRunner

import serq
from serq.cli import main

VLLM = "examples/multi-turn/vllm.sq"


def test_the_inputs_of_the_vllm_program():
    ins = serq.load(VLLM).inputs
    assert list(ins) == ["Lambda", "p_more", "Z", "N_new", "O", "bs", "blocks", "B", "max_seqs", "chunk_cap",
                         "async_sched", "layers", "gap", "head", "dflat", "dlo", "dfix", "dtok", "kd", "km", "kmn", "kp", "at"]
    lam = ins["Lambda"]
    assert (lam.default, lam.default_value, lam.value, lam.given, lam.comment, lam.section, lam.line) == (
        "0.3", 0.3, 0.3, None, "sessions per second", "the workload", 39)
    assert ins["kd"].default == "0.00000000279856" and ins["kd"].default_value == 2.79856e-09
    assert ins["max_seqs"].comment == "" and ins["B"].comment == "max_num_batched_tokens"
    assert ins["at"].section.startswith("the GPU's time, seconds") and ins["at"].comment == "… the chunks' attention work"
    given = serq.load(VLLM, set={"Lambda": "2 * 0.3"}).inputs["Lambda"]
    assert (given.value, given.given) == (0.6, "2 * 0.3")
    assert serq.loads(serq.load(VLLM).json()).inputs == {}


def test_the_command_prints_them_with_their_comments():
    r = CliRunner().invoke(main, ["inputs", VLLM, "--set", "Lambda=0.5"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == (f"{VLLM}: 23 inputs (give one a value with --set NAME=VALUE, -- NAME=VALUE or an "
                        "instance file)")
    assert lines[2].split() == ["input", "default", "value", "comment"]
    assert lines[4] == "// the workload"
    assert lines[5].split() == ["Lambda", "0.3", "0.5", "sessions", "per", "second"]
    assert lines[6].split()[:3] == ["p_more", "0.9", "probability"]
    # an instance file's values, as the program's default instance gives them
    r = CliRunner().invoke(main, ["inputs", "examples/multi-turn/routing.sq", "--json"])
    assert r.exit_code == 0
    policy = json.loads(r.stdout)[0]
    assert (policy["name"], policy["given"], policy["value"], policy["comment"]) == (
        "policy", "0", 0, "0 rr, 1 random, 2 least outstanding, 3 least kv, 4 prefix affinity")


def test_a_program_without_inputs_and_the_errors(tmp_path):
    p = tmp_path / "none.sq"
    p.write_text("fn main() {\n  let r = 1;\n  stage svc : fifo;\n  workload { arrive poisson(r); }\n"
                 "  server { run svc (cost(svc, 1)); }\n}\n")
    r = CliRunner().invoke(main, ["inputs", str(p)])
    assert r.exit_code == 0 and r.stdout.startswith(f"{p}: no inputs (a plain `let` is fixed;")
    r = CliRunner().invoke(main, ["inputs", VLLM, "--set", "Lambd=1"])
    assert r.exit_code == 1 and "error[E251]: --set Lambd: the program declares no input `Lambd`" in r.output
    r = CliRunner().invoke(main, ["inputs", "x.json"])
    assert r.exit_code == 2 and "an IR file has no inputs" in r.output
