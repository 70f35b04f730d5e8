"""The linker: source text → IR (``compile_source``, ``compile_file``)."""

from __future__ import annotations

from typing import Optional

import math

from ..diag import Diagnostic, SerqError, Span, read_text
from ..ir.model import Program
from ..syntax import ast as A
from ..syntax.parser import parse
from .libraries import parse_once
from .linker import Linker


def compile_source(text: str, path: str = "<input>", sets: Optional[dict] = None,
                   horizon: Optional[float] = None, warmup: float = 0.0, seed: int = 1,
                   arrivals: Optional[int] = None, trace: Optional[str] = None,
                   parsed: Optional[dict] = None, input_folds: Optional[list] = None,
                   size_inputs: Optional[set] = None) -> Program:
    """Parse and link a program.  ``sets`` maps input names to expression
    text (``--set name=expr``); the execution settings go into the IR.
    ``horizon`` None links for inspection (``serq check``) with a
    placeholder horizon of 1.  A value of ``sets`` may also be a number.
    ``parsed``: a dict that keeps the program's and its libraries' syntax
    trees from one call to the next (the linker reads a tree and never
    changes it), so that linking a program again does not parse it again.
    ``input_folds``: a list the linker appends to the span of each constant
    it folds from an input's value by anything but products (``k > 2``,
    ``max(bs, 4)``, ``B + 1``; serq.link.shapes).  ``size_inputs``: a set the
    linker adds to the inputs a family's size reads (`queue D[ND]`: ``ND``)."""
    sets = _set_texts(sets)
    settings = {"horizon": 1.0 if horizon is None else horizon, "warmup": warmup, "seed": seed,
                "arrivals": arrivals, "trace": trace}
    _check_settings(settings)
    if not isinstance(text, str):
        raise SerqError(Diagnostic("E001", f"{path}: a program is text, not {type(text).__name__}"))
    try:
        prog = parse_once(parsed, text, path, parse)
        return Linker(path, sets, settings, parsed=parsed, input_folds=input_folds,
                      size_inputs=size_inputs).link(prog)
    except RecursionError as e:   # Python's stack, not the program's error: said as what it is
        raise SerqError(Diagnostic(
            "E103", "the program nests too deeply for serq (an expression of some thousands of operators "
            "in a row, or definitions within definitions)", _too_deep_at(e.__traceback__, _own_files(path, sets)) or Span(path, 1, 1, 1, 2),
            help="write it in steps, each naming the last (`let`, `set`), or as an aggregate: "
                 "`sum j in n (…)`")) from None


# what holds a program's parts (a session's turn holds the server): too wide to say where it nests
_HOLDERS = (A.Program, A.Main, A.Workload, A.WBlock, A.Server, A.Block, A.Turn, A.Def, A.DeviceDecl, A.PoolDecl,
            A.EngineDecl, A.ESchedule, A.ERequest, A.QueueDecl, A.QEntry)


def _too_deep_at(tb, own: set) -> Optional[Span]:
    """Where a program the linker's recursion could not read nests: of the
    statements and expressions the linker's frames were reading as the stack
    ran out, the outermost in the file (of ``own``: the program's, an
    input's value) of the innermost read there (a library's definitions
    are said at their call).  So: the statement whose expression is a chain
    of thousands of operators, the outermost of thousands of nested blocks,
    the call of a chain of definitions, an input's value given as a chain."""
    spans = []
    while tb is not None:
        code, local = tb.tb_frame.f_code, tb.tb_frame.f_locals
        for name in code.co_varnames[:code.co_argcount]:     # a frame's arguments: its other locals may be stale
            v = local.get(name)
            if isinstance(v, A.Node) and not isinstance(v, _HOLDERS) and v.span.file in own:
                spans.append(v.span)
        tb = tb.tb_next
    return next(sp for sp in spans if sp.file == spans[-1].file) if spans else None


def compile_file(path: str, **kw) -> Program:
    return compile_source(read_text(path), path, **kw)


def _check_settings(settings: dict) -> None:
    """The execution settings are of their types (their ranges are the
    validator's): numbers, a whole seed and count, a path."""
    def bad(name, want):
        v = settings[name]
        raise SerqError(Diagnostic("E740", f"{name} is {want}, not {type(v).__name__} {v!r}"[:200],
                                   field=f"$.{name}"))
    for name in ("horizon", "warmup"):
        v = settings[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            bad(name, "a number")
    for name in ("seed", "arrivals"):
        v = settings[name]
        if v is None and name == "arrivals":
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            bad(name, "a whole number")
    if settings["trace"] is not None and not isinstance(settings["trace"], str):
        bad("trace", "a path")


def _own_files(path: str, sets: dict) -> set:
    """The program's file and those of its inputs' values (`--set NAME`, an
    instance file): where the program is said, its libraries aside."""
    own = {path}
    for name, v in sets.items():
        own.add(v.span.file if isinstance(v, A.Node) else f"--set {name}")
    return own


def _set_texts(sets: Optional[dict]) -> dict:
    """``--set`` values as expression text (a number is written as one); an
    instance file's inputs come already parsed (its expressions, located)."""
    out = {}
    for name, v in (sets or {}).items():
        if isinstance(v, (str, A.Node)):
            out[name] = v
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = "inf" if v == math.inf else "-inf" if v == -math.inf else "(0 / 0)" if v != v \
                else repr(v)
        else:
            raise SerqError(Diagnostic("E253", f"--set {name}: a value is an expression's text or a number, "
                                               f"not {type(v).__name__} {v!r}"[:200],
                                       help=f'sets={{"{name}": "1.5"}}'))
    return out


__all__ = ["compile_source", "compile_file"]
