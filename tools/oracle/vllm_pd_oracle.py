#!/usr/bin/env python3
"""Prefill/decode disaggregation oracle: two of vLLM 0.33.0's real v1
Schedulers, a prefill instance P and a decode instance D, each with the NIXL
connector's real scheduler side (``NixlPullConnectorScheduler``), the toy
proxy's protocol between them and this harness playing the NIXL workers.

Usage (under .venv-vllm/bin/python):
    vllm_pd_oracle.py SCENARIO.json [--steps]
    vllm_pd_oracle.py --batch IN.jsonl [--steps]   (one scenario per line)
    vllm_pd_oracle.py --serve [--steps]            (stdin, one line at a time)

Scenario:
    {"P": ENGINE, "D": ENGINE, "xfer_steps": X, "proxy_delay": d,
     "requests": [{"prompt": n, "out": m, "arrive": t, "xfer": x?,
                   "prefix": {"id": g, "tokens": k}?}, ...]}
    ENGINE = {"budget", "max_seqs", "block_size", "num_blocks",
              "chunk"?, "prefix_caching"?}

The clock (README.md, "The P/D oracle"): one global tick is one schedule()
and one update_from_output() of every instance that has requests, in
lockstep (every schedule() of the tick, then the workers, then every
update_from_output()); a token sampled in tick t exists at time t + 1; a
request is added to P right before tick `arrive`, and to D right before tick
(P's token time + d), those P finished in one tick in the order P's step
named their outputs (the proxy forwards each as P's response for it comes);
a request's arrival_time is its tick plus its index among its instance's
requests × 1e-6, as a server's clock stamps it (oracle_core.Driver.add_request);
a load D admits in tick k is reported finished by both
workers in tick k + X - 1 (a request's own "xfer" overrides X), so D can
schedule it from tick k + X.  A request's "prefix" says that its first k
prompt tokens are shared prompt g's: every request naming g starts with the
same token ids, so P's and D's prefix caches (when on) can share them.

Output:
    {"requests": [{"req", "p_first", "p_freed", "xfer_start", "d_first",
                   "d_last", "p_preemptions", "d_preemptions", "p_cached",
                   "d_cached"}, ...],
     "ticks": n, "vllm": "0.33.0"}
  plus, with --steps, "log": one entry per tick (see README.md).
"""

from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle_core as core  # noqa: E402  (sets env, guards stdout)
from oracle_core import ScenarioError  # noqa: E402

SCENARIO_KEYS = {"P", "D", "xfer_steps", "proxy_delay", "requests"}
REQUEST_KEYS = {"prompt", "out", "arrive", "xfer", "prefix"}
ENGINE_KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "prefix_caching"}

PROMPT_TOKEN_BASE = 1000
# A shared prompt's tokens (a request's optional "prefix": {"id", "tokens"}):
# prompt `id`'s are SHARED_TOKEN_BASE + id * SHARED_STRIDE onwards, the same
# ids for every request that names it, so both prefix caches can share them.
SHARED_TOKEN_BASE = 400_000
SHARED_STRIDE = 10_000
OUTPUT_TOKEN_BASE = 600_000
TOKEN_LIMIT = 1_048_576  # vocab_size of tiny_model/config.json

# What the toy proxy sends the prefiller beside the prompt, max_tokens = 1
# (vllm-project/vllm tests/v1/kv_connector/nixl_integration/toy_proxy_server.py,
# send_request_to_service).
PREFILL_PARAMS = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                  "remote_block_ids": None, "remote_host": None, "remote_port": None}


