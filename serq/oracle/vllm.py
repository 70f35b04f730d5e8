"""Talking to vLLM's real scheduler: the harness (tools/oracle/vllm_oracle.py)
run under `.venv-vllm`, in `--serve` mode so that one process (one import of
vLLM, about 6 s) answers a whole session of scenarios; and the same for
SGLang's (tools/oracle/sglang_oracle.py under `.venv-sglang`)."""

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
SGLANG = os.path.join(ROOT, "tools", "oracle", "sglang_oracle.py")
MEASURED = os.path.join(ROOT, "tools", "oracle", "vllm_measured_oracle.py")

# each harness's environment: (engine, version) -> (variable, venv, make target)
ENVS = {("vllm", "0.33.0"): ("SERQ_VLLM_VENV", ".venv-vllm", "vllm-env"),
        ("vllm", "0.19.0"): (None, ".venv-vllm-0.19", "vllm-env-0.19"),
        ("sglang", "0.5.23"): ("SERQ_SGLANG_VENV", ".venv-sglang", "sglang-env")}
DEFAULT_VERSION = {"vllm": "0.33.0", "sglang": "0.5.23"}


def engine_of(script: str) -> str:
    return "sglang" if script == SGLANG else "vllm"


def python(engine: str = "vllm", version: Optional[str] = None) -> str:
    """The python of a harness's environment: vLLM 0.33.0's
    (``SERQ_VLLM_VENV`` or .venv-vllm), vLLM ``version``'s
    (.venv-vllm-0.19 for 0.19.0) or SGLang's (``SERQ_SGLANG_VENV`` or
    .venv-sglang)."""
    version = version or DEFAULT_VERSION[engine]
    var, default, target = ENVS[(engine, version)]
    venv = os.environ.get(var, os.path.join(ROOT, default)) if var else os.path.join(ROOT, default)
    exe = os.path.join(venv, "bin", "python")
    if not os.path.exists(exe):
        holds = f"{'SGLang' if engine == 'sglang' else 'vLLM'} {version}"
        raise SerqError(Diagnostic(
            "E960", f"{holds.split()[0]}'s environment is not built ({exe} is missing)",
            help=f"run `make {target}` (a few minutes; CPU only)"
                 + (f", or point {var} at a venv with {holds}" if var else "")))
    return exe


def _name(script: str) -> str:
    return "SGLang" if engine_of(script) == "sglang" else "vLLM"


class Harness:
    """One harness process; `ask(scenario)` returns its output JSON."""

    def __init__(self, steps: bool = False, script: str = HARNESS):
        self.args = [python(engine_of(script)), script, "--serve"] + (["--steps"] if steps else [])
        self.name = _name(script)
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
            raise SerqError(Diagnostic("E961", f"the {self.name} harness stopped without answering",
                                       help=f"run it by hand to see why: {' '.join(self.args[:2])} SCENARIO.json"))
        out = json.loads(line)
        if "error" in out:
            raise SerqError(Diagnostic("E962", f"{self.name} refused the scenario: {out['error']}"))
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
    out = subprocess.run([python(engine_of(script), version), script, scenario_path] + (["--steps"] if steps else []),
                         capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise SerqError(Diagnostic("E962", f"the {_name(script)} harness failed on {scenario_path}: "
                                   f"{out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"))
    return json.loads(out.stdout), dt
