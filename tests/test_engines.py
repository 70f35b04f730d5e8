"""The engine programs (examples/engines/, examples/single-turn/fastertransformer.sq,
examples/vendors/): each runs the vLLM program's workload, says what it
models, and shows the behaviour its header claims where vLLM's engine does
not."""

import os
import re

import pytest

from serq.cli import load_program
from serq.diag import SerqError
from serq.oracle import target as T
from serq.sim import simulate

MULTI = ["examples/engines/sglang.sq", "examples/engines/tensorrt_llm.sq",
         "examples/engines/tensorrt_llm_max_utilization.sq", "examples/engines/tgi.sq",
         "examples/vendors/vllm_ascend_srf.sq"]
SINGLE = ["examples/single-turn/fastertransformer.sq"]
VLLM_MULTI = "examples/multi-turn/vllm.sq"
VLLM_SINGLE = "examples/single-turn/vllm_single_turn.sq"


def run(path, *sets, arrivals=None, horizon=200.0, seed=1):
    p = load_program(path, sets, horizon=horizon, warmup=0.0, seed=seed, arrivals=arrivals)
    return simulate(p).data()


def kv(d):
    return next(p for p in d["pools"] if p["name"] == "kv")


@pytest.mark.parametrize("path", MULTI + SINGLE, ids=os.path.basename)
def test_the_header_says_what_it_models_leaves_out_and_how_it_differs(path):
    text = open(path, encoding="utf-8").read()
    head = text[:text.index("use \"std/args\"")]
    for part in ("What it models", "What it leaves out", "How it differs from examples/"):
        assert part in head, part
    assert re.search(r"at [0-9a-f]{7}|SGLang 0\.5\.23", head), "no pinned revision"


@pytest.mark.parametrize("path", MULTI + SINGLE, ids=os.path.basename)
def test_each_runs_the_vllm_programs_traffic(path):
    """The same sessions and turns as the vLLM program on the same seed: the
    workload is vLLM's (arrivals drained, so every turn is answered)."""
    ref = VLLM_SINGLE if path in SINGLE else VLLM_MULTI
    load = ("Lambda=1",) if path in SINGLE else ("Lambda=0.6",)
    a = run(path, *load, arrivals=30, horizon=1e5, seed=4)
    b = run(ref, *load, arrivals=30, horizon=1e5, seed=4)
    assert a["run"]["arrivals"] == b["run"]["arrivals"] == 30
    assert a["run"]["turns"] == b["run"]["turns"] and a["run"]["turns"] >= 30
    assert a["client"]["response"]["count"] == b["client"]["response"]["count"] == a["run"]["turns"]


def _with_claim(tmp_path, path, engine):
    src = open(path, encoding="utf-8").read().rstrip()
    assert src.endswith("}")
    src = src[:-1] + f"  claim prefill_alone: every iteration of {engine} (prefilled == 0 || decoders == 0);\n}}\n"
    src = src.replace('use "../lib/vllm.sq";', f'use "{os.path.abspath("examples/lib/vllm.sq")}";')
    out = tmp_path / os.path.basename(path)
    out.write_text(src)
    return str(out)


@pytest.mark.parametrize("path,engine", [("examples/engines/sglang.sq", "sglang"),
                                         ("examples/engines/tgi.sq", "tgi"),
                                         ("examples/single-turn/fastertransformer.sq", "ft")],
                         ids=["sglang", "tgi", "fastertransformer"])
def test_prefills_and_decodes_never_share_a_step_where_vllm_mixes_them(tmp_path, path, engine):
    """The claim, added to a copy of each program (a claim reads and does not
    act), holds on the engine and fails on vLLM's, which mixes them."""
    p = load_program(_with_claim(tmp_path, path, engine), ("Lambda=1",), horizon=60.0)
    verdict = {c["name"]: c["verdict"] for c in simulate(p).data()["claims"]}
    assert verdict == {"prefill_alone": "holds"}
    ref = VLLM_SINGLE if "single-turn" in path else VLLM_MULTI
    q = load_program(_with_claim(tmp_path, ref, "vllm"), ("Lambda=1",), horizon=60.0)
    assert {c["name"]: c["verdict"] for c in simulate(q).data()["claims"]} == {"prefill_alone": "fails"}


def test_guaranteed_no_evict_never_preempts_where_max_utilization_and_vllm_do():
    """At a load where the KV runs out (a small cache), TensorRT-LLM's default
    policy reserves every request's completion and preempts nobody; its
    MAX_UTILIZATION policy and vLLM pause requests."""
    sets = ("Lambda=1", "blocks=1000")
    no_evict = run("examples/engines/tensorrt_llm.sq", *sets)
    max_util = run("examples/engines/tensorrt_llm_max_utilization.sq", *sets)
    vllm = run(VLLM_MULTI, "Lambda=1", "blocks=2000")   # the same 32000 tokens in 16-token blocks
    assert kv(no_evict)["preemptions"] == 0
    assert kv(max_util)["preemptions"] > 0 and kv(vllm)["preemptions"] > 0
    # the reservation holds fewer requests at once
    assert kv(no_evict)["holders"] < kv(max_util)["holders"]


def test_sglang_retracts_decodes_when_its_ratio_overcommits():
    """SGLang's admission charges a new request all its max_new_tokens but the
    running ones only new_token_ratio of theirs, 0.7 × schedule_conservativeness
    at first: on a small cache (8 000 tokens, max_tokens 512) a conservativeness
    of 0.3 overcommits and decodes are retracted; from 1/0.7 on, the ratio is 1
    (every running request charged all it may still write) and none is."""
    sets = ("Lambda=1", "kv_tokens=8000", "max_tokens=512")
    assert kv(run("examples/engines/sglang.sq", *sets, "conserv=0.3"))["preemptions"] > 0
    assert kv(run("examples/engines/sglang.sq", *sets, "conserv=1.5"))["preemptions"] == 0


def test_short_request_first_changes_only_the_order_and_target_refuses_it():
    a = run("examples/vendors/vllm_ascend_srf.sq", "Lambda=1.5", "blocks=2000")
    b = run(VLLM_MULTI, "Lambda=1.5", "blocks=2000")
    assert a["run"]["arrivals"] == b["run"]["arrivals"]
    assert a["client"]["ttft"]["mean"] != b["client"]["ttft"]["mean"]
    with pytest.raises(SerqError, match="the victim of `kv` and the order of `reqs` are not a vLLM policy's"):
        T.vllm(load_program("examples/vendors/vllm_ascend_srf.sq", need_horizon=False))


@pytest.mark.parametrize("path", MULTI[:4] + SINGLE, ids=os.path.basename)
def test_serq_target_refuses_the_other_engines(path):
    with pytest.raises(SerqError, match="not a vLLM 0.33.0 engine"):
        T.vllm(load_program(path, need_horizon=False))
