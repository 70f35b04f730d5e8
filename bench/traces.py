"""The benchmark's multi-turn trace (issue 14, (b)): 330 sessions of the
replay harness's format (tools/oracle/traces/), 3 291 requests, on an engine
small enough for the prefix cache to evict and the scheduler to preempt.
Deterministic: the same trace every time (a seeded stream of its own)."""

from __future__ import annotations

import random

SESSIONS = 330
REQUESTS = 3291


def trace(seed: int = 14) -> dict:
    rng = random.Random(seed)
    # the turns per session: 330 sessions, 3 291 turns, 1 to 20 each
    counts = [1 + min(19, int(rng.expovariate(1 / 9.0))) for _ in range(SESSIONS)]
    while sum(counts) != REQUESTS:
        i = rng.randrange(SESSIONS)
        if sum(counts) < REQUESTS and counts[i] < 20:
            counts[i] += 1
        elif sum(counts) > REQUESTS and counts[i] > 1:
            counts[i] -= 1
    sessions = []
    for i, k in enumerate(counts):
        turns = []
        for j in range(k):
            new = rng.randint(200, 900) if j == 0 else 1 + int(rng.expovariate(1 / 60.0))
            out = 1 + int(rng.expovariate(1 / 120.0))
            turn = {"new": new, "out": out}
            if j < k - 1:
                turn["think"] = int(rng.expovariate(1 / 40.0))
            turns.append(turn)
        sessions.append({"arrive": i * 40, "turns": turns})
    return {"budget": 1024, "max_seqs": 32, "block_size": 16, "num_blocks": 1200, "chunk": 0,
            "sessions": sessions}
