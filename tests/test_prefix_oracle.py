"""The content-addressed prefix cache against vLLM 0.33.0's real scheduler.

* Slices of Mooncake's conversation trace (tools/oracle/mooncake/*.json,
  Kimi's production traffic, requests sharing prefixes by their block hashes)
  replayed by examples/replay/mooncake.sq agree with vLLM's committed outputs
  on every field of every request, the preemptions and the steps.
* Multi-turn traces whose sessions share a system prompt
  (tools/oracle/shared/*.json) agree as well; with per-session cache entries
  (the default) they cannot.
* Where no content is shared across sessions (every committed scenario and
  trace of the per-session programs), the same programs with `cache shared;`
  give vLLM's answers too.

CI needs no vLLM: the outputs are committed (tools/oracle/regen.sh)."""

import dataclasses
import glob
import json
import os

import pytest

from serq.cli import mooncake_program, scenario_program, trace_program
from serq.oracle import mooncake as MC
from serq.oracle import outcome as O
from serq.sim import simulate


def _inputs(pattern):
    return sorted(p for p in glob.glob(pattern) if not p.endswith((".out.json", ".log.json", ".ir.json")))


MOONCAKE = _inputs("tools/oracle/mooncake/*.json")
SHARED = _inputs("tools/oracle/shared/*.json")
TRACES = _inputs("tools/oracle/traces/*.json")
SCENARIOS = _inputs("tools/oracle/scenarios/*.json") + _inputs("tools/oracle/random/*.json")
from .helpers import MOONCAKE as MOONCAKE_TRACE, VLLM, needs_mooncake, needs_vllm  # noqa: E402,F401


def _vllm(path):
    with open(path[:-5] + ".out.json", encoding="utf-8") as f:
        return json.load(f)


def _shared_kv(p):
    return dataclasses.replace(p, pools=tuple(dataclasses.replace(x, shared=True) if x.name == "kv" else x
                                              for x in p.pools))


@needs_mooncake
@pytest.mark.parametrize("path", MOONCAKE, ids=os.path.basename)
def test_mooncake_slice_agrees_with_vllm(path):
    s = MC.load(path)
    ours = MC.outcome(simulate(mooncake_program(s)), s)
    assert MC.diff(ours, _vllm(path)) == []


@needs_mooncake
def test_the_mooncake_slices_are_what_the_issue_asks_for():
    """Three slices or more, on different engines, one with hundreds of
    preemptions; every request shares at least the trace's system prompt."""
    engines = set()
    most = 0
    for path in MOONCAKE:
        s = MC.load(path)
        engines.add(json.dumps(s["engine"], sort_keys=True))
        out = _vllm(path)
        most = max(most, out["preemptions"])
        assert len(out["requests"]) == s["count"]
        assert sum(r["cached"] > 0 for r in out["requests"]) > 0.9 * s["count"]
    assert len(MOONCAKE) >= 3 and len(engines) >= 3 and most >= 200


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_shared_system_prompt_trace_agrees_with_vllm(path):
    _, p = trace_program(path)
    assert p.pools[[x.name for x in p.pools].index("kv")].shared
    ours = O.trace_outcome(simulate(p), p)
    assert O.diff(ours, _vllm(path)) == []


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_per_session_entries_cannot_share_a_system_prompt(path):
    """The same trace with the default cache: a session's first turn finds
    nothing, where vLLM finds the prompt another session computed."""
    _, p = trace_program(path)
    per_session = dataclasses.replace(p, pools=tuple(dataclasses.replace(x, shared=False) for x in p.pools))
    ours = O.trace_outcome(simulate(per_session), per_session)
    theirs = _vllm(path)
    first_turns = [(a, b) for a, b in zip(ours["requests"], theirs["requests"]) if a["turn"] == 0]
    assert all(a["cached"] == 0 for a, _ in first_turns)
    assert any(b["cached"] > 0 for _, b in first_turns)


@pytest.mark.parametrize("path", TRACES, ids=os.path.basename)
def test_a_trace_without_sharing_agrees_with_a_shared_cache_too(path):
    _, p = trace_program(path)
    ours = O.trace_outcome(simulate(_shared_kv(p)), p)
    assert O.diff(ours, _vllm(path)) == []


