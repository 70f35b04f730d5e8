"""The engine against vLLM's real scheduler.

The request scenarios (tools/oracle/{chunked,hol,longchunk,mixed,preempt,seqcap}
and `alone`) and the multi-turn prefix-cache scenario (`cache_trace`) give, per
request, the step of its first token and of its last, and the preemptions,
that vLLM's scheduler gives (the right-hand sides of the Lean theorems in
serving-queue-theory's SerqOracle.lean, and alone.out.json); the program is the
reference's vLLM request on the step clock, built as IR by hand
(vllm_program.py).  `preempt_delay` is the reference interpreter's regression
(a growth while another holder is away from the engine).
"""

import csv
import os

import pytest

from serq.ir import model as M
from serq.sim import simulate

from builder import A, Builder, cond, now
from vllm_program import CACHE_TRACE, SCENARIOS, vllm_replay, vllm_request


def _samples(report, tmp_path, name):
    report.dump(str(tmp_path))
    with open(os.path.join(tmp_path, name + ".csv")) as f:
        return [(int(r["session"]), float(r["time"]), float(r["value"])) for r in csv.DictReader(f)]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_vllm_request_scenario(name, tmp_path):
    sc = SCENARIOS[name]
    prog = vllm_request(sc["requests"], sc["budget"], sc["max_seqs"], sc["block_size"], sc["num_blocks"],
                        sc["chunk"])
    r = simulate(prog)
    first = {s: v for s, _, v in _samples(r, tmp_path, "first")}
    done = {s: v for s, _, v in _samples(r, tmp_path, "done")}
    assert first == {k: float(v) for k, v in sc["first"].items()}
    assert done == {k: float(v) for k, v in sc["done"].items()}
    assert sum(p["preemptions"] for p in r.data()["pools"]) == sc["preemptions"]


def test_vllm_cache_trace(tmp_path):
    r = simulate(vllm_replay(CACHE_TRACE["turns"]))
    for name in ("sent", "ttft", "latency", "cached_tokens"):
        got = sorted((s, t, v) for s, t, v in _samples(r, tmp_path, name))
        assert [(s, int(v)) for s, _, v in got] == CACHE_TRACE[name], name
    pools = {p["name"]: p for p in r.data()["pools"]}
    # the request slots keep no prefix: the hold grew, so each pool caches
    # its position, and reqs's is the (empty) prefix it consumed
    assert pools["reqs"]["cached"] == 0.0
    assert pools["kv"]["evictions"] > 0


def preempt_delay():
    b = Builder("examples/oracle/preempt_delay.sq")
    kv = b.pool("kv", cap=48, block=16, preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False))
    slots = b.pool("slots", cap=4)
    engine = b.step("engine", 64, 1, memory=kv)
    tool = b.stage("tool", M.KDelay())
    b.set_admit_via(slots, engine)
    d = b.attr("d")
    b.init([b.set(d, cond(A(M.SLOT["serial"]).eq(0), 1, 10))])
    b.session([
        b.turn(),
        b.hold([(slots, 1), (kv, 16)], [
            b.run(engine, 16, mode="Prefill", growing=kv),
            b.run(tool, A(d)),
            b.run(engine, 20, mode="Decode", growing=kv),
            b.observe("done", now()),
        ]),
        b.end(),
    ])
    return b.program(arrival=M.ABatch(2), horizon=1000)


def test_preempt_delay(tmp_path):
    """The victim is the resident admitted last; the session in the delay is
    no resident, so the grower preempts itself (done 65 and 43, 8
    preemptions)."""
    r = simulate(preempt_delay())
    done = {s: v for s, _, v in _samples(r, tmp_path, "done")}
    assert done == {0: 65.0, 1: 43.0}
    assert r.data()["pools"][0]["preemptions"] == 8
