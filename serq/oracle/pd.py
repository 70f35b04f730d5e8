"""A P/D scenario (`tools/oracle/pd/NAME.json`) as a program: its two engines
as the inputs of `examples/oracle/vllm_pd.sq`, its requests as explicit
sessions; and a run's observations in the P/D harness's format
(tools/oracle/vllm_pd_oracle.py), with their comparison."""

from __future__ import annotations

import dataclasses
import os

from ..ir import model as M
from . import divergence
from .outcome import diff_rows
from .scenario import read_json, shared_prompt, with_shared_kv
from .spec import Checker

PROGRAM = os.path.join("examples", "oracle", "vllm_pd.sq")
KEYS = {"P", "D", "xfer_steps", "proxy_delay", "requests"}
ENGINE_KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "prefix_caching"}
REQUEST_KEYS = {"prompt", "out", "arrive", "xfer", "prefix"}
SHARED_STRIDE = 10_000     # the harness's: a shared prompt has fewer tokens
FIELDS = ("p_first", "p_freed", "xfer_start", "d_first", "d_last", "p_preemptions", "d_preemptions",
          "p_cached", "d_cached")
HELP = ('a P/D scenario is {"P": ENGINE, "D": ENGINE, "xfer_steps", "proxy_delay", "requests": '
        '[{"prompt", "out", "arrive", "xfer"?, "prefix"?: {"id", "tokens"}}]}, ENGINE = {"budget", "max_seqs", "block_size", '
        '"num_blocks", "chunk"?, "prefix_caching"?}')


def load(path: str) -> dict:
    data = read_json(path, "the P/D scenario")
    check(data, path)
    return data


