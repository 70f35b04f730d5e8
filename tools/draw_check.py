#!/usr/bin/env python3
"""`make check` for `serq draw`: every example (examples/**/*.sq but
examples/lib/) draws in both views and both formats, each figure passes the
sanity checks of serq.draw.check, drawing twice gives the same bytes, and the
golden figures under tests/golden/draw/ are current.

    tools/draw_check.py            check
    tools/draw_check.py --write    rewrite the golden figures (review the diff)
    tools/draw_check.py --out DIR  also write every figure to DIR
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from serq.diag import SerqError  # noqa: E402
from tools.generated import check_generated  # noqa: E402

GOLDEN_DIR = os.path.join("tests", "golden", "draw")
# five examples whose figures are kept: a while loop with the engine and its
# pools; fork/join of subagents inside a branch; a loop left by `end`, a gate
# and a trace; queues with their own pools, a pull between two families and
# a router that picks their members; a router with a policy per input value
GOLDEN = ("examples/multi-turn/vllm.sq", "examples/subagent/vllm_subagents.sq",
          "examples/replay/vllm_replay.sq", "examples/pd-disaggregation/llmd_nixl_pull.sq",
          "examples/multi-turn/routing.sq")
VIEWS = ("deployment", "session")
FORMATS = {"svg": "svg", "tikz": "tex"}


def examples() -> list[str]:
    from tools.examples import programs
    return programs()


def stem(example: str) -> str:
    rel = os.path.relpath(example, "examples")
    return rel[:-3].replace(os.sep, "__").replace("/", "__")


def golden_path(example: str, view: str, fmt: str) -> str:
    return os.path.join(GOLDEN_DIR, f"{stem(example)}.{view}.{FORMATS[fmt]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the golden figures")
    ap.add_argument("--out", metavar="DIR", help="also write every figure to DIR")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    from serq.draw import render
    from serq.draw.check import svg_problems, tikz_problems
    from serq.link import compile_file

    problems: list[str] = []
    golden: list = []
    drawn = 0
    exs = examples()
    for ex in exs:
        try:
            program = compile_file(ex)
        except SerqError as e:
            problems.append(f"{ex}: does not link:\n{e.render()}")
            continue
        for view in VIEWS:
            for fmt in FORMATS:
                what = f"{ex} --view {view} --format {fmt}"
                try:
                    text = render(program, view=view, fmt=fmt)
                except SerqError as e:
                    problems.append(f"{what}: {e.render()}")
                    continue
                drawn += 1
                found = svg_problems(text) if fmt == "svg" else tikz_problems(text)
                problems.extend(f"{what}: {p}" for p in found)
                if render(program, view=view, fmt=fmt) != text:
                    problems.append(f"{what}: two renders differ")
                if args.out:
                    from serq.files import DRAW, write_file
                    os.makedirs(args.out, exist_ok=True)
                    write_file(os.path.join(args.out, f"{stem(ex)}.{view}.{FORMATS[fmt]}"), text, what="--out ",
                               mark=DRAW)
                if ex in GOLDEN:
                    golden.append((golden_path(ex, view, fmt), text))
    # the golden figures: compared, or (every figure drawn, no problem) written
    if args.write and problems:
        problems.append("no golden figure written")
    else:
        problems += check_generated(golden, args.write, "run tools/draw_check.py --write and review the diff")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"draw: {drawn} figures of {len(exs)} examples"
          + (f"; golden figures written to {GOLDEN_DIR}" if args.write else "")
          + ("" if not problems else f"; {len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
