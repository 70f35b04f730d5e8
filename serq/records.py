"""``dataclass``, with its methods made when a class is first used.

The IR (serq.ir.model) and the AST (serq.syntax.ast) are some 160 dataclasses;
making a dataclass writes and compiles its ``__init__``, ``__eq__``,
``__repr__``, ``__hash__`` and (frozen) ``__setattr__``/``__delattr__``, which
was half of what a command spent importing serQ, for classes most commands
never touch (``serq check`` of a small program uses a fifth of them).  Here
the decorator puts a stand-in under each name ``dataclasses.dataclass`` would
set; the first time any of them is read (an instance made, a ``fields()``, a
pattern's ``__match_args__``) the class is made a dataclass by
``dataclasses.dataclass`` itself, in place, without its ``__repr__``,
``__eq__`` and ``__hash__``, which wait for their own first call (a class
made is rarely compared or printed: ``serq check`` of a small program
compares one of the seventy it makes): then ``dataclasses.dataclass`` makes
them for a twin of the class (its namespace as written, its bases) and they
are set on the class.  Either way, from then on it is the same class, with
the same methods (the same code, the same names), that the eager decorator
makes.  A class is made whole or not at all: a signal waits for it
(serq/signals.py).

Only the keywords ``frozen`` and ``eq`` (and none) are taken; a class this
module decorates must leave those names to the decorator (it does not define
``__init__``, ``__eq__``, ``__repr__``, ``__hash__`` itself).
"""

from __future__ import annotations

import dataclasses
import threading

from .signals import deferred

field = dataclasses.field

# what dataclasses.dataclass sets on a class (frozen: its __hash__ and the
# last two as well; otherwise __hash__ is None, set at once)
_NAMES = ("__init__", "__repr__", "__eq__", "__match_args__", "__dataclass_fields__",
          "__dataclass_params__")
_FROZEN = ("__hash__", "__setattr__", "__delattr__")
# made at their own first read (_twin)
_LATER = ("__repr__", "__eq__", "__hash__")
_LOCK = threading.RLock()


class _StandIn:
    """Under one of a lazy class's names until the class is made."""

    __slots__ = ("owner", "name")

    def __init__(self, owner, name):
        self.owner = owner
        self.name = name

    def __get__(self, obj, cls=None):
        _make(self.owner, False)
        # the real attribute, as the class (or the instance) has it now
        if obj is None:
            return getattr(cls if cls is not None else self.owner, self.name)
        return getattr(obj, self.name)


def _later(owner, name: str):
    """The stand-in of ``__repr__``, ``__eq__`` or ``__hash__``: a function,
    which makes the method when first called and calls it.  (Not a
    descriptor: Python looks these up from C — ``==``, ``hash()``,
    ``repr()`` — and drops an exception raised by a descriptor's
    ``__get__`` there, ``==`` then comparing identities, so a signal's
    exception raised in it was lost and the class left half made, its
    stand-in calling itself until the C stack overflowed: seed 26 #1281.)"""
    def stand_in(self, *args):
        _make(owner, True)
        return getattr(owner, name)(self, *args)
    stand_in.__name__ = name
    stand_in.__qualname__ = f"{owner.__qualname__}.{name}"
    stand_in.__serq_stand_in__ = True
    return stand_in


def _standing(value) -> bool:
    """``value`` is a stand-in (a lazy class's name not yet made)."""
    return isinstance(value, _StandIn) or getattr(value, "__serq_stand_in__", False)


def make(cls) -> None:
    """Make the lazy class `cls` a dataclass now, whole (its bases first), once."""
    _make(cls, True)


def _make(cls, later: bool) -> None:
    """The class made, but for ``__repr__``, ``__eq__`` and ``__hash__``
    unless ``later``: whole or not at all, a signal waiting for its end
    (serq/signals.py's ``deferred``; half made, a class's stand-ins would
    stay, and call themselves)."""
    if "__serq_lazy__" not in cls.__dict__:
        return
    with deferred() as held:
        with _LOCK:
            _making(cls, later)
    held.release()


def _making(cls, later: bool) -> None:
    pending = cls.__dict__.get("__serq_lazy__")
    if pending is None:
        return
    params, names, no_doc, written = pending
    if "__dataclass_params__" not in cls.__dict__ or isinstance(cls.__dict__["__dataclass_params__"], _StandIn):
        for base in cls.__mro__[1:]:
            if "__serq_lazy__" in base.__dict__:
                _making(base, False)
        for name in names:
            if name not in _LATER and isinstance(cls.__dict__.get(name), _StandIn):
                delattr(cls, name)
        if no_doc:
            cls.__doc__ = None      # (a class's __doc__ cannot be deleted)
        # its __repr__, __eq__ and __hash__ stand-ins stay: dataclass leaves them
        dataclasses.dataclass(cls, frozen=params["frozen"], eq=False, repr=False)
        made = cls.__dataclass_params__
        made.repr, made.eq = True, params["eq"]      # what the eager decorator says
    if not later:
        return
    delattr(cls, "__serq_lazy__")
    twin = _twin(cls, params, written)
    for name in _LATER:
        if _standing(cls.__dict__.get(name)):
            if name in twin.__dict__:
                setattr(cls, name, twin.__dict__[name])
            else:
                delattr(cls, name)


def _twin(cls, params: dict, written: dict):
    """A class as ``cls`` was written, made a dataclass by
    ``dataclasses.dataclass`` for its ``__repr__``, ``__eq__`` and
    ``__hash__``: frozen's ``__hash__`` is made as ``unsafe_hash`` makes it,
    the same code, without the twin's ``__setattr__`` and ``__delattr__``
    (unless a base is frozen: a dataclass inherits frozenness)."""
    ns = dict(written)
    ns["__doc__"] = ns.get("__doc__") or cls.__name__      # (no signature for a doc nobody reads)
    twin = type(cls)(cls.__name__, cls.__bases__, ns)
    twin.__qualname__ = cls.__qualname__
    frozen_base = any(getattr(getattr(b, "__dataclass_params__", None), "frozen", False) for b in cls.__mro__[1:])
    if params["frozen"] and not frozen_base:
        return dataclasses.dataclass(twin, init=False, eq=params["eq"], unsafe_hash=params["eq"])
    return dataclasses.dataclass(twin, init=False, frozen=params["frozen"], eq=params["eq"])


def dataclass(cls=None, /, *, frozen: bool = False, eq: bool = True):
    """``dataclasses.dataclass(cls, frozen=…, eq=…)``, made when first used."""
    def wrap(c):
        names = _NAMES + (_FROZEN if frozen else ())
        for name in names + ("__hash__",):
            if name in c.__dict__:
                raise TypeError(f"{c.__name__} defines {name}: decorate it with dataclasses.dataclass")
        no_doc = c.__dict__.get("__doc__") is None
        written = {k: v for k, v in c.__dict__.items() if k not in ("__dict__", "__weakref__")}
        c.__serq_lazy__ = ({"frozen": frozen, "eq": eq}, names, no_doc, written)
        for name in names:
            setattr(c, name, _later(c, name) if name in _LATER else _StandIn(c, name))
        if eq and not frozen:
            c.__hash__ = None       # as dataclasses.dataclass leaves it
        if no_doc:
            c.__doc__ = _StandIn(c, "__doc__")
        return c
    return wrap if cls is None else wrap(cls)
