"""``dataclass``, with its methods made when a class is first used.

The IR (serq.ir.model) and the AST (serq.syntax.ast) are some 160 dataclasses;
making a dataclass writes and compiles its ``__init__``, ``__eq__``,
``__repr__``, ``__hash__`` and (frozen) ``__setattr__``/``__delattr__``, which
was half of what a command spent importing serQ, for classes most commands
never touch (``serq check`` of a small program uses a fifth of them).  Here
the decorator puts a stand-in under each name ``dataclasses.dataclass`` would
set; the first time any of them is read (an instance made or compared, a
``fields()``, a ``repr``, a pattern's ``__match_args__``) the class is made a
dataclass by ``dataclasses.dataclass`` itself, in place, and every stand-in is
gone: from then on it is the same class, with the same methods, that the
eager decorator makes.

Only the keywords ``frozen`` and ``eq`` (and none) are taken; a class this
module decorates must leave those names to the decorator (it does not define
``__init__``, ``__eq__``, ``__repr__``, ``__hash__`` itself).
"""

from __future__ import annotations

import dataclasses
import threading

field = dataclasses.field

# what dataclasses.dataclass sets on a class (frozen: its __hash__ and the
# last two as well; otherwise __hash__ is None, set at once)
_NAMES = ("__init__", "__repr__", "__eq__", "__match_args__", "__dataclass_fields__",
          "__dataclass_params__")
_FROZEN = ("__hash__", "__setattr__", "__delattr__")
_LOCK = threading.RLock()


class _StandIn:
    """Under one of a lazy class's names until the class is made."""

    __slots__ = ("owner", "name")

    def __init__(self, owner, name):
        self.owner = owner
        self.name = name

    def __get__(self, obj, cls=None):
        make(self.owner)
        # the real attribute, as the class (or the instance) has it now
        if obj is None:
            return getattr(cls if cls is not None else self.owner, self.name)
        return getattr(obj, self.name)


def make(cls) -> None:
    """Make the lazy class `cls` a dataclass now (its bases first), once."""
    with _LOCK:
        pending = cls.__dict__.get("__serq_lazy__")
        if pending is None:
            return
        for base in cls.__mro__[1:]:
            if "__serq_lazy__" in base.__dict__:
                make(base)
        for name in pending[1]:
            if isinstance(cls.__dict__.get(name), _StandIn):
                delattr(cls, name)
        if pending[2]:
            cls.__doc__ = None      # (a class's __doc__ cannot be deleted)
        delattr(cls, "__serq_lazy__")
        dataclasses.dataclass(cls, **pending[0])


def dataclass(cls=None, /, *, frozen: bool = False, eq: bool = True):
    """``dataclasses.dataclass(cls, frozen=…, eq=…)``, made when first used."""
    def wrap(c):
        names = _NAMES + (_FROZEN if frozen else ())
        for name in names + ("__hash__",):
            if name in c.__dict__:
                raise TypeError(f"{c.__name__} defines {name}: decorate it with dataclasses.dataclass")
        no_doc = c.__dict__.get("__doc__") is None
        c.__serq_lazy__ = ({"frozen": frozen, "eq": eq}, names, no_doc)
        for name in names:
            setattr(c, name, _StandIn(c, name))
        if eq and not frozen:
            c.__hash__ = None       # as dataclasses.dataclass leaves it
        if no_doc:
            c.__doc__ = _StandIn(c, "__doc__")
        return c
    return wrap if cls is None else wrap(cls)
