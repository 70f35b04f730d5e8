#!/usr/bin/env python3
"""`make check`: every example links, and every committed generated file is
what the code generates now.  `--write-golden` rewrites tests/golden/."""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from serq.diag import SerqError  # noqa: E402
from tools.examples import programs  # noqa: E402
from tools.generated import check_generated, report, same_program  # noqa: E402

GOLDEN_HORIZON = 100.0

# The example data serq makes: path -> the options of `serq mooncake-trace`
# that make it (examples/replay/data/README.md); `make golden` rewrites it
GENERATED_TRACES = {os.path.join("examples", "replay", "data", "mooncake_generated.jsonl"): {"requests": 600}}


def examples() -> list[str]:
    return programs()


def golden_ir_path(example: str) -> str:
    rel = os.path.relpath(example, "examples")
    return os.path.join("tests", "golden", "ir", rel[:-3].replace(os.sep, "__") + ".ir.json")


def golden_ir(example: str) -> str:
    from serq.ir import dumps
    from serq.link import compile_file
    return dumps(compile_file(example, horizon=GOLDEN_HORIZON))


def generated_traces() -> list[tuple[str, str]]:
    from serq import mooncake
    return [(path, mooncake.text(mooncake.generate(**opts))) for path, opts in GENERATED_TRACES.items()]


def oracle_ir_files() -> list[tuple[str, str, str]]:
    """(kind, input, IR path) of every committed oracle IR file."""
    out = []
    for path in sorted(glob.glob("tools/oracle/scenarios/*.json")):
        if path.endswith((".out.json", ".log.json", ".ir.json")):
            continue
        out.append(("scenario", path, path[:-5] + ".ir.json"))
    for path in sorted(glob.glob("tools/oracle/traces/*.json")):
        if path.endswith((".out.json", ".ir.json")):
            continue
        out.append(("trace", path, path[:-5] + ".ir.json"))
    return out


def oracle_ir(kind: str, path: str) -> str:
    from serq.cli import scenario_program, trace_program
    from serq.ir import dumps
    _, p = (scenario_program if kind == "scenario" else trace_program)(path)
    return dumps(p)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-golden", action="store_true")
    ap.add_argument("--write-oracle-ir", action="store_true")
    args = ap.parse_args()
    os.chdir(ROOT)
    failures = 0
    pairs = []
    for kind, src, ir_path in oracle_ir_files():
        try:
            pairs.append((ir_path, oracle_ir(kind, src)))
        except SerqError as e:
            print(e.render(), file=sys.stderr)
            print(f"FAIL: {src} does not compile", file=sys.stderr)
            failures += 1
    if args.write_oracle_ir:
        if failures:     # a refused input: nothing is written
            print(f"oracle-ir: {failures} scenario(s) refused; nothing written", file=sys.stderr)
            return 1
        failures += report(check_generated(pairs, True, source=same_program))
        if not failures:
            print(f"wrote {len(pairs)} oracle IR files")
        return 1 if failures else 0
    failures += report(check_generated(pairs, False, "run `make oracle-ir`"))
    from serq.link import compile_file
    golden = []
    for ex in examples():
        try:
            compile_file(ex)
        except SerqError as e:
            print(e.render(), file=sys.stderr)
            print(f"FAIL: {ex} does not link", file=sys.stderr)
            failures += 1
            continue
        golden.append((golden_ir_path(ex), golden_ir(ex)))
    if args.write_golden and failures:
        print(f"check: {failures} problem(s); no golden file written", file=sys.stderr)
        return 1
    paths = [p for p, _ in golden]
    clash = sorted({p for p in paths if paths.count(p) > 1})
    for p in clash:
        print(f"FAIL: two examples have the golden file {p}", file=sys.stderr)
        failures += 1
    if args.write_golden and clash:
        return 1
    failures += report(check_generated(golden, args.write_golden, "run `make golden` and review the diff",
                                       source=same_program))
    if not (args.write_golden and failures):
        failures += report(check_generated(generated_traces(), args.write_golden, "run `make golden`"))
    print(f"check: {len(examples())} examples link" + ("" if not failures else f"; {failures} problem(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
