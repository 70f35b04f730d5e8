"""Prefill/decode disaggregation against two real vLLM schedulers
(tools/oracle/vllm_pd_oracle.py): every committed P/D scenario agrees on every
field; the observable the decoder's load gate reads, worked by hand."""

from __future__ import annotations

import pytest

from serq.link import compile_source
from serq.sim import simulate

PREFILLING = """fn main() {
  device gpu { kv cap 100; }
  engine llm on gpu {
    reqs cap 4;
    tokens cap 8;
    schedule { advance running; admit waiting while (running.preempted == 0); }
    execute (1);
  }
  pool kv on gpu { block 4; evict lru; preempt lifo; }
  pool reqs on llm { queue fifo; }
  stage gate : delay;
  workload { arrive batch(2); }
  server {
    branch (serial == 0) {
      hold reqs (cost(reqs, 1)), kv (cost(kv, min(18, budget_left(llm)))) reserve (cost(kv, 18)) {
        run llm prefill (cost(llm, 18)) growing kv;
        run llm decode (cost(llm, 3)) growing kv;
      }
    } else {
      run gate (cost(gate, 0.5));
      observe a = prefilling(kv);
      run gate (cost(gate, 1));
      observe b = prefilling(kv);
      run gate (cost(gate, 1));
      observe c = prefilling(kv);
      run gate (cost(gate, 1));
      observe e = prefilling(kv);
    }
  }
}
"""


def test_prefilling_is_what_the_running_prefills_have_still_to_allocate():
    """An 18-token prompt, a budget of 8, blocks of 4.  The iteration at 0
    admits it with 8 tokens' blocks (2 blocks): its prefill ends at 18, 5
    blocks, so at 0.5 it has 20 - 8 = 12 units still to take; the iteration
    at 1 grows it to 16 (4 to go at 1.5); the one at 2 serves the last 2
    tokens and grows it to 20 (nothing to go at 2.5); from 3 it decodes,
    and a decode is no prefill (0 at 3.5)."""
    rep = simulate(compile_source(PREFILLING, "t.sq", horizon=20.0))
    got = {name: [v for _, _, _, v in rep.samples(name)] for name in ("a", "b", "c", "e")}
    assert got == {"a": [12.0], "b": [4.0], "c": [0.0], "e": [0.0]}


# ---------------------------------------------------------------- the committed suite
import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

from serq.cli import pd_program  # noqa: E402
from serq.oracle import pd as PD  # noqa: E402


def _inputs(pattern):
    return sorted(p for p in glob.glob(pattern) if not p.endswith((".out.json", ".log.json")))


NAMED = _inputs("tools/oracle/pd/*.json")
RANDOM = _inputs("tools/oracle/pd/random/*.json")


def _committed(path, kind="out"):
    with open(path[:-5] + f".{kind}.json", encoding="utf-8") as f:
        return json.load(f)


def _ours(path, log=False):
    s = PD.load(path)
    p = pd_program(s)
    rep = simulate(p, step_log=log)
    return PD.outcome(rep, p), rep


@pytest.mark.parametrize("path", NAMED + RANDOM, ids=os.path.basename)
def test_pd_scenario_agrees_with_two_vllm_schedulers(path):
    ours, _ = _ours(path)
    assert PD.diff(ours, _committed(path)) == []


@pytest.mark.parametrize("path", NAMED, ids=os.path.basename)
def test_named_pd_scenarios_agree_tick_for_tick(path):
    """What each instance scheduled, admitted, preempted, loaded and freed, in
    every tick of the committed --steps log."""
    ours, rep = _ours(path, log=True)
    theirs = _committed(path, "log")
    assert PD.first_divergence(PD.ours_by_tick(rep.step_log, ours), PD.theirs_by_tick(theirs["log"])) is None


