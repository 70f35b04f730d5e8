"""The linker: source text → IR (``compile_source``, ``compile_file``)."""

from __future__ import annotations

from typing import Optional

from ..diag import Diagnostic, SerqError
from ..ir.model import Program
from ..syntax.parser import parse
from .linker import Linker


def compile_source(text: str, path: str = "<input>", sets: Optional[dict] = None,
                   horizon: Optional[float] = None, warmup: float = 0.0, seed: int = 1,
                   arrivals: Optional[int] = None, trace: Optional[str] = None) -> Program:
    """Parse and link a program.  ``sets`` maps input names to expression
    text (``--set name=expr``); the execution settings go into the IR.
    ``horizon`` None links for inspection (``serq check``) with a
    placeholder horizon of 1."""
    prog = parse(text, path)
    settings = {"horizon": 1.0 if horizon is None else horizon, "warmup": warmup, "seed": seed,
                "arrivals": arrivals, "trace": trace}
    return Linker(path, sets, settings).link(prog)


def compile_file(path: str, **kw) -> Program:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SerqError(Diagnostic("E001", f"cannot read {path}: {e.strerror}"))
    return compile_source(text, path, **kw)


__all__ = ["compile_source", "compile_file"]
