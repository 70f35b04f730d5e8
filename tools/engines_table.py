#!/usr/bin/env python3
"""The engine programs side by side under one workload: TTFT, TPOT,
throughput and preemptions at two loads, mean and spread over seeds.

    tools/engines_table.py [--seeds 5] [--horizon 300] [--warmup 30]

The multi-turn engines run examples/multi-turn/vllm.sq's workload (each
program carries it); FasterTransformer runs the single-turn one, beside
examples/single-turn/vllm_single_turn.sq.  Every engine gets the same
sessions on a seed (tests/test_engines.py checks the traffic is the same).
Prints a Markdown table: mean ± standard deviation over the seeds; the
throughput is the turns answered per second after the warm-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MULTI = [("vLLM", "examples/multi-turn/vllm.sq"), ("SGLang", "examples/engines/sglang.sq"),
         ("TensorRT-LLM (no evict)", "examples/engines/tensorrt_llm.sq"),
         ("TensorRT-LLM (max util.)", "examples/engines/tensorrt_llm_max_utilization.sq"),
         ("TGI", "examples/engines/tgi.sq"), ("vllm-ascend SRF", "examples/vendors/vllm_ascend_srf.sq")]
SINGLE = [("vLLM", "examples/single-turn/vllm_single_turn.sq"),
          ("FasterTransformer", "examples/single-turn/fastertransformer.sq")]


def one(path: str, lam: float, seed: int, horizon: float, warmup: float) -> dict:
    from serq.cli import load_program
    from serq.sim import simulate
    d = simulate(load_program(os.path.join(ROOT, path), (f"Lambda={lam}",), horizon=horizon, warmup=warmup,
                              seed=seed)).data()
    c = d["client"]
    kv = next(p for p in d["pools"] if p["name"] == "kv")
    return {"ttft": c["ttft"]["mean"], "tpot": c["tpot"]["mean"],
            "thru": c["response"]["count"] / (d["run"]["end"] - warmup), "pre": kv["preemptions"]}


def cell(xs: list[float], fmt: str) -> str:
    m = statistics.fmean(xs)
    s = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{m:{fmt}} ± {s:{fmt}}"


def table(title: str, engines, loads, seeds, horizon, warmup) -> list[str]:
    out = [f"**{title}**", "",
           "| engine | λ (sessions/s) | TTFT (s) | TPOT (s) | throughput (turns/s) | preemptions |",
           "| --- | --- | --- | --- | --- | --- |"]
    for lam in loads:
        for name, path in engines:
            rs = [one(path, lam, s, horizon, warmup) for s in range(1, seeds + 1)]
            out.append(f"| {name} | {lam:g} | {cell([r['ttft'] for r in rs], '.3f')} | "
                       f"{cell([r['tpot'] for r in rs], '.4f')} | {cell([r['thru'] for r in rs], '.2f')} | "
                       f"{cell([r['pre'] for r in rs], '.0f')} |")
            print(out[-1], file=sys.stderr, flush=True)
    return out + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=float, default=300.0)
    ap.add_argument("--warmup", type=float, default=30.0)
    args = ap.parse_args(argv)
    lines = table("Multi-turn agent workload (examples/multi-turn/vllm.sq's), 256 000 KV tokens, 64 requests",
                  MULTI, (0.6, 1.0), args.seeds, args.horizon, args.warmup)
    lines += table("Single-turn workload (examples/single-turn/vllm_single_turn.sq's)",
                   SINGLE, (2.0, 4.0), args.seeds, args.horizon, args.warmup)
    print(f"{args.seeds} seeds, horizon {args.horizon:g} s, warm-up {args.warmup:g} s; mean ± standard deviation\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
