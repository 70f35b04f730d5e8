"""The vLLM v1 request on the step clock (the reference's §vLLM v1 as a serQ
program and examples/oracle/vllm_request.sq), built as IR by hand:

    pool reqs  (cap max_seqs, queue fifo, admitted by the engine)
    pool kv    (cap blocks * bs, block bs, lru, preempt lifo)
    stage vllm : step { budget B; cost 1; memory kv;
                        chunk (running.count + waiting.count > 1 ? chunk : none) }
    stage gate : delay
    session {
      run gate (arrive); turn;
      hold reqs (1), kv (min(known, budget_left(vllm))) reserve (known)
           at admission (known = computed < prompt ? prompt : computed + 1) {
        set known = …;
        run vllm prefill (known) growing kv;
        branch (known == prompt) { observe first = now; }
        run vllm decode (o - 1 - (known - prompt)) growing kv;
      }
      observe done = now;
    }
"""

from __future__ import annotations

import math

from serq.ir import model as M

from builder import A, Builder, N, cond, ctx, fmin, now, query, sessions


def vllm_request(requests, budget, max_seqs, block_size, num_blocks, chunk=None, horizon=300.0):
    b = Builder("examples/oracle/vllm_request.sq")
    reqs = b.pool("reqs", cap=max_seqs)
    kv = b.pool("kv", cap=num_blocks * block_size, block=block_size,
                preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False))
    ch = 0.0 if chunk is None or math.isinf(chunk) else float(chunk)
    chunk_e = cond((ctx("Nres") + query("Queued", reqs)) > 1, ch, 0) if ch > 0 else N(0)
    vllm = b.step("vllm", budget, 1, chunk=chunk_e, memory=kv)
    gate = b.stage("gate", M.KDelay())
    b.set_admit_via(reqs, vllm)
    prompt, o, arrive, known = b.attr("prompt"), b.attr("o"), b.attr("arrive"), b.attr("known")
    computed = M.SLOT["computed"]
    known_e = cond(A(computed) < A(prompt), A(prompt), A(computed) + 1)
    budget_left = query("BudgetLeft", vllm)
    body = [
        b.set(known, known_e),
        b.run(vllm, A(known), mode="Prefill", growing=kv),
        b.branch(A(known).eq(A(prompt)), [b.observe("first", now())]),
        b.run(vllm, A(o) - 1 - (A(known) - A(prompt)), mode="Decode", growing=kv),
    ]
    b.session([
        b.run(gate, A(arrive), side="client"),
        b.turn(),
        b.hold([(reqs, 1), (kv, fmin(known_e, budget_left), known_e)], body),
        b.observe("done", now()),
    ])
    specs = [{prompt: r["prompt"], o: r["out"], arrive: r.get("arrive", 0)} for r in requests]
    return b.program(arrival=sessions(*specs), horizon=horizon)


def outcome(report, sim_data=None):
    """(first, done, preemptions) as the oracle's out.json gives them."""
    return report


# The scenarios the Lean theorems state (serving-queue-theory SerqOracle.lean,
# whose right-hand sides are the real vLLM scheduler's answers), and the
# `alone` scenario with vLLM's out.json.
SCENARIOS = {
    "chunked": dict(budget=1024, max_seqs=16, block_size=16, num_blocks=999, chunk=None,
                    requests=[{"prompt": 3000, "out": 2, "arrive": 0}, {"prompt": 700, "out": 5, "arrive": 1},
                              {"prompt": 100, "out": 3, "arrive": 1}],
                    first={0: 3, 1: 4, 2: 4}, done={0: 4, 1: 8, 2: 6}, preemptions=0),
    "hol": dict(budget=1024, max_seqs=16, block_size=16, num_blocks=10, chunk=None,
                requests=[{"prompt": 96, "out": 10}, {"prompt": 96, "out": 10}, {"prompt": 16, "out": 3}],
                first={0: 1, 1: 11, 2: 11}, done={0: 10, 1: 20, 2: 13}, preemptions=0),
    "longchunk": dict(budget=4096, max_seqs=16, block_size=16, num_blocks=999, chunk=1000,
                      requests=[{"prompt": 3000, "out": 2}, {"prompt": 3000, "out": 2}],
                      first={0: 3, 1: 3}, done={0: 4, 1: 4}, preemptions=0),
    "mixed": dict(budget=512, max_seqs=4, block_size=16, num_blocks=39, chunk=None,
                  requests=[{"prompt": 300, "out": 40, "arrive": 0}, {"prompt": 200, "out": 30, "arrive": 2},
                            {"prompt": 250, "out": 20, "arrive": 3}, {"prompt": 150, "out": 60, "arrive": 3},
                            {"prompt": 400, "out": 10, "arrive": 5}, {"prompt": 100, "out": 25, "arrive": 9}],
                  first={0: 1, 1: 3, 2: 33, 3: 41, 4: 53, 5: 63},
                  done={0: 40, 1: 32, 2: 52, 3: 100, 4: 62, 5: 87}, preemptions=0),
    "preempt": dict(budget=100, max_seqs=16, block_size=16, num_blocks=10, chunk=None,
                    requests=[{"prompt": 80, "out": 30}, {"prompt": 80, "out": 30}],
                    first={0: 1, 1: 31}, done={0: 30, 1: 60}, preemptions=1),
    "seqcap": dict(budget=1024, max_seqs=2, block_size=16, num_blocks=999, chunk=None,
                   requests=[{"prompt": 1024, "out": 5}] * 4,
                   first={0: 1, 1: 3, 2: 7, 3: 9}, done={0: 5, 1: 7, 2: 11, 3: 13}, preemptions=0),
    "alone": dict(budget=32, max_seqs=8, block_size=16, num_blocks=9, chunk=24,
                  requests=[{"prompt": 60, "out": 12, "arrive": 1}, {"prompt": 60, "out": 24, "arrive": 4},
                            {"prompt": 60, "out": 12}, {"prompt": 30, "out": 6, "arrive": 1}],
                  first={2: 3, 0: 5, 3: 17, 1: 25}, done={2: 14, 3: 22, 0: 23, 1: 48}, preemptions=2),
}


