#!/usr/bin/env python3
"""SGLang-scheduler oracle: run a scenario through SGLang 0.5.23's real
``Scheduler`` (its prefill adder, schedule policy, radix cache, decode
retraction, new-token ratio and event loops), step by step, on a CPU with no
model.

Usage (under .venv-sglang/bin/python; `make sglang-env` builds it):
    sglang_oracle.py SCENARIO.json [--steps]
    sglang_oracle.py --batch IN.jsonl [--steps]    (one scenario per line in,
                                                    one output per line out)
    sglang_oracle.py --serve [--steps]             (stdin, one line at a time)

Scenario:
    {"max_running": 4, "kv_tokens": 200, "chunk": 32, "budget": 64,
     "policy": "fcfs", "ignore_eos": true, "conservativeness": 1.0,
     "overlap": false,
     "requests": [{"prompt": 30, "out": 5, "arrive": 0,
                   "prefix": {"id": 0, "tokens": 16}}, ...]}
  max_running_requests, max_total_tokens (page size 1), chunked_prefill_size
  (0: none, -1 to SGLang), max_prefill_tokens, schedule_policy ("fcfs" or
  "lpm"), every request's ignore_eos, schedule_conservativeness, the overlap
  event loop (true) or the normal one.  The radix cache is on, mixed chunks
  off, temperature 0.  A request naming a prefix id starts with that shared
  prompt's `tokens` token ids; every other token is its own.

Output:
    {"requests": [{"req", "first", "last", "retractions", "cached", "finish"}],
     "steps": n, "sglang": "0.5.23"}
  first/last: the steps whose batch computed the request's first/last output
  token (a step is one iteration of the event loop, from 0; the same
  definition with overlap on, where the token is processed a step later);
  retractions: how often retract_decode sent it back to the queue; cached,
  finish: SGLang's own `cached_tokens` and finish reason (`type`) in the
  output it sent for the request; steps: the iterations run until every
  request's output was sent.  With --steps, "log": one entry per step
    {"step", "mode": "prefill"|"decode"|"idle", "prefill": {"i": tokens},
     "decode": [i], "retracted": [i], "finished": [i], "free": tokens}
  (`free`: the allocator's available tokens plus what the radix cache could
  evict, after the step's processing).

What stands in for SGLang: one method, ``Scheduler.init_tp_model_worker``,
installs a fake model worker that builds SGLang's own pools on the CPU
(``ReqToTokenPool``, ``MHATokenToKVPool`` with one layer, head and dim of 1,
``TokenToKVPoolAllocator``) and returns one made-up token per request from
``forward_batch_generation``; the watchdog is off (``create_scheduler_watchdog``
gives a no-op: it would SIGQUIT the parent on a stall); a second scheduler in
one process skips ``bootstrap.init_parallel_runtime``, which refuses to run
twice.  Everything else of ``__init__`` runs as shipped (``build_kv_cache``
builds the radix cache), and one step is the body of ``event_loop_normal``
or ``event_loop_overlap`` (``STEP_NORMAL`` / ``STEP_OVERLAP`` below, guarded
by a hash of the installed loops).  See tools/oracle/sglang/README.md.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import oracle_io as io  # noqa: E402  (guards stdout)
from oracle_io import ScenarioError  # noqa: E402

SGLANG_VERSION_PINNED = "0.5.23"
TINY_MODEL_DIR = os.path.join(HERE, "tiny_model")

# ---------------------------------------------------------------------------
# Environment: every SGLANG_* variable cleared; the ones admission, retraction
# and the new-token ratio read pinned to 0.5.23's defaults (srt/environ.py,
# lines given), and checked after import (``check_pins``).
PINNED_ENV = {
    "SGLANG_INIT_NEW_TOKEN_RATIO": ("0.7", 0.7),                 # environ.py:646
    "SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR": ("0.14", 0.14),         # :647
    "SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS": ("600", 600),          # :648
    "SGLANG_RETRACT_DECODE_STEPS": ("20", 20),                   # :649
    "SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION": ("4096", 4096),     # :650
    "SGLANG_ENABLE_WAITING_PREFIX_REFRESH": ("true", True),      # :645
    "SGLANG_PREFILL_TILE_BUDGET": ("0", 0),                      # :661
    "SGLANG_PREFILL_TILE_BUDGET_MODE": ("compact", "compact"),   # :665
    "SGLANG_EXACT_CHUNK_FILL": ("true", True),                   # :670
    "SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP": ("false", False),  # :693
    "SGLANG_ENABLE_DELAY_SAMPLE": ("false", False),              # :697
    "SGLANG_RADIX_FORCE_MISS": ("false", False),                 # :722
    "SGLANG_TEST_RETRACT": ("false", False),                     # :423
    "SGLANG_ENABLE_WAR_BARRIER": ("false", False),                # :701
}
# The LPM policy's in-batch prefix thresholds are read from the environment
# too, unprefixed (managers/schedule_policy.py:110-119): their defaults, 32.
for _k in [k for k in os.environ if k.startswith("SGLANG_")] + [
        "IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD", "IN_BATCH_PREFIX_CACHING_DEPRIORITIZE_THRESHOLD"]:
    os.environ.pop(_k, None)
for _k, (_v, _) in PINNED_ENV.items():
    os.environ[_k] = _v
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The loop bodies this harness runs as one step, and the sha256 of the
# installed ``event_loop_normal`` / ``event_loop_overlap`` source they were
# taken from (managers/scheduler.py:2026-2058, :2060-2134), and of
# ``run_event_loop`` (:1975-2010), whose set-up ``start_loop`` repeats.
LOOP_SHA256 = {
    "run_event_loop": "faae8efd03360b0cb51498c64fd5fb38e1e27af35464072d851a2b708046be85",
    "event_loop_normal": "c328a45b821f18a07d1103648d2ececc2a82604c6ef57074e21ccdad73b8ca1d",
    "event_loop_overlap": "c093eb14e50c1ac62ba040fda2f47447e29c2105357a39e1095b5a31af5d043a",
}

SCENARIO_KEYS = {"max_running", "kv_tokens", "chunk", "budget", "policy", "ignore_eos",
                 "conservativeness", "overlap", "requests"}
REQUEST_KEYS = {"prompt", "out", "arrive", "prefix"}
POLICIES = ("fcfs", "lpm")      # schedule_policy (managers/schedule_policy.py)

# Token ids: request i's own tokens take the next run of ids from OWN_BASE;
# shared prompt g's token k is SHARED_BASE + SHARED_STRIDE * g + k (as the P/D
# harness's); sampled tokens come from OUTPUT_BASE on, never the EOS id (2).
OWN_BASE = 1000
SHARED_BASE = 400_000
SHARED_STRIDE = 10_000
OUTPUT_BASE = 600_000
VOCAB = 1_048_576   # tiny_model/config.json

_sg = None


class _NoWatchdog:
    """What ``create_scheduler_watchdog`` gives here: nothing watched."""

    def feed(self):
        pass


def _import_sglang():
    """Import and patch SGLang once (slow: 5-20 s)."""
    global _sg
    if _sg is not None:
        return _sg
    import types
    sys.path.insert(0, os.path.join(HERE, "sglang"))   # stubs.py and its torchvision dist-info
    import stubs
    stubs.install(["sglang.srt.multimodal", "torchvision"])
    import array
    import logging

    import sglang
    import torch
    if sglang.__version__ != SGLANG_VERSION_PINNED:
        raise SystemExit(f"sglang {sglang.__version__} is installed; the oracle is pinned to "
                         f"{SGLANG_VERSION_PINNED} (run `make sglang-env`)")
    from sglang.srt import environ as environ_mod
    from sglang.srt import runtime_context as rc
    from sglang.srt.distributed import bootstrap
    from sglang.srt.managers import scheduler as scheduler_mod
    from sglang.srt.managers.io_struct import TokenizedGenerateReqInput
    from sglang.srt.managers.tp_worker import BaseTpWorker, TpModelWorker
    from sglang.srt.managers.utils import GenerationBatchResult
    from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, ReqToTokenPool
    from sglang.srt.model_executor.model_runner_components.ngram_embedding_manager import (
        NgramEmbeddingManager,
    )
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.server_args import PortArgs, ServerArgs
    for name, (_, want) in PINNED_ENV.items():
        got = getattr(environ_mod.envs, name).get()
        if got != want:
            raise SystemExit(f"{name} reads {got!r}, not SGLang 0.5.23's default {want!r}")
    Scheduler = scheduler_mod.Scheduler
    for name, want in LOOP_SHA256.items():
        got = hashlib.sha256(inspect.getsource(getattr(Scheduler, name)).encode()).hexdigest()
        if want is not None and got != want:
            raise SystemExit(f"the installed Scheduler.{name} (sha256 {got[:16]}…) is not the loop "
                             f"this harness steps through (sha256 {want[:16]}…); update "
                             "STEP_NORMAL/STEP_OVERLAP and LOOP_SHA256 after reading it")
    logging.getLogger("sglang").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)

    # A second Scheduler in one process: the parallel runtime is built once.
    real_init_parallel = bootstrap.init_parallel_runtime
    state = {"parallel": False}

    def init_parallel_runtime(**kw):
        if state["parallel"]:
            return None
        state["parallel"] = True
        return real_init_parallel(**kw)
    bootstrap.init_parallel_runtime = init_parallel_runtime
    scheduler_mod.create_scheduler_watchdog = lambda *a, **k: _NoWatchdog()

    _sg = types.SimpleNamespace(
        sglang=sglang, torch=torch, array=array, rc=rc, Scheduler=Scheduler,
        TokenizedGenerateReqInput=TokenizedGenerateReqInput, BaseTpWorker=BaseTpWorker,
        TpModelWorker=TpModelWorker, GenerationBatchResult=GenerationBatchResult,
        TokenToKVPoolAllocator=TokenToKVPoolAllocator, MHATokenToKVPool=MHATokenToKVPool,
        ReqToTokenPool=ReqToTokenPool, NgramEmbeddingManager=NgramEmbeddingManager,
        SamplingParams=SamplingParams, PortArgs=PortArgs, ServerArgs=ServerArgs)
    _sg.Worker = _worker_class(_sg)
    Scheduler.init_tp_model_worker = _init_tp_model_worker
    return _sg


# ---------------------------------------------------------------------------
# The fake model worker


def _worker_class(sg):
    class Runner:
        """The model runner's fields the scheduler and build_kv_cache read."""

    class FakeTpWorker(sg.BaseTpWorker):
        """A model worker with SGLang's pools and no model: the reads of
        TpModelWorker (get_worker_info, is_dllm: its own code), one made-up
        token per request from forward_batch_generation."""
        get_worker_info = sg.TpModelWorker.get_worker_info     # tp_worker.py:550-588
        is_dllm = sg.TpModelWorker.is_dllm

        def __init__(self, runner, model_config, token_for):
            self._runner = runner
            self.model_config = model_config
            self.model_runner_list = None
            self.random_seed = 0
            self.device = "cpu"
            self.dllm_algorithm = None
            self.token_for = token_for

        @property
        def model_runner(self):
            return self._runner

        def init_attention_backends(self):
            pass

        def init_cuda_graphs(self, capture_decode_cuda_graph: bool = True):
            pass

        def forward_batch_generation(self, batch, **kw):
            toks = sg.torch.tensor([self.token_for(r) for r in batch.reqs], dtype=sg.torch.int64)
            return sg.GenerationBatchResult(logits_output=None, can_run_cuda_graph=False,
                                            next_token_ids=toks)

    FakeTpWorker.Runner = Runner
    return FakeTpWorker


