"""Canonical JSON for the IR.

* Variants of a union (an expression, a statement, an arrival, …) are
  externally tagged: ``{"Num": 3.0}``, ``{"Binary": {"op": "Add", …}}``; a
  variant with no fields is its tag as a string (``"Turn"``, ``"Lru"``); a
  variant with one field is ``{"Tag": value}``.
* Other records are objects with their field names; ``None`` fields and
  empty defaults are written too, so the file says every value -- except a
  field added after a program could be written without it (metadata
  ``omit_default``: a pool's ``shared``, a session's ``at`` and
  ``content``), which is left out when it has its default, so a program that
  does not use it serialises byte for byte as before.
* JSON has no infinity: ``inf`` and ``-inf`` are the strings ``"inf"`` and
  ``"-inf"`` wherever a number is expected.
* Keys are sorted and the text ends with a newline, so that a committed IR
  file diffs cleanly and a stale one is found by regenerating and comparing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from functools import lru_cache
from itertools import chain
from typing import Any, Union

from ..datafile import DuplicateKey, json_loads
from ..diag import Diagnostic, SerqError, Sources, Span
from . import model as M

# The unions whose members are tagged variants, and each member's tag.
_UNIONS = {
    "Expr": (M.ENum, M.EAttr, M.ECtx, M.ESample, M.EReg, M.EFn, M.EQuery, M.EPrice, M.EUnary,
             M.EBinary, M.ECond, M.EAgg, M.ECost, M.ERunSum),
    "Stmt": (M.STurn, M.SSet, M.SObserve, M.SHold, M.SGrow, M.SDrop, M.SRelease, M.SLoad, M.SRun,
             M.SBranch, M.SLoop, M.SWhile, M.SChoose, M.SEnd, M.SFork, M.SJoin, M.SContent),
    "Evict": (M.EvictLru, M.EvictBy),
    "Preempt": (M.PreemptNone, M.PreemptBy),
    "StageKind": (M.KFifo, M.KPs, M.KDelay, M.KStep),
    "Serve": (M.ServeBy, M.ServeExclusivePrefill),
    "Iter": (M.IServe, M.IAdmit, M.IBranch, M.ISet),
    "Arrival": (M.APoisson, M.ARenewal, M.AClosed, M.ABatch, M.ASessions, M.ANone, M.ATrace),
    "ClaimKind": (M.CEvery, M.CSome, M.CAtEnd),
}

_TAGS: dict[type, str] = {}
for _members in _UNIONS.values():
    for _cls in _members:
        _name = _cls.__name__
        if _cls in (M.EvictLru, M.EvictBy):
            _tag = _name[len("Evict"):]
        elif _cls in (M.PreemptNone, M.PreemptBy):
            _tag = _name[len("Preempt"):]
        elif _cls in (M.ServeBy, M.ServeExclusivePrefill):
            _tag = _name[len("Serve"):]
        elif _cls in (M.CEvery, M.CSome):
            _tag = {"CEvery": "EveryIteration", "CSome": "SomeIteration"}[_name]
        else:
            _tag = _name[1:]
        _TAGS[_cls] = _tag

_VARIANT_CLASSES = set(_TAGS)


def _union_of(cls: type) -> tuple[type, ...]:
    for members in _UNIONS.values():
        if cls in members:
            return members
    raise KeyError(cls)


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(M))


# ---------------------------------------------------------------------------
# Encoding


def _num(x: float) -> Any:
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return x
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


_INT = {int}
_TUPLE = {tuple}
_LIST = {list}
_chain = chain.from_iterable


def to_data(obj: Any) -> Any:
    """The JSON-ready value of an IR object."""
    t = type(obj)
    if obj is None or t is str or t is bool:
        return obj
    if t is float:
        return obj if obj - obj == 0.0 else _num(obj)    # (inf - inf is NaN; NaN stays NaN)
    if t is int:
        return obj
    if t is tuple:
        # whole numbers, or tuples of them (a trace's content: thousands of
        # pairs), listed in one pass each
        kinds = set(map(type, obj))
        if kinds == _INT:
            return list(obj)
        if kinds == _TUPLE and set(map(type, _chain(obj))) <= _INT:
            return list(map(list, obj))
        return [to_data(x) for x in obj]
    plan = _PLANS.get(t)
    if plan is None:
        if isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)):
            return _num(obj)
        if isinstance(obj, tuple):
            return [to_data(x) for x in obj]
        if not dataclasses.is_dataclass(obj):
            raise TypeError(f"not an IR value: {obj!r}")
        plan = _plan(t)
    fields, tag, first, short_ok = plan
    record = {}
    for name, omit, default, is_float in fields:
        v = getattr(obj, name)
        if omit and v == default:
            continue
        if is_float and isinstance(v, (int, float)) and not isinstance(v, bool):
            record[name] = _num(float(v))
        else:
            record[name] = to_data(v)
    if tag is None:
        return record
    if first is None:
        return tag
    if short_ok is None or (short_ok and len(record) == 1 and first in record):
        return {tag: record[first]}
    return {tag: record}


_PLANS: dict = {}


def _plan(cls: type) -> tuple:
    """How to_data writes a record of class `cls`: its fields (name, left out
    at its default, the default, a float field), its variant's tag (None: not
    a variant), its first field's name (None: no field) and whether it may
    take its one-field form (None: always, it has one field; True: where the
    others are left out, _short)."""
    fields = dataclasses.fields(cls)
    hints = _hints(cls)
    rows = tuple((f.name, bool(f.metadata.get("omit_default")), f.default, hints[f.name] is float) for f in fields)
    tag = _TAGS.get(cls) if cls in _VARIANT_CLASSES else None
    first = fields[0].name if fields else None
    if len(fields) == 1:
        short_ok = None
    else:
        short_ok = bool(fields) and all(f.metadata.get("omit_default") for f in fields[1:])
    plan = _PLANS[cls] = (rows, tag, first, short_ok)
    return plan


def _short(fields, record: dict) -> bool:
    """A variant whose fields after the first are all left out at their
    defaults is written as its one-field form (``{"Num": 3.0}``; a number
    that is an input's value is ``{"Num": {"input": "c0", "value": 3.0}}``)."""
    return (len(record) == 1 and fields[0].name in record
            and all(f.metadata.get("omit_default") for f in fields[1:]))


def dumps(program: M.Program) -> str:
    """Canonical JSON text of a program (sorted keys, trailing newline)."""
    return text(to_data(program)) + "\n"


def text(data: Any) -> str:
    """``json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False,
    allow_nan=False)``, the same characters, written without the standard
    library's generator-based indenting encoder (which is several times
    slower: an IR with a trace's sessions in it is hundreds of thousands of
    values, and every run's report digests it).  Data it does not write as
    json does (a key that is not a string, a number that is not finite, a
    value of another type) is handed to ``json.dumps`` itself, which writes
    it or raises as it would."""
    out: list = []
    try:
        _write(data, "\n", out)
    except _NotPlain:
        return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
    return "".join(out)


class _NotPlain(Exception):
    pass


_str = json.encoder.encode_basestring      # the C function where there is one
_frepr = float.__repr__
_INF = math.inf


def _scalar(x) -> str:
    t = type(x)
    if t is str:
        return _str(x)
    if t is float:
        if x != x or x == _INF or x == -_INF:
            raise _NotPlain
        return _frepr(x)
    if t is int:
        return int.__repr__(x)
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    raise _NotPlain


def _value(v, nl: str, out: list) -> None:
    tv = type(v)
    if tv is dict or tv is list:
        _write(v, nl, out)
    else:
        out.append(_scalar(v))


def _write(x, nl: str, out: list) -> None:
    """Append the text of `x`, at the indentation `nl` ends with."""
    t = type(x)
    if t is dict:
        if not x:
            out.append("{}")
            return
        inner = nl + " "
        sep = "," + inner
        out.append("{")
        first = True
        for k in sorted(x):
            if type(k) is not str:
                raise _NotPlain
            out.append(inner if first else sep)
            first = False
            out.append(_str(k))
            out.append(": ")
            _value(x[k], inner, out)
        out.append(nl)
        out.append("}")
    elif t is list:
        if not x:
            out.append("[]")
            return
        inner = nl + " "
        kinds = set(map(type, x))
        if kinds == _INT:
            # whole numbers (a trace's content), or lists of as many of them
            # each: written by one join, the same characters
            out.append("[" + inner + ("," + inner).join(map(int.__repr__, x)) + nl + "]")
            return
        if kinds == _LIST and len(set(map(len, x))) == 1 and set(map(type, _chain(x))) == _INT:
            deeper = inner + " "
            each = "[" + deeper + ("," + deeper).join(["%d"] * len(x[0])) + inner + "]"
            out.append("[" + inner + ("," + inner).join(map(each.__mod__, map(tuple, x))) + nl + "]")
            return
        out.append("[")
        out.append(inner)
        first = True
        for v in x:
            if not first:
                out.append(",")
                out.append(inner)
            first = False
            _value(v, inner, out)
        out.append(nl)
        out.append("]")
    else:
        out.append(_scalar(x))


# ---------------------------------------------------------------------------
# Decoding


class _Bad(Exception):
    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message


def _decode(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if data is None:
            if type(None) in typing.get_args(tp):
                return None
            raise _Bad(path, "a value is required here, not null")
        if len(args) == 1:
            return _decode(args[0], data, path)
        # a union of variants (possibly a union of a variant family and a
        # tuple of Targets for attribute types)
        variant_members = [a for a in args if isinstance(a, type) and a in _VARIANT_CLASSES]
        if variant_members and len(variant_members) == len(args):
            return _decode_variant(tuple(variant_members), data, path)
        for a in args:
            try:
                return _decode(a, data, path)
            except _Bad:
                continue
        raise _Bad(path, f"unexpected value {json.dumps(data)[:60]}")
    if origin is tuple:
        if not isinstance(data, list):
            raise _Bad(path, "expected a list")
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            return tuple(_decode(targs[0], x, f"{path}[{i}]") for i, x in enumerate(data))
        if len(data) != len(targs):
            raise _Bad(path, f"expected a list of {len(targs)}")
        return tuple(_decode(t, x, f"{path}[{i}]") for i, (t, x) in enumerate(zip(targs, data)))
    if tp is float:
        if isinstance(data, bool):
            raise _Bad(path, "expected a number")
        if data == "inf":
            return math.inf
        if data == "-inf":
            return -math.inf
        if isinstance(data, (int, float)):
            return float(data)
        raise _Bad(path, "expected a number (or \"inf\")")
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise _Bad(path, "expected a whole number")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise _Bad(path, "expected true or false")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise _Bad(path, "expected a string")
        return data
    if isinstance(tp, type) and tp in _VARIANT_CLASSES:
        return _decode_variant(_union_of(tp), data, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_record(tp, data, path)
    raise _Bad(path, f"cannot read a value of type {tp}")


def _decode_record(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _Bad(path, f"expected an object ({cls.__name__})")
    hints = _hints(cls)
    kwargs = {}
    names = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            raise _Bad(f"{path}.{key}", "unknown field")
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            if f.metadata.get("whole_floats"):
                value = _whole_floats(value)
            kwargs[f.name] = _decode(hints[f.name], value, f"{path}.{f.name}")
        elif not f.metadata.get("omit_default"):
            # the canonical JSON says every value (but a field left out at its
            # default): a missing one is a malformed file, not a default
            raise _Bad(f"{path}.{f.name}", "missing field")
    return cls(**kwargs)


def _whole_floats(data):
    """A field once written as floats (``1.0``) and now whole numbers: a
    float that is a whole number below 2^53 read as that integer."""
    if isinstance(data, list):
        return [_whole_floats(x) for x in data]
    if type(data) is float and data.is_integer() and abs(data) < 2.0 ** 53:
        return int(data)
    return data


def _decode_variant(members: tuple[type, ...], data: Any, path: str) -> Any:
    by_tag = {_TAGS[c]: c for c in members}
    if isinstance(data, str):
        cls = by_tag.get(data)
        if cls is None or dataclasses.fields(cls):
            raise _Bad(path, f"unknown variant {data!r} (one of {', '.join(sorted(by_tag))})")
        return cls()
    if not isinstance(data, dict) or len(data) != 1:
        raise _Bad(path, "expected a tagged variant {\"Tag\": …}")
    (tag, payload), = data.items()
    cls = by_tag.get(tag)
    if cls is None:
        raise _Bad(path, f"unknown variant {tag!r} (one of {', '.join(sorted(by_tag))})")
    fields = dataclasses.fields(cls)
    if not fields:
        raise _Bad(path, f"variant {tag} takes no value")
    if len(fields) == 1 or (not isinstance(payload, dict)
                            and all(f.metadata.get("omit_default") for f in fields[1:])):
        f = fields[0]
        return cls(**{f.name: _decode(_hints(cls)[f.name], payload, f"{path}.{tag}")})
    return _decode_record(cls, payload, f"{path}.{tag}")


def from_data(data: Any, source: str = "<ir>") -> M.Program:
    """Read a program from parsed JSON; raises SerqError on a malformed file."""
    if not isinstance(data, dict):
        raise SerqError(Diagnostic("E901", f"{source}: an IR file is a JSON object", field="$"))
    version = data.get("version")
    if version != M.IR_VERSION or type(version) is not int:
        raise SerqError(Diagnostic(
            "E902", f"{source}: IR version {json.dumps(version)[:40]} (this serq reads {M.IR_VERSION})",
            help="regenerate the file from its program with `serq ir`", field="$.version"))
    try:
        return _decode_record(M.Program, data, "$")
    except _Bad as bad:
        raise SerqError(Diagnostic("E903", f"{source}: malformed IR at {bad.path}: {bad.message}"))
    except RecursionError:
        raise SerqError(Diagnostic("E903", f"{source}: the IR nests too deeply for serq", field="$")) from None


def loads(text: str, source: str = "<ir>") -> M.Program:
    try:
        data = json_loads(text)
    except json.JSONDecodeError as e:
        Sources.add(source, text)
        raise SerqError(Diagnostic("E900", f"not JSON: {e.msg}", Span.point(source, e.lineno, e.colno)))
    except DuplicateKey as e:
        Sources.add(source, text)
        raise SerqError(Diagnostic("E900", str(e), Span.point(source, e.line, e.col))) from None
    except RecursionError:
        raise SerqError(Diagnostic("E900", "not JSON this serq reads: it nests too deeply",
                                   Span.point(source, 1, 1))) from None
    return from_data(data, source)
