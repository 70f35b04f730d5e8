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

from ..diag import Diagnostic, SerqError
from ..ir import model as M
from ..ir.trace import TraceTurn, turn_attrs
from .scenario import MAX_PREFIXES, read_json, shared_prompt_ok, with_shared_kv

PROGRAM = "examples/replay/vllm_replay.sq"


def program(t: dict) -> str:
    """The program a trace runs: always PROGRAM."""
    return PROGRAM
KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "sessions"}


def load(path: str) -> dict:
    data = read_json(path, "trace")
    check(data, path)
    return data


def check(t: dict, where: str) -> None:
    def bad(msg):
        raise SerqError(Diagnostic("E951", f"{where}: {msg}",
                                   help='a trace is {"budget", "max_seqs", "block_size", "num_blocks", '
                                        '"chunk", "sessions": [{"arrive", "prefix", '
                                        '"turns": [{"new", "out", "think"}]}]}'))
    if not isinstance(t, dict) or set(t) - KEYS:
        bad("unknown key" if isinstance(t, dict) else "a trace is a JSON object")
    for k in ("budget", "max_seqs", "block_size", "num_blocks"):
        if not isinstance(t.get(k), int) or t[k] < 1:
            bad(f"{k!r} must be a whole number ≥ 1")
    sessions = t.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        bad("'sessions' must be a non-empty list")
    for i, s in enumerate(sessions):
        turns = s.get("turns") if isinstance(s, dict) else None
        if not isinstance(turns, list) or not turns:
            bad(f"session {i}: 'turns' must be a non-empty list")
        pre = s.get("prefix")
        if pre is not None and not shared_prompt_ok(pre, turns[0].get("new") or 0):
            bad(f"session {i}: 'prefix' is {{\"id\", \"tokens\"}}, whole numbers, the id below "
                f"{MAX_PREFIXES}, the tokens at most turn 0's new")
        for k, turn in enumerate(turns):
            for key in ("new", "out"):
                lo = 0 if (key == "new" and k > 0) else 1
                if not isinstance(turn.get(key), int) or turn[key] < lo:
                    bad(f"session {i} turn {k}: {key!r} must be a whole number ≥ {lo}")


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
            turns=tuple(turn_attrs(TraceTurn(float(x["new"]), float(x["out"]), float(x.get("think", 0)),
                                             float(x.get("forced", 0))), k + 1 < len(turns))
                        for k, x in enumerate(turns)),
            content=() if pre is None else ((float(pre["id"]), float(pre["tokens"])),)))
    pools = with_shared_kv(p.pools) if any("prefix" in s for s in t["sessions"]) else p.pools
    return dataclasses.replace(p, arrival=M.ASessions(tuple(specs)), trace=None, trace_ordered=False,
                               pools=pools)
