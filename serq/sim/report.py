"""The report of a run: the text of the development guide, the ``--json``
data and the ``--dump`` CSV files.

JSON numbers: NaN is written as ``null`` and an infinity as the string
``"inf"`` or ``"-inf"`` (the IR's convention), so ``json.dumps(data,
sort_keys=True)`` is valid JSON and byte-identical for the same IR and seed.

Time averages (``mean_*``, ``utilization``, ``mean_live``) are over
[warmup, end]; counters (``arrivals``, ``ended``, ``turns``, ``completed``,
``iterations``, ``admissions``, evictions, ``preemptions``, ``spills``,
``rejected``) count what happened at or after the warm-up; ``events`` counts
every event of the run; ``stuck`` counts the sessions that, when the run
ends, were preempted again without advancing past their previous preemption
(of the same hold) and have not got through that hold since: a livelock.

Per stage: ``mean_number`` is the time-average of the jobs present (waiting
or in service; an engine's residents); ``utilization`` the time-average of
the busy fraction (fifo: busy servers / c; ps and delay: a job present;
an engine: an iteration running; a shared stage: Σ flow rate / φ);
``mean_wait`` the mean time a completed job waited before its service
started (0 on every kind but fifo) and ``mean_service`` the mean of the
rest of its time at the stage.

Gauges (``gauges.<name>``): ``mean``, the time average over [warmup, end] of
the value read at the end of every instant; ``ci``, the batch-means 95 %
half-width over 20 equal windows of [warmup, end]; ``min`` and ``max``, the
least and greatest value held there for a positive time.  ``--dump`` writes
``gauge/<name>.csv`` (``time,value``), the change points from time 0.

Claims (``claims[]``): one record per claim in declaration order, the fields
of ``serq.sim.claims``; the text report gives them as a table whose last
column is what the claim read where it failed or was witnessed (at the end,
for a claim at end; the session's attributes, out of scope).
"""

from __future__ import annotations

import json
import math
import os

from . import stats as S


def _num(x):
    """A number for JSON: NaN -> None, ±inf -> "inf"/"-inf"."""
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        if x != x:
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    return x


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return _num(obj)


def _div(a, b):
    return a / b if b else math.nan


