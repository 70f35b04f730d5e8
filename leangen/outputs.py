"""What a run of `exec_ref` observed, in the oracle harness's JSON layout.

* a request scenario (the program observes `first` and `done`):
  `{"first": {"i": t}, "done": {"i": t}, "preemptions": n, "steps": n}`;
* a multi-turn trace (it observes `sent`, `first`, `done` and maybe
  `cached_tokens`): `{"requests": [{"session", "turn", "sent", "first",
  "last", "cached"}], "steps": n}`, turns counted from 0;
* any other program: `{"observations": {"name": {"i": [v, …]}},
  "preemptions": n, "steps": n}`.

The layout is the harness's (`tools/oracle/README.md`): one top-level key per
line, a `requests` list one entry per line, so `python -m leangen exec
NAME.ir.json` can be compared with `NAME.out.json` less its `"vllm"` key.
"""

from __future__ import annotations

import json

# the trace form: the program's observations and the harness's keys
TRACE_KEYS = {"sent": "sent", "first": "first", "done": "last", "cached_tokens": "cached"}


def form(observes) -> str:
    names = list(observes)
    if names == ["first", "done"]:
        return "scenario"
    if {"sent", "first", "done"} <= set(names) and set(names) <= set(TRACE_KEYS):
        return "trace"
    return "generic"


def outcome(observes, obs: list, preemptions: int, steps: int) -> dict:
    """The JSON object for `exec_ref.runW`'s observations (per observation,
    its (session, value) pairs by session) and the step count."""
    names = list(observes)
    kind = form(names)
    if kind == "scenario":
        first = {str(s): v for s, v in obs[0]}
        done = {str(s): v for s, v in obs[1]}
        return {"first": first, "done": done, "preemptions": preemptions, "steps": steps}
    if kind == "trace":
        per = {n: _per_session(obs[i]) for i, n in enumerate(names)}
        reqs = []
        for s in sorted(per["sent"]):
            for k, sent in enumerate(per["sent"][s]):
                row = {"session": s, "turn": k, "sent": sent}
                for n, key in (("first", "first"), ("done", "last"), ("cached_tokens", "cached")):
                    vals = per.get(n, {}).get(s, [])
                    row[key] = vals[k] if k < len(vals) else None
                reqs.append(row)
        return {"requests": reqs, "steps": steps}
    out = {n: {str(s): v for s, v in _per_session(obs[i]).items()} for i, n in enumerate(names)}
    return {"observations": out, "preemptions": preemptions, "steps": steps}


def expected(observes, out: dict) -> list:
    """The observations a vLLM output states, in `runW`'s shape: per
    observation of the program, its (session, value) pairs by session."""
    kind = form(observes)
    if kind == "scenario":
        return [sorted((int(s), v) for s, v in out[n].items()) for n in observes]
    if kind == "trace":
        rows = sorted(out["requests"], key=lambda r: (r["session"], r["turn"]))
        return [[(r["session"], r[TRACE_KEYS[n]]) for r in rows if r[TRACE_KEYS[n]] is not None]
                for n in observes]
    raise ValueError("a vLLM output is a scenario's or a trace's")


def _per_session(pairs) -> dict:
    out: dict = {}
    for s, v in pairs:
        out.setdefault(s, []).append(v)
    return out


def dumps(out: dict) -> str:
    """One top-level key per line; a list of requests one entry per line."""
    parts = []
    for key, val in out.items():
        if key == "requests" and val:
            body = ",\n".join("  " + json.dumps(e) for e in val)
            parts.append(f"{json.dumps(key)}: [\n{body}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(val)}")
    return "{" + ",\n".join(parts) + "}\n"
