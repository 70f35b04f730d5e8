"""serQ from Python.

    import serq
    prog = serq.load("examples/multi-turn/vllm.sq", set={"Lambda": 0.6})
    rep = prog.run(horizon=300, warmup=30, seed=1)
    rep.observes["ttft"].mean, rep.pools["kv"].preemptions
    table = serq.sweep(prog, set={"Lambda": [0.3, 0.6, 0.9]}, seeds=range(1, 6), horizon=300)

``docs/python.md`` is the guide.  ``import serq`` is cheap: each name is
imported when first used."""

from __future__ import annotations

import importlib
import sys as _sys

# An IR tree is as deep as a program's longest chain of operators: an
# aggregate of 4 096 terms (the most a program writes out) is a chain of
# 4 096 additions, 8 192 levels of JSON, which the codec, the validator and
# json read and write recursively.  Python's default limit of 1 000 frames
# is too shallow for it; 20 000 reads and writes such a program with the
# usual 8 MB stack.  Deeper input is refused with a located error (E103,
# E903, E910), never a RecursionError.
if _sys.getrecursionlimit() < 20_000:
    _sys.setrecursionlimit(20_000)

# name -> (module, attribute); attribute None: the module itself
_LAZY = {
    "load": ("serq.api.program", "load"),
    "loads": ("serq.api.program", "loads"),
    "Program": ("serq.api.program", "Program"),
    "Report": ("serq.api.report", "Report"),
    "Sample": ("serq.api.report", "Sample"),
    "sweep": ("serq.sweeps", "sweep"),
    "Sweep": ("serq.sweeps", "Sweep"),
    "read_table": ("serq.tables.table", "read"),
    "SerqError": ("serq.diag", "SerqError"),
    "oracle": ("serq.oracle", None),
    "plot": ("serq.plot", None),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'serq' has no attribute {name!r}") from None
    mod = importlib.import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
