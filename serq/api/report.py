"""A run's report for Python: the simulator's :class:`serq.sim.Report` as
sections of records (``rep.observes["ttft"].mean``), samples, frames and a
table for Jupyter.

One place reads the report's JSON layout: :func:`_sections` (the names of
its sections and of their keys).  Everything else — the records, the
DataFrames, the HTML, the sweep's columns (:func:`row`) — reads what it
builds, so a change of the report's keys is one edit here.  Numbers come
back as Python numbers: the JSON's ``null`` (NaN) is ``nan`` again and
``"inf"`` is ``inf``.
"""

from __future__ import annotations

import html
import math
from collections import namedtuple
from collections.abc import Mapping

from ..diag import Diagnostic, SerqError, did_you_mean
from .extras import extra

Sample = namedtuple("Sample", "time session turn value")
Sample.__doc__ = "One observation: when, which session and turn, the value."

SAMPLE_COLUMNS = list(Sample._fields)


class MissingName(SerqError, KeyError):
    """A section has no entry of that name: a ``SerqError`` with a close
    match as its help, and a ``KeyError`` (so ``.get`` and ``in`` work)."""

    def __str__(self) -> str:
        return self.render()


def missing(kind: str, name, known) -> MissingName:
    known = list(known)
    help_ = did_you_mean(str(name), known) or (f"the {kind}s are: {', '.join(known)}" if known
                                                else f"the program has no {kind}")
    return MissingName(Diagnostic("E970", f"no {kind} `{name}`", help=help_))


def _number(x):
    """A JSON number back as a Python number."""
    if x is None:
        return math.nan
    if x == "inf":
        return math.inf
    if x == "-inf":
        return -math.inf
    return x


class Record(Mapping):
    """One entry of a report's section: its fields as attributes and keys
    (``rec.mean``, ``rec["mean"]``), in the report's order."""

    __slots__ = ("_kind", "_name", "_fields")

    def __init__(self, kind: str, name, fields: dict):
        self._kind = kind
        self._name = name
        self._fields = dict(fields)

    @property
    def name(self):
        return self._name

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self._fields[key]
        except KeyError:
            raise AttributeError(f"{self._kind} {self._name} has no field {key!r}; its fields: "
                                 f"{', '.join(self._fields)}") from None

    def __getitem__(self, key):
        return self._fields[key]

    def __iter__(self):
        return iter(self._fields)

    def __len__(self):
        return len(self._fields)

    def __repr__(self):
        body = ", ".join(f"{k}={_short(v)}" for k, v in self._fields.items())
        head = self._kind if self._name is None else f"{self._kind} {self._name}"
        return f"<{head}: {body}>"


class Section(Mapping):
    """A report's section (observes, client, stages, pools, gauges, claims):
    its records by name, in the report's order."""

    def __init__(self, kind: str, records: dict):
        self.kind = kind
        self._records = records

    def __getitem__(self, name) -> Record:
        try:
            return self._records[name]
        except KeyError:
            raise missing(self.kind, name, self._records) from None

    def __iter__(self):
        return iter(self._records)

    def __len__(self):
        return len(self._records)

    def __repr__(self):
        return f"<{self.kind}s: {', '.join(map(str, self._records)) or '-'}>"

    def to_frame(self):
        """A pandas DataFrame: one row per entry (indexed by name), one column per field."""
        pd = pandas()
        rows = [dict(r) for r in self._records.values()]
        return pd.DataFrame(rows, index=pd.Index(list(self._records), name=self.kind))

    def _repr_html_(self):
        return _html_table(self.kind, self._records)


