"""Instance files: a run's settings kept beside the program (§Arrivals and the
run: "an explicit instance file").

    // examples/multi-turn/instances/vllm.sq
    run { horizon 300; warmup 30; seed 1; Lambda 0.3; }

`horizon`, `warmup`, `seed`, `arrivals` and `trace` are the execution settings
(`trace` a path relative to the instance file); any other name gives the
program's input of that name (declared with `args.number`) a value, as
`--set NAME=VALUE` does.  A program's default instance is
`instances/NAME.sq` in its directory; `serq run PROG.sq` without `--instance`
uses it.  What the command line says wins: its flags over the instance's
settings (a `--horizon` keeps the instance's warm-up unless `--warmup` is
given too, or the warm-up is not below it: then the run has none, and a note
on stderr says so), its `--set` and `-- NAME=VALUE` over its values.
"""

from __future__ import annotations

import math
import os
from dataclasses import field
from typing import Optional

from .diag import Diagnostic, SerqError, Span, number_text as _fmt, source_lines
from .records import dataclass
from .syntax import ast as A

SETTINGS = ("horizon", "warmup", "seed", "arrivals", "trace")
UNSAID = {"warmup": 0.0, "seed": 1}      # a run's setting when nothing gives it


@dataclass
class Instance:
    path: str
    settings: dict = field(default_factory=dict)   # horizon, warmup, seed, arrivals, trace
    inputs: dict = field(default_factory=dict)     # input name -> its value, an expression with its location
    texts: dict = field(default_factory=dict)      # input name -> its value's text, as the file writes it


def default_for(program: str) -> Optional[str]:
    """The program's default instance file, `instances/NAME.sq` beside it, if there is one."""
    if not program.endswith(".sq"):
        return None
    path = default_path(program)
    return path if os.path.isfile(path) else None


def read(path: str) -> Instance:
    from .diag import read_text
    from .syntax.parser import parse_instance
    if not isinstance(path, str):     # (never a file descriptor: open(2) would close stderr)
        raise TypeError(f"an instance file is a path, not {type(path).__name__}")
    text = read_text(path, "instance file ")
    block = parse_instance(text, path)
    inst = Instance(path)
    problems = []
    seen: dict = {}
    for name, expr, span in block.items:
        if name in seen:
            problems.append(Diagnostic("E121", f"`{name}` is given twice", span,
                                       notes=[f"first given at {seen[name]}"]))
            continue
        seen[name] = span
        try:
            if name in SETTINGS:
                inst.settings[name] = _setting(name, expr, path, _source(text, expr.span))
            else:
                inst.inputs[name] = _Located(expr, span)
                inst.texts[name] = _source(text, expr.span)
        except SerqError as e:
            problems.extend(e.diagnostics)
    if problems:
        raise SerqError(problems)
    return inst


def _setting(name: str, e: A.Expr, path: str, written: str):
    if name == "trace":
        if not isinstance(e, A.Str):
            raise _err(e.span, "`trace` is a file name in quotes: `trace \"sessions.csv\";`")
        return os.path.normpath(os.path.join(os.path.dirname(path), e.value))
    v = _number(e)
    if v is None:
        raise _err(e.span, f"`{name}` is a number, not an expression")
    if name == "horizon" and not (v > 0 and math.isfinite(v)):
        raise _err(e.span, f"the horizon is a positive finite number, not {_fmt(v)}")
    if name == "warmup" and not (v >= 0 and math.isfinite(v)):
        raise _err(e.span, f"the warm-up is a finite number ≥ 0, not {_fmt(v)}")
    if name == "seed":
        from .ir.model import SEEDS, SEEDS_TEXT
        # (its digits, not the float it parses to: 9007199254740993 is no float's)
        seed = int(written) if written.isdigit() else v
        if not (0 <= seed < SEEDS and seed == math.floor(seed)):
            raise _err(e.span, f"a seed is {SEEDS_TEXT}, not {written}")
        return int(seed)
    if name == "arrivals":
        if not (v >= 1 and v == math.floor(v) and v <= 10 ** 9):
            raise _err(e.span, f"`arrivals` is a whole number ≥ 1, not {_fmt(v)}")
        return int(v)
    return float(v)


