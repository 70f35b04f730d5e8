#!/usr/bin/env python3
"""Regenerate every committed SGLang oracle output (`make sglang-oracle`).

    tools/oracle/sglang/regen.py           rewrite in place
    tools/oracle/sglang/regen.py --check   regenerate into a temporary directory
                                           and compare byte for byte (exit 1 on
                                           any difference)

What it (re)writes, under tools/oracle/sglang/:
  random/gNNN.json              gen_random.py --sglang --n RANDOM_N --seed RANDOM_SEED
  scenarios/NAME.out.json       sglang_oracle.py output (named scenarios)
  scenarios/NAME.log.json       sglang_oracle.py --steps output
  random/gNNN.out.json          sglang_oracle.py output
Each file is what the single-file command prints; the harness runs in
--batch mode so SGLang is imported once.  Needs .venv-sglang (`make sglang-env`;
SGLANG_PYTHON=path for another interpreter).
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ORACLE))
sys.path.insert(0, ORACLE)
from regen import regen_main, run_batch, write  # noqa: E402

RANDOM_N = 300
RANDOM_SEED = 1


def named() -> list:
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(HERE, "scenarios", "*.json"))
                  if not p.endswith((".out.json", ".log.json")))


def python() -> str:
    py = os.environ.get("SGLANG_PYTHON") or os.path.join(ROOT, ".venv-sglang", "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"{py} not found: run `make sglang-env` first")
    return py


def generate(dest: str) -> list:
    """Write the generated files under dest (a tools/oracle/sglang-like tree);
    return their paths relative to dest."""
    written = []
    rnd = os.path.join(dest, "random")
    os.makedirs(rnd, exist_ok=True)
    os.makedirs(os.path.join(dest, "scenarios"), exist_ok=True)
    for old in glob.glob(os.path.join(rnd, "g[0-9][0-9][0-9].json")):
        os.unlink(old)
    subprocess.run([sys.executable, os.path.join(ORACLE, "gen_random.py"), "--sglang", "--n", str(RANDOM_N),
                    "--seed", str(RANDOM_SEED), "--out", rnd], check=True)
    rnames = [f"g{i:03d}" for i in range(RANDOM_N)]
    written += [f"random/{r}.json" for r in rnames]
    names = named()
    named_in = [os.path.join(HERE, "scenarios", f"{n}.json") for n in names]
    outs = run_batch("sglang_oracle.py", named_in + [os.path.join(rnd, f"{r}.json") for r in rnames], [],
                     py=python())
    for name, o in zip([f"scenarios/{n}" for n in names] + [f"random/{r}" for r in rnames], outs):
        write(os.path.join(dest, f"{name}.out.json"), o)
        written.append(f"{name}.out.json")
    for n, o in zip(names, run_batch("sglang_oracle.py", named_in, ["--steps"], py=python())):
        write(os.path.join(dest, "scenarios", f"{n}.log.json"), o)
        written.append(f"scenarios/{n}.log.json")
    return written


def main(argv=None) -> int:
    return regen_main(argv, __doc__, HERE, generate, [os.path.join("random", "g*.json")], "sglang-regen-")


if __name__ == "__main__":
    sys.exit(main())
