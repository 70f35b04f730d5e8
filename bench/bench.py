"""The simulator's benchmark (``make bench``, issues 14 and 22): each figure a
median of several runs in this process (or of new processes, for the
commands), each ratio measured in the same command, the load average said;
(a)-(c)'s ratios also as ratios of this process's CPU times, which a machine
others load moves less than the wall's.

(a) the overview's vLLM multi-turn program (bench/vllm_overview.sq) at
    horizon 3 000: wall time, iterations/s, strokes against ``--no-strokes``,
    and the Rust serQ (pyserq) on the same model (bench/rust/) where the
    ``bench`` extra is installed;
(b) the replay of a 330-session, 3 291-request multi-turn trace
    (bench/traces.py) with prefix caching and preemptions, on
    examples/replay/vllm_replay.sq: the same figures;
(c) the M/M/1 of examples/single-turn/mg1.sq at horizon 100 000 against a
    SimPy model of it (events/s of the model's events, arrivals plus
    departures; SimPy's kernel schedules about six events a customer, its
    count printed beside);
(d) an oracle DRT batch, serQ's side: bench/drt_bench.py where it exists;
(e) the replay of 1 500 Mooncake requests by serQ and by vLLM 0.33.0's own
    scheduler (bench/prefix_bench.py; vLLM's side where .venv-vllm is built);
(f) every command's start-up (bench/startup_bench.py: new processes);
(g) a sweep's configurations per minute with ``--jobs 1`` and ``--jobs 2``
    (the 2 x 2 x 3 sweep of examples/multi-turn/vllm.sq at horizon 200,
    each the whole command as a user types it);
(h) (a)'s program as a large engine (256 sequences, 30 000 blocks, 40
    arrivals/s, horizon 120: about 200 residents an iteration, arrivals
    every few iterations), strokes against ``--no-strokes``: strokes that
    cannot take an iteration must not make the run slower;

(i) an iteration's cost in its residents: (a)'s program as an engine of
    32 to 1 024 sequences kept full, step by step, the time inside its
    iterations (forming the batch, admitting, ending) per resident and
    iteration at each size, and the largest size's over the smallest's
    (an iteration linear in its residents gives about 1; one that passed
    over its batch at each admission gave more as the engine grew);

and, last, each of issue 22's targets with the figure measured.

    .venv/bin/python bench/bench.py [--quick] [--runs N] [--only a,b,c,d,e,f,g,h,i] [--profile]

``--profile`` (``make bench PROFILE=1``): after (a), (b), (c) and (e)'s
timed runs, one more under cProfile, its time by the simulator's parts and
its functions of most own time (bench/where.py).

Imports are outside the timings of (a)-(c) (SimPy's, serq's machine module,
numpy, which a long run imports on first use), and so is linking, except in
(d), whose point it is.  The Rust serQ runs in this process too
(``pyserq.run``), timed the same way.
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
from startup_bench import load  # noqa: E402
import serq.sim.machine  # noqa: E402,F401  (imported by a run on first use)
import numpy  # noqa: E402,F401  (imported by a long run on first use)

RUST_DIR = os.path.join(HERE, "rust")
TARGETS = []     # (what, figure, target, met) in the order measured
PROFILE = False  # --profile: where each case's time goes (bench/where.py)


def target(what: str, figure: str, goal: str, met) -> None:
    TARGETS.append((what, figure, goal, met))


def pyserq():
    """The Rust serQ (the `bench` extra), or None."""
    try:
        import pyserq as P
    except ImportError:
        return None
    return P


# the median CPU time (this process's, user and system) of the last timed()
# or rust_timed(): on a machine others load, a ratio of CPU times moves less
# than one of wall times
CPU = {}


def rust_timed(P, deployment: str, workload: str, runs: int, **kw):
    """The median wall time of `runs` runs of the Rust serQ, and its last report's JSON."""
    prog = P.compile(os.path.join(RUST_DIR, deployment), workload=os.path.join(RUST_DIR, workload), **kw)
    walls = []
    cpus = []
    out = None
    for _ in range(runs):
        c = time.process_time()
        t = time.perf_counter()
        out = P.run(prog)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    import json
    CPU["rust"] = statistics.median(cpus)
    return statistics.median(walls), json.loads(out.json())


