"""Shared machinery for the vLLM scheduler oracles (runs under .venv-vllm).

This module builds vLLM 0.33.0's real v1 ``Scheduler`` (with its real KV-cache
manager and block pool) on a CPU with no model weights, and drives it one
``schedule()`` call at a time with a fake model runner.  Nothing of vLLM's
scheduling logic is re-implemented here: the only code standing in for vLLM is
the fake runner (which tokens get sampled) and the loop that decides when to
call ``schedule()``.

Conventions (see README.md in this directory for the full statement):

* step k   = the k-th ``schedule()`` call, counting from 0;
* a token sampled in step k exists at time k + 1;
* a request that arrives at k is added right before call k;
* a call is made (and counted) while ``Scheduler.has_requests()`` is true --
  the condition vLLM's ``EngineCore.step`` uses -- or an arrival is still to
  come.  ``has_requests()`` stays true for one call after the last request
  finishes (its id must still be flushed to the workers), so a run's
  ``steps`` is the last token's time + 1.

Importing this module sets the environment vLLM needs on this machine; what
every harness shares whatever the engine (stdout kept for the JSON, which
fd 1 moves onto stderr; validation helpers; JSON I/O; batch mode) is
``oracle_io``, re-exported here.
"""

from __future__ import annotations

import json
import math
import os
import sys

# ---------------------------------------------------------------------------
# Environment: must be set before vllm is imported.
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["VLLM_PLUGINS"] = ""
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = os.path.dirname(os.path.abspath(__file__))
TINY_MODEL_DIR = os.path.join(HERE, "tiny_model")
VLLM_VERSION_PINNED = "0.33.0"
# the versions a harness accepts: the pin, and what a harness adds
# (vllm_measured_oracle.py: 0.19.0, the version of LLMServingSim's measured runs)
ACCEPTED = {VLLM_VERSION_PINNED}

if HERE not in sys.path:
    sys.path.insert(0, HERE)
from oracle_format import dumps_output  # noqa: E402,F401  (re-exported)
from oracle_io import (  # noqa: E402,F401  (re-exported: the harnesses read them as core.X)
    MAX_PREFIXES, OUT, PREFIX_KEYS, ScenarioError, _bool_field, _check_keys, _int_field, command_line, emit,
    fail, input_lines, load_json_file, prefix_field, request_list, serve_lines)

_vllm = None  # lazily imported namespace


def _import_vllm():
    """Import the pieces of vLLM we drive (slow: ~6 s, so done once)."""
    global _vllm
    if _vllm is not None:
        return _vllm
    import types

    import torch
    import vllm
    from vllm.config import CacheConfig, KVTransferConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        KVCacheConfig,
        KVCacheGroupSpec,
    )
    from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput
    from vllm.v1.request import Request
    from vllm.v1.structured_output import StructuredOutputManager

    if vllm.__version__ not in ACCEPTED:
        raise SystemExit(
            f"vllm {vllm.__version__} is installed; the oracle is pinned to "
            f"{' or '.join(sorted(ACCEPTED))} (run tools/oracle/install_vllm_env.sh)"
        )
    _vllm = types.SimpleNamespace(**{k: v for k, v in locals().items() if k != "types"})
    return _vllm


def engine_params(obj: dict, where: str, *, prefix_caching_default: bool) -> dict:
    """Validate and return the engine part shared by scenarios and traces."""
    p = {
        "budget": _int_field(obj, "budget", where, minimum=1),
        "max_seqs": _int_field(obj, "max_seqs", where, minimum=1),
        "block_size": _int_field(obj, "block_size", where, minimum=1),
        "num_blocks": _int_field(obj, "num_blocks", where, minimum=1),
        "chunk": _int_field(obj, "chunk", where, minimum=0, default=0),
        "prefix_caching": _bool_field(obj, "prefix_caching", where, prefix_caching_default),
    }
    if p["budget"] < p["max_seqs"]:
        # vLLM's own rule (config/scheduler.py, verify_max_model_len)
        raise ScenarioError(
            f"{where}: budget ({p['budget']}) must be >= max_seqs ({p['max_seqs']}), "
            "as vLLM requires max_num_batched_tokens >= max_num_seqs"
        )
    return p


def model_len_for(p: dict, longest: int) -> int:
    """max_model_len given to vLLM: the longest request (prompt + out), or the
    chunk cap if that is larger (vLLM refuses long_prefill_token_threshold >
    max_model_len; a chunk cap above every request never binds, and a
    max_model_len above every request changes nothing in scheduling)."""
    return max(longest, p["chunk"], 1)


