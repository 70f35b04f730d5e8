"""The start-up of every command (issue 22): each command run as a user runs
it, a new process each time, on a small program; the median wall time of
``--runs`` runs and the median CPU time (user + system, which a loaded
machine inflates less than the wall), beside ``python -c pass`` and
``serq --help`` measured in the same run.

    .venv/bin/python bench/startup_bench.py [--runs N] [--quick]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.dirname(sys.executable)
SERQ = os.path.join(BIN, "serq")
MG1 = "examples/single-turn/mg1.sq"
TARGET = 0.2    # `serq check` of a small program, seconds of wall (issue 22)


def commands(tmp: str) -> list:
    """(label, argv): every command on a small program."""
    scenario = os.path.join("tools", "oracle", "scenarios", "hol.json")
    table = os.path.join(tmp, "t.csv")
    out = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("serq --help", [SERQ, "--help"]),
        ("serq check (mg1.sq)", [SERQ, "check", MG1]),
        ("serq ir (mg1.sq)", [SERQ, "ir", MG1, "--horizon", "10"]),
        ("serq run (mg1.sq, horizon 10)", [SERQ, "run", MG1, "--horizon", "10"]),
        ("serq draw (mg1.sq)", [SERQ, "draw", MG1, "--out", os.path.join(tmp, "d.svg")]),
        ("serq sweep (mg1.sq, 2 points)", [SERQ, "sweep", MG1, "--set", "lambda=0.3,0.5", "--horizon", "10",
                                           "--jobs", "1", "--out", table]),
        ("serq plot (that table)", [SERQ, "plot", table, "--x", "lambda", "--y", "sojourn.mean",
                                    "--out", os.path.join(tmp, "p.svg")]),
        ("serq target (vllm.sq)", [SERQ, "target", "examples/multi-turn/vllm.sq", "--engine", "vllm"]),
    ]
    if os.path.exists(os.path.join(ROOT, scenario)):
        out.append(("serq oracle run (hol.json)", [SERQ, "oracle", "run", scenario]))
    return out


# as an installed serq runs: its modules' bytecode cached (a shell may say
# PYTHONDONTWRITEBYTECODE, which would make every start compile serq anew)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def once(argv: list) -> tuple[float, float, int]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rc = subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), rc


def measure(runs: int, only=None) -> list:
    """[(label, median wall, median cpu, exit status)], the commands taken in
    turn within each round, so that a change in the machine's load falls on
    every command alike."""
    with tempfile.TemporaryDirectory(prefix="serq-startup-") as tmp:
        cmds = [c for c in commands(tmp) if only is None or c[0] in only]
        walls = {c[0]: [] for c in cmds}
        cpus = {c[0]: [] for c in cmds}
        rcs = {}
        for label, argv in cmds:     # a first run of each writes its bytecode
            once(argv)
        for _ in range(runs):
            for label, argv in cmds:
                w, c, rc = once(argv)
                walls[label].append(w)
                cpus[label].append(c)
                rcs[label] = rc
        return [(label, statistics.median(walls[label]), statistics.median(cpus[label]), rcs[label])
                for label, _ in cmds]


def load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:   # pragma: no cover
        return "load average unknown"
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def report(rows: list, runs: int) -> None:
    print(f"start-up of each command: medians of {runs} runs, a new process each ({load()})")
    base = {label: wall for label, wall, _, _ in rows}
    py = base.get("python -c pass")
    for label, wall, cpu, rc in rows:
        extra = f"  {wall / py:4.1f}x python's start" if py and label != "python -c pass" else ""
        bad = "" if rc == 0 else f"  (exit {rc})"
        print(f"  {label:32s} {wall * 1000:7.0f} ms wall  {cpu * 1000:6.0f} ms cpu{extra}{bad}")
    check = next((r for r in rows if r[0].startswith("serq check")), None)
    if check is not None:
        verdict = "met" if check[1] < TARGET else f"missed by {check[1] / TARGET:.2f}x on this machine now"
        print(f"  serq check of a small program: {check[1]:.3f} s wall (target < {TARGET} s: {verdict})")


def main(argv) -> int:
    runs = 3 if "--quick" in argv else 9
    for k, a in enumerate(argv):
        if a == "--runs" and k + 1 < len(argv):
            runs = int(argv[k + 1])
    report(measure(runs), runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