def _init_tp_model_worker(self):
    """Scheduler.init_tp_model_worker (managers/scheduler.py:1018-1033) here:
    the fake worker, its pools sized as the real runner's (kv_cache_configurator.py:
    1771-1776, 2917-2923: max_running_requests request slots of context_len + 4,
    max_total_tokens KV slots, page size 1)."""
    sg = _sg
    spec = self._serq_spec
    kv_tokens, max_running = spec["kv_tokens"], spec["max_running"]
    r = sg.Worker.Runner()
    r.req_to_token_pool = sg.ReqToTokenPool(max_running, self.model_config.context_len + 4, "cpu", False)
    r.token_to_kv_pool = sg.MHATokenToKVPool(kv_tokens, 1, sg.torch.float32, 1, 1, 1, "cpu", False)
    r.token_to_kv_pool_allocator = sg.TokenToKVPoolAllocator(
        kv_tokens, sg.torch.float32, "cpu", r.token_to_kv_pool, False)
    r.memory_pool_config = object()
    r.is_hybrid_swa = False
    r.sliding_window_size = None
    r.mtp_draft_device_pools = ()
    r.mtp_draft_mamba_pools = ()
    r.spec_algorithm = self.spec_algorithm
    r.model_config = self.model_config
    r.device = "cpu"
    r.forward_stream = sg.torch.get_device_module("cpu").Stream()
    r.prewarm_sampling = lambda: None
    r.canary_manager = None
    r.logical_max_total_num_tokens = kv_tokens
    r.effective_logical_max_total_num_tokens = kv_tokens
    r.max_running_requests = max_running
    r.model = sg.torch.nn.Module()
    r.attn_backend = type("NoAttention", (), {})()   # no extend_attention_block_m: the adder's fallback
    r.ngram_embedding_manager = sg.NgramEmbeddingManager.from_model(
        model=r.model, model_config=self.model_config, req_to_token_pool=r.req_to_token_pool,
        max_running_requests=max_running, device="cpu")
    r.prefill_aware_swa = False
    r.lora_manager = None
    r.weight_load_time = 0.0
    r.graph_memory_usage = {}
    r.graph_time_usage = {}
    r.preloaded_weights_bytes = 0
    self.tp_worker = sg.Worker(r, self.model_config, spec["token_for"])


