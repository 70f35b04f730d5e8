#!/usr/bin/env python3
"""Generate seeded random scheduler scenarios for the vLLM oracle (stdlib and
serq.files only: it runs under .venv-vllm).

    gen_random.py --n 64 --seed 1 --out tools/oracle/random

writes DIR/r000.json ... r{n-1}.json (standard library only; any Python 3).
The same --seed always gives byte-identical files: scenario i draws from
random.Random(f"{seed}:{i}"), independent of --n and of PYTHONHASHSEED.

Scenario i has a "flavour" i % 5 that steers it towards one behaviour, and
the remaining knobs are drawn freely:
  0 kvtight   - many requests, mostly at 0, KV at 30-60 % of their peak sum:
                preemption chains (victim after victim)
  1 selfpre   - 2-3 requests with near-equal prompts and KV just above one
                request's peak: the newest running request preempts itself
  2 chunk     - long prompts and a chunk cap (long_prefill_token_threshold)
                well below them
  3 seqcap    - max_seqs 1-3 with 4-8 requests and roomy KV
  4 staggered - arrivals spread over time, mixed sizes
prefix_caching is true for i % 3 == 2 (a third of the suite); chunk is 0 for
some scenarios of every flavour but "chunk".

With --policy priority the same scenarios run under vLLM's PRIORITY policy:
each request also gets an integer priority, drawn from
random.Random(f"{seed}:{i}:priority") (so the rest of the scenario is the
FCFS suite's scenario i), from a few values so that ties are common, and the
files are named pNNN.json.

Every scenario is feasible: each request alone fits the KV cache
(ceil((prompt + out - 1) / block_size) <= num_blocks), which the oracle
checks too.

    gen_random.py --pd --n 60 --seed 1 --out tools/oracle/pd/random

writes P/D scenarios DIR/p000.json ... instead, drawn by the generator of
`serq oracle pd-fuzz` (serq/oracle/pd_fuzz.py, standard library only, loaded
by its path so that this script needs no serQ installed).

    gen_random.py --sglang --n 300 --seed 1 --out tools/oracle/sglang/random

writes SGLang scenarios DIR/g000.json ..., drawn by the generator of
`serq oracle sglang-fuzz` (serq/oracle/sglang_fuzz.py, loaded the same way).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_format import dumps_output  # noqa: E402

# (the files are written through serq.files, whole, never over one that is
# there unless --force: regen.py removes the suites' before it writes them)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from serq import files  # noqa: E402
from serq.diag import SerqError  # noqa: E402

FLAVOURS = ["kvtight", "selfpre", "chunk", "seqcap", "staggered"]
BUDGETS = [16, 24, 32, 48, 64, 96, 128, 256]


def need(prompt: int, out: int, bs: int) -> int:
    return math.ceil((prompt + out - 1) / bs)


def gen_one(seed: int, i: int) -> dict:
    rng = random.Random(f"{seed}:{i}")
    flavour = FLAVOURS[i % len(FLAVOURS)]
    bs = rng.choice([4, 8, 16])
    budget = rng.choice(BUDGETS)
    max_seqs = rng.randint(2, 8)
    chunk = 0 if rng.random() < 0.45 else rng.choice([4, 8, 12, 16, 32, 64])
    reqs = []

    def prompt_len(lo=1, hi=120):
        # log-uniform-ish: plenty of short prompts, some long ones
        return max(lo, min(hi, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))))

    if flavour == "kvtight":
        n = rng.randint(3, 8)
        for _ in range(n):
            reqs.append({"prompt": prompt_len(4, 100), "out": rng.randint(8, 48),
                         "arrive": rng.choice([0, 0, 0, rng.randint(0, 4)])})
        frac = rng.uniform(0.3, 0.6)
    elif flavour == "selfpre":
        n = rng.randint(2, 3)
        base = rng.randint(8, 60)
        gap = rng.randint(0, 3)
        for j in range(n):
            reqs.append({"prompt": max(1, base + rng.randint(-bs // 2, bs // 2)),
                         "out": rng.randint(bs, 3 * bs + 10),
                         "arrive": 0 if j == 0 else rng.randint(0, gap)})
        frac = rng.uniform(0.5, 0.8)
        budget = max(budget, 16)
    elif flavour == "chunk":
        n = rng.randint(2, 6)
        for _ in range(n):
            reqs.append({"prompt": prompt_len(20, 200), "out": rng.randint(1, 20),
                         "arrive": rng.choice([0, 0, rng.randint(0, 6)])})
        chunk = rng.choice([4, 8, 12, 16, 24, 32])
        budget = rng.choice([32, 48, 64, 96, 128])
        frac = rng.uniform(0.6, 1.3)
    elif flavour == "seqcap":
        n = rng.randint(4, 8)
        max_seqs = rng.randint(1, 3)
        for _ in range(n):
            reqs.append({"prompt": prompt_len(1, 80), "out": rng.randint(1, 30),
                         "arrive": rng.choice([0, 0, rng.randint(0, 10)])})
        budget = rng.choice([64, 96, 128, 256])
        frac = rng.uniform(0.8, 1.5)
    else:  # staggered
        n = rng.randint(3, 8)
        t = 0
        for _ in range(n):
            reqs.append({"prompt": prompt_len(1, 150), "out": rng.randint(1, 40), "arrive": t})
            t += rng.randint(0, 8)
        frac = rng.uniform(0.35, 1.1)

    needs = [need(r["prompt"], r["out"], bs) for r in reqs]
    num_blocks = max(max(needs), int(sum(needs) * frac))
    if flavour == "selfpre":
        # just above the largest single request, so two cannot both finish
        num_blocks = max(needs) + rng.randint(0, max(1, max(needs) // 3))
    return {
        "budget": budget,
        "max_seqs": max_seqs,
        "block_size": bs,
        "num_blocks": num_blocks,
        "chunk": chunk,
        "prefix_caching": i % 3 == 2,
        "requests": reqs,
    }


def pd_generator(name: str = "pd_fuzz"):
    """``generate`` of serq/oracle/NAME.py (pd_fuzz, sglang_fuzz), loaded by
    its path (standard library only)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "serq", "oracle", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