def parse_scenario(obj) -> dict:
    where = "scenario"
    core._check_keys(obj, SCENARIO_KEYS, where)
    sc = {}
    for side in ("P", "D"):
        if side not in obj:
            raise ScenarioError(f"{where}: missing required field {side!r}")
        core._check_keys(obj[side], ENGINE_KEYS, f"{where}: {side}")
        sc[side] = core.engine_params(obj[side], f"{where}: {side}", prefix_caching_default=False)
    sc["xfer_steps"] = core._int_field(obj, "xfer_steps", where, minimum=1)
    sc["proxy_delay"] = core._int_field(obj, "proxy_delay", where, minimum=0)
    parsed = core.request_list(obj, where, REQUEST_KEYS,
                               (("prompt", 1, None), ("out", 1, None), ("arrive", 0, None),
                                ("xfer", 1, sc["xfer_steps"])), nonempty=True)
    for i, r in enumerate(obj["requests"]):
        parsed[i]["prefix"] = core.prefix_field(r, f"{where}: requests[{i}]", parsed[i]["prompt"], "its prompt")
        if parsed[i]["prefix"] and parsed[i]["prefix"][1] >= SHARED_STRIDE:
            raise ScenarioError(f"{where}: requests[{i}].prefix: at most {SHARED_STRIDE - 1} shared tokens")
    total = sum(r["prompt"] for r in parsed)
    if PROMPT_TOKEN_BASE + total >= SHARED_TOKEN_BASE:
        raise ScenarioError(f"{where}: too many prompt tokens in total ({total})")
    # P holds a prompt's blocks (its one token is never fed back); D the
    # whole sequence but the last token.
    core.check_feasible(sc["P"], [(f"requests[{i}]", r["prompt"], 1) for i, r in enumerate(parsed)],
                        f"{where}: P")
    core.check_feasible(sc["D"], [(f"requests[{i}]", r["prompt"], r["out"]) for i, r in enumerate(parsed)],
                        f"{where}: D")
    sc["requests"] = parsed
    return sc


class FakeWorkers:
    """The NIXL workers of both instances, as pull_worker.py would run them
    with every read taking its request's transfer time.

    D's worker reads ``reqs_to_recv`` of D's real connector metadata
    (nixl/metadata.py:320-346, built by ``build_connector_meta``,
    base_scheduler.py:480-526) and starts
    a read (pull_worker.py:49-77); it ends ``xfer`` ticks later, when D's
    worker reports it in ``finished_recving`` and notifies P's worker, which
    reports the P request in ``finished_sending`` (pull_worker.py:650-701,
    base_worker.py:3191-3330).  P's worker learns which requests it will send
    from ``reqs_in_batch`` and ``reqs_to_send`` of P's metadata
    (pull_worker.py:91-121).  The lease's expiry is not modelled: a read
    always comes."""

    def __init__(self, xfer_of, blocks_of):
        self.xfer_of = xfer_of          # D request id -> its transfer ticks
        self.blocks_of = blocks_of      # P request id -> (its prompt, P's blocks for it)
        self.to_process: set = set()    # P requests seen in a batch
        self.to_send: list = []         # P requests whose blocks wait for a read, in order
        self.reads: list = []           # [D id, P id, start tick, last tick], in start order

    def start(self, tick: int, meta_p, meta_d) -> list:
        """Read the metadata the instances' schedule() built this tick; returns
        the D ids whose read started."""
        started = []
        if meta_p is not None:
            self.to_process.update(sorted(meta_p.reqs_in_batch))
            for rid in meta_p.reqs_to_send:
                if rid in self.to_process and rid not in self.to_send:
                    self.to_send.append(rid)
        if meta_d is not None:
            for rid, m in meta_d.reqs_to_recv.items():
                if not m.awaiting_kvs:
                    raise RuntimeError(f"D request {rid}: a read with nothing awaited")
                src = m.remote.request_id
                if m.remote.engine_id != "P" or \
                        (m.remote.num_tokens, len(m.remote.block_ids[0])) != self.blocks_of[src]:
                    raise RuntimeError(f"D request {rid}: its read does not match P's blocks")
                self.reads.append([rid, src, tick, tick + self.xfer_of[rid] - 1])
                started.append(rid)
        return started

    def finish(self, tick: int):
        """(finished_sending for P, finished_recving for D) of this tick, in
        the order the reads started (vLLM frees in the order it is given:
        scheduler.py:3569-3583; a set's order would depend on PYTHONHASHSEED)."""
        done = [r for r in self.reads if r[3] == tick]
        self.reads = [r for r in self.reads if r[3] != tick]
        sending = []
        for rid, src, _, _ in done:
            if src not in self.to_send:
                raise RuntimeError(f"P request {src} was read before P offered its blocks")
            self.to_send.remove(src)
            self.to_process.discard(src)
            sending.append(src)
        return sending, [r[0] for r in done]

    def in_flight(self) -> list:
        return [r[0] for r in self.reads]