# ---------------------------------------------------------------------------
# The scenario


def parse_scenario(obj) -> dict:
    where = "scenario"
    io._check_keys(obj, SCENARIO_KEYS, where)
    p = {
        "max_running": io._int_field(obj, "max_running", where, minimum=1),
        "kv_tokens": io._int_field(obj, "kv_tokens", where, minimum=1),
        "chunk": io._int_field(obj, "chunk", where, minimum=0, default=0),
        "budget": io._int_field(obj, "budget", where, minimum=1),
        "ignore_eos": io._bool_field(obj, "ignore_eos", where, True),
        "overlap": io._bool_field(obj, "overlap", where, False),
        "policy": obj.get("policy", "fcfs"),
        "conservativeness": obj.get("conservativeness", 1.0),
    }
    if p["policy"] not in POLICIES:
        raise ScenarioError(f"{where}: field 'policy' must be one of {list(POLICIES)}, got {p['policy']!r}")
    c = p["conservativeness"]
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not (0 < c <= 100):
        raise ScenarioError(f"{where}: field 'conservativeness' must be a number in (0, 100], got {c!r}")
    p["conservativeness"] = float(c)
    reqs = io.request_list(obj, where, REQUEST_KEYS,
                           (("prompt", 1, None), ("out", 1, None), ("arrive", 0, 0)), nonempty=True)
    own = 0
    for i, (r, q) in enumerate(zip(obj["requests"], reqs)):
        w = f"{where}: requests[{i}]"
        q["prefix"] = io.prefix_field(r, w, min(q["prompt"], SHARED_STRIDE - 1), "its prompt")
        own += q["prompt"] - (q["prefix"][1] if q["prefix"] else 0)
        # max_req_len = min(context_len, kv_tokens) - 1, max_req_input_len = that - 5
        # (tp_worker.py:569-573), a prompt of max_req_input_len or more refused
        # (managers/utils.py:272-290), max_new_tokens at most max_req_len - prompt - 1
        # (scheduler.py:2709-2716): a longer request would be refused or truncated.
        if q["prompt"] + q["out"] > p["kv_tokens"] - 2 or q["prompt"] >= p["kv_tokens"] - 6:
            raise ScenarioError(f"{w}: prompt {q['prompt']} + out {q['out']} does not fit kv_tokens "
                                f"{p['kv_tokens']} (SGLang refuses a prompt of kv_tokens - 6 or more and cuts "
                                "a request's outputs to kv_tokens - 2 in all)")
    if OWN_BASE + own >= SHARED_BASE:
        raise ScenarioError(f"{where}: too many prompt tokens in total ({own})")
    p["requests"] = reqs
    return p


