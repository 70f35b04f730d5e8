"""Asynchronous scheduling as the vLLM programs say it (docs/calibration.md,
"Asynchronous scheduling"): `await;` before a request's `at admission` (so
before its hold) makes it
sit out its engine's next schedule (vLLM's engine has already made the batch
of the next iteration when it arrives), `await;` after its last decode
keeps its place and KV through the next one (the batch after it was made
before it ended), and an iteration without a token takes no time.  Worked
by hand on the step clock (an iteration with tokens lasts 1)."""

from __future__ import annotations

from serq.calib.replay import client_times
from serq.sim import simulate

from .helpers import link

ENGINE = """
  device gpu {{ kv cap 100; }}
  engine e on gpu {{
    reqs cap 4;
    tokens cap 64;
    schedule {{ advance running; admit waiting taking reqs (1), kv (known) reserve (known); }}
    execute (batch.tokens == 0 ? 0 : 1);
    request (prompt, output) {{
      {head}
      at admission {{ known = prompt; }}
      prefill (known) growing kv;
      decode (output - 1) growing kv;
      observe last_token = now;
      {tail}
    }}
  }}
  pool kv on gpu {{ block 1; evict lru; preempt lifo; }}
  pool reqs on e {{ queue fifo; }}
  stage gate : delay;
  workload {{
    arrive batch(2);
    init {{ set prompt = 4; set o = 3; set arrive = serial * {second}; }}
    session {{ run gate (cost(gate, arrive)); turn; }}
  }}
  server {{ e (prompt, o); observe done = now; }}
"""


def run(second, asyn):
    aw = "await;" if asyn else ""
    p = link(ENGINE.format(head=aw, tail=aw, second=second), horizon=100.0)
    rep = simulate(p, step_log=True, client_log=True)
    admitted = {s: r["time"] for r in rep.step_log for s in r["admitted"]}
    last = {s: v for _, s, _, v in rep.samples("last_token")}
    done = {s: v for _, s, _, v in rep.samples("done")}
    return admitted, last, done, rep


def test_a_request_arriving_while_an_iteration_runs_sits_out_the_next():
    """r0 (4 + 3 tokens) arrives at an idle engine at 0: admitted at once in
    both (its own await runs an iteration of no token and no time), prefill
    in [0, 1), decodes in [1, 2) and [2, 3).  r1 arrives at 1.5, while
    iteration 1 runs: synchronously it is admitted at 2; asynchronously the
    batch of iteration 2 was made as iteration 1 started, so r1 sits it out
    and is admitted at 3, beside r0, which awaits through iteration 3
    holding its slot and leaves at 4.  The last tokens are out at 3 (r0)
    and 5 (sync) or 6 (async) for r1, whose own await then takes no time."""
    admitted, last, done, _ = run(1.5, False)
    assert admitted == {0: 0.0, 1: 2.0}
    assert last == done == {0: 3.0, 1: 5.0}
    admitted, last, done, rep = run(1.5, True)
    assert admitted == {0: 0.0, 1: 3.0}
    assert last == {0: 3.0, 1: 6.0}
    assert done == {0: 4.0, 1: 6.0}
    # what the measured-run replay reads as the last token: the start of the
    # iteration after the last that computed one (r0's await, at 3)
    assert client_times(rep)[1] == {0: 3.0, 1: 6.0}
    assert [(r["time"], r["tokens"]) for r in rep.step_log] == [
        (0.0, {}), (0.0, {0: 4.0}), (1.0, {0: 1.0}), (2.0, {0: 1.0}), (3.0, {1: 4.0}),
        (4.0, {1: 1.0}), (5.0, {1: 1.0}), (6.0, {})]


def test_a_request_arriving_during_the_last_decode_of_another_is_kept_for_the_next_iteration():
    """r1 arrives at 2.5, while r0's last decode runs: when that iteration
    ends r0's decode is done and r1 is a resident waiting to sit out the next
    schedule; it stays (it is not a resident whose run ended), the next
    iteration has no token (r0 awaits, r1 sits out) and takes no time, and
    r1 is admitted at 3, as vLLM's engine schedules it once the output of the
    batch in flight frees r0."""
    admitted, last, done, rep = run(2.5, True)
    assert admitted == {0: 0.0, 1: 3.0}
    assert last == {0: 3.0, 1: 6.0}
    assert [(r["time"], r["tokens"]) for r in rep.step_log][4:6] == [(3.0, {}), (3.0, {1: 4.0})]
    assert rep.data()["run"]["ended"] == 2


def test_the_multi_turn_program_schedules_asynchronously_when_asked():
    """examples/multi-turn/vllm.sq has vllm_measured.sq's `async_sched`, off
    by default: its engine is vLLM's asynchronous scheduler only with it,
    and a turn that reaches a busy engine then sits out a schedule."""
    import json
    import subprocess
    import sys
    prog = "examples/multi-turn/vllm.sq"

    def target(*sets):
        r = subprocess.run([sys.executable, "-m", "serq.cli", "target", prog, "--engine", "vllm", "--json", *sets],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["async_scheduling"]

    assert target() is False and target("--set", "async_sched=1") is True
    from serq.link import compile_file
    ttft = {a: simulate(compile_file(prog, horizon=300.0, sets={"async_sched": a})).data()["client"]["ttft"]
            for a in ("0", "1")}
    assert abs(ttft["0"]["count"] - ttft["1"]["count"]) <= 2      # the same sessions, to the horizon
    # one more iteration (about 20 ms at this load) before most turns' first token
    assert 0.015 < ttft["1"]["mean"] - ttft["0"]["mean"] < 0.03, ttft
