"""One link per shape: a program linked for many values of its inputs
without linking it again for each (the oracle's fast path, ``Shapes``).

The oracle links one program for thousands of scenarios that differ only in
numbers (a budget, a block size, a number of blocks, ... and the horizon).
The linker folds constants, so an input reaches the IR as plain numbers
(`kv cap blocks * bs` is one number, 80), and it does no algebra on what is
not constant: as long as each input keeps its kind, another value changes
those numbers and nothing else.  That is used here, and checked rather
than assumed:

* **The shape** of a call is each input's text, except that a text that is
  a whole number ≥ 1 (digits only) is just "whole"; the horizon likewise.
  `0`, `inf`, a fraction or an expression stand for themselves, and so does
  an input that sizes a family (`queue D[ND]`: another size is another
  program), which the linker names (``size_inputs``).
* **Products only.**  The linker notes each constant it folds from a given
  input's value by anything but products (``input_folds``: `k > 2`,
  `max(bs, 4)`, `B + 1`, whose value is not one formula for every whole
  value); a program with one has no template and is linked every time.
* **The template** of a shape is made from three links: the first call's
  own, a probe with every whole input multiplied by its own prime (2, 3, 5,
  …), and a check at other primes.  The probe's IR must have the same
  structure as the first (the same classes, tuples of the same lengths, the
  same strings, integers and booleans); each float that changed is a *hole*
  and must have changed by exactly the product of some inputs' primes, each
  once: the hole is then a whole constant times those inputs (`blocks * bs`
  is 1 · blocks · bs).  The template with the check's values must equal the
  check's own link, float for float, or the shape has no template.
* **An instance** is the first IR with its holes filled, the objects on the
  way to a hole copied and the rest shared (the IR is immutable).  A value
  is computed exactly, in integers; one of 2**53 or more, which a float may
  not hold exactly, is linked instead.

A shape with no template is linked every time, as is the first call of
every shape.  The syntax trees are kept (``compile_source``'s ``parsed``),
so that no link parses the program again.  A change to one of the
program's files (its size or time) drops everything kept for it.

What an instance skips are the linker's own checks of its numbers (the IR
validator's are the caller's: ``serq.api.harness`` validates each instance
with its sessions, and links in full to say what is wrong).  Those checks
ask whether a number is whole, positive or finite, which a whole constant
times whole inputs ≥ 1 is or is not whatever the inputs; the remaining
case would be a check that compares two inputs' values with each other.
``tests/test_oracle_shapes.py`` compares the IR (byte for byte) and the
outcome of every committed oracle scenario, trace, slice and P/D scenario,
and of random ones of each family, made this way and by a full link."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from fractions import Fraction
from typing import Optional

from ..diag import SerqError
from ..ir import model as M
from . import compile_file

_WHOLE = re.compile(r"[0-9]+\Z")
EXACT = 2 ** 53           # every whole number below it is a float exactly
PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
          101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179, 181, 191, 193,
          197, 199, 211, 223, 227, 229)


class _NotSame(Exception):
    """Two IRs differ in more than their numbers, or a number in more than
    a product of inputs."""


class _Hole:
    """A float of the IR: ``coef`` times the whole inputs ``factors``."""

    __slots__ = ("coef", "factors")

    def __init__(self, coef: int, factors: tuple):
        self.coef = coef
        self.factors = factors

    def value(self, vals: list) -> float:
        v = self.coef
        for j in self.factors:
            v *= vals[j]
        if abs(v) >= EXACT:
            raise _TooLarge()
        return float(v)


class _TooLarge(Exception):
    pass


class Shapes:
    """``link(sets, horizon)``: the program at ``path`` linked with those
    inputs (``--set`` texts) and that horizon, as ``compile_file`` links it.
    ``counts``: calls, full links (the probes' included), instances made
    from a template, shapes seen and shapes with no template."""

    def __init__(self, path: str):
        self.path = path
        self.parsed: dict = {}
        self.shapes: dict = {}          # shape -> (IR, whole values) before its template, then _Template or None
        self.sized: set = set()         # the inputs that size a family (the linker says which)
        self.files: Optional[tuple] = None
        self.stamp: Optional[tuple] = None
        self.counts = {"calls": 0, "links": 0, "instances": 0, "shapes": 0, "untemplated": 0}

    # ---------------------------------------------------------------- the calls
    @staticmethod
    def shape(sets: dict, horizon) -> tuple:
        """The shape of a call (the calls of one shape share a template)."""
        return _shape(sets, horizon)[0]

    def link(self, sets: dict, horizon: float) -> M.Program:
        self.counts["calls"] += 1
        self._current()
        key, whole, vals = _shape(sets, horizon, self.sized)
        kept = self.shapes.get(key)
        if kept is None and key not in self.shapes:
            folds: list = []
            before = set(self.sized)
            p = self._link(sets, horizon, folds)
            if self.sized != before:          # a size learnt: the shape is keyed by its value
                key, whole, vals = _shape(sets, horizon, self.sized)
            self.counts["shapes"] += 1
            self.shapes[key] = None if folds else (p, vals)
            if folds:
                self.counts["untemplated"] += 1
            return p
        if type(kept) is tuple:
            kept = self.shapes[key] = self._template(sets, horizon, whole, *kept)
            if kept is None:
                self.counts["untemplated"] += 1
        if kept is not None:
            try:
                p = kept.instance(vals)
            except _TooLarge:
                return self._link(sets, horizon)
            self.counts["instances"] += 1
            return p
        return self._link(sets, horizon)

    def _link(self, sets: dict, horizon: float, folds: Optional[list] = None) -> M.Program:
        self.counts["links"] += 1
        p = compile_file(self.path, sets=sets, horizon=horizon, parsed=self.parsed, input_folds=folds,
                         size_inputs=self.sized)
        if self.files is None:
            self.files = p.files
            self.stamp = _stamp(p.files)
        return p

    def _current(self) -> None:
        """Forget everything when one of the program's files changed."""
        if self.files is not None and _stamp(self.files) != self.stamp:
            self.parsed.clear()
            self.shapes.clear()
            self.sized.clear()
            self.files = self.stamp = None

    # ---------------------------------------------------------------- templates
    def _template(self, sets: dict, horizon: float, whole: tuple, p0: M.Program,
                  vals0: list) -> Optional["_Template"]:
        n = len(whole)
        if n == 0:
            return _Template(p0, {})     # the inputs are the first call's: its IR
        if 2 * n > len(PRIMES):
            return None
        try:
            probe = [v * q for v, q in zip(vals0, PRIMES)]
            p1 = self._link(*_with(sets, horizon, whole, probe))
            found: list = []
            _diff(p0, p1, (), found)
            holes = {path: _hole(a, b, vals0, PRIMES[:n]) for path, a, b in found}
            t = _Template(p0, holes)
            check = [v * q for v, q in zip(vals0, PRIMES[n:])]
            p2 = self._link(*_with(sets, horizon, whole, check))
            left: list = []
            _diff(t.instance(check), p2, (), left)
            if left:
                return None
        except (_NotSame, _TooLarge, SerqError):
            return None
        return t


class _Template:
    def __init__(self, base: M.Program, holes: dict):
        self.base = base
        self.patch: dict = {}
        for path, hole in holes.items():
            d = self.patch
            for k in path[:-1]:
                d = d.setdefault(k, {})
            d[path[-1]] = hole

    def instance(self, vals: list) -> M.Program:
        return _fill(self.base, self.patch, vals)


def _fill(node, patch: dict, vals: list):
    """``node`` with the holes of ``patch`` filled: the objects on the way
    copied (a frozen dataclass without its __init__), the rest shared."""
    t = type(node)
    if t is tuple or t is list:
        items = list(node)
        for k, sub in patch.items():
            items[k] = sub.value(vals) if type(sub) is _Hole else _fill(items[k], sub, vals)
        return t(items)
    new = object.__new__(t)
    d = new.__dict__
    d.update(node.__dict__)
    for k, sub in patch.items():
        d[k] = sub.value(vals) if type(sub) is _Hole else _fill(d[k], sub, vals)
    return new


def _shape(sets: dict, horizon: float, sized=()) -> tuple:
    """(the shape, the names of its whole inputs in order, their values);
    the horizon, when whole, is the last, named None.  An input in
    ``sized`` stands for itself."""
    key = []
    whole = []
    vals = []
    for name in sorted(sets):
        text = sets[name]
        if name not in sized and isinstance(text, str) and _WHOLE.match(text) and 1 <= int(text) < EXACT:
            key.append((name, None))
            whole.append(name)
            vals.append(int(text))
        else:
            key.append((name, text if isinstance(text, str) else repr(text)))
    h = horizon
    if isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h == int(h) \
            and 1 <= h < EXACT:
        key.append((None, None))
        whole.append(None)
        vals.append(int(h))
    else:
        key.append((None, repr(h)))
    return tuple(key), tuple(whole), vals


def _with(sets: dict, horizon: float, whole: tuple, vals: list) -> tuple:
    """(sets, horizon) with the whole inputs given ``vals``."""
    sets = dict(sets)
    for name, v in zip(whole, vals):
        if name is None:
            horizon = float(v)
        else:
            sets[name] = str(v)
    return sets, horizon


def _diff(a, b, path: tuple, out: list) -> None:
    """Append (path, a, b) for each float where ``a`` and ``b`` differ;
    _NotSame where they differ otherwise."""
    t = type(a)
    if t is not type(b):
        raise _NotSame()
    if t is float:
        if repr(a) != repr(b):
            out.append((path, a, b))
    elif t is tuple or t is list:
        if len(a) != len(b):
            raise _NotSame()
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, path + (i,), out)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _diff(getattr(a, f.name), getattr(b, f.name), path + (f.name,), out)
    elif t is dict:
        if list(a) != list(b):
            raise _NotSame()
        for k in a:
            _diff(a[k], b[k], path + (k,), out)
    elif a != b:
        raise _NotSame()


def _hole(a: float, b: float, vals: list, primes: tuple) -> _Hole:
    """The hole a float ``a`` (at ``vals``) that is ``b`` with every input
    times its prime is: a whole constant times some of the inputs."""
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0:
        raise _NotSame()
    r = Fraction(b) / Fraction(a)
    factors = []
    for j, q in enumerate(primes):
        if r.numerator % q == 0:
            r /= q
            factors.append(j)
    if r != 1:
        raise _NotSame()
    coef = Fraction(a)
    for j in factors:
        coef /= vals[j]
    if coef.denominator != 1:
        raise _NotSame()
    return _Hole(int(coef), tuple(factors))


def _stamp(files: tuple) -> tuple:
    out = []
    for f in files:
        try:
            st = os.stat(f)
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)

