"""A measured run's workload (LLMServingSim's bundles: their exact prompts,
output lengths and arrival steps) through examples/replay/vllm_measured.sq
on the step clock agrees, request for request, with vLLM 0.33.0's and
0.19.0's real schedulers (the committed outputs of
tools/oracle/vllm_measured_oracle.py, `tools/oracle/regen_measured.py`);
with 0.19.0's free queue (`cache shared fifo;`) for 0.19.0."""

import json
import os

import pytest

from serq.api.harness import harness_program
from serq.oracle import measured as MS
from serq.sim import simulate

from .helpers import needs_vllm

HERE = os.path.join("tools", "oracle", "measured")
SHARED = os.path.join("..", "shared", "data", "llmservingsim")
needs_shared = pytest.mark.skipif(not os.path.isdir(SHARED), reason="needs ../shared/data (the measured runs' "
                                                                   "workloads are not in the repository)")
NAMES = ["rtxpro6000_llama8b", "rtx4090_llama8b", "rtxpro6000_qwen32b"]


def committed(name, version):
    suffix = ".out.json" if version == "0.33.0" else ".v0.19.out.json"
    with open(os.path.join(HERE, name + suffix)) as f:
        return json.load(f)


def ours(name, version):
    s = MS.load(os.path.join(HERE, name + ".json"))
    s["free_fifo"] = version == "0.19.0"
    return MS.outcome(simulate(harness_program(MS, s), client_log=True), s)


@needs_shared
@pytest.mark.parametrize("version", ["0.33.0", "0.19.0"])
@pytest.mark.parametrize("name", NAMES)
def test_serq_agrees_with_vllms_scheduler_on_every_request(name, version):
    theirs = committed(name, version)
    assert theirs["vllm"] == version and theirs["async"] is False
    mine = ours(name, version)
    assert MS.diff(mine, theirs) == []
    assert len(mine["requests"]) == 300


def test_the_two_versions_part_only_on_the_rtx_4090_run_by_one_step_of_three_requests():
    # 0.19.0's free queue (every freed block to its tail) evicts a cached
    # block 0.33.0 keeps; nothing else differs, and on the runs whose KV is
    # never short nothing at all
    for name in NAMES:
        a, b = committed(name, "0.33.0"), committed(name, "0.19.0")
        diff = [(x, y) for x, y in zip(a["requests"], b["requests"]) if x != y]
        if name != "rtx4090_llama8b":
            assert diff == []
            continue
        assert [x["i"] for x, _ in diff] == [254, 288, 289]
        assert all(y["first"] - x["first"] == 1 and y["last"] - x["last"] == 1 for x, y in diff)
        assert a["preemptions"] == b["preemptions"] == 196


def test_asynchronous_scheduling_admits_a_step_late_after_a_request_ends():
    # the RTX PRO 6000 runs are bound by max_num_seqs (128): the first 128
    # requests are served as synchronously, each later one's admission waits
    # a step or two for the place an ending request frees a call later
    for name in ("rtxpro6000_llama8b", "rtxpro6000_qwen32b"):
        for version in ("0.33.0", "0.19.0"):
            sync, asyn = committed(name, version), committed(name + "_async", version)
            assert asyn["async"] is True
            shift = [y["first"] - x["first"] for x, y in zip(sync["requests"], asyn["requests"])]
            assert shift[:128] == [0] * 128
            assert sorted(set(shift[128:])) == [1, 2] and sum(1 for d in shift if d) == 172
            assert all(y["last"] - y["first"] == x["last"] - x["first"]
                       for x, y in zip(sync["requests"], asyn["requests"]))


@needs_vllm
@needs_shared
def test_the_harness_reproduces_its_committed_output(tmp_path):
    from serq.oracle.vllm import MEASURED, run_once
    spec = json.load(open(os.path.join(HERE, "rtxpro6000_llama8b.json")))
    spec["workload"] = os.path.abspath(os.path.join(HERE, spec["workload"]))
    spec["count"] = 40
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec))
    theirs, _ = run_once(str(path), script=MEASURED)
    s = MS.load(str(path))
    assert MS.diff(MS.outcome(simulate(harness_program(MS, s), client_log=True), s), theirs) == []
