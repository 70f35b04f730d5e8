"""The fuzz driver (``make fuzz``): run mutants, count outcomes, write findings.

    python -m tests.fuzz run [--kind KIND|all] [--n N] [--seed S]
                             [--start K] [--found DIR] [--summary FILE]
    python -m tests.fuzz replay FILE.json

The kinds are tests/fuzz/mutate.py's KINDS (``all``: every one but
``signals``, which sends signals to processes and is run on its own).
Mutant ``i`` of a kind and seed is the same on every machine, so a run of
``--n N --start K`` is the chunk [K, K+N) of one sequence.  A finding
(``check.Outcome.finding``) is written to ``DIR/<kind>-s<seed>-<i>.json``
(the input, the outcome, the traceback and the command that reproduces it),
at most ``PER_CLASS`` files per class; the exit status is 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from . import check, corpus, mutate

PER_CLASS = 5


def run(kind: str, n: int, seed: int, start: int, found: str, quiet: bool) -> dict:
    counts = {s: 0 for s in ("ok", "error", "unlocated", "crash", "timeout", "past", "wrong", "lost", "orphan")}
    classes: dict[str, list] = {}
    t0 = time.monotonic()
    for i in range(start, start + n):
        m = mutate.make(kind, mutate.seeded(kind, seed, i), index=i if kind == "numeric" else None)
        o = check.outcome(m)
        counts[o.status] += 1
        if o.finding:
            seen = classes.setdefault(o.where, [])
            seen.append(i)
            if len(seen) <= PER_CLASS:
                _write(found, kind, seed, i, m, o)
        if not quiet and (i + 1 - start) % 1000 == 0:
            print(f"  {kind}: {i + 1 - start}/{n} ({time.monotonic() - t0:.0f} s) "
                  + ", ".join(f"{k} {v}" for k, v in counts.items() if v), file=sys.stderr, flush=True)
    wall = time.monotonic() - t0
    print(f"fuzz {kind}: {n} mutants (seed {seed}, {start}..{start + n - 1}) in {wall:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for where, ids in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):6d}  {where}  (e.g. #{ids[0]})")
    out = {"kind": kind, "seed": seed, "start": start, "n": n, "counts": counts,
           "classes": {w: len(ids) for w, ids in classes.items()}, "seconds": round(wall, 1)}
    if kind == "signals":       # how the commands ended: done, stopped, early (tests/fuzz/interrupts.py)
        from .interrupts import TALLY
        print("  " + ", ".join(f"{k} {v}" for k, v in sorted(TALLY.items())))
        out["endings"] = dict(TALLY)
    return out


def _write(found: str, kind: str, seed: int, i: int, m: mutate.Mutant, o: check.Outcome) -> None:
    os.makedirs(found, exist_ok=True)
    name = os.path.join(found, f"{kind}-s{seed}-{i}.json")
    rec = m.record()
    rec.update({"seed": seed, "index": i, "status": o.status, "where": o.where, "detail": o.detail,
                "traceback": o.trace,
                "reproduce": f".venv/bin/python -m tests.fuzz replay {name}"})
    with open(name, "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")


def replay(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        rec = json.load(f)
    m = mutate.Mutant.from_record(rec)
    print(f"{m.kind} mutant of {m.example}: {m.what}")
    o = check.outcome(m)
    print(f"outcome: {o.status} {o.where}")
    print(o.trace or o.detail)
    return 1 if o.finding else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--kind", choices=mutate.KINDS + ("all",), default="all")
    r.add_argument("--n", type=int, default=1000)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--start", type=int, default=0)
    r.add_argument("--found", default=os.path.join("tests", "fuzz", "found"))
    r.add_argument("--summary", help="append the counts as one JSON line to this file")
    r.add_argument("--quiet", action="store_true")
    p = sub.add_parser("replay")
    p.add_argument("file")
    args = ap.parse_args(argv)
    os.chdir(corpus.ROOT)
    if args.cmd == "replay":
        return replay(args.file)
    kinds = tuple(k for k in mutate.KINDS if k != "signals") if args.kind == "all" else (args.kind,)
    bad = 0
    for kind in kinds:
        s = run(kind, args.n, args.seed, args.start, args.found, args.quiet)
        bad += sum(v for k, v in s["counts"].items() if k not in ("ok", "error"))
        if args.summary:
            with open(args.summary, "a", encoding="utf-8") as f:
                f.write(json.dumps(s, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
