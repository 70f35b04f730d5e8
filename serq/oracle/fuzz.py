"""Randomized differential testing against vLLM's real scheduler.

`generate(rng)` draws a scenario steered towards one of the behaviours the
correspondence has to get right (preemption chains, self-preemption, the
chunk cap and its lifting, the sequence cap, head-of-line blocking,
staggered arrivals, prefix caching after a preemption); every scenario is
feasible (each request alone fits the KV cache, budget ≥ max_seqs), as vLLM
requires.  `shrink` reduces a disagreeing scenario (fewer requests, smaller
numbers) while it still disagrees.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Callable, Iterator

FLAVOURS = ("kvtight", "selfpre", "chunk", "seqcap", "staggered", "prefix", "wild")


def need(prompt: int, out: int, bs: int) -> int:
    return math.ceil((prompt + out - 1) / bs)


def feasible(s: dict) -> bool:
    bs = s["block_size"]
    return (s["budget"] >= s["max_seqs"] >= 1 and s["num_blocks"] >= 1 and
            all(r["prompt"] >= 1 and r["out"] >= 1 and r.get("arrive", 0) >= 0 and
                need(r["prompt"], r["out"], bs) <= s["num_blocks"] for r in s["requests"]) and
            len(s["requests"]) >= 1)


def generate(rng: random.Random, index: int) -> dict:
    flavour = FLAVOURS[index % len(FLAVOURS)]
    bs = rng.choice([1, 2, 4, 8, 16])
    budget = rng.choice([8, 16, 24, 32, 48, 64, 128, 256])
    max_seqs = rng.randint(1, min(8, budget))
    chunk = 0 if rng.random() < 0.4 else rng.choice([2, 4, 8, 12, 16, 32, 64])
    prefix = rng.random() < 0.35
    reqs = []

    def plen(lo, hi):
        return max(lo, min(hi, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))))

    n = rng.randint(1, 8)
    if flavour == "kvtight":
        reqs = [{"prompt": plen(2, 90), "out": rng.randint(4, 40), "arrive": rng.choice([0, 0, rng.randint(0, 5)])}
                for _ in range(max(3, n))]
        frac = rng.uniform(0.25, 0.6)
    elif flavour == "selfpre":
        base = rng.randint(4, 60)
        reqs = [{"prompt": max(1, base + rng.randint(-bs, bs)), "out": rng.randint(bs, 3 * bs + 8),
                 "arrive": 0 if j == 0 else rng.randint(0, 3)} for j in range(rng.randint(2, 4))]
        frac = 0.0
    elif flavour == "chunk":
        chunk = rng.choice([2, 4, 8, 12, 16, 24])
        reqs = [{"prompt": plen(10, 220), "out": rng.randint(1, 16), "arrive": rng.choice([0, rng.randint(0, 8)])}
                for _ in range(n)]
        frac = rng.uniform(0.5, 1.4)
    elif flavour == "seqcap":
        max_seqs = rng.randint(1, 3)
        reqs = [{"prompt": plen(1, 80), "out": rng.randint(1, 30), "arrive": rng.choice([0, rng.randint(0, 10)])}
                for _ in range(max(4, n))]
        frac = rng.uniform(0.7, 1.6)
    elif flavour == "staggered":
        t = 0
        for _ in range(n):
            reqs.append({"prompt": plen(1, 160), "out": rng.randint(1, 40), "arrive": t})
            t += rng.randint(0, 10)
        frac = rng.uniform(0.3, 1.2)
    elif flavour == "prefix":
        prefix = True
        reqs = [{"prompt": plen(8, 120), "out": rng.randint(8, 50), "arrive": rng.choice([0, rng.randint(0, 4)])}
                for _ in range(max(2, n))]
        frac = rng.uniform(0.3, 0.7)
    else:
        reqs = [{"prompt": rng.randint(1, 200), "out": rng.randint(1, 60), "arrive": rng.randint(0, 20)}
                for _ in range(n)]
        frac = rng.uniform(0.2, 2.0)
    needs = [need(r["prompt"], r["out"], bs) for r in reqs]
    num_blocks = max(max(needs), int(sum(needs) * frac))
    if flavour == "selfpre":
        num_blocks = max(needs) + rng.randint(0, max(1, max(needs) // 3))
    s = {"budget": max(budget, max_seqs), "max_seqs": max_seqs, "block_size": bs, "num_blocks": num_blocks,
         "chunk": chunk, "prefix_caching": prefix, "requests": reqs}
    assert feasible(s)
    return s


def _lower(s: dict, obj: dict, where, keys) -> Iterator[dict]:
    """Copies of scenario ``s`` with one field of ``obj`` (found in a copy by
    ``where``) lowered to its floor, its half or one less."""
    for key, lo in keys:
        if key not in obj and key != "chunk":
            continue
        v = obj.get(key, 0)
        for nv in sorted({lo, v // 2, v - 1}):
            if lo <= nv < v:
                c = copy.deepcopy(s)
                where(c)[key] = nv
                yield c


def _fewer(s: dict) -> Iterator[dict]:
    reqs = s["requests"]
    if len(reqs) > 1:
        for i in range(len(reqs)):
            c = copy.deepcopy(s)
            del c["requests"][i]
            yield c


def _lower_requests(s: dict, keys) -> Iterator[dict]:
    for i, r in enumerate(s["requests"]):
        yield from _lower(s, r, lambda c, i=i: c["requests"][i], keys)


ENGINE_KEYS = (("num_blocks", 1), ("budget", 1), ("max_seqs", 1), ("chunk", 0), ("block_size", 1))


def candidates(s: dict) -> Iterator[dict]:
    """Smaller scenarios, most reducing first."""
    yield from _fewer(s)
    for key in (("prompt", 1), ("out", 1), ("arrive", 0)):
        yield from _lower_requests(s, (key,))
    yield from _lower(s, s, lambda c: c, ENGINE_KEYS)
    if s.get("prefix_caching"):
        c = copy.deepcopy(s)
        c["prefix_caching"] = False
        yield c


def pd_candidates(s: dict) -> Iterator[dict]:
    """Smaller P/D scenarios (serq.oracle.pd_fuzz), most reducing first."""
    yield from _fewer(s)
    for key in (("prompt", 1), ("out", 1), ("arrive", 0), ("xfer", 1)):
        yield from _lower_requests(s, (key,))
    yield from _lower(s, s, lambda c: c, (("xfer_steps", 1), ("proxy_delay", 0)))
    for side in ("P", "D"):
        yield from _lower(s, s[side], lambda c, side=side: c[side], ENGINE_KEYS)
        if s[side].get("prefix_caching"):
            c = copy.deepcopy(s)
            c[side]["prefix_caching"] = False
            yield c


def shrink(s: dict, disagrees: Callable[[dict], bool], budget: int = 400,
           smaller: Callable[[dict], Iterator[dict]] = None, ok: Callable[[dict], bool] = None) -> dict:
    """Greedy: take the first smaller scenario that still disagrees, until none
    does.  ``smaller`` and ``ok`` are another suite's candidates and
    feasibility (the P/D scenarios': pd_candidates, pd_fuzz.feasible)."""
    smaller = smaller or candidates
    ok = ok or feasible
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for c in smaller(s):
            if not ok(c):
                continue
            tries += 1
            if disagrees(c):
                s = c
                changed = True
                break
            if tries >= budget:
                break
    return s
