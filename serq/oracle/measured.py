"""A measured run's workload on the step clock (`tools/oracle/measured/NAME.json`)
as a program: `examples/replay/vllm_measured.sq` with the spec's engine as
inputs and a step clock (`gap` 1, every other constant of the cost 0), the
workload's requests as explicit sessions (arriving at step
⌊arrival / step_ms⌋, one turn each, the prompt's content from its token
ids: serq.calib.replay.token_contents), and a run's observations in the
harness's format (tools/oracle/vllm_measured_oracle.py):

    {"requests": [{"i", "sent", "first", "last", "cached"}], "steps", "preemptions"}

The harness runs vLLM's synchronous scheduler or its asynchronous one
(``"async": true``, on a clock where a batch without a token takes no
time); serQ's program is either's twin, the second with ``async_sched``
1 (its `await;`s, and no time for an iteration without a token)."""

from __future__ import annotations

import dataclasses
import os

from ..ir import model as M
from . import mooncake as MC
from .scenario import read_json
from .spec import Checker

PROGRAM = os.path.join("examples", "replay", "vllm_measured.sq")
KEYS = {"engine", "workload", "step_ms", "first", "count", "async"}
ENGINE = ("budget", "max_seqs", "block_size", "num_blocks", "chunk", "prefix_caching")
HELP = ('a spec is {"engine": {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "prefix_caching"}, '
        '"workload": PATH, "step_ms", "first", "count", "async"}')
# the cost's constants on the step clock: an iteration lasts gap = 1
CLOCK = {"gap": "1", "layers": "0", "head": "0"}


def load(path: str) -> dict:
    s = read_json(path, "the spec")
    return check(s, path, os.path.dirname(path))


def check(s: dict, where: str, base: str = ".") -> dict:
    """Every value of a spec, its type and range (serq/oracle/spec.py), and
    the workload's slice read."""
    from ..calib import runs
    C = Checker(where, HELP)
    C.obj(s, "$", sorted(KEYS), ("engine", "step_ms", "workload", "count"))
    eng = C.obj(s["engine"], "$.engine", ENGINE, ENGINE[:4])
    for k in ENGINE[:5]:
        C.whole(eng.get(k, 0), f"$.engine.{k}", 0 if k == "chunk" else 1)
    if "prefix_caching" in eng:
        C.flag(eng["prefix_caching"], "$.engine.prefix_caching")
    C.positive(s["step_ms"], "$.step_ms")
    if not isinstance(s["workload"], str) or not s["workload"]:
        raise C.bad("$.workload", "is not a path")
    first = C.whole(s.get("first", 0), "$.first", 0)
    count = C.whole(s["count"], "$.count", 1)
    if "async" in s:
        C.flag(s["async"], "$.async")
    work = runs.read_workload(os.path.join(base, s["workload"]))
    if first + count > len(work):
        raise C.bad("$.count", f"is {count}: the workload has {len(work)} requests, the slice needs {first + count}")
    rows = work[first:first + count]
    if eng["budget"] < eng["max_seqs"]:
        raise C.bad("$.engine.budget", "must be ≥ 'max_seqs', as vLLM requires")
    bs = eng["block_size"]
    for k, r in enumerate(rows):
        need = -(-(r.input_toks + r.output_toks - 1) // bs)
        if need > eng["num_blocks"]:
            raise C.bad("$.workload", f"request {first + k} ({r.input_toks} + {r.output_toks} tokens) needs {need} "
                                      f"KV blocks of {bs}, and the engine has {eng['num_blocks']}: it could never run")
    return dict(s, rows=rows, first=first)


def program(s: dict) -> str:
    return PROGRAM


def inputs(s: dict) -> dict:
    e = s["engine"]
    out = {"bs": str(e["block_size"]), "B": str(e["budget"]), "blocks": str(e["num_blocks"]),
           "max_seqs": str(e["max_seqs"]), "chunk": str(e.get("chunk", 0) or "inf"),
           "prefix": "1" if e.get("prefix_caching", True) else "0"}
    out.update(CLOCK)
    if s.get("async"):
        out["async_sched"] = "1"
    return out


def sent_step(row, step_ms: float) -> int:
    """The schedule() call a request is added before: ⌊arrival_time_ns / 1e6 / step_ms⌋."""
    return int(row.arrival_ns / 1e6 // step_ms)


def horizon(s: dict) -> float:
    rows = s["rows"]
    return float(sent_step(rows[-1], s["step_ms"]) + 64 + sum(4 * (r.input_toks + r.output_toks) for r in rows))


def with_sessions(p: M.Program, s: dict) -> M.Program:
    from ..calib.replay import token_contents
    S = M.SLOT
    specs = []
    prompts = token_contents([r.tokens for r in s["rows"]], s["engine"]["block_size"])
    for r, segs in zip(s["rows"], prompts):
        turn = ((S["new"], float(r.input_toks)), (S["out"], float(r.output_toks)))
        specs.append(M.SessionSpec(attrs=(), turns=(turn,), at=float(sent_step(r, s["step_ms"])), content=segs))
    pools = p.pools
    if s["engine"].get("prefix_caching", True):
        # vLLM 0.19.0's free queue when the spec is run for it (`cache shared fifo;`)
        pools = tuple(dataclasses.replace(x, shared=True, free_fifo=bool(s.get("free_fifo")))
                      if x.name == "kv" else x for x in pools)
    return dataclasses.replace(p, arrival=M.ASessions(tuple(specs)), trace=None, trace_ordered=False, pools=pools)


def _int(x):
    return int(x) if float(x).is_integer() else x


def outcome(report, s: dict) -> dict:
    """The run's observations in the harness's format; request i is session i − first."""
    from ..calib.replay import client_times
    first, done = client_times(report)
    hit = {}
    for t, sess, k, v in report.samples("hit"):
        hit.setdefault(sess, _int(v))
    rows = []
    for k, r in enumerate(s["rows"]):
        rows.append({"i": s["first"] + k, "sent": sent_step(r, s["step_ms"]),
                     "first": None if first.get(k) is None else _int(first[k]),
                     "last": None if done.get(k) is None else _int(done[k]), "cached": hit.get(k)})
    kv = next(p for p in report.data()["pools"] if p["name"] == "kv")
    last = [r["last"] for r in rows if r["last"] is not None]
    return {"requests": rows, "steps": max(last) if last else 0, "preemptions": kv["preemptions"]}


# the outcomes are the Mooncake harness's: compared the same way
diff = MC.diff


def harness_spec(s: dict, base: str) -> dict:
    """The spec as the vLLM harness reads it from stdin (the workload's path made absolute)."""
    out = {k: v for k, v in s.items() if k in KEYS}
    out["workload"] = os.path.abspath(os.path.join(base, out["workload"]))
    return out