def prompt_ids(sc: dict) -> list:
    out, nxt = [], OWN_BASE
    for r in sc["requests"]:
        shared = []
        if r["prefix"] is not None:
            g, t = r["prefix"]
            shared = list(range(SHARED_BASE + SHARED_STRIDE * g, SHARED_BASE + SHARED_STRIDE * g + t))
        n = r["prompt"] - len(shared)
        out.append(shared + list(range(nxt, nxt + n)))
        nxt += n
    return out


def token_for(req) -> int:
    """The token sampled for a request: a function of its index and output
    position only."""
    i = int(req.rid)
    return OUTPUT_BASE + (i * 7919 + len(req.output_ids)) % (VOCAB - OUTPUT_BASE)


def build(sc: dict):
    """SGLang's real Scheduler for a scenario."""
    sg = _import_sglang()
    longest = max(r["prompt"] + r["out"] for r in sc["requests"])
    sa = sg.ServerArgs(
        model_path=TINY_MODEL_DIR, device="cpu", skip_tokenizer_init=True, page_size=1,
        context_length=max(longest + 8, sc["kv_tokens"]),
        max_running_requests=sc["max_running"], max_total_tokens=sc["kv_tokens"],
        chunked_prefill_size=sc["chunk"] or -1, max_prefill_tokens=sc["budget"],
        schedule_policy=sc["policy"], schedule_conservativeness=sc["conservativeness"],
        disable_overlap_schedule=not sc["overlap"], disable_radix_cache=False,
        enable_mixed_chunk=False, disable_cuda_graph=True, load_format="dummy",
        attention_backend="torch_native", sampling_backend="pytorch", random_seed=0)
    sg.rc.publish(sa, role="scheduler", ranks=sg.rc.SpawnRanks(world_rank=0, gpu_id=0))
    pa = sg.PortArgs.init_new(sa)
    sg.Scheduler._serq_spec = {"kv_tokens": sc["kv_tokens"], "max_running": sc["max_running"],
                               "token_for": token_for}
    try:
        s = sg.Scheduler(sa, pa)
    finally:
        del sg.Scheduler._serq_spec
    # the knobs landed where they were meant to
    assert s.max_total_num_tokens == sc["kv_tokens"], s.max_total_num_tokens
    assert s.max_running_requests == sc["max_running"], s.max_running_requests
    assert s.max_prefill_tokens == sc["budget"], s.max_prefill_tokens
    assert s.enable_overlap == sc["overlap"]
    assert s.token_to_kv_pool_allocator.available_size() == sc["kv_tokens"]
    return s


