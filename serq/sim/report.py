"""The report of a run: the text ``serq run`` prints, the ``--json`` data
and the ``--dump`` CSV files.  ``docs/report.md`` documents every field and
``serq/report.schema.json`` is the JSON's schema (``SCHEMA``, its version,
is the JSON's ``schema``).

One name per field: a table's columns are its records' keys, the run line's
words the ``run`` section's keys, the ``made`` line's the ``made``
section's, and the notes the text ends with are the JSON's ``notes``.  The
JSON holds every key of every section, empty or not; the text leaves out
what has nothing to say (a table of no rows, a row of no samples) and says
in a note what it left out that a reader would look for.

JSON numbers: NaN is written as ``null`` and an infinity as the string
``"inf"`` or ``"-inf"`` (the IR's convention), so ``json.dumps(data,
sort_keys=True)`` is valid JSON and byte-identical for the same IR, seed and
origin (the program's path and inputs as given, ``simulate(origin=…)``).

Time averages (``live``, a stage's ``number`` and ``utilization``, a
pool's ``used``, ``cached``, ``queue``, ``holders``) are over [warmup, end];
counters count what happened at or after the warm-up; ``events`` counts
every event of the run.
"""

from __future__ import annotations

import json
import math
import os

from . import stats as S
from . import trend as T
from ..about import NOT_IN_TEXT, made

SCHEMA = 1          # the JSON's layout: serq/report.schema.json
CLIENT = ("ttft", "tpot", "response")
SUMMARY_HEADER = ["count", "mean", "ci", "cv2"] + [k for k, _ in S.QUANTILES]
STAGE_HEADER = ["number", "utilization", "completed", "throughput", "wait", "service", "iterations"]
POOL_HEADERS = (["used", "cached", "queue", "holders", "wait", "admissions"],
                ["evictions", "evicted", "preemptions", "spills", "rejected", "stuck", "over_cap"])
