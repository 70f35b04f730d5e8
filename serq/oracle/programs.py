"""The oracle comparisons from Python (``serq.oracle.run``, ``compare``,
``diff``, ``program``) and the programs they run (each linked by
``serq.api.harness``): a scenario (or a
prefix-cache trace) as ``examples/oracle/vllm_request.sq``
(``examples/replay/vllm_replay.sq``) linked with its engine as inputs and its
requests as explicit sessions — what ``serq oracle run/diff/replay`` run.

A scenario is a path to its JSON or the JSON as a dict; a trace is told
from a scenario by its ``sessions`` key."""

from __future__ import annotations

import os
import time
from typing import Optional, Union

from ..api.harness import harness_program
from ..diag import Diagnostic, SerqError

Scenario = Union[str, os.PathLike, dict]


# ---------------------------------------------------------------- the programs

def scenario_program(path: str):
    """`examples/oracle/vllm_request.sq` compiled for a scenario: its engine as
    inputs, its requests as explicit sessions.  (scenario, IR)."""
    from . import scenario as S
    s = S.load(path)
    return s, program_for_scenario(s)


def program_for_scenario(s: dict):
    from . import scenario as S
    return harness_program(S, s)


def trace_program(path: str):
    """`examples/replay/vllm_replay.sq` on the step clock for a prefix-cache
    trace.  (trace, IR)."""
    from . import replay as R
    t = R.load(path)
    return t, program_for_trace(t)


def program_for_trace(t: dict):
    from . import replay as R
    return harness_program(R, t)


def mooncake_program(s: dict):
    """`examples/replay/mooncake.sq` on the step clock for a Mooncake slice."""
    from . import mooncake as MC
    return harness_program(MC, s)


def pd_program(s: dict):
    """`examples/oracle/vllm_pd.sq` on the step clock for a P/D scenario: its two
    engines as inputs, its requests as explicit sessions."""
    from . import pd as PD
    return harness_program(PD, s)


def sglang_program(s: dict):
    """`examples/oracle/sglang_request.sq` on the step clock for an SGLang
    scenario: its engine as inputs, its requests as explicit sessions."""
    from . import sglang as SG
    return harness_program(SG, SG.check(s))


# ---------------------------------------------------------------- from Python

def _read(scenario: Scenario) -> tuple[dict, Optional[str], bool]:
    """(the JSON, its path or None, whether it is a trace)."""
    from .. import args
    from . import replay as R, scenario as S
    if isinstance(scenario, dict):
        is_trace = "sessions" in scenario
        (R if is_trace else S).check(scenario, "trace" if is_trace else "scenario")
        return scenario, None, is_trace
    if not isinstance(scenario, (str, os.PathLike)):
        raise args.wrong("serq.oracle.*", "scenario", "a path (str or os.PathLike) or a dict", scenario)
    path = args.path("serq.oracle.*", "scenario", scenario)
    data = S.read_json(path, "the scenario")
    is_trace = isinstance(data, dict) and "sessions" in data
    (R if is_trace else S).check(data, path)
    return data, path, is_trace


def program(scenario: Scenario):
    """The program the oracle runs for a scenario or a trace (a
    :class:`serq.api.program.Program`: ``.run()``, ``.draw()``, ``.ir``)."""
    from . import replay as R, scenario as S
    from ..api.program import Program
    data, _, is_trace = _read(scenario)
    ir = (program_for_trace if is_trace else program_for_scenario)(data)
    source = R.program(data) if is_trace else S.program(data)
    return Program(ir, path=source, text=None, sets={}, from_ir=True)


def run(scenario: Scenario) -> dict:
    """serQ's outcome in the harness's format (``serq oracle run`` / ``replay``):
    ``{"first", "done", "preemptions", "steps"}`` for a scenario,
    ``{"requests", "steps"}`` for a trace."""
    return _ours(scenario)[0]


def _ours(scenario: Scenario, step_log: bool = False):
    from . import outcome as O
    from ..sim import simulate
    data, path, is_trace = _read(scenario)
    p = (program_for_trace if is_trace else program_for_scenario)(data)
    rep = simulate(p, step_log=step_log)
    out = O.trace_outcome(rep, p) if is_trace else O.scenario_outcome(rep, p)
    return out, rep, data, path, is_trace