class Report:
    """What a run reports.  ``text()`` is the text report, ``data()`` the JSON
    report, ``dump(dir)`` the observation CSVs; ``stuck_sessions`` the number
    of stuck sessions (the CLI exits 1 when it is not 0)."""

    def __init__(self, sim):
        p = sim.program
        self.program = p
        end = sim.end_time
        warm = p.warmup
        span = end - warm
        self.stuck_sessions = len({sid for sid, _ in sim.stuck})
        # a run that stopped before its end (--max-events, --max-seconds, Ctrl-C)
        self.partial = sim.stopped[1] if sim.stopped is not None else None
        d = {
            "horizon": p.horizon,
            "end": end,
            "warmup": warm,
            "seed": p.seed,
            "events": sim.nevents,
            "arrivals": sim.arrivals_after,
            "ended": sim.ended_after,
            "turns": sim.turns_after,
            "mean_live": _div(sim.acc_live - sim.w_live, span),
        }
        obs = {}
        self._columns = []     # per observation: (name, times, sessions, turns, values)
        for k, name in enumerate(p.observes):
            obs[name] = S.summary(sim.obs_v[k])
            if sim.samples:
                self._columns.append((name, sim.obs_t[k], sim.obs_s[k], sim.obs_k[k], sim.obs_v[k]))
        d["observes"] = obs
        d["client"] = {k: S.summary(sim.client[k]) for k in ("ttft", "tpot", "response")}
        stages = []
        for s in sim.stages:
            an, ab = s.acc_n - s.w[0], s.acc_busy - s.w[1]
            stages.append({
                "name": s.label,
                "mean_number": _div(an, span),
                "utilization": _div(ab, span),
                "completed": s.completed,
                "throughput": _div(s.completed, span),
                "mean_wait": _div(s.wait_sum, s.completed),
                "mean_service": _div(s.serv_sum, s.completed),
                "iterations": s.iterations,
            })
        d["stages"] = stages
        pools = []
        for pl in sim.pools:
            w = pl.w
            pools.append({
                "name": pl.label,
                "mean_used": _div(pl.acc_used - w[0], span),
                "mean_cached": _div(pl.acc_cached - w[1], span),
                "mean_queue": _div(pl.acc_queue - w[2], span),
                "mean_holders": _div(pl.acc_holders - w[3], span),
                "mean_wait": _div(pl.wait_sum, pl.wait_n),
                "admissions": pl.admissions,
                "evicted_entries": pl.evicted_entries,
                "evicted_units": pl.evicted_units,
                "preemptions": pl.preemptions,
                "spills": pl.spills,
                "rejected": pl.rejected,
                "stuck": len({sid for (sid, _), pid in sim.stuck.items() if pid == pl.pid}),
                "over_cap": pl.over_cap,
            })
        d["pools"] = pools
        growing = sum(len(pl.growers) for pl in sim.pools)
        grow_notes = [(pl.label, len(pl.growers)) for pl in sim.pools if pl.growers]
        for s in sim.step_stages:
            for j in s.residents:
                if j.stalled and j.pa is not None:
                    growing += 1
                    grow_notes.append((j.pa.pool.label, 1))
        d["growing_at_end"] = growing
        idle = [s.label for s in sim.step_stages
                if not s.iterating and s.has_work() and s.last_failed]
        d["idle_with_work"] = idle
        if p.gauges:
            g = {}
            for i, gd in enumerate(p.gauges):
                mean, ci, lo, hi = S.time_windows(sim.gauge_t[i], sim.gauge_v[i], warm, end)
                g[gd.name] = {"mean": mean, "ci": ci, "min": lo, "max": hi}
            d["gauges"] = g
            self._gauges = [(gd.name, sim.gauge_t[i], sim.gauge_v[i]) for i, gd in enumerate(p.gauges)]
        else:
            self._gauges = []
        self.has_samples = sim.samples
        if p.claims:
            d["claims"] = [c.entry(sim) for c in sim.claims]
            self._claims_live = {c.name: c.live for c in sim.claims}
        self._data = d
        # notes for the text report
        notes = []
        for k, name in enumerate(p.observes):
            vals = sim.obs_v[k]
            if sim.obs_test[k] and len(vals) >= 40 and all(v == 0 for v in vals):
                notes.append(f"note: observe {name} is constant 0 over {len(vals)} samples")
        self._notes = notes
        tail = []
        for pl in sim.pools:
            for sid, need in pl.over_notes:
                tail.append(f"over: pool {pl.label}: the head of its queue (session {sid}) asks "
                            f"{_fmt_int(need)} > cap {_fmt_int(pl.cap)}")
        for label, n in grow_notes:
            tail.append(f"grow: {n} hold{'s' if n != 1 else ''} still waiting to grow at {label}")
        for label in idle:
            tail.append(f"idle: engine {label} ended with work it did not schedule")
        if self.stuck_sessions:
            tail.append(f"stuck: {self.stuck_sessions} session{'s' if self.stuck_sessions != 1 else ''} "
                        "preempted again without advancing past their previous preemption")
        self._tail = tail

    # -- JSON --------------------------------------------------------------
    def data(self) -> dict:
        return _clean(self._data)

    def json(self) -> str:
        return json.dumps(self.data(), sort_keys=True, indent=1, allow_nan=False) + "\n"

    # -- text --------------------------------------------------------------
    def text(self) -> str:
        d = self._data
        out = [
            f"run: horizon {_g(d['horizon'])} end {_g(d['end'])} warmup {_g(d['warmup'])} "
            f"seed {d['seed']} events {d['events']} arrivals {d['arrivals']} ended {d['ended']} "
            f"turns {d['turns']} mean live {_f(d['mean_live'], 3)}"
        ]
        if self.partial is not None:
            out.append(f"partial: the run stopped at {_g(d['end'])} ({self.partial}); these are the "
                       "figures until then")
        if d["observes"]:
            rows = [[name, str(s["count"]), _f(s["mean"], 4), _ci(s["ci"]), _f(s["cv2"], 3), _f(s["p99"], 4)]
                    for name, s in d["observes"].items()]
            out.append("")
            out.extend(_table(["observe", "count", "mean", "95% CI", "cv2", "p99"], rows))
            out.extend(self._notes)
        if d["stages"]:
            rows = [[s["name"], _f(s["mean_number"], 3), _f(s["utilization"], 3), str(s["completed"]),
                     _f(s["throughput"], 4), _f(s["mean_wait"], 4), _f(s["mean_service"], 4),
                     str(s["iterations"])] for s in d["stages"]]
            out.append("")
            out.extend(_table(["stage", "number", "util", "done", "thru", "wait", "service", "iters"], rows))
        if d["pools"]:
            rows = [[p["name"], _f(p["mean_used"], 1), _f(p["mean_cached"], 1), _f(p["mean_queue"], 3),
                     _f(p["mean_holders"], 3), _f(p["mean_wait"], 4), str(p["admissions"]),
                     str(p["evicted_entries"]), _fmt_int(p["evicted_units"]), str(p["preemptions"]),
                     str(p["spills"]), str(p["rejected"]), str(p["stuck"])] for p in d["pools"]]
            out.append("")
            out.extend(_table(["pool", "used", "cached", "queue", "holders", "wait", "admits", "evict(n)",
                               "evict(u)", "preempt", "spill", "rej", "stuck"], rows))
        if "gauges" in d:
            rows = [[name, _f(g["mean"], 4), _ci(g["ci"]), _f(g["min"], 4), _f(g["max"], 4)]
                    for name, g in d["gauges"].items()]
            out.append("")
            out.extend(_table(["gauge", "mean", "95% CI", "min", "max"], rows))
        rows = [[name, str(s["count"]), _f(s["mean"], 4), _ci(s["ci"]), _f(s["cv2"], 3), _f(s["p99"], 4)]
                for name, s in d["client"].items()]
        out.append("")
        out.extend(_table(["client", "count", "mean", "95% CI", "cv2", "p99"], rows))
        if "claims" in d:
            rows = [[c["name"], c["form"] + (f" of {c['stage']}" if c["stage"] is not None else ""),
                     c["verdict"], self._claim_where(c), _claim_read(c["read"])] for c in d["claims"]]
            out.append("")
            out.extend(_table(["claim", "form", "verdict", "where", "read"], rows, left=5))
        if self._tail:
            out.append("")
            out.extend(self._tail)
        return "\n".join(out)

    def _claim_where(self, c: dict) -> str:
        v = c["verdict"]
        if v in ("fails", "witnessed") and c["iteration"] is not None:
            return f"iteration {c['iteration']}, time {_g(c['time'])}"
        if v in ("holds", "not_witnessed") and c["iterations"] is not None:
            n = c["iterations"]
            return f"{n} iteration{'s' if n != 1 else ''}"
        if v in ("holds", "fails"):
            return f"end {_g(c['time'])}"
        if v == "out_of_scope":
            return f"session {c['session']}, time {_g(c['time'])}"
        if v == "not_evaluated":
            n = self._claims_live.get(c["name"]) or 0
            return f"{n} session{'s' if n != 1 else ''} live at the end {_g(c['time'])}"
        return ""

    # -- samples -----------------------------------------------------------
    @property
    def _samples(self) -> list:
        """Per observation ``(name, times, sessions, turns, values)``, as lists."""
        self._need_samples()
        return [(name, list(ts), list(ss), [_turn(k) for k in ks], list(vs))
                for name, ts, ss, ks, vs in self._columns]

    @property
    def _gauge_pts(self) -> list:
        """Per gauge ``(name, [(time, value), …])``: its change points."""
        return [(name, list(zip(ts, vs))) for name, ts, vs in self._gauges]

    def _need_samples(self) -> None:
        if not self.has_samples:
            raise ValueError("the run kept no samples: simulate(program, samples=True) keeps them")

    def samples(self, name: str) -> list:
        """The samples of observation ``name`` recorded after the warm-up, as
        ``(time, session, turn, value)`` in the order they were recorded
        (what ``dump`` writes)."""
        self._need_samples()
        for n, ts, ss, ks, vs in self._columns:
            if n == name:
                return list(zip(ts, ss, [_turn(k) for k in ks], vs))
        raise KeyError(name)

    # -- dump --------------------------------------------------------------
    def dump_files(self) -> list:
        """What ``--dump`` writes: ``(relative path, text)`` per file, in order."""
        self._need_samples()
        out = []
        for name, ts, ss, ks, vs in self._columns:
            rows = ["time,session,turn,value\n"]
            rows.extend(f"{_csv(t)},{s},{_turn(k)},{_csv(v)}\n" for t, s, k, v in zip(ts, ss, ks, vs))
            out.append((f"{name}.csv", "".join(rows)))
        for name, ts, vs in self._gauges:
            rows = ["time,value\n"]
            rows.extend(f"{_csv(t)},{_csv(v)}\n" for t, v in zip(ts, vs))
            out.append((os.path.join("gauge", f"{name}.csv"), "".join(rows)))
        return out

    def dump(self, directory: str) -> None:
        """Write ``dump_files()`` under ``directory``, all of them or none."""
        from ..files import write_tree
        write_tree(directory, self.dump_files(), "--dump ")


