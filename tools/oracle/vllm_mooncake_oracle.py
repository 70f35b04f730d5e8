#!/usr/bin/env python3
"""A slice of a Mooncake trace through vLLM 0.33.0's real v1 Scheduler with
prefix caching (its real KV-cache manager and block pool).

Usage (under .venv-vllm/bin/python):
    vllm_mooncake_oracle.py SPEC.json [--steps]
    vllm_mooncake_oracle.py --batch IN.jsonl [--steps] | --serve [--steps]

Spec:
    {"engine": {"budget", "max_seqs", "block_size", "num_blocks", "chunk"},
     "trace": PATH (relative to the spec's directory), "step_ms": s,
     "first": a, "count": n}
  or, for generated traffic (the fuzz), the rows themselves:
    {"engine": {...}, "rows": [{"timestamp", "input_length", "output_length",
     "hash_ids"}, ...], "step_ms": s, "hash_block": h}
  (`hash_block`, default 512: the tokens one hash id names).

The requests are the trace's lines a ... a + n - 1 (counted from 0, blank
lines included); request i (its line number) is added right before
schedule() call floor(timestamp_i / s), the requests of one step in file
order.  Token k of request i's prompt is a function of (hash_ids[k // h],
k % h) alone, so equal ids mean equal tokens; request i's generated tokens are
its own.  Every request generates exactly output_length tokens (ignore_eos).
While the scheduler has no request at all the calls up to the next arrival
are counted, not made (an empty schedule() changes nothing,
oracle_core.Driver.replay).

Output:
    {"requests": [{"i", "sent", "first", "last", "cached"}, ...], "steps": n,
     "preemptions": n, "vllm": "0.33.0"}
"sent" is the step the request was added before; "first"/"last" the times
(step + 1) of its first and last token; "cached" vLLM's num_cached_tokens at
its first scheduling (the prefix-cache hit).  With --steps, "log" has one
entry per call made: {"step", "tokens": {"i": n}, "admitted", "preempted",
"free_blocks"}.
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle_core as core  # noqa: E402  (sets env, guards stdout)
from oracle_core import ScenarioError  # noqa: E402

SPEC_KEYS = {"engine", "trace", "rows", "step_ms", "first", "count", "hash_block"}
ENGINE_KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk"}
ROW_KEYS = {"timestamp", "input_length", "output_length", "hash_ids"}
MAX_REQUESTS = 100_000

# Token ids: a prompt token is PROMPT_BASE + hash_id * h + offset; a
# generated one GEN_BASE + request * GEN_STRIDE + position, beyond every
# prompt token.
PROMPT_BASE = 1000
GEN_BASE = 1 << 40
GEN_STRIDE = 1 << 24


def parse_row(r, where: str, hash_block: int) -> dict:
    core._check_keys(r, ROW_KEYS, where)
    if set(r) != ROW_KEYS:
        raise ScenarioError(f"{where}: a row has the fields {sorted(ROW_KEYS)}")
    row = {"timestamp": core._int_field(r, "timestamp", where, minimum=0),
           "input_length": core._int_field(r, "input_length", where, minimum=1),
           "output_length": core._int_field(r, "output_length", where, minimum=1)}
    ids = r["hash_ids"]
    if not isinstance(ids, list) or any(isinstance(h, bool) or not isinstance(h, int) or h < 0 for h in ids):
        raise ScenarioError(f"{where}: 'hash_ids' must be a list of whole numbers >= 0")
    if len(ids) != math.ceil(row["input_length"] / hash_block):
        raise ScenarioError(f"{where}: {len(ids)} hash ids for {row['input_length']} input tokens "
                            f"(one per {hash_block})")
    row["hash_ids"] = ids
    return row


def read_rows(path: str, first: int, count: int, hash_block: int) -> list:
    return [parse_row(obj, where, hash_block) for where, obj in core.json_slice(path, first, count, "trace")]


def parse_spec(obj, base_dir: str) -> dict:
    where = "spec"
    p, step_ms = core.spec_engine(obj, SPEC_KEYS, ENGINE_KEYS, where)
    hb = core._int_field(obj, "hash_block", where, minimum=1, default=512)
    if ("trace" in obj) == ("rows" in obj):
        raise ScenarioError(f"{where}: give either 'trace' (with 'first' and 'count') or 'rows'")
    if "trace" in obj:
        if not isinstance(obj["trace"], str):
            raise ScenarioError(f"{where}: 'trace' must be a path")
        first = core._int_field(obj, "first", where, minimum=0)
        count = core._int_field(obj, "count", where, minimum=1)
        rows = read_rows(os.path.join(base_dir, obj["trace"]), first, count, hb)
    else:
        if "first" in obj or "count" in obj:
            raise ScenarioError(f"{where}: 'first' and 'count' slice a trace file")
        first = 0
        if not isinstance(obj["rows"], list) or not obj["rows"]:
            raise ScenarioError(f"{where}: 'rows' must be a non-empty list")
        rows = [parse_row(r, f"{where}: rows[{k}]", hb) for k, r in enumerate(obj["rows"])]
    if len(rows) > MAX_REQUESTS:
        raise ScenarioError(f"{where}: at most {MAX_REQUESTS} requests")
    for k in range(1, len(rows)):
        if rows[k]["timestamp"] < rows[k - 1]["timestamp"]:
            raise ScenarioError(f"{where}: request {first + k}'s timestamp is before request {first + k - 1}'s")
    core.check_feasible(p, [(f"request {first + k}", r["input_length"], r["output_length"])
                            for k, r in enumerate(rows)], where)
    p.update(rows=rows, first=first, step_ms=step_ms, hash_block=hb)
    return p


def prompt_ids(row: dict, hb: int) -> list:
    ids = row["hash_ids"]
    return [PROMPT_BASE + ids[k // hb] * hb + k % hb for k in range(row["input_length"])]


def run_spec(sp: dict, keep_log: bool) -> dict:
    rows, first, hb = sp["rows"], sp["first"], sp["hash_block"]
    max_model_len = core.model_len_for(sp, max(r["input_length"] + r["output_length"] for r in rows))
    sched, hasher = core.build_scheduler(sp, max_model_len)

    def token_for(req) -> int:
        return GEN_BASE + int(req.request_id) * GEN_STRIDE + req.num_tokens

    drv = core.Driver(sched, token_for)
    arrivals = []
    for k, r in enumerate(rows):
        i = first + k
        step = int(r["timestamp"] // sp["step_ms"])
        arrivals.append((step, core.make_request(str(i), prompt_ids(r, hb), r["output_length"], step, hasher)))
    log = [] if keep_log else None
    limit = arrivals[-1][0] + 10 + sum(4 * (r["input_length"] + r["output_length"]) for r in rows)
    drv.replay(arrivals, limit, log=log, idle_skip=True)
    return core.replay_output(drv, arrivals, first, log)


def main(argv=None) -> int:
    return core.spec_main(argv, "A Mooncake trace slice through vLLM 0.33.0's real scheduler.", parse_spec, run_spec)


if __name__ == "__main__":
    sys.exit(main())
