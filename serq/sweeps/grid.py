"""A sweep's grid: the inputs' value lists, the seeds, and the points (every
combination of the inputs' values, the first input varying slowest).

The CLI gives ``--set Lambda=0.3,0.6,0.9`` (values split at the commas
outside parentheses, so ``--set x=min(1,2),3`` is two values) and
``--seeds 1-5`` (``1-5``, ``1,3,7``, ``1-3,10``); Python gives lists."""

from __future__ import annotations

import itertools
import numbers
import re

from ..api.program import set_text, usage

_INT = re.compile(r"[+-]?\d+")


def split_values(text: str) -> list[str]:
    """``0.3,0.6,min(1,2)`` → ``["0.3", "0.6", "min(1,2)"]``."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def cli_sets(values: tuple) -> dict:
    """``("Lambda=0.3,0.6", "B=2048")`` → ``{"Lambda": ["0.3", "0.6"], "B": ["2048"]}``."""
    out: dict = {}
    for v in values:
        if "=" not in v:
            raise usage(f"--set {v}: not name=values", help="--set Lambda=0.3,0.6,0.9")
        name, text = v.split("=", 1)
        name = name.strip()
        if name in out:
            raise usage(f"--set {name} is given twice", help=f"give its values once: --set {name}=a,b,c")
        out[name] = split_values(text)
    return out


def value_lists(sets) -> dict:
    """The inputs' values as ``--set`` texts: ``{name: [text, …]}`` from a dict
    of a value or a list of values each."""
    if sets is None:
        return {}
    if not isinstance(sets, dict):
        raise usage(f"set= takes a dict of inputs, not {type(sets).__name__}",
                    help='set={"Lambda": [0.3, 0.6, 0.9], "B": 2048}')
    out = {}
    for name, vals in sets.items():
        if isinstance(vals, (str, numbers.Real)):
            vals = [vals]
        try:
            vals = list(vals)
        except TypeError:
            raise usage(f"the input {name} is given {type(vals).__name__}; give a value or a list of values") \
                from None
        if not vals:
            raise usage(f"the input {name} is given no values")
        texts = [set_text(name, v) for v in vals]
        dup = next((t for i, t in enumerate(texts) if t in texts[:i]), None)
        if dup is not None:
            raise usage(f"the input {name} is given the value {dup} twice")
        if name == "seed":
            raise usage("an input named `seed` would share its column with the sweep's seeds",
                        help="seeds= (--seeds) give the seeds; rename the input")
        out[name] = texts
    return out


def parse_seeds(spec) -> list[int]:
    """``"1-5"`` / ``"1,3,7"`` / ``range(1, 6)`` / ``[1, 3]`` → a list of distinct seeds."""
    if isinstance(spec, str):
        seeds = []
        for part in spec.split(","):
            part = part.strip()
            m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
            if m:
                a, b = int(m.group(1)), int(m.group(2))
                if b < a:
                    raise usage(f"--seeds {spec}: the range {part} is empty", help=f"--seeds {b}-{a}")
                seeds.extend(range(a, b + 1))
            elif re.fullmatch(r"\d+", part):
                seeds.append(int(part))
            else:
                raise usage(f"--seeds {spec}: `{part}` is not a seed or a range",
                            help="--seeds 1-5, --seeds 1,3,7 or --seeds 1-3,10")
    else:
        if isinstance(spec, (bool, numbers.Real)):
            raise usage(f"seeds={spec!r}: give the seeds themselves",
                        help=f"seeds=range(1, {int(spec) + 1}) or seeds=\"1-{int(spec)}\"" if not isinstance(spec, bool)
                        else "seeds=range(1, 6)")
        try:
            seeds = list(spec)
        except TypeError:
            raise usage(f"seeds= is a list of seeds, not {type(spec).__name__}") from None
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
                raise usage(f"seeds=: {s!r} is not a seed (a whole number ≥ 0)")
        seeds = [int(s) for s in seeds]
    if not seeds:
        raise usage("a sweep needs a seed at least", help="seeds=range(1, 6) (--seeds 1-5)")
    dup = next((s for i, s in enumerate(seeds) if s in seeds[:i]), None)
    if dup is not None:
        raise usage(f"seed {dup} is given twice")
    return seeds


def points(lists: dict) -> list[dict]:
    """Every combination of the inputs' values, the first input varying slowest."""
    names = list(lists)
    return [dict(zip(names, combo)) for combo in itertools.product(*(lists[n] for n in names))]


def column_value(text: str):
    """An input's value in the table: the number its text is, else the text."""
    t = text.strip()
    if _INT.fullmatch(t):
        return int(t)
    try:
        return float(t)
    except ValueError:
        return text
