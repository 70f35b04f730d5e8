"""The IR: the hub every consumer reads (model, canonical JSON codec, validator)."""

from . import model
from .codec import dumps, loads, from_data, to_data
from .model import IR_VERSION, Program
from .validate import validate

__all__ = ["model", "dumps", "loads", "from_data", "to_data", "IR_VERSION", "Program", "validate",
           "read"]


def read(path: str) -> Program:
    """Read and validate an IR file."""
    from ..diag import read_text
    program = loads(read_text(path), path)
    validate(program)
    return program