class Comparison:
    """serQ's outcome against vLLM's: ``agree``, ``fields`` (each difference
    in words), ``ours``, ``theirs`` (outcomes), ``divergence`` (the text of
    the first step where they part, when vLLM's step log is known, else
    None), ``seconds`` (``{"serq": …, "vllm": …}`` for a live run)."""

    def __init__(self, ours: dict, theirs: dict, divergence: Optional[str], seconds: Optional[dict] = None):
        from . import outcome as O
        self.ours = ours
        self.theirs = O.strip(theirs)
        self.fields = O.diff(ours, theirs)
        self.divergence = divergence
        self.agree = not self.fields and divergence in (None, "agree")
        self.seconds = seconds

    def __repr__(self):
        return f"<serq.oracle.Comparison: {'agree' if self.agree else 'disagree'}>"

    def __str__(self):
        if self.divergence not in (None, "agree"):
            head = self.divergence
        elif self.fields and self.divergence == "agree":
            head = "the steps agree but the outcomes differ"
        else:
            head = "agree" if not self.fields else "disagree"
        return "\n".join([head] + [f"  {f}" for f in self.fields])


def compare(scenario: Scenario, vllm: Union[None, str, dict] = None) -> Comparison:
    """serQ's run of a scenario against a vLLM output: a dict, a path to an
    ``.out.json`` / ``.log.json``, or (None) the one committed beside the
    scenario (``NAME.log.json``, with vLLM's step log, else ``NAME.out.json``).
    No vLLM is needed; ``diff`` runs vLLM itself."""
    from . import scenario as S
    data, path, is_trace = _read(scenario)
    if vllm is None:
        if path is None:
            raise SerqError(Diagnostic("E963", "a scenario given as a dict has no committed vLLM output",
                                       help="pass vllm= (an output dict or file), or use serq.oracle.diff"))
        stem = path[:-5] if path.endswith(".json") else path
        for cand in (stem + ".log.json", stem + ".out.json"):
            if os.path.exists(cand):
                vllm = cand
                break
        else:
            raise SerqError(Diagnostic("E963", f"no vLLM output beside {path} ({stem}.out.json)",
                                       help="pass vllm=, or run vLLM with serq.oracle.diff"))
    from .outcome import check_output
    from .. import args
    where = "vllm=" if isinstance(vllm, dict) else args.path("serq.oracle.compare", "vllm", vllm)
    theirs = vllm if isinstance(vllm, dict) else S.read_json(where, "the vLLM output")
    check_output(theirs, where, is_trace)
    return _compare(data, theirs)


def _compare(scenario: Scenario, theirs: dict, seconds: Optional[dict] = None) -> Comparison:
    from . import divergence as D
    has_log = "log" in theirs
    t0 = time.perf_counter()
    ours, rep, data, _, is_trace = _ours(scenario, step_log=has_log)
    if seconds is not None:
        seconds["serq"] = time.perf_counter() - t0
    text = None
    if has_log and not is_trace:
        text = D.report(D.ours_by_step(rep.step_log, data["block_size"]), D.theirs_by_step(theirs["log"]))
    return Comparison(ours, theirs, text, seconds)


def diff(scenario: Scenario) -> Comparison:
    """serQ against vLLM's real scheduler, run now (``serq oracle diff``; needs
    ``.venv-vllm``, ``make vllm-env``): the comparison, with the first step
    where they part and both sides' times."""
    import json
    import tempfile
    from .vllm import REPLAY, HARNESS, run_once
    data, path, is_trace = _read(scenario)
    script = REPLAY if is_trace else HARNESS
    if path is None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
            json.dump(data, f)
            tmp = f.name
        try:
            theirs, t_vllm = run_once(tmp, steps=not is_trace, script=script)
        finally:
            os.unlink(tmp)
    else:
        theirs, t_vllm = run_once(path, steps=not is_trace, script=script)
    seconds = {"vllm": t_vllm}
    return _compare(data, theirs, seconds)
