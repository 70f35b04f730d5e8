"""An SGLang scenario (`tools/oracle/sglang/scenarios/NAME.json`) as a program:
its engine as the inputs of `examples/oracle/sglang_request.sq`, its requests
as explicit sessions (a shared prompt as content, the KV pool then
content-addressed); a run's observations in the SGLang harness's format
(tools/oracle/sglang_oracle.py), their comparison, and the first step where
the two part."""

from __future__ import annotations

import dataclasses
import json
import os

from ..datafile import json_kind, json_text
from ..ir import model as M
from . import divergence
from .outcome import diff_rows
from .scenario import read_json, shared_prompt, with_shared_kv
from .spec import Checker

PROGRAM = os.path.join("examples", "oracle", "sglang_request.sq")
KEYS = {"max_running", "kv_tokens", "chunk", "budget", "policy", "ignore_eos", "conservativeness", "overlap",
        "requests"}
REQUEST_KEYS = {"prompt", "out", "arrive", "prefix"}
SHARED_STRIDE = 10_000     # the harness's: a shared prompt has fewer tokens
FIELDS = ("first", "last", "retractions", "cached", "finish")
HELP = ('an SGLang scenario is {"max_running", "kv_tokens", "chunk"?, "budget", "policy"?: "fcfs"|"lpm", '
        '"ignore_eos"?, "conservativeness"?, "overlap"?, "requests": [{"prompt", "out", "arrive"?, '
        '"prefix"?: {"id", "tokens"}}]}')


def load(path: str) -> dict:
    data = read_json(path, "SGLang scenario")
    check(data, path)
    return data


def check(s, where: str = "scenario") -> dict:
    """What the harness accepts (tools/oracle/sglang_oracle.py, parse_scenario):
    every value's type and range (serq/oracle/spec.py), a problem said at its
    JSON path (E951)."""
    C = Checker(where, HELP)
    C.obj(s, "$", sorted(KEYS), ("max_running", "kv_tokens", "budget", "requests"))
    for k in ("max_running", "kv_tokens", "budget"):
        C.whole(s[k], f"$.{k}", 1)
    C.whole(s.get("chunk", 0), "$.chunk", 0)
    C.choice(s.get("policy", "fcfs"), "$.policy", ("fcfs", "lpm"))
    for k in ("ignore_eos", "overlap"):
        if k in s:
            C.flag(s[k], f"$.{k}")
    c = s.get("conservativeness", 1.0)
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 < c <= 100:
        raise C.bad("$.conservativeness", f"is {json_text(c)}: a number in (0, 100]")
    for i, r in enumerate(C.items(s["requests"], "$.requests")):
        w = f"$.requests[{i}]"
        C.obj(r, w, ("prompt", "out", "arrive", "prefix"), ("prompt", "out"))
        C.whole(r["prompt"], f"{w}.prompt", 1)
        C.whole(r["out"], f"{w}.out", 1)
        C.whole(r.get("arrive", 0), f"{w}.arrive", 0)
        if "prefix" in r:
            shared_prompt(C, r["prefix"], f"{w}.prefix", min(r["prompt"], SHARED_STRIDE - 1), "its prompt")
        if r["prompt"] + r["out"] > s["kv_tokens"] - 2 or r["prompt"] >= s["kv_tokens"] - 6:
            raise C.bad(w, f"(prompt {r['prompt']} + out {r['out']}) does not fit $.kv_tokens "
                           f"{s['kv_tokens']}: SGLang refuses a prompt of kv_tokens - 6 or more and cuts a request's "
                           "outputs to kv_tokens - 2 in all")
    return s


