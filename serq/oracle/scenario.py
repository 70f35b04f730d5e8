"""A scenario (`tools/oracle/NAME.json`) as a program: its engine as the
inputs of `examples/oracle/vllm_request.sq`, its requests as explicit sessions."""

from __future__ import annotations

import dataclasses
import os

from ..diag import Diagnostic, SerqError
from ..ir import model as M
from .spec import Checker, read_json

PROGRAM = os.path.join("examples", "oracle", "vllm_request.sq")
# the program of each scheduling policy (SchedulerConfig.policy)
PROGRAMS = {"fcfs": PROGRAM, "priority": os.path.join("examples", "oracle", "vllm_request_priority.sq")}
KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "adaptive", "prefix_caching", "policy",
        "requests"}
REQUEST_KEYS = ("prompt", "out", "arrive", "priority")


# A shared prompt, `"prefix": {"id", "tokens"}` (a replay trace's session, a
# P/D scenario's request): at most MAX_PREFIXES ids, as the harnesses allow
# (tools/oracle/oracle_core.py, prefix_field).
MAX_PREFIXES = 20


def shared_prompt(C: Checker, pre, path: str, most: int, most_is: str) -> None:
    """A well-formed shared prompt ``{"id", "tokens"}`` at ``path``: the id
    below MAX_PREFIXES, the tokens from 1 to ``most`` (``most_is`` says what
    that is)."""
    C.obj(pre, path, ("id", "tokens"), ("id", "tokens"))
    C.whole(pre["id"], f"{path}.id", 0, MAX_PREFIXES)
    C.whole(pre["tokens"], f"{path}.tokens", 1)
    if pre["tokens"] > most:
        raise C.bad(f"{path}.tokens", f"is {pre['tokens']}, more than {most_is} ({most})")


def with_shared_kv(pools: tuple) -> tuple:
    """The pools with every KV pool (`kv`, or a queue's `X.kv`) content-addressed
    (`cache shared;`, IR `shared`): per-session cache entries cannot share a
    prompt across sessions."""
    return tuple(dataclasses.replace(x, shared=True) if x.name.split(".")[-1] == "kv" else x for x in pools)


HELP = ('a scenario is {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "adaptive", '
        '"prefix_caching", "policy", "requests": [{"prompt", "out", "arrive", "priority"}]}')


def load(path: str) -> dict:
    data = read_json(path, "the scenario")
    check(data, path)
    return data


def check(s: dict, where: str = "scenario") -> None:
    """Every value of a scenario, its type and range (serq/oracle/spec.py)."""
    C = Checker(where, HELP)
    C.obj(s, "$", sorted(KEYS), ("budget", "max_seqs", "block_size", "num_blocks", "requests"))
    for k in ("budget", "max_seqs", "block_size", "num_blocks"):
        C.whole(s[k], f"$.{k}", 1)
    C.whole(s.get("chunk", 0), "$.chunk", 0)
    for k in ("prefix_caching", "adaptive"):
        if k in s:
            C.flag(s[k], f"$.{k}")
    if "policy" in s:
        C.choice(s["policy"], "$.policy", PROGRAMS)
    for i, r in enumerate(C.items(s["requests"], "$.requests")):
        w = f"$.requests[{i}]"
        C.obj(r, w, REQUEST_KEYS, ("prompt", "out"))
        C.whole(r["prompt"], f"{w}.prompt", 1)
        C.whole(r["out"], f"{w}.out", 1)
        C.whole(r.get("arrive", 0), f"{w}.arrive", 0)
        if "priority" in r:
            C.integer(r["priority"], f"{w}.priority")


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
