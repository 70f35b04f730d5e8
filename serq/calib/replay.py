"""A measured run replayed through a program: its workload's requests (the
exact prompt tokens, so the prefixes they share are shared; the forced output
lengths; the arrival times) at the run's engine settings, and what the
program predicts for each request beside what was measured.

The program (``examples/replay/vllm_measured.sq`` unless another is given)
reads the engine's settings as inputs — ``bs`` (block size), ``B``
(max_num_batched_tokens), ``blocks`` (KV blocks), ``max_seqs``, ``chunk``
(long_prefill_token_threshold, ``inf`` for none) and ``prefix`` (1: prefix
caching) — and a request's tokens as the turn's ``new`` and ``out``; its KV
pool is ``kv``.  Each request is an explicit session arriving at its time
whose prompt's content is its token ids in blocks of ``bs``: a full block's
content id names the whole prefix up to it (equal ids, equal prefixes, as
vLLM's chained block hashes), the last, partial block is the request's own.
With prefix caching the pool is content-addressed (`cache shared;`)."""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from ..diag import Diagnostic, SerqError
from ..ir import model as M
from . import metrics as MX
from .models import Model, gpu as gpu_of, model as model_of
from .runs import Run

ENGINE_INPUTS = ("bs", "B", "blocks", "max_seqs", "chunk", "prefix")
# What vLLM kept for activations, CUDA graphs and the rest beside the weights
# and the KV cache: the RTX 4090 run's own figures (meta.json), 25.25 GB ×
# 0.9 − 16.06 GB of Llama-3.1-8B's weights − 2 588 blocks × 16 tokens ×
# 128 KiB = 1.24 GB, taken for a run that does not state its KV blocks.
RESERVE_BYTES = 1.238e9
E_REPLAY = "E982"
DP_HELP = ("replay a run of one engine (data_parallel_size 1); a data-parallel replay needs vLLM's balancer "
           "(the least 4 × waiting + running, over counts published every 100 ms: which engine took each "
           "request, which requests.jsonl does not say), engines that step in lockstep at the larger batch "
           "(serQ's engines step each on its own clock), and with expert parallelism the all-gather and "
           "reduce-scatter between them, which the profile does not measure (docs/calibration.md, "
           "\"The MoE run\")")


@dataclass
class Engine:
    inputs: dict              # the program's engine inputs, as --set texts
    block_size: int
    blocks: int
    prefix: bool
    tp: int
    notes: list = field(default_factory=list)
    free_fifo: bool = False   # vLLM 0.19.0's free queue (`cache shared fifo;`)
    async_sched: bool = False  # the run scheduled asynchronously (the program's `async_sched`)


def engine(run: Run, model: Optional[Model]) -> Engine:
    """The run's engine settings from meta.json, and what was not stated and
    how it was found."""
    e, kv = run.engine, run.kv_cache
    notes = []
    dp = e.get("data_parallel_size") or 1
    if dp > 1:
        raise SerqError(Diagnostic(E_REPLAY, f"{run.label()} is a data-parallel run ({dp} engines"
                                   f"{' with expert parallelism' if e.get('enable_expert_parallel') else ''}) "
                                   "that step in lockstep, and the replay is one engine",
                                   help=DP_HELP))
    tp = e["tensor_parallel_size"]
    bs = kv.get("block_size")
    if bs is None:
        bs = 16
        notes.append("block size: not stated; vLLM's default for these models, 16")
    prefix = kv.get("enable_prefix_caching")
    if prefix is None:
        prefix = True
        notes.append("prefix caching: not stated; vLLM 0.19's default, on")
    blocks = kv.get("num_gpu_blocks")
    if blocks is None:
        blocks = _derived_blocks(run, model, tp, bs, notes)
    else:
        notes.append(f"KV capacity: {blocks} blocks of {bs} tokens, as meta.json states")
    chunk = run.scheduler.get("long_prefill_token_threshold")
    chunk_text = "inf" if not chunk else str(int(chunk))
    if chunk is None:
        notes.append("prefill chunk cap: not stated; vLLM's default with one partial prefill, none")
    inputs = {"bs": str(bs), "B": str(e["max_num_batched_tokens"]), "blocks": str(blocks),
              "max_seqs": str(e["max_num_seqs"]), "chunk": chunk_text, "prefix": "1" if prefix else "0"}
    fifo = bool(prefix) and run.vllm_version.startswith("0.19.")
    if fifo:
        notes.append("vLLM 0.19's block pool: every freed block joins the free queue's tail (`cache shared "
                     "fifo;`; 0.33 reuses the ones without a cached prefix first)")
    asyn = run.scheduler.get("async_scheduling")
    if asyn is None:
        # an unset async_scheduling resolves to on without speculative
        # decoding on the uni- and multiprocess executors (config/vllm.py:1685-1719;
        # 0.19.0's rule is the same)
        asyn = True
        notes.append("asynchronous scheduling: not stated; vLLM 0.19.0's and 0.33.0's default, on (async_sched 1)")
    else:
        notes.append(f"asynchronous scheduling: {'on' if asyn else 'off'}, as meta.json states "
                     f"(async_sched {int(bool(asyn))})")
    return Engine(inputs, bs, blocks, bool(prefix), tp, notes, fifo, bool(asyn))