def check_output(out, where: str = "the SGLang output") -> dict:
    """An SGLang harness's output (tools/oracle/sglang_oracle.py's, or a
    committed ``.out.json``): its shape and each value's type, before anything
    reads it (serq/oracle/spec.py)."""
    C = Checker(where, "an SGLang output is what the harness prints: tools/oracle/sglang/README.md")
    C.obj(out, "$", ("requests", "steps", "sglang", "log"), ("requests", "steps"))
    for i, r in enumerate(C.items(out["requests"], "$.requests")):
        w = f"$.requests[{i}]"
        C.obj(r, w, ("req",) + FIELDS, ("req",))
        C.whole(r["req"], f"{w}.req", 0)
        for k in ("first", "last", "retractions", "cached"):
            if r.get(k) is not None:
                C.whole(r[k], f"{w}.{k}", 0)
        if r.get("finish") is not None and not isinstance(r["finish"], str):
            raise C.bad(f"{w}.finish", f"is {json_text(r['finish'])}: a reason (a string) or null")
    C.whole(out["steps"], "$.steps", 0)
    if "sglang" in out and not isinstance(out["sglang"], str):
        raise C.bad("$.sglang", f"is {json_text(out['sglang'])}: a version (a string)")
    if "log" in out:
        if not isinstance(out["log"], list):
            raise C.bad("$.log", f"is {json_kind(out['log'])}, not a list")
        for i, e in enumerate(out["log"]):
            w = f"$.log[{i}]"
            C.obj(e, w, ("step", "mode", "prefill", "decode", "retracted", "finished", "free"),
                  ("step", "prefill", "decode", "retracted"))
            C.whole(e["step"], f"{w}.step", 0)
            pre = e["prefill"]
            C.obj(pre, f"{w}.prefill", [k for k in pre if isinstance(k, str) and k.isdigit()]
                  if isinstance(pre, dict) else ())
            for k, v in pre.items():
                C.whole(v, f"{w}.prefill.{k}", 0)
            for k in ("decode", "retracted", "finished"):
                if k in e:
                    if not isinstance(e[k], list):
                        raise C.bad(f"{w}.{k}", f"is {json_kind(e[k])}, not a list of requests")
                    for j, x in enumerate(e[k]):
                        C.whole(x, f"{w}.{k}[{j}]", 0)
            if e.get("free") is not None:
                C.whole(e["free"], f"{w}.free", 0)
            if "mode" in e and not isinstance(e["mode"], str):
                raise C.bad(f"{w}.mode", f"is {json_text(e['mode'])}: a loop's mode (a string)")
    return out


def program(s: dict) -> str:
    return PROGRAM


def inputs(s: dict) -> dict:
    """The program's inputs (`--set`) for a scenario."""
    return {"kv_tokens": str(s["kv_tokens"]), "max_running": str(s["max_running"]), "budget": str(s["budget"]),
            "chunk": str(s.get("chunk", 0) or "inf"), "conserv": repr(float(s.get("conservativeness", 1.0))),
            "ignore_eos": "1" if s.get("ignore_eos", True) else "0",
            "overlap": "1" if s.get("overlap", False) else "0",
            "lpm": "1" if s.get("policy", "fcfs") == "lpm" else "0"}


def horizon(s: dict) -> float:
    """A step no run of the scenario reaches (each step computes a token; a
    retraction chain is bounded by it)."""
    reqs = s["requests"]
    work = sum(r["prompt"] + r["out"] for r in reqs)
    return float(max(r.get("arrive", 0) for r in reqs) + 8 * work + 64)


def with_sessions(p: M.Program, s: dict) -> M.Program:
    """The compiled program with the scenario's requests as explicit sessions,
    a shared prompt as the session's content."""
    slot = {n: p.attrs.index(n) for n in ("prompt", "o", "arrive")}
    sessions = tuple(M.SessionSpec(attrs=((slot["prompt"], float(r["prompt"])), (slot["o"], float(r["out"])),
                                          (slot["arrive"], float(r.get("arrive", 0)))))
                     for r in s["requests"])
    sessions = tuple(dataclasses.replace(x, content=((r["prefix"]["id"], r["prefix"]["tokens"]),))
                     if "prefix" in r else x for x, r in zip(sessions, s["requests"]))
    pools = with_shared_kv(p.pools) if any("prefix" in r for r in s["requests"]) else p.pools
    return dataclasses.replace(p, arrival=M.ASessions(sessions), pools=pools)


def _int(x: float):
    return int(x) if float(x).is_integer() else x


