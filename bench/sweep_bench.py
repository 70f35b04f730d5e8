"""The sweep's benchmark: the wall time of a 3 × 2 × 5 sweep of
examples/multi-turn/vllm.sq (Lambda 0.3, 0.6, 0.9; B 2048, 4096; seeds 1-5)
run by `serq sweep` with --jobs 1, --jobs 2 and --dask local (a LocalCluster
of --jobs worker processes, its start and stop included), each the median of
--repeat runs, and the ratios against --jobs 1 measured in the same command;
beside each, the CPU seconds the command and its processes used (the
machine is shared: the CPU time shows what a busy machine's wall time hides).
Each run is the whole command, as a user types it (the interpreter's start
and the imports included); the three tables are checked to be identical.

    .venv/bin/python bench/sweep_bench.py [--horizon 300] [--repeat 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERQ = os.path.join(os.path.dirname(sys.executable), "serq")


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes and theirs."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=float, default=300)
    ap.add_argument("--warmup", type=float, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    base = [SERQ, "sweep", "examples/multi-turn/vllm.sq", "--set", "Lambda=0.3,0.6,0.9",
            "--set", "B=2048,4096", "--seeds", "1-5", "--horizon", f"{a.horizon:g}",
            "--warmup", f"{a.warmup:g}"]
    ways = {"--jobs 1": ["--jobs", "1"], f"--jobs {a.jobs}": ["--jobs", str(a.jobs)],
            f"--dask local ({a.jobs} workers)": ["--dask", "local", "--jobs", str(a.jobs)]}
    times = {k: [] for k in ways}
    cpu = {k: [] for k in ways}
    load0 = os.getloadavg()[0]
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.repeat):
            for i, (name, extra) in enumerate(ways.items()):
                out = os.path.join(tmp, f"t{i}.csv")
                c0 = _children_cpu()
                t0 = time.perf_counter()
                p = subprocess.run(base + extra + ["--out", out], cwd=ROOT, capture_output=True, text=True)
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(_children_cpu() - c0)
                if p.returncode != 0:
                    sys.exit(f"{name}: exit {p.returncode}\n{p.stderr}")
                with open(out, encoding="utf-8") as f:
                    tables[name] = f.read()
    same = len(set(tables.values())) == 1
    ref = statistics.median(times["--jobs 1"])
    print(f"sweep of examples/multi-turn/vllm.sq: 3 x 2 points x 5 seeds = 30 runs, horizon {a.horizon:g}, "
          f"warmup {a.warmup:g}; median of {a.repeat} (cores: {os.cpu_count()}; load average "
          f"{load0:.1f} before, {os.getloadavg()[0]:.1f} after)")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:28s} {m:6.1f} s   {ref / m:4.2f}x   (runs: {', '.join(f'{t:.1f}' for t in ts)}; "
              f"CPU {statistics.median(cpu[name]):.1f} s)")
    print(f"  tables identical: {'yes' if same else 'NO'}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