def test_the_pd_suites_are_there_and_show_what_they_are_named_for():
    names = {os.path.basename(p)[:-5] for p in NAMED}
    assert len(names) >= 8 and len(RANDOM) >= 50
    # random scenarios where D's cache holds part of a shared prompt it would read
    shared_hits = [p for p in RANDOM if any(r["d_cached"] > 0 and "prefix" in PD.load(p)["requests"][r["req"]]
                                           for r in _committed(p)["requests"])]
    assert len(shared_hits) >= 5
    log = {n: _committed(f"tools/oracle/pd/{n}.json", "log")["log"] for n in names}
    out = {n: {r["req"]: r for r in _committed(f"tools/oracle/pd/{n}.json")["requests"]} for n in names}
    # load_hol: r2's load (2 blocks) waits behind r1's (10) with 3-7 blocks free
    assert all(t["D"]["free_blocks"] >= 3 and t["D"]["loading"] == [] for t in log["load_hol"][3:21])
    assert out["load_hol"][2]["xfer_start"] == out["load_hol"][1]["xfer_start"] == 22
    # p_held: P full of blocks waiting for reads; r2 admitted once they are freed
    assert all(t["P"]["free_blocks"] == 0 and t["P"]["sending"] == [0, 1] for t in log["p_held"][1:8])
    assert out["p_held"][2]["p_first"] == 10
    # d_seqcap: D at max_seqs 1 from tick 3 to 13: r2's load waits, P keeps its blocks
    assert all(t["P"]["sending"] == [2] for t in log["d_seqcap"][3:14])
    assert out["d_seqcap"][2]["xfer_start"] == 14
    # preemption on D (local recompute, no second read) and on P under a chunk cap
    assert out["d_preempt"][1]["d_preemptions"] == 1 and log["d_preempt"][16]["D"]["tokens"] == {"1": 16}
    assert out["p_preempt"][1]["p_preemptions"] == 1 and log["p_preempt"][4]["P"]["preempted"] == [1]
    # prefix caching on both sides: a preemption on each
    assert out["prefix"][1]["p_preemptions"] == 1 and out["prefix"][2]["d_preemptions"] == 1
    # shared_prefix: requests that start with one shared prompt (24 tokens, 6
    # blocks); r1 finds it in both caches and D reads only its last 2 tokens;
    # r2's prompt is all shared: both hits stop a block short of its end
    # (the last token is computed); at tick 5 D starts r2's load (6 blocks)
    # and r3's (3) with 6 blocks free, as r2's first 5 are D's cached ones
    sp = out["shared_prefix"]
    assert [(sp[i]["p_cached"], sp[i]["d_cached"]) for i in range(4)] == [(0, 0), (24, 24), (20, 20), (0, 0)]
    assert log["shared_prefix"][4]["D"]["free_blocks"] == 6 and log["shared_prefix"][5]["D"]["loads"] == [2, 3]
    # mixed_xfer: r2's read (6 ticks) began before r3's (1 tick): r2 gets the slot first
    assert out["mixed_xfer"][2]["d_first"] < out["mixed_xfer"][3]["d_first"]
    assert out["mixed_xfer"][2]["xfer_start"] == out["mixed_xfer"][3]["xfer_start"] == 2
    # load_gate: r1's load waits at tick 10 beside r2's unfinished recompute
    assert log["load_gate"][10]["D"]["tokens"] == {"2": 16, "3": 1} and log["load_gate"][11]["D"]["loads"] == [1]
    # chunk_loads: r1 recomputes alone, 4 a tick, while r2's read is in flight
    assert [t["D"]["tokens"] for t in log["chunk_loads"][17:21]] == [{"1": 4}] * 4


def test_first_divergence_names_the_tick_instance_and_what_each_did():
    theirs = PD.theirs_by_tick([
        {"tick": 0, "P": {"tokens": {"0": 8}, "admitted": [0], "preempted": [], "free_blocks": 3,
                          "freed": [], "sending": []},
         "D": {"tokens": {}, "admitted": [], "preempted": [], "free_blocks": 9, "loads": [], "loading": []}},
        {"tick": 1, "P": {"tokens": {}, "admitted": [], "preempted": [], "free_blocks": 3, "freed": [],
                          "sending": [0]},
         "D": {"tokens": {}, "admitted": [], "preempted": [], "free_blocks": 7, "loads": [0], "loading": [0]}}])
    ours = PD.ours_by_tick([{"stage": "P[0]", "time": 0.0, "tokens": {0: 8.0}, "admitted": [0], "preempted": [],
                             "free": 12.0}],
                           {"requests": [{"req": 0, "xfer_start": 2, "p_freed": 4}]})
    assert PD.report(ours, theirs) == (
        "first divergence at tick 1:\n"
        "  serQ  P: scheduled nothing | D: scheduled nothing\n"
        "  vLLM  P: scheduled nothing | D: scheduled nothing; started the read of r0\n"
        "before it (both):\n"
        "  tick 0: P: scheduled {r0: 8}; admitted r0 | D: scheduled nothing")


def test_pd_fuzz_scenarios_are_feasible_and_the_shrinker_keeps_the_property():
    from serq.oracle import fuzz as F, pd_fuzz as G
    for i in range(200):
        s = G.generate(7, i)
        PD.check(s)
        assert G.feasible(s)
    assert G.generate(7, 3) == G.generate(7, 3)
    big = G.generate(7, 4)
    small = F.shrink_with(big, lambda c: any(r["prompt"] >= 5 for r in c["requests"]), F.pd_candidates,
                          G.feasible)
    assert len(small["requests"]) == 1 and small["requests"][0]["prompt"] == 5
    assert small["requests"][0]["out"] == 1 and G.feasible(small)


from .helpers import VLLM, needs_vllm  # noqa: E402,F401