def outcome(report, program: M.Program, overlap: bool = False) -> dict:
    """`{"requests": [{"req", "first", "last", "retractions", "cached",
    "finish"}], "steps"}`: request i is session i; `first` and `last` the
    steps whose batch computed the first and last output token (a token
    observed at time k + 1 was computed in step k); `finish` "length" (every
    request generates its `out` tokens); `steps` the loop's iterations until
    the last token's output is sent: the last token's step + 1, or + 2 under
    the overlap loop, which processes a batch's result in the next iteration
    (scheduler.py:2108-2120)."""
    n = len(program.arrival.sessions) if type(program.arrival) is M.ASessions else 0
    seen: dict = {}
    for name in ("first", "done", "retractions", "cached_tokens"):
        for _, sid, _, v in report.samples(name):
            seen.setdefault((name, sid), v)
    reqs = []
    for i in range(n):
        first, done = seen.get(("first", i)), seen.get(("done", i))
        ret, cached = seen.get(("retractions", i)), seen.get(("cached_tokens", i))
        reqs.append({"req": i, "first": None if first is None else _int(first - 1),
                     "last": None if done is None else _int(done - 1 - overlap),
                     "retractions": None if ret is None else _int(ret),
                     "cached": None if cached is None else _int(cached),
                     "finish": "length" if done is not None else None})
    last = [r["last"] for r in reqs if r["last"] is not None]
    return {"requests": reqs, "steps": (max(last) + 1 + overlap) if last else 0}


def diff(ours: dict, theirs: dict) -> list[str]:
    """The fields where two outcomes differ, in words (empty: they agree)."""
    out = diff_rows(ours.get("requests", []), theirs.get("requests", []), key=lambda r: r["req"],
                    name=lambda i: f"request {i}", fields=FIELDS)
    if ours.get("steps") != theirs.get("steps"):
        out.append(f"steps: serQ {ours.get('steps')} SGLang {theirs.get('steps')}")
    return [x.replace(" vLLM ", " SGLang ").replace("only vLLM", "only SGLang") for x in out]


def dumps(out: dict) -> str:
    """The harness's layout: one request per line."""
    rows = ",\n".join("  " + json.dumps(r) for r in out["requests"])
    more = "".join(f",\n{json.dumps(k)}: {json.dumps(out[k])}" for k in ("sglang", "error") if k in out)
    return "{\"requests\": [\n" + rows + "\n],\n\"steps\": " + json.dumps(out["steps"]) + more + "}"


# ---------------------------------------------------------------- the first step where they part

def _blank() -> dict:
    return {"prefill": {}, "decode": [], "retracted": []}


def ours_by_step(step_log: list, out: dict) -> dict:
    """serQ's iterations on the step clock, keyed by step (= start time): the
    prompt tokens each request prefilled, the requests decoded and retracted.
    A step is SGLang's prefill or decode batch, never both: it is a prefill
    when it admits a request, gives one more than a token, or reaches a
    request's first token (``out``'s ``first``)."""
    firsts = {r["req"]: r["first"] for r in out["requests"]}
    res = {}
    for rec in step_log:
        k = int(rec["time"])
        t = res.setdefault(k, _blank())
        toks = {int(i): n for i, n in rec["tokens"].items()}
        prefill = bool(rec["admitted"]) or any(n > 1 for n in toks.values()) or \
            any(firsts.get(i) is not None and k <= firsts[i] for i in toks)
        if prefill:
            t["prefill"] = {str(i): _int(n) for i, n in sorted(toks.items())}
        else:
            t["decode"] = sorted(toks)
        t["retracted"] = sorted(int(x) for x in rec["preempted"])
    return res


def theirs_by_step(log: list) -> dict:
    return {int(r["step"]): {"prefill": {str(k): v for k, v in r["prefill"].items()},
                             "decode": sorted(r["decode"]), "retracted": sorted(r["retracted"])} for r in log}


def first_divergence(ours: dict, theirs: dict):
    for k in sorted(set(ours) | set(theirs)):        # (a step neither logged is blank on both sides)
        a, b = ours.get(k, _blank()), theirs.get(k, _blank())
        if a != b:
            return k, a, b
    return None


def describe(t: dict) -> str:
    parts = []
    if t["prefill"]:
        parts.append("prefilled {" + ", ".join(f"r{i}: {n}" for i, n in
                                               sorted(t["prefill"].items(), key=lambda x: int(x[0]))) + "}")
    if t["decode"]:
        parts.append("decoded " + ", ".join(f"r{i}" for i in t["decode"]))
    if t["retracted"]:
        parts.append("retracted " + ", ".join(f"r{i}" for i in t["retracted"]))
    return "; ".join(parts) or "ran nothing"


def report(ours: dict, theirs: dict, context: int = 2) -> str:
    return divergence.report(ours, theirs, context, first=first_divergence, say=describe, empty=_blank(),
                             colon=":").replace("  vLLM:", "  SGLang:")
