#!/usr/bin/env python3
"""Multi-turn prefix-cache replay through vLLM 0.33.0's real v1 Scheduler.

Usage (under .venv-vllm/bin/python):
    vllm_replay_oracle.py TRACE.json
    vllm_replay_oracle.py --batch IN.jsonl      (one trace per line in,
                                                 one output per line out)

Trace:
    {"budget": 64, "max_seqs": 4, "block_size": 4, "num_blocks": 40,
     "chunk": 0,
     "sessions": [{"arrive": 0, "prefix": {"id": 0, "tokens": 12},
                   "turns": [{"new": 20, "out": 5, "think": 3}, ...]}, ...]}

A session's optional "prefix" says that the first `tokens` of its first
prompt (at most turn 0's `new`) are the shared prompt `id`'s: every session
with that id starts with the same token ids there (a system prompt), so
vLLM's prefix cache shares them across sessions.

Prefix caching is on (vLLM's default; "prefix_caching": false is accepted
for comparison runs).  Real token ids flow through the scheduler: turn t+1's
prompt is turn t's prompt + the tokens turn t generated (taken from the
request after it finished) + `new` fresh tokens.  Turn t+1 is sent `think`
steps after turn t's last token: if that token was sampled in step k (time
k + 1), turn t+1 is added right before schedule() call k + 1 + think, and its
"sent" is k + 1 + think.  Turn 0 is sent at the session's "arrive".  Turns
sent before the same call are added in the order their sends were decided
(turn 0 first, at time 0, in session order; a later turn when its previous
turn's last token came, in the order vLLM reported those finishes): the
order serQ gives events at one instant.

Output:
    {"requests": [{"session": s, "turn": t, "sent": step, "first": time,
                   "last": time, "cached": tokens}, ...],
     "steps": n, "vllm": "0.33.0"}
"cached" is the number of prompt tokens vLLM found in its prefix cache when
it first admitted the request (what vLLM reports as num_cached_tokens).
"""

from __future__ import annotations

import heapq
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle_core as core  # noqa: E402  (sets env, guards stdout)
from oracle_core import ScenarioError  # noqa: E402

TRACE_KEYS = {"budget", "max_seqs", "block_size", "num_blocks", "chunk",
              "prefix_caching", "sessions"}
SESSION_KEYS = {"arrive", "turns", "prefix"}
TURN_KEYS = {"new", "out", "think"}

# Token ids: session s, conversation position n.  Fresh user tokens and
# generated tokens come from different ranges, so a prompt that was put
# together wrongly could not match the cached conversation by accident.
SESSION_STRIDE = 20_000
MAX_SESSIONS = 20
NEW_TOKEN_BASE = 1000
GEN_TOKEN_BASE = 600_000
SHARED_TOKEN_BASE = 2_000_000   # shared prompt g, position n: 2 000 000 + 20 000 g + n


def parse_trace(obj) -> dict:
    where = "trace"
    core._check_keys(obj, TRACE_KEYS, where)
    p = core.engine_params(obj, where, prefix_caching_default=True)
    sessions = obj.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        raise ScenarioError(f"{where}: field 'sessions' must be a non-empty list")
    if len(sessions) > MAX_SESSIONS:
        raise ScenarioError(f"{where}: at most {MAX_SESSIONS} sessions")
    parsed = []
    checks = []
    for s, sess in enumerate(sessions):
        w = f"{where}: sessions[{s}]"
        core._check_keys(sess, SESSION_KEYS, w)
        arrive = core._int_field(sess, "arrive", w, minimum=0, default=0)
        turns = sess.get("turns")
        if not isinstance(turns, list) or not turns:
            raise ScenarioError(f"{w}: field 'turns' must be a non-empty list")
        first_new = turns[0].get("new") if isinstance(turns[0], dict) else None
        prefix = core.prefix_field(sess, w, first_new, "turn 0's new")
        pt = []
        prompt_len = 0
        for t, turn in enumerate(turns):
            wt = f"{w}.turns[{t}]"
            core._check_keys(turn, TURN_KEYS, wt)
            new = core._int_field(turn, "new", wt, minimum=1 if t == 0 else 0)
            out = core._int_field(turn, "out", wt, minimum=1)
            think = core._int_field(turn, "think", wt, minimum=0, default=0)
            prompt_len += new
            pt.append({"new": new, "out": out, "think": think, "prompt": prompt_len})
            checks.append((f"sessions[{s}].turns[{t}]", prompt_len, out))
            prompt_len += out
        if prompt_len >= SESSION_STRIDE:
            raise ScenarioError(f"{w}: conversation too long ({prompt_len} tokens)")
        parsed.append({"arrive": arrive, "turns": pt, "prefix": prefix})
    core.check_feasible(p, checks, where)
    p["sessions"] = parsed
    return p


