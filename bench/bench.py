"""The simulator's benchmark (``make bench``): events/s and simulated
requests/s for the M/M/1 of examples/single-turn/mg1.sq at horizon 100 000 and
for the vLLM-like multi-turn engine program of examples/multi-turn/vllm.sq at
horizon 300, and the ratio against a SimPy M/M/1 run in the same command.

An "event" of serq is an event its heap processes (an arrival, a completion,
an iteration's end); the M/M/1 has two per request.  SimPy's kernel counts
finer events (a process start, a resource request and release, a timeout, a
process end: about six per request), so the comparison that measures the
same work is the rate of the *model's* events, arrivals plus departures
(twice the requests), which the ratio uses; SimPy's own kernel count is
printed beside it.  Both record each request's response time (serq: the
program's observe and the client's response, and the report's statistics
of them, inside ``simulate``; SimPy: a list).  Imports are outside the
timings: SimPy's, and what a serq run imports on first use (its machine
module; numpy, for a long run's random streams and statistics).

    .venv/bin/python bench/bench.py [--quick] [--ir]

The programs are examples/single-turn/mg1.sq and examples/multi-turn/vllm.sq,
linked by the front end; with ``--ir`` (or without the front end) they are
the IR bench/programs.py builds by hand (the same M/M/1; a vLLM engine under
a lighter multi-turn load, about 180 000 iterations at horizon 300).
"""

from __future__ import annotations

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from serq.sim import simulate  # noqa: E402
import serq.sim.machine  # noqa: E402,F401  (imported by a run on first use)
import numpy  # noqa: E402,F401  (imported by a long run on first use)

import programs  # noqa: E402


def run_serq(prog):
    t = time.perf_counter()
    r = simulate(prog)
    wall = time.perf_counter() - t
    d = r.data()
    return wall, d


def run_simpy(horizon: float, lam: float = 0.8, seed: int = 1):
    """The M/M/1 written for SimPy as its documentation writes such models: a
    process per customer, a Resource, timeouts; each customer's response
    time is recorded, as serq records each request's (``observe`` and the
    client's response)."""
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
    kernel_events = next(env._eid)  # events the SimPy kernel scheduled
    return wall, done[0], done[1], kernel_events


ROOT = os.path.join(os.path.dirname(__file__), "..")


def linked(name: str, horizon: float, warmup: float):
    from serq.link import compile_file
    return compile_file(os.path.join(ROOT, "examples", name), horizon=horizon, warmup=warmup, seed=1)


def main(argv):
    quick = "--quick" in argv
    try:
        import serq.link  # noqa: F401
        use_sq = "--ir" not in argv
    except ImportError:  # pragma: no cover - before the front end
        use_sq = False
    horizon = 10_000.0 if quick else 100_000.0
    vh = 30.0 if quick else 300.0
    if use_sq:
        mm1 = linked("single-turn/mg1.sq", horizon, 0.0)
        vllm = linked("multi-turn/vllm.sq", vh, vh / 10)
        names = ("examples/single-turn/mg1.sq", "examples/multi-turn/vllm.sq")
    else:
        mm1 = programs.mm1(horizon=horizon, warmup=0.0)
        vllm = programs.vllm(horizon=vh, warmup=vh / 10, out=180.0, Lambda=0.4)
        names = ("bench/programs.py mm1", "bench/programs.py vllm")
    print(f"M/M/1 (λ = 0.8, E[S] = 1), {names[0]}, horizon {horizon:g}")
    wall, d = run_serq(mm1)
    reqs = d["client"]["response"]["count"]
    serq_eps = d["run"]["events"] / wall
    serq_rps = reqs / wall
    print(f"  serq : {wall:6.2f} s  {d['events']:>8} events  {serq_eps:10.0f} events/s  "
          f"{serq_rps:9.0f} requests/s")
    swall, arr, dep, kev = run_simpy(horizon)
    model_eps = (arr + dep) / swall
    print(f"  simpy: {swall:6.2f} s  {arr + dep:>8} events  {model_eps:10.0f} events/s  "
          f"{dep / swall:9.0f} requests/s  ({kev} kernel events, {kev / swall:.0f}/s)")
    print(f"  ratio serq / simpy: {serq_eps / model_eps:.2f}x events/s (model events), "
          f"{serq_rps / (dep / swall):.2f}x requests/s")

    print(f"vLLM-like multi-turn engine, {names[1]}, horizon {vh:g}")
    wall, d = run_serq(vllm)
    reqs = d["client"]["response"]["count"]
    it = d["stages"][0]["iterations"]
    print(f"  serq : {wall:6.2f} s  {d['events']:>8} events  {d['events'] / wall:10.0f} events/s  "
          f"{reqs / wall:9.1f} requests/s  ({it} iterations){'  (target: under 10 s)' if not quick else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
