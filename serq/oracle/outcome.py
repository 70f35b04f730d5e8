"""A run's observations in the oracle harness's format, and their comparison.

Scenarios: `{"first": {"i": t}, "done": {"i": t}, "preemptions": n, "steps": n}`
— request i is session i; `first` and `done` are the program's observations
(a token sampled in step k exists at time k + 1); `preemptions` is the KV
pool's; `steps` is the last `done` + 1 (vLLM's scheduler has one more call
to flush the last request, tools/oracle/README.md).

Traces: `{"requests": [{"session", "turn", "sent", "first", "last",
"cached"}], "steps": n}`, turns counted from 0.
"""

from __future__ import annotations

from ..ir import model as M


def _int(x: float):
    return int(x) if float(x).is_integer() else x


def _by_session(report, name: str) -> dict:
    out = {}
    for t, s, k, v in report.samples(name):
        out.setdefault(s, []).append((k, v))
    return out


def scenario_outcome(report, program: M.Program, kv: str = "kv") -> dict:
    n = len(program.arrival.sessions) if type(program.arrival) is M.ASessions else 0
    first = _by_session(report, "first")
    done = _by_session(report, "done")
    out_first = {str(i): _int(first[i][0][1]) for i in range(n) if i in first}
    out_done = {str(i): _int(done[i][0][1]) for i in range(n) if i in done}
    return _outcome(report, out_first, out_done, kv)


def client_outcome(report, program: M.Program, kv: str) -> dict:
    """The same from what the client saw (a run with ``client_log``): request
    i's first token and its answer, for a program that observes neither."""
    n = len(program.arrival.sessions) if type(program.arrival) is M.ASessions else 0
    out_first, out_done = {}, {}
    for sid, first, answered in report.client_log:
        if sid < n and str(sid) not in out_done:
            if first is not None:
                out_first[str(sid)] = _int(first)
            out_done[str(sid)] = _int(answered)
    order = [str(i) for i in range(n)]
    return _outcome(report, {i: out_first[i] for i in order if i in out_first},
                    {i: out_done[i] for i in order if i in out_done}, kv)


def _outcome(report, out_first: dict, out_done: dict, kv: str) -> dict:
    kv = next((p for p in report.data()["pools"] if p["name"] == kv), None)
    pre = kv["preemptions"] if kv else 0
    steps = (max(out_done.values()) + 1) if out_done else 0
    return {"first": out_first, "done": out_done, "preemptions": pre, "steps": steps}


def trace_outcome(report, program: M.Program) -> dict:
    sent = _by_session(report, "sent")
    first = _by_session(report, "first")
    done = _by_session(report, "done")
    cached = _by_session(report, "cached_tokens")
    reqs = []
    for s in sorted(sent):
        f = dict(first.get(s, []))
        d = dict(done.get(s, []))
        c = dict(cached.get(s, []))
        for k, v in sent[s]:
            reqs.append({"session": s, "turn": int(k) - 1, "sent": _int(v),
                         "first": _int(f[k]) if k in f else None,
                         "last": _int(d[k]) if k in d else None,
                         "cached": _int(c[k]) if k in c else None})
    last = [r["last"] for r in reqs if r["last"] is not None]
    return {"requests": reqs, "steps": (max(last) + 1) if last else 0}


def strip(vllm_out: dict) -> dict:
    return {k: v for k, v in vllm_out.items() if k not in ("vllm", "log")}


def diff_rows(ours: list, theirs: list, key, name, fields=("sent", "first", "last", "cached")) -> list[str]:
    """The fields where two lists of per-request rows differ, the rows paired
    by ``key(row)`` and named by ``name(key)``."""
    out = []
    a = {key(r): r for r in ours}
    b = {key(r): r for r in theirs}
    for k in sorted(set(a) | set(b)):
        ra, rb = a.get(k), b.get(k)
        if ra is None or rb is None:
            out.append(f"{name(k)}: only {'vLLM' if ra is None else 'serQ'} has it")
            continue
        for f in fields:
            if ra.get(f) != rb.get(f):
                out.append(f"{name(k)}: {f} serQ {ra.get(f)} vLLM {rb.get(f)}")
    return out


