"""The instructions one run of a benchmark case executes, counted by
valgrind's cachegrind: a figure that does not move with the machine's load
(on a shared 2-core VM a run's wall and CPU times move by 20 % from one
minute to the next), so that a change to the simulator can be measured in
one pass, before against after.

    .venv/bin/python bench/instructions.py [--only a,b,c,e,h,s] [--base DIR] [--repeat N] [--quick]

Each case is linked once, here, and its IR written to a file; it is counted
as the instructions of a process that reads that IR and simulates it twice,
less those of one that simulates it once: the second ``simulate()`` alone,
its program's code already generated (as every run of bench/bench.py after
its first).  (Linking in the counted processes would add Z3's work, which
differs from one process to the next by more than a change measures.)  What
is left still moves by about 2 % of a run from one process to the next
(seen on the M/M/1: the imports and the IR's reading count the same to the
instruction, a run does not; garbage collection is not the cause), so a
change of a few per cent wants the count repeated (``--repeat N``: the
median of N).  ``--base DIR``: the same
counted with the ``serq`` of another tree (say a worktree of the commit
before the change: ``git worktree add /tmp/base HEAD~1``), and the change.

(a) bench/vllm_overview.sq at horizon 600; (b) the replay of bench/traces.py's
first 100 sessions; (c) the M/M/1 of examples/single-turn/mg1.sq at horizon
20 000; (e) the Mooncake replay of bench/prefix_bench.py, its first 500
requests (a content-addressed pool under a full cache; skipped, saying why,
where Mooncake's trace is absent); (h) the overview's program as a large
engine (256 sequences, 30 000 blocks, 40 arrivals/s) at horizon 30; (s)
examples/engines/sglang.sq (an engine whose schedule is an `iteration`
body, a radix tree of one-token pages) with 32 running requests at 2.67
arrivals/s, horizon 30.  Under
valgrind each takes 20-90 s (``--quick``: each about a tenth of the run, a few
seconds).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = "abcehs"


def program(case: str, quick: bool = False):
    """The case's linked program (``quick``: a tenth of it or so); None where
    its data is absent."""
    from serq.link import compile_file
    if case == "a":
        return compile_file(os.path.join(HERE, "vllm_overview.sq"), horizon=60.0 if quick else 600.0, seed=1)
    if case == "b":
        sys.path.insert(0, HERE)
        from serq.oracle import replay
        from traces import trace
        t = trace()
        t = dict(t, sessions=t["sessions"][:20 if quick else 100])
        return replay.with_sessions(compile_file(os.path.join(ROOT, replay.PROGRAM), sets=replay.inputs(t),
                                                 horizon=replay.horizon(t)), t)
    if case == "c":
        return compile_file(os.path.join(ROOT, "examples", "single-turn", "mg1.sq"), horizon=2_000.0 if quick else 20_000.0,
                            warmup=0.0, seed=1)
    if case == "e":
        sys.path.insert(0, HERE)
        import prefix_bench
        from serq.oracle.programs import mooncake_program
        from serq.oracle import mooncake
        spec = prefix_bench.spec()
        if not os.path.exists(spec["trace"]):
            return None
        spec = dict(spec, count=100 if quick else 500)
        return mooncake_program(mooncake.check(spec, prefix_bench.SPEC, os.path.dirname(prefix_bench.SPEC)))
    if case == "h":
        return compile_file(os.path.join(HERE, "vllm_overview.sq"), horizon=5.0 if quick else 30.0, seed=1,
                            sets={"max_seqs": "256", "blocks": "30000", "Lambda": "40"})
    if case == "s":
        return compile_file(os.path.join(ROOT, "examples", "engines", "sglang.sq"), horizon=3.0 if quick else 30.0,
                            seed=1, sets={"Lambda": "2.67", "max_running": "32"})
    raise SystemExit(f"bench/instructions.py: no case {case!r} (the cases are {', '.join(CASES)})")


def child(ir_path: str, runs: int) -> None:
    """(in the counted process) read the IR and simulate it ``runs`` times."""
    import gc
    from serq import ir
    from serq.sim import simulate
    with open(ir_path, encoding="utf-8") as f:
        prog = ir.loads(f.read(), ir_path)
    # what the imports and the link left is out of the collector's reach: its
    # collections in the runs traverse the runs' own objects alone, not a
    # number that differs from one tree to another (compiled from source or
    # read from bytecode)
    gc.collect()
    gc.freeze()
    for _ in range(runs):
        simulate(prog, samples=False)


def count(tree: str, ir_path: str, runs: int) -> int:
    """The instructions of a process that runs ``child(ir_path, runs)`` with
    the serq of ``tree``."""
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")   # the same dicts and sets in every process
    p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                        sys.executable, os.path.abspath(__file__), "--child", ir_path, str(runs)],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"bench/instructions.py: {tree}'s serq failed under valgrind:\n{p.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def one_run(tree: str, ir_path: str, repeat: int) -> int:
    import statistics
    return int(statistics.median(count(tree, ir_path, 2) - count(tree, ir_path, 1) for _ in range(repeat)))


def main(argv: list) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]))
        return 0
    only, base, repeat = CASES, None, 1
    quick = "--quick" in argv
    for k, a in enumerate(argv):
        if a == "--only" and k + 1 < len(argv):
            only = argv[k + 1].replace(",", "")
        if a == "--base" and k + 1 < len(argv):
            base = os.path.abspath(argv[k + 1])
        if a == "--repeat" and k + 1 < len(argv):
            repeat = max(1, int(argv[k + 1]))
    if shutil.which("valgrind") is None:
        print("bench/instructions.py: valgrind is not installed (apt install valgrind)")
        return 1
    import tempfile
    from serq import ir
    print("instructions of one simulate() of each case (valgrind's cachegrind; millions)")
    with tempfile.TemporaryDirectory(prefix="serq-instructions-") as tmp:
        for case in only:
            ir_path = os.path.join(tmp, f"{case}.json")
            prog = program(case, quick)
            if prog is None:
                import prefix_bench
                print(f"  ({case}) skipped: Mooncake's trace is not there ({prefix_bench.trace_path()})")
                continue
            with open(ir_path, "w", encoding="utf-8") as f:
                f.write(ir.dumps(prog))
            now = one_run(ROOT, ir_path, repeat)
            if base is None:
                print(f"  ({case}) {now / 1e6:10.1f} M")
            else:
                then = one_run(base, ir_path, repeat)
                print(f"  ({case}) {then / 1e6:10.1f} M in {base}  ->  {now / 1e6:10.1f} M here  "
                      f"({100.0 * (now - then) / then:+.1f} %)")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
