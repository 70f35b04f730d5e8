#!/usr/bin/env python3
"""Regenerate every committed oracle output from vLLM (see regen.sh).

    regen.py            rewrite the outputs in place
    regen.py --check    regenerate into a temporary directory and compare
                        byte for byte with the committed files (exit 1 on
                        any difference)

What it (re)writes, all under tools/oracle/:
  random/rNNN.json            gen_random.py --n RANDOM_N --seed RANDOM_SEED
  scenarios/NAME.out.json     vllm_oracle.py output      (named scenarios)
  scenarios/NAME.log.json     vllm_oracle.py --steps output
  random/rNNN.out.json        vllm_oracle.py output
  traces/NAME.out.json        vllm_replay_oracle.py output
  shared/NAME.out.json        vllm_replay_oracle.py output (shared system prompts)
  mooncake/NAME.out.json      vllm_mooncake_oracle.py output (Mooncake trace slices)
  priority/NAME.out.json      vllm_oracle.py output      (PRIORITY policy, named)
  priority/NAME.log.json      vllm_oracle.py --steps output
  priority/random/pNNN.json   gen_random.py --policy priority (the random suite's
                              scenarios with request priorities), and .out.json
  target/NAME.out.json        vllm_oracle.py output      (engines `serq target` exported)
  pd/random/pNNN.json         gen_random.py --pd --n PD_RANDOM_N --seed PD_RANDOM_SEED
  pd/NAME.out.json, .log.json vllm_pd_oracle.py output, and with --steps (named P/D scenarios)
  pd/random/pNNN.out.json     vllm_pd_oracle.py output
Each file is exactly what the single-file command prints (e.g.
`vllm_oracle.py scenarios/hol.json > scenarios/hol.out.json`); the oracles
run in --batch mode so vLLM is imported once per oracle.
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from oracle_format import dumps_output  # noqa: E402

RANDOM_N = 75
RANDOM_SEED = 1
NAMED = ["alone", "chunked", "hol", "longchunk", "mixed", "preempt", "seqcap"]
TRACES = ["cache_trace", "cache_trace2", "cache_evict"]
# multi-turn traces whose sessions share a system prompt (outside the Lean
# fragment: no IR files, so leangen does not read them)
SHARED = ["shared_prompt", "shared_tenants", "shared_evict"]
PRIORITY = ["prio_order", "prio_victim", "prio_selfpre", "prio_tie", "prio_mixed"]
PD_RANDOM_N = 60
PD_RANDOM_SEED = 1
PD_NAMED = ["pipeline", "load_hol", "p_held", "d_seqcap", "d_preempt", "p_preempt", "prefix", "shared_prefix",
            "mixed_xfer", "load_gate", "chunk_loads"]


def venv_python() -> str:
    py = os.environ.get("VLLM_PYTHON") or os.path.join(ROOT, ".venv-vllm", "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"{py} not found: run tools/oracle/install_vllm_env.sh first")
    return py


def run_batch(script: str, inputs: list, extra: list, py=None) -> list:
    """Run an oracle in --batch mode over input files (under ``py``, vLLM's
    venv by default); return parsed outputs."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for path in inputs:
            with open(path, encoding="utf-8") as g:
                f.write(json.dumps(json.load(g)) + "\n")
        batch = f.name
    try:
        t0 = time.time()
        proc = subprocess.run(
            [py or venv_python(), os.path.join(HERE, script), "--batch", batch, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dt = time.time() - t0
    finally:
        os.unlink(batch)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"{script} failed (exit {proc.returncode})")
    outs = [json.loads(line) for line in proc.stdout.splitlines()]
    if len(outs) != len(inputs):
        sys.exit(f"{script}: {len(inputs)} inputs but {len(outs)} outputs")
    print(f"  {script} --batch {' '.join(extra)}: {len(inputs)} inputs in {dt:.1f} s",
          file=sys.stderr)
    return outs


def write(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps_output(obj, one_line=False) + "\n")


def generate(dest: str) -> list:
    """Write all generated files under dest (a tools/oracle-like tree);
    return their paths relative to dest."""
    for sub in ("scenarios", "random", "traces", "shared", "mooncake", "pd", os.path.join("pd", "random")):
        os.makedirs(os.path.join(dest, sub), exist_ok=True)
    written = []

    # 1. random scenario inputs
    rnd = os.path.join(dest, "random")
    for old in glob.glob(os.path.join(rnd, "r[0-9][0-9][0-9].json")):
        os.unlink(old)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_random.py"), "--n", str(RANDOM_N),
                    "--seed", str(RANDOM_SEED), "--out", rnd], check=True)
    rnames = [f"r{i:03d}" for i in range(RANDOM_N)]
    written += [f"random/{r}.json" for r in rnames]

    # 2. scenario outputs (named inputs come from the committed tree)
    named_in = [os.path.join(HERE, "scenarios", f"{n}.json") for n in NAMED]
    rand_in = [os.path.join(rnd, f"{r}.json") for r in rnames]
    outs = run_batch("vllm_oracle.py", named_in + rand_in, [])
    for n, o in zip(NAMED, outs[:len(NAMED)]):
        write(os.path.join(dest, "scenarios", f"{n}.out.json"), o)
        written.append(f"scenarios/{n}.out.json")
    for r, o in zip(rnames, outs[len(NAMED):]):
        write(os.path.join(rnd, f"{r}.out.json"), o)
        written.append(f"random/{r}.out.json")

    # 3. per-step logs of the named scenarios
    logs = run_batch("vllm_oracle.py", named_in, ["--steps"])
    for n, o in zip(NAMED, logs):
        write(os.path.join(dest, "scenarios", f"{n}.log.json"), o)
        written.append(f"scenarios/{n}.log.json")

    # 4. prefix-cache replay traces
    trace_in = [os.path.join(HERE, "traces", f"{t}.json") for t in TRACES] + \
        [os.path.join(HERE, "shared", f"{t}.json") for t in SHARED]
    touts = run_batch("vllm_replay_oracle.py", trace_in, [])
    for t, o in zip([f"traces/{t}" for t in TRACES] + [f"shared/{t}" for t in SHARED], touts):
        write(os.path.join(dest, f"{t}.out.json"), o)
        written.append(f"{t}.out.json")

    # 5. Mooncake trace slices (a spec's trace is relative to the spec)
    specs = sorted(p for p in glob.glob(os.path.join(HERE, "mooncake", "*.json"))
                   if not p.endswith((".out.json", ".ir.json")))
    absolute = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in specs:
            with open(p, encoding="utf-8") as g:
                s = json.load(g)
            if "trace" in s:
                s["trace"] = os.path.join(os.path.dirname(p), s["trace"])
            absolute.append(os.path.join(tmp, os.path.basename(p)))
            with open(absolute[-1], "w", encoding="utf-8") as g:
                json.dump(s, g)
        mouts = run_batch("vllm_mooncake_oracle.py", absolute, []) if specs else []
    for p, o in zip(specs, mouts):
        name = os.path.basename(p)[:-5]
        write(os.path.join(dest, "mooncake", f"{name}.out.json"), o)
        written.append(f"mooncake/{name}.out.json")

    # 6. the PRIORITY policy: named scenarios (with logs) and the random suite
    written += generate_priority(dest)

    # 7. scenarios whose engine is a program's `serq target` export
    os.makedirs(os.path.join(dest, "target"), exist_ok=True)
    names = sorted(json.load(open(os.path.join(HERE, "target", "programs.json"), encoding="utf-8")))
    outs = run_batch("vllm_oracle.py", [os.path.join(HERE, "target", f"{n}.json") for n in names], [])
    for n, o in zip(names, outs):
        write(os.path.join(dest, "target", f"{n}.out.json"), o)
        written.append(f"target/{n}.out.json")

    # 8. prefill/decode disaggregation: two schedulers (vllm_pd_oracle.py)
    return written + generate_pd(dest)


