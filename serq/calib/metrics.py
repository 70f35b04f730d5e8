"""What a measured run's summary says, and how far a prediction is from it.

Per request, as LLMServingSim's `bench validate` computes them (and as
reproduces each bundle's `validation/summary.txt` from `requests.jsonl`):

    TTFT    = first token − queued
    TPOT    = (last token − first token) / max(1, output tokens − 1)
    latency = last token − queued

The summary is each metric's mean, median, P90, P95 and P99 (linear
interpolation between order statistics, numpy's default); a prediction's
per-request error is |predicted − measured| / measured, summarised by its
median and P90."""

from __future__ import annotations

import numpy as np

METRICS = ("ttft", "tpot", "latency")
STATS = ("mean", "median", "p90", "p95", "p99")
TITLES = {"ttft": "TTFT", "tpot": "TPOT", "latency": "Latency"}


def per_request(start: float, first: float, last: float, output: int) -> dict:
    return {"ttft": first - start, "tpot": (last - first) / max(1, output - 1), "latency": last - start}


def summary(values: dict) -> dict:
    """metric -> {stat -> seconds} over the requests' values (metric -> list)."""
    out = {}
    for m in METRICS:
        x = np.asarray(values[m], dtype=float)
        out[m] = {"mean": float(x.mean()), "median": float(np.median(x)),
                  "p90": float(np.percentile(x, 90)), "p95": float(np.percentile(x, 95)),
                  "p99": float(np.percentile(x, 99))}
    return out


def diff_pct(pred: dict, meas: dict) -> dict:
    return {m: {s: 100.0 * (pred[m][s] - meas[m][s]) / meas[m][s] for s in STATS} for m in METRICS}


def errors(pred: dict, meas: dict) -> dict:
    """metric -> {median, p90} of the per-request |pred − meas| / meas."""
    out = {}
    for m in METRICS:
        p = np.asarray(pred[m], dtype=float)
        q = np.asarray(meas[m], dtype=float)
        e = np.abs(p - q) / q
        out[m] = {"median": float(np.median(e)), "p90": float(np.percentile(e, 90))}
    return out


def summary_text(rows: list) -> str:
    """The summary table: ``rows`` is [(column title, summary, diff % or None)]."""
    head = f"{'metric':<16}" + "".join(f"{t:>14}" + ("" if d is None else f"{'':>1}{'diff':>8}")
                                     for t, _, d in rows)
    lines = [head, "-" * len(head)]
    for m in METRICS:
        for s in STATS:
            line = f"{TITLES[m] + ' ' + s.capitalize():<16}"
            for _, summ, d in rows:
                line += f"{summ[m][s] * 1e3:>12.1f}ms"
                if d is not None:
                    line += f" {d[m][s]:>+7.1f}%"
            lines.append(line)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def read_summary(path: str) -> dict:
    """A bundle's `validation/summary.txt`: metric -> stat -> (vLLM, Sim) in
    seconds (the file prints milliseconds to 0.1)."""
    from . import read as R
    t = R.text(path, "summary")
    out: dict = {}
    names = {"TTFT": "ttft", "TPOT": "tpot", "Latency": "latency"}
    for n, line in enumerate(t.split("\n"), 1):
        parts = line.split()
        if len(parts) == 5 and parts[0] in names and parts[1].lower() in STATS:
            try:
                out.setdefault(names[parts[0]], {})[parts[1].lower()] = (float(parts[2]) / 1e3,
                                                                          float(parts[3]) / 1e3)
            except ValueError:
                raise R.bad(path, n, f"`{line.strip()}` is not a metric, two numbers and a difference") from None
    for m in METRICS:
        for s in STATS:
            if s not in out.get(m, {}):
                raise R.content(f"the summary has no row {TITLES[m]} {s.capitalize()}", path)
    return out
