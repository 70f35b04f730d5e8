"""Randomized differential testing against vLLM's real scheduler.

`generate(rng)` draws a scenario steered towards one of the behaviours the
correspondence has to get right (preemption chains, self-preemption, the
chunk cap and its lifting, the sequence cap, head-of-line blocking,
staggered arrivals, prefix caching after a preemption); every scenario is
feasible (each request alone fits the KV cache, budget ≥ max_seqs), as vLLM
requires.  `shrink` reduces a disagreeing scenario (fewer requests, smaller
numbers) while it still disagrees.  `generate_mooncake` and `generate_replay`
draw traffic with content shared across requests (the content-addressed
cache), for the Mooncake and the replay harnesses.
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


ENGINE_KEYS = (("num_blocks", 1), ("budget", 1), ("max_seqs", 1), ("chunk", 0), ("block_size", 1))


def _smaller(s: dict, path: tuple, lo: int) -> Iterator[dict]:
    """Copies of ``s`` with the whole number at ``path`` (absent: 0) made
    smaller: ``lo``, half of it, one less."""
    d = s
    for k in path[:-1]:
        d = d[k]
    v = d.get(path[-1], 0)
    for nv in sorted({lo, v // 2, v - 1}):
        if lo <= nv < v:
            c = copy.deepcopy(s)
            d = c
            for k in path[:-1]:
                d = d[k]
            d[path[-1]] = nv
            yield c


def _fewer(s: dict, key: str) -> Iterator[dict]:
    """Copies of ``s`` with one element of the list ``s[key]`` left out (none
    when it has one)."""
    if len(s[key]) > 1:
        for i in range(len(s[key])):
            c = copy.deepcopy(s)
            del c[key][i]
            yield c


def candidates(s: dict) -> Iterator[dict]:
    """Smaller scenarios, most reducing first."""
    reqs = s["requests"]
    yield from _fewer(s, "requests")
    for key, lo in (("prompt", 1), ("out", 1), ("arrive", 0)):
        for i in range(len(reqs)):
            yield from _smaller(s, ("requests", i, key), lo)
    for key, lo in ENGINE_KEYS:
        yield from _smaller(s, (key,), lo)
    if s.get("prefix_caching"):
        c = copy.deepcopy(s)
        c["prefix_caching"] = False
        yield c


def _prefix_candidates(s: dict) -> Iterator[dict]:
    """Copies of ``s`` with one request's shared prompt left out or shorter."""
    for i, r in enumerate(s["requests"]):
        if "prefix" in r:
            c = copy.deepcopy(s)
            del c["requests"][i]["prefix"]
            yield c
            yield from _smaller(s, ("requests", i, "prefix", "tokens"), 1)


def pd_candidates(s: dict) -> Iterator[dict]:
    """Smaller P/D scenarios (serq.oracle.pd_fuzz), most reducing first."""
    reqs = s["requests"]
    yield from _fewer(s, "requests")
    for key, lo in (("prompt", 1), ("out", 1), ("arrive", 0), ("xfer", 1)):
        for i in range(len(reqs)):
            if key in reqs[i]:
                yield from _smaller(s, ("requests", i, key), lo)
    yield from _prefix_candidates(s)
    for key, lo in (("xfer_steps", 1), ("proxy_delay", 0)):
        yield from _smaller(s, (key,), lo)
    for side in ("P", "D"):
        for key, lo in ENGINE_KEYS:
            yield from _smaller(s, (side, key), lo)
        if s[side].get("prefix_caching"):
            c = copy.deepcopy(s)
            c[side]["prefix_caching"] = False
            yield c


def sglang_candidates(s: dict) -> Iterator[dict]:
    """Smaller SGLang scenarios (serq.oracle.sglang_fuzz), most reducing first;
    the event loop, the policy and ignore_eos as they were."""
    reqs = s["requests"]
    yield from _fewer(s, "requests")
    for key, lo in (("prompt", 1), ("out", 1), ("arrive", 0)):
        for i in range(len(reqs)):
            yield from _smaller(s, ("requests", i, key), lo)
    yield from _prefix_candidates(s)
    for key, lo in (("kv_tokens", 8), ("max_running", 1), ("budget", 1), ("chunk", 0)):
        yield from _smaller(s, (key,), lo)


