#!/usr/bin/env python3
"""Regenerate the measured runs' scheduler outputs (tools/oracle/measured/).

    regen_measured.py            rewrite them in place
    regen_measured.py --check    regenerate into a temporary directory and
                                 compare byte for byte (exit 1 on a difference)

For each spec measured/NAME.json (a measured run's workload on the step clock;
`"async": true` in NAME_async.json), vllm_measured_oracle.py's output under
vLLM 0.33.0 (.venv-vllm) is measured/NAME.out.json and under vLLM 0.19.0
(.venv-vllm-0.19, `make vllm-env-0.19`) measured/NAME.v0.19.out.json.  The
specs read LLMServingSim's workloads from ../shared/data (not in the
repository), so this needs the shared data beside the clone.  Each file is
what the single-file command prints; the harness runs in --batch mode, so
vLLM is imported once per version.
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from oracle_format import dumps_output  # noqa: E402

VERSIONS = {"0.33.0": (".venv-vllm", ".out.json"), "0.19.0": (".venv-vllm-0.19", ".v0.19.out.json")}


def specs() -> list:
    return sorted(p for p in glob.glob(os.path.join(HERE, "measured", "*.json")) if not p.endswith(".out.json"))


def regen(dest: str) -> None:
    paths = specs()
    for version, (venv, suffix) in VERSIONS.items():
        exe = os.path.join(ROOT, venv, "bin", "python")
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing: build vLLM {version}'s environment first")
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for p in paths:
                with open(p, encoding="utf-8") as g:
                    spec = json.load(g)
                spec["workload"] = os.path.normpath(os.path.join(os.path.dirname(p), spec["workload"]))
                f.write(json.dumps(spec) + "\n")
            batch = f.name
        try:
            out = subprocess.run([exe, os.path.join(HERE, "vllm_measured_oracle.py"), "--batch", batch],
                                 capture_output=True, text=True, check=False)
        finally:
            os.unlink(batch)
        lines = out.stdout.splitlines()
        if out.returncode != 0 or len(lines) != len(paths):
            sys.exit(f"vLLM {version}: the harness failed:\n{out.stderr[-2000:]}")
        for p, line in zip(paths, lines):
            name = os.path.basename(p)[:-len(".json")]
            with open(os.path.join(dest, name + suffix), "w", encoding="utf-8") as g:
                g.write(dumps_output(json.loads(line), one_line=False) + "\n")
        print(f"vLLM {version}: {len(paths)} outputs")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed outputs")
    args = ap.parse_args()
    folder = os.path.join(HERE, "measured")
    if not args.check:
        regen(folder)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        regen(tmp)
        bad = [f for f in sorted(os.listdir(tmp))
               if not os.path.exists(os.path.join(folder, f)) or
               not filecmp.cmp(os.path.join(tmp, f), os.path.join(folder, f), shallow=False)]
    for f in bad:
        print(f"DIFFERS: measured/{f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
