"""A Mooncake trace slice (`tools/oracle/mooncake/NAME.json`) as a program:
`examples/replay/mooncake.sq` on the step clock, its engine as inputs, the
slice's requests as explicit sessions (arriving at step ⌊timestamp / step_ms⌋,
one turn each, the prompt's content from its hash ids), and a run's
observations in the harness's format (tools/oracle/vllm_mooncake_oracle.py):

    {"requests": [{"i", "sent", "first", "last", "cached"}], "steps", "preemptions"}

A spec names a trace file and a slice, or carries its rows (the fuzz's
generated traffic, with a `hash_block` of its own)."""

from __future__ import annotations

import dataclasses
import json
import math
import os

from ..ir import model as M
from ..ir.trace import MOONCAKE_BLOCK, ROW_HELP, MooncakeRow, mooncake_row, read_mooncake
from .outcome import diff_rows
from .scenario import read_json
from .spec import Checker

PROGRAM = os.path.join("examples", "replay", "mooncake.sq")


def program(s: dict) -> str:
    """The program a slice runs: always PROGRAM."""
    return PROGRAM
KEYS = {"engine", "trace", "rows", "step_ms", "first", "count", "hash_block"}
ENGINE = ("budget", "max_seqs", "block_size", "num_blocks", "chunk")
HELP = ('a spec is {"engine": {"budget", "max_seqs", "block_size", "num_blocks", "chunk"}, '
        '"trace": PATH, "step_ms", "first", "count"}')


def load(path: str) -> dict:
    """The spec with its rows read (`rows`: MooncakeRow, `first`: the first's line)."""
    s = read_json(path, "the spec")
    return check(s, path, os.path.dirname(path))


