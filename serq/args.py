"""The public functions' arguments, checked at the door (docs/python.md,
"Errors"): an argument of the wrong type is an :class:`ArgumentTypeError`
— a ``SerqError`` (E970) that is also a ``TypeError`` — naming the function
and the argument, before serq does anything with it; a path is a ``str`` or
an ``os.PathLike`` and nothing else (an integer is never taken for a file
descriptor)."""

from __future__ import annotations

import numbers
import os
from typing import Optional

from .diag import Diagnostic, SerqError


class ArgumentTypeError(SerqError, TypeError):
    """An argument of a public function has the wrong type."""


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def wrong(where: str, name: str, want: str, value) -> ArgumentTypeError:
    return ArgumentTypeError(Diagnostic("E970", f"{where}: {name}= is {want}, not "
                                                f"{type(value).__name__} {_shown(value)}"))


def path(where: str, name: str, value, optional: bool = False) -> Optional[str]:
    """A path argument as ``str``."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        p = os.fspath(value)
        if isinstance(p, str):
            return p
    raise wrong(where, name, "a path (str or os.PathLike)", value)


def flag(where: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise wrong(where, name, "True or False", value)
    return value


def number(where: str, name: str, value, optional: bool = False) -> Optional[float]:
    """A real number (not a bool), as a float; one too large for a float is a
    usage error, not an OverflowError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise wrong(where, name, "a number", value)
    try:
        return float(value)
    except OverflowError:
        raise SerqError(Diagnostic("E970", f"{where}: {name}= is beyond what a float holds "
                                           "(about 1.8e308)", help="give inf for no bound")) from None


def whole(where: str, name: str, value, optional: bool = False) -> Optional[int]:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise wrong(where, name, "a whole number", value)
    return int(value)


def text(where: str, name: str, value, optional: bool = False) -> Optional[str]:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise wrong(where, name, "a str", value)
    return value