def _where(label: str, fn, *args, **kw) -> None:
    """With --profile: where ``fn(*args, **kw)`` spends its time (bench/where.py)."""
    if PROFILE:
        import where
        where.report(label, fn, *args, **kw)


def timed(prog, runs: int, strokes: bool = True):
    """The median wall time of `runs` runs, and the last run's report."""
    walls = []
    cpus = []
    r = None
    for _ in range(runs):
        c = time.process_time()
        t = time.perf_counter()
        r = simulate(prog, strokes=strokes, samples=False)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    CPU["serq"] = statistics.median(cpus)
    return statistics.median(walls), r


def engine_case(label: str, prog, runs: int, rust=None) -> float:
    """Strokes, step by step, and (``rust``: a thunk giving its median wall
    and report) the Rust serQ; serq's median wall time."""
    wall, r = timed(prog, runs)
    cpu = CPU["serq"]
    _where(label.split(",")[0], simulate, prog, samples=False)
    slow, r2 = timed(prog, runs, strokes=False)
    same = r.text() == r2.text()
    d = r.data()
    iters = sum(s.get("iterations", 0) for s in d["stages"])
    print(f"{label}")
    print(f"  strokes     : {wall:7.3f} s  {d['run']['events']:>9} events  {d['run']['events'] / wall:10.0f} events/s  "
          f"{iters / wall:10.0f} iterations/s")
    print(f"  --no-strokes: {slow:7.3f} s  {d['run']['events'] / slow:10.0f} events/s  "
          f"(strokes {slow / wall:.2f}x faster; reports {'byte-identical' if same else 'DIFFER'})")
    if rust is not None:
        rwall, rd = rust()
        riters = sum(s.get("iterations", 0) for s in rd["stages"])
        print(f"  Rust serQ   : {rwall:7.3f} s  {riters:>9} iterations  (serq / Rust {wall / rwall:.2f}x the time; "
              f"CPU {cpu:.3f} s / {CPU['rust']:.3f} s = {cpu / CPU['rust']:.2f}x)")
        return wall / rwall, cpu / CPU["rust"]
    return None


def _rust_verdict(key: str, what: str, ratio) -> None:
    if ratio is None:
        target(what, "pyserq not installed (pip install -e \".[bench]\")", "<= 0.5x Rust's time", None)
    else:
        target(what, f"{ratio[0]:.2f}x Rust's time (CPU {ratio[1]:.2f}x)", "<= 0.5x Rust's time", ratio[0] <= 0.5)


