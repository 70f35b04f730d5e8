"""One constant tuned on a measured run (`serq measured --tune NAME=V1,V2,…`).

A kernel profile measures the kernels and nothing else: the time an
iteration takes beyond them (the host's scheduling, input preparation,
output handling and launches: the vLLM program's ``gap``) is a property of
the machine the GPU sits in, and one measured run of that machine says it.
Each value is replayed (the program's other constants as linked: its
instance and ``--set``), and the one kept is the value whose largest
difference from the measured summary (over its fifteen rows: the mean,
median, P90, P95 and P99 of TTFT, TPOT and latency) is least; the first of
equals.  docs/calibration.md: this is how the examples' ``gap`` was tuned
on one run and then predicted the others."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..diag import Diagnostic, SerqError
from . import metrics as MX
from .command import E_USE, MeasuredResult, default_program, measured_setup, replay_setup

MAX_VALUES = 1000


@dataclass
class Trial:
    text: str                 # the value as given
    value: float
    result: MeasuredResult
    table: dict               # result.table(), made once
    worst: tuple              # (|difference| %, metric, stat) of the summary's largest row

    @classmethod
    def of(cls, text: str, value: float, result: MeasuredResult) -> "Trial":
        table = result.table()
        d = table["diff_pct"]["serq"]
        return cls(text, value, result, table, max((abs(d[m][s]), m, s) for m in MX.METRICS for s in MX.STATS))


@dataclass
class TuneResult:
    name: str
    trials: list
    chosen: Trial


def parse(spec: str) -> tuple:
    """``"gap=0,0.001,0.0017"`` → ``("gap", [("0", 0.0), …])``; a usage error
    for anything else."""
    name, sep, text = spec.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise SerqError(Diagnostic(E_USE, f"--tune {spec[:60]}: not name=values",
                                   help="--tune gap=0,0.0005,0.001,0.0015,0.002"))
    return name, values(name, [x.strip() for x in text.split(",")])


def values(name: str, texts: list) -> list:
    """``[(text, number)]``: each text a finite number, none twice."""
    out, seen = [], set()
    for t in texts:
        try:
            v = float(t)
        except ValueError:
            v = math.nan
        if not math.isfinite(v):
            raise SerqError(Diagnostic(E_USE, f"--tune {name}: `{t[:40]}` is not a finite number",
                                       help=f"--tune {name}=0,0.0005,0.001"))
        if v in seen:
            raise SerqError(Diagnostic(E_USE, f"--tune {name}: the value {t} is given twice"))
        seen.add(v)
        out.append((t, v))
    if len(out) > MAX_VALUES:
        raise SerqError(Diagnostic(E_USE, f"--tune {name}: {len(out):,} values, more than {MAX_VALUES:,}"))
    return out


def tune(bundle: str, program, instance, sets: dict, name: str, values: list, *, arrivals: str = "workload",
         workload=None, linker=None, declares=None, progress=None) -> TuneResult:
    """``values``: [(text, number)] (:func:`parse`); ``progress(i, n)`` is told
    as each replay ends."""
    program = program or default_program()
    if name in sets:
        raise SerqError(Diagnostic(E_USE, f"--tune {name} and --set {name} go together: the tuned constant takes "
                                          "each of its values in turn",
                                   help=f"leave out --set {name}"))
    if declares is not None and not declares(program, name):
        raise SerqError(Diagnostic(E_USE, f"--tune {name}: {program} has no input `{name}`",
                                   help=f"an input of the program: let {name} = args.number(\"{name}\", …);"))
    if not values:
        raise SerqError(Diagnostic(E_USE, f"--tune {name}: no values"))
    st = measured_setup(bundle, program, workload, declares)
    trials = []
    for i, (text, v) in enumerate(values):
        trials.append(Trial.of(text, v, replay_setup(st, program, instance, {**sets, name: text},
                                                     arrivals=arrivals, linker=linker)))
        if progress is not None:
            progress(i + 1, len(values))
    chosen = min(trials, key=lambda t: t.worst[0])
    chosen.result.notes.append(f"{name} {chosen.text}: tuned on this run, the value of the {len(trials)} given "
                               f"whose largest summary difference is least ({chosen.worst[0]:.1f} %)")
    return TuneResult(name, trials, chosen)
