"""A trace in Mooncake's format made from a seed (``serq mooncake-trace``).

Mooncake's traces (FAST'25, kvcache-ai/Mooncake) are one JSON object a line:
``timestamp`` (ms), ``input_length`` and ``output_length`` (tokens) and
``hash_ids``, one id per 512-token block of the prompt (the last one
partial), equal ids for equal blocks.  serq reads them as they are
(``trace "FILE.jsonl";``, docs/prefix-cache.md); this writes one of its own,
for a program that must run where no real one lies (a fresh clone):

* **arrivals**: a Poisson process of ``rate`` requests a second, each
  timestamp the arrival's time in whole milliseconds;
* **conversations**: with probability ``follow`` a request continues one of
  the 64 conversations most recently active, chosen alike: its prompt is
  that conversation's last prompt, its answer and a new message, so it
  shares the last prompt's whole blocks (when that prompt would exceed
  ``context`` tokens the conversation ends there); otherwise it opens a
  conversation, whose prompt is
  the system prompt (``system`` tokens, one for the whole trace) and a
  message (``context`` tokens at most), sharing the system prompt's whole
  blocks;
* **lengths**: a message is 1 + an exponential draw of mean ``input`` tokens
  (whole), an answer 1 + one of mean ``output`` − 1, at most ``MAX_OUTPUT``;
* **ids** are numbered from 0 in the order blocks first appear, as the
  real traces' are.

The draws are Python's ``random.Random(seed)`` (Mersenne Twister), one
stream in a fixed order, so a seed gives the same bytes everywhere."""

from __future__ import annotations

import json
import math
import random

from .ir.trace import MOONCAKE_BLOCK, WHOLE

MAX_OUTPUT = 4096          # an answer's tokens at most
RECENT = 64                # the conversations a request may continue

DEFAULTS = {"requests": 1000, "rate": 3.0, "seed": 1, "system": 1024, "input": 2000, "output": 300,
            "follow": 0.5, "context": 32768}


def _exp(rng: random.Random, mean: float) -> float:
    return -math.log(1.0 - rng.random()) * mean


def generate(requests: int = DEFAULTS["requests"], rate: float = DEFAULTS["rate"], seed: int = DEFAULTS["seed"],
             system: int = DEFAULTS["system"], input: float = DEFAULTS["input"],
             output: float = DEFAULTS["output"], follow: float = DEFAULTS["follow"],
             context: int = DEFAULTS["context"]) -> list:
    """The trace's rows, as dicts in Mooncake's key order; a ``ValueError``
    when the arrivals are so sparse (``rate``) that a timestamp would pass
    what a trace holds."""
    rng = random.Random(seed)
    next_id = 0

    def fresh(k: int) -> list:
        nonlocal next_id
        ids = list(range(next_id, next_id + k))
        next_id += k
        return ids

    system_ids = fresh(system // MOONCAKE_BLOCK)
    convs: list = []           # [prompt length, its hash ids, its answer's length], most recent last
    rows = []
    t = 0.0
    for i in range(requests):
        if i:
            t += _exp(rng, 1000.0 / rate)
            if not t < WHOLE:       # a row's timestamp is below 2^53 (serq/ir/trace.py)
                raise ValueError(f"request {i + 1} would arrive at {t:g} ms, past 2^53 ms, the latest a "
                                 "Mooncake row's timestamp can say: give a larger rate or fewer requests")
        message = 1 + int(_exp(rng, input))
        answer = min(MAX_OUTPUT, 1 + int(_exp(rng, output - 1)))
        shared = None
        if convs and rng.random() < follow:
            length, ids, out = convs.pop(len(convs) - 1 - rng.randrange(min(RECENT, len(convs))))
            if length + out + message <= context:
                n = length + out + message
                shared = ids[:length // MOONCAKE_BLOCK]
        if shared is None:          # a new conversation
            n = min(system + message, context)
            shared = system_ids
        ids = shared + fresh(-(-n // MOONCAKE_BLOCK) - len(shared))
        convs.append([n, ids, answer])
        if len(convs) > RECENT:
            del convs[0]       # never continued again
        rows.append({"timestamp": int(t), "input_length": n, "output_length": answer, "hash_ids": ids})
    return rows


def text(rows: list) -> str:
    """The rows one JSON object a line, as Mooncake's files write them."""
    return "".join(json.dumps(r) + "\n" for r in rows)
