"""What `serq calibrate` and `serq measured` (and its `--tune`) print: text for a person, JSON
(seconds, relative errors as fractions) for a script."""

from __future__ import annotations

import json
import math

from . import metrics as MX
from .command import CalibrateResult, MeasuredResult, fmt
from .tune import TuneResult


def _num(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def calibrate_data(res: CalibrateResult, out_path: str) -> dict:
    cal, prof = res.calibration, res.profile
    return {
        "profile": {"path": prof.path, "model": prof.model, "hardware": prof.hardware, "gpu": prof.gpu,
                    "vllm": prof.vllm_version, "tp": prof.tp},
        "program": res.program, "instance": out_path, "method": cal.method, "stages": cal.stages,
        "grid": ({"batches": len(cal.grid), "run": cal.grid.limits["run"]} if cal.grid.per_batch else
                 {"batches": len(cal.grid), **{k: _num(float(v)) for k, v in cal.grid.limits.items()}}),
        "constants": [{"name": c.name, "value": c.value, "sigma": _num(c.sigma) if c.sigma is not None else None,
                       "held": c.held or None, "program_value": c.default} for c in cal.constants],
        "residuals": {r.regime: {"batches": r.n, "median": r.median, "p90": r.p90, "bias": r.bias}
                      for r in cal.residuals},
        "grid_residuals": None if res.on_grid is None else {
            r.regime: {"batches": r.n, "median": r.median, "p90": r.p90, "bias": r.bias} for r in res.on_grid},
        "notes": res.notes,
    }


def _residual_lines(rs: list) -> list:
    out = [f"{'regime':<10}{'batches':>8}{'median':>9}{'P90':>9}{'bias':>9}"]
    for r in rs:
        out.append(f"{r.regime:<10}{r.n:>8}{100 * r.median:>8.1f}%{100 * r.p90:>8.1f}%{100 * r.bias:>+8.1f}%")
    return out


def calibrate_text(res: CalibrateResult, out_path: str) -> str:
    cal, prof = res.calibration, res.profile
    lim = cal.grid.limits
    if cal.grid.per_batch:
        where = (f"batches   the {len(cal.grid)} iterations of {lim['run']}'s workload replayed through the "
                 "program at its engine settings")
    else:
        where = (f"batches   {len(cal.grid)} of the profile's (≤ {fmt(lim['budget'])} tokens, ≤ "
                 f"{fmt(lim['max_seqs'])} decodes, KV ≤ {fmt(lim['max_kv'])} tokens)")
    lines = [f"profile   {prof.label()}",
             f"program   {res.program} (engine{'s' if len(cal.stages) > 1 else ''} {', '.join(cal.stages)})",
             where, f"method    {cal.method}", "",
             f"{'constant':<10}{'value':>14}{'± (1 s.e.)':>14}   program's"]
    for c in cal.constants:
        if c.held:
            lines.append(f"{c.name:<10}{fmt(c.value):>14}{'':>14}   {fmt(c.default) if c.default is not None else '':<10}"
                         f"  held: {c.held}")
        else:
            sig = "" if c.sigma is None or not math.isfinite(c.sigma) else f"{c.sigma:.2g}"
            rel = f" ({100 * c.sigma / c.value:.1f} %)" if c.sigma and c.value and math.isfinite(c.sigma) else ""
            lines.append(f"{c.name:<10}{fmt(c.value):>14}{sig:>14}   {fmt(c.default) if c.default is not None else ''}"
                         f"{rel and '  ' + rel.strip()}")
    lines += ["", "relative error of the step time against the profile's" + (" at those iterations"
                                                                             if cal.grid.per_batch else "")]
    lines += _residual_lines(cal.residuals)
    if res.on_grid is not None:
        lines += ["", "… and at the profile's own batches (the grid)"] + _residual_lines(res.on_grid)
    for n in res.notes:
        lines.append(f"note: {n}")
    lines.append(f"wrote {out_path}")
    return "\n".join(lines) + "\n"


def measured_data(res: MeasuredResult) -> dict:
    rp = res.replay
    reqs = []
    for i, (pr, me) in enumerate(zip(rp.predicted, rp.measured)):
        row = {"request_id": f"bench-{i}", "predicted": pr, "measured": me}
        if rp.peer is not None:
            row["peer"] = rp.peer[i]
        reqs.append(row)
    t = res.table()
    return {
        "run": {"path": res.run.path, "model": res.run.model, "hardware": res.run.hardware,
                "vllm": res.run.vllm_version, "requests": len(rp.predicted), "workload": res.run.workload_path},
        "program": res.program, "instance": res.instance,
        "engine": {"inputs": rp.engine.inputs, "tp": rp.engine.tp},
        "replay": {"iterations": rp.steps, "preemptions": rp.preemptions, "peak_kv_tokens": rp.peak_kv},
        "requests": reqs,
        "summary": {k: t[k] for k in ("measured", "serq", "peer") if k in t},
        "diff_pct": t["diff_pct"], "errors": t["errors"], "notes": res.notes,
        "units": "seconds; diff_pct in percent of the measured value; errors are |predicted − measured| / "
                 "measured, as fractions",
    }


def measured_text(res: MeasuredResult, per_request: bool = True) -> str:
    rp = res.replay
    t = res.table()
    lines = [f"run       {res.run.label()}: {res.run.model}, vLLM {res.run.vllm_version}, "
             f"{len(rp.predicted)} requests",
             f"program   {res.program}" + (f" with {res.instance}" if res.instance else ""),
             "engine    " + ", ".join(f"{k}={v}" for k, v in rp.engine.inputs.items()),
             f"replay    {rp.steps} iterations, {rp.preemptions} preemptions, at most {fmt(rp.peak_kv)} tokens of KV"]
    for n in res.notes:
        lines.append(f"note: {n}")
    if per_request:
        lines += ["", f"{'request':<10}" + "".join(f"{MX.TITLES[m] + ' meas':>14}{'serQ':>10}"
                                                   for m in MX.METRICS)]
        for i, (pr, me) in enumerate(zip(rp.predicted, rp.measured)):
            lines.append(f"{'bench-' + str(i):<10}" + "".join(
                f"{me[m] * 1e3:>12.1f}ms{pr[m] * 1e3:>8.1f}ms" for m in MX.METRICS))
    cols = [("measured", t["measured"], None), ("serQ", t["serq"], t["diff_pct"]["serq"])]
    if "peer" in t:
        cols.append(("LLMServingSim", t["peer"], t["diff_pct"]["peer"]))
    lines += ["", MX.summary_text(cols).rstrip(), "", "per-request |predicted − measured| / measured",
              f"{'':<10}" + "".join(f"{ {'serq': 'serQ', 'peer': 'LLMServingSim'}[who]:>22}" for who in t["errors"]),
              f"{'':<10}" + "".join(f"{'median':>11}{'P90':>11}" for _ in t["errors"])]
    for m in MX.METRICS:
        lines.append(f"{MX.TITLES[m]:<10}" + "".join(
            f"{100 * e[m]['median']:>10.1f}%{100 * e[m]['p90']:>10.1f}%" for e in t["errors"].values()))
    return "\n".join(lines) + "\n"


def _trial_data(t) -> dict:
    worst, m, s = t.worst
    return {"value": t.value, "text": t.text, "worst": {"metric": m, "stat": s, "diff_pct": worst},
            "diff_pct": t.table["diff_pct"]["serq"], "errors": t.table["errors"]["serq"]}


def tune_data(res: TuneResult) -> dict:
    """The measured run's JSON at the value kept, and every value's figures."""
    out = measured_data(res.chosen.result)
    out["tune"] = {"name": res.name, "chosen": res.chosen.value,
                   "criterion": "the least largest |diff_pct| of the summary's rows (the first of equals)",
                   "trials": [_trial_data(t) for t in res.trials]}
    return out


def tune_text(res: TuneResult, per_request: bool = True) -> str:
    """Each value's largest summary difference and per-request median errors,
    the one kept marked, then the run's report at it."""
    w = max(len(res.name), max(len(t.text) for t in res.trials))
    lines = [f"{res.name:<{w}}  {'largest difference':<24}{'per-request median |error|':>30}",
             f"{'':<{w}}  {'':<24}{'TTFT':>10}{'TPOT':>10}{'latency':>10}"]
    for t in res.trials:
        _, m, s = t.worst
        d = t.table["diff_pct"]["serq"][m][s]
        e = t.table["errors"]["serq"]
        lines.append(f"{t.text:<{w}}  " + f"{d:+.1f}% ({MX.TITLES[m]} {s.capitalize()})".ljust(24)
                     + "".join(f"{100 * e[k]['median']:>9.1f}%" for k in MX.METRICS)
                     + ("   <- kept" if t is res.chosen else ""))
    return "\n".join(lines) + "\n\n" + measured_text(res.chosen.result, per_request)


def dumps(d: dict) -> str:
    return json.dumps(d, indent=1, sort_keys=True, allow_nan=False) + "\n"