@pytest.mark.vllm
@needs_vllm
@pytest.mark.parametrize("seed", ["0", "4242"])
def test_the_pd_harness_is_what_is_committed_whatever_pythonhashseed(seed, tmp_path):
    batch = tmp_path / "in.jsonl"
    paths = NAMED + RANDOM[:10]
    batch.write_text("".join(json.dumps(json.load(open(p))) + "\n" for p in paths))
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run([VLLM, "tools/oracle/vllm_pd_oracle.py", "--batch", str(batch)],
                         capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert got == [_committed(p) for p in paths]


@pytest.mark.vllm
@needs_vllm
def test_serq_oracle_pd_diff_says_agree_and_times_both():
    from click.testing import CliRunner
    from serq.cli import main
    r = CliRunner().invoke(main, ["oracle", "pd", "--diff", "tools/oracle/pd/mixed_xfer.json"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("agree\ntime: serQ ")


@pytest.mark.vllm
@needs_vllm
def test_a_small_pd_fuzz_finds_no_disagreement(tmp_path):
    from click.testing import CliRunner
    from serq.cli import main
    r = CliRunner().invoke(main, ["oracle", "pd-fuzz", "--n", "30", "--seed", "3", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "pd-fuzz: 30 scenarios (seed 3), 0 disagreed" in r.output


# ---------------------------------------------------------------- the time clock
def test_one_request_through_the_time_clock_program_worked_by_hand():
    """examples/pd-disaggregation/vllm_nixl_pull.sq, one request of 1 000
    prompt tokens and 10 output tokens, alone (its defaults: 16-token blocks,
    c + a * tokens + b * kv = 12 ms + 60 us a token + 0.2 us a token of KV,
    NICs of 161 000 tokens/s, x0 = 6.7 ms).

    P at 0: the whole prompt in one iteration, its KV 63 blocks (1 008):
      0.012 + 0.06 + 0.0002016 = 0.0722016, P's answer.
    D at once admits the load (no token, no iteration); the read waits x0 and
      carries 1 000 tokens through both NICs alone: 0.0067 + 1000 / 161000.
    D recomputes the last prompt token: 0.012 + 0.00006 + 0.0002016 (the
      first token), then 9 decodes of 1 token, 8 on 1 008 units of KV and
      the last on 1 024: 9 * 0.01206 + 2e-7 * (8 * 1008 + 1024)."""
    import dataclasses
    from serq.ir import model as M
    from serq.link import compile_file
    p = compile_file("examples/pd-disaggregation/vllm_nixl_pull.sq", horizon=10.0)
    turn = ((p.attrs.index("prompt"), 1000.0), (p.attrs.index("o"), 10.0))
    p = dataclasses.replace(p, arrival=M.ASessions((M.SessionSpec(attrs=(), turns=(turn,)),)))
    rep = simulate(p)
    prefill = 0.012 + 0.00006 * 1000 + 0.0000002 * 1008
    read = 0.0067 + 1000 / 161000
    first = 0.012 + 0.00006 + 0.0000002 * 1008
    decodes = 9 * (0.012 + 0.00006) + 0.0000002 * (8 * 1008 + 1024)
    got = {n: [v for _, _, _, v in rep.samples(n)] for n in ("prefill", "load_wait", "read", "lease")}
    assert got["prefill"] == [pytest.approx(prefill, abs=1e-12)]
    assert got["load_wait"] == [0.0]
    assert got["read"] == [pytest.approx(read, abs=1e-12)] and got["lease"] == got["read"]
    c = rep.data()["client"]
    assert c["ttft"]["mean"] == pytest.approx(prefill + read + first, abs=1e-12)
    assert c["response"]["mean"] == pytest.approx(prefill + read + first + decodes, abs=1e-12)
    assert c["tpot"]["mean"] == pytest.approx(decodes / 9, abs=1e-12)


def test_a_pd_scenario_that_could_never_run_is_refused_with_its_reason(tmp_path):
    from click.testing import CliRunner
    from serq.cli import main
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"P": {"budget": 8, "max_seqs": 2, "block_size": 4, "num_blocks": 4},
                               "D": {"budget": 8, "max_seqs": 2, "block_size": 4, "num_blocks": 4},
                               "xfer_steps": 1, "proxy_delay": 0,
                               "requests": [{"prompt": 12, "out": 6, "arrive": 0}]}))
    r = CliRunner().invoke(main, ["oracle", "pd", str(bad)])
    assert r.exit_code == 1
    assert r.output.startswith(f"error[E951]: {bad}: $.requests[0] needs 5 KV blocks on D (17 tokens in blocks "
                               "of 4) and D has 4: it could never run\n")
    r = CliRunner().invoke(main, ["oracle", "pd", str(tmp_path / "none.json")])
    assert r.exit_code == 1 and r.output.startswith(f"error[E950]: cannot read the P/D scenario {tmp_path}/none.json")


def test_pd_diff_says_which_field_of_which_request_parts():
    ours = {"requests": [{"req": 0, "p_first": 1, "d_last": 5}], "ticks": 6}
    theirs = {"requests": [{"req": 0, "p_first": 2, "d_last": 5}, {"req": 1}], "ticks": 7, "vllm": "0.33.0"}
    assert PD.diff(ours, theirs) == ["request 0: p_first serQ 1 vLLM 2", "request 1: only vLLM has it",
                                     "ticks: serQ 6 vLLM 7"]
    assert PD.diff(ours, dict(ours, vllm="0.33.0")) == []
