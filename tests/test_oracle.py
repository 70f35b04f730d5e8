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


def test_the_committed_ir_files_are_the_programs_run_here():
    from serq.ir import dumps
    for path in NAMED:
        _, p = scenario_program(path)
        with open(path[:-5] + ".ir.json", encoding="utf-8") as f:
            assert f.read() == dumps(p)


VLLM = os.path.join(".venv-vllm", "bin", "python")


@pytest.mark.vllm
@pytest.mark.skipif(not os.path.exists(VLLM), reason="needs .venv-vllm (make vllm-env)")
def test_the_committed_outputs_are_what_vllm_gives_now():
    out = subprocess.run([VLLM, "tools/oracle/vllm_oracle.py", "tools/oracle/scenarios/hol.json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == _vllm("tools/oracle/scenarios/hol.json")