def shrink(s: dict, disagrees: Callable[[dict], bool], budget: int = 400) -> dict:
    """Greedy: take the first smaller scenario that still disagrees, until none does."""
    return shrink_with(s, disagrees, candidates, feasible, budget)


# -- traffic with shared content ------------------------------------------------------
# Mooncake-format rows (tools/oracle/vllm_mooncake_oracle.py, `rows` and a small
# `hash_block`) and multi-turn traces with shared system prompts
# (tools/oracle/vllm_replay_oracle.py, `prefix`), each steered towards a
# behaviour of the content-addressed cache.

MOONCAKE_FLAVOURS = ("system", "conversation", "identical", "kvtight", "chunk", "seqcap", "wild")
REPLAY_FLAVOURS = ("tenants", "onesystem", "tightshared")


def _engine(rng: random.Random) -> dict:
    bs = rng.choice([1, 2, 4, 8, 16])
    budget = rng.choice([8, 16, 32, 64, 128, 256])
    return {"budget": budget, "max_seqs": rng.randint(1, min(8, budget)), "block_size": bs,
            "num_blocks": 1, "chunk": 0 if rng.random() < 0.4 else rng.choice([4, 8, 16, 32, 64])}


def generate_mooncake(rng: random.Random, index: int) -> dict:
    """Rows whose prompts share hash ids: a system prompt, conversations that
    extend an earlier request's ids, identical prompts at one step."""
    flavour = MOONCAKE_FLAVOURS[index % len(MOONCAKE_FLAVOURS)]
    eng = _engine(rng)
    hb = rng.choice([2, 3, 4, 8, 16])
    n = rng.randint(2, 9)
    fresh = iter(range(100, 100000))
    rows = []
    t = 0
    convs = []
    for j in range(n):
        t += rng.choice([0, 0, 1, 2, rng.randint(0, 12)])
        if flavour == "identical" and rows and rng.random() < 0.7:
            r = dict(rows[-1] if rng.random() < 0.6 else rng.choice(rows))
            r["timestamp"] = t if rng.random() < 0.5 else rows[-1]["timestamp"]
            r["timestamp"] = max(r["timestamp"], rows[-1]["timestamp"])
            rows.append(r)
            continue
        ids = []
        if flavour in ("system", "kvtight", "chunk", "seqcap") or rng.random() < 0.5:
            ids.append(rng.choice([0, 0, 1]))
        if convs and rng.random() < (0.75 if flavour in ("conversation", "kvtight") else 0.3):
            base = rng.choice(convs)
            ids = list(base[:rng.randint(1, len(base))])
        k = rng.randint(1, 6 if flavour != "chunk" else 12)
        ids += [next(fresh) for _ in range(k)]
        length = hb * (len(ids) - 1) + rng.randint(1, hb)
        convs.append(ids)
        rows.append({"timestamp": t, "input_length": length, "output_length": rng.randint(1, 24),
                     "hash_ids": ids})
    if flavour == "seqcap":
        eng["max_seqs"] = rng.randint(1, 2)
    if flavour == "chunk" and not eng["chunk"]:
        eng["chunk"] = rng.choice([4, 8, 16])
    bs = eng["block_size"]
    needs = [need(r["input_length"], r["output_length"], bs) for r in rows]
    frac = rng.uniform(0.3, 0.7) if flavour == "kvtight" else rng.uniform(0.5, 1.6)
    eng["num_blocks"] = max(max(needs), int(sum(needs) * frac))
    eng["budget"] = max(eng["budget"], eng["max_seqs"])
    return {"engine": eng, "step_ms": 1, "hash_block": hb, "rows": rows}


