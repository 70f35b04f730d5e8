"""Random P/D scenarios and their shrinking (standard library only).

`generate(seed, i)` draws scenario i of a seed from `random.Random(f"{seed}:{i}")`
(byte-stable whatever `PYTHONHASHSEED`), steered by its flavour `i % 9`
towards one behaviour of two instances handing the KV over:

  pipeline  roomy engines, staggered arrivals: the uncontended pipeline
  dkv       D's KV a fraction of the loads': a load that does not fit blocks
            the ones behind it (head-of-line on loads)
  pheld     P's KV a fraction of the prompts', long reads: P's blocks held by
            requests whose transfer has not finished keep P's next requests out
  dseqs     D's max_seqs 1-2: no load starts while D is full, P's blocks stay pinned
  dpre      D's KV just above the longest request, long outputs: preemption on D
            (the victim recomputes locally)
  ppre      P's KV tight and a chunk cap on P: preemption mid-prefill on P
  prefix    prefix caching on both sides, tight KV: a resumed request hits its
            own blocks on either side; and requests that start with a shared
            prompt (`"prefix": {"id", "tokens"}`), so that P reuses another
            request's blocks and D loads only what it lacks
  mixed     every request its own transfer time
  wild      everything drawn freely, shared prompts too

The shared prompts are drawn from a second stream, `f"{seed}:{i}:shared"`, so
that the rest of a scenario is what it was before they were added.

Every scenario is feasible: each request alone fits P (its prompt) and D
(its prompt and outputs but the last token), and budget >= max_seqs, as the
harness requires.  This file imports nothing of serQ, so that
tools/oracle/gen_random.py can load it under vLLM's Python; the shrinking is
serq.oracle.fuzz's (`pd_candidates`).
"""

from __future__ import annotations

import math
import random

FLAVOURS = ("pipeline", "dkv", "pheld", "dseqs", "dpre", "ppre", "prefix", "mixed", "wild")


def need(tokens: int, bs: int) -> int:
    return math.ceil(tokens / bs)


def feasible(s: dict) -> bool:
    P, D = s["P"], s["D"]
    for e in (P, D):
        if not (e["budget"] >= e["max_seqs"] >= 1 and e["num_blocks"] >= 1 and e["block_size"] >= 1
                and e.get("chunk", 0) >= 0):
            return False
    if s["xfer_steps"] < 1 or s["proxy_delay"] < 0 or not s["requests"]:
        return False
    for r in s["requests"]:
        if r["prompt"] < 1 or r["out"] < 1 or r["arrive"] < 0 or r.get("xfer", 1) < 1:
            return False
        pre = r.get("prefix")
        if pre is not None and not (0 <= pre["id"] < 20 and 1 <= pre["tokens"] <= r["prompt"]):
            return False
        if need(r["prompt"], P["block_size"]) > P["num_blocks"]:
            return False
        if need(r["prompt"] + r["out"] - 1, D["block_size"]) > D["num_blocks"]:
            return False
    return True


def _engine(rng, chunk_p: float) -> dict:
    budget = rng.choice([8, 16, 24, 32, 48, 64, 128, 256])
    e = {"budget": budget, "max_seqs": rng.randint(1, min(8, budget)), "block_size": rng.choice([1, 2, 4, 8, 16]),
         "num_blocks": 1}
    if rng.random() < chunk_p:
        e["chunk"] = rng.choice([2, 4, 8, 12, 16, 32, 64])
    return e


def _share(rng, reqs: list, p: float) -> None:
    """Start some requests with one of one to three shared prompts (a
    system prompt): each a length of its own, a request's prompt at least it
    and some tokens of its own (or none: a prompt that is all shared)."""
    lens = [rng.randint(1, 60) for _ in range(rng.randint(1, 3))]
    for r in reqs:
        if rng.random() < p:
            g = rng.randrange(len(lens))
            r["prompt"] = lens[g] + (0 if rng.random() < 0.15 else rng.randint(1, 40))
            r["prefix"] = {"id": g, "tokens": lens[g]}


def generate(seed: int, i: int) -> dict:
    rng = random.Random(f"{seed}:{i}")
    flavour = FLAVOURS[i % len(FLAVOURS)]
    P, D = _engine(rng, 0.5), _engine(rng, 0.5)
    n = rng.randint(2, 8)
    X = rng.choice([1, 1, 2, 3, 4, 6])
    delay = rng.choice([0, 0, 1, 2])

    def plen(lo, hi):
        return max(lo, min(hi, int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))))

    spread = rng.choice([0, 2, 5, 10])
    reqs = [{"prompt": plen(1, 120), "out": rng.randint(1, 30), "arrive": rng.randint(0, spread)} for _ in range(n)]
    frac_p, frac_d = rng.uniform(0.6, 1.5), rng.uniform(0.6, 1.5)
    if flavour == "pipeline":
        t = 0
        for r in reqs:
            r["arrive"] = t
            t += rng.randint(0, 6)
        frac_p = frac_d = 2.0
    elif flavour == "dkv":
        frac_d = rng.uniform(0.25, 0.6)
    elif flavour == "pheld":
        X = rng.randint(3, 10)
        frac_p = rng.uniform(0.3, 0.7)
    elif flavour == "dseqs":
        D["max_seqs"] = rng.randint(1, 2)
        for r in reqs:
            r["out"] = rng.randint(4, 40)
    elif flavour == "dpre":
        for r in reqs:
            r["out"] = rng.randint(8, 48)
        frac_d = 0.0
    elif flavour == "ppre":
        P["chunk"] = rng.choice([2, 4, 8, 16])
        for r in reqs:
            r["prompt"] = plen(8, 160)
        frac_p = 0.0
    elif flavour == "prefix":
        P["prefix_caching"] = D["prefix_caching"] = True
        for r in reqs:
            r["out"] = rng.randint(6, 40)
        frac_p, frac_d = rng.uniform(0.2, 0.6), rng.uniform(0.2, 0.6)
    elif flavour == "mixed":
        for r in reqs:
            r["xfer"] = rng.randint(1, 9)
        D["max_seqs"] = rng.randint(1, min(4, D["budget"]))
    else:
        for e in (P, D):
            e["prefix_caching"] = rng.random() < 0.3
        for r in reqs:
            if rng.random() < 0.3:
                r["xfer"] = rng.randint(1, 6)
        frac_p, frac_d = rng.uniform(0.2, 2.0), rng.uniform(0.2, 2.0)
    if flavour != "prefix" and rng.random() < 0.25:
        P["prefix_caching"] = D["prefix_caching"] = rng.random() < 0.5
    if flavour in ("prefix", "wild"):
        _share(random.Random(f"{seed}:{i}:shared"), reqs, 0.8 if flavour == "prefix" else 0.4)
    needs_p = [need(r["prompt"], P["block_size"]) for r in reqs]
    needs_d = [need(r["prompt"] + r["out"] - 1, D["block_size"]) for r in reqs]
    P["num_blocks"] = max(max(needs_p), int(sum(needs_p) * frac_p))
    D["num_blocks"] = max(max(needs_d), int(sum(needs_d) * frac_d))
    if flavour in ("dpre", "ppre"):
        side, needs = (D, needs_d) if flavour == "dpre" else (P, needs_p)
        side["num_blocks"] = max(needs) + rng.randint(0, max(1, max(needs) // 2))
    s = {"P": P, "D": D, "xfer_steps": X, "proxy_delay": delay, "requests": reqs}
    assert feasible(s)
    return s