def test_every_scenario_agrees_with_a_shared_cache_too():
    bad = []
    for path in SCENARIOS:
        _, p = scenario_program(path)
        ours = O.scenario_outcome(simulate(_shared_kv(p)), p)
        if O.diff(ours, _vllm(path)):
            bad.append(path)
    assert len(SCENARIOS) >= 80 and bad == []


def test_a_trace_without_a_prefix_compiles_to_the_program_as_written():
    from serq.ir import dumps
    for path in TRACES:
        _, p = trace_program(path)
        assert not any(x.shared for x in p.pools)
        with open(path[:-5] + ".ir.json", encoding="utf-8") as f:
            assert f.read() == dumps(p)


def test_the_mooncake_spec_is_checked():
    from serq.diag import SerqError
    with pytest.raises(SerqError) as e:
        MC.check({"engine": {"budget": 8, "max_seqs": 1, "block_size": 4, "num_blocks": 4},
                  "step_ms": 10, "rows": [{"timestamp": 0, "input_length": 10, "output_length": 1,
                                           "hash_ids": [1]}], "hash_block": 4}, "x.json")
    assert e.value.render().split("\n")[0] == (
        "error[E951]: x.json: $.rows[0].hash_ids is not a Mooncake row: 10 input tokens need 3 hash ids (one per "
        "block of 4 tokens), not 1")
    with pytest.raises(SerqError) as e:
        MC.check({"engine": {"budget": 8, "max_seqs": 1, "block_size": 4, "num_blocks": 4}, "step_ms": 0,
                  "rows": []}, "x.json")
    assert e.value.render().split("\n")[0] == "error[E951]: x.json: $.step_ms is 0: a positive number below 2^53"


@pytest.mark.vllm
@needs_vllm
@needs_mooncake
def test_oracle_mooncake_diff_agrees_on_a_slice(tmp_path):
    from click.testing import CliRunner
    from serq.cli import main
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({
        "engine": {"budget": 4096, "max_seqs": 16, "block_size": 16, "num_blocks": 8000, "chunk": 1024},
        "trace": os.path.abspath(MOONCAKE_TRACE), "step_ms": 100,
        "first": 40, "count": 25}))
    r = CliRunner().invoke(main, ["oracle", "mooncake", str(spec), "--diff"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("agree\n25 requests, ")


@pytest.mark.vllm
@needs_vllm
def test_the_committed_shared_outputs_are_what_vllm_gives_now():
    import subprocess
    path = "tools/oracle/shared/shared_tenants.json"
    out = subprocess.run([VLLM, "tools/oracle/vllm_replay_oracle.py", path], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == _vllm(path)


def test_fuzz_inputs_with_shared_content_are_feasible_and_share():
    import random
    from serq.oracle import fuzz as F, replay as R
    shared = 0
    for i in range(120):
        s = F.generate_mooncake(random.Random(f"5:{i}"), i)
        MC.check(s, "fuzz")
        assert F.feasible_mooncake(s)
        ids = [h for r in s["rows"] for h in r["hash_ids"]]
        shared += len(ids) > len(set(ids))
        t = F.generate_replay(random.Random(f"5:{i}"), i)
        R.check(t, "fuzz")
        assert F.feasible_replay(t)
    assert shared > 100
    # shrinking keeps the property and feasibility
    big = F.generate_mooncake(random.Random("5:8"), 8)
    small = F.shrink_with(big, lambda c: any(r["input_length"] >= 5 for r in c["rows"]),
                          F.candidates_mooncake, F.feasible_mooncake)
    assert len(small["rows"]) == 1 and small["rows"][0]["input_length"] == 5
    assert small["rows"][0]["output_length"] == 1 and F.feasible_mooncake(small)


@pytest.mark.vllm
@needs_vllm
@pytest.mark.parametrize("harness", ["mooncake", "replay"])
def test_a_small_fuzz_with_shared_content_finds_no_disagreement(tmp_path, harness):
    from click.testing import CliRunner
    from serq.cli import main
    r = CliRunner().invoke(main, ["oracle", "fuzz", "--harness", harness, "--n", "20", "--seed", "3",
                                  "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert f"fuzz: 20 {harness} inputs with shared content (seed 3), 0 disagreed" in r.output