def diff(ours: dict, theirs: dict) -> list[str]:
    """The fields where two outcomes differ, in words (empty: they agree)."""
    out = []
    theirs = strip(theirs)
    if "requests" in theirs:
        out += diff_rows(ours.get("requests", []), theirs["requests"], lambda r: (r["session"], r["turn"]),
                         lambda k: f"session {k[0]} turn {k[1]}")
    else:
        for f in ("first", "done"):
            for i in sorted(set(ours.get(f, {})) | set(theirs.get(f, {})), key=int):
                x, y = ours.get(f, {}).get(i), theirs.get(f, {}).get(i)
                if x != y:
                    out.append(f"request {i}: {f} serQ {x} vLLM {y}")
        if ours.get("preemptions") != theirs.get("preemptions"):
            out.append(f"preemptions: serQ {ours.get('preemptions')} vLLM {theirs.get('preemptions')}")
    if ours.get("steps") != theirs.get("steps"):
        out.append(f"steps: serQ {ours.get('steps')} vLLM {theirs.get('steps')}")
    return out


def check_output(out, where: str, trace: bool) -> dict:
    """A vLLM output given to compare with (a dict, or a committed
    ``.out.json`` / ``.log.json``): its shape, each value's type, before
    anything reads it (serq/oracle/spec.py)."""
    from .spec import Checker
    C = Checker(where, "a vLLM output is what the harness prints: tools/oracle/README.md")

    def whole_or_null(v, path):
        return None if v is None else C.whole(v, path, 0)
    if trace:
        C.obj(out, "$", ("requests", "steps", "vllm", "preemptions", "log"), ("requests", "steps"))
        for i, r in enumerate(C.items(out["requests"], "$.requests")):
            w = f"$.requests[{i}]"
            C.obj(r, w, ("session", "turn", "sent", "first", "last", "cached"), ("session", "turn"))
            for k in ("session", "turn"):
                C.whole(r[k], f"{w}.{k}", 0)
            for k in ("sent", "first", "last", "cached"):
                whole_or_null(r.get(k), f"{w}.{k}")
    else:
        C.obj(out, "$", ("first", "done", "preemptions", "steps", "vllm", "log"),
              ("first", "done", "preemptions", "steps"))
        for f in ("first", "done"):
            C.obj(out[f], f"$.{f}", [k for k in out[f] if isinstance(k, str) and k.isdigit()]
                  if isinstance(out[f], dict) else ())
            for k, v in out[f].items():
                whole_or_null(v, f"$.{f}.{k}")
        C.whole(out["preemptions"], "$.preemptions", 0)
    C.whole(out["steps"], "$.steps", 0)
    if "log" in out:
        for i, r in enumerate(C.items(out["log"], "$.log", most=10 ** 7)):
            w = f"$.log[{i}]"
            C.obj(r, w, ("step", "tokens", "admitted", "preempted", "free_blocks"),
                  ("step", "tokens", "admitted", "preempted"))
            C.whole(r["step"], f"{w}.step", 0)
            toks = C.obj(r["tokens"], f"{w}.tokens", [k for k in r["tokens"] if isinstance(k, str) and k.isdigit()]
                         if isinstance(r["tokens"], dict) else ())
            for k, v in toks.items():
                C.whole(v, f"{w}.tokens.{k}", 0)
            for k in ("admitted", "preempted"):
                if not isinstance(r[k], list):
                    raise C.bad(f"{w}.{k}", "is not a list of requests")
                for j, x in enumerate(r[k]):
                    C.whole(x, f"{w}.{k}[{j}]", 0)
            whole_or_null(r.get("free_blocks"), f"{w}.free_blocks")
    return out
