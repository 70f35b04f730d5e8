"""The IR's type and shape, checked before any of its meaning (the first
pass of ``serq.ir.validate``): every field holds a value of the model's own
type for it (``serq.ir.model``'s annotations, the ones the codec reads), every
name from a closed set is one of it (an operator, a function and its number
of arguments, a distribution, a query, an aggregate, a context variable, a
run mode, a target's kind, a side, a share), and a block's statements, their
locations and their sides are as many.  A problem is said at its IR field
path (``$.blocks[3].stmts[0].Set.expr.Fn.args``), as the codec names what it
cannot read, and the semantic checks do not run on a program that has one:
they may then assume every node is of its kind.

A program read from JSON has its types from the codec already; one built in
Python (``dataclasses.replace``) is checked here the same way."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, Callable, Union

from . import model as M
from .codec import _TAGS, _VARIANT_CLASSES, _hints

# closed sets of names: (class, field) -> the names it may hold
DOMAINS = {
    (M.EFn, "fn"): tuple(M.FNS),
    (M.ESample, "dist"): tuple(M.DISTS),
    (M.EUnary, "op"): M.UNOPS,
    (M.EBinary, "op"): M.BINOPS,
    (M.EQuery, "query"): M.POOL_QUERIES + M.STAGE_QUERIES,
    (M.EAgg, "agg"): M.AGGS,
    (M.ECtx, "var"): M.CTX_VARS,
    (M.SRun, "mode"): M.RUN_MODES,
    (M.Target, "kind"): ("pool", "stage"),
    (M.Program, "share"): (None, "MaxMin", "Bottleneck"),
}
# functions of their arguments: (class, the field naming it, the table of arities)
ARITIES = {M.EFn: ("fn", M.FNS), M.ESample: ("dist", M.DISTS)}

Problems = list  # of (path, message)
# the types a field holds exactly (a bool is not an int here), said so
EXACT = {int: "a whole number", bool: "true or false", str: "a string"}


def _describe(v) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


# A list of many values (a trace's sessions, their content and turns: tens of
# thousands) is checked first as a whole, in C, where its values are checked
# by their types alone: a check of one type (`_LEAF`: the types it takes) or
# a tuple of such (`_ROW`: those of each place).  Where that finds no problem
# there is none; otherwise each value is checked as before, so a problem is
# said as it always was.
_LEAF: dict = {}
_ROW: dict = {}
_TUPLE = frozenset((tuple,))


def _fine_all(each):
    """A test that every value of a tuple passes ``each``, made of whole-list
    passes (None where ``each`` is not a check of types alone)."""
    leaf = _LEAF.get(each)
    if leaf is not None:
        return lambda v: set(map(type, v)) <= leaf
    row = _ROW.get(each)
    if row is None:
        return None
    size = frozenset((len(row),))

    def fine(v):
        if not (set(map(type, v)) <= _TUPLE and set(map(len, v)) <= size):
            return False
        for ok, column in zip(row, zip(*v)):
            if not set(map(type, column)) <= ok:
                return False
        return True
    return fine


@lru_cache(maxsize=None)
def _check_of(tp) -> Callable[[Any, str, Problems], None]:
    """A function checking a value against the annotation ``tp``."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return lambda v, path, out: None
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        optional = type(None) in args
        rest = tuple(a for a in args if a is not type(None))
        variants = tuple(a for a in rest if isinstance(a, type) and a in _VARIANT_CLASSES)
        if variants and len(variants) == len(rest):
            inner = _variant_check(variants)
        elif len(rest) == 1:
            inner = _check_of(rest[0])
        else:
            alts = [_check_of(a) for a in rest]

            def inner(v, path, out, alts=alts, rest=rest):
                for check in alts:
                    trial: Problems = []
                    check(v, path, trial)
                    if not trial:
                        return
                out.append((path, f"is {_describe(v)}, not one of {' or '.join(_name(a) for a in rest)}"))
        if not optional:
            return inner

        def check(v, path, out):
            if v is not None:
                inner(v, path, out)
        return check
    if origin is tuple:
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            each = _check_of(targs[0])
            fine = _fine_all(each)

            def check(v, path, out):
                if type(v) is not tuple:
                    out.append((path, f"is {_describe(v)}, not a list"))
                    return
                if fine is not None and fine(v):
                    return
                for i, x in enumerate(v):
                    each(x, f"{path}[{i}]", out)
            return check
        parts = [_check_of(t) for t in targs]

        def check(v, path, out):
            if type(v) is not tuple or len(v) != len(parts):
                out.append((path, f"is {_describe(v)}, not a list of {len(parts)}"))
                return
            for i, (c, x) in enumerate(zip(parts, v)):
                c(x, f"{path}[{i}]", out)
        if all(c in _LEAF for c in parts):
            _ROW[check] = tuple(_LEAF[c] for c in parts)
        return check
    if tp is float:
        def check(v, path, out):
            if type(v) is not float and (type(v) is not int):
                out.append((path, f"is {_describe(v)}, not a number"))
        _LEAF[check] = frozenset((float, int))
        return check
    if tp in EXACT:
        def check(v, path, out, tp=tp, want=EXACT[tp]):
            if type(v) is not tp:
                out.append((path, f"is {_describe(v)}, not {want}"))
        _LEAF[check] = frozenset((tp,))
        return check
    if isinstance(tp, type) and tp in _VARIANT_CLASSES:
        return _variant_check(_members(tp))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        def check(v, path, out, tp=tp):
            if type(v) is not tp:
                out.append((path, f"is {_describe(v)}, not {tp.__name__}"))
                return
            _record(v, path, out)
        return check
    raise TypeError(f"the IR model has a field of type {tp!r} the shape check does not know")  # pragma: no cover