def _derived_blocks(run: Run, model: Optional[Model], tp: int, bs: int, notes: list) -> int:
    if model is None:
        raise SerqError(Diagnostic(E_REPLAY, f"meta.json does not state the KV blocks, and the model table has "
                                   f"no {run.model} to derive them from", help="give them: --set blocks=N"))
    mem = run.hardware_info.get("device_total_memory_bytes")
    g = gpu_of(run.hardware_info.get("device_name", "")) or gpu_of(run.hardware)
    if not isinstance(mem, (int, float)) or isinstance(mem, bool):
        if g is None:
            raise SerqError(Diagnostic(E_REPLAY, f"meta.json does not state the KV blocks or the GPU's memory, "
                                       f"and the GPU table has no {run.hardware}", help="give them: --set blocks=N"))
        mem = g.memory_bytes
        mem_note = f"{mem / 1e9:.2f} GB ({g.name}, the GPU table)"
    else:
        mem_note = f"{mem / 1e9:.2f} GB (meta.json)"
    util = run.kv_cache.get("gpu_memory_utilization")
    util_note = "meta.json" if util is not None else "vLLM's default"
    util = 0.9 if util is None else util
    per_gpu = mem * util - model.weight_bytes() / tp - RESERVE_BYTES
    kv_token = model.kv_bytes_per_token() / tp
    blocks = int(per_gpu // (kv_token * bs))
    if blocks < 1:
        raise SerqError(Diagnostic(E_REPLAY, f"the derived KV capacity of {run.label()} is {blocks} blocks",
                                   help="give it: --set blocks=N"))
    notes.append(f"KV capacity: not stated; derived as {blocks} blocks of {bs} tokens = (GPU memory "
                 f"{mem_note} × gpu_memory_utilization {util:g} ({util_note}) − weights "
                 f"{model.weight_bytes() / tp / 1e9:.2f} GB per GPU − {RESERVE_BYTES / 1e9:.2f} GB for "
                 f"activations and CUDA graphs) / {kv_token / 1024:.0f} KiB of KV per token per GPU")
    return blocks


def contents(run: Run, bs: int) -> list:
    """Each request's prompt as content segments (``token_contents``)."""
    return token_contents([w.tokens for w in run.workload], bs)


def token_contents(prompts: list, bs: int) -> list:
    """Each prompt (a list of token ids) as content segments: one per block
    of ``bs`` tokens, a full block's id naming its whole prefix, the last
    partial block the prompt's own id."""
    ids: dict = {}
    out = []
    for toks in prompts:
        segs = []
        parent = -1
        full = len(toks) // bs
        for j in range(full):
            key = (parent, tuple(toks[j * bs:(j + 1) * bs]))
            cid = ids.get(key)
            if cid is None:
                cid = ids[key] = len(ids)
            segs.append((cid, bs))
            parent = cid
        if len(toks) > full * bs:
            cid = ids[("own", len(out))] = len(ids)
            segs.append((cid, len(toks) - full * bs))
        out.append(tuple(segs))
    return out


def arrivals(run: Run, how: str) -> list:
    if how == "workload":
        return [w.arrival for w in run.workload]
    q0 = run.requests[0].queued
    return [r.queued - q0 for r in run.requests]


def with_requests(p: M.Program, run: Run, eng: Engine, how: str = "workload") -> M.Program:
    """The linked program with the run's requests as explicit sessions."""
    S = M.SLOT
    specs = []
    content = contents(run, eng.block_size)
    for w, at, segs in zip(run.workload, arrivals(run, how), content):
        turn = ((S["new"], float(w.input_toks)), (S["out"], float(w.output_toks)))
        specs.append(M.SessionSpec(attrs=(), turns=(turn,), at=float(at), content=segs))
    pools = p.pools
    kv = [i for i, x in enumerate(pools) if x.name == "kv"]
    if not kv:
        raise SerqError(Diagnostic(E_REPLAY, "the program has no KV pool named `kv`",
                                   help="the replayed program's KV pool is `pool kv on gpu { … }`"))
    if eng.prefix:
        pools = tuple(dataclasses.replace(x, shared=True, free_fifo=eng.free_fifo) if i in kv else x
                      for i, x in enumerate(pools))
    last = max(arrivals(run, how))
    return dataclasses.replace(p, arrival=M.ASessions(tuple(specs)), trace=None, trace_ordered=False, pools=pools,
                               horizon=float(max(p.horizon, 10.0 * (last + 3600.0))), warmup=0.0)


def _unfinished(rep, prog: M.Program) -> str:
    """Why a replay left requests unfinished, from its report: the KV pool
    refused them (one larger than it, or a preemption storm), or the replay's
    clock reached its end first, its iterations too long (a cost's constant:
    `--set gap=1e300` makes one iteration outlast the replay)."""
    d = rep.data()
    kv = [(x, pl) for x, pl in zip(d["pools"], prog.pools) if pl.name == "kv"]
    rejected = sum(x["rejected"] for x, _ in kv)
    stuck = sum(x["stuck"] for x, _ in kv)
    size = " + ".join(f"{pl.cap:g}" for _, pl in kv)
    if rejected:
        return (f"the KV pool, of {size} tokens, refused {rejected} request{'s' if rejected != 1 else ''} larger "
                "than it: the engine needs more KV blocks (blocks, bs)")
    if stuck:
        return (f"{stuck} request{'s were' if stuck != 1 else ' was'} preempted again and again, the KV pool, of "
                f"{size} tokens, too small for what the running requests grow to: the engine needs more KV "
                "blocks (blocks, bs) or fewer requests at once (max_seqs)")
    if d["run"]["end"] >= prog.horizon:
        log = rep.step_log
        began = (f"{len(log)} iteration{'s' if len(log) != 1 else ''} began, the last at {log[-1]['time']:g} s"
                 if log else "no iteration began")
        return (f"the replay's clock reached its end, {prog.horizon:g} s, before "
                f"they finished ({began}): the program's iterations are too long for the run, its cost's "
                "constants (as given with --set, --tune or --instance, or the program's own) make them so")
    return "the run ended with them unserved: a program that does not serve every request it is given"


@dataclass
class Replay:
    run: Run
    engine: Engine
    predicted: list           # per request: {ttft, tpot, latency} seconds
    measured: list
    peer: Optional[list]
    steps: int                # iterations that computed a token
    preemptions: int
    peak_kv: float            # the most KV tokens held at once

    def values(self, which: str) -> dict:
        rows = {"predicted": self.predicted, "measured": self.measured, "peer": self.peer}[which]
        return {m: [r[m] for r in rows] for m in MX.METRICS}


def replay(p: M.Program, run: Run, eng: Engine, how: str = "workload") -> Replay:
    from ..ir import validate
    from ..sim import simulate
    prog = with_requests(p, run, eng, how)
    validate(prog)
    rep = simulate(prog, client_log=True, step_log=True, samples=False)
    ats = arrivals(run, how)
    first, done = client_times(rep)
    missing = [i for i in range(len(run.workload)) if i not in done or first.get(i) is None]
    if missing:
        raise SerqError(Diagnostic(E_REPLAY, f"the replay did not finish {len(missing)} of {len(run.workload)} "
                                   f"requests (the first: bench-{missing[0]})", help=_unfinished(rep, prog)))
    picked = pickups(ats, [s["time"] for s in rep.step_log])
    pred, meas = [], []
    for i, (w, r) in enumerate(zip(run.workload, run.requests)):
        pred.append(MX.per_request(picked[i], first[i], done[i], w.output_toks))
        meas.append(MX.per_request(r.queued, r.first, r.last, r.output_toks))
    peer = None
    if run.peer is not None:
        peer = [{"ttft": q.ttft, "tpot": q.tpot, "latency": q.latency} for q in run.peer]
    kv = next(x for x in rep.data()["pools"] if x["name"] == "kv")
    cap = next(x.cap for x in prog.pools if x.name == "kv")
    low = min((s["free"] for s in rep.step_log if s["free"] is not None), default=cap)
    return Replay(run, eng, pred, meas, peer, sum(1 for s in rep.step_log if s["tokens"]), int(kv["preemptions"]), float(cap - low))


def batches(p: M.Program, run: Run, eng: Engine) -> list:
    """What each iteration of the replay computed (serq.sim's batch log),
    the iterations that computed a token."""
    from ..ir import validate
    from ..sim import simulate
    prog = with_requests(p, run, eng)
    validate(prog)
    rep = simulate(prog, batch_log=True, samples=False)
    return [b for b in rep.batch_log if b["prefill"] or b["decode"]]


def pickups(ats: list, starts: list) -> list:
    """Each request's counterpart of vLLM's ``queued_ts``: the first
    iteration that starts at or after its arrival.  vLLM's engine core takes
    the requests that arrived from its input queue between engine steps,
    each of which waits for a batch's output (``run_busy_loop``,
    ``_process_input_queue``; ``Scheduler.add_request`` records QUEUED), so a
    request that arrives while an iteration runs is queued as the next one
    starts, and one that arrives at an idle engine at once (the iteration
    that starts then)."""
    starts = sorted(starts)
    out = []
    for a in ats:
        k = bisect.bisect_left(starts, a)
        out.append(starts[k] if k < len(starts) else a)
    return out


def client_times(rep) -> tuple:
    """``(first, last)``: each session's first token and its last, by
    session, from the report's client log (its answer), and where it has a
    step log, the start of the iteration after the last one that computed
    a token of the session, when that is earlier: a request that awaits an
    iteration after its last decode (asynchronous scheduling's `await;`) is
    answered as it leaves, an iteration after its last token is out."""
    first: dict = {}
    done: dict = {}
    for sid, t_first, t_done in rep.client_log:
        first.setdefault(sid, t_first)
        done.setdefault(sid, t_done)
    if not rep.step_log:
        return first, done
    starts: dict = {}       # engine -> its iterations' start times
    last: dict = {}         # session -> (engine, index of its last iteration with a token)
    for s in rep.step_log:
        times = starts.setdefault(s["stage"], [])
        for sid in s["tokens"]:
            last[sid] = (s["stage"], len(times))
        times.append(s["time"])
    for sid, (stage, k) in last.items():
        times = starts[stage]
        if sid in done and k + 1 < len(times) and times[k + 1] < done[sid]:
            done[sid] = times[k + 1]
    return first, done


def check_summary(run: Run) -> Optional[list]:
    """Where the measured per-request metrics disagree with the bundle's
    summary.txt (the printed 0.1 ms), or None when it has none."""
    if run.summary_path is None:
        return None
    ref = MX.read_summary(run.summary_path)
    meas = MX.summary({m: [MX.per_request(r.queued, r.first, r.last, r.output_toks)[m] for r in run.requests]
                       for m in MX.METRICS})
    bad = []
    for m in MX.METRICS:
        for s in MX.STATS:
            if round(meas[m][s] * 1e3, 1) != round(ref[m][s][0] * 1e3, 1):
                bad.append(f"{MX.TITLES[m]} {s}: {meas[m][s] * 1e3:.1f} ms, summary {ref[m][s][0] * 1e3:.1f} ms")
    return bad


def model_for(run: Run) -> Optional[Model]:
    return model_of(run.model)