def generate_priority(dest: str) -> list:
    written = []
    rnd = os.path.join(dest, "priority", "random")
    os.makedirs(rnd, exist_ok=True)
    for old in glob.glob(os.path.join(rnd, "p[0-9][0-9][0-9].json")):
        os.unlink(old)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_random.py"), "--n", str(RANDOM_N),
                    "--seed", str(RANDOM_SEED), "--out", rnd, "--policy", "priority"], check=True)
    pnames = [f"p{i:03d}" for i in range(RANDOM_N)]
    written += [f"priority/random/{r}.json" for r in pnames]
    named_in = [os.path.join(HERE, "priority", f"{n}.json") for n in PRIORITY]
    rand_in = [os.path.join(rnd, f"{r}.json") for r in pnames]
    outs = run_batch("vllm_oracle.py", named_in + rand_in, [])
    for n, o in zip(PRIORITY, outs[:len(PRIORITY)]):
        write(os.path.join(dest, "priority", f"{n}.out.json"), o)
        written.append(f"priority/{n}.out.json")
    for r, o in zip(pnames, outs[len(PRIORITY):]):
        write(os.path.join(rnd, f"{r}.out.json"), o)
        written.append(f"priority/random/{r}.out.json")
    logs = run_batch("vllm_oracle.py", named_in, ["--steps"])
    for n, o in zip(PRIORITY, logs):
        write(os.path.join(dest, "priority", f"{n}.log.json"), o)
        written.append(f"priority/{n}.log.json")
    return written


