#!/usr/bin/env python3
"""vLLM-scheduler oracle: run a serQ scenario through vLLM 0.33.0's real v1
Scheduler + KV-cache manager, step by step, with a fake model runner.

Usage (under .venv-vllm/bin/python):
    vllm_oracle.py SCENARIO.json [--steps]
    vllm_oracle.py --batch IN.jsonl [--steps]     (one scenario per line in,
                                                   one output per line out)

Scenario:
    {"budget": 64, "max_seqs": 4, "block_size": 4, "num_blocks": 20,
     "chunk": 0, "prefix_caching": false, "policy": "fcfs",
     "requests": [{"prompt": 30, "out": 5, "arrive": 0, "priority": 0}, ...]}
  ("policy" is SchedulerConfig.policy, "fcfs" or "priority"; a request's
  "priority" is vLLM's, lower first, 0 by default.)

Output:
    {"first": {"0": t, ...}, "done": {"0": t, ...}, "preemptions": n,
     "steps": n, "vllm": "0.33.0"}
  plus, with --steps, "log": one entry per step
    {"step": k, "tokens": {"i": n}, "admitted": [i], "preempted": [i],
     "free_blocks": n}.
See README.md in this directory for the exact conventions.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle_core as core  # noqa: E402  (sets env, guards stdout)
from oracle_core import ScenarioError  # noqa: E402

SCENARIO_KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "adaptive",
                 "prefix_caching", "policy", "requests"}
REQUEST_KEYS = {"prompt", "out", "arrive", "priority"}
POLICIES = ("fcfs", "priority")  # SchedulerConfig.policy (config/scheduler.py:159)

# Token ids.  Every prompt token of every request is distinct (request i's
# prompt takes the next block of ids), so no two requests share a prefix even
# with prefix caching on.  Output tokens come from a separate range.
PROMPT_TOKEN_BASE = 1000
OUTPUT_TOKEN_BASE = 600_000
TOKEN_LIMIT = 1_048_576  # vocab_size of tiny_model/config.json


def parse_scenario(obj) -> dict:
    where = "scenario"
    core._check_keys(obj, SCENARIO_KEYS, where)
    p = core.engine_params(obj, where, prefix_caching_default=False)
    p["policy"] = obj.get("policy", "fcfs")
    p["adaptive"] = core._bool_field(obj, "adaptive", where, False)
    if p["policy"] not in POLICIES:
        raise ScenarioError(f"{where}: field 'policy' must be one of {list(POLICIES)}, "
                            f"got {p['policy']!r}")
    parsed = core.request_list(obj, where, REQUEST_KEYS,
                               (("prompt", 1, None), ("out", 1, None), ("arrive", 0, 0)))
    for i, (r, q) in enumerate(zip(obj["requests"], parsed)):
        q["priority"] = _priority(r, f"{where}: requests[{i}]")
    total_prompt = sum(r["prompt"] for r in parsed)
    if PROMPT_TOKEN_BASE + total_prompt >= OUTPUT_TOKEN_BASE:
        raise ScenarioError(f"{where}: too many prompt tokens in total ({total_prompt})")
    core.check_feasible(
        p, [(f"requests[{i}]", r["prompt"], r["out"]) for i, r in enumerate(parsed)], where
    )
    p["requests"] = parsed
    return p


def _priority(r: dict, where: str) -> int:
    """A request's vLLM priority: any integer, 0 by default (lower first)."""
    val = r.get("priority", 0)
    if isinstance(val, bool) or not isinstance(val, int):
        raise ScenarioError(f"{where}: field 'priority' must be an integer, got {val!r}")
    return val


def request_id(i: int, n: int) -> str:
    """Request i's id, zero-padded to one width: under the PRIORITY policy
    vLLM breaks a tie of (priority, arrival_time) by the request id, a string
    (v1/request.py:357-367), so equal widths make that tie the request
    index, which the serQ program reads as `serial`."""
    return str(i).zfill(len(str(max(n - 1, 0))))


def run_scenario(sc: dict, keep_log: bool) -> dict:
    reqs = sc["requests"]
    max_model_len = core.model_len_for(
        sc, max((r["prompt"] + r["out"] for r in reqs), default=1))
    sched, hasher = core.build_scheduler(sc, max_model_len)

    def token_for(req) -> int:
        # Deterministic fake sampled token: depends on the request and the
        # output position only.
        i = int(req.request_id)
        return OUTPUT_TOKEN_BASE + (i * 7919 + req.num_output_tokens) % (
            TOKEN_LIMIT - OUTPUT_TOKEN_BASE)

    drv = core.Driver(sched, token_for)
    rid = [request_id(i, len(reqs)) for i in range(len(reqs))]
    prompt_ids = []
    nxt = PROMPT_TOKEN_BASE
    for r in reqs:
        prompt_ids.append(list(range(nxt, nxt + r["prompt"])))
        nxt += r["prompt"]

    # Arrivals in time order; equal times keep request-index order.
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i]["arrive"], i))
    pos = 0
    log = []
    # Safety net against a livelock (cannot happen for feasible scenarios):
    # every step either computes a token or is one of a bounded number of
    # idle/empty calls.
    limit = (max((r["arrive"] for r in reqs), default=0) + 10
             + 4 * sum(r["prompt"] + r["out"] for r in reqs) * (1 + len(reqs)))
    while True:
        k = drv.step
        while pos < len(order) and reqs[order[pos]]["arrive"] <= k:
            i = order[pos]
            drv.add_request(core.make_request(
                rid[i], prompt_ids[i], reqs[i]["out"], reqs[i]["arrive"], hasher,
                priority=reqs[i]["priority"]))
            pos += 1
        if not (drv.has_work() or pos < len(order)):
            break
        if k >= limit:
            raise RuntimeError(f"no completion after {k} steps (livelock?)")
        rec = drv.run_step()
        if keep_log:
            log.append({
                "step": rec["step"],
                "tokens": {str(int(r)): n for r, n in sorted(
                    rec["scheduled"].items(), key=lambda kv: int(kv[0]))},
                "admitted": [int(x) for x in rec["admitted"]],
                "preempted": [int(x) for x in rec["preempted"]],
                "free_blocks": rec["free_blocks"],
            })

    drv.check_preemption_count()
    n = len(reqs)
    missing = [i for i in range(n) if rid[i] not in drv.finished]
    if missing:
        raise RuntimeError(f"requests {missing} never finished")
    out = {
        "first": {str(i): drv.first[rid[i]] for i in range(n)},
        "done": {str(i): drv.finished[rid[i]] for i in range(n)},
        "preemptions": drv.preemptions,
        "steps": drv.step,
        "vllm": core.vllm_version(),
    }
    out["_self_preemptions"] = drv.self_preemptions
    if keep_log:
        out["log"] = log
    return out


def finalize(out: dict, stats: bool) -> dict:
    sp = out.pop("_self_preemptions")
    if stats:
        out["self_preemptions"] = sp
    return out


def main(argv=None) -> int:
    return core.command_line(
        argv, "Run serQ scenarios through vLLM 0.33.0's real scheduler.", "scenario",
        lambda obj, args, where: finalize(run_scenario(parse_scenario(obj), args.steps), args.stats),
        serve_note=" (one vLLM import for a whole fuzzing session)",
        options=[(("--stats",), {"action": "store_true",
                                 "help": "also report self_preemptions (not part of the compared output)"})])


if __name__ == "__main__":
    sys.exit(main())
