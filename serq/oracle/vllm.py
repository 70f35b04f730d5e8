"""Talking to vLLM's real scheduler: the harness (tools/oracle/vllm_oracle.py)
run under `.venv-vllm`, in `--serve` mode so that one process (one import of
vLLM, about 6 s) answers a whole session of scenarios."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Optional

from ..diag import Diagnostic, SerqError

from ..paths import root

ROOT = root()      # the repository, or the package data of an installed wheel
HARNESS = os.path.join(ROOT, "tools", "oracle", "vllm_oracle.py")
REPLAY = os.path.join(ROOT, "tools", "oracle", "vllm_replay_oracle.py")
MOONCAKE = os.path.join(ROOT, "tools", "oracle", "vllm_mooncake_oracle.py")
PD = os.path.join(ROOT, "tools", "oracle", "vllm_pd_oracle.py")
MEASURED = os.path.join(ROOT, "tools", "oracle", "vllm_measured_oracle.py")
# the vLLM versions a harness runs under, and their environments
VENVS = {"0.33.0": ".venv-vllm", "0.19.0": ".venv-vllm-0.19"}


def python(version: Optional[str] = None) -> str:
    """The python of vLLM's environment: 0.33.0's (``SERQ_VLLM_VENV`` or
    .venv-vllm), or the one of ``version`` (.venv-vllm-0.19 for 0.19.0)."""
    if version in (None, "0.33.0"):
        venv = os.environ.get("SERQ_VLLM_VENV", os.path.join(ROOT, VENVS["0.33.0"]))
        make = "make vllm-env"
    else:
        venv = os.path.join(ROOT, VENVS[version])
        make = "make vllm-env-0.19"
    exe = os.path.join(venv, "bin", "python")
    if not os.path.exists(exe):
        raise SerqError(Diagnostic(
            "E960", f"vLLM's environment is not built ({exe} is missing)",
            help=f"run `{make}` (about 2 GB, a few minutes; CPU only)"
                 + (", or point SERQ_VLLM_VENV at a venv with vLLM 0.33.0" if version in (None, "0.33.0") else "")))
    return exe


class Harness:
    """One harness process; `ask(scenario)` returns its output JSON."""

    def __init__(self, steps: bool = False, script: str = HARNESS):
        self.args = [python(), script, "--serve"] + (["--steps"] if steps else [])
        self.proc: Optional[subprocess.Popen] = None
        self.started = 0.0
        self.startup = 0.0

    def __enter__(self):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        return self

    def ask(self, scenario: dict) -> dict:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(scenario, sort_keys=True) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not self.startup:
            self.startup = time.perf_counter() - self.started
        if not line:
            raise SerqError(Diagnostic("E961", "the vLLM harness stopped without answering",
                                       help=f"run it by hand to see why: {' '.join(self.args[:2])} SCENARIO.json"))
        out = json.loads(line)
        if "error" in out:
            raise SerqError(Diagnostic("E962", f"vLLM refused the scenario: {out['error']}"))
        return out

    def __exit__(self, *exc):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except Exception:  # pragma: no cover
                self.proc.kill()
        return False


def run_once(scenario_path: str, steps: bool = False, script: str = HARNESS,
             version: Optional[str] = None) -> tuple[dict, float]:
    """The harness on one file, as a user would run it (under vLLM
    ``version``'s environment); (output, seconds)."""
    t0 = time.perf_counter()
    out = subprocess.run([python(version), script, scenario_path] + (["--steps"] if steps else []),
                         capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise SerqError(Diagnostic("E962", f"the vLLM harness failed on {scenario_path}: "
                                   f"{out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"))
    return json.loads(out.stdout), dt