def close(s) -> None:
    """Close the scheduler's ZMQ sockets (one scheduler per scenario)."""
    import zmq
    ch = s.ipc_channels
    for name in ("recv_from_tokenizer", "recv_from_rpc", "send_metrics_from_scheduler",
                 "send_to_tokenizer", "send_to_detokenizer"):
        x = getattr(ch, name, None)
        x = getattr(x, "socket", x)
        if isinstance(x, zmq.Socket):
            x.close(linger=0)


def make_request(sc: dict, i: int, ids: list):
    sg = _sg
    r = sc["requests"][i]
    sp = sg.SamplingParams(max_new_tokens=r["out"], temperature=0.0, ignore_eos=sc["ignore_eos"])
    sp.normalize(None)          # as the tokenizer manager does (tokenizer_manager.py:1566-1567)
    sp.verify(VOCAB)
    return sg.TokenizedGenerateReqInput(
        input_text=None, input_ids=sg.array.array("q", ids), input_embeds=None, mm_inputs=None,
        token_type_ids=None, sampling_params=sp, return_logprob=False, logprob_start_len=-1,
        top_logprobs_num=0, token_ids_logprob=None, stream=False, rid=str(i))


# ---------------------------------------------------------------------------
# One step: the body of the event loop


def STEP_NORMAL(self):
    """One iteration of ``event_loop_normal`` (scheduler.py:2026-2058), the
    requests already handed in (``ingest_requests`` reads nothing here)."""
    plan = self.get_next_batch_to_run(running_batch=self.running_batch, last_batch=self.last_batch)
    self.running_batch = plan.running_batch
    batch = plan.batch_to_run
    self.cur_batch_for_debug = batch
    if batch:
        result = self.run_batch(batch)
        self.process_batch_result(batch, result)
    else:
        self._sched_idled = True
        self.on_idle()
    self.last_batch = batch
    return batch


