#!/usr/bin/env python3
"""A measured run's workload (LLMServingSim's bundles) through vLLM's real v1
scheduler on the step clock: synchronous (``Scheduler``, as the other
harnesses) or asynchronous (``AsyncScheduler`` driven as vLLM's
``EngineCore.step_with_batch_queue`` drives it with a batch queue of two),
under vLLM 0.33.0 (.venv-vllm) or 0.19.0 (.venv-vllm-0.19, the version the
runs were measured with).

Usage (under a vLLM venv's python):
    vllm_measured_oracle.py SPEC.json [--steps]
    vllm_measured_oracle.py --batch IN.jsonl [--steps] | --serve [--steps]

Spec:
    {"engine": {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "prefix_caching"},
     "workload": PATH (LLMServingSim's workload JSONL, relative to the spec's directory),
     "step_ms": s, "first": a, "count": n, "async": false}

Request i (the workload's line i, from 0) has its exact prompt token ids and
generates exactly output_toks tokens (ignore_eos); it is added right before
schedule() call floor(arrival_time_ns / 1e6 / step_ms), the requests of one
step in file order.  A generated token's id is its request's own
(GEN_BASE + i × GEN_STRIDE + position), beyond every prompt token.

Asynchronous scheduling (AsyncDriver): each engine step adds the arrivals
by the CPU's time, calls schedule() (when the scheduler has requests) and
launches the batch; while fewer than two batches are in flight it returns
without waiting, otherwise it waits for the oldest batch's output and calls
update_from_output() with it.  A batch with tokens runs for one step once
the GPU is free, one without runs nothing.  So the batch of step k + 1 is
scheduled as step k starts, before step k's output is known (vLLM's output
placeholders): a request that arrives while step k runs is first scheduled
in step k + 2, and one that finishes in step k frees its place for step
k + 2.  A token sampled by the batch that runs in step k exists at time
k + 1, as in the other harnesses.

Output:
    {"requests": [{"i", "sent", "first", "last", "cached"}, ...], "steps": n,
     "preemptions": n, "vllm": version, "async": bool}
with --steps, "log": one entry per schedule() call: {"step", "tokens", "admitted",
"preempted", "free_blocks"}.
"""

from __future__ import annotations

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle_core as core  # noqa: E402  (sets env, guards stdout)
from oracle_core import ScenarioError  # noqa: E402

core.ACCEPTED.add("0.19.0")


def cpu_platform() -> None:
    """vLLM 0.19.0 finds the CPU platform only in a CPU build of itself (it
    reads no VLLM_TARGET_DEVICE: platforms/__init__.py, cpu_platform_plugin),
    so the harness names it before a config asks (0.33.0 reads the variable)."""
    import vllm
    import vllm.platforms as platforms
    if vllm.__version__ == "0.19.0" and platforms._current_platform is None:
        from vllm.platforms.cpu import CpuPlatform
        platforms._current_platform = CpuPlatform()

SPEC_KEYS = {"engine", "workload", "step_ms", "first", "count", "async"}
ENGINE_KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "prefix_caching"}
GEN_BASE = 1 << 40
GEN_STRIDE = 1 << 24
MAX_REQUESTS = 100_000


def read_rows(path: str, first: int, count: int) -> list:
    rows = []
    for where, r in core.json_slice(path, first, count, "workload"):
        if not isinstance(r, dict):
            raise ScenarioError(f"{where}: a line is a JSON object")
        inp = core._int_field(r, "input_toks", where, minimum=1)
        out = core._int_field(r, "output_toks", where, minimum=1)
        t = r.get("arrival_time_ns")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0:
            raise ScenarioError(f"{where}: 'arrival_time_ns' must be a number >= 0")
        ids = r.get("input_tok_ids")
        if not isinstance(ids, list) or len(ids) != inp or \
                any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < GEN_BASE for x in ids):
            raise ScenarioError(f"{where}: 'input_tok_ids' must be {inp} token ids")
        if rows and t < rows[-1]["t"]:
            raise ScenarioError(f"{where}: a request arrives before the one above it")
        rows.append({"input": inp, "output": out, "t": float(t), "ids": ids})
    return rows