GAUGE_HEADER = ["mean", "ci", "min", "max"]
CLAIM_HEADER = ["form", "verdict", "where", "read"]


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
    report, ``dump(dir)`` the sample CSVs; ``stuck_sessions`` the number
    of stuck sessions (a note; the run finished all the same, and `serq
    run` exits 0)."""

    def __init__(self, sim, origin: dict | None = None):
        p = sim.program
        self.program = p
        end = sim.end_time
        warm = p.warmup
        span = end - warm
        self.stuck_sessions = len({sid for sid, _ in sim.stuck})
        # a run that stopped before its end (--max-events, --max-seconds, Ctrl-C)
        self.partial = sim.stopped[1] if sim.stopped is not None else None
        waiting = sum(len(pl.growers) for pl in sim.pools)
        grow_notes = [(pl.label, len(pl.growers)) for pl in sim.pools if pl.growers]
        for s in sim.step_stages:
            for j in s.residents:
                if j.stalled and j.pa is not None:
                    waiting += 1
                    grow_notes.append((j.pa.pool.label, 1))
        idle = [s.label for s in sim.step_stages
                if not s.iterating and s.has_work() and s.last_failed]
        self._growing = T.growing(sim, sim.trend, end)
        d = {"schema": SCHEMA, "made": made(p, origin)}
        d["run"] = {
            "end": end,
            "events": sim.nevents,
            "arrivals": sim.arrivals_after,
            "ended": sim.ended_after,
            "turns": sim.turns_after,
            "live": _div(sim.acc_live - sim.w_live, span),
            "stuck": self.stuck_sessions,
            "waiting_to_grow": waiting,
            "idle_with_work": idle,
            "growing": [name for name, _ in self._growing],
            "partial": self.partial,
        }
        self._columns = []     # per observation: (name, times, sessions, turns, values)
        obs = {}
        for k, name in enumerate(p.observes):
            obs[name] = S.summary(sim.obs_v[k])
            if sim.samples:
                self._columns.append((name, sim.obs_t[k], sim.obs_s[k], sim.obs_k[k], sim.obs_v[k]))
        d["observes"] = obs
        d["client"] = {k: S.summary(sim.client[k]) for k in CLIENT}
        self._client_columns = []
        if sim.samples:
            for k in CLIENT:
                ts, ss, ks = sim.client_at[k]
                self._client_columns.append((f"client.{k}", ts, ss, ks, sim.client[k]))
        d["stages"] = [{
            "name": s.label,
            "number": _div(s.acc_n - s.w[0], span),
            "utilization": _div(s.acc_busy - s.w[1], span),
            "completed": s.completed,
            "throughput": _div(s.completed, span),
            "wait": _div(s.wait_sum, s.completed),
            "service": _div(s.serv_sum, s.completed),
            "iterations": s.iterations,
        } for s in sim.stages]
        d["pools"] = [{
            "name": pl.label,
            "used": _div(pl.acc_used - pl.w[0], span),
            "cached": _div(pl.acc_cached - pl.w[1], span),
            "queue": _div(pl.acc_queue - pl.w[2], span),
            "holders": _div(pl.acc_holders - pl.w[3], span),
            "wait": _div(pl.wait_sum, pl.wait_n),
            "admissions": pl.admissions,
            "evictions": pl.evicted_entries,
            "evicted": pl.evicted_units,
            "preemptions": pl.preemptions,
            "spills": pl.spills,
            "rejected": pl.rejected,
            "stuck": len({sid for (sid, _), pid in sim.stuck.items() if pid == pl.pid}),
            "over_cap": pl.over_cap,
        } for pl in sim.pools]
        g = {}
        for i, gd in enumerate(p.gauges):
            mean, ci, lo, hi = S.time_windows(sim.gauge_t[i], sim.gauge_v[i], warm, end)
            g[gd.name] = {"mean": mean, "ci": ci, "min": lo, "max": hi}
        d["gauges"] = g
        self._gauges = [(gd.name, sim.gauge_t[i], sim.gauge_v[i]) for i, gd in enumerate(p.gauges)]
        self.has_samples = sim.samples
        d["claims"] = [c.entry(sim) for c in sim.claims] if p.claims else []
        self._claims_live = {c.name: c.live for c in sim.claims} if p.claims else {}
        self._data = d
        self._engines = bool(sim.step_stages)
        d["notes"] = self._notes(sim, grow_notes)

    # -- notes ---------------------------------------------------------------
    def _notes(self, sim, grow_notes: list) -> list:
        """What a reader must not miss, in this order: sessions refused or
        stuck, a count still growing, a claim that failed, what the run left
        waiting, statistics undefined for want of samples, a test that never
        held (docs/report.md, Notes)."""
        d = self._data
        out = []
        for pl, rec in zip(sim.pools, d["pools"]):
            n = rec["rejected"]
            if n:
                out.append(f"rejected: pool {pl.label} rejected {_count(n, 'request')} that can never fit "
                           f"(cap {_fmt_int(pl.cap)}); {'its session' if n == 1 else 'their sessions'} ended")
        if self.stuck_sessions:
            at = [p["name"] for p in d["pools"] if p["stuck"]]
            out.append(f"stuck: {_count(self.stuck_sessions, 'session')} preempted again without advancing "
                       f"past their previous preemption{' at pool ' + ', '.join(at) if at else ''}: a preemption "
                       "storm (vLLM's scheduler, when its KV cache cannot hold what the running requests grow "
                       "to, preempts the last admitted and recomputes it, again and again); the run finished, "
                       "and their stuck turns are not in its figures. To change: a lower load, fewer requests "
                       "at once (vLLM's max_num_seqs), more KV blocks (num_gpu_blocks), shorter requests or "
                       "another instance")
        for name, avg in self._growing:
            out.append(f"growing: {_what(name)} rose over the run's second half (time averages "
                       f"{', '.join(_sig(a) for a in avg)} over its quarters): it may not have settled; "
                       "a longer run or other seeds tell")
        for c in d["claims"]:
            if c["verdict"] == "fails":
                out.append(f"fails: claim {c['name']} fails at {self._claim_where(c)}")
        for pl in sim.pools:
            for sid, need in pl.over_notes:
                out.append(f"over: pool {pl.label}: the head of its queue (session {sid}) asks "
                           f"{_fmt_int(need)} > cap {_fmt_int(pl.cap)}")
        for label, n in grow_notes:
            out.append(f"grow: {_count(n, 'hold')} still waiting to grow at {label}")
        for label in d["run"]["idle_with_work"]:
            out.append(f"idle: engine {label} ended with work it did not schedule")
        none, few = {}, {}
        for section, entries in (("observe", d["observes"]), ("client", d["client"])):
            for name, s in entries.items():
                if s["count"] == 0 and (section == "observe" or name == "response" or self._engines):
                    none.setdefault(section, []).append(name)
                elif 0 < s["count"] < S.MIN_CI_SAMPLES:
                    few.setdefault(section, []).append(f"{name} {s['count']}")
        if none:
            out.append(f"undefined: no sample after the warm-up (no row): {_by_section(none)}")
        if few:
            out.append(f"undefined: below {S.MIN_CI_SAMPLES} samples the ci is null (below 2, the cv2 too): "
                       f"{_by_section(few)}")
        for k, name in enumerate(self.program.observes):
            vals = sim.obs_v[k]
            if sim.obs_test[k] and len(vals) >= 40 and all(v == 0 for v in vals):
                out.append(f"note: observe {name} is constant 0 over {len(vals)} samples")
        return out

    # -- JSON --------------------------------------------------------------
    def data(self) -> dict:
        return _clean(self._data)

    def json(self) -> str:
        return json.dumps(self.data(), sort_keys=True, indent=1, allow_nan=False) + "\n"

    # -- text --------------------------------------------------------------
    def text(self) -> str:
        d = self._data
        m = d["made"]
        shown = {"inputs": " ".join(f"{k}={v}" for k, v in m["inputs"].items()) if m["inputs"] else None,
                 "horizon": _g(m["horizon"]), "warmup": _g(m["warmup"])}
        words = [(k, shown.get(k, v)) for k, v in m.items() if k not in NOT_IN_TEXT]
        r = d["run"]
        out = ["made: " + " ".join(f"{k} {v}" for k, v in words if v is not None),
               f"run: end {_g(r['end'])} events {r['events']} arrivals {r['arrivals']} ended {r['ended']} "
               f"turns {r['turns']} live {_f(r['live'], 3)}"]
        if self.partial is not None:
            out.append(f"partial: the run stopped at {_g(r['end'])} ({self.partial}); these are the "
                       "figures until then")
        for kind, entries in (("observe", d["observes"]), ("client", d["client"])):
            rows = [[name, str(s["count"]), _f(s["mean"], 4), _ci(s["ci"]), _f(s["cv2"], 3)]
                    + [_f(s[k], 4) for k, _ in S.QUANTILES]
                    for name, s in entries.items() if s["count"]]
            _section(out, [kind] + SUMMARY_HEADER, rows)
        _section(out, ["stage"] + STAGE_HEADER,
                 [[s["name"], _f(s["number"], 3), _f(s["utilization"], 3), str(s["completed"]),
                   _f(s["throughput"], 4), _f(s["wait"], 4), _f(s["service"], 4), str(s["iterations"])]
                  for s in d["stages"]])
        _section(out, ["pool"] + POOL_HEADERS[0],
                 [[p["name"], _f(p["used"], 1), _f(p["cached"], 1), _f(p["queue"], 3), _f(p["holders"], 3),
                   _f(p["wait"], 4), str(p["admissions"])] for p in d["pools"]])
        _section(out, ["pool"] + POOL_HEADERS[1],
                 [[p["name"], str(p["evictions"]), _fmt_int(p["evicted"]), str(p["preemptions"]),
                   str(p["spills"]), str(p["rejected"]), str(p["stuck"]), str(p["over_cap"])]
                  for p in d["pools"]])
        _section(out, ["gauge"] + GAUGE_HEADER,
                 [[name, _f(g["mean"], 4), _ci(g["ci"]), _f(g["min"], 4), _f(g["max"], 4)]
                  for name, g in d["gauges"].items()])
        _section(out, ["claim"] + CLAIM_HEADER,
                 [[c["name"], c["form"] + (f" of {c['stage']}" if c["stage"] is not None else ""),
                   c["verdict"], self._claim_where(c), _claim_read(c["read"])] for c in d["claims"]], left=5)
        if d["notes"]:
            out.append("")
            out.extend(d["notes"])
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
        """The samples of observation ``name`` (or of the client's
        ``client.ttft``, ``client.tpot``, ``client.response``) recorded after
        the warm-up, as ``(time, session, turn, value)`` in the order they
        were recorded (what ``dump`` writes)."""
        self._need_samples()
        for n, ts, ss, ks, vs in self._columns + self._client_columns:
            if n == name:
                return list(zip(ts, ss, [_turn(k) for k in ks], vs))
        raise KeyError(name)

    # -- dump --------------------------------------------------------------
    def dump_files(self) -> list:
        """What ``--dump`` writes: ``(relative path, text)`` per file, in order:
        ``NAME.csv`` per observe, ``client/KEY.csv`` per client statistic
        (``time,session,turn,value``), ``gauge/NAME.csv`` per gauge
        (``time,value``)."""
        self._need_samples()
        out = []
        for name, ts, ss, ks, vs in self._columns + self._client_columns:
            rows = ["time,session,turn,value\n"]
            rows.extend(f"{_csv(t)},{s},{_turn(k)},{_csv(v)}\n" for t, s, k, v in zip(ts, ss, ks, vs))
            path = os.path.join("client", f"{name[7:]}.csv") if name.startswith("client.") else f"{name}.csv"
            out.append((path, "".join(rows)))
        for name, ts, vs in self._gauges:
            rows = ["time,value\n"]
            rows.extend(f"{_csv(t)},{_csv(v)}\n" for t, v in zip(ts, vs))
            out.append((os.path.join("gauge", f"{name}.csv"), "".join(rows)))
        return out

    def dump(self, directory: str, force: bool = False, inputs=()) -> None:
        """Write ``dump_files()`` under ``directory``, all of them or none
        (serq/files.py: a directory holding files the dump did not make is
        refused without ``force``)."""
        from ..files import write_tree
        write_tree(directory, self.dump_files(), what="--dump ", command="serq run --dump", force=force,
                   inputs=inputs)


def _section(out: list, header: list, rows: list, left: int = 1) -> None:
    """A table, after a blank line; nothing when it has no row."""
    if rows:
        out.append("")
        out.extend(_table(header, rows, left=left))


def _by_section(names: dict) -> str:
    """``observe a, b; client c``."""
    return "; ".join(f"{section} {', '.join(xs)}" for section, xs in names.items())


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _what(name: str) -> str:
    """A count of ``trend.names`` in words."""
    if name == "run.live":
        return "the live count"
    kind, rest = name.split(".", 1)
    label, field = rest.rsplit(".", 1)
    return f"the queue of pool {label}" if kind == "pool" else f"the number at stage {label}"


def _sig(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


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