def vllm_replay(turns, budget=64, max_seqs=4, block_size=16, num_blocks=20, horizon=60.0):
    """The vLLM replay program on a unit step clock (examples/replay/vllm_replay.sq
    as the Lean theorem vllm_cache_trace states it): a multi-turn session whose
    hold consumes its own cached prefix, bounded by the previous prompt."""
    from builder import floor, fmax
    b = Builder("examples/replay/vllm_replay.sq")
    kv = b.pool("kv", cap=num_blocks * block_size, block=block_size,
                preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False))
    reqs = b.pool("reqs", cap=max_seqs)
    engine = b.step("engine", budget, 1, memory=kv)
    front = b.stage("front", M.KDelay())
    gate = b.stage("gate", M.KDelay())
    tool = b.stage("tool", M.KDelay())
    b.set_admit_via(reqs, engine)
    S = M.SLOT
    prev, prevout, t0, prompt = b.attr("prev"), b.attr("prevout"), b.attr("t0"), b.attr("prompt")
    hitmax, known, c = b.attr("hitmax"), b.attr("known"), b.attr("c")
    bs = block_size
    computed = A(S["computed"])
    known_e = cond(computed < A(prompt), A(prompt), computed + 1)
    bound = fmax(A(hitmax), floor(computed / bs) * bs)
    hit = fmin(query("CachedIn", kv), bound)
    units = hit + fmin(known_e - hit, query("BudgetLeft", engine))
    body = [
        b.set(known, known_e),
        b.set(c, A(S["cached"])),
        b.observe("cached_tokens", A(c)),
        b.observe("prefix", A(prev) + A(prevout)),
        b.observe("sent", A(t0)),
        b.run(engine, A(known) - A(c), mode="Prefill", growing=kv),
        b.branch(A(known).eq(A(prompt)), [b.observe("ttft", now() - A(t0))]),
        b.run(engine, A(S["out"]) - 1 - (A(known) - A(prompt)), mode="Decode", growing=kv),
    ]
    loop_body = [
        b.set(t0, now()),
        b.set(prompt, A(S["new"])),
        b.run(front, N(0) * A(prompt)),
        b.set(hitmax, cond(A(S["forced"]), 0, floor(fmin(A(prev), A(prompt) - 1) / bs) * bs)),
        b.hold([(reqs, 1), (kv, units, known_e)], body, reuse=bound, cache=A(prompt) + A(S["out"]) - 1),
        b.observe("latency", now() - A(t0)),
        b.set(prev, A(prompt)),
        b.set(prevout, A(S["out"])),
        b.branch(A(S["more"]), [b.run(tool, A(S["think"]), side="client"), b.turn()], [b.end()],
                 side="client"),
    ]
    b.session([
        b.run(gate, A(S["serial"]) * 3, side="client"),
        b.set(prev, 0, side="client"),
        b.set(prevout, 0, side="client"),
        b.turn(),
        b.loop(loop_body, side="client"),
    ])
    tt = [[{S["new"]: n, S["out"]: o, S["think"]: th, S["forced"]: f} for (n, o, th, f) in ts] for ts in turns]
    return b.program(arrival=sessions(*[{} for _ in turns], turns=tt), horizon=horizon)


CACHE_TRACE = dict(
    turns=[[(100, 3, 2, 0), (150, 3, 2, 0), (210, 3, 0, 0)],
           [(120, 3, 2, 0), (180, 3, 2, 0), (230, 3, 0, 0)],
           [(90, 3, 2, 0), (140, 3, 2, 0), (200, 3, 0, 0)]],
    sent=[(0, 0), (0, 6), (0, 13), (1, 3), (1, 9), (1, 17), (2, 6), (2, 12), (2, 22)],
    ttft=[(0, 2), (0, 3), (0, 11), (1, 2), (1, 4), (1, 13), (2, 2), (2, 6), (2, 14)],
    latency=[(0, 4), (0, 5), (0, 13), (1, 4), (1, 6), (1, 15), (2, 4), (2, 8), (2, 16)],
    cached_tokens=[(0, 0), (0, 96), (0, 0), (1, 0), (1, 64), (1, 0), (2, 0), (2, 0), (2, 0)],
)