def STEP_OVERLAP(self):
    """One iteration of ``event_loop_overlap`` (scheduler.py:2060-2134; its
    setup, lines 2063-2071, done once by ``start_overlap``)."""
    def pop_and_process():
        tmp_batch, tmp_result = self.result_queue.popleft()
        self.process_batch_result(tmp_batch, tmp_result)

    plan = self.get_next_batch_to_run(running_batch=self.running_batch, last_batch=self.last_batch)
    self.running_batch = plan.running_batch
    batch = plan.batch_to_run
    self.cur_batch_for_debug = batch
    disable_overlap_for_batch = self.is_disable_overlap_for_batch(batch, last_batch=self.last_batch)
    if disable_overlap_for_batch:
        pop_and_process()
    if batch:
        batch_result = self.run_batch(batch)
        self._apply_war_barrier()
        self.result_queue.append((batch.copy(), batch_result))
    else:
        batch_result = None
        self._sched_idled = True
    if self.last_batch:
        if not disable_overlap_for_batch:
            pop_and_process()
    elif batch is None:
        self.on_idle()
    if self.is_generation:
        self.launch_batch_sample_if_needed(batch_result, batch)
    self.last_batch = batch
    return batch


def start_loop(self, overlap: bool):
    """What ``run_event_loop`` (scheduler.py:1992-2008) and
    ``_dispatch_event_loop_once`` (:6218-6221) set before the loop, on a CPU,
    and ``event_loop_overlap``'s own setup (:2063-2066).  Returns the stream
    context the loop runs in."""
    from collections import deque
    self.schedule_stream.synchronize = lambda: None
    self._war_barrier_enabled = False        # is_cuda() or SGLANG_ENABLE_WAR_BARRIER (false)
    self.enable_continuous_input_polling = False
    self.enable_skip_finishing_decode = False
    if overlap:
        self.enable_skip_finishing_decode = True
        self.result_queue = deque()
    return self.device_module.StreamContext(self.schedule_stream)


# ---------------------------------------------------------------------------
# Running a scenario


class Recorder:
    """What the harness observes, never alters: the step each batch was
    launched in (stamped on its result), the tokens each request gained when
    a result was processed, the retractions and the outputs sent."""

    def __init__(self, s, n: int):
        self.s = s
        self.step = 0
        self.first = [None] * n
        self.last = [None] * n
        self.retractions = [0] * n
        self.sent = {}            # req -> (cached_tokens, finish type, completion_tokens)
        self.sent_step = {}       # req -> step its finished output was sent
        self.ev = None
        self._wrap()

    def _wrap(self):
        s = self.s
        run_batch, process, add = s.run_batch, s.process_batch_result, s._add_request_to_queue

        def run_batch_(batch, *a, **k):
            result = run_batch(batch, *a, **k)
            result._serq_step = self.step
            return result

        def process_(batch, result):
            before = [(r, len(r.output_ids)) for r in batch.reqs]
            out = process(batch, result)
            k = result._serq_step
            for r, n in before:
                if len(r.output_ids) > n:
                    i = int(r.rid)
                    if self.first[i] is None:
                        self.first[i] = k
                    self.last[i] = k
            return out

        def add_(req, is_retracted=False):
            if is_retracted:
                self.retractions[int(req.rid)] += 1
                if self.ev is not None:
                    self.ev["retracted"].append(int(req.rid))
            return add(req, is_retracted=is_retracted)

        def send(payload, *a):
            for j, rid in enumerate(payload.rids):
                fin = payload.finished_reasons[j]
                if fin is not None:
                    i = int(rid)
                    self.sent[i] = (payload.cached_tokens[j], fin["type"], payload.completion_tokens[j])
                    self.sent_step[i] = self.step
                    if self.ev is not None:
                        self.ev["finished"].append(i)
        s.run_batch, s.process_batch_result, s._add_request_to_queue = run_batch_, process_, add_
        s.ipc_channels.send_to_detokenizer.send_output = send
        s.ipc_channels.send_to_tokenizer.send_output = send


