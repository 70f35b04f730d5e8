"""Mutations of JSON data and of a file's bytes, shared by the surfaces'
mutators (the IR's type-changing one, the oracle inputs', a Mooncake
trace's rows): a value of another type where a value stands, a key removed,
misspelt or added, numbers at the edges, and the bytes of a file broken."""

from __future__ import annotations

import copy
import json

# What stands where a number stood (the type-changing mutator): a
# list, an object, a string or a boolean.
RETYPES = ([], [0], {}, {"Num": 1.0}, "x", "1", "", True, False)
# Numbers a user or a generator might write, and the edges of the readers.
NUMBERS = (0, -1, 1, 0.5, 1.5, 2 ** 31, 2 ** 53, 2 ** 53 + 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 310, -10 ** 310,
           1e308, float("inf"), float("-inf"), float("nan"), 1e-308, 10 ** 9, 7)
OTHER = (None, "7", "inf", "NaN", True, [], {}, [1, 2], {"id": 1}, "x" * 300)


def nodes(data, path="$", out=None) -> list:
    """Every value of the data with its path, its parent and its slot."""
    if out is None:
        out = []
    if isinstance(data, dict):
        for k in sorted(data, key=str):
            out.append((f"{path}.{k}", data, k))
            nodes(data[k], f"{path}.{k}", out)
    elif isinstance(data, list):
        for i, x in enumerate(data):
            out.append((f"{path}[{i}]", data, i))
            nodes(x, f"{path}[{i}]", out)
    return out


def is_number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf")


def retype(ch, data) -> str:
    """Change the type of one value where a number stands (70 %) or remove a
    key (30 %): the issue's type-changing mutator.  Returns what it did."""
    ns = nodes(data)
    nums = [n for n in ns if is_number(n[1][n[2]])]
    keys = [n for n in ns if isinstance(n[1], dict)]
    if keys and (not nums or ch.below(10) < 3):
        where, parent, key = ch.pick(keys)
        del parent[key]
        return f"remove {where}"
    if not nums:
        return "nothing to retype"
    where, parent, key = ch.pick(nums)
    new = copy.deepcopy(ch.pick(RETYPES))
    old = parent[key]
    parent[key] = new
    return f"{where}: {json.dumps(old)} -> {json.dumps(new)}"


def mutate(ch, data, keys=()) -> str:
    """One mutation of JSON data of any kind: a value retyped or set to an
    edge number, a key removed, misspelt or added (``keys``: names a file of
    its kind has, for misspellings), a list emptied or its item doubled."""
    ns = nodes(data)
    if not ns:
        return "nothing to mutate"
    op = ch.below(9)
    where, parent, key = ch.pick(ns)
    if op == 0 and isinstance(parent, dict):
        del parent[key]
        return f"remove {where}"
    if op == 1 and isinstance(parent, dict) and isinstance(key, str):
        bad = key[:-1] if len(key) > 1 and ch.chance(1, 2) else key + "s"
        parent[bad] = parent.pop(key)
        return f"misspell {where} as {bad}"
    if op == 2 and isinstance(parent, dict):
        extra = ch.pick(list(keys) + ["extra", "Prompt", "arrival"]) if keys else "extra"
        parent[extra] = copy.deepcopy(ch.pick(NUMBERS + OTHER))
        return f"add {extra!r} beside {where}"
    if op == 3 and isinstance(parent[key], list):
        parent[key] = [] if ch.chance(1, 2) or not parent[key] else parent[key] + [copy.deepcopy(parent[key][-1])]
        return f"{where}: {len(parent[key])} items"
    if op in (4, 5, 6):
        new = ch.pick(NUMBERS)
        parent[key] = new
        return f"{where} -> {_shown(new)}"
    new = copy.deepcopy(ch.pick(RETYPES + OTHER))
    parent[key] = new
    return f"{where} -> {_shown(new)}"


def _shown(v) -> str:
    try:
        t = json.dumps(v)
    except (TypeError, ValueError):
        t = repr(v)
    return t if len(t) <= 40 else t[:37] + "..."


def dumps(data) -> str:
    """JSON as a user's tool writes it (NaN and Infinity as their literals)."""
    return json.dumps(data, allow_nan=True)


# ---------------------------------------------------------------- bytes

def break_bytes(ch, raw: bytes) -> tuple[bytes, str]:
    """A file's bytes broken as a disk, an editor or another tool breaks them."""
    op = ch.below(9)
    k = ch.below(len(raw) + 1)
    if op == 0:
        return raw[:k] + b"\xff" + raw[k:], f"byte 0xff at {k}"
    if op == 1:
        return raw[:k] + b"\xc3" + raw[k:], f"a cut UTF-8 sequence at {k}"
    if op == 2:
        return raw[:k], f"cut at {k} of {len(raw)}"
    if op == 3:
        return b"", "empty"
    if op == 4:
        return b"\xef\xbb\xbf" + raw, "a byte-order mark"
    if op == 5:
        return raw.replace(b"\n", b"\r\n"), "CRLF line ends"
    if op == 6:
        return raw[:k] + b"\x00" + raw[k:], f"NUL at {k}"
    if op == 7:
        depth = (100, 5000, 30000)[ch.below(3)]
        return raw[:k] + b"[" * depth + b"]" * depth + raw[k:], f"{depth} brackets at {k}"
    lines = raw.split(b"\n")
    i = ch.below(len(lines))
    j = ch.below(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines), f"lines {i + 1} and {j + 1} swapped"
