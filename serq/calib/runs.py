"""A measured vLLM run (LLMServingSim's `bench` output), read and checked at
the boundary.

    bench/examples/<GPU>/<model>/
        vllm/meta.json        the engine's arguments (and for some runs what vLLM resolved)
        vllm/requests.jsonl   per request: request_id, input_toks, output_toks, arrival_time,
                              queued_ts, scheduled_ts, first_token_ts, last_token_ts
        outputs/sim.csv       LLMServingSim's own prediction of the run (times in ns)
        validation/summary.txt
    workloads/<name>.jsonl    what the run replayed (meta.json's dataset_path, from the
                              repository's root): input_toks, output_toks, arrival_time_ns,
                              input_tok_ids; line i is request bench-i

The format is documented in casys-kaist/LLMServingSim, `bench/README.md`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from . import read as R

HELP = ("a measured run is a bundle's `bench/examples/<GPU>/<model>/` folder (vllm/meta.json, "
        "vllm/requests.jsonl) in a copy of LLMServingSim's repository, whose workloads/ it names")
REQ_KEYS = ("request_id", "input_toks", "output_toks", "arrival_time", "queued_ts", "scheduled_ts",
            "first_token_ts", "last_token_ts")
_RID = re.compile(r"bench-([0-9]+)\Z")
PEER_COLUMNS = ("instance id", "request id", "model", "input", "output", "arrival", "end_time", "latency",
                "queuing_delay", "TTFT", "TPOT", "ITL")


@dataclass
class Request:
    index: int                # i of bench-i (the workload's line i)
    input_toks: int
    output_toks: int
    queued: float             # monotonic seconds
    scheduled: float
    first: float
    last: float
    line: int                 # in requests.jsonl


@dataclass
class WorkItem:
    input_toks: int
    output_toks: int
    arrival: float            # seconds from the first request
    tokens: list              # the prompt's token ids
    arrival_ns: float = 0.0   # the workload's own arrival_time_ns


@dataclass
class PeerRequest:
    index: int
    arrival: float            # seconds
    end: float
    ttft: float
    tpot: float
    latency: float


@dataclass
class Run:
    path: str
    hardware: str             # the bundle's GPU folder (RTXPRO6000)
    model: str
    vllm_version: str
    engine: dict              # engine_kwargs
    kv_cache: dict            # meta.json's kv_cache (may be empty)
    hardware_info: dict       # meta.json's hardware (may be empty)
    scheduler: dict           # resolved_config.scheduler_config (may be empty)
    requests: list
    workload: list
    workload_path: str
    peer: Optional[list] = None
    peer_path: Optional[str] = None
    summary_path: Optional[str] = None
    notes: list = field(default_factory=list)

    def label(self) -> str:
        return f"{self.hardware}/{os.path.basename(self.path)}"


def read(path: str, workload: Optional[str] = None) -> Run:
    """The run in ``path`` (`bench/examples/<GPU>/<model>/`); its workload
    from meta.json's dataset_path under the repository's root (the folder
    four levels up), or ``workload`` when given."""
    path = os.path.normpath(path)
    if not os.path.isdir(path):
        raise R.missing("the measured run", path, HELP, folder=True)
    meta_path = os.path.join(path, "vllm", "meta.json")
    R.need_file(meta_path, "the run's meta.json", HELP)
    meta = R.json_file(meta_path, "run's meta.json")
    if not isinstance(meta, dict):
        raise R.bad(meta_path, 1, "meta.json is a JSON object")
    ln = lambda key: _line_of(meta_path, key)   # noqa: E731
    version = R.field(meta, "vllm_version", meta_path, ln("vllm_version"), str)
    model = R.field(meta, "model", meta_path, ln("model"), str)
    eng = R.field(meta, "engine_kwargs", meta_path, ln("engine_kwargs"), dict)
    for key in ("max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size"):
        R.field(eng, key, meta_path, ln(key), int, where="engine_kwargs.", minimum=1)
    for key in ("data_parallel_size", "max_model_len"):
        R.field(eng, key, meta_path, ln(key), int, where="engine_kwargs.", optional=True, minimum=1)
    kv = R.field(meta, "kv_cache", meta_path, ln("kv_cache"), dict, optional=True) or {}
    for key in ("num_gpu_blocks", "block_size"):
        R.field(kv, key, meta_path, ln(key), int, where="kv_cache.", optional=True, minimum=1)
    R.field(kv, "gpu_memory_utilization", meta_path, ln("gpu_memory_utilization"), float, where="kv_cache.",
            optional=True)
    R.field(kv, "enable_prefix_caching", meta_path, ln("enable_prefix_caching"), bool, where="kv_cache.",
            optional=True)
    hw = R.field(meta, "hardware", meta_path, ln("hardware"), dict, optional=True) or {}
    resolved = R.field(meta, "resolved_config", meta_path, ln("resolved_config"), dict, optional=True) or {}
    sched = resolved.get("scheduler_config") if isinstance(resolved.get("scheduler_config"), dict) else {}
    dataset = R.field(meta, "dataset_path", meta_path, ln("dataset_path"), str)
    reqs = _requests(os.path.join(path, "vllm", "requests.jsonl"))
    wpath = workload or _find_workload(path, dataset, meta_path, ln("dataset_path"))
    work = _workload(wpath)
    _agree(reqs, work, os.path.join(path, "vllm", "requests.jsonl"), wpath)
    run = Run(path, os.path.basename(os.path.dirname(path)), model, version, eng, kv, hw, sched, reqs, work,
              wpath)
    peer_path = os.path.join(path, "outputs", "sim.csv")
    if os.path.isfile(peer_path):
        run.peer = _peer(peer_path, len(reqs))
        run.peer_path = peer_path
    summary = os.path.join(path, "validation", "summary.txt")
    if os.path.isfile(summary):
        run.summary_path = summary
    return run


def _line_of(path: str, key: str) -> int:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if f'"{key}"' in line:
                    return n
    except OSError:
        pass
    return 1


def _find_workload(path: str, dataset: str, meta_path: str, line: int) -> str:
    from ..files import kind_of
    if os.path.isabs(dataset):
        cands = [dataset]
    else:
        cands = []
        d = path
        for _ in range(6):
            d = os.path.dirname(d)
            cands.append(os.path.join(d, dataset))
    other = None        # the first place where something else than a file is
    for cand in cands:
        kind = kind_of(cand)
        if kind == "a file":
            return cand
        if kind is not None and other is None:
            other = (cand, kind)
    if other is not None:
        raise R.content(f"the run replayed {dataset}, and {other[0]} is {other[1]}, not a file", meta_path, line,
                        help="give the workload: --workload FILE.jsonl")
    raise R.content(f"the run replayed {dataset}, which is not in the repository the run is in "
                    f"(looked up to six folders above {path})", meta_path, line,
                    help="give the workload: --workload FILE.jsonl")


def _requests(path: str) -> list:
    rows = R.json_lines(path, "run's requests.jsonl")
    out = {}
    for n, obj in rows:
        for k in REQ_KEYS:
            if k not in obj:
                raise R.bad(path, n, f"a request has no `{k}`")
        rid = obj["request_id"]
        m = _RID.match(rid) if isinstance(rid, str) else None
        if m is None:
            raise R.bad(path, n, f"`request_id` is {R.shown(rid)}, not bench-N")
        i = int(m.group(1))
        if i in out:
            raise R.bad(path, n, f"{rid} is given twice (first at line {out[i].line})")
        vals = {}
        for k in REQ_KEYS[1:]:
            vals[k] = R.field(obj, k, path, n, int if k.endswith("toks") else float, minimum=1 if k.endswith("toks")
                              else None)
        if not (vals["queued_ts"] <= vals["scheduled_ts"] <= vals["first_token_ts"] <= vals["last_token_ts"]):
            raise R.bad(path, n, f"{rid}'s times are not in order: queued ≤ scheduled ≤ first token ≤ last token")
        out[i] = Request(i, vals["input_toks"], vals["output_toks"], vals["queued_ts"], vals["scheduled_ts"],
                         vals["first_token_ts"], vals["last_token_ts"], n)
    return [out[i] for i in sorted(out)]


def read_workload(path: str) -> list:
    """A workload file (LLMServingSim's JSONL), checked."""
    return _workload(path)


def _workload(path: str) -> list:
    rows = R.json_lines(path, "workload")
    out = []
    t0 = None
    for n, obj in rows:
        inp = R.field(obj, "input_toks", path, n, int, minimum=1)
        o = R.field(obj, "output_toks", path, n, int, minimum=1)
        t = R.field(obj, "arrival_time_ns", path, n, float, minimum=0)
        ids = R.field(obj, "input_tok_ids", path, n, list)
        if len(ids) != inp or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in ids):
            raise R.bad(path, n, f"`input_tok_ids` is not {inp} token ids (whole numbers ≥ 0)")
        t0 = t if t0 is None else t0
        if out and t / 1e9 < out[-1].arrival + t0 / 1e9:
            raise R.bad(path, n, "a request arrives before the one on the line above")
        out.append(WorkItem(inp, o, (t - t0) / 1e9, ids, t))
    return out