def _number(e: A.Expr) -> Optional[float]:
    if isinstance(e, A.Num):
        return e.value
    if isinstance(e, A.Unary) and e.op == "-" and isinstance(e.arg, A.Num):
        return -e.arg.value
    if isinstance(e, A.Name) and e.name == "inf":
        return math.inf
    return None


def _source(text: str, span: Span) -> str:
    """The text of ``span`` in ``text`` (lines joined by a space)."""
    lines = source_lines(text)[span.line - 1:span.end_line]
    if len(lines) == 1:
        return lines[0][span.col - 1:span.end_col - 1]
    return " ".join([lines[0][span.col - 1:]] + [x.strip() for x in lines[1:-1]]
                    + [lines[-1][:span.end_col - 1]]).strip()


def _Located(expr: A.Expr, name_span: Span) -> A.Expr:
    """An input's value as the linker takes it (an expression, like a parsed
    `--set`), located at the name it gives a value to."""
    import dataclasses
    return dataclasses.replace(expr, span=Span(name_span.file, name_span.line, name_span.col,
                                               expr.span.end_line, expr.span.end_col))


def _err(span: Span, msg: str) -> SerqError:
    return SerqError(Diagnostic("E120", msg, span,
                                help="an instance file is `run { horizon T; warmup W; seed N; NAME value; }`"))


@dataclass
class Resolved:
    """A run's settings and inputs: ``settings`` (horizon, warmup, …),
    ``values`` (input name -> the text of a ``--set``, or an instance file's
    expression), ``instance`` (the file read, or None), ``given`` (input name
    -> its value's text, as the command line or the file gave it), ``note``
    (what was left out of the instance, to be said: ``keep_warmup``)."""
    settings: dict
    values: dict
    instance: Optional[str]
    given: dict
    note: Optional[str] = None


def resolve(program: str, instance: Optional[str], flags: dict, sets: dict,
            default: bool = True) -> Resolved:
    """The settings and input values of a run: the instance file's (the one
    given, else with ``default`` the program's default instance), under the
    command line's flags and sets: a ``--horizon`` keeps the instance's
    warm-up unless ``--warmup`` is given too or it is not below the horizon
    (``keep_warmup``)."""
    path = instance
    if path is None and default:
        path = default_for(program)
    settings: dict = {}
    values: dict = {}
    given: dict = {}
    given_flags = {k: v for k, v in flags.items() if v is not None}
    note = None
    if path is not None:
        inst = read(path)
        settings, note, useful = under(inst, given_flags, sets)
        if instance is None and not useful:
            # the default instance gives this run nothing the command line does not: it was not read
            settings, path = {}, None
        else:
            values.update(inst.inputs)
            given.update(inst.texts)
    settings.update(given_flags)
    values.update(sets)
    given.update(sets)
    return Resolved(settings, values, path, given, note)


def under(inst: Instance, flags: dict, sets) -> tuple[dict, Optional[str], bool]:
    """An instance's settings under the flags given (``keep_warmup``'s rule),
    its note, and whether it gives the run anything they do not (a setting
    other than the one a run has when nothing gives it, an input not set)."""
    settings = dict(inst.settings)
    note = keep_warmup(flags, settings, inst.path)
    kept = {k: v for k, v in settings.items() if flags.get(k) is None and v != UNSAID.get(k, object())}
    return settings, note, bool(kept) or any(k not in sets for k in inst.inputs)


def keep_warmup(flags: dict, settings: dict, path: str) -> Optional[str]:
    """A horizon given without a warm-up keeps the instance's warm-up when it
    is below the horizon; otherwise the warm-up is dropped from ``settings``
    and the note that says so is returned (None when nothing was dropped)."""
    h, w = flags.get("horizon"), settings.get("warmup")
    if isinstance(h, (int, float)) and not isinstance(h, bool) and flags.get("warmup") is None \
            and w is not None and w >= h:
        del settings["warmup"]
        return (f"note: the horizon {_fmt(h)} is not beyond the warm-up {_fmt(w)} of the instance {path}, "
                "so this run has no warm-up (give one below the horizon with --warmup W, warmup= from Python)")
    return None


def default_path(program: str) -> str:
    """Where a program's default instance would be."""
    d, name = os.path.split(program)
    return os.path.join(d, "instances", name)
