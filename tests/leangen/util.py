"""Helpers of the Lean back end's tests: the oracle scenarios' IR and outputs."""

import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "tools", "oracle")


def scenario_inputs(kind: str) -> list[str]:
    """The scenario (or trace) JSON files that have a vLLM output."""
    d = {"scenarios": "scenarios", "random": "random", "traces": "traces"}[kind]
    out = []
    for path in sorted(glob.glob(os.path.join(ORACLE, d, "*.json"))):
        if path.endswith((".out.json", ".log.json", ".ir.json")):
            continue
        if os.path.exists(path[:-5] + ".out.json"):
            out.append(path)
    return out


_IR_CACHE: dict = {}


def oracle_ir(path: str):
    """The IR of the oracle program for a scenario or trace: its committed
    `NAME.ir.json` when there is one (`make oracle-ir`), else what
    `serq oracle ir` / `serq oracle replay-ir` prints for it."""
    from serq.ir import loads, read
    if path in _IR_CACHE:
        return _IR_CACHE[path]
    ir_path = path[:-5] + ".ir.json"
    if os.path.exists(ir_path):
        p = read(ir_path)
    else:
        from click.testing import CliRunner
        from serq.cli import main
        cmd = "replay-ir" if os.path.basename(os.path.dirname(path)) == "traces" else "ir"
        res = CliRunner().invoke(main, ["oracle", cmd, path])
        assert res.exit_code == 0, res.output
        p = loads(res.output, path)
    _IR_CACHE[path] = p
    return p


def vllm_output(path: str) -> dict:
    with open(path[:-5] + ".out.json", encoding="utf-8") as f:
        return json.load(f)

