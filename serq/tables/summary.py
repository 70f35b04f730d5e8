"""What a sweep's rows say about each point (read by serq.sweeps' summary
and serq.plot alike, so it sits below both): which runs are unstable (a count
still growing at the end, stuck sessions), the spread of a metric across the
seeds (mean, t-interval, median, least, greatest, how many seeds unstable),
and how many seeds keep a metric under a bound (``--under METRIC=VALUE``).

A run is *unstable* when its report says its means are not a steady state's:
``run.growing`` names a count still rising over the run's second half
(``serq/sim/trend.py``), or ``run.stuck`` counts sessions preempted again
without advancing.  Its numbers are what the run measured, but a longer run
would measure others, so a point is read by its seeds one by one, not by
their mean alone.  Everything here reads rows (dicts of a sweep's columns,
``docs/report.md``), so a table read back from a file says the same as the
sweep that wrote it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .spread import spread

GROWING = "run.growing"
STUCK = "run.stuck"


def growing(row: dict) -> list:
    """The counts a run's report judged still growing (``run.growing``: the
    names joined by spaces, ``-`` for none)."""
    v = row.get(GROWING)
    return [n for n in v.split() if n != "-"] if isinstance(v, str) else []


def stuck(row: dict) -> int:
    v = row.get(STUCK)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else 0


def is_unstable(row: dict) -> bool:
    return bool(growing(row)) or stuck(row) > 0


def why_unstable(row: dict) -> str:
    """``still growing: the queue of pool reqs, the live count; 1 stuck session (pool kv)``."""
    parts = []
    g = growing(row)
    if g:
        parts.append("still growing: " + ", ".join(count_words(n) for n in g))
    n = stuck(row)
    if n:
        pools = [c[len("pool."):-len(".stuck")] for c, v in row.items()
                 if c.startswith("pool.") and c.endswith(".stuck") and isinstance(v, (int, float)) and v]
        parts.append(f"{n} stuck session{'s' if n != 1 else ''}" + (f" (pool {', '.join(pools)})" if pools else ""))
    return "; ".join(parts)


def count_words(name: str) -> str:
    """A count of the report's ``growing`` list in words (``pool.kv.queue`` →
    ``the queue of pool kv``)."""
    if name == "run.live":
        return "the live count"
    kind, _, rest = name.partition(".")
    label, _, field = rest.rpartition(".")
    if kind == "pool" and field == "queue":
        return f"the queue of pool {label}"
    if kind == "stage" and field == "number":
        return f"the number at stage {label}"
    return name


@dataclass(frozen=True)
class Under:
    """How many seeds of a point keep ``metric`` under ``bound``."""
    metric: str
    bound: float
    seeds: list          # every seed of the point
    under: list          # the seeds whose value is under the bound
    over: list           # (seed, value) of the others with a value
    missing: list        # the seeds without a value (NaN: nothing recorded)
    unstable: list       # the seeds judged unstable, under or not

    @property
    def shaky(self) -> list:
        """The seeds under the bound whose run is unstable: a longer horizon
        may put them over."""
        return [s for s in self.under if s in self.unstable]

    def words(self) -> str:
        return f"{len(self.under)} of {len(self.seeds)} seeds under"


def under(rows: list, metric: str, bound: float) -> Under:
    seeds, below, over, missing, shaky = [], [], [], [], []
    for r in rows:
        s = r.get("seed")
        seeds.append(s)
        v = r.get(metric)
        if is_unstable(r):
            shaky.append(s)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v:
            missing.append(s)
        elif v < bound:
            below.append(s)
        else:
            over.append((s, v))
    return Under(metric, bound, seeds, below, over, missing, shaky)


def summarise(rows: list, metric: str) -> dict:
    """The spread of ``metric`` over a point's rows (one per seed): ``seeds``
    (with a value), ``mean``, ``half``, ``median``, ``min``, ``max``,
    ``unstable`` (the rows judged unstable)."""
    s = spread([r.get(metric) for r in rows])
    return {"seeds": s.n, "mean": s.mean, "half": s.half, "median": s.median, "min": s.min, "max": s.max,
            "unstable": sum(1 for r in rows if is_unstable(r))}


def parse_under(text: str):
    """``client.ttft.p95=0.5`` → ``("client.ttft.p95", 0.5)``, or None when it
    is not METRIC=NUMBER."""
    if "=" not in text:
        return None
    metric, _, value = text.rpartition("=")
    try:
        bound = float(value)
    except ValueError:
        return None
    if not metric.strip() or bound != bound:
        return None
    return metric.strip(), bound


def fmt_bound(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and x == int(x) else repr(x)
