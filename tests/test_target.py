"""`serq target PROGRAM --engine vllm` and `serq oracle run|diff --program`:
a program's engine as vLLM 0.33.0's arguments, the refusals, and the other
way round, a user's program held to vLLM's outputs."""

import glob
import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from serq.cli import checked, load_program, main, program_for_scenario
from serq.oracle import outcome as O
from serq.oracle import target as T
from serq.sim import simulate


def _inputs(pattern):
    return sorted(p for p in glob.glob(pattern) if not p.endswith((".out.json", ".log.json", ".ir.json")))


FCFS = _inputs("tools/oracle/scenarios/*.json") + _inputs("tools/oracle/random/*.json")
PRIORITY = _inputs("tools/oracle/priority/*.json") + _inputs("tools/oracle/priority/random/*.json")
PROGRAMS = json.load(open("tools/oracle/target/programs.json", encoding="utf-8"))
ENGINE_KEYS = ("budget", "max_seqs", "block_size", "num_blocks", "chunk", "adaptive", "prefix_caching", "policy")


def _vllm(path):
    with open(path[:-5] + ".out.json", encoding="utf-8") as f:
        return json.load(f)


def _engine(s):
    d = {"chunk": 0, "adaptive": False, "prefix_caching": False, "policy": "fcfs"}
    d.update({k: v for k, v in s.items() if k in ENGINE_KEYS})
    return d


def target(path, *sets):
    return T.vllm(load_program(path, sets, need_horizon=False))


@pytest.mark.parametrize("path", FCFS + PRIORITY, ids=os.path.basename)
def test_the_oracle_programs_export_the_scenarios_engine(path):
    """The oracle's program compiled for a scenario is exported as the very
    engine the harness ran."""
    s = json.load(open(path, encoding="utf-8"))
    assert T.scenario_engine(T.vllm(program_for_scenario(s)).args) == _engine(s)


