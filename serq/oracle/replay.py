"""A prefix-cache trace (`tools/oracle/traces/NAME.json`) as a program:
`examples/replay/vllm_replay.sq` on the step clock, its engine as inputs and
its sessions, with their turns, as explicit sessions.

A session may start with a shared prompt (`"prefix": {"id", "tokens"}`, the
first tokens of its first prompt): its content is then that segment, and the
program's KV pool is content-addressed (`cache shared;`, IR `shared`), since
per-session cache entries cannot share a prompt across sessions.  A trace
without one compiles to the program as written."""

from __future__ import annotations

import dataclasses

from ..ir import model as M
from ..ir.trace import TraceTurn, turn_attrs
from .scenario import read_json, shared_prompt, with_shared_kv
from .spec import Checker

PROGRAM = "examples/replay/vllm_replay.sq"


def program(t: dict) -> str:
    """The program a trace runs: always PROGRAM."""
    return PROGRAM


KEYS = ("budget", "max_seqs", "block_size", "num_blocks", "chunk", "sessions")
SESSION_KEYS = ("arrive", "prefix", "turns")
TURN_KEYS = ("new", "out", "think")
HELP = ('a trace is {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "sessions": [{"arrive", '
        '"prefix": {"id", "tokens"}, "turns": [{"new", "out", "think"}]}]}')


def load(path: str) -> dict:
    data = read_json(path, "the trace")
    check(data, path)
    return data


def check(t: dict, where: str) -> None:
    """Every value of a replay trace, its type and range (serq/oracle/spec.py),
    as tools/oracle/vllm_replay_oracle.py reads it."""
    C = Checker(where, HELP)
    C.obj(t, "$", KEYS, ("budget", "max_seqs", "block_size", "num_blocks", "sessions"))
    for k in ("budget", "max_seqs", "block_size", "num_blocks"):
        C.whole(t[k], f"$.{k}", 1)
    C.whole(t.get("chunk", 0), "$.chunk", 0)
    for i, s in enumerate(C.items(t["sessions"], "$.sessions")):
        w = f"$.sessions[{i}]"
        C.obj(s, w, SESSION_KEYS, ("turns",))
        C.whole(s.get("arrive", 0), f"{w}.arrive", 0)
        turns = C.items(s["turns"], f"{w}.turns")
        for k, turn in enumerate(turns):
            wt = f"{w}.turns[{k}]"
            C.obj(turn, wt, TURN_KEYS, ("new", "out"))
            C.whole(turn["new"], f"{wt}.new", 0 if k > 0 else 1)
            C.whole(turn["out"], f"{wt}.out", 1)
            C.whole(turn.get("think", 0), f"{wt}.think", 0)
        if "prefix" in s:
            shared_prompt(C, s["prefix"], f"{w}.prefix", turns[0]["new"], "turn 0's new")


def inputs(t: dict) -> dict:
    return {"bs": str(t["block_size"]), "B": str(t["budget"]), "blocks": str(t["num_blocks"]),
            "max_seqs": str(t["max_seqs"]), "chunk": str(t.get("chunk", 0) or "inf"),
            "c0": "1", "a": "0", "b": "0"}


def horizon(t: dict) -> float:
    work = sum(turn["new"] + turn["out"] + turn.get("think", 0)
               for s in t["sessions"] for turn in s["turns"])
    tokens = sum(turn["new"] + turn["out"] for s in t["sessions"] for turn in s["turns"])
    return float(max(s.get("arrive", 0) for s in t["sessions"]) + work + 4 * tokens * len(t["sessions"]) + 64)


def with_sessions(p: M.Program, t: dict) -> M.Program:
    arrive = p.attrs.index("arrive")
    specs = []
    for s in t["sessions"]:
        turns = s["turns"]
        pre = s.get("prefix")
        specs.append(M.SessionSpec(
            attrs=((arrive, float(s.get("arrive", 0))),),
            turns=tuple(turn_attrs(TraceTurn(float(x["new"]), float(x["out"]), float(x.get("think", 0)), 0.0),
                                   k + 1 < len(turns))
                        for k, x in enumerate(turns)),
            content=() if pre is None else ((pre["id"], pre["tokens"]),)))
    pools = with_shared_kv(p.pools) if any("prefix" in s for s in t["sessions"]) else p.pools
    return dataclasses.replace(p, arrival=M.ASessions(tuple(specs)), trace=None, trace_ordered=False,
                               pools=pools)
