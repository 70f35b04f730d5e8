"""Random SGLang scenarios (standard library only).

`generate(seed, i)` draws scenario i of a seed from `random.Random(f"{seed}:{i}")`
(byte-stable whatever `PYTHONHASHSEED`), steered by its flavour `i % 8`
towards one behaviour of SGLang's scheduler:

  shared    roomy KV, staggered arrivals, requests starting with one to three
            shared prompts: the radix cache's hits across requests
  retract   five to nine requests with long outputs arriving over 20 steps,
            a pool of one to three of them, `ignore_eos` off and mostly a low
            `conservativeness` (a low new-token ratio): decode retraction
            (`retract_decode`) and the ratio after it
  chunk     long prompts and a small `chunk` (chunked_prefill_size)
  lpm       the longest-prefix-match policy over several shared prompts
  seqcap    `max_running` 1-3 with 4-8 requests
  reserve   `ignore_eos` on and KV tight: admission reserves every remaining
            output token, so requests wait rather than retract
  conserv   `conservativeness` drawn from 0.3-2 over a tight pool
  wild      everything drawn freely

`overlap` is on for the odd rounds of eight (`(i // 8) % 2`), so each flavour
runs on both event loops.  The shared prompts are drawn from a second
stream, `f"{seed}:{i}:shared"`.  Every scenario is feasible: each request's
prompt and outputs fit `kv_tokens` less two (its prompt less seven), as the
harness requires.  This file imports nothing of serQ, so that
tools/oracle/gen_random.py can load it under SGLang's Python.
"""

from __future__ import annotations

import random

FLAVOURS = ("shared", "retract", "chunk", "lpm", "seqcap", "reserve", "conserv", "wild")
BUDGETS = (16, 24, 32, 48, 64, 96, 128, 256)


def feasible(s: dict) -> bool:
    """What the harness accepts (tools/oracle/sglang_oracle.py, parse_scenario)."""
    if not (s["max_running"] >= 1 and s["kv_tokens"] >= 8 and s["budget"] >= 1 and s["chunk"] >= 0
            and s["requests"] and 0 < s["conservativeness"] <= 100 and s["policy"] in ("fcfs", "lpm")):
        return False
    for r in s["requests"]:
        if r["prompt"] < 1 or r["out"] < 1 or r["arrive"] < 0:
            return False
        if r["prompt"] + r["out"] > s["kv_tokens"] - 2 or r["prompt"] >= s["kv_tokens"] - 6:
            return False
        pre = r.get("prefix")
        if pre is not None and not (0 <= pre["id"] < 20 and 1 <= pre["tokens"] <= r["prompt"]):
            return False
    return True


def generate(seed: int, i: int) -> dict:
    rng = random.Random(f"{seed}:{i}")
    flavour = FLAVOURS[i % len(FLAVOURS)]
    n = rng.randint(5, 9) if flavour == "retract" else rng.randint(4, 7) if flavour == "conserv" else rng.randint(2, 7)
    reqs = []
    for _ in range(n):
        if flavour == "chunk":
            prompt = rng.randint(20, 120)
        elif flavour in ("retract", "conserv"):
            prompt = rng.randint(2, 24)
        else:
            prompt = rng.randint(2, 60)
        if flavour in ("retract", "conserv"):
            out = rng.randint(20, 60)
        elif flavour == "reserve":
            out = rng.randint(8, 40)
        else:
            out = rng.randint(1, 24)
        if flavour in ("shared", "wild", "lpm"):
            arrive = rng.randint(0, 12)
        elif flavour == "retract":
            arrive = rng.randint(0, 20)
        elif flavour == "conserv":
            arrive = rng.randint(0, 40)
        else:
            arrive = rng.choice([0, 0, 0, rng.randint(0, 6)])
        reqs.append({"prompt": prompt, "out": out, "arrive": arrive})
    peak = max(r["prompt"] + r["out"] for r in reqs)
    total = sum(r["prompt"] + r["out"] for r in reqs)
    if flavour == "retract":
        kv = peak + 2 + rng.randint(peak // 2, 2 * peak)
    elif flavour in ("reserve", "conserv"):
        kv = peak + 2 + rng.randint((total - peak) // 4, max(1, (total - peak) * 3 // 4))
    elif flavour == "wild":
        kv = peak + 2 + rng.randint(0, total)
    else:
        kv = max(peak + 2, total + rng.randint(0, 40))
    kv = max(kv, peak + 2, max(r["prompt"] for r in reqs) + 7, 8)
    max_running = rng.randint(1, 3) if flavour == "seqcap" else rng.choice([2, 3, 4, 6, 8, 16])
    chunk = rng.choice([8, 12, 16, 24, 32]) if flavour == "chunk" else rng.choice([0, 0, 16, 32, 64])
    budget = rng.choice(BUDGETS)
    s = {
        "max_running": max_running,
        "kv_tokens": kv,
        "chunk": chunk,
        "budget": budget,
        "policy": "lpm" if flavour == "lpm" or (flavour == "wild" and rng.random() < 0.5) else "fcfs",
        "ignore_eos": flavour == "reserve" or (flavour not in ("retract",) and rng.random() < 0.5),
        "conservativeness": (rng.choice([0.05, 0.1, 0.1, 0.2, 0.3, 1.0]) if flavour == "retract" else
                             rng.choice([0.3, 0.5, 1.0, 1.5, 2.0]) if flavour in ("conserv", "wild") else 1.0),
        "overlap": (i // len(FLAVOURS)) % 2 == 1,
        "requests": reqs,
    }
    if flavour in ("shared", "lpm", "wild"):
        _share(s, random.Random(f"{seed}:{i}:shared"))
    return s


def _share(s: dict, rng: random.Random) -> None:
    """Some requests start with one of one to three shared prompts."""
    ids = rng.sample(range(20), rng.randint(1, 3))
    lengths = {g: rng.randint(2, 40) for g in ids}
    for r in s["requests"]:
        if rng.random() < 0.7:
            g = rng.choice(ids)
            r["prompt"] = max(r["prompt"], lengths[g] + rng.randint(0, 12))
            r["prefix"] = {"id": g, "tokens": lengths[g]}
    peak = max(r["prompt"] + r["out"] for r in s["requests"])
    s["kv_tokens"] = max(s["kv_tokens"], peak + 2, max(r["prompt"] for r in s["requests"]) + 7)
