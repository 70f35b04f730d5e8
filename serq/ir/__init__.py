"""The IR: the hub every consumer reads (model, canonical JSON codec, validator)."""

from . import model
from .codec import dumps, loads, from_data, to_data
from .model import IR_VERSION, Program
from .validate import validate

__all__ = ["model", "dumps", "loads", "from_data", "to_data", "IR_VERSION", "Program", "validate",
           "read"]


def read(path: str) -> Program:
    """Read and validate an IR file."""
    from ..diag import SerqError, Diagnostic
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SerqError(Diagnostic("E001", f"cannot read {path}: {e.strerror}"))
    program = loads(text, path)
    validate(program)
    return program