def check(s, where: str = "scenario") -> None:
    """Every value of a P/D scenario, its type and range (serq/oracle/spec.py),
    and whether each request could ever run."""
    C = Checker(where, HELP)
    C.obj(s, "$", sorted(KEYS), ("P", "D", "xfer_steps", "proxy_delay", "requests"))
    for side in ("P", "D"):
        e = C.obj(s[side], f"$.{side}", sorted(ENGINE_KEYS), ("budget", "max_seqs", "block_size", "num_blocks"))
        for k in ("budget", "max_seqs", "block_size", "num_blocks"):
            C.whole(e[k], f"$.{side}.{k}", 1)
        C.whole(e.get("chunk", 0), f"$.{side}.chunk", 0)
        if "prefix_caching" in e:
            C.flag(e["prefix_caching"], f"$.{side}.prefix_caching")
    C.whole(s["xfer_steps"], "$.xfer_steps", 1)
    C.whole(s["proxy_delay"], "$.proxy_delay", 0)
    reqs = C.items(s["requests"], "$.requests")
    for i, r in enumerate(reqs):
        w = f"$.requests[{i}]"
        C.obj(r, w, sorted(REQUEST_KEYS), ("prompt", "out", "arrive"))
        C.whole(r["prompt"], f"{w}.prompt", 1)
        C.whole(r["out"], f"{w}.out", 1)
        C.whole(r["arrive"], f"{w}.arrive", 0)
        if "xfer" in r:
            C.whole(r["xfer"], f"{w}.xfer", 1)
        if "prefix" in r:
            shared_prompt(C, r["prefix"], f"{w}.prefix", min(r["prompt"], SHARED_STRIDE - 1), "its prompt")
    for side in ("P", "D"):
        e = s[side]
        if e["budget"] < e["max_seqs"]:
            raise C.bad(f"$.{side}.budget", f"({e['budget']}) must be ≥ 'max_seqs' ({e['max_seqs']}), as vLLM "
                                            "requires")
        for i, r in enumerate(reqs):
            tokens = r["prompt"] if side == "P" else r["prompt"] + r["out"] - 1
            need = -(-tokens // e["block_size"])
            if need > e["num_blocks"]:
                raise C.bad(f"$.requests[{i}]", f"needs {need} KV blocks on {side} ({tokens} tokens in blocks of "
                                                f"{e['block_size']}) and {side} has {e['num_blocks']}: it could "
                                                "never run")


def program(s: dict) -> str:
    return PROGRAM


def inputs(s: dict) -> dict:
    """The program's inputs (`--set`) for a scenario."""
    out = {"proxy_delay": str(s["proxy_delay"])}
    for side in ("P", "D"):
        e = s[side]
        out.update({f"bs{side}": str(e["block_size"]), f"B{side}": str(e["budget"]),
                    f"blocks{side}": str(e["num_blocks"]), f"max_seqs{side}": str(e["max_seqs"]),
                    f"chunk{side}": str(e.get("chunk", 0) or "inf"),
                    f"prefix{side}": "1" if e.get("prefix_caching", False) else "0"})
    return out


def xfer(s: dict, r: dict) -> int:
    return r.get("xfer", s["xfer_steps"])


def horizon(s: dict) -> float:
    """A tick no run of the scenario reaches (each tick that schedules
    computes a token; a preemption chain is bounded by it)."""
    reqs = s["requests"]
    work = sum(r["prompt"] + r["out"] for r in reqs)
    return float(max(r["arrive"] for r in reqs) + s["proxy_delay"] * len(reqs)
                 + sum(xfer(s, r) for r in reqs) + 8 * work + 64)


def with_sessions(p: M.Program, s: dict) -> M.Program:
    """The compiled program with the scenario's requests as explicit sessions."""
    slot = {n: p.attrs.index(n) for n in ("prompt", "o", "arrive", "xfer")}
    sessions = tuple(M.SessionSpec(attrs=((slot["prompt"], float(r["prompt"])), (slot["o"], float(r["out"])),
                                          (slot["arrive"], float(r["arrive"])),
                                          (slot["xfer"], float(xfer(s, r)))))
                     for r in s["requests"])
    sessions = tuple(dataclasses.replace(x, content=((r["prefix"]["id"], r["prefix"]["tokens"]),))
                     if "prefix" in r else x for x, r in zip(sessions, s["requests"]))
    # content shared across requests: both instances' KV pools content-addressed
    pools = with_shared_kv(p.pools) if any("prefix" in r for r in s["requests"]) else p.pools
    return dataclasses.replace(p, arrival=M.ASessions(sessions), pools=pools)


def _int(x: float):
    return int(x) if float(x).is_integer() else x


def outcome(report, program: M.Program) -> dict:
    """`{"requests": [{"req", FIELDS…}], "ticks"}`: request i is session i;
    `ticks` is the last token's time + 1 (D's scheduler has one more call to
    flush the last request, as the single-instance oracle's has)."""
    n = len(program.arrival.sessions) if type(program.arrival) is M.ASessions else 0
    first = {}
    for name in FIELDS:
        for _, sid, _, v in report.samples(name):
            first.setdefault((name, sid), v)
    reqs = []
    for i in range(n):
        row = {"req": i}
        for name in FIELDS:
            v = first.get((name, i))
            row[name] = None if v is None else _int(v)
        reqs.append(row)
    last = [r["d_last"] for r in reqs if r["d_last"] is not None]
    return {"requests": reqs, "ticks": (max(last) + 1) if last else 0}


def diff(ours: dict, theirs: dict) -> list[str]:
    """The fields where two outcomes differ, in words (empty: they agree)."""
    out = diff_rows(ours.get("requests", []), theirs.get("requests", []), key=lambda r: r["req"],
                    name=lambda i: f"request {i}", fields=FIELDS)
    if ours.get("ticks") != theirs.get("ticks"):
        out.append(f"ticks: serQ {ours.get('ticks')} vLLM {theirs.get('ticks')}")
    return out


def dumps(out: dict) -> str:
    """The harness's layout: one request per line."""
    import json
    rows = ",\n".join("  " + json.dumps(r) for r in out["requests"])
    return "{\"requests\": [\n" + rows + "\n],\n\"ticks\": " + json.dumps(out["ticks"]) + "}"


# ---------------------------------------------------------------- the first tick where they part
SIDES = ("P", "D")


def _blank() -> dict:
    return {side: {"tokens": {}, "admitted": [], "preempted": [], "loads": [], "freed": []} for side in SIDES}


def ours_by_tick(step_log: list, out: dict) -> dict:
    """serQ's iterations on the step clock, keyed by tick (= start time) and
    instance, with the loads D admitted and the requests whose blocks P
    freed in each tick (from the observations: a load admitted at tick k,
    P's blocks free at time k + 1 when they were freed in tick k)."""
    ticks: dict = {}
    loads = {}
    for r in out["requests"]:
        if r["xfer_start"] is not None:
            loads.setdefault(r["xfer_start"], []).append(r["req"])
            ticks.setdefault(r["xfer_start"], _blank())["D"]["loads"].append(r["req"])
        if r["p_freed"] is not None:
            ticks.setdefault(r["p_freed"] - 1, _blank())["P"]["freed"].append(r["req"])
    for rec in step_log:
        k = int(rec["time"])
        side = rec["stage"].split("[", 1)[0]
        t = ticks.setdefault(k, _blank())[side]
        t["tokens"] = {str(s): _int(n) for s, n in sorted(rec["tokens"].items())}
        # a load D admits takes no token: vLLM's admitted are the requests it schedules
        t["admitted"] = [int(x) for x in rec["admitted"] if not (side == "D" and x in loads.get(k, ()))
                         or str(x) in t["tokens"]]
        t["preempted"] = [int(x) for x in rec["preempted"]]
    return ticks


def theirs_by_tick(log: list) -> dict:
    out = {}
    for r in log:
        t = _blank()
        for side in SIDES:
            s = r[side]
            t[side].update(tokens=dict(s["tokens"]), admitted=list(s["admitted"]), preempted=list(s["preempted"]),
                           loads=sorted(s.get("loads", [])), freed=sorted(s.get("freed", [])))
        out[int(r["tick"])] = t
    return out


def _norm(t: dict) -> dict:
    return {side: dict(t[side], loads=sorted(t[side]["loads"]), freed=sorted(t[side]["freed"])) for side in SIDES}


def first_divergence(ours: dict, theirs: dict):
    """(tick, ours, theirs) of the first tick where an instance scheduled,
    admitted, preempted, loaded or freed differently, or None."""
    for k in sorted(set(ours) | set(theirs)):        # (a tick neither logged is blank on both sides)
        a, b = _norm(ours.get(k, _blank())), _norm(theirs.get(k, _blank()))
        if a != b:
            return k, a, b
    return None


def describe(t: dict) -> str:
    parts = []
    for side in SIDES:
        s = t[side]
        toks = ", ".join(f"r{i}: {n}" for i, n in sorted(s["tokens"].items(), key=lambda x: int(x[0])))
        bits = [f"scheduled {{{toks}}}" if toks else "scheduled nothing"]
        for key, word in (("admitted", "admitted"), ("preempted", "preempted"),
                          ("loads", "started the read of"), ("freed", "freed the blocks of")):
            if s[key]:
                bits.append(word + " " + ", ".join(f"r{x}" for x in s[key]))
        parts.append(f"{side}: " + "; ".join(bits))
    return " | ".join(parts)


def report(ours: dict, theirs: dict, context: int = 2) -> str:
    return divergence.report(ours, theirs, context, first=first_divergence,
                             say=lambda t: describe(_norm(t)), empty=_blank(), unit="tick", colon=" ")
