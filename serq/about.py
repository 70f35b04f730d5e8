"""What made a run: serQ's version (``VERSION``, which pyproject.toml
makes the installed package's version from: ``pip install``, ``make
install``), the IR's digest and the report's ``made`` section
(docs/report.md)."""

from __future__ import annotations

import hashlib

# read without importing serq (pyproject.toml) and without importlib.metadata
# (email, zipfile and a search of sys.path: 15-20 ms of every report)
VERSION = "0.1.0"


def version() -> str:
    return VERSION


def ir_digest(program) -> str:
    """``sha256:`` and the hex digest of the IR's canonical JSON, the bytes
    ``serq ir`` prints (so ``serq ir … | sha256sum`` gives the same digits)."""
    from .ir import codec
    return "sha256:" + hashlib.sha256(codec.dumps(program).encode("utf-8")).hexdigest()


# the keys of ``made`` the text report's first line leaves out: they change
# with every release and every edit, not with what a reader compares
NOT_IN_TEXT = ("ir", "serq")


def made(program, origin: dict | None) -> dict:
    """What made a run: the program (its path as given: ``origin``'s, else
    the IR's first file), the instance file and the inputs given (None when
    unknown: a run of IR), the execution settings, the IR's digest, serQ's
    version."""
    origin = origin or {}
    path = origin.get("program") or (program.files[0] if program.files else None)
    inputs = origin.get("inputs")
    return {
        "program": path,
        "instance": origin.get("instance"),
        "inputs": None if inputs is None else {k: str(v) for k, v in inputs.items()},
        "seed": program.seed,
        "horizon": program.horizon,
        "warmup": program.warmup,
        "arrivals": program.arrivals,
        "trace": program.trace,
        "ir": ir_digest(program),
        "serq": version(),
    }
