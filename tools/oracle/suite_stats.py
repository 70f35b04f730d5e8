#!/usr/bin/env python3
"""Which scheduler behaviours a set of scenarios exercises (runs under
.venv-vllm/bin/python).

    suite_stats.py tools/oracle/random/r*.json          # summary
    suite_stats.py -v tools/oracle/scenarios/*.json     # + per-scenario rows
    suite_stats.py tools/oracle/traces/*.json           # cached vs full prefix

Runs each scenario through the same oracle code as vllm_oracle.py, watching
the real scheduler's state around every schedule() call (read only), and
counts per scenario:

  pre      preemption events (vLLM's own count)        chain: >= 2 of them
  self     self-preemptions (the victim was the request being grown)
  cap      steps where the chunk cap bound: a prefill chunk == chunk while
           more prompt was left
  lifted   steps where a chunk > chunk was scheduled (cap lifted: one request)
  seqcap   steps that ended with max_seqs running and a request waiting
  hol      steps (without preemption) that left budget and a sequence slot
           unused while the waiting head did not fit in the free KV blocks
           but a request behind it would have
  rpart    resumed requests whose first chunk after the resume was partial
           (no token sampled for it)
  rhit     resumed requests that found their own earlier blocks in the
           prefix cache (prefix_caching true only)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle_core as core  # noqa: E402
import vllm_oracle  # noqa: E402

COLS = ["pre", "self", "cap", "lifted", "seqcap", "hol", "rpart", "rhit"]


def watch(sc: dict) -> dict:
    counts = {c: 0 for c in COLS}
    orig_run_step = core.Driver.run_step

    def run_step(self):
        sched = self.sched
        before = {rid: (r.num_computed_tokens, r.num_tokens, r.num_preemptions)
                  for rid, r in sched.requests.items()}
        so_holder = {}
        orig_schedule = sched.schedule

        def schedule(*a, **kw):
            so = orig_schedule(*a, **kw)
            so_holder["so"] = so
            # state right after schedule(), before the fake runner
            sched_tokens = dict(so.num_scheduled_tokens)
            free = sched.kv_cache_manager.block_pool.get_num_free_blocks()
            waiting = list(sched.waiting)
            so_holder["after"] = (sched_tokens, free, waiting, len(sched.running),
                                  {rid: (r.num_computed_tokens, r.num_tokens,
                                         r.num_preemptions, r.status)
                                   for rid, r in sched.requests.items()})
            return so

        sched.schedule = schedule
        try:
            rec = orig_run_step(self)
        finally:
            del sched.schedule
        sched_tokens, free, waiting, n_running, after = so_holder["after"]
        chunk = sc["chunk"]
        for rid, n in sched_tokens.items():
            comp_after, ntok, npre, _ = after[rid]
            start = comp_after - n
            if rid in rec["admitted"] and npre > 0:
                if comp_after < ntok:
                    counts["rpart"] += 1
                if start > 0:
                    counts["rhit"] += 1
            if chunk > 0 and n == chunk and ntok - start > chunk and ntok - start > 1:
                counts["cap"] += 1
            if chunk > 0 and n > chunk:
                counts["lifted"] += 1
        if waiting and n_running >= sc["max_seqs"]:
            counts["seqcap"] += 1
        if (waiting and not rec["preempted"] and n_running < sc["max_seqs"]
                and sum(sched_tokens.values()) < sc["budget"]):
            bs = sc["block_size"]
            head_need = math.ceil(waiting[0].num_tokens / bs)
            behind = [math.ceil(r.num_tokens / bs) for r in waiting[1:]]
            if head_need > free and any(b <= free for b in behind):
                counts["hol"] += 1
        return rec

    core.Driver.run_step = run_step
    try:
        out = vllm_oracle.run_scenario(sc, keep_log=False)
    finally:
        core.Driver.run_step = orig_run_step
    counts["pre"] = out["preemptions"]
    counts["self"] = out["_self_preemptions"]
    return counts


def trace_rows(name: str, obj: dict) -> list:
    """Replay a trace; compare each turn's cached tokens with its full
    cacheable prefix: the previous turn computed KV for P + O - 1 tokens
    (its last sampled token is never fed back), so at most
    block_size * floor((P + O - 1) / block_size) tokens can hit."""
    import vllm_replay_oracle
    tr = vllm_replay_oracle.parse_trace(obj)
    out = vllm_replay_oracle.run_trace(tr)
    bs = tr["block_size"]
    lines = []
    for r in out["requests"]:
        turns = tr["sessions"][r["session"]]["turns"]
        t = r["turn"]
        full = 0
        if t > 0:
            prev = turns[t - 1]
            full = bs * ((prev["prompt"] + prev["out"] - 1) // bs)
        mark = "  <-- evicted: fewer than the full prefix" if r["cached"] < full else ""
        lines.append(f"{name:<20} session {r['session']} turn {t}: sent {r['sent']:>3} "
                     f"first {r['first']:>3} last {r['last']:>3} cached {r['cached']:>4} "
                     f"of {full:>4}{mark}")
    lines.append(f"{name:<20} steps {out['steps']}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="scenario JSON files")
    ap.add_argument("-v", action="store_true", help="print one row per scenario")
    args = ap.parse_args(argv)
    files = [f for f in args.files if not f.endswith((".out.json", ".log.json"))]
    rows = []
    lines = []
    for f in files:
        obj = core.load_json_file(f, "scenario")
        if isinstance(obj, dict) and "sessions" in obj:
            lines += trace_rows(os.path.basename(f), obj)
            continue
        sc = vllm_oracle.parse_scenario(obj)
        rows.append((os.path.basename(f), sc, watch(sc)))
    if not rows:
        core.emit("\n".join(lines))
        return 0
    if args.v:
        lines.append(f"{'scenario':<16} pc chunk seqs " + " ".join(f"{c:>6}" for c in COLS))
        for name, sc, c in rows:
            lines.append(f"{name:<16} {'y' if sc['prefix_caching'] else 'n'}  {sc['chunk']:>5} "
                         f"{sc['max_seqs']:>4} " + " ".join(f"{c[k]:>6}" for k in COLS))
    n = len(rows)

    def cnt(pred):
        return sum(1 for _, sc, c in rows if pred(sc, c))

    summary = {
        "scenarios": n,
        "with >=1 preemption": cnt(lambda sc, c: c["pre"] >= 1),
        "with a preemption chain (>=2)": cnt(lambda sc, c: c["pre"] >= 2),
        "with a self-preemption": cnt(lambda sc, c: c["self"] >= 1),
        "total preemptions": sum(c["pre"] for _, _, c in rows),
        "prefix_caching true": cnt(lambda sc, c: sc["prefix_caching"]),
        "  ... and a resumed request hit its own blocks": cnt(lambda sc, c: c["rhit"] >= 1),
        "with a resumed partial chunk": cnt(lambda sc, c: c["rpart"] >= 1),
        "chunk > 0": cnt(lambda sc, c: sc["chunk"] > 0),
        "  ... cap binding in some step": cnt(lambda sc, c: c["cap"] >= 1),
        "  ... cap lifted (lone request) in some step": cnt(lambda sc, c: c["lifted"] >= 1),
        "chunk == 0": cnt(lambda sc, c: sc["chunk"] == 0),
        "max_seqs binding in some step": cnt(lambda sc, c: c["seqcap"] >= 1),
        "head-of-line blocking in some step": cnt(lambda sc, c: c["hol"] >= 1),
        "staggered arrivals (some arrive > 0)": cnt(
            lambda sc, c: any(r["arrive"] > 0 for r in sc["requests"])),
    }
    lines.append("")
    for k, val in summary.items():
        lines.append(f"{k:<46} {val}")
    core.emit("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
