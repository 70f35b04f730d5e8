"""serQ against vLLM 0.33.0's real scheduler: every committed scenario and
trace must agree exactly (first/done/preemptions/steps; sent/first/last/cached).

The vLLM outputs (tools/oracle/**/*.out.json) were produced by the harness
driving the real scheduler; CI needs no vLLM to compare against them."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from serq.cli import scenario_program, trace_program
from serq.oracle import outcome as O
from serq.sim import simulate


def _inputs(pattern):
    return sorted(p for p in glob.glob(pattern)
                  if not p.endswith((".out.json", ".log.json", ".ir.json")))


NAMED = _inputs("tools/oracle/scenarios/*.json")
RANDOM = _inputs("tools/oracle/random/*.json")
TRACES = _inputs("tools/oracle/traces/*.json")
PRIORITY = _inputs("tools/oracle/priority/*.json")
PRIORITY_RANDOM = _inputs("tools/oracle/priority/random/*.json")


def _vllm(path):
    with open(path[:-5] + ".out.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("path", NAMED + RANDOM, ids=os.path.basename)
def test_scenario_agrees_with_vllm(path):
    _, p = scenario_program(path)
    ours = O.scenario_outcome(simulate(p), p)
    assert O.diff(ours, _vllm(path)) == []


@pytest.mark.parametrize("path", TRACES, ids=os.path.basename)
def test_prefix_cache_trace_agrees_with_vllm(path):
    _, p = trace_program(path)
    ours = O.trace_outcome(simulate(p), p)
    assert O.diff(ours, _vllm(path)) == []


def test_the_suites_are_there():
    assert len(NAMED) == 7 and len(RANDOM) >= 50 and len(TRACES) >= 3
    assert len(PRIORITY) == 5 and len(PRIORITY_RANDOM) >= 50


@pytest.mark.parametrize("path", PRIORITY + PRIORITY_RANDOM, ids=os.path.basename)
def test_priority_scenario_agrees_with_vllm(path):
    """vLLM's PRIORITY policy (SchedulerConfig(policy="priority")): the
    scenario runs examples/oracle/vllm_request_priority.sq."""
    s, p = scenario_program(path)
    assert s["policy"] == "priority" and "vllm_request_priority.sq" in p.files[0]
    ours = O.scenario_outcome(simulate(p), p)
    assert O.diff(ours, _vllm(path)) == []


@pytest.mark.parametrize("path", PRIORITY, ids=os.path.basename)
def test_the_named_priority_scenarios_are_not_fcfs_ones(path):
    """Each named scenario shows the policy: run as FCFS (the FCFS program,
    which agrees with vLLM's FCFS scheduler) it gives another outcome."""
    from serq.cli import program_for_scenario
    s = dict(json.load(open(path, encoding="utf-8")), policy="fcfs")
    p = program_for_scenario(s)
    assert O.diff(O.scenario_outcome(simulate(p), p), _vllm(path)) != []


def test_the_committed_ir_files_are_the_programs_run_here():
    from serq.ir import dumps
    for path in NAMED:
        _, p = scenario_program(path)
        with open(path[:-5] + ".ir.json", encoding="utf-8") as f:
            assert f.read() == dumps(p)


from .helpers import VLLM, needs_vllm  # noqa: E402,F401

@pytest.mark.vllm
@pytest.mark.skipif(not os.path.exists(VLLM), reason="needs .venv-vllm (make vllm-env)")
def test_the_committed_outputs_are_what_vllm_gives_now():
    out = subprocess.run([VLLM, "tools/oracle/vllm_oracle.py", "tools/oracle/scenarios/hol.json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == _vllm("tools/oracle/scenarios/hol.json")




@pytest.mark.vllm
@needs_vllm
def test_oracle_diff_says_agree_and_times_both():
    from click.testing import CliRunner
    from serq.cli import main
    r = CliRunner().invoke(main, ["oracle", "diff", "tools/oracle/scenarios/preempt.json"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("agree\ntime: serQ ")


@pytest.mark.vllm
@needs_vllm
def test_a_small_fuzz_finds_no_disagreement(tmp_path):
    from click.testing import CliRunner
    from serq.cli import main
    r = CliRunner().invoke(main, ["oracle", "fuzz", "--n", "30", "--seed", "3", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "fuzz: 30 scenarios (seed 3), 0 disagreed" in r.output


def test_first_divergence_names_the_step_and_both_sides():
    from serq.oracle import divergence as D
    theirs = D.theirs_by_step([
        {"step": 0, "tokens": {"0": 8}, "admitted": [0], "preempted": [], "free_blocks": 3},
        {"step": 1, "tokens": {"0": 1}, "admitted": [], "preempted": [], "free_blocks": 3},
        {"step": 2, "tokens": {"0": 1, "1": 4}, "admitted": [1], "preempted": [], "free_blocks": 1}])
    ours = D.ours_by_step([
        {"time": 0.0, "tokens": {0: 8.0}, "admitted": [0], "preempted": [], "free": 12.0},
        {"time": 1.0, "tokens": {0: 1.0}, "admitted": [], "preempted": [], "free": 12.0},
        {"time": 2.0, "tokens": {0: 1.0}, "admitted": [], "preempted": [], "free": 12.0}], block=4)
    assert D.report(ours, theirs) == (
        "first divergence at step 2:\n"
        "  serQ: scheduled {r0: 1}; 3 blocks free\n"
        "  vLLM: scheduled {r0: 1, r1: 4}; admitted r1; 1 blocks free\n"
        "before it (both):\n"
        "  step 0: scheduled {r0: 8}; admitted r0; 3 blocks free\n"
        "  step 1: scheduled {r0: 1}; 3 blocks free")


def test_fuzz_scenarios_are_feasible_and_shrinking_keeps_the_property():
    import random
    from serq.oracle import fuzz as F, scenario as S
    for i in range(300):
        s = F.generate(random.Random(f"7:{i}"), i)
        S.check(s)
        assert F.feasible(s)
    big = F.generate(random.Random("7:3"), 3)
    # a stand-in for "disagrees": some request has a prompt of at least 5
    small = F.shrink(big, lambda c: any(r["prompt"] >= 5 for r in c["requests"]))
    assert len(small["requests"]) == 1 and small["requests"][0]["prompt"] == 5
    assert small["requests"][0]["out"] == 1 and F.feasible(small)