def generate_pd(dest: str) -> list:
    """The P/D suite: random inputs, and every scenario's output (the named
    ones' with --steps too)."""
    written = []
    rnd = os.path.join(dest, "pd", "random")
    for old in glob.glob(os.path.join(rnd, "p[0-9][0-9][0-9].json")):
        os.unlink(old)
    subprocess.run([sys.executable, os.path.join(HERE, "gen_random.py"), "--pd", "--n", str(PD_RANDOM_N),
                    "--seed", str(PD_RANDOM_SEED), "--out", rnd], check=True)
    rnames = [f"p{i:03d}" for i in range(PD_RANDOM_N)]
    written += [f"pd/random/{r}.json" for r in rnames]
    named_in = [os.path.join(HERE, "pd", f"{n}.json") for n in PD_NAMED]
    outs = run_batch("vllm_pd_oracle.py", named_in + [os.path.join(rnd, f"{r}.json") for r in rnames], [])
    for name, o in zip(PD_NAMED + [f"random/{r}" for r in rnames], outs):
        write(os.path.join(dest, "pd", f"{name}.out.json"), o)
        written.append(f"pd/{name}.out.json")
    for n, o in zip(PD_NAMED, run_batch("vllm_pd_oracle.py", named_in, ["--steps"])):
        write(os.path.join(dest, "pd", f"{n}.log.json"), o)
        written.append(f"pd/{n}.log.json")
    return written


def regen_main(argv, doc: str, here: str, generate, generated_globs, prefix: str) -> int:
    """A regeneration command: write what ``generate(dest)`` writes under
    ``here``, or with --check regenerate into a temporary directory and
    compare byte for byte (and find committed files matching
    ``generated_globs`` that it no longer writes)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate elsewhere and compare with the committed files")
    args = ap.parse_args(argv)
    if not args.check:
        written = generate(here)
        print(f"wrote {len(written)} files under {here}", file=sys.stderr)
        return 0
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        written = generate(tmp)
        bad = []
        for rel in written:
            committed = os.path.join(here, rel)
            if not os.path.exists(committed) or not filecmp.cmp(
                    committed, os.path.join(tmp, rel), shallow=False):
                bad.append(rel)
        have = {os.path.relpath(p, here) for g in generated_globs for p in glob.glob(os.path.join(here, g))}
        extra = sorted(have - set(written))
        if bad or extra:
            for rel in bad:
                print(f"DIFFERS: {rel}", file=sys.stderr)
            for rel in extra:
                print(f"NOT GENERATED (stale?): {rel}", file=sys.stderr)
            return 1
        print(f"OK: {len(written)} files byte-identical to a fresh regeneration",
              file=sys.stderr)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    return regen_main(argv, __doc__, HERE, generate,
                      [os.path.join("random", "r*.json"), os.path.join("priority", "random", "p*.json"),
                       os.path.join("pd", "random", "p*.json")], "oracle-regen-")


if __name__ == "__main__":
    sys.exit(main())
