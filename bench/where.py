"""Where a run's time goes (``bench/bench.py --profile``, ``make bench
PROFILE=1``): one more run of a benchmark's program under cProfile, its
functions' own time summed by the part of the simulator they belong to, and
the functions that take the most.  Shares of the profiled time; cProfile
adds a roughly constant cost to every call, so a part made of many small
calls reads larger than it is unprofiled (the wall figures are the timed
runs', not this one's).

    .venv/bin/python bench/where.py [a|b|c|e]     # one case on its own
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys

# (the start of a function's file, relative to the repository, or of its
# name for code that has no file) -> the part it belongs to; the first that
# matches; a built-in function is counted with its caller's part
PARTS = (
    ("<serq ", "generated code (arrivals, completions, the sessions' segments)"),
    ("serq/sim/stroke.py", "strokes (identical iterations in one go)"),
    ("serq/sim/step.py", "the engine's iteration (plan, serve, admit, end)"),
    ("serq/sim/pools/", "pools (admission, growth, eviction, the prefix cache)"),
    ("serq/sim/machine.py", "the event loop"),
    ("serq/sim/interp.py", "the threads' interpreter"),
    ("serq/sim/threads.py", "the threads' interpreter"),
    ("serq/sim/record.py", "recording (observations, the client's view)"),
    ("serq/sim/stats.py", "the report's statistics"),
    ("serq/sim/report.py", "the report's statistics"),
    ("serq/sim/rng.py", "random streams"),
    ("serq/sim/codegen.py", "making the run (codegen, compile)"),
    ("serq/sim/compile.py", "making the run (codegen, compile)"),
    ("serq/ir/", "the IR's digest (the report's `made`)"),
    ("serq/about.py", "the IR's digest (the report's `made`)"),
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def part_of(filename: str) -> str:
    rel = os.path.relpath(filename, ROOT).replace(os.sep, "/") if os.path.isabs(filename) else filename
    for start, part in PARTS:
        if rel.startswith(start):
            return part
    if rel.startswith("serq/"):
        return rel
    return "other (Python's library)"


def profile(fn, *args, **kw):
    """``fn(*args, **kw)`` under cProfile, summed (:func:`summary`)."""
    prof = cProfile.Profile()
    prof.runcall(fn, *args, **kw)
    return summary(pstats.Stats(prof).stats)


def summary(stats: dict):
    """A profile's functions (``pstats.Stats.stats``) by part: the parts
    (part, own seconds) largest first, the functions (own seconds, calls,
    name) largest first, the total.  A built-in's own time is shared among
    the parts of the functions that called it, by their calls; one no
    function called is the library's."""
    own: dict = {}
    top = []

    def add(part, t):
        own[part] = own.get(part, 0.0) + t

    for (filename, line, name), (_cc, nc, tt, _ct, callers) in stats.items():
        if filename == "~":
            calls = sum(c[1] for c in callers.values())
            if not calls:
                add(part_of(filename), tt)
            for (cf, _cl, _cn), c in callers.items():
                add(part_of(cf), tt * c[1] / calls)
            top.append((tt, nc, name))
            continue
        add(part_of(filename), tt)
        where = filename if filename.startswith("<") else os.path.relpath(filename, ROOT)
        top.append((tt, nc, f"{where}:{line}({name})"))
    top.sort(key=lambda x: -x[0])
    return sorted(own.items(), key=lambda kv: -kv[1]), top, sum(own.values())


def report(label: str, fn, *args, n_top: int = 8, **kw) -> None:
    parts, top, total = profile(fn, *args, **kw)
    print(f"  where the time goes ({label}; one run under cProfile, {total:.2f} s profiled):")
    for p, s in parts:
        if s / total >= 0.005:
            print(f"    {100 * s / total:5.1f} %  {p}")
    print("    the functions of most own time:")
    for tt, nc, name in top[:n_top]:
        print(f"    {100 * tt / total:5.1f} %  {nc:>8} calls  {name}")


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench
    sys.exit(bench.main(["--profile", "--runs", "1", "--only", ",".join(sys.argv[1:]) or "a,b,c"]))