def blocks_needed(prompt: int, out: int, block_size: int) -> int:
    """KV blocks a request holds at its peak: prompt + out - 1 tokens get KV
    (the last sampled token is never fed back)."""
    return math.ceil((prompt + out - 1) / block_size)


def check_feasible(p: dict, length_pairs, where: str) -> None:
    """Every request must fit the KV cache alone, or vLLM would preempt it
    forever (the engine's own startup check ties max_model_len to the KV
    capacity; this harness checks each request instead)."""
    for name, prompt, out in length_pairs:
        need = blocks_needed(prompt, out, p["block_size"])
        if need > p["num_blocks"]:
            raise ScenarioError(
                f"{where}: {name} (prompt {prompt} + out {out}) needs {need} KV blocks "
                f"of {p['block_size']} tokens but num_blocks is {p['num_blocks']}: "
                f"it could never run"
            )


# ---------------------------------------------------------------------------
# Scheduler construction


def build_scheduler(p: dict, max_model_len: int, engine_id: str | None = None,
                    kv_role: str | None = None):
    """Build vLLM's real Scheduler for engine params ``p``.

    ``p['num_blocks']`` is the number of usable KV blocks; the block pool keeps
    one extra block as its null block, so vLLM is given num_blocks + 1.
    ``engine_id``, ``kv_role``: an instance of a disaggregated deployment,
    whose ``kv_transfer_config`` names the NIXL connector (``"NixlConnector"``,
    the pull connector: nixl/connector.py:431-432) in that role
    (``kv_producer`` for a prefiller, ``kv_consumer`` for a decoder); the
    scheduler builds the connector's SCHEDULER side
    (``KVConnectorRole.SCHEDULER``, v1/core/sched/scheduler.py:175-203), which
    is pure Python.
    Returns (scheduler, block_hasher or None).
    """
    v = _import_vllm()
    bs = p["block_size"]
    try:
        return _build_scheduler(v, p, bs, max_model_len, engine_id, kv_role)
    except ScenarioError:
        raise
    except (ValueError, TypeError) as e:  # pydantic ValidationError is a ValueError
        msg = " ".join(str(e).split())
        raise ScenarioError(f"vLLM rejected the configuration: {msg}") from None


def _build_scheduler(v, p: dict, bs: int, max_model_len: int, engine_id=None, kv_role=None):
    model_config = v.ModelConfig(
        model=TINY_MODEL_DIR,
        tokenizer=TINY_MODEL_DIR,
        skip_tokenizer_init=True,
        dtype="float32",
        seed=0,
        max_model_len=max_model_len,
    )
    scheduler_config = v.SchedulerConfig(
        policy=p.get("policy", "fcfs"),
        max_num_seqs=p["max_seqs"],
        max_num_batched_tokens=p["budget"],
        max_model_len=max_model_len,
        long_prefill_token_threshold=p["chunk"],
        enable_chunked_prefill=True,
        async_scheduling=bool(p.get("async", False)),
        is_encoder_decoder=False,
        # (an option vLLM 0.19.0 does not have: given only when asked for)
        **({"long_prefill_token_threshold_adaptive": True} if p.get("adaptive") else {}),
    )
    cache_config = v.CacheConfig(
        block_size=bs,
        enable_prefix_caching=p["prefix_caching"],
    )
    extra = {}
    if engine_id is not None:
        # engine_id fixed (not vLLM's uuid4 default) so that the params an
        # instance returns are the same on every run.
        extra["kv_transfer_config"] = v.KVTransferConfig(
            kv_connector="NixlConnector", kv_role=kv_role, engine_id=engine_id)
    vllm_config = v.VllmConfig(
        model_config=model_config,
        scheduler_config=scheduler_config,
        cache_config=cache_config,
        **extra,
    )
    n_gpu_blocks = p["num_blocks"] + 1  # + BlockPool's null block
    kv_cache_config = v.KVCacheConfig(
        num_blocks=n_gpu_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            v.KVCacheGroupSpec(
                ["layer"],
                v.FullAttentionSpec(
                    block_size=bs, num_kv_heads=1, head_size=1, dtype=v.torch.float32
                ),
            )
        ],
    )
    cache_config.num_gpu_blocks = n_gpu_blocks
    sched = (v.AsyncScheduler if p.get("async") else v.Scheduler)(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        structured_output_manager=v.StructuredOutputManager(vllm_config),
        block_size=bs,
        log_stats=False,
    )
    # Sanity checks that the knobs landed where we meant them to.
    assert sched.max_num_scheduled_tokens == p["budget"], sched.max_num_scheduled_tokens
    assert sched.max_num_running_reqs == p["max_seqs"]
    assert sched.scheduler_config.long_prefill_token_threshold == p["chunk"]
    assert sched.scheduler_config.scheduler_reserve_full_isl is True
    assert sched.policy.value == p.get("policy", "fcfs"), sched.policy
    if engine_id is not None:
        conn = sched.connector
        name = type(getattr(conn, "connector_scheduler", None)).__name__
        if name != "NixlPullConnectorScheduler":
            raise RuntimeError(f"expected the NIXL pull connector's scheduler side, got {name}")
    free = sched.kv_cache_manager.block_pool.get_num_free_blocks()
    if free != p["num_blocks"]:
        raise RuntimeError(f"expected {p['num_blocks']} free KV blocks, vLLM has {free}")

    block_hasher = None
    if p["prefix_caching"]:
        # As vLLM's EngineCore does (v1/engine/core.py): a hasher only when
        # prefix caching is on, with the configured hash algorithm.
        hash_fn = v.get_hash_fn_by_name(cache_config.prefix_caching_hash_algo)
        v.init_none_hash(hash_fn)
        block_hasher = v.get_request_block_hasher(getattr(sched, "hash_block_size", bs), hash_fn)
    return sched, block_hasher


