"""The benchmark's programs, as IR (built with the tests' builder, so the
benchmark does not wait for the front end).

* ``mm1``: examples/single-turn/mg1.sq's M/M/1 (λ = 0.8, E[S] = 1).
* ``vllm``: examples/multi-turn/vllm.sq as the reference writes it — vLLM
  v1's engine (budget, chunk cap while more than one request runs or waits,
  the KV cache in blocks with LRU eviction and preempt lifo, admission by
  the engine with the budget left) under a multi-turn agent workload
  (Poisson sessions, exponential new tokens and outputs, a tool call between
  turns, a prefix hit on each next turn).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "sim"))

from serq.ir import model as M  # noqa: E402

from builder import (A, Builder, N, bernoulli, cond, ctx, exp, floor, fmax, fmin, now,  # noqa: E402
                     query)

S = M.SLOT


def mm1(horizon=100_000.0, warmup=10_000.0, seed=1):
    b = Builder("examples/single-turn/mg1.sq")
    svc = b.stage("svc", M.KFifo(1))
    t0 = b.attr("t0")
    b.session([b.turn(), b.set(t0, now()), b.run(svc, exp(1.0)), b.observe("response", now() - A(t0))])
    return b.program(arrival=M.APoisson(0.8), horizon=horizon, warmup=warmup, seed=seed)


def vllm(horizon=300.0, warmup=30.0, seed=1, Lambda=0.35, p_more=0.9, new=400.0, out=60.0, Z=4.0,
         B=2048, max_seqs=64, blocks=2048, bs=16, chunk_cap=512, c0=0.0, omega=0.0004, beta=2.0e-8,
         a=2.0e-6):
    b = Builder("examples/multi-turn/vllm.sq")
    kv = b.pool("kv", cap=blocks * bs, block=bs,
                preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False))
    reqs = b.pool("reqs", cap=max_seqs)
    waiting = query("Queued", reqs)
    threshold = cond((ctx("Nres") + waiting) > 1, chunk_cap, 0)
    cost = N(c0) + fmax(N(omega) + N(beta) * (ctx("Kvb") + ctx("Kvp")), ctx("Ntok") * a)
    engine = b.step("vllm", B, cost, chunk=threshold, memory=kv)
    b.set_admit_via(reqs, engine)
    tool = b.stage("tool", M.KDelay())
    K, n, o, prompt, kept, known, c = (b.attr(x) for x in ("K", "n", "o", "prompt", "kept", "known", "c"))
    b.hidden = [o]

    def reusable(x):
        return floor((x - 1) / bs) * bs

    computed = A(S["computed"])
    known_e = fmax(A(kept), computed + 1)
    reused = fmin(query("CachedIn", kv), reusable(known_e))
    def server():
        body = [
            b.set(known, known_e),
            b.set(kept, A(known)),
            b.set(c, fmin(A(S["cached"]), reusable(A(known)))),
            b.observe("hit", A(c) > 0),
            b.observe("prefill_tokens", A(known) - A(c)),
            b.run(engine, A(known) - A(c), mode="Prefill", growing=kv),
            b.run(engine, A(o) - 1 - (A(known) - A(prompt)), mode="Decode", growing=kv),
        ]
        return [
            b.set(prompt, A(K) + A(n)),
            b.set(kept, A(prompt)),
            b.hold([(reqs, 1), (kv, fmin(known_e, reused + query("BudgetLeft", engine)), known_e)], body,
                   cache=A(prompt) + A(o)),
        ]

    b.init([b.set(K, 0)])
    b.turn_items([b.set(n, floor(exp(new)) + 1), b.set(o, floor(exp(out)) + 1), b.set(S["more"], bernoulli(p_more))])
    b.session([b.turn()] + server() + [
        b.while_(A(S["more"]), [
            b.set(K, A(K) + A(n) + A(o), side="client"),
            b.run(tool, exp(Z), side="client"),
            b.turn(),
        ] + server(), side="client"),
    ])
    return b.program(arrival=M.APoisson(Lambda), horizon=horizon, warmup=warmup, seed=seed)