def _agree(reqs: list, work: list, rpath: str, wpath: str) -> None:
    for r in reqs:
        if r.index >= len(work):
            raise R.content(f"bench-{r.index} has no line in the workload {wpath} ({len(work)} lines)",
                            rpath, r.line)
        w = work[r.index]
        if (w.input_toks, w.output_toks) != (r.input_toks, r.output_toks):
            raise R.content(f"bench-{r.index} has {r.input_toks} + {r.output_toks} tokens, and line "
                            f"{r.index + 1} of the workload {w.input_toks} + {w.output_toks}", rpath, r.line)
    if len(reqs) != len(work):
        raise R.content(f"the run has {len(reqs)} requests and its workload {len(work)}", rpath)


def _peer(path: str, n: int) -> list:
    rows = R.table(path, "peer's sim.csv", PEER_COLUMNS,
                   {c: {"minimum": 0} for c in ("request id", "input", "output", "arrival", "end_time", "latency",
                                                  "TTFT", "TPOT")})
    out = {}
    for r in rows:
        i = int(r["request id"])
        if i in out:
            raise R.bad(path, r["_line"], f"request {i} is given twice")
        out[i] = PeerRequest(i, r["arrival"] / 1e9, r["end_time"] / 1e9, r["TTFT"] / 1e9, r["TPOT"] / 1e9,
                             r["latency"] / 1e9)
    if sorted(out) != list(range(n)):
        raise R.content(f"the peer's prediction has requests {len(out)}, the run {n}", path)
    return [out[i] for i in range(n)]