def _name(tp) -> str:
    return getattr(tp, "__name__", str(tp))


def _members(cls: type) -> tuple:
    from .codec import _union_of
    return _union_of(cls)


def _variant_check(members: tuple):
    def check(v, path, out):
        cls = type(v)
        if cls not in members:
            out.append((path, f"is {_describe(v)}, not one of {', '.join(_TAGS[m] for m in members)}"))
            return
        fields = dataclasses.fields(cls)
        tag = _TAGS[cls]
        if len(fields) == 1:
            _fields(cls)[0][1](getattr(v, fields[0].name), f"{path}.{tag}", out)
            _rules(v, f"{path}.{tag}", out, single=True)
        elif fields:
            _record(v, f"{path}.{tag}", out)
    return check


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple:
    hints = _hints(cls)
    return tuple((f.name, _check_of(hints[f.name])) for f in dataclasses.fields(cls))


def _record(v, path: str, out: Problems) -> None:
    for name, check in _fields(type(v)):
        check(getattr(v, name), f"{path}.{name}", out)
    _rules(v, path, out)


def _rules(v, path: str, out: Problems, single: bool = False) -> None:
    """The closed sets, the arities and the block's tables of one node."""
    cls = type(v)
    for (c, name), allowed in _DOMAINS_BY_CLASS.get(cls, ()):
        x = getattr(v, name)
        if type(x) is str or x is None:
            if x not in allowed:
                where = path if single else f"{path}.{name}"
                out.append((where, f"is {x!r}, not one of {', '.join(a for a in allowed if a is not None)}"))
    if cls in ARITIES:
        name, table = ARITIES[cls]
        fn = getattr(v, name)
        args = getattr(v, "args")
        if fn in table and type(args) is tuple and len(args) != table[fn]:
            out.append((f"{path}.args", f"has {len(args)} arguments: {fn.lower()} takes {table[fn]}"))
    if cls is M.Block:
        n = len(v.stmts) if type(v.stmts) is tuple else None
        for name in ("locs", "sides"):
            x = getattr(v, name)
            if n is not None and type(x) is tuple and len(x) != n:
                out.append((f"{path}.{name}", f"has {len(x)} entries for {n} statements"))
        if type(v.sides) is tuple:
            for i, s in enumerate(v.sides):
                if type(s) is str and s not in M.SIDES:
                    out.append((f"{path}.sides[{i}]", f"is {s!r}, not one of {', '.join(M.SIDES)}"))


_DOMAINS_BY_CLASS: dict = {}
for (_c, _n), _allowed in DOMAINS.items():
    _DOMAINS_BY_CLASS.setdefault(_c, []).append(((_c, _n), _allowed))


def problems(program) -> Problems:
    """Every type and shape problem of ``program``, as (IR path, message)."""
    out: Problems = []
    if type(program) is not M.Program:
        return [("$", f"is {_describe(program)}, not a program")]
    _record(program, "$", out)
    return out