def feasible_mooncake(s: dict) -> bool:
    e, hb = s["engine"], s["hash_block"]
    rows = s["rows"]
    return (bool(rows) and e["budget"] >= e["max_seqs"] >= 1 and e["num_blocks"] >= 1 and
            all(r["input_length"] >= 1 and r["output_length"] >= 1 and
                len(r["hash_ids"]) == -(-r["input_length"] // hb) and
                need(r["input_length"], r["output_length"], e["block_size"]) <= e["num_blocks"]
                for r in rows) and
            all(a["timestamp"] <= b["timestamp"] for a, b in zip(rows, rows[1:])))


def candidates_mooncake(s: dict) -> Iterator[dict]:
    rows = s["rows"]
    yield from _fewer(s, "rows")
    hb = s["hash_block"]
    for i in range(len(rows)):
        for c in _smaller(s, ("rows", i, "input_length"), 1):
            r = c["rows"][i]
            r["hash_ids"] = r["hash_ids"][:-(-r["input_length"] // hb)]
            yield c
        for key, lo in (("output_length", 1), ("timestamp", 0)):
            yield from _smaller(s, ("rows", i, key), lo)
    for key, lo in ENGINE_KEYS:
        yield from _smaller(s, ("engine", key), lo)


def generate_replay(rng: random.Random, index: int) -> dict:
    """A multi-turn trace whose sessions start with one of a few shared prompts."""
    flavour = REPLAY_FLAVOURS[index % len(REPLAY_FLAVOURS)]
    eng = _engine(rng)
    prompts = [rng.randint(1, 48) for _ in range(1 if flavour == "onesystem" else rng.randint(1, 3))]
    sessions = []
    for _ in range(rng.randint(2, 6)):
        g = rng.randrange(len(prompts))
        shared = rng.random() < 0.85
        turns = []
        for k in range(rng.randint(1, 3)):
            new = rng.randint(1 if k == 0 else 0, 40)
            if k == 0 and shared:
                new += prompts[g]
            turns.append({"new": new, "out": rng.randint(1, 16), "think": rng.choice([0, 0, 1, 3, 8])})
        s = {"arrive": rng.choice([0, 0, rng.randint(0, 10)]), "turns": turns}
        if shared:
            s["prefix"] = {"id": g, "tokens": prompts[g]}
        sessions.append(s)
    bs = eng["block_size"]
    peaks = []
    for s in sessions:
        p = 0
        for t in s["turns"]:
            p += t["new"]
            peaks.append(need(p, t["out"], bs))
            p += t["out"]
    frac = rng.uniform(0.3, 0.6) if flavour == "tightshared" else rng.uniform(0.6, 1.5)
    eng["num_blocks"] = max(max(peaks), int(sum(peaks) * frac / 2))
    eng["budget"] = max(eng["budget"], eng["max_seqs"])
    return dict(eng, sessions=sessions)


def feasible_replay(t: dict) -> bool:
    if not (t["budget"] >= t["max_seqs"] >= 1 and t["sessions"]):
        return False
    for s in t["sessions"]:
        turns = s["turns"]
        if not turns or turns[0]["new"] < 1 or any(x["new"] < 0 or x["out"] < 1 for x in turns):
            return False
        if "prefix" in s and not (1 <= s["prefix"]["tokens"] <= turns[0]["new"]):
            return False
        p = 0
        for x in turns:
            p += x["new"]
            if need(p, x["out"], t["block_size"]) > t["num_blocks"]:
                return False
            p += x["out"]
    return True


def candidates_replay(t: dict) -> Iterator[dict]:
    ss = t["sessions"]
    for i in range(len(ss)):
        if len(ss) > 1:
            c = copy.deepcopy(t)
            del c["sessions"][i]
            yield c
        if len(ss[i]["turns"]) > 1:
            c = copy.deepcopy(t)
            c["sessions"][i]["turns"].pop()
            yield c
        if "prefix" in ss[i]:
            c = copy.deepcopy(t)
            del c["sessions"][i]["prefix"]
            yield c
        for k in range(len(ss[i]["turns"])):
            for key, lo in (("new", 1 if k == 0 else 0), ("out", 1), ("think", 0)):
                yield from _smaller(t, ("sessions", i, "turns", k, key), lo)
    for key, lo in ENGINE_KEYS:
        yield from _smaller(t, (key,), lo)


def shrink_with(s: dict, disagrees: Callable[[dict], bool], cands, ok, budget: int = 400) -> dict:
    """Greedy: take the first smaller input (of ``cands``, feasible by ``ok``)
    that still disagrees, until none does."""
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for c in cands(s):
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