def check(s: dict, where: str, base: str = ".") -> dict:
    """Every value of a spec, its type and range (serq/oracle/spec.py), its
    rows read (a trace file's slice, or the spec's own rows, each checked as a
    trace file's row is: ``serq.ir.trace.mooncake_row``)."""
    C = Checker(where, HELP)
    C.obj(s, "$", sorted(KEYS), ("engine", "step_ms"))
    eng = C.obj(s["engine"], "$.engine", ENGINE, ENGINE[:4])
    for k in ENGINE:
        C.whole(eng.get(k, 0), f"$.engine.{k}", 0 if k == "chunk" else 1)
    C.positive(s["step_ms"], "$.step_ms")
    hb = C.whole(s.get("hash_block", MOONCAKE_BLOCK), "$.hash_block", 1)
    if ("trace" in s) == ("rows" in s):
        raise C.bad("$", "give 'trace' (with 'first' and 'count') or 'rows'")
    if "trace" in s:
        if not isinstance(s["trace"], str) or not s["trace"]:
            raise C.bad("$.trace", f"is {json.dumps(s['trace'])[:40]}: a trace file's path")
        first = C.whole(s.get("first"), "$.first", 0)
        count = C.whole(s.get("count"), "$.count", 1)
        if hb != MOONCAKE_BLOCK:
            raise C.bad("$.hash_block", f"is {hb}: a Mooncake trace file's hash ids name {MOONCAKE_BLOCK} tokens")
        rows = read_mooncake(os.path.normpath(os.path.join(base, s["trace"])), first, count)
        if len(rows) < count:
            raise C.bad("$.count", f"is {count}: the trace has {len(rows)} rows from line {first + 1}")
    else:
        for k in ("first", "count"):
            if k in s:
                raise C.bad(f"$.{k}", "is for a trace file's slice ('trace'), not for 'rows'")
        rows = []
        for k, r in enumerate(C.items(s["rows"], "$.rows")):
            try:
                rows.append(mooncake_row(r, hb))
            except ValueError as e:
                key = e.args[1]
                raise C.bad(f"$.rows[{k}]" + (f".{key}" if isinstance(key, str) and isinstance(r, dict)
                                              and key in r else ""), f"is not a Mooncake row: {e.args[0]}",
                            help=ROW_HELP) from None
        first = 0
    if eng["budget"] < eng["max_seqs"]:
        raise C.bad("$.engine.budget", "must be ≥ 'max_seqs', as vLLM requires")
    bs = eng["block_size"]
    for k, r in enumerate(rows):
        need = -(-(r.input_length + r.output_length - 1) // bs)
        if need > eng["num_blocks"]:
            raise C.bad(f"$.rows[{k}]" if "rows" in s else "$.trace",
                        f"request {first + k} ({r.input_length} + {r.output_length} tokens) needs {need} KV blocks "
                        f"of {bs}, and the engine has {eng['num_blocks']}: it could never run")
    return dict(s, rows=rows, first=first, hash_block=hb)


def inputs(s: dict) -> dict:
    e = s["engine"]
    return {"bs": str(e["block_size"]), "B": str(e["budget"]), "blocks": str(e["num_blocks"]),
            "max_seqs": str(e["max_seqs"]), "chunk": str(e.get("chunk", 0) or "inf"),
            "c0": "1", "a": "0", "b": "0"}


def sent_step(row: MooncakeRow, step_ms: float) -> int:
    return int(row.timestamp // step_ms)


def horizon(s: dict) -> float:
    rows = s["rows"]
    return float(sent_step(rows[-1], s["step_ms"]) + 64 +
                 sum(4 * (r.input_length + r.output_length) for r in rows))


def content(row: MooncakeRow, hb: int) -> tuple:
    return row.content(hb)


def with_sessions(p: M.Program, s: dict) -> M.Program:
    """The compiled program with the slice's requests as explicit sessions."""
    S = M.SLOT
    specs = []
    for r in s["rows"]:
        turn = ((S["new"], float(r.input_length)), (S["out"], float(r.output_length)), (S["think"], 0.0),
                (S["forced"], 0.0), (S["more"], 0.0))
        specs.append(M.SessionSpec(attrs=(), turns=(turn,), at=float(sent_step(r, s["step_ms"])),
                                   content=content(r, s["hash_block"])))
    return dataclasses.replace(p, arrival=M.ASessions(tuple(specs)), trace=None, trace_ordered=False)


def _int(x):
    return int(x) if float(x).is_integer() else x


def outcome(report, s: dict) -> dict:
    """The run's observations in the harness's format; request i is session i − first."""
    obs = {}
    for name in ("sent", "first", "done", "cached_tokens"):
        obs[name] = {}
        for t, sess, k, v in report.samples(name):
            obs[name].setdefault(sess, _int(v))
    rows = []
    for k in range(len(s["rows"])):
        rows.append({"i": s["first"] + k, "sent": obs["sent"].get(k), "first": obs["first"].get(k),
                     "last": obs["done"].get(k), "cached": obs["cached_tokens"].get(k)})
    kv = next(p for p in report.data()["pools"] if p["name"] == "kv")
    last = [r["last"] for r in rows if r["last"] is not None]
    return {"requests": rows, "steps": (max(last) + 1) if last else 0, "preemptions": kv["preemptions"]}


def diff(ours: dict, theirs: dict) -> list[str]:
    """The fields where two outcomes differ, in words (empty: they agree)."""
    out = diff_rows(ours["requests"], theirs["requests"], lambda r: r["i"], lambda i: f"request {i}")
    for f in ("steps", "preemptions"):
        if ours.get(f) != theirs.get(f):
            out.append(f"{f}: serQ {ours.get(f)} vLLM {theirs.get(f)}")
    return out


def summary(out: dict) -> dict:
    """Requests, preemptions and the token hit rate (cached / prompt tokens) of an outcome."""
    return {"requests": len(out["requests"]), "preemptions": out.get("preemptions"),
            "cached": sum(r["cached"] or 0 for r in out["requests"])}


def harness_spec(s: dict, base: str) -> dict:
    """The spec as the vLLM harness reads it from stdin (paths made absolute)."""
    out = {k: v for k, v in s.items() if k in KEYS}
    if "trace" in out:
        out["trace"] = os.path.abspath(os.path.join(base, out["trace"]))
    return out


def token_hit_rate(s: dict, out: dict) -> float:
    tokens = sum(r.input_length for r in s["rows"])
    return sum(r["cached"] or 0 for r in out["requests"]) / tokens if tokens else math.nan
