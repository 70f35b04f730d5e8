"""The first step where serQ and vLLM disagree, from their per-step logs."""

from __future__ import annotations


def _i(x):
    return int(x) if float(x).is_integer() else x


def ours_by_step(step_log: list, block: float) -> dict:
    """serQ's iterations on the step clock, keyed by step (= start time)."""
    out = {}
    for rec in step_log:
        k = int(rec["time"])
        out[k] = {"tokens": {str(s): _i(n) for s, n in rec["tokens"].items()},
                  "admitted": [int(x) for x in rec["admitted"]],
                  "preempted": [int(x) for x in rec["preempted"]],
                  "free_blocks": None if rec["free"] is None else _i(rec["free"] / block)}
    return out


def theirs_by_step(log: list) -> dict:
    return {int(r["step"]): {"tokens": {str(k): v for k, v in r["tokens"].items()},
                             "admitted": list(r["admitted"]), "preempted": list(r["preempted"]),
                             "free_blocks": r.get("free_blocks")} for r in log}


EMPTY = {"tokens": {}, "admitted": [], "preempted": [], "free_blocks": None}


def first_divergence(ours: dict, theirs: dict):
    """(step, ours, theirs) of the first disagreement on what was scheduled,
    admitted or preempted, or None."""
    for k in sorted(set(ours) | set(theirs)):        # (a step neither logged is EMPTY on both sides)
        a, b = ours.get(k, EMPTY), theirs.get(k, EMPTY)
        if a["tokens"] != b["tokens"] or a["admitted"] != b["admitted"] or \
                a["preempted"] != b["preempted"]:
            return k, a, b
    return None


def describe(rec: dict) -> str:
    toks = ", ".join(f"r{s}: {n}" for s, n in sorted(rec["tokens"].items(), key=lambda x: int(x[0])))
    parts = [f"scheduled {{{toks}}}" if toks else "scheduled nothing"]
    if rec["admitted"]:
        parts.append("admitted " + ", ".join(f"r{x}" for x in rec["admitted"]))
    if rec["preempted"]:
        parts.append("preempted " + ", ".join(f"r{x}" for x in rec["preempted"]))
    if rec.get("free_blocks") is not None:
        parts.append(f"{rec['free_blocks']} blocks free")
    return "; ".join(parts)


def report(ours: dict, theirs: dict, context: int = 2, *, first=first_divergence, say=describe,
           empty=EMPTY, unit: str = "step", colon: str = ":") -> str:
    """The first divergence and the ``context`` steps before it, in words;
    ``first``, ``say``, ``empty`` and ``unit`` are another log's (the P/D
    oracle's ticks, serq.oracle.pd)."""
    d = first(ours, theirs)
    if d is None:
        return "agree"
    k, a, b = d
    lines = [f"first divergence at {unit} {k}:",
             f"  serQ{colon} {say(a)}",
             f"  vLLM{colon} {say(b)}"]
    before = [j for j in range(max(0, k - context), k)]
    if before:
        lines.append("before it (both):")
        for j in before:
            lines.append(f"  {unit} {j}: {say(theirs.get(j, empty))}")
    return "\n".join(lines)
