#!/usr/bin/env python3
"""Regression harness for the simulator (serq/sim/): a change that is meant
to make the simulator faster must not change what it computes, to the byte.

    .venv/bin/python tools/sim_regress.py capture DIR   # programs the tests simulate
    .venv/bin/python tools/sim_regress.py record DIR    # reference reports, this code
    .venv/bin/python tools/sim_regress.py compare DIR   # the same runs, compared

``record`` runs every case of the corpus and writes one file per case under
DIR/ref/; ``compare`` runs them again with the code as it is now and reports
each case whose output differs (exit 1 when one does).  The harness runs the
``serq`` of the tree it is in, so the reference is recorded from a copy of
the code before the change:

    git archive HEAD | tar -x -C /tmp/before
    cp tools/sim_regress.py /tmp/before/tools/
    (cd /tmp/before && /path/to/.venv/bin/python tools/sim_regress.py capture /tmp/reg)
    (cd /tmp/before && /path/to/.venv/bin/python tools/sim_regress.py record /tmp/reg)
    .venv/bin/python tools/sim_regress.py compare /tmp/reg

``-k TEXT`` runs only the cases whose name contains TEXT; ``-j N`` runs N at
once (2 by default); ``--no-strokes`` runs every case step by step
(``simulate(strokes=False)``), so that a reference recorded with strokes also
holds the step-by-step path to the same bytes.  A case's output is
``json.dumps(report.data(), sort_keys=True)``, the text report, every
observation's samples (``report.samples``, what ``--dump`` writes), the gauge
change points, the step log and the stuck count, or the error (code, message
and location) when the run stops with a ``RunError``.

The corpus:

* every example program (examples/**/*.sq except examples/lib), linked on
  several seeds and horizons (the papers on their own clocks), and a few
  with ``--arrivals N``;
* the benchmark's hand-built IR programs (bench/programs.py);
* random programs (``random_program``): nests of runs on fifo, ps and delay
  stages, sets and observes with draws of every distribution, holds,
  branches, loops, forks and joins, `end`, multi-turn sessions, on open,
  closed and renewal workloads;
* with ``capture`` first: every program the simulator's tests hand to
  ``simulate`` (tests/sim, tests/claims, tests/test_oracle.py), stored as IR
  JSON with the options it was run with (``step_log``; a ``check_hook`` is
  replayed as a no-op hook, which takes the run loop's other path).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

SEEDS = (1, 2, 7)

# (example, horizons); warm-up is a tenth of the horizon
HORIZONS = {
    "examples/single-turn/mg1.sq": (50.0, 2_000.0, 100_000.0),
    "examples/single-turn/ps.sq": (50.0, 2_000.0, 20_000.0),
    "examples/multi-turn/closed.sq": (50.0, 2_000.0, 20_000.0),
    "examples/papers/dai_sarathi.sq": (1e6, 5e6),
    "examples/papers/dai_fastertransformer.sq": (1e6, 5e6),
    "examples/papers/bari_rad.sq": (1e6, 1e7),
    "examples/papers/kong_svf.sq": (1e4, 1e5),
}
DEFAULT_HORIZONS = (30.0, 120.0, 300.0)
RANDOM_PROGRAMS = 150
ARRIVALS = {  # example -> (--arrivals N, horizon)
    "examples/single-turn/mg1.sq": (200, 1e6),
    "examples/single-turn/ps.sq": (200, 1e6),
    "examples/multi-turn/vllm.sq": (20, 1e5),
    "examples/subagent/vllm_subagents.sq": (10, 1e5),
}


def examples() -> list:
    # tools/examples.py's list, written out: this file is copied alone into
    # the tree a reference is recorded from
    out = []
    for p in glob.glob(os.path.join(ROOT, "examples", "**", "*.sq"), recursive=True):
        rel = os.path.relpath(p, ROOT).replace(os.sep, "/")
        if not rel.startswith("examples/lib/") and "/instances/" not in rel:
            out.append(rel)
    return sorted(out)


def cases(d: str) -> list:
    """Every case: (name, kind, spec)."""
    out = []
    for ex in examples():
        for h in HORIZONS.get(ex, DEFAULT_HORIZONS):
            for seed in SEEDS:
                out.append((f"{ex}@h{h:g}s{seed}", "example", {"path": ex, "horizon": h, "warmup": h / 10,
                                                               "seed": seed}))
        if ex in ARRIVALS:
            n, h = ARRIVALS[ex]
            for seed in SEEDS[:2]:
                out.append((f"{ex}@n{n}s{seed}", "example", {"path": ex, "horizon": h, "warmup": 0.0,
                                                             "seed": seed, "arrivals": n}))
    for seed in SEEDS:
        out.append((f"bench:mm1 s{seed}", "bench", {"name": "mm1", "seed": seed, "horizon": 20_000.0}))
        out.append((f"bench:vllm s{seed}", "bench", {"name": "vllm", "seed": seed, "horizon": 60.0}))
    for n in range(RANDOM_PROGRAMS):
        for seed in SEEDS[:2]:
            out.append((f"random:{n}s{seed}", "random", {"program": n, "horizon": 60.0, "warmup": 6.0,
                                                         "seed": seed}))
    cap = os.path.join(d, "captured")
    for path in sorted(glob.glob(os.path.join(cap, "*.json"))):
        out.append((f"captured:{os.path.basename(path)[:-5]}", "captured", {"file": path}))
    return out


DISTS = ("~exp(1)", "~exp(x + 1)", "~h2(1, 4)", "~h2(s + 1, 2)", "~uniform(0, 2)", "~uniform(x, x + 1)",
         "~bernoulli(0.5)", "~bernoulli(s / 4)", "~erlang(3, 1)", "~det(2)", "~exp(~exp(1))")


def random_program(seed: int) -> str:
    """A random program (its text), from ``seed``."""
    import random
    r = random.Random(seed)
    holds = r.random() < 0.5
    forks = r.random() < 0.5
    n_obs = [0]

    def expr():
        return r.choice(["x + 1", "s * 2", "now - t0", "x > 2", "s == 1 ? 1 : 2", "min(s, x)", "max(s, 3) / 2",
                         "floor(s)", "ceil(x / 3)"] + list(DISTS))

    def block(depth: int, in_fork: bool) -> str:
        out = []
        for _ in range(r.randint(1, 4)):
            kinds = ["run", "run", "set", "observe", "draw"]
            if depth < 3:
                kinds += ["branch", "while"] + (["hold"] if holds else []) + (["fork"] if forks and not in_fork else [])
            k = r.choice(kinds)
            if k == "run":
                st = r.choice("abcd")
                out.append(f"run {st} (cost({st}, {r.choice(['s', '1', 'u', '0', 's / 2'])}));")
            elif k == "set":
                out.append(f"set x = {expr()};")
            elif k == "draw":
                out.append(f"set u = {r.choice(DISTS)};")
            elif k == "observe":
                n_obs[0] += 1
                out.append(f"observe o{n_obs[0] % 3} = {expr()};")
            elif k == "hold":
                pl = r.choice("pq")
                out.append(f"hold {pl} (cost({pl}, 1)) {{ {block(depth + 1, in_fork)} }}")
            elif k == "branch":
                out.append(f"branch ({r.choice(['s > 2', 'x > 1', 'u > 1'])}) {{ {block(depth + 1, in_fork)} }} "
                           f"else {{ {block(depth + 1, in_fork)} }}")
            elif k == "while":
                v = f"r{depth}"
                out.append(f"set {v} = {r.randint(1, 3)}; while ({v} > 0) {{ {block(depth + 1, in_fork)} "
                           f"run a (cost(a, 1)); set {v} = {v} - 1; }}")
            else:
                out.append(f"fork {{ {block(depth + 1, True)} }} join;")
        return " ".join(out)

    arrive = r.choice(["poisson(0.7)", "poisson(2)", "closed(3)", "renewal(~exp(1))", "renewal(~uniform(0.5, 1))"])
    turn = " ".join(f"set {v} = {r.choice(DISTS)};" for v in ("s", "w")[:r.randint(1, 2)])
    session = ""
    if r.random() < 0.4:
        session = ("session { turn; set k = 0; while (k < 2) { set k = k + 1; tool (~exp(1)); turn; } }"
                   if r.random() < 0.5 else "session { loop { turn; tool (~exp(2)); } }")
    init = "init { set z = ~exp(1); }" if r.random() < 0.3 else ""
    end = " end;" if r.random() < 0.1 else ""
    pools = "  pool p { cap 4; }\n  pool q { cap 3; }\n" if holds else ""
    return ('use "std/args";\nfn main() {\n'
            "  stage a : fifo;\n  stage b : ps(2);\n  stage c : delay;\n  stage d : fifo(2);\n" + pools +
            f"  workload {{ arrive {arrive}; {init} turn {{ {turn} }} {session} }}\n"
            # (a session takes time: a closed workload's next session arrives when one ends)
            f"  server {{ set x = 0; set u = 1; set t0 = now; run c (cost(c, 0.01)); {block(0, False)} "
            f"observe sojourn = now - t0;{end} }}\n"
            "}\n")


def build(kind: str, spec: dict):
    """The program of a case and the keyword arguments of its run."""
    if kind == "example":
        from serq.link import compile_file
        kw = {k: spec[k] for k in ("horizon", "warmup", "seed")}
        if "arrivals" in spec:
            kw["arrivals"] = spec["arrivals"]
        return compile_file(os.path.join(ROOT, spec["path"]), **kw), {}
    if kind == "random":
        from serq.link import compile_source
        kw = {k: spec[k] for k in ("horizon", "warmup", "seed")}
        return compile_source(random_program(spec["program"]), f"random{spec['program']}.sq", **kw), {}
    if kind == "bench":
        import programs
        h = spec["horizon"]
        if spec["name"] == "mm1":
            return programs.mm1(horizon=h, warmup=h / 10, seed=spec["seed"]), {}
        return programs.vllm(horizon=h, warmup=h / 10, seed=spec["seed"], out=180.0, Lambda=0.4), {}
    from serq.ir import codec
    with open(spec["file"], encoding="utf-8") as f:
        rec = json.load(f)
    kw = {"step_log": rec["step_log"]}
    if rec["hook"]:
        kw["check_hook"] = _noop
    return codec.from_data(rec["ir"]), kw


def _noop(sim):
    pass


STROKES = True     # --no-strokes: every run step by step


def run_case(kind: str, spec: dict) -> str:
    """What a case computes, as one string."""
    from serq.diag import SerqError
    from serq.sim import simulate
    try:
        prog, kw = build(kind, spec)
    except SerqError as e:
        return "LINK ERROR\n" + e.render()
    if not STROKES:
        kw["strokes"] = False
    try:
        rep = simulate(prog, **kw)
    except SerqError as e:
        return "RUN ERROR\n" + e.render()
    # what the run computed, not where it was made: the `made` section names the
    # program's path and the digest of its IR, which differ between two copies of the tree
    data = rep.data()
    data.pop("made", None)
    text = "\n".join(line for line in rep.text().split("\n") if not line.startswith("made:"))
    parts = ["DATA", json.dumps(data, sort_keys=True), "TEXT", text, "STUCK", str(rep.stuck_sessions)]
    for name, ts, ss, ks, vs in rep._samples:
        parts.append(f"SAMPLES {name}")
        parts.append(json.dumps([ts, ss, ks, vs]))
    for name, pts in rep._gauge_pts:
        parts.append(f"GAUGE {name}")
        parts.append(json.dumps(pts))
    if rep.step_log is not None:
        parts.append("STEPLOG")
        parts.append(json.dumps(rep.step_log, sort_keys=True))
    return "\n".join(parts) + "\n"


def fname(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:16] + ".txt"


def _work(args):
    name, kind, spec = args
    t = time.perf_counter()
    try:
        out = run_case(kind, spec)
    except Exception:  # noqa: BLE001 - a crash is an output too
        out = "CRASH\n" + traceback.format_exc().splitlines()[-1]
    return name, out, time.perf_counter() - t


def _run_all(d: str, jobs: int, only: str | None):
    todo = [c for c in cases(d) if only is None or only in c[0]]
    if jobs > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(jobs) as pool:
            yield from pool.imap_unordered(_work, todo)
    else:
        for c in todo:
            yield _work(c)


def record(d: str, jobs: int, only) -> int:
    ref = os.path.join(d, "ref")
    os.makedirs(ref, exist_ok=True)
    n = 0
    total = 0.0
    for name, out, dt in _run_all(d, jobs, only):
        with open(os.path.join(ref, fname(name)), "w", encoding="utf-8") as f:
            f.write(name + "\n" + out)
        n += 1
        total += dt
    print(f"recorded {n} cases in {ref} ({total:.1f} s of runs)")
    return 0


def compare(d: str, jobs: int, only) -> int:
    ref = os.path.join(d, "ref")
    same = differ = missing = 0
    total = 0.0
    for name, out, dt in _run_all(d, jobs, only):
        total += dt
        p = os.path.join(ref, fname(name))
        if not os.path.exists(p):
            missing += 1
            print(f"MISSING reference: {name}")
            continue
        with open(p, encoding="utf-8") as f:
            want = f.read()
        got = name + "\n" + out
        if want == got:
            same += 1
        else:
            differ += 1
            wl, gl = want.splitlines(), got.splitlines()
            k = next((i for i, (a, b) in enumerate(zip(wl, gl)) if a != b), min(len(wl), len(gl)))
            a = wl[k][:300] if k < len(wl) else "<end>"
            b = gl[k][:300] if k < len(gl) else "<end>"
            print(f"DIFFER {name}: line {k}\n  ref: {a}\n  now: {b}")
    print(f"{same} byte-identical, {differ} differ, {missing} without reference ({total:.1f} s of runs)")
    return 1 if differ or missing else 0


# -- capture: the programs the tests simulate ---------------------------------

PLUGIN = '''
import hashlib, json, os
import serq.sim as _sim
from serq.ir import codec as _codec
_DIR = os.environ["SIM_REGRESS_CAPTURE"]
_orig = _sim.simulate
_seen = set()

def simulate(program, *, progress=False, check_hook=None, step_log=False, **kw):
    try:
        ir = _codec.to_data(program)
        if program.trace is not None and os.path.exists(program.trace):
            # a test's trace lives in a temporary directory: keep a copy
            with open(program.trace, "rb") as f:
                data = f.read()
            name = hashlib.sha1(data).hexdigest()[:20] + ".csv"
            path = os.path.join(_DIR, "traces", name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            ir["trace"] = path
        rec = {"ir": ir, "step_log": bool(step_log), "hook": check_hook is not None}
        text = json.dumps(rec, sort_keys=True)
        h = hashlib.sha1(text.encode()).hexdigest()[:20]
        if h not in _seen:
            _seen.add(h)
            with open(os.path.join(_DIR, h + ".json"), "w", encoding="utf-8") as f:
                f.write(text)
    except Exception:
        pass
    return _orig(program, progress=progress, check_hook=check_hook, step_log=step_log, **kw)

_sim.simulate = simulate
'''


def capture(d: str) -> int:
    cap = os.path.join(d, "captured")
    os.makedirs(cap, exist_ok=True)
    plug_dir = os.path.join(d, "plugin")
    os.makedirs(plug_dir, exist_ok=True)
    with open(os.path.join(plug_dir, "sim_regress_capture.py"), "w", encoding="utf-8") as f:
        f.write(PLUGIN)
    env = dict(os.environ, SIM_REGRESS_CAPTURE=cap,
               PYTHONPATH=plug_dir + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "sim_regress_capture", "-p", "no:cacheprovider",
           "tests/sim", "tests/claims", "tests/test_oracle.py"]
    r = subprocess.run(cmd, cwd=ROOT, env=env)
    print(f"captured {len(glob.glob(os.path.join(cap, '*.json')))} programs in {cap}")
    return r.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("capture", "record", "compare"))
    ap.add_argument("dir")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-k", "--only", default=None, help="only the cases whose name contains this")
    ap.add_argument("--no-strokes", action="store_true", help="run every case step by step")
    a = ap.parse_args(argv)
    global STROKES
    STROKES = not a.no_strokes
    import serq
    print(f"serq from {os.path.dirname(serq.__file__)}", file=sys.stderr)
    if a.command == "capture":
        return capture(a.dir)
    if a.command == "record":
        return record(a.dir, a.jobs, a.only)
    return compare(a.dir, a.jobs, a.only)


if __name__ == "__main__":
    sys.exit(main())
