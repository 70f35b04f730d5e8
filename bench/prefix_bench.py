"""The content-addressed prefix cache's speed, in two figures measured in one run.

1. The replay of the Mooncake conversation trace's first 1 500 requests
   (tools/oracle/mooncake/conversation1500.json: 8 192-token budget, 64
   sequences, 40 000 blocks of 16, 14 475 steps) by serQ
   (examples/replay/mooncake.sq on the step clock: link, sessions, run) and by
   vLLM 0.33.0's real scheduler driven by the oracle harness (the requests'
   creation, their block hashes and every schedule() / update_from_output()
   call; vLLM's import and start are outside the timing: the harness answers
   a one-request warm-up first).  The same slice, the same answer (the
   committed output): medians of ``--repeat`` runs each.  The slice reads
   Mooncake's trace where it lies (../shared/data/mooncake/, not part of the
   repository); without it this figure is skipped, saying why.
2. An admission and a release on a content-addressed pool cost the blocks
   they touch, not the size of the cache: the time of one request's
   admission (its lookup, its hit blocks, its new blocks, its naming) and its
   release, with 1 000 to 1 000 000 named blocks in the free queue.

    .venv/bin/python bench/prefix_bench.py [--repeat N] [--no-vllm]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

SPEC = os.path.join(ROOT, "tools", "oracle", "mooncake", "conversation1500.json")
# the Mooncake trace's copy in the specification's data, read where it is there
SHARED = os.path.join(ROOT, "..", "shared", "data", "mooncake", "conversation_trace.jsonl")


def spec() -> dict:
    """The slice's spec, its trace the shared data's copy where that exists
    (its first 1 500 rows are the slice's), else the one the spec names."""
    with open(SPEC, encoding="utf-8") as f:
        s = json.load(f)
    s["trace"] = trace_path(s)
    return s


def trace_path(s=None) -> str:
    if os.path.exists(SHARED):
        return os.path.abspath(SHARED)
    if s is None:
        with open(SPEC, encoding="utf-8") as f:
            s = json.load(f)
    return os.path.abspath(os.path.join(os.path.dirname(SPEC), s["trace"]))


def spec_trace() -> str:
    """The trace file the slice reads."""
    with open(SPEC, encoding="utf-8") as f:
        return os.path.normpath(os.path.join(os.path.dirname(SPEC), json.load(f)["trace"]))


def serq_replay() -> tuple[float, dict]:
    from serq.cli import mooncake_program
    from serq.oracle import mooncake as MC
    from serq.sim import simulate
    t = time.perf_counter()
    s = MC.check(spec(), SPEC, os.path.dirname(SPEC))
    out = MC.outcome(simulate(mooncake_program(s)), s)
    return time.perf_counter() - t, out


def vllm_replays(repeat: int) -> tuple[list, dict]:
    from serq.oracle import mooncake as MC
    from serq.oracle.vllm import MOONCAKE, Harness
    spec_ = MC.harness_spec(spec(), os.path.dirname(SPEC))
    warm = dict(spec_, first=0, count=1)
    times = []
    with Harness(script=MOONCAKE) as h:
        h.ask(warm)
        for _ in range(repeat):
            t = time.perf_counter()
            out = h.ask(spec_)
            times.append(time.perf_counter() - t)
    return times, out


def admission_costs(sizes=(1_000, 10_000, 100_000, 1_000_000), n=2000) -> list:
    """µs per admission + release of a 64-token request that hits 32 tokens,
    with `size` named blocks in the free queue."""
    from serq.ir import model as M
    from serq.sim.pools import HoldInst, PoolAlloc
    from serq.sim.pools import RunPool, add_content

    class Sess:
        content = ()
        chains = None

        def __init__(self, sid):
            self.sid = sid

    class Sim:
        now = 0.0
        warmup = 0.0
        alloc_ver = 0
        program = M.Program(files=(), attrs=(), attr_types=(), observes=(), pools=(), stages=(),
                            arrival=M.ANone(), blocks=(), session=0)

        def pool_tick(self, pool):
            pass

        def next_release(self):
            return 0

    class St:
        f_cache = True

    out = []
    for size in sizes:
        bs = 16
        decl = M.Pool("kv", None, float((size + 64) * bs), float(bs), M.EvictLru(), M.PreemptNone(), None,
                      None, None, False, shared=True)
        sim = Sim()
        sim.program = M.Program(files=(), attrs=(), attr_types=(), observes=(), pools=(decl,), stages=(),
                                arrival=M.ANone(), blocks=(), session=0)
        pool = RunPool(sim, 0, decl)

        class T:
            pass

        def hold_once(sess, units, seq):
            t = T()
            t.sess = sess
            h = HoldInst(t, St, [0], seq)
            pa = PoolAlloc(pool, h, t, seq)
            pool.take(pa, sess, units, True, units - 1)
            pool.allocs[seq] = pa
            pool.scheduled(pa, units)
            pool.give_back(pa, units, 0.0)
        # fill the free queue: sessions of their own, 64 blocks each
        for k in range(size // 64):
            hold_once(Sess(10 ** 7 + k), 64.0 * bs, k)
        shared = Sess(1)
        add_content(shared, 1, 32)
        hold_once(shared, 64.0, 10 ** 9)
        t = time.perf_counter()
        for k in range(n):
            s = Sess(2 * 10 ** 7 + k)
            add_content(s, 1, 32)
            hold_once(s, 64.0, 10 ** 9 + k + 1)
        out.append((size, int(pool.cached // bs), 1e6 * (time.perf_counter() - t) / n))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-vllm", action="store_true")
    args = ap.parse_args(argv)
    if not os.path.exists(spec_trace()):
        print(f"replay of 1 500 Mooncake conversation requests: skipped: it reads Mooncake's trace where it "
              f"lies, {os.path.relpath(spec_trace())}, which is not there (not part of the repository)")
    else:
        replay_figures(args)
    print("an admission and a release on a content-addressed pool (64 tokens, 32 of them hit):")
    for size, fq, us in admission_costs():
        print(f"  {fq:>9,} named blocks in the free queue: {us:7.1f} µs")
    return 0


def replay_figures(args) -> None:
    serq_times = []
    for _ in range(args.repeat):
        dt, ours = serq_replay()
        serq_times.append(dt)
    with open(SPEC[:-5] + ".out.json", encoding="utf-8") as f:
        committed = json.load(f)
    from serq.oracle import mooncake as MC
    assert MC.diff(ours, committed) == [], "serQ no longer gives vLLM's answer on the slice"
    ms = statistics.median(serq_times)
    print(f"replay of 1 500 Mooncake conversation requests ({ours['steps']} steps, "
          f"{ours['preemptions']} preemptions, {sum(r['cached'] for r in ours['requests'])} cached tokens):")
    print(f"  serQ (link, sessions, run):      median {ms:6.2f} s of {args.repeat} "
          f"({', '.join(f'{x:.2f}' for x in serq_times)})")
    if not args.no_vllm:
        times, theirs = vllm_replays(args.repeat)
        assert MC.diff(ours, theirs) == [], "vLLM and serQ disagree"
        mv = statistics.median(times)
        print(f"  vLLM 0.33.0 scheduler (harness): median {mv:6.2f} s of {args.repeat} "
              f"({', '.join(f'{x:.2f}' for x in times)})")
        print(f"  serQ / vLLM: {ms / mv:.2f} (serQ {mv / ms:.1f}x faster)" if ms < mv else
              f"  serQ / vLLM: {ms / mv:.2f} (serQ slower)")


if __name__ == "__main__":
    sys.exit(main())