# A request's arrival_time beyond its arrival step: its index among an
# instance's requests times this (Driver.add_request).
ARRIVAL_STEP = 1e-6


def make_request(req_id: str, prompt_ids: list, out: int, arrival: float, block_hasher,
                 kv_transfer_params: dict | None = None, *, priority: int = 0):
    """A request as vLLM's input processor hands it over.  ``priority`` is
    vLLM's (lower is served first under the PRIORITY policy; ignored under
    FCFS): the heap and the victim read (priority, arrival_time, request_id),
    v1/request.py:357-367, v1/core/sched/scheduler.py:931-938.
    ``kv_transfer_params`` travel in ``SamplingParams.extra_args``
    (v1/request.py:119-122)."""
    v = _import_vllm()
    extra = None if kv_transfer_params is None else {"kv_transfer_params": kv_transfer_params}
    params = v.SamplingParams(max_tokens=out, ignore_eos=True, temperature=0.0, extra_args=extra)
    return v.Request(
        request_id=req_id,
        prompt_token_ids=list(prompt_ids),
        sampling_params=params,
        pooling_params=None,
        arrival_time=float(arrival),
        block_hasher=block_hasher,
        priority=priority,
    )


class Driver:
    """Steps a Scheduler with the fake model runner and records what happens.

    ``token_for(request)`` gives the id of the token sampled for a request
    (called only when one is sampled).
    """

    def __init__(self, sched, token_for):
        self.v = _import_vllm()
        self.sched = sched
        self.token_for = token_for
        self.step = 0  # index of the next schedule() call
        self.preemptions = 0
        self.self_preemptions = 0
        self.first: dict = {}  # req_id -> time of first output token
        self.finished: dict = {}  # req_id -> time of the last output token
        self.first_admit: dict = {}  # req_id -> step of first scheduling
        self.cached_at_admit: dict = {}  # req_id -> prefix-cache hit (tokens)
        self._added: list = []  # every Request handed to the scheduler
        self._watch_preemptions()

    def _watch_preemptions(self) -> None:
        """Observe (not alter) preemptions: remember which request the
        running loop is allocating for, so a victim that is that request
        itself is known as a self-preemption (running[-1] and `preempted_req ==
        request`, scheduler.py:938-980)."""
        sched = self.sched
        kvm = sched.kv_cache_manager
        orig_alloc = kvm.allocate_slots
        orig_preempt = sched._preempt_request
        state = {"grower": None}
        self._preempt_events: list = []

        def allocate_slots(request, *args, **kwargs):
            state["grower"] = request.request_id
            return orig_alloc(request, *args, **kwargs)

        def preempt(request, *args, **kwargs):
            self._preempt_events.append((request.request_id, state["grower"]))
            return orig_preempt(request, *args, **kwargs)

        kvm.allocate_slots = allocate_slots
        sched._preempt_request = preempt

    def add_request(self, request) -> None:
        """Hand a request to the scheduler as a real server does: its
        ``arrival_time`` is the arrival step plus its index among this
        instance's requests × ARRIVAL_STEP, distinct and increasing in the
        order the requests arrive (a server stamps ``time.time()``), so that
        no two tie where vLLM reads it (PRIORITY's heap and victim,
        v1/request.py:357-367, v1/core/sched/scheduler.py:931-938)."""
        request.arrival_time = float(request.arrival_time) + len(self._added) * ARRIVAL_STEP
        self._added.append(request)
        self.sched.add_request(request)

    def check_preemption_count(self) -> None:
        """Our count of preemption events must equal vLLM's own counters."""
        theirs = sum(r.num_preemptions for r in self._added)
        if theirs != self.preemptions:
            raise RuntimeError(f"preemptions: counted {self.preemptions}, vLLM says {theirs}")

    def has_work(self) -> bool:
        # The condition vLLM's EngineCore.step() checks before scheduling.
        return self.sched.has_requests()

    def run_step(self) -> dict:
        """One schedule() call + fake runner + update_from_output().

        Returns {"scheduled": {id: n}, "admitted": [...], "preempted": [...],
        "sampled": [ids that got a token], "finished": [...]}.
        """
        self.begin_step()
        return self.end_step()

    def begin_step(self):
        """The first half of a step: schedule() and the fake runner's samples.
        Returns the SchedulerOutput (its ``kv_connector_metadata`` is what a
        connector's worker reads).  Two instances in lockstep call this on
        both before either's end_step()."""
        sched = self.sched
        k = self.step
        running_before = {r.request_id for r in sched.running}
        self._preempt_events = []

        so = sched.schedule()

        scheduled = dict(so.num_scheduled_tokens)
        # admitted = scheduled this call but not running before it: new
        # admissions and resumed (previously preempted) requests.
        admitted = [
            rid for rid in scheduled if rid not in running_before
        ]
        preempted = [victim for victim, _ in self._preempt_events]
        self.preemptions += len(preempted)
        self.self_preemptions += sum(1 for victim, g in self._preempt_events if victim == g)

        # After schedule(), vLLM has already advanced num_computed_tokens by
        # the scheduled chunk (_update_after_schedule).  The GPU runner samples
        # for a request only when that reaches all its known tokens
        # (v1/worker/gpu_model_runner.py:2057-2064: discard_request_mask where
        # the sequence is shorter than num_tokens), i.e. never for a partial
        # chunk -- including a
        # resumed request still recomputing its earlier outputs.
        req_ids = list(scheduled)
        sampled_ids = []
        sampled_tokens = []
        for rid in req_ids:
            req = sched.requests[rid]
            if rid not in self.first_admit:
                self.first_admit[rid] = k
                # Tokens found in the prefix cache at first admission.
                self.cached_at_admit[rid] = req.num_computed_tokens - scheduled[rid]
            if req.num_computed_tokens >= req.num_tokens:
                sampled_tokens.append([self.token_for(req)])
                sampled_ids.append(rid)
            else:
                sampled_tokens.append([])
        self._pending = (so, req_ids, sampled_ids, sampled_tokens, scheduled, admitted, preempted)
        return so

    def end_step(self, kv_connector_output=None) -> dict:
        """The second half: update_from_output() with the model runner's
        output, and, for a connector, the worker's ``KVConnectorOutput``
        (``finished_sending`` / ``finished_recving``).  Returns the step's
        record; ``outputs`` maps each request that finished to the
        ``kv_transfer_params`` vLLM returned for it."""
        v = self.v
        sched = self.sched
        k = self.step
        so, req_ids, sampled_ids, sampled_tokens, scheduled, admitted, preempted = self._pending
        self._pending = None
        extra = {} if kv_connector_output is None else {"kv_connector_output": kv_connector_output}
        mro = v.ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={rid: i for i, rid in enumerate(req_ids)},
            sampled_token_ids=sampled_tokens,
            **extra,
        )
        engine_outputs = sched.update_from_output(so, mro)
        params = {}
        output_order = []          # the finished requests in the order the step's outputs name them
        for eco in engine_outputs.values():
            for o in eco.outputs:
                if o.finish_reason is not None:
                    params[o.request_id] = o.kv_transfer_params
                    output_order.append(o.request_id)

        finished = []
        for rid in sampled_ids:
            t = k + 1  # a token sampled in step k exists at time k + 1
            self.first.setdefault(rid, t)
            req = sched.requests.get(rid)
            if req is None or req.is_finished():
                self.finished[rid] = t
                finished.append(rid)

        free_blocks = sched.kv_cache_manager.block_pool.get_num_free_blocks()
        self.step += 1
        rec = {
            "step": k,
            "scheduled": scheduled,
            "admitted": admitted,
            "preempted": preempted,
            "sampled": sampled_ids,
            "finished": finished,
            "output_order": output_order,
            "free_blocks": free_blocks,
            "outputs": params,
        }
        return rec


    def replay(self, arrivals, limit: int, log=None, idle_skip: bool = False) -> None:
        """Add each request of ``arrivals`` (``(step, request)`` pairs in the
        order to add them, steps not decreasing) right before its schedule()
        call, and step until no request is left and none is to come.  With
        ``idle_skip``, a stretch of calls while the scheduler has no request
        at all is counted, not made (an empty schedule() only bumps a counter,
        ``current_step``, scheduler.py:700, read at :816; vLLM's EngineCore
        does not call it then).
        ``log`` receives ``step_record`` of every call made."""
        pos = 0
        n = len(arrivals)
        while True:
            k = self.step
            while pos < n and arrivals[pos][0] <= k:
                self.add_request(arrivals[pos][1])
                pos += 1
            if not (self.has_work() or pos < n):
                break
            if not self.has_work() and idle_skip:
                self.step = arrivals[pos][0]
                continue
            if k >= limit:
                raise RuntimeError(f"no completion after {k} steps (livelock?)")
            rec = self.run_step()
            if log is not None:
                log.append(step_record(rec))


