"""`serq calibrate` and `serq measured`: the commands' work, between the
command line (serq.cli, through serq.api.calibration) and the modules that
read, fit and replay.

Both link the program the way `serq run` does (its instance file, then the
command line's `--set`), so what they fit or replay is the IR the program
runs as; the linking is the caller's (``linker(program, instance, sets)`` →
``(IR, resolved run)``, serq.api.calibration.link): calibration is a
consumer of the IR and reads no source."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Optional

from ..diag import Diagnostic, SerqError
from . import compose, fit as F, metrics as MX, models, profile as PF, replay as RP, runs
from .fit import E_USE

PROGRAM = os.path.join("examples", "replay", "vllm_measured.sq")
# the names of the interconnect's constants in a cost (docs/calibration.md)
COMM = ("ar_lat", "ar_tok")


def default_program() -> str:
    from ..paths import root
    return os.path.join(root(), PROGRAM)


def comm_constants(model: models.Model, tp: int, bw_gbps: float, latency_us: float) -> dict:
    """One layer's two all-reduces (after the attention's output projection
    and after the MLP), ring all-reduce over ``tp`` GPUs: each sends
    2(tp − 1)/tp of the message (a token is the model's hidden size in bf16)
    over links of ``bw_gbps`` GB/s, in 2(tp − 1) hops of ``latency_us``."""
    if tp <= 1:
        return {"ar_lat": 0.0, "ar_tok": 0.0}
    hops = 2 * (tp - 1)
    token_bytes = model.hidden * model.dtype_bytes
    return {"ar_lat": 2 * hops * latency_us * 1e-6,
            "ar_tok": 2 * (hops / tp) * token_bytes / (bw_gbps * 1e9)}


@dataclass
class CalibrateResult:
    profile: PF.Profile
    model: Optional[models.Model]
    program: str
    calibration: F.Calibration
    instance_text: str
    notes: list = field(default_factory=list)
    on_grid: Optional[list] = None    # with a run: the final constants' residuals on the profile's grid
    reads: tuple = ()                 # the files the linked program reads (serq/files.py read_by)


def calibrate(profile_dir: str, program: Optional[str], sets: dict, *, hold=(), free_too=(), layers=None,
              stages=(), budget=None, max_seqs=None, max_kv=None, link_bw=None, link_latency=None,
              instance: Optional[str] = None, comments=(), linker=None, run: Optional[str] = None,
              workload: Optional[str] = None, declares=None) -> CalibrateResult:
    """The program's cost fitted to the profile's grid; with ``run`` (a
    measured run's bundle), then fitted again at the batches the program
    makes replaying that run's workload at its engine settings (only its
    workload and settings are read, never a measured time)."""
    for t in comments:        # a line of the instance file, written as UTF-8
        bad = next((c for c in t if 0xDC80 <= ord(c) <= 0xDCFF), None)   # (a byte the locale could not decode)
        if bad is not None:
            raise SerqError(Diagnostic(E_USE, f"--comment {t!r}: byte 0x{ord(bad) - 0xDC00:02X} is not UTF-8",
                                       help="the instance file is UTF-8: write the comment in it"))
    prof = PF.read(profile_dir)
    program = program or default_program()
    model = models.model(prof.model)
    notes = []
    if layers is None:
        if model is None:
            notes.append(f"the model table has no {prof.model}: give its layer count with --layers N")
        else:
            layers = model.layers
    if (link_bw is None) != (link_latency is None):
        raise SerqError(Diagnostic(E_USE, "--link-bw and --link-latency go together: the interconnect's "
                                          "bandwidth (GB/s) and its latency (µs)"))
    comm = {}
    if link_bw is not None:
        if model is None:
            raise SerqError(Diagnostic(E_USE, f"the interconnect's constants need the model's hidden size, and "
                                              f"the model table has no {prof.model}"))
        comm = comm_constants(model, prof.tp, link_bw, link_latency)
        for k, v in comm.items():
            sets.setdefault(k, repr(v))
    p, resolved = linker(program, instance, sets)
    budget = budget or prof.budget or 2048
    max_seqs = max_seqs or prof.max_seqs or 256
    max_kv = max_kv or float(prof.attention[:, [1, 3]].max())
    g = compose.grid(prof, model or _stub(prof), layers=layers or 1, budget=budget, max_seqs=max_seqs,
                     max_kv=max_kv)
    given = {}
    if F.LAYERS in sets:     # the layer count given: the program's value, as linked
        given[F.LAYERS] = next((x.value for _, st in F.costs_of(p, list(stages) or None)
                                for x in F._nums(st.kind.cost) if x.input == F.LAYERS), None)
        given = {k: v for k, v in given.items() if v is not None}
    cal = F.calibrate(p, g, layers=layers, hold=hold, stages=list(stages) or None, values=given,
                      free_too=free_too)
    on_grid = None
    if run is not None:
        cal = _at_run(prof, model, p, cal, run, program, instance, sets, given, layers=layers, hold=hold,
                      stages=list(stages) or None, free_too=free_too, workload=workload, linker=linker,
                      declares=declares, notes=notes)
        on_grid = F.residuals(p, g, cal.profiled_values(), list(stages) or None)
    named = {c.name for c in cal.constants}
    if prof.tp > 1 and not (set(COMM) & named):
        notes.append(f"the profile is tp{prof.tp}, and the cost has no interconnect term ({', '.join(COMM)}): "
                     "a profile's kernels leave the all-reduces out")
    if prof.tp > 1 and set(COMM) & named and not comm:
        notes.append(f"the profile is tp{prof.tp}: the interconnect's constants ({', '.join(COMM)}) are the "
                     "program's; give --link-bw GB/s and --link-latency µs to set them")
    if link_bw is not None:
        notes.append(f"the interconnect: ring all-reduces over links of {link_bw:g} GB/s and {link_latency:g} µs: "
                     f"ar_lat {comm['ar_lat'] * 1e6:.1f} µs, ar_tok {comm['ar_tok'] * 1e9:.2f} ns a token, a layer")
    text = instance_text(prof, program, cal, resolved, budget, max_seqs, max_kv,
                         list(comments) + [n for n in notes if n.startswith("the interconnect")], on_grid)
    from ..files import read_by
    return CalibrateResult(prof, model, program, cal, text, notes, on_grid, tuple(read_by(p)))


# a replay's batches change a little with the constants that time them: the
# fit at a run's batches is made twice, the second at the batches the first
# fit's constants make
RUN_ROUNDS = 2


def _at_run(prof, model, p, cal, bundle, program, instance, sets, given, *, layers, hold, stages, free_too,
            workload, linker, declares, notes) -> F.Calibration:
    """The constants fitted again at the iterations of ``bundle``'s workload
    replayed through the program (serq.calib.replay) with the constants so
    far, ``RUN_ROUNDS`` times."""
    st = setup(bundle, program, workload, declares)
    if st.run.model != prof.model or st.engine.tp != prof.tp:
        raise SerqError(Diagnostic(E_USE, f"--run {bundle} is {st.run.model} at tp{st.engine.tp}, and the profile "
                                          f"is {prof.model} at tp{prof.tp}",
                                   help="fit a profile at the batches of a run of the same model and degree"))
    if model is None:
        raise SerqError(Diagnostic(E_USE, f"the model table has no {prof.model}, whose layers and KV the run's "
                                          "batches need"))
    first = cal.constants
    for _ in range(RUN_ROUNDS):
        fitted = {c.name: repr(c.value) for c in cal.constants if not c.held}
        q, _ = linker(program, instance, {**st.values, **sets, **fitted})
        batches = RP.batches(q, st.run, st.engine)
        g = compose.at_batches(prof, model, layers=layers or 1, batches=batches, label=st.run.label())
        cal = F.calibrate(q, g, layers=layers, hold=hold, stages=stages,
                          values={**given, **{c.name: c.value for c in cal.constants if not c.held}},
                          free_too=free_too)
    own = {c.name: c.default for c in first}
    for c in cal.constants:
        c.default = own.get(c.name, c.default)
    notes.append(f"fitted at the {len(g)} iterations of {st.run.label()}'s workload replayed through the program "
                 "at the run's engine settings (its requests and settings only; no measured time is read)")
    return cal


@dataclass
class Setup:
    """A measured run ready to replay: its requests, the engine's settings
    and the program's input values for them, and what was not stated."""
    run: runs.Run
    engine: RP.Engine
    values: dict
    notes: list


def setup(bundle: str, program: str, workload: Optional[str], declares) -> Setup:
    """``declares(program, name)`` says whether the program has the input
    ``name`` (without it, async_sched is given whenever the run scheduled
    asynchronously)."""
    run = runs.read(bundle, workload)
    model = RP.model_for(run)
    eng = RP.engine(run, model)
    notes = list(eng.notes)
    values = dict(eng.inputs)
    if eng.tp > 1:
        comm = _run_comm(run, model, eng.tp, notes)
        if comm:
            values.update({k: repr(v) for k, v in comm.items()})
    if eng.async_sched:
        if declares is None or declares(program, "async_sched"):
            values["async_sched"] = "1"
        else:
            notes.append(f"{program} has no input `async_sched`: it schedules synchronously")
    return Setup(run, eng, values, notes)


def _stub(prof: PF.Profile) -> models.Model:
    return models.Model(prof.model, prof.architecture, 1, 1, 1, 1, 0.0, 1)


def fmt(v: float) -> str:
    if v == 0:
        return "0"
    if math.isinf(v):
        return "inf"
    return f"{v:.6g}"


def instance_text(prof, program: str, cal: F.Calibration, resolved, budget, max_seqs, max_kv, comments=(),
                  on_grid=None) -> str:
    """The instance file: the program's run settings (from the instance it
    was linked with), its other values, and the calibrated constants."""
    lines = [f"// {os.path.basename(program)} calibrated by `serq calibrate` to the kernel profile",
             f"//   {prof.hardware}/{prof.model}/tp{prof.tp} ({prof.gpu}, vLLM {prof.vllm_version}),"]
    if cal.grid.per_batch:
        lines += [f"//   composed at the {len(cal.grid)} iterations of {cal.grid.limits['run']}'s workload replayed",
                  "//   through the program at that run's engine settings (no measured time is read).",
                  "// Relative error of the fitted step time against the profile's at those iterations (median, P90):"]
    else:
        lines += [f"//   its {len(cal.grid)} batches of at most {budget} tokens, {max_seqs} decodes and "
                  f"{fmt(max_kv)} tokens of KV.",
                  "// Relative error of the fitted step time against the profile's (median, P90):"]
    for r in cal.residuals:
        lines.append(f"//   {r.regime:<8} {r.n:>6} batches  {100 * r.median:5.1f} %  {100 * r.p90:5.1f} %")
    if on_grid:
        lines.append(f"// … and on the profile's grid ({budget} tokens, {max_seqs} decodes, {fmt(max_kv)} tokens of KV):")
        for r in on_grid:
            lines.append(f"//   {r.regime:<8} {r.n:>6} batches  {100 * r.median:5.1f} %  {100 * r.p90:5.1f} %")
    held = [c for c in cal.constants if c.held]
    for c in held:
        lines.append(f"// {c.name} is not fitted: {c.held}.")
    for t in comments:        # a comment of several lines is a `//` line each (it cannot end the header)
        lines += [f"// {part}".rstrip() for part in t.splitlines() or [""]]
    items = []
    s = resolved.settings
    for k in ("horizon", "warmup", "seed"):
        if s.get(k) is not None:
            items.append(f"{k} {fmt(s[k]) if k != 'seed' else s[k]};")
    names = {c.name for c in cal.constants}
    for k, t in resolved.given.items():
        if k not in names:
            items.append(f"{k} {t};")
    for c in cal.constants:
        items.append(f"{c.name} {fmt(c.value)};")
    body = "run {\n" + "".join(f"  {x}\n" for x in items) + "}\n"
    return "\n".join(lines) + "\n" + body


@dataclass
class MeasuredResult:
    run: runs.Run
    program: str
    instance: Optional[str]
    replay: RP.Replay
    notes: list

    def table(self) -> dict:
        rp = self.replay
        meas = MX.summary(rp.values("measured"))
        ours = MX.summary(rp.values("predicted"))
        out = {"measured": meas, "serq": ours, "diff_pct": {"serq": MX.diff_pct(ours, meas)},
               "errors": {"serq": MX.errors(rp.values("predicted"), rp.values("measured"))}}
        if rp.peer is not None:
            peer = MX.summary(rp.values("peer"))
            out["peer"] = peer
            out["diff_pct"]["peer"] = MX.diff_pct(peer, meas)
            out["errors"]["peer"] = MX.errors(rp.values("peer"), rp.values("measured"))
        return out


def measured(bundle: str, program: Optional[str], instance: Optional[str], sets: dict, *,
             arrivals: str = "workload", workload: Optional[str] = None, linker=None,
             declares=None) -> MeasuredResult:
    """``linker(program, instance, sets)`` links the program; ``declares(program,
    name)`` says whether it has the input ``name`` (without it, async_sched is
    given whenever the run scheduled asynchronously)."""
    program = program or default_program()
    st = measured_setup(bundle, program, workload, declares)
    return replay_setup(st, program, instance, sets, arrivals=arrivals, linker=linker)


def measured_setup(bundle: str, program: str, workload: Optional[str], declares) -> Setup:
    """:func:`setup`, and a note where the run's requests do not reproduce its
    own summary."""
    st = setup(bundle, program, workload, declares)
    bad = RP.check_summary(st.run)
    if bad:
        st.notes.append("the measured requests do not reproduce the bundle's summary.txt: " + "; ".join(bad[:3]))
    return st


def replay_setup(st: Setup, program: str, instance: Optional[str], sets: dict, *, arrivals: str,
                 linker) -> MeasuredResult:
    """The run replayed through the program linked with its instance, the
    run's settings and ``sets`` over them."""
    p, resolved = linker(program, instance, {**st.values, **sets})
    rp = RP.replay(p, st.run, st.engine, arrivals)
    return MeasuredResult(st.run, program, resolved.instance, rp, list(st.notes))


def _run_comm(run: runs.Run, model, tp: int, notes: list) -> dict:
    """The interconnect's constants from the bundle's config.json (LLMServingSim's
    cluster configuration of the run: `link_bw` GB/s, `link_latency` ns)."""
    from . import read as R
    path = os.path.join(run.path, "config.json")
    if not os.path.isfile(path) or model is None:
        notes.append(f"a tp{tp} run without config.json (or a model the table has not): the program's own "
                     f"interconnect constants")
        return {}
    cfg = R.json_file(path, "run's config.json")
    if not isinstance(cfg, dict):
        raise R.bad(path, 1, "config.json is a JSON object")
    bw = R.field(cfg, "link_bw", path, 1, float, minimum=0)
    lat = R.field(cfg, "link_latency", path, 1, float, minimum=0)
    if not bw > 0:
        raise R.bad(path, 1, "`link_bw` is 0: the interconnect's bandwidth is positive")
    comm = comm_constants(model, tp, bw, lat / 1000.0)
    notes.append(f"interconnect: tp{tp} ring all-reduces over links of {bw:g} GB/s and {lat / 1000:g} µs "
                 f"(config.json): ar_lat {comm['ar_lat'] * 1e6:.1f} µs, ar_tok {comm['ar_tok'] * 1e9:.1f} ns "
                 "a token, per layer")
    return comm