def with_priorities(sc: dict, seed: int, i: int) -> dict:
    """Scenario ``sc`` under the PRIORITY policy, its requests' priorities
    drawn from their own stream (lower is served first, as vLLM orders them)."""
    rng = random.Random(f"{seed}:{i}:priority")
    levels = rng.choice([[0, 1], [0, 1, 2], [-1, 0, 3], [0, 0, 1, 5]])
    out = dict(sc)
    out["policy"] = "priority"
    out["requests"] = [dict(r, priority=rng.choice(levels)) for r in sc["requests"]]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, required=True, help="number of scenarios")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--pd", action="store_true", help="P/D scenarios (pNNN.json)")
    ap.add_argument("--sglang", action="store_true",
                    help="SGLang scenarios (gNNN.json, serq/oracle/sglang_fuzz.py)")
    ap.add_argument("--policy", choices=["fcfs", "priority"], default="fcfs",
                    help="vLLM's scheduling policy (priority: pNNN.json with request priorities)")
    ap.add_argument("--force", action="store_true", help="write over a scenario file that is there")
    args = ap.parse_args(argv)
    if args.n < 1 or args.n > 1000:
        ap.error("--n must be in 1..1000")
    if args.pd and args.sglang:
        ap.error("give at most one of --pd and --sglang")
    os.makedirs(args.out, exist_ok=True)
    pd_gen = pd_generator() if args.pd else None
    sg_gen = pd_generator("sglang_fuzz") if args.sglang else None
    for i in range(args.n):
        if args.sglang:
            sc, name = sg_gen(args.seed, i), f"g{i:03d}.json"
        elif args.pd:
            sc, name = pd_gen(args.seed, i), f"p{i:03d}.json"
        else:
            sc = gen_one(args.seed, i)
            name = f"r{i:03d}.json"
            if args.policy == "priority":
                sc, name = with_priorities(sc, args.seed, i), f"p{i:03d}.json"
        try:
            files.write_file(os.path.join(args.out, name), dumps_output(sc, one_line=False) + "\n",
                             what="--out ", mark=files.unmarked("gen_random.py"), force=args.force)
        except SerqError as e:
            print(e.render(), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