def step_record(rec: dict) -> dict:
    """A step of the per-step log (``--steps``): tokens per request (keys in
    numeric order), the requests admitted and preempted, the free blocks."""
    return {
        "step": rec["step"],
        "tokens": {rid: n for rid, n in sorted(rec["scheduled"].items(), key=lambda kv: int(kv[0]))},
        "admitted": [int(x) for x in rec["admitted"]],
        "preempted": [int(x) for x in rec["preempted"]],
        "free_blocks": rec["free_blocks"],
    }


def vllm_version() -> str:
    return _import_vllm().vllm.__version__


# ---------------------------------------------------------------------------
# The replay harnesses' specs and rows


def json_slice(path: str, first: int, count: int, what: str):
    """``(where, object)`` for lines ``first`` … ``first + count − 1`` of a
    JSON-lines file (counted from 0), each object parsed; ``where`` is
    ``path:line``."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ScenarioError(f"cannot read the {what} {path}: {e.strerror}") from None
    if first + count > len(lines):
        raise ScenarioError(f"the {what} {path} has {len(lines)} lines, the slice needs {first + count}")
    for i in range(first, first + count):
        try:
            yield f"{path}:{i + 1}", json.loads(lines[i])
        except json.JSONDecodeError as e:
            raise ScenarioError(f"{path}:{i + 1}: not valid JSON: {e}") from None


def spec_engine(obj, spec_keys: set, engine_keys: set, where: str = "spec"):
    """A replay spec's keys, its engine (``engine_params``, prefix caching on
    unless it says) and its positive ``step_ms``: ``(params, step_ms)``."""
    _check_keys(obj, spec_keys, where)
    eng = obj.get("engine")
    _check_keys(eng, engine_keys, f"{where}: engine")
    p = engine_params(eng, f"{where}: engine", prefix_caching_default=True)
    step_ms = obj.get("step_ms")
    if isinstance(step_ms, bool) or not isinstance(step_ms, (int, float)) or not step_ms > 0:
        raise ScenarioError(f"{where}: 'step_ms' must be a positive number")
    return p, step_ms


def request_rows(drv, arrivals, first: int) -> list:
    """The output rows of a replay whose request i (from ``first``) was added
    before call ``arrivals[i][0]``: when it was sent, its first and last
    tokens, and the prefix-cache hit of its first scheduling."""
    rows = []
    for k, (step, _req) in enumerate(arrivals):
        rid = str(first + k)
        if rid not in drv.finished:
            raise RuntimeError(f"request {rid} never finished")
        rows.append({"i": first + k, "sent": step, "first": drv.first[rid], "last": drv.finished[rid],
                     "cached": drv.cached_at_admit[rid]})
    return rows


def replay_output(drv, arrivals, first: int, log, **more) -> dict:
    """A replay harness's output, its preemptions checked first: the rows
    (``request_rows``), the steps (the driver's; a harness may set its own),
    the preemptions, vLLM's version, ``more``, and the per-step log when one
    was kept (``log`` not None)."""
    drv.check_preemption_count()
    out = {"requests": request_rows(drv, arrivals, first), "steps": drv.step, "preemptions": drv.preemptions,
           "vllm": vllm_version(), **more}
    if log is not None:
        out["log"] = log
    return out


def spec_main(argv, description: str, parse_spec, run_spec) -> int:
    """A replay harness's command line (``command_line`` of a ``spec``):
    ``parse_spec(obj, base_dir)`` and ``run_spec(spec, keep_log)``."""
    return command_line(argv, description, "spec", lambda obj, args, where: run_spec(parse_spec(obj, where),
                                                                                     args.steps))