def _idx(rid: str) -> int:
    return int(rid[1:])


def _ids(rids) -> list:
    return [_idx(r) for r in rids]


def run_scenario(sc: dict, keep_log: bool) -> dict:
    v = core._import_vllm()
    reqs = sc["requests"]
    n = len(reqs)
    max_model_len = max(max(r["prompt"] + r["out"] for r in reqs), sc["P"]["chunk"], sc["D"]["chunk"], 1)
    sched_p, hash_p = core.build_scheduler(sc["P"], max_model_len, "P", "kv_producer")
    sched_d, hash_d = core.build_scheduler(sc["D"], max_model_len, "D", "kv_consumer")

    def token_for(req) -> int:
        i = _idx(req.request_id)
        return OUTPUT_TOKEN_BASE + (i * 7919 + req.num_output_tokens) % (TOKEN_LIMIT - OUTPUT_TOKEN_BASE)

    P = core.Driver(sched_p, token_for)
    D = core.Driver(sched_d, token_for)
    # D's local prefix-cache hit, block-aligned, is what the scheduler passes
    # get_num_new_matched_tokens (scheduler.py:1131-1141); the connector
    # loads the rest (get_num_new_matched_tokens, nixl/pull_scheduler.py:34-65).
    # The last ask before the read starts is the hit of the load admitted.
    d_hit: dict = {}
    ask = sched_d.connector.get_num_new_matched_tokens

    def asked(request, num_computed_tokens):
        d_hit[request.request_id] = num_computed_tokens
        return ask(request, num_computed_tokens)
    sched_d.connector.get_num_new_matched_tokens = asked
    bs_p = sc["P"]["block_size"]
    workers = FakeWorkers({f"d{i}": r["xfer"] for i, r in enumerate(reqs)},
                          {f"p{i}": (r["prompt"], -(-r["prompt"] // bs_p)) for i, r in enumerate(reqs)})
    prompt_ids = []
    nxt = PROMPT_TOKEN_BASE
    for r in reqs:
        shared = 0 if r["prefix"] is None else r["prefix"][1]
        head = [] if not shared else \
            list(range(SHARED_TOKEN_BASE + r["prefix"][0] * SHARED_STRIDE,
                       SHARED_TOKEN_BASE + r["prefix"][0] * SHARED_STRIDE + shared))
        prompt_ids.append(head + list(range(nxt, nxt + r["prompt"] - shared)))
        nxt += r["prompt"] - shared

    to_p = sorted(range(n), key=lambda i: (reqs[i]["arrive"], i))
    # (tick, i, P's params): added to D by tick, and within a tick in the
    # order P's step named their outputs (the proxy forwards a request when
    # P's response for it arrives, and P answers one step's requests in its
    # outputs' order; the sort below is stable)
    to_d: list = []
    res = [{"req": i, "p_first": None, "p_freed": None, "xfer_start": None, "d_first": None,
            "d_last": None, "p_preemptions": 0, "d_preemptions": 0, "p_cached": None, "d_cached": None}
           for i in range(n)]
    log = []
    limit = (max(r["arrive"] for r in reqs) + 10 + sc["proxy_delay"] * n + sum(r["xfer"] for r in reqs)
             + 4 * sum(r["prompt"] + r["out"] for r in reqs) * (1 + n))
    k = 0
    while True:
        while to_p and reqs[to_p[0]]["arrive"] <= k:
            i = to_p.pop(0)
            P.add_request(core.make_request(f"p{i}", prompt_ids[i], 1, reqs[i]["arrive"], hash_p,
                                            dict(PREFILL_PARAMS)))
        to_d.sort(key=lambda x: x[0])
        while to_d and to_d[0][0] <= k:
            _, i, params = to_d.pop(0)
            # D gets the original request and its own copy of P's params (its
            # connector clears do_remote_prefill in place, pull_scheduler.py:187-189)
            D.add_request(core.make_request(f"d{i}", prompt_ids[i], reqs[i]["out"], k, hash_d,
                                            copy.deepcopy(params)))
        p_on, d_on = P.has_work(), D.has_work()
        if not (p_on or d_on or to_p or to_d):
            break
        if k >= limit:
            raise RuntimeError(f"no completion after {k} ticks (livelock?)")
        so_p = P.begin_step() if p_on else None
        so_d = D.begin_step() if d_on else None
        started = workers.start(k, so_p.kv_connector_metadata if so_p else None,
                                so_d.kv_connector_metadata if so_d else None)
        sending, recving = workers.finish(k)
        if (sending and not p_on) or (recving and not d_on):
            raise RuntimeError(f"tick {k}: a worker reports for an instance that did not step")
        rec_p = P.end_step(v.KVConnectorOutput(finished_sending=sending)) if p_on else None
        rec_d = D.end_step(v.KVConnectorOutput(finished_recving=recving)) if d_on else None
        for rid in started:
            res[_idx(rid)]["xfer_start"] = k
            res[_idx(rid)]["d_cached"] = d_hit[rid]
        for rid in sending:
            res[_idx(rid)]["p_freed"] = k + 1
        if rec_p is not None:
            if sorted(rec_p["output_order"]) != sorted(rec_p["finished"]):
                raise RuntimeError(f"tick {k}: P's outputs name {rec_p['output_order']}, it finished "
                                   f"{rec_p['finished']}")
            for rid in rec_p["output_order"]:
                params = rec_p["outputs"].get(rid)
                if not params or not params.get("do_remote_prefill"):
                    raise RuntimeError(f"P request {rid} finished without params for D: {params}")
                i = _idx(rid)
                res[i]["p_first"] = P.finished[rid]
                to_d.append((P.finished[rid] + sc["proxy_delay"], i, params))
        if keep_log:
            log.append(_tick_log(k, rec_p, rec_d, sched_p, sched_d, started, sending, workers))
        k += 1
        # both schedulers step at the same ticks
        P.step = D.step = k

    P.check_preemption_count()
    D.check_preemption_count()
    for req in P._added:
        res[_idx(req.request_id)]["p_preemptions"] = req.num_preemptions
    for req in D._added:
        res[_idx(req.request_id)]["d_preemptions"] = req.num_preemptions
    for i in range(n):
        res[i]["p_cached"] = P.cached_at_admit.get(f"p{i}")
        res[i]["d_first"] = D.first.get(f"d{i}")
        res[i]["d_last"] = D.finished.get(f"d{i}")
        if any(res[i][f] is None for f in res[i]):
            raise RuntimeError(f"request {i} never completed: {res[i]}")
    if sched_p.kv_cache_manager.block_pool.get_num_free_blocks() != sc["P"]["num_blocks"]:
        raise RuntimeError("P's blocks are not all free at the end")
    out = {"requests": res, "ticks": k, "vllm": core.vllm_version()}
    if keep_log:
        out["log"] = log
    return out


def _tick_log(k, rec_p, rec_d, sched_p, sched_d, started, sending, workers) -> dict:
    """The state after tick k: per instance what it scheduled, admitted and
    preempted, and its free blocks; P's requests whose blocks wait for a read
    (`sending`) and the ones freed this tick (`freed`); D's loads started
    this tick (`loads`) and in flight after it (`loading`)."""
    def side(rec, sched):
        if rec is None:
            return {"tokens": {}, "admitted": [], "preempted": [],
                    "free_blocks": sched.kv_cache_manager.block_pool.get_num_free_blocks()}
        return {"tokens": {str(_idx(r)): t for r, t in sorted(rec["scheduled"].items(), key=lambda x: _idx(x[0]))},
                "admitted": _ids(rec["admitted"]), "preempted": _ids(rec["preempted"]),
                "free_blocks": rec["free_blocks"]}
    p = side(rec_p, sched_p)
    p["freed"] = _ids(sending)
    p["sending"] = _ids(workers.to_send)
    d = side(rec_d, sched_d)
    d["loads"] = _ids(started)
    d["loading"] = _ids(workers.in_flight())
    return {"tick": k, "P": p, "D": d}


def main(argv=None) -> int:
    return core.command_line(argv, "Run P/D scenarios through two of vLLM 0.33.0's real schedulers.", "scenario",
                             lambda obj, args, where: run_scenario(parse_scenario(obj), args.steps),
                             steps="add the per-tick log")


if __name__ == "__main__":
    sys.exit(main())