def run_trace(tr: dict) -> dict:
    sessions = tr["sessions"]
    max_model_len = core.model_len_for(
        tr, max(t["prompt"] + t["out"] for s in sessions for t in s["turns"]))
    sched, hasher = core.build_scheduler(tr, max_model_len)

    req_of = {}  # request id -> (session, turn)
    reqobj = {}  # request id -> vllm Request (kept after it finishes)

    def token_for(req) -> int:
        s, _ = req_of[req.request_id]
        # req.num_tokens = conversation position of the token being sampled
        return GEN_TOKEN_BASE + s * SESSION_STRIDE + req.num_tokens

    drv = core.Driver(sched, token_for)

    # conversation so far per session (token ids)
    conv = [[] for _ in sessions]
    sent = {}
    # heap of (send step, step the send was decided, order decided, session, turn).
    # Turns sent before the same call are added in the order their sends were
    # decided: turn 0 at time 0 in session order, a later turn when its
    # previous turn's last token came (in the order vLLM reported the
    # finished requests).  This is serQ's rule for events at one instant
    # ("the order they were scheduled"), so both sides see one queue order.
    pending = []
    order = 0
    for s, sess in enumerate(sessions):
        heapq.heappush(pending, (sess["arrive"], 0, order, s, 0))
        order += 1

    limit = (max(s["arrive"] for s in sessions) + 10 + sum(
        (t["prompt"] + t["out"]) * 4 * (1 + len(sessions)) + t["think"]
        for s in sessions for t in s["turns"]))
    while True:
        k = drv.step
        while pending and pending[0][0] <= k:
            when, _decided, _order, s, t = heapq.heappop(pending)
            turn = sessions[s]["turns"][t]
            base = NEW_TOKEN_BASE + s * SESSION_STRIDE
            n0 = len(conv[s])
            conv[s].extend(range(base + n0, base + n0 + turn["new"]))
            prefix = sessions[s]["prefix"]
            if t == 0 and prefix is not None:
                g, n = prefix
                conv[s][:n] = range(SHARED_TOKEN_BASE + g * SESSION_STRIDE,
                                    SHARED_TOKEN_BASE + g * SESSION_STRIDE + n)
            assert len(conv[s]) == turn["prompt"]
            rid = f"s{s}t{t}"
            req = core.make_request(rid, conv[s], turn["out"], when, hasher)
            req_of[rid] = (s, t)
            reqobj[rid] = req
            sent[rid] = when
            drv.add_request(req)
        if not (drv.has_work() or pending):
            break
        if k >= limit:
            raise RuntimeError(f"no completion after {k} steps (livelock?)")
        rec = drv.run_step()
        for rid in rec["finished"]:
            s, t = req_of[rid]
            req = reqobj[rid]
            outs = list(req.output_token_ids)
            assert len(outs) == sessions[s]["turns"][t]["out"], (rid, len(outs))
            conv[s].extend(outs)
            if t + 1 < len(sessions[s]["turns"]):
                # last token exists at time drv.finished[rid]; the next turn is
                # sent `think` steps later.
                when = drv.finished[rid] + sessions[s]["turns"][t]["think"]
                heapq.heappush(pending, (when, drv.finished[rid], order, s, t + 1))
                order += 1

    drv.check_preemption_count()
    rows = []
    for s, sess in enumerate(sessions):
        for t in range(len(sess["turns"])):
            rid = f"s{s}t{t}"
            if rid not in drv.finished:
                raise RuntimeError(f"request {rid} never finished")
            rows.append({
                "session": s,
                "turn": t,
                "sent": sent[rid],
                "first": drv.first[rid],
                "last": drv.finished[rid],
                "cached": drv.cached_at_admit[rid],
            })
    return {"requests": rows, "steps": drv.step, "vllm": core.vllm_version()}


def main(argv=None) -> int:
    return core.command_line(argv, "Replay multi-turn sessions through vLLM 0.33.0's real scheduler.", "trace",
                             lambda obj, args, where: run_trace(parse_trace(obj)), steps=None)


if __name__ == "__main__":
    sys.exit(main())