class Report:
    """What one run reports.

    ``made`` (a record: program, instance, inputs, seed, horizon, warmup,
    arrivals, trace, ir, serq), ``run`` (a record: end, events, arrivals,
    …), ``observes``, ``client``, ``stages``, ``pools``,
    ``gauges``, ``claims`` (sections), ``notes`` (the text's last lines),
    ``stuck`` (the stuck sessions), ``samples(name)``;
    ``text()`` / ``str(rep)`` is ``serq run``'s text, ``data()`` its
    ``--json``, ``dump(dir)`` its ``--dump``; ``raw`` the simulator's report."""

    def __init__(self, raw):
        self.raw = raw
        self._observe_names = tuple(raw.program.observes)
        for key, value in _sections(raw.data()).items():
            setattr(self, key, value)
        self.stuck = raw.stuck_sessions

    # -- the simulator's own outputs ----------------------------------------
    def text(self) -> str:
        return self.raw.text()

    def data(self) -> dict:
        return self.raw.data()

    def json(self) -> str:
        return self.raw.json()

    def dump(self, directory, force: bool = False) -> None:
        """Write the samples as ``serq run --dump DIR`` does (needs a run with
        samples): refused into a directory holding files a dump did not make,
        unless ``force`` (serq/files.py)."""
        from .. import args
        directory = args.path("Report.dump", "directory", directory)
        self.raw.dump(directory, force=args.flag("Report.dump", "force", force))

    def __str__(self):
        return self.text()

    def __repr__(self):
        m, r = self.made, self.run
        return (f"<serq.Report: seed {m.seed}, horizon {_short(m.horizon)}, warmup {_short(m.warmup)}, "
                f"{r.arrivals} arrivals, {r.turns} turns; observes {', '.join(self.observes) or '-'}>")

    # -- samples ---------------------------------------------------------------
    def samples(self, name: str) -> list:
        """The observation's samples after the warm-up (or the client's:
        ``client.ttft``, ``client.tpot``, ``client.response``), in the order
        recorded: a list of ``Sample(time, session, turn, value)``."""
        known = self._observe_names + tuple(f"client.{k}" for k in self.client)
        if name not in known:
            if f"client.{name}" in known:     # the client's statistic by its bare key
                raise MissingName(Diagnostic("E970", f"no observe `{name}`",
                                             help=f"the client's is `client.{name}`"))
            raise missing("observe", name, known)
        return [Sample(t, s, k, v) for t, s, k, v in self.raw.samples(name)]

    def samples_frame(self, name: str):
        """``samples(name)`` as a pandas DataFrame (columns time, session, turn, value)."""
        pd = pandas()
        return pd.DataFrame(self.samples(name), columns=SAMPLE_COLUMNS)

    # -- the flat row ----------------------------------------------------------
    def row(self) -> dict:
        """The report as one flat row (a sweep's columns, see :func:`row`)."""
        return row(self)

    def to_frame(self):
        """``row()`` as a one-row pandas DataFrame (``pd.concat`` a list of them
        to tabulate runs by hand)."""
        pd = pandas()
        return pd.DataFrame([self.row()])

    def _repr_html_(self):
        m, r = self.made, self.run
        head = (f"<p><b>run</b>: horizon {_short(m.horizon)}, end {_short(r.end)}, warmup "
                f"{_short(m.warmup)}, seed {m.seed}, {r.events} events, {r.arrivals} arrivals, "
                f"{r.ended} ended, {r.turns} turns, live {_short(r.live)}</p>")
        parts = [head]
        for sec in (self.observes, self.stages, self.pools, self.gauges, self.client, self.claims):
            if len(sec):
                parts.append(sec._repr_html_())
        parts.extend(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return "\n".join(parts)


def _sections(d: dict) -> dict:
    """The report's JSON (``Report.data()``) as the view's attributes.  The
    one function that knows the JSON's keys."""
    def numbers(rec: dict, skip=()) -> dict:
        return {k: _number(v) for k, v in rec.items() if k not in skip}

    return {
        "made": Record("made", None, {k: _number(v) if k in ("horizon", "warmup") else
                                      dict(v) if isinstance(v, dict) else v for k, v in d["made"].items()}),
        "run": Record("run", None, {k: tuple(v) if isinstance(v, list) else _number(v)
                                    for k, v in d["run"].items()}),
        "notes": tuple(d["notes"]),
        "observes": Section("observe", {n: Record("observe", n, numbers(s))
                                        for n, s in d["observes"].items()}),
        "client": Section("client", {n: Record("client", n, numbers(s)) for n, s in d["client"].items()}),
        "stages": Section("stage", {s["name"]: Record("stage", s["name"], numbers(s, ("name",)))
                                    for s in d["stages"]}),
        "pools": Section("pool", {p["name"]: Record("pool", p["name"], numbers(p, ("name",)))
                                  for p in d["pools"]}),
        "gauges": Section("gauge", {n: Record("gauge", n, numbers(g)) for n, g in d["gauges"].items()}),
        "claims": Section("claim", {c["name"]: Record("claim", c["name"], {k: v for k, v in c.items()
                                                                          if k != "name"})
                                    for c in d["claims"]}),
    }


# The sections a row is made of, and the prefix of their columns ("" for the
# observes, which the user names: `ttft.mean`).
ROW_SECTIONS = (("observes", ""), ("client", "client."), ("stages", "stage."), ("pools", "pool."),
                ("gauges", "gauge."))


def row(rep: Report) -> dict:
    """A report as one flat row: ``seed``; ``made.<field>`` for the other
    numbers of what made it (``made.horizon``, ``made.warmup``); ``run.<field>``
    for the run's numbers, and its lists of names as one text, the names
    spaced (``run.growing``: ``"run.live pool.reqs.queue"``, ``"-"`` for none);
    ``<observe>.<field>`` (``ttft.mean``, ``ttft.ci``,
    ``ttft.count``, …); ``client.<name>.<field>``;
    ``stage.<name>.<field>``; ``pool.<name>.<field>`` (``pool.kv.preemptions``);
    ``gauge.<name>.<field>``; ``claim.<name>`` (the verdict).  Every number of
    the report, under the report's own field names.  The one function that
    makes a sweep's columns."""
    out = {"seed": rep.made.seed}
    for k, v in rep.made.items():
        if k != "seed" and _scalar(v) and not isinstance(v, str):
            out[f"made.{k}"] = v
    for k, v in rep.run.items():
        if _scalar(v):
            out[f"run.{k}"] = v
        elif isinstance(v, tuple):      # a list of names (`growing`): one text, the names spaced
            out[f"run.{k}"] = " ".join(map(str, v)) or "-"
    for attr, prefix in ROW_SECTIONS:
        for name, rec in getattr(rep, attr).items():
            for k, v in rec.items():
                if _scalar(v):
                    _put(out, f"{prefix}{name}.{k}", v)
    for name, rec in rep.claims.items():
        _put(out, f"claim.{name}", rec.verdict)
    return out


def _put(out: dict, key: str, value) -> None:
    if key in out:
        raise SerqError(Diagnostic("E970", f"two entries of the report make the column `{key}`",
                                   help="rename one of the observes, stages, pools, gauges or claims"))
    out[key] = value


def _scalar(v) -> bool:
    return isinstance(v, (int, float, str)) and not isinstance(v, bool)


def pandas():
    """pandas, or a SerqError saying how to install it."""
    return extra("pandas", "frames")


def _short(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.6g}"
    return repr(v) if isinstance(v, str) else str(v)


def _html_table(kind: str, records: dict) -> str:
    fields = []
    for r in records.values():
        for k, v in r.items():
            if k not in fields and (_scalar(v) or v is None):
                fields.append(k)
    esc = html.escape
    head = "".join(f"<th>{esc(f)}</th>" for f in [kind] + fields)
    body = []
    for name, r in records.items():
        cells = "".join(f"<td>{esc(_cell(r.get(f)))}</td>" for f in fields)
        body.append(f"<tr><th>{esc(str(name))}</th>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(v) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else _short(v)
