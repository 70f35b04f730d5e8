"""Overload is a result, not a failure (issue 23): a run with stuck sessions
finishes, exits 0 and says in its `stuck:` note what vLLM would be doing and
what to change; a run that does not finish exits 1.  An engine's `completed`
and `throughput` count requests (turns), not runs."""

import json

from click.testing import CliRunner

import serq
from serq.cli import main

STUCK = """fn main() {
  device gpu { kv cap 32; }
  engine e on gpu { tokens cap 100; schedule { advance running; admit waiting taking kv (16); } execute (1); }
  pool kv on gpu { block 16; preempt lifo; }
  workload { arrive batch(1); }
  server { hold kv (cost(kv, 16)) { run e prefill (cost(e, 64)) growing kv; } }
}
"""


def test_stuck_sessions_finish_with_exit_0_and_an_explanation(tmp_path):
    p = tmp_path / "stuck.sq"
    p.write_text(STUCK)
    r = CliRunner().invoke(main, ["run", str(p), "--horizon", "10", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["run"]["stuck"] == 1 and d["pools"][0]["stuck"] == 1
    (note,) = [n for n in d["notes"] if n.startswith("stuck:")]
    assert note == ("stuck: 1 session preempted again without advancing past their previous preemption at pool kv: "
                    "a preemption storm (vLLM's scheduler, when its KV cache cannot hold what the running requests "
                    "grow to, preempts the last admitted and recomputes it, again and again); the run finished, and "
                    "their stuck turns are not in its figures. To change: a lower load, fewer requests at once "
                    "(vLLM's max_num_seqs), more KV blocks (num_gpu_blocks), shorter requests or another instance")
    # a run that does not finish is the failure
    r = CliRunner().invoke(main, ["run", str(p), "--horizon", "1e9", "--max-events", "100"])
    assert r.exit_code == 1 and "error[R019]" in r.output


def test_an_engine_completes_requests_not_runs():
    rep = serq.load("examples/multi-turn/vllm.sq").run(horizon=100000, warmup=0, arrivals=12, seed=3)
    (vllm,) = [s for s in rep.stages.values() if s.name == "vllm"]
    # every turn ran a prefill and a decode on the engine: counted once each
    assert vllm.completed == rep.run.turns == rep.client["response"].count
    assert vllm.throughput == vllm.completed / rep.run.end
    assert rep.pools["kv"].preemptions == 0
    # a request's runs there added up: within its response, which adds the waits between them
    assert 0 < vllm.service <= rep.client["response"].mean