def test_flags_and_json():
    r = CliRunner().invoke(main, ["target", "examples/multi-turn/vllm.sq", "--engine", "vllm"])
    assert r.exit_code == 0, r.output
    assert r.output == (
        "--max-num-batched-tokens 2048 --max-num-seqs 64 --block-size 16 --num-gpu-blocks-override 16001 "
        "--long-prefill-token-threshold 512 --no-long-prefill-token-threshold-adaptive "
        "--enable-prefix-caching --scheduling-policy fcfs --enable-chunked-prefill --no-async-scheduling\n")
    r = CliRunner().invoke(main, ["target", "examples/oracle/vllm_request_priority.sq", "--engine", "vllm",
                                  "--json", "--set", "chunk=32", "--set", "blocks=99"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {
        "max_num_batched_tokens": 1024, "max_num_seqs": 16, "block_size": 16, "num_gpu_blocks_override": 100,
        "long_prefill_token_threshold": 32, "long_prefill_token_threshold_adaptive": False,
        "enable_prefix_caching": False, "scheduling_policy": "priority", "enable_chunked_prefill": True,
        "async_scheduling": False}
    assert target("examples/oracle/vllm_request_adaptive.sq").args["long_prefill_token_threshold_adaptive"]


def test_the_measured_run_program_exports_its_asynchronous_scheduling():
    # async_sched 1: an await before the request's hold and one inside it
    # (docs/calibration.md); 0: both branches fold away
    assert not target("examples/replay/vllm_measured.sq").args["async_scheduling"]
    assert target("examples/replay/vllm_measured.sq", "async_sched=1").args["async_scheduling"]
    # SGLang's overlap loop awaits only inside the hold: not vLLM's
    p = load_program("examples/engines/sglang.sq", ("overlap=1",), need_horizon=False)
    assert T._awaits(p, next(i for i, st in enumerate(p.stages) if st.name == "sglang")) == (False, True)


def _refusal(tmp_path, edit):
    src = open("examples/oracle/vllm_request.sq", encoding="utf-8").read()
    old, new = edit
    assert old in src
    path = tmp_path / "p.sq"
    path.write_text(src.replace(old, new).replace('use "../lib/vllm.sq";', f'use "{os.path.abspath("examples/lib/vllm.sq")}";'))
    r = CliRunner().invoke(main, ["target", str(path), "--engine", "vllm"])
    assert r.exit_code == 1
    return r.output.replace(str(path), "p.sq")


def test_a_constant_chunk_cap_is_refused_where_the_engine_is(tmp_path):
    out = _refusal(tmp_path, ("let threshold = running.count + waiting.count > 1 ? chunk : inf;",
                              "let threshold = 16;"))
    assert out.startswith(
        "p.sq:22:3: error[E970]: not a vLLM 0.33.0 engine: engine `vllm` caps every prefill chunk at 16, always\n"
        "   |\n"
        "22 |   engine vllm on gpu {\n"
        "   |   ^\n"
        "  = help: vLLM lifts long_prefill_token_threshold while one request is running or waiting "
        "(scheduler.py:754-770): write `let threshold = running.count + waiting.count > 1 ? c : inf;` "
        "and `each at most (threshold)`\n")


def test_another_victim_and_another_order_are_refused(tmp_path):
    out = _refusal(tmp_path, ("preempt lifo;", "preempt by (position);"))
    assert "error[E970]: not a vLLM 0.33.0 engine: the victim of `kv` and the order of `reqs` are not a vLLM " \
           "policy's" in out
    out = _refusal(tmp_path, ("advance running each at most (threshold);",
                              "advance running decode first each at most (threshold);"))
    assert "engine `vllm` serves its running requests by keys; vLLM does not" in out
    out = _refusal(tmp_path, ("reserve (known) reuse (reused)", "reuse (reused)"))
    assert "a request of engine `vllm` is admitted without reserving its whole sequence on `kv`" in out


def test_programs_that_are_no_vllm_engine_say_why():
    from serq.diag import SerqError
    with pytest.raises(SerqError, match="the program has no engine; a vLLM instance is one engine"):
        target("examples/single-turn/mg1.sq")
    with pytest.raises(SerqError, match=r"engine `llm` runs another schedule; vLLM does not"):
        target("examples/papers/dai_sarathi.sq")


@pytest.mark.parametrize("given, message", [
    ("B=0", "the `tokens cap` of engine `vllm` is 0: vLLM's max_num_batched_tokens is a whole number from 1 below "
            "2^53"),
    ("B=1e300", "the `tokens cap` of engine `vllm` is 1e+300: vLLM's max_num_batched_tokens is a whole number from "
                "1 below 2^53"),
    ("B=2^53", "the `tokens cap` of engine `vllm` is 9007199254740992: vLLM's max_num_batched_tokens is a whole "
               "number from 1 below 2^53"),
    ("max_seqs=inf", "the cap of the queue `reqs` of engine `vllm` is inf: vLLM's max_num_seqs is a whole number "
                     "from 1 below 2^53"),
    ("blocks=1e20", "the KV pool `kv` holds 1.6e+21 tokens, 1e+20 blocks: vLLM's num_gpu_blocks_override is a "
                    "whole number from 1 below 2^53"),
])
def test_an_engine_size_vllm_cannot_take_is_refused_with_its_value(given, message):
    """`--set B=1e300` printed `--max-num-batched-tokens 1000000000000000052504…` (301
    digits, not the number given) and `--set blocks=1e20` a 21-digit block count: an
    engine's sizes are whole numbers below 2^53, as the oracle's scenarios' are;
    `B=0` was said to be `not a constant whole number`."""
    from serq.diag import SerqError
    name, value = given.split("=")
    value = str(2 ** 53) if value == "2^53" else value
    with pytest.raises(SerqError) as e:
        target("examples/replay/vllm_measured.sq", f"{name}={value}")
    assert [d.message for d in e.value.diagnostics] == [f"not a vLLM 0.33.0 engine: {message}"]
    edge = target("examples/replay/vllm_measured.sq", f"B={2 ** 53 - 1}", "blocks=562949953421311")
    assert (edge.args["max_num_batched_tokens"], edge.args["num_gpu_blocks_override"]) == (2 ** 53 - 1, 2 ** 49)


# ---------------------------------------------------------------- --program

@pytest.mark.parametrize("path", FCFS, ids=os.path.basename)
def test_the_oracle_program_as_a_users_program_agrees(path):
    """`--program examples/oracle/vllm_request.sq`: the program's engine with
    the scenario's numbers, its requests as sessions of the oracle's own
    workload, read by what the client saw: the same answers as vLLM."""
    s = json.load(open(path, encoding="utf-8"))
    c = checked(path, "examples/oracle/vllm_request.sq", ("prefix=1",) if s.get("prefix_caching") else ())
    assert O.diff(c.run()[0], _vllm(path)) == []


@pytest.mark.parametrize("path", [p for p in FCFS if json.load(open(p)).get("prefix_caching")],
                         ids=os.path.basename)
def test_the_multi_turn_engine_agrees_on_the_prefix_caching_scenarios(path):
    """examples/multi-turn/vllm.sq's engine (prefix caching always on)."""
    assert O.diff(checked(path, "examples/multi-turn/vllm.sq").run()[0], _vllm(path)) == []


@pytest.mark.parametrize("path", PRIORITY[:5] + PRIORITY[5::5], ids=os.path.basename)
def test_the_priority_program_as_a_users_program_agrees(path):
    s = json.load(open(path, encoding="utf-8"))
    c = checked(path, "examples/oracle/vllm_request_priority.sq", ("prefix=1",) if s.get("prefix_caching") else ())
    assert O.diff(c.run()[0], _vllm(path)) == []


def test_a_scenario_for_another_engine_is_refused():
    r = CliRunner().invoke(main, ["oracle", "run", "tools/oracle/scenarios/hol.json",
                                  "--program", "examples/multi-turn/vllm.sq"])
    assert r.exit_code == 1
    assert r.output == (
        "error[E972]: the scenario asks for another engine than the program's: prefix_caching: the scenario "
        "says false, the program true\n"
        "  = help: a program fixes the policy, prefix caching and the adaptive threshold; change the scenario, "
        "or the program's inputs with --set\n")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_exported_arguments_drive_the_harness_to_the_programs_outcome(name):
    """tools/oracle/target/NAME.json's engine is what `serq target` exports for
    the program (with its --set), the harness ran those arguments
    (NAME.out.json, regenerated by regen.sh), and the program gives vLLM's
    outcome."""
    d = PROGRAMS[name]
    path = f"tools/oracle/target/{name}.json"
    s = json.load(open(path, encoding="utf-8"))
    assert _engine(s) == T.scenario_engine(target(d["program"], *d["set"]).args)
    ours = checked(path, d["program"], tuple(d["set"])).run()[0]
    assert O.diff(ours, _vllm(path)) == []


def test_the_adaptive_scenario_needs_the_adaptive_threshold():
    s = dict(json.load(open("tools/oracle/target/adaptive.json")), adaptive=False)
    p = program_for_scenario(s)
    assert O.diff(O.scenario_outcome(simulate(p), p), _vllm("tools/oracle/target/adaptive.json")) != []


VLLM = os.path.join(".venv-vllm", "bin", "python")
needs_vllm = pytest.mark.skipif(not os.path.exists(VLLM), reason="needs .venv-vllm (make vllm-env)")

PARSE = """
import json, os, sys
os.environ["VLLM_TARGET_DEVICE"] = "cpu"; os.environ["VLLM_PLUGINS"] = ""
from vllm.engine.arg_utils import EngineArgs
from vllm.utils.argparse_utils import FlexibleArgumentParser
a = EngineArgs.from_cli_args(EngineArgs.add_cli_args(FlexibleArgumentParser()).parse_args(sys.argv[2:]))
print(json.dumps({k: getattr(a, "scheduling_policy" if k == "scheduling_policy" else k) for k in json.loads(sys.argv[1])}))
"""


@pytest.mark.vllm
@needs_vllm
def test_vllms_own_parser_reads_the_flags_as_the_json():
    args = target("examples/multi-turn/vllm.sq").args
    out = subprocess.run([VLLM, "-c", PARSE, json.dumps(list(args))] + T.flags(args).split(),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == args


@pytest.mark.vllm
@needs_vllm
def test_the_harness_gives_the_committed_outputs_of_the_exported_engines():
    from serq.oracle.vllm import Harness
    with Harness() as h:
        for name in sorted(PROGRAMS):
            path = f"tools/oracle/target/{name}.json"
            got = h.ask(json.load(open(path)))
            assert O.strip(got) == O.strip(_vllm(path)), name
