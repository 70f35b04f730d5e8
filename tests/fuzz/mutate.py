"""The mutators.  Each takes a ``Chooser`` and returns a ``Mutant``; the
chooser is a seeded ``random.Random`` (``make fuzz``: mutant ``i`` of seed
``s`` is the same on every machine) or Hypothesis' ``data`` (the CI tests,
which then shrink a failure to the smallest mutation)."""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from typing import Any, Optional

from . import corpus as C

KINDS = ("source", "numeric", "ir", "retype", "trace", "oracle", "table", "api", "cli", "parser", "signals")


class Chooser:
    """Where a mutator's choices come from."""

    def below(self, n: int) -> int:  # pragma: no cover - an interface
        raise NotImplementedError

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, num: int, den: int) -> bool:
        return self.below(den) < num


class RandomChooser(Chooser):
    def __init__(self, rng: random.Random):
        self.rng = rng

    def below(self, n: int) -> int:
        return self.rng.randrange(n)


class DataChooser(Chooser):
    """Hypothesis' ``data`` (``st.data()``): each choice an integer draw,
    which shrinks toward the first option."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self.data = data
        self.st = st

    def below(self, n: int) -> int:
        return self.data.draw(self.st.integers(0, n - 1))


def seeded(kind: str, seed: int, i: int) -> Chooser:
    return RandomChooser(random.Random(f"{kind}:{seed}:{i}"))


@dataclass
class Mutant:
    kind: str
    example: str
    what: str                      # the mutation, in words
    text: Optional[str] = None     # source and numeric mutants
    data: Any = None               # IR mutants: the JSON data
    horizon: float = C.DEFAULT_HORIZON
    blob: Optional[bytes] = None   # a file's bytes (trace, oracle, table mutants)
    args: Any = None               # a call's or a command line's arguments (api, cli, signals)

    def record(self) -> dict:
        """What a finding's file keeps (``replay`` reads it back)."""
        out = {"kind": self.kind, "example": self.example, "what": self.what, "horizon": self.horizon}
        if self.text is not None:
            out["text"] = self.text
        if self.data is not None:
            out["ir"] = json.dumps(self.data, sort_keys=True)
        if self.blob is not None:
            from .surfaces import blob_record
            out["blob"] = blob_record(self.blob)
        if self.args is not None:
            out["args"] = self.args
        return out

    @staticmethod
    def from_record(r: dict) -> "Mutant":
        data = json.loads(r["ir"]) if "ir" in r else None
        blob = None
        if "blob" in r:
            from .surfaces import blob_of
            blob = blob_of(r["blob"])
        return Mutant(r["kind"], r["example"], r["what"], r.get("text"), data, r.get("horizon", 10.0), blob,
                      r.get("args"))


# ---------------------------------------------------------------- source

SOURCE_OPS = ("delete", "delete_run", "duplicate", "insert_token", "replace", "swap", "delete_line",
              "paste_line", "paste_fragment")


def source_mutant(ch: Chooser) -> Mutant:
    """One to three edits of one example's text."""
    path = ch.pick(C.examples())
    text = C.source(path)
    done = []
    for _ in range(1 + ch.below(3) if ch.chance(1, 3) else 1):
        text, what = _edit(ch, text)
        done.append(what)
    return Mutant("source", path, "; ".join(done), text=text, horizon=C.horizon(path))


def _edit(ch: Chooser, text: str) -> tuple[str, str]:
    op = ch.pick(SOURCE_OPS)
    toks = [(m.start(), m.end(), m.group()) for m in C.TOKEN.finditer(text) if not m.group().startswith("//")]
    if not toks:
        return text + " " + ch.pick(C.all_tokens()), "append a token"
    i = ch.below(len(toks))
    a, b, tok = toks[i]
    if op == "delete":
        return text[:a] + text[b:], f"delete `{tok}` at {a}"
    if op == "delete_run":
        j = min(len(toks) - 1, i + ch.below(8))
        return text[:a] + text[toks[j][1]:], f"delete {j - i + 1} tokens from {a}"
    if op == "duplicate":
        return text[:b] + " " + tok + text[b:], f"duplicate `{tok}` at {a}"
    if op == "insert_token":
        new = ch.pick(C.all_tokens())
        return text[:a] + new + " " + text[a:], f"insert `{new}` at {a}"
    if op == "replace":
        new = ch.pick(C.all_tokens())
        return text[:a] + new + text[b:], f"replace `{tok}` at {a} by `{new}`"
    if op == "swap" and i + 1 < len(toks):
        c, d, tok2 = toks[i + 1]
        return text[:a] + tok2 + text[b:c] + tok + text[d:], f"swap `{tok}` and `{tok2}` at {a}"
    lines = text.split("\n")
    k = ch.below(len(lines))
    if op == "delete_line":
        return "\n".join(lines[:k] + lines[k + 1:]), f"delete line {k + 1}"
    other = ch.pick(C.examples())
    frag = C.lines(other)
    j = ch.below(len(frag))
    if op == "paste_line":
        return "\n".join(lines[:k] + [frag[j]] + lines[k:]), f"paste line {j + 1} of {other} before line {k + 1}"
    # a fragment of another program, inside a line at a token boundary
    n = 1 + ch.below(3)
    piece = " ".join(frag[j:j + n])
    return text[:a] + piece + " " + text[a:], f"paste lines {j + 1}-{j + n} of {other} at {a}"