def case_a(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    h = 300.0 if quick else 3000.0
    prog = compile_file(os.path.join(HERE, "vllm_overview.sq"), horizon=h, seed=1)
    P = pyserq()
    rust = None if P is None else \
        (lambda: rust_timed(P, "vllm_overview.sq", "overview_workload.sq", runs, horizon=h, seed=1))
    ratio = engine_case(f"(a) bench/vllm_overview.sq, horizon {h:g}", prog, runs, rust)
    _rust_verdict("a", f"(a) multi-turn vLLM, horizon {h:g}", ratio)


def case_h(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    h = 30.0 if quick else 120.0
    prog = compile_file(os.path.join(HERE, "vllm_overview.sq"), horizon=h, seed=1,
                        sets={"max_seqs": "256", "blocks": "30000", "Lambda": "40"})
    engine_case(f"(h) bench/vllm_overview.sq with 256 sequences, 30 000 blocks, 40 arrivals/s, horizon {h:g}",
                prog, runs)


def case_i(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    from serq.sim import step
    h = 30.0 if quick else 120.0
    sizes = (32, 256) if quick else (32, 128, 512, 1024)
    inside = [0.0]
    attempt, end = step.StepStage.attempt, step.StepStage._end

    def timed_attempt(self):
        t = time.perf_counter()
        try:
            return attempt(self)
        finally:
            inside[0] += time.perf_counter() - t

    def timed_end(self, batch):
        t = time.perf_counter()
        try:
            return end(self, batch)
        finally:
            inside[0] += time.perf_counter() - t

    print(f"(i) an iteration's cost in its residents: bench/vllm_overview.sq, step by step, horizon {h:g}, "
          "the engine kept full (B 65 536, 400 000 blocks, arrivals N / (2 + N / 32) a second)")
    per = []
    step.StepStage.attempt, step.StepStage._end = timed_attempt, timed_end
    try:
        for n in sizes:
            prog = compile_file(os.path.join(HERE, "vllm_overview.sq"), horizon=h, seed=1,
                                sets={"max_seqs": str(n), "blocks": "400000", "B": "65536",
                                      "Lambda": repr(n / (2.0 + n / 32.0))})
            times = []
            for _ in range(runs):
                inside[0] = 0.0
                r = simulate(prog, strokes=False, samples=False)
                times.append(inside[0])
            st = r.data()["stages"][0]
            us = statistics.median(times) / (st["iterations"] * st["number"]) * 1e6
            per.append(us)
            print(f"  {n:5d} sequences: {st['number']:7.1f} residents on average, {st['iterations']:6d} iterations, "
                  f"{statistics.median(times):6.3f} s inside them: {us:6.3f} us a resident and iteration")
    finally:
        step.StepStage.attempt, step.StepStage._end = attempt, end
    print(f"  the largest engine's cost a resident and iteration over the smallest's: {per[-1] / per[0]:.2f}x "
          f"(residents x{sizes[-1] // sizes[0]})")


def _trace_csv(t: dict, path: str) -> None:
    """The trace as the Rust serQ's replay reads it (session, turn, new, out, think, forced)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("session,turn,new,out,think,forced\n")
        for i, sess in enumerate(t["sessions"]):
            for k, turn in enumerate(sess["turns"]):
                f.write(f"{i},{k},{turn['new']},{turn['out']},{turn.get('think', 0)},{turn.get('forced', 0)}\n")


def case_b(runs: int, quick: bool) -> None:
    import tempfile
    from serq.link import compile_file
    from serq.oracle import replay
    from traces import trace
    t = trace()
    if quick:
        t = dict(t, sessions=t["sessions"][:60])
    prog = replay.with_sessions(compile_file(os.path.join(ROOT, replay.PROGRAM), sets=replay.inputs(t),
                                             horizon=replay.horizon(t)), t)
    n = sum(len(s["turns"]) for s in t["sessions"])
    P = pyserq()
    with tempfile.TemporaryDirectory(prefix="serq-bench-") as tmp:
        csv = os.path.join(tmp, "trace.csv")
        _trace_csv(t, csv)
        spacing = t["sessions"][1]["arrive"] - t["sessions"][0]["arrive"]
        rust = None if P is None else \
            (lambda: rust_timed(P, "vllm_replay.sq", "replay_workload.sq", runs, trace=csv,
                                horizon=replay.horizon(t), seed=1,
                                sets={"sessions": str(len(t["sessions"])), "spacing": str(spacing)}))
        ratio = engine_case(f"(b) the replay of {len(t['sessions'])} sessions, {n} requests (bench/traces.py)",
                            prog, runs, rust)
    _rust_verdict("b", f"(b) replay of {len(t['sessions'])} sessions", ratio)


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
    c = time.process_time()
    t = time.perf_counter()
    env.run(until=horizon)
    wall = time.perf_counter() - t
    CPU["simpy"] = time.process_time() - c
    return wall, done[0], done[1], next(env._eid)


def case_c(runs: int, quick: bool) -> None:
    from serq.link import compile_file
    h = 10_000.0 if quick else 100_000.0
    prog = compile_file(os.path.join(ROOT, "examples", "single-turn", "mg1.sq"), horizon=h, warmup=0.0, seed=1)
    wall, r = timed(prog, runs)
    cpu = CPU["serq"]
    _where("(c) M/M/1", simulate, prog, samples=False)
    d = r.data()
    reqs = d["client"]["response"]["count"]
    eps = d["run"]["events"] / wall
    try:
        import simpy  # noqa: F401
    except ImportError:
        print(f"(c) M/M/1, examples/single-turn/mg1.sq, horizon {h:g}: serq {wall:.3f} s, {eps:.0f} events/s "
              "(SimPy not installed: pip install simpy)")
        return
    sims = []
    scpus = []
    for _ in range(runs):
        sims.append(run_simpy(h))
        scpus.append(CPU["simpy"])
    swall = statistics.median(s[0] for s in sims)
    scpu = statistics.median(scpus)
    _, arr, dep, kev = sims[-1]
    meps = (arr + dep) / swall
    print(f"(c) M/M/1 (λ = 0.8, E[S] = 1), examples/single-turn/mg1.sq, horizon {h:g}  (target: 3x SimPy)")
    print(f"  serq : {wall:7.3f} s  {d['run']['events']:>9} events  {eps:10.0f} events/s  {reqs / wall:9.0f} requests/s")
    print(f"  simpy: {swall:7.3f} s  {arr + dep:>9} events  {meps:10.0f} events/s  {dep / swall:9.0f} requests/s  "
          f"({kev} kernel events)")
    print(f"  serq / simpy: {eps / meps:.2f}x events/s (the model's events), {reqs / wall / (dep / swall):.2f}x "
          f"requests/s; by CPU time {(d['run']['events'] / cpu) / ((arr + dep) / scpu):.2f}x events/s")
    cx = (d['run']['events'] / cpu) / ((arr + dep) / scpu)
    target(f"(c) M/M/1, horizon {h:g}", f"{eps / meps:.2f}x SimPy's events/s (CPU {cx:.2f}x)", ">= 3x SimPy",
           eps / meps >= 3)


def case_d(runs: int, quick: bool) -> None:
    script = os.path.join(HERE, "drt_bench.py")
    if not os.path.exists(script):
        print("(d) the oracle DRT batch: bench/drt_bench.py is not here")
        return
    print("(d) the oracle DRT batch, serQ's side (bench/drt_bench.py)")
    sys.stdout.flush()
    subprocess.run([sys.executable, script] + (["--quick"] if quick else []) + ["--runs", str(runs)], check=False)


def case_e(runs: int, quick: bool) -> None:
    """The 1 500-request Mooncake replay against vLLM's scheduler."""
    import prefix_bench as PB
    vllm = os.path.exists(os.path.join(ROOT, ".venv-vllm", "bin", "python"))
    print(f"(e) the replay of 1 500 Mooncake requests (bench/prefix_bench.py; trace {PB.trace_path()})")
    serq_times = []
    ours = None
    for _ in range(max(1, runs if not quick else 1)):
        dt, ours = PB.serq_replay()
        serq_times.append(dt)
    ms = statistics.median(serq_times)
    print(f"  serQ (link, sessions, run): {ms:7.3f} s  ({ours['steps']} steps, {ours['preemptions']} preemptions)")
    _where("(e) link, sessions, run", PB.serq_replay)
    if not vllm:
        print("  vLLM's scheduler: .venv-vllm is not built (make vllm-env)")
        target("(e) Mooncake replay", f"serQ {ms:.2f} s; vLLM not measured (.venv-vllm absent)",
               ">= 30x faster than vLLM's scheduler", None)
        return
    times, theirs = PB.vllm_replays(max(1, runs if not quick else 1))
    from serq.oracle import mooncake as MC
    agree = MC.diff(ours, theirs) == []
    mv = statistics.median(times)
    print(f"  vLLM 0.33.0's scheduler:   {mv:7.3f} s  (serQ {mv / ms:.1f}x faster; answers "
          f"{'agree' if agree else 'DIFFER'})")
    target("(e) Mooncake replay", f"serQ {mv / ms:.1f}x faster than vLLM's scheduler",
           ">= 30x faster than vLLM's scheduler", mv / ms >= 30)


def case_f(runs: int, quick: bool) -> None:
    import startup_bench as SB
    n = 3 if quick else max(5, runs)
    rows = SB.measure(n)
    print("(f) ", end="")
    SB.report(rows, n)
    check = next(r for r in rows if r[0].startswith("serq check"))
    target("(f) serq check of a small program", f"{check[1]:.3f} s wall", f"< {SB.TARGET} s",
           check[1] < SB.TARGET)


SWEEP = ["examples/multi-turn/vllm.sq", "--set", "Lambda=0.3,0.6", "--set", "B=2048,4096", "--seeds", "1-3"]

# a pure-Python loop: the work two processes do at once as well as the machine allows
SPIN = "x = 0\nfor i in range(6_000_000):\n    x += i & 7\n"


def two_at_once(rounds: int = 5) -> float:
    """How much work this machine did with two CPU-bound processes at once,
    as a multiple of one's (2.0: two cores, each as fast as one alone): the
    same loop alone and two at once, taken in turn ``rounds`` times, the
    medians: what any work gains from a second process on this machine (a
    virtual machine's two cores may give much less than 2), against which a
    sweep's --jobs 2 is read; the machine's speed moves between minutes, so
    this is measured beside the sweeps."""
    cmd = [sys.executable, "-c", SPIN]

    def wall(n: int) -> float:
        t = time.perf_counter()
        ps = [subprocess.Popen(cmd) for _ in range(n)]
        for p in ps:
            p.wait()
        return time.perf_counter() - t
    one, two = [], []
    for _ in range(rounds):
        one.append(wall(1))
        two.append(wall(2))
    return 2 * statistics.median(one) / statistics.median(two)


def case_g(runs: int, quick: bool) -> None:
    """Configurations per minute of one sweep with --jobs 1 and --jobs 2, each
    the whole command, taken in turn."""
    import resource
    import tempfile
    serq = os.path.join(os.path.dirname(sys.executable), "serq")
    h = "100" if quick else "200"
    n_runs = 2 * 2 * 3
    walls = {1: [], 2: []}
    cpus = {1: [], 2: []}
    tables = {}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="serq-bench-") as tmp:
        for r in range(max(2, runs) + 1):
            for jobs in (1, 2):
                out = os.path.join(tmp, f"t{jobs}.csv")
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                p = subprocess.run([serq, "sweep"] + SWEEP + ["--horizon", h, "--jobs", str(jobs), "--out", out],
                                   cwd=ROOT, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                if p.returncode != 0:
                    print(f"(g) the sweep failed: {p.stderr.strip()[:300]}")
                    return
                if r == 0:
                    continue        # a first run of each: its bytecode written, the files read once
                walls[jobs].append(wall)
                cpus[jobs].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
                with open(out, encoding="utf-8") as f:
                    tables[jobs] = f.read()
    w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
    same = tables[1] == tables[2]
    ceiling = two_at_once()
    print(f"(g) serq sweep {' '.join(SWEEP)} --horizon {h}: {n_runs} configurations, medians of "
          f"{len(walls[1])} ({load()})")
    print(f"  this machine: two CPU-bound processes at once did {ceiling:.2f}x the work of one "
          f"(in the same minutes: what any work gains from a second process here)")
    for jobs, w in ((1, w1), (2, w2)):
        print(f"  --jobs {jobs}: {w:6.2f} s  {60 * n_runs / w:7.1f} configurations/minute  "
              f"(CPU {statistics.median(cpus[jobs]):.2f} s)")
    print(f"  --jobs 2 / --jobs 1: {w1 / w2:.2f}x the configurations per minute; tables "
          f"{'identical' if same else 'DIFFER'}")
    target(f"(g) sweep --jobs 2 (horizon {h})", f"{w1 / w2:.2f}x --jobs 1's configurations/minute "
           f"(the machine's two processes: {ceiling:.2f}x one)",
           ">= 1.8x on an idle 2-core machine", w1 / w2 >= 1.8)


def main(argv) -> int:
    quick = "--quick" in argv
    global PROFILE
    PROFILE = "--profile" in argv
    runs = 1 if quick else 3
    only = "abcdefghi"
    for k, a in enumerate(argv):
        if a == "--runs" and k + 1 < len(argv):
            runs = int(argv[k + 1])
        if a == "--only" and k + 1 < len(argv):
            only = argv[k + 1].replace(",", "")
    print(f"serq benchmark, medians of {runs} run{'s' if runs > 1 else ''}" + (" (quick)" if quick else "") +
          f"; {load()}")
    cases = {"a": case_a, "b": case_b, "c": case_c, "d": case_d, "e": case_e, "f": case_f, "g": case_g, "h": case_h,
             "i": case_i}
    for c in only:
        cases[c](runs, quick)
        sys.stdout.flush()
    if TARGETS:
        print(f"issue 22's targets ({load()}; measured on a shared machine, the lead re-measures on a quiet one):")
        for what, figure, goal, met in TARGETS:
            verdict = "not measured" if met is None else "met" if met else "MISSED"
            print(f"  {what:38s} {figure:52s} target {goal:36s} {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
