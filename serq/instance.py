"""Instance files: a run's settings kept beside the program (§Arrivals and the
run: "an explicit instance file").

    // examples/multi-turn/instances/vllm.sq
    run { horizon 300; warmup 30; seed 1; Lambda 0.3; }

`horizon`, `warmup`, `seed`, `arrivals` and `trace` are the execution settings
(`trace` a path relative to the instance file); any other name gives the
program's input of that name (declared with `args.number`) a value, as
`--set NAME=VALUE` does.  A program's default instance is
`instances/NAME.sq` in its directory; `serq run PROG.sq` without `--horizon`
or `--instance` uses it.  What the command line says wins: its flags over the
instance's settings, its `--set` and `-- NAME=VALUE` over its values.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Optional

from .diag import Diagnostic, SerqError, Span
from .syntax import ast as A

SETTINGS = ("horizon", "warmup", "seed", "arrivals", "trace")


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
                inst.settings[name] = _setting(name, expr, path)
            else:
                inst.inputs[name] = _Located(expr, span)
                inst.texts[name] = _source(text, expr.span)
        except SerqError as e:
            problems.extend(e.diagnostics)
    if problems:
        raise SerqError(problems)
    return inst


def _setting(name: str, e: A.Expr, path: str):
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
        if not (v >= 0 and v == math.floor(v) and v < 2 ** 63):
            raise _err(e.span, f"a seed is a whole number ≥ 0, not {_fmt(v)}")
        return int(v)
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
    lines = text.splitlines()[span.line - 1:span.end_line]
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


def _fmt(v: float) -> str:
    return str(int(v)) if math.isfinite(v) and v == math.floor(v) else str(v)


@dataclass
class Resolved:
    """A run's settings and inputs: ``settings`` (horizon, warmup, …),
    ``values`` (input name -> the text of a ``--set``, or an instance file's
    expression), ``instance`` (the file read, or None), ``given`` (input name
    -> its value's text, as the command line or the file gave it)."""
    settings: dict
    values: dict
    instance: Optional[str]
    given: dict


def resolve(program: str, instance: Optional[str], flags: dict, sets: dict,
            default: bool = True) -> Resolved:
    """The settings and input values of a run: the instance file's (the one
    given, else with ``default`` the program's default instance when the flags
    give no horizon), under the command line's flags and sets."""
    path = instance
    if path is None and default and flags.get("horizon") is None:
        path = default_for(program)
    settings: dict = {}
    values: dict = {}
    given: dict = {}
    if path is not None:
        inst = read(path)
        settings.update(inst.settings)
        values.update(inst.inputs)
        given.update(inst.texts)
    settings.update({k: v for k, v in flags.items() if v is not None})
    values.update(sets)
    given.update(sets)
    return Resolved(settings, values, path, given)


def default_path(program: str) -> str:
    """Where a program's default instance would be."""
    d, name = os.path.split(program)
    return os.path.join(d, "instances", name)