def parse_spec(obj, base_dir: str) -> dict:
    where = "spec"
    p, step_ms = core.spec_engine(obj, SPEC_KEYS, ENGINE_KEYS, where)
    if not isinstance(obj.get("workload"), str):
        raise ScenarioError(f"{where}: 'workload' must be a path")
    first = core._int_field(obj, "first", where, minimum=0, default=0)
    count = core._int_field(obj, "count", where, minimum=1)
    if count > MAX_REQUESTS:
        raise ScenarioError(f"{where}: at most {MAX_REQUESTS} requests")
    asyn = core._bool_field(obj, "async", where, False)
    rows = read_rows(os.path.join(base_dir, obj["workload"]), first, count)
    core.check_feasible(p, [(f"request {first + k}", r["input"], r["output"]) for k, r in enumerate(rows)], where)
    p.update(rows=rows, first=first, step_ms=step_ms)
    p["async"] = asyn
    return p


class AsyncDriver(core.Driver):
    """The Driver's steps in the order of vLLM's step_with_batch_queue (a
    batch queue of two), on a clock with the GPU's own timeline: a
    schedule() call is made at the CPU's time ``t`` and sees the requests
    that arrived by then; a batch with tokens runs for one step from when
    the GPU is free (its tokens exist when it ends), a batch without any
    runs nothing and is done at once.  Each call schedules a batch; while
    fewer than two are in flight and the new one has tokens, the next call
    follows at once, otherwise it waits for the oldest batch to be done and
    calls update_from_output() with its output.  So the schedule of the
    batch that runs in step k + 1 is made as step k starts, before step k's
    output is known (vLLM's output placeholders): a request that arrives
    while step k runs is first scheduled in step k + 2, and one that
    finishes in step k frees its place for step k + 2.  (0.19.0's rule for
    not waiting; 0.33.0 also returns after a batch without a token while
    the scheduler has requests, which parts from this only with no batch in
    flight and nothing to schedule, a state a workload that fits never
    reaches.)"""

    def run_async(self, arrivals, limit: int, log=None) -> None:
        queue = collections.deque()     # (start, pending, has tokens) in flight, oldest first
        pos, n = 0, len(arrivals)
        t = gpu = calls = 0             # the CPU's time; when the GPU is free
        while True:
            while pos < n and arrivals[pos][0] <= t:
                self.add_request(arrivals[pos][1])
                pos += 1
            if not (self.sched.has_requests() or queue or pos < n):
                break
            if t >= limit or calls >= 4 * limit:
                raise RuntimeError(f"no completion after {t} steps, {calls} calls (livelock?)")
            if self.sched.has_requests():
                calls += 1
                start = max(t, gpu)
                self.step = start
                so = self.begin_step()
                busy = so.total_num_scheduled_tokens > 0
                if busy:
                    gpu = start + 1
                queue.append((start, self._pending, busy))
                self._pending = None
                if busy and len(queue) < 2:
                    continue           # fill the batch queue before waiting on an output
            elif not queue:
                t = arrivals[pos][0]    # nothing scheduled and none in flight: idle
                continue
            start, pending, busy = queue.popleft()
            t = max(t, start + 1 if busy else start)
            self.step, self._pending = start, pending
            rec = self.end_step()      # update_from_output (the batch's tokens exist at start + 1)
            if log is not None:
                log.append(core.step_record(rec))


def run_spec(sp: dict, keep_log: bool) -> dict:
    rows, first = sp["rows"], sp["first"]
    max_model_len = core.model_len_for(sp, max(r["input"] + r["output"] for r in rows))
    cpu_platform()
    sched, hasher = core.build_scheduler(sp, max_model_len)

    def token_for(req) -> int:
        # the position the token takes (with asynchronous scheduling, the
        # outputs in flight count: num_computed_tokens runs ahead)
        return GEN_BASE + int(req.request_id) * GEN_STRIDE + max(req.num_tokens, req.num_computed_tokens)

    drv = (AsyncDriver if sp["async"] else core.Driver)(sched, token_for)
    arrivals = []
    for k, r in enumerate(rows):
        i = first + k
        step = int(r["t"] / 1e6 // sp["step_ms"])
        arrivals.append((step, core.make_request(str(i), r["ids"], r["output"], step, hasher)))
    log = [] if keep_log else None
    limit = arrivals[-1][0] + 10 + sum(4 * (r["input"] + r["output"]) for r in rows)
    if sp["async"]:
        drv.run_async(arrivals, limit, log=log)
    else:
        drv.replay(arrivals, limit, log=log, idle_skip=True)
    out = core.replay_output(drv, arrivals, first, log, **{"async": sp["async"]})
    out["steps"] = max(r["last"] for r in out["requests"])
    return out


def main(argv=None) -> int:
    return core.spec_main(argv, "A measured run's workload through vLLM's real scheduler.", parse_spec, run_spec)


if __name__ == "__main__":
    sys.exit(main())
