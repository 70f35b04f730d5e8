"""The simulator's benchmark (``make bench``, issue 14): each figure a median
of several runs in this process, each ratio measured in the same command.

(a) the overview's vLLM multi-turn program (bench/vllm_overview.sq) at
    horizon 3 000: wall time, iterations/s, strokes against ``--no-strokes``;
(b) the replay of a 330-session, 3 291-request multi-turn trace
    (bench/traces.py) with prefix caching and preemptions, on
    examples/replay/vllm_replay.sq: the same figures;
(c) the M/M/1 of examples/single-turn/mg1.sq at horizon 100 000 against a
    SimPy model of it (events/s of the model's events, arrivals plus
    departures; SimPy's kernel schedules about six events a customer, its
    count printed beside);
(d) an oracle DRT batch, serQ's side: bench/drt_bench.py where it exists.

    .venv/bin/python bench/bench.py [--quick] [--runs N] [--only a,b,c,d]

Imports are outside the timings (SimPy's, serq's machine module, numpy,
which a long run imports on first use), and so is linking, except in (d),
whose point it is.  The reference figures the issue quotes for the Rust serQ
(pyserq 0.1.6) on this kind of machine are printed beside, as quoted, not
measured here.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from serq.sim import simulate  # noqa: E402
import serq.sim.machine  # noqa: E402,F401  (imported by a run on first use)
import numpy  # noqa: E402,F401  (imported by a long run on first use)

# the figures for the Rust serQ, in process on this kind of machine
RUST = {"a": 0.67, "b": 0.3}


def timed(prog, runs: int, strokes: bool = True):
    """The median wall time of `runs` runs, and the last run's report."""
    walls = []
    r = None
    for _ in range(runs):
        t = time.perf_counter()
        r = simulate(prog, strokes=strokes, samples=False)
        walls.append(time.perf_counter() - t)
    return statistics.median(walls), r


def engine_case(label: str, prog, runs: int) -> None:
    wall, r = timed(prog, runs)
    slow, r2 = timed(prog, runs, strokes=False)
    same = r.text() == r2.text()
    d = r.data()
    iters = sum(s.get("iterations", 0) for s in d["stages"])
    print(f"{label}")
    print(f"  strokes   : {wall:7.3f} s  {d['run']['events']:>9} events  {d['run']['events'] / wall:10.0f} events/s  "
          f"{iters / wall:10.0f} iterations/s")
    print(f"  --no-strokes: {slow:5.3f} s  {d['run']['events'] / slow:10.0f} events/s  "
          f"(strokes {slow / wall:.2f}x faster; reports {'byte-identical' if same else 'DIFFER'})")


def case_a(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    h = 300.0 if quick else 3000.0
    prog = compile_file(os.path.join(HERE, "vllm_overview.sq"), horizon=h, seed=1)
    engine_case(f"(a) bench/vllm_overview.sq, horizon {h:g}" +
                ("" if quick else f"  (the issue: Rust serQ {RUST['a']} s, target 0.35 s)"), prog, runs)


def case_b(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    from serq.oracle import replay
    from traces import trace
    t = trace()
    if quick:
        t = dict(t, sessions=t["sessions"][:60])
    prog = replay.with_sessions(compile_file(os.path.join(ROOT, replay.PROGRAM), sets=replay.inputs(t),
                                             horizon=replay.horizon(t)), t)
    n = sum(len(s["turns"]) for s in t["sessions"])
    engine_case(f"(b) the replay of {len(t['sessions'])} sessions, {n} requests (bench/traces.py)" +
                ("" if quick else f"  (the issue: Rust serQ {RUST['b']} s, target 0.15 s)"), prog, runs)


def run_simpy(horizon: float, lam: float = 0.8, seed: int = 1):
    """The M/M/1 written for SimPy as its documentation writes such models: a
    process per customer, a Resource, timeouts; each customer's response
    time is recorded, as serq records each request's."""
    import simpy
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    rng = random.Random(seed)
    done = [0, 0]  # arrivals, departures
    response = []

    def customer(env):
        t0 = env.now
        with server.request() as req:
            yield req
            yield env.timeout(rng.expovariate(1.0))
        response.append(env.now - t0)
        done[1] += 1

    def source(env):
        while True:
            done[0] += 1
            env.process(customer(env))
            yield env.timeout(rng.expovariate(lam))

    env.process(source(env))
    t = time.perf_counter()
    env.run(until=horizon)
    wall = time.perf_counter() - t
    return wall, done[0], done[1], next(env._eid)


def case_c(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    h = 10_000.0 if quick else 100_000.0
    prog = compile_file(os.path.join(ROOT, "examples", "single-turn", "mg1.sq"), horizon=h, warmup=0.0, seed=1)
    wall, r = timed(prog, runs)
    d = r.data()
    reqs = d["client"]["response"]["count"]
    eps = d["run"]["events"] / wall
    try:
        import simpy  # noqa: F401
    except ImportError:
        print(f"(c) M/M/1, examples/single-turn/mg1.sq, horizon {h:g}: serq {wall:.3f} s, {eps:.0f} events/s "
              "(SimPy not installed: pip install simpy)")
        return
    sims = [run_simpy(h) for _ in range(runs)]
    swall = statistics.median(s[0] for s in sims)
    _, arr, dep, kev = sims[-1]
    meps = (arr + dep) / swall
    print(f"(c) M/M/1 (λ = 0.8, E[S] = 1), examples/single-turn/mg1.sq, horizon {h:g}  (target: 3x SimPy)")
    print(f"  serq : {wall:7.3f} s  {d['run']['events']:>9} events  {eps:10.0f} events/s  {reqs / wall:9.0f} requests/s")
    print(f"  simpy: {swall:7.3f} s  {arr + dep:>9} events  {meps:10.0f} events/s  {dep / swall:9.0f} requests/s  "
          f"({kev} kernel events)")
    print(f"  serq / simpy: {eps / meps:.2f}x events/s (the model's events), {reqs / wall / (dep / swall):.2f}x "
          "requests/s")


def case_d(runs: int, quick: bool) -> None:
    script = os.path.join(HERE, "drt_bench.py")
    if not os.path.exists(script):
        print("(d) the oracle DRT batch: bench/drt_bench.py is not here")
        return
    print("(d) the oracle DRT batch, serQ's side (bench/drt_bench.py)")
    sys.stdout.flush()
    subprocess.run([sys.executable, script] + (["--quick"] if quick else []) + ["--runs", str(runs)], check=False)


def main(argv) -> int:
    quick = "--quick" in argv
    runs = 1 if quick else 3
    only = "abcd"
    for k, a in enumerate(argv):
        if a == "--runs" and k + 1 < len(argv):
            runs = int(argv[k + 1])
        if a == "--only" and k + 1 < len(argv):
            only = argv[k + 1].replace(",", "")
    print(f"serq benchmark, medians of {runs} run{'s' if runs > 1 else ''}" + (" (quick)" if quick else ""))
    for c in only:
        {"a": case_a, "b": case_b, "c": case_c, "d": case_d}[c](runs, quick)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