# ---------------------------------------------------------------- numbers

# What users type and what is at the edges; NaN has no literal, and 0/0 is it.
VALUES = ("0", "-1", "0.5", "1e-308", "1e308", "inf", "(0/0)", "2147483648", "1000000000")


def numeric_singles() -> list[tuple[str, int, int]]:
    """Every (example, number, value): one number of one example replaced."""
    return [(p, k, v) for p in C.examples() for k in range(len(C.numbers(p))) for v in range(len(VALUES))]


def numeric_mutant(ch: Chooser, index: Optional[int] = None) -> Mutant:
    """With ``index`` below the number of singles, that single replacement;
    otherwise two to four numbers of one example replaced at once."""
    singles = numeric_singles()
    if index is not None and index < len(singles):
        path, k, v = singles[index]
        edits = [(k, v)]
    else:
        path = ch.pick([p for p in C.examples() if C.numbers(p)])
        n = len(C.numbers(path))
        if index is None and ch.chance(2, 3):
            edits = [(ch.below(n), ch.below(len(VALUES)))]
        else:
            edits = [(ch.below(n), ch.below(len(VALUES))) for _ in range(2 + ch.below(3))]
    return _replace_numbers(path, edits)


def _replace_numbers(path: str, edits: list[tuple[int, int]]) -> Mutant:
    text = C.source(path)
    spans = C.numbers(path)
    chosen = {}
    for k, v in edits:
        chosen[k] = v
    what = []
    for k in sorted(chosen, reverse=True):
        a, b = spans[k]
        what.append(f"`{text[a:b]}` at {a} -> {VALUES[chosen[k]]}")
        text = text[:a] + VALUES[chosen[k]] + text[b:]
    return Mutant("numeric", path, "; ".join(reversed(what)), text=text, horizon=C.horizon(path))


# ---------------------------------------------------------------- IR

# The ops, weighted toward the ones whose mutants the decoder reads (a number
# for a number, a name for a name), which reach the validator and the run.
IR_OPS = ("range",) * 4 + ("swap",) * 2 + ("type", "type", "remove", "duplicate")
OTHER_TYPES = ("x", 1, 2.5, -1, [], {}, None, True, [0], {"Num": 1.0})
OUT_OF_RANGE = (-1, 2 ** 31, 10 ** 9, 1, 1, 1, 2, 3, 7, 64, 1000)
FLOATS = (float("nan"), "inf", "-inf", -1.0, 0.0, 0.5, 1e308, 1e-308, 2.0 ** 31, 1e9)


def _nodes(data) -> list:
    """Every value of the JSON data with its path and its parent's slot."""
    from .jsonmut import nodes
    return nodes(data)


def ir_mutant(ch: Chooser) -> Mutant:
    """One field of one example's IR replaced, removed or duplicated: the op
    first, then a field it applies to."""
    path = ch.pick(C.examples())
    data = copy.deepcopy(C.ir_data(path))
    nodes = _nodes(data)
    op = ch.pick(IR_OPS)
    if op == "range":    # (a location's numbers, most of the IR's, only now and then)
        locs = ch.chance(1, 10)
        nodes = [n for n in nodes if _number(n[1][n[2]]) and (locs or ".loc" not in n[0])] or nodes
    elif op == "swap":
        nodes = [n for n in nodes if isinstance(n[1][n[2]], str)] or nodes
    elif op == "duplicate":
        nodes = [n for n in nodes if isinstance(n[1], list)] or nodes
    where, parent, key = ch.pick(nodes)
    value = parent[key]
    if op == "remove":
        del parent[key]
        what = f"remove {where}"
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(value))
        what = f"duplicate {where}"
    elif op == "range" and isinstance(value, int) and not isinstance(value, bool):
        new = ch.pick(OUT_OF_RANGE)
        parent[key] = value + new if ch.chance(2, 3) and new > 0 else new
        what = f"{where}: {value} -> {parent[key]}"
    elif op == "range" and _number(value):
        parent[key] = ch.pick(FLOATS)
        what = f"{where}: {value} -> {parent[key]}"
    elif op == "swap" and isinstance(value, str):
        parent[key] = ch.pick(C.ir_strings())
        what = f"{where}: {value!r} -> {parent[key]!r}"
    else:
        new = ch.pick([v for v in OTHER_TYPES if type(v) is not type(value)])
        parent[key] = copy.deepcopy(new)
        what = f"{where}: {json.dumps(value)[:40]} -> {json.dumps(new)}"
    return Mutant("ir", path, what, data=data, horizon=C.horizon(path))


def _number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf")


def make(kind: str, ch: Chooser, index: Optional[int] = None) -> Mutant:
    if kind == "source":
        return source_mutant(ch)
    if kind == "numeric":
        return numeric_mutant(ch, index)
    if kind == "ir":
        return ir_mutant(ch)
    from .surfaces import KINDS as SURFACES
    if kind in SURFACES:
        return SURFACES[kind][0](ch, index)
    raise ValueError(kind)
