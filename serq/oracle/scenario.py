"""A scenario (`tools/oracle/NAME.json`) as a program: its engine as the
inputs of `examples/oracle/vllm_request.sq`, its requests as explicit sessions."""

from __future__ import annotations

import dataclasses
import json
import math
import os

from ..diag import Diagnostic, SerqError
from ..ir import model as M

PROGRAM = os.path.join("examples", "oracle", "vllm_request.sq")
# the program of each scheduling policy (SchedulerConfig.policy)
PROGRAMS = {"fcfs": PROGRAM, "priority": os.path.join("examples", "oracle", "vllm_request_priority.sq")}
KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "adaptive", "prefix_caching", "policy",
        "requests"}
REQUEST_KEYS = {"prompt", "out", "arrive", "priority"}


# A shared prompt, `"prefix": {"id", "tokens"}` (a replay trace's session, a
# P/D scenario's request): at most MAX_PREFIXES ids, as the harnesses allow
# (tools/oracle/oracle_core.py, prefix_field).
MAX_PREFIXES = 20


def whole(v, lo) -> bool:
    """A whole number (not a bool) of at least ``lo``."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def shared_prompt_ok(pre, most) -> bool:
    """A well-formed shared prompt of at most ``most`` tokens."""
    return (isinstance(pre, dict) and set(pre) == {"id", "tokens"} and whole(pre["id"], 0)
            and pre["id"] < MAX_PREFIXES and whole(pre["tokens"], 1) and pre["tokens"] <= most)


def with_shared_kv(pools: tuple) -> tuple:
    """The pools with every KV pool (`kv`, or a queue's `X.kv`) content-addressed
    (`cache shared;`, IR `shared`): per-session cache entries cannot share a
    prompt across sessions."""
    return tuple(dataclasses.replace(x, shared=True) if x.name.split(".")[-1] == "kv" else x for x in pools)


def read_json(path: str, what: str):
    """A scenario's or a trace's JSON, or a located error."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SerqError(Diagnostic("E950", f"cannot read {what} {path}: {e.strerror}"))
    except json.JSONDecodeError as e:
        raise SerqError(Diagnostic("E950", f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}"))


def load(path: str) -> dict:
    data = read_json(path, "scenario")
    check(data, path)
    return data


def check(s: dict, where: str = "scenario") -> None:
    def bad(msg):
        raise SerqError(Diagnostic("E951", f"{where}: {msg}",
                                   help='a scenario is {"budget", "max_seqs", "block_size", "num_blocks", '
                                        '"chunk", "adaptive", "prefix_caching", "policy", '
                                        '"requests": [{"prompt", "out", "arrive", "priority"}]}'))
    if not isinstance(s, dict):
        bad("a scenario is a JSON object")
    unknown = set(s) - KEYS
    if unknown:
        bad(f"unknown key {sorted(unknown)[0]!r}")
    for k in ("budget", "max_seqs", "block_size", "num_blocks"):
        v = s.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            bad(f"{k!r} must be a whole number ≥ 1")
    c = s.get("chunk", 0)
    if not isinstance(c, int) or isinstance(c, bool) or c < 0:
        bad("'chunk' must be a whole number ≥ 0 (0: no cap)")
    for k in ("prefix_caching", "adaptive"):
        if not isinstance(s.get(k, False), bool):
            bad(f"{k!r} must be true or false")
    if s.get("policy", "fcfs") not in PROGRAMS:
        bad(f"'policy' must be one of {', '.join(repr(k) for k in PROGRAMS)}")
    reqs = s.get("requests")
    if not isinstance(reqs, list) or not reqs:
        bad("'requests' must be a non-empty list")
    for i, r in enumerate(reqs):
        if not isinstance(r, dict) or set(r) - REQUEST_KEYS:
            bad(f"request {i}: a request is {{\"prompt\", \"out\", \"arrive\", \"priority\"}}")
        for k, lo in (("prompt", 1), ("out", 1), ("arrive", 0)):
            v = r.get(k, 0 if k == "arrive" else None)
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                bad(f"request {i}: {k!r} must be a whole number ≥ {lo}")
        v = r.get("priority", 0)
        if not isinstance(v, int) or isinstance(v, bool):
            bad(f"request {i}: 'priority' must be an integer (lower is served first)")


def program(s: dict) -> str:
    """The oracle program of the scenario's policy, relative to the repository."""
    if s.get("adaptive", False):
        raise SerqError(Diagnostic("E951", "the oracle's programs have no adaptive long-prefill threshold",
                                   help="give a program whose engine has it: --program PROG.sq"))
    return PROGRAMS[s.get("policy", "fcfs")]


def inputs(s: dict) -> dict:
    """The program's inputs (`--set`) for a scenario."""
    return {"bs": str(s["block_size"]), "B": str(s["budget"]), "blocks": str(s["num_blocks"]),
            "max_seqs": str(s["max_seqs"]), "chunk": str(s.get("chunk", 0) or "inf"),
            "prefix": "1" if s.get("prefix_caching", False) else "0"}


def horizon(s: dict) -> float:
    """A step count no run of the scenario reaches: every step that schedules
    computes at least one token, and a preemption chain is bounded by it."""
    reqs = s["requests"]
    work = sum(r["prompt"] + r["out"] for r in reqs)
    return float(max(r.get("arrive", 0) for r in reqs) + 4 * work + 64)


NAMES = {"prompt": "prompt", "out": "o", "arrive": "arrive", "priority": "priority"}


def with_sessions(p: M.Program, s: dict, names: dict = NAMES) -> M.Program:
    """The compiled program with the scenario's requests as explicit sessions
    (``names``: the attribute each request field presets)."""
    slot = {n: p.attrs.index(names[k]) for k, n in (("prompt", "prompt"), ("out", "o"), ("arrive", "arrive"))}
    prio = p.attrs.index(names["priority"]) if names.get("priority") in p.attrs else None

    def attrs(r):
        a = ((slot["prompt"], float(r["prompt"])), (slot["o"], float(r["out"])),
             (slot["arrive"], float(r.get("arrive", 0))))
        return a if prio is None else a + ((prio, float(r.get("priority", 0))),)
    sessions = tuple(M.SessionSpec(attrs=attrs(r)) for r in s["requests"])
    return dataclasses.replace(p, arrival=M.ASessions(sessions))
