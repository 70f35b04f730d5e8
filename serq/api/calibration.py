"""Calibration and measured runs from Python (and for `serq calibrate`,
`serq measured`): a program linked as `serq run` links it, handed to
serq.calib, which reads its IR.

    from serq.api import calibration
    res = calibration.calibrate(".../bf16/tp1", sets={"gap": "0.0017"}, max_kv=5832)
    res.calibration.constants, res.instance_text
    m = calibration.measured(".../bench/examples/RTX4090/Llama-3.1-8B", instance="rtx4090.sq")
    m.table()["diff_pct"]["serq"]
    t = calibration.tune(".../bench/examples/RTXPRO6000/Llama-3.1-8B", "gap", [0.0015, 0.0017, 0.0019])
    t.chosen.value, t.chosen.result.table()
"""

from __future__ import annotations

from typing import Optional

from ..calib import command as C


def link(program: str, instance: Optional[str], sets: dict, default_instance: bool = True):
    """``(IR, resolved run)``: the program linked with its instance (the one
    given, else its default) and ``sets`` (input name → expression text) over
    it."""
    from .. import instance as inst
    from ..link import compile_file
    run = inst.resolve(program, instance, {"horizon": None}, sets, default=default_instance)
    p = compile_file(program, sets=run.values, horizon=run.settings.get("horizon") or 1.0,
                     warmup=run.settings.get("warmup") or 0.0,
                     seed=1 if run.settings.get("seed") is None else run.settings["seed"])
    return p, run


def calibrate(profile_dir: str, program: Optional[str] = None, sets: Optional[dict] = None, **kw) -> C.CalibrateResult:
    """serq.calib.command.calibrate's keywords: hold, free_too, layers, stages,
    budget, max_seqs, max_kv, link_bw, link_latency, instance, comments, run
    (a measured run's bundle: fit at the batches its workload makes),
    workload."""
    return C.calibrate(profile_dir, program, dict(sets or {}), linker=link, declares=declares, **kw)


def measured(bundle: str, program: Optional[str] = None, instance: Optional[str] = None,
             sets: Optional[dict] = None, **kw) -> C.MeasuredResult:
    """serq.calib.command.measured's keywords: arrivals, workload."""
    return C.measured(bundle, program, instance, dict(sets or {}), linker=link, declares=declares, **kw)


def tune(bundle: str, name: str, values, program: Optional[str] = None, instance: Optional[str] = None,
         sets: Optional[dict] = None, **kw):
    """The measured run replayed at each of ``values`` (numbers) of the
    program's input ``name``, the one whose largest summary difference is
    least kept (serq.calib.tune); keywords: arrivals, workload, progress."""
    from ..calib import tune as T
    from .program import set_text, usage
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise usage(f"values= takes a list of numbers, not {type(values).__name__}", help="values=[0, 0.001, 0.0017]")
    parsed = T.values(name, [set_text(name, v) for v in values])
    return T.tune(bundle, program, instance, dict(sets or {}), name, parsed, linker=link, declares=declares, **kw)


def declares(program: str, name: str) -> bool:
    """Whether the program has the input ``name`` (an `args.number`)."""
    from ..diag import read_text
    from ..link.inputs import program_inputs
    return any(i.name == name for i in program_inputs(read_text(program), program, {}, {}))