def _turn(k: float):
    """A turn number as the samples give it: a whole number (as a set may
    have made it, NaN or an infinity stays a float)."""
    return int(k) if k - k == 0.0 else k


def _csv(x: float) -> str:
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def _g(x) -> str:
    if isinstance(x, float):
        if x != x:
            return "NaN"
        if math.isinf(x):
            return "inf"
        if x == math.floor(x) and abs(x) < 1e15:
            return str(int(x))
        return f"{x:g}"
    return str(x)


def _f(x, digits: int) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "NaN"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def _ci(x) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "NaN"
    return f"±{x:.4f}"


def _fmt_int(x) -> str:
    if isinstance(x, float):
        if x != x:
            return "NaN"
        if math.isinf(x):
            return "inf"
        if x == math.floor(x):
            return str(int(x))
        return f"{x:.1f}"
    return str(x)


def _claim_read(read) -> str:
    """What a claim read, `name = value`, in the order it reads them."""
    if not read:
        return ""
    return ", ".join(f"{k} = {_g(v)}" for k, v in read.items())


def _table(header: list, rows: list, left: int = 1) -> list:
    """Columns as wide as their widest entry: the first ``left`` left-aligned
    (the names; all of a table of words), the others right-aligned, two
    spaces apart, a rule under the header."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(cells):
        parts = []
        for i, c in enumerate(cells):
            parts.append(c.ljust(widths[i]) if i < left else c.rjust(widths[i]))
        return "  ".join(parts).rstrip()
    out = [line(header), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return out