def free_tokens(s) -> int:
    return s.token_to_kv_pool_allocator.available_size() + s.tree_cache.evictable_size()


def run_scenario(sc: dict, keep_log: bool) -> dict:
    sg = _import_sglang()
    reqs = sc["requests"]
    n = len(reqs)
    ids = prompt_ids(sc)
    s = build(sc)
    try:
        rec = Recorder(s, n)
        step = STEP_OVERLAP if sc["overlap"] else STEP_NORMAL
        stream = start_loop(s, sc["overlap"])
        stream.__enter__()
        order = sorted(range(n), key=lambda i: (reqs[i]["arrive"], i))
        pos, log = 0, []
        limit = (max(r["arrive"] for r in reqs) + 16
                 + 4 * sum(r["prompt"] + r["out"] for r in reqs) * (1 + n))
        while len(rec.sent) < n:
            k = rec.step
            batch_in = []
            while pos < n and reqs[order[pos]]["arrive"] <= k:
                batch_in.append(make_request(sc, order[pos], ids[order[pos]]))
                pos += 1
            if batch_in:
                s.process_input_requests(batch_in)
            if k >= limit:
                raise RuntimeError(f"no completion after {k} steps (livelock?)")
            rec.ev = {"retracted": [], "finished": []} if keep_log else None
            batch = step(s)
            if keep_log:
                log.append(_log_entry(k, batch, rec.ev, free_tokens(s)))
            rec.step += 1
        stream.__exit__(None, None, None)
        for i in range(n):
            if rec.first[i] is None:
                raise RuntimeError(f"request {i} finished with no output token")
        out = {
            "requests": [{"req": i, "first": rec.first[i], "last": rec.last[i],
                          "retractions": rec.retractions[i], "cached": rec.sent[i][0],
                          "finish": rec.sent[i][1]} for i in range(n)],
            "steps": rec.step,
            "sglang": sg.sglang.__version__,
        }
        for i in range(n):    # no made-up token is EOS: every request runs to its max_new_tokens
            if rec.sent[i][2] != reqs[i]["out"]:
                raise RuntimeError(f"request {i}: {rec.sent[i][2]} tokens, asked for {reqs[i]['out']}")
        if keep_log:
            out["log"] = log
        return out
    finally:
        close(s)


def _log_entry(k: int, batch, ev: dict, free: int) -> dict:
    if batch is None:
        mode, pre, dec = "idle", {}, []
    elif batch.forward_mode.is_decode():
        mode, pre, dec = "decode", {}, sorted(int(r.rid) for r in batch.reqs)
    else:
        mode = "prefill"
        pre = {r.rid: int(n) for r, n in sorted(zip(batch.reqs, batch.extend_lens), key=lambda x: int(x[0].rid))}
        dec = []
    return {"step": k, "mode": mode, "prefill": pre, "decode": dec,
            "retracted": ev["retracted"], "finished": sorted(ev["finished"]), "free": free}


def main(argv=None) -> int:
    def loop_hashes(args):
        if not args.loop_hashes:
            return None
        sg = _import_sglang()
        for name in LOOP_SHA256:
            src = inspect.getsource(getattr(sg.Scheduler, name))
            io.emit(f"{name} {hashlib.sha256(src.encode()).hexdigest()}")
        return 0
    return io.command_line(
        argv, "Run scenarios through SGLang 0.5.23's real scheduler.", "scenario",
        lambda obj, args, where: run_scenario(parse_scenario(obj), args.steps),
        options=[(("--loop-hashes",), {"action": "store_true",
                                        "help": "print the sha256 of the installed event loops and exit"})],
        first=loop_hashes)


if __name__ == "__main__":
    sys.exit(main())
