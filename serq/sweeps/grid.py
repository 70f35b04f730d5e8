"""A sweep's grid: the inputs' value lists, the seeds, and the points (every
combination of the inputs' values, the first input varying slowest).

The CLI gives ``--set Lambda=0.3,0.6,0.9`` (values split at the commas
outside parentheses, so ``--set x=min(1,2),3`` is two values) and
``--seeds 1-5`` (``1-5``, ``1,3,7``, ``1-3,10``); Python gives lists."""

from __future__ import annotations

import itertools
import math
import numbers
import re

from ..api.program import set_text, usage
from ..ir.model import SEEDS, SEEDS_TEXT

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
        if len(vals) > MAX_RUNS:
            raise usage(f"the input {name} is given {len(vals):,} values, more than the {MAX_RUNS:,} runs a sweep "
                        "makes")
        texts = [set_text(name, v) for v in vals]
        seen = set()
        for t in texts:
            if t in seen:
                raise usage(f"the input {name} is given the value {t[:40]} twice")
            seen.add(t)
        if name == "seed":
            raise usage("an input named `seed` would share its column with the sweep's seeds",
                        help="seeds= (--seeds) give the seeds; rename the input")
        out[name] = texts
    return out


# A sweep's most runs (points × seeds): each is a row held in memory
MAX_RUNS = 1_000_000


def parse_seeds(spec) -> list[int]:
    """``"1-5"`` / ``"1,3,7"`` / ``range(1, 6)`` / ``[1, 3]`` → a list of distinct
    seeds, at most MAX_RUNS of them (counted before any list is made, so
    ``1-10^12`` is refused at once, not out of memory)."""
    if isinstance(spec, str):
        parts = []
        total = 0
        for part in spec.split(","):
            part = part.strip()
            m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
            if m:
                a, b = int(m.group(1)), int(m.group(2))
                if b < a:
                    raise usage(f"--seeds {spec}: the range {part} is empty", help=f"--seeds {b}-{a}")
                parts.append(range(a, b + 1))
                total += b - a + 1
            elif re.fullmatch(r"\d+", part):
                parts.append((int(part),))
                total += 1
            else:
                raise usage(f"--seeds {spec[:60]}: `{part[:40]}` is not a seed or a range",
                            help="--seeds 1-5, --seeds 1,3,7 or --seeds 1-3,10")
            if total > MAX_RUNS:
                raise usage(f"--seeds {spec[:60]}: more than {MAX_RUNS:,} seeds, the most runs a sweep makes",
                            help="a sweep holds one row per run; give fewer seeds")
            if parts[-1][-1] >= SEEDS:
                raise usage(f"--seeds {spec[:60]}: {parts[-1][-1]} is not a seed ({SEEDS_TEXT})")
        seeds = [x for p in parts for x in p]
    else:
        if isinstance(spec, (bool, numbers.Real)):
            raise usage(f"seeds={spec!r}: give the seeds themselves",
                        help=f"seeds=range(1, {int(spec) + 1}) or seeds=\"1-{int(spec)}\"" if not isinstance(spec, bool)
                        and math.isfinite(spec) else "seeds=range(1, 6)")
        if isinstance(spec, range) and len(spec) > MAX_RUNS:
            raise usage(f"seeds= has {len(spec):,} seeds, more than the {MAX_RUNS:,} runs a sweep makes")
        try:
            seeds = list(itertools.islice(iter(spec), MAX_RUNS + 1))
        except TypeError:
            raise usage(f"seeds= is a list of seeds, not {type(spec).__name__}") from None
        if len(seeds) > MAX_RUNS:
            raise usage(f"seeds= has more than {MAX_RUNS:,} seeds, the most runs a sweep makes")
        for s in seeds:
            if isinstance(s, bool) or not isinstance(s, numbers.Integral) or not 0 <= s < SEEDS:
                raise usage(f"seeds=: {str(s)[:40]!r} is not a seed ({SEEDS_TEXT})")
        seeds = [int(s) for s in seeds]
    if not seeds:
        raise usage("a sweep needs a seed at least", help="seeds=range(1, 6) (--seeds 1-5)")
    seen = set()
    for s in seeds:
        if s in seen:
            raise usage(f"seed {s} is given twice")
        seen.add(s)
    return seeds


def points(lists: dict, seeds: int = 1) -> list[dict]:
    """Every combination of the inputs' values, the first input varying
    slowest; with ``seeds`` each, at most MAX_RUNS runs."""
    names = list(lists)
    n = seeds
    for name in names:
        n *= len(lists[name])
        if n > MAX_RUNS:
            raise usage(f"the grid is more than {MAX_RUNS:,} runs (points × seeds), the most a sweep makes",
                        help="sweep fewer values, or fewer seeds")
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
