"""The input surfaces beyond a program's text (issue 24): each a mutator
(``make(ch, i) -> Mutant``) and a run (``run(m)``), which ends cleanly,
raises a ``SerqError`` (checked for a location by ``check.outcome``) or
raises :class:`Finding` for what is worse than an error:

* ``retype``: the IR with one value where a number stands made a list, an
  object, a string or a boolean, or a key removed; a mutant the validator
  lets through is ``past`` unless the IR it read, written canonically, is
  the mutant as written (a removed key that has a default is that default:
  a number's ``input`` name removed leaves ``{"Num": {"value": 3.0}}``, the
  one-field form ``{"Num": 3.0}`` written out);
* ``trace``: a CSV trace (examples/replay/vllm_replay.sq) or a Mooncake
  trace (examples/replay/mooncake.sq) with a cell, a row, a key or its
  bytes broken, replayed; a Mooncake trace that runs is run again with its
  hash ids renamed small, and must report the same (``wrong`` if not: the
  64-bit ids that collided as floats);
* ``oracle``: a scenario, a replay trace, a Mooncake spec, a P/D scenario,
  a vLLM output, an SGLang scenario or an SGLang output with a value
  retyped, a key misspelt or its bytes broken, through serQ's side of the
  oracle (no vLLM, no SGLang);
* ``table``: a sweep's table (CSV or Parquet), a dump's samples or a gauge
  with cells, rows or bytes broken, read and plotted (a table whose values
  only were changed is written and read back, and must be the same);
* ``api``: a public function of the Python API called with arguments of
  odd types and values (a drawing's and a PNG picture's save among them);
  a standard stream it closes, or a user's file written over, is ``lost``;
* ``cli``: a ``serq`` command line of odd options and values, in a
  sandbox with a program and a user's files: exit 3 or a traceback is a
  crash, a user's file changed is ``lost``;
* ``signals``: ``serq sweep`` and ``serq run`` sent SIGINT, SIGTERM or
  SIGHUP at a drawn moment (tests/fuzz/interrupts.py);
* ``parser``: a source mutant (the ``source`` kind's mutator; a third of
  them with an odd character put in) parsed from each start rule by serQ's
  driver (serq.syntax.lalr) and by lark's parser of the grammar
  (tests/lark_reference.py): a tree or an error that differs in anything, a
  place included, is ``wrong``."""

from __future__ import annotations

import base64
import copy
import glob
import json
import os
import random
import shutil
import tempfile
from functools import lru_cache

from . import corpus as C
from . import interrupts
from . import jsonmut as J
from .check import Finding


def _mutant(kind, example, what, **kw):
    from .mutate import Mutant
    return Mutant(kind, example, what, **kw)


def _tmpdir() -> str:
    d = tempfile.mkdtemp(prefix="serq-fuzz-")
    return d


# ---------------------------------------------------------------- retype (the IR)

def retype_make(ch, i=None):
    path = ch.pick(C.examples())
    data = copy.deepcopy(C.ir_data(path))
    what = J.retype(ch, data)
    return _mutant("retype", path, what, data=data, horizon=C.horizon(path))


@lru_cache(maxsize=None)
def _short_forms() -> dict:
    """Variant tag -> the field a record of it may be written as alone: its
    first, where every other field has a default the codec leaves out
    (``{"Num": {"value": 3.0}}`` is ``{"Num": 3.0}``; serq/ir/codec.py)."""
    import dataclasses
    from serq.ir.codec import _TAGS
    out: dict = {}
    for cls, tag in _TAGS.items():
        fields = dataclasses.fields(cls)
        short = len(fields) > 1 and all(f.metadata.get("omit_default") for f in fields[1:])
        out.setdefault(tag, set()).add(fields[0].name if short else None)
    return {tag: next(iter(firsts)) for tag, firsts in out.items() if len(firsts) == 1 and None not in firsts}


def _short(data):
    """JSON data with every record written in its one-field form where the
    codec would (what the codec reads as the same)."""
    if isinstance(data, list):
        return [_short(x) for x in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        (tag, payload), = data.items()
        first = _short_forms().get(tag)
        if first is not None and isinstance(payload, dict) and list(payload) == [first]:
            return {tag: _short(payload[first])}
    return {k: _short(v) for k, v in data.items()}


def retype_run(m, simulate) -> None:
    from serq import ir
    program = ir.loads(json.dumps(m.data), f"{m.example}.ir.json")
    ir.validate(program)
    if json.dumps(ir.to_data(program), sort_keys=True) != json.dumps(_short(m.data), sort_keys=True):
        # the IR the validator let through is not the mutant read as written:
        # a value coerced, a key's loss filled in by something not its
        # default.  (A removed key with a default is the IR with that
        # default, which the codec writes by leaving it out: a number's input
        # name removed is `{"Num": {"value": 3.0}}`, the one-field form
        # `{"Num": 3.0}` written out.)
        raise Finding("past", f"the validator let through a mutant that is not the canonical IR: {m.what}")
    simulate(program)


# ---------------------------------------------------------------- trace files

CSV_PROGRAM = "examples/replay/vllm_replay.sq"
MOONCAKE_PROGRAM = "examples/replay/mooncake.sq"
CELLS = ("", "x", "-1", "nan", "inf", "-inf", "1e308", "1e400", "0.5", "9007199254740993", " 3 ", '"5"', "1,2",
         "0x10", "1_000", "٣")


@lru_cache(maxsize=None)
def base_csv() -> str:
    rng = random.Random("csv")
    rows = ["session,turn,new,out,think"]
    for s in range(6):
        for t in range(rng.randint(1, 4)):
            rows.append(f"{s},{t},{rng.randint(1, 300)},{rng.randint(1, 60)},{rng.randint(0, 5)}")
    return "\n".join(rows) + "\n"


@lru_cache(maxsize=None)
def base_mooncake() -> tuple:
    """Rows that share prefixes (a system prompt, conversations), one a second."""
    rng = random.Random("mooncake")
    rows = []
    for i in range(24):
        n = rng.randint(1, 6)
        head = [0] if rng.random() < 0.6 else []
        conv = [100 + rng.randrange(4) * 10 + k for k in range(rng.randint(0, 3))]
        ids = (head + conv + [1000 + i * 10 + k for k in range(n)])[:max(1, n)]
        rows.append({"timestamp": 500 * i, "input_length": 512 * len(ids) - rng.randrange(400),
                     "output_length": rng.randint(1, 30), "hash_ids": ids})
    return tuple(json.dumps(r) for r in rows)


def _big_ids(rows: list, ch) -> str:
    """Every hash id renamed into 64 bits, equal ones equal (real hashes)."""
    names: dict = {}
    base = ch.pick((2 ** 53, 2 ** 60, 2 ** 63, 2 ** 64 - 10 ** 6))
    for r in rows:
        if isinstance(r, dict) and isinstance(r.get("hash_ids"), list):
            r["hash_ids"] = [names.setdefault(h, base + len(names) * ch.pick((1, 1, 2, 7)) if not isinstance(h, bool)
                                              and isinstance(h, int) else h) for h in r["hash_ids"]]
    return f"hash ids renamed from {base}"


def trace_make(ch, i=None):
    if ch.chance(1, 2):
        lines = base_csv().split("\n")
        op = ch.below(6)
        k = 1 + ch.below(len(lines) - 2)
        cells = lines[k].split(",")
        if op <= 2:
            j = ch.below(len(cells))
            cells[j] = ch.pick(CELLS)
            lines[k] = ",".join(cells)
            what = f"row {k + 1} cell {j + 1} -> {cells[j]!r}"
        elif op == 3:
            lines[0] = ch.pick(("session,turn,new,out", "session,turn,new,out,think,forced,extra",
                                "Session,turn,new,out,think", "session,turn,new,out,think,forced", ""))
            what = f"header -> {lines[0]!r}"
        elif op == 4:
            lines[k] = lines[k] + ("," + ch.pick(CELLS)) * (1 + ch.below(2))
            what = f"row {k + 1} longer"
        else:
            lines.insert(k, ch.pick(("", ",,,,", '"' * 3, "1,2,3,4,5\r", "x" * 200000)))
            what = f"a line inserted at {k + 1}"
        raw = "\n".join(lines).encode("utf-8")
        if ch.chance(1, 4):
            raw, more = J.break_bytes(ch, raw)
            what += "; " + more
        return _mutant("trace", CSV_PROGRAM, what, blob=raw)
    rows = [json.loads(r) for r in base_mooncake()]
    op = ch.below(5)
    if op == 0:
        what = _big_ids(rows, ch)
    elif op in (1, 2):
        k = ch.below(len(rows))
        what = f"row {k + 1}: " + J.mutate(ch, rows[k], ("timestamp", "input_length", "output_length", "hash_ids"))
    elif op == 3:
        k = ch.below(len(rows))
        rows[k] = copy.deepcopy(ch.pick(J.OTHER + J.NUMBERS))
        what = f"row {k + 1} -> {J._shown(rows[k])}"
    else:
        what = _big_ids(rows, ch)
        k = ch.below(len(rows))
        what += f"; row {k + 1}: " + J.mutate(ch, rows[k], ("timestamp", "input_length", "output_length",
                                                            "hash_ids"))
    raw = ("\n".join(J.dumps(r) for r in rows) + "\n").encode("utf-8")
    if ch.chance(1, 5):
        raw, more = J.break_bytes(ch, raw)
        what += "; " + more
    return _mutant("trace", MOONCAKE_PROGRAM, what, blob=raw)


def _run_trace(program_path, trace_path, simulate):
    from serq.link import compile_file
    horizon = 20.0 if program_path == MOONCAKE_PROGRAM else 200.0
    p = compile_file(program_path, horizon=horizon, trace=trace_path)
    return simulate(p)


def trace_run(m, simulate) -> None:
    d = _tmpdir()
    try:
        ext = ".jsonl" if m.example == MOONCAKE_PROGRAM else ".csv"
        path = os.path.join(d, "t" + ext)
        with open(path, "wb") as f:
            f.write(m.blob)
        rep = _run_trace(m.example, path, simulate)
        if rep is None or ext != ".jsonl":
            return
        # the same trace with its ids renamed small must run the same
        rows = []
        for line in m.blob.decode("utf-8-sig", errors="replace").splitlines():
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError:      # (past the horizon: never read)
                    return
        names: dict = {}
        for r in rows:
            # (a row past the horizon is never read: it may be anything)
            if isinstance(r, dict) and isinstance(r.get("hash_ids"), list):
                r["hash_ids"] = [names.setdefault(h, len(names)) for h in r["hash_ids"]]
        small = os.path.join(d, "s.jsonl")
        with open(small, "w", encoding="utf-8") as f:
            f.write("\n".join(json.dumps(r) for r in rows) + "\n")
        again = _run_trace(m.example, small, simulate)
        if again is None:
            return
        a, b = rep.data(), again.data()
        a.pop("made", None)
        b.pop("made", None)
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
            raise Finding("wrong", "the trace with its hash ids renamed small reports otherwise (ids that "
                                   "collide?): " + m.what)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- oracle inputs

@lru_cache(maxsize=None)
def oracle_bases() -> tuple:
    """(kind, path, data) of committed oracle inputs of every kind, and
    generated Mooncake specs carrying their rows."""
    out = []
    for kind, pattern in (("scenario", "tools/oracle/scenarios/*.json"), ("scenario", "tools/oracle/priority/*.json"),
                          ("scenario", "tools/oracle/random/r00[0-4].json"), ("trace", "tools/oracle/traces/*.json"),
                          ("trace", "tools/oracle/shared/*.json"), ("pd", "tools/oracle/pd/*.json"),
                          ("output", "tools/oracle/scenarios/*.log.json"), ("output", "tools/oracle/traces/*.out.json"),
                          ("sglang", "tools/oracle/sglang/scenarios/*.json"),
                          ("sglang", "tools/oracle/sglang/random/g00[0-4].json"),
                          ("sglang-output", "tools/oracle/sglang/scenarios/*.log.json"),
                          ("sglang-output", "tools/oracle/sglang/random/g00[0-4].out.json")):
        for p in sorted(glob.glob(os.path.join(C.ROOT, pattern))):
            if p.endswith((".out.json", ".log.json", ".ir.json")) != kind.endswith("output"):
                continue
            with open(p, encoding="utf-8") as f:
                out.append((kind, os.path.relpath(p, C.ROOT), json.load(f)))
    from serq.oracle.fuzz import generate_mooncake
    for i in range(4):
        out.append(("mooncake", f"generated:{i}", generate_mooncake(random.Random(f"fuzz:{i}"), i)))
    return tuple(out)


def oracle_make(ch, i=None):
    kind, path, data = ch.pick(oracle_bases())
    data = copy.deepcopy(data)
    what = J.mutate(ch, data)
    if ch.chance(1, 3):
        what += "; " + J.mutate(ch, data)
    raw = J.dumps(data).encode("utf-8")
    if ch.chance(1, 6):
        raw, more = J.break_bytes(ch, raw)
        what += "; " + more
    return _mutant("oracle", f"{kind}:{path}", what, blob=raw)


def oracle_run(m, simulate) -> None:
    from serq.oracle import programs as A
    from serq.oracle import mooncake as MC, outcome as O, pd as PD, sglang as SG
    kind, path = m.example.split(":", 1)
    d = _tmpdir()
    try:
        f = os.path.join(d, os.path.basename(path) if not path.startswith("generated") else "spec.json")
        with open(f, "wb") as g:
            g.write(m.blob)
        if kind == "scenario":
            _, p = A.scenario_program(f)
            O.scenario_outcome(simulate(p), p)
        elif kind == "trace":
            _, p = A.trace_program(f)
            O.trace_outcome(simulate(p), p)
        elif kind == "pd":
            s = PD.load(f)
            p = A.pd_program(s)
            PD.outcome(simulate(p), p)
        elif kind == "mooncake":
            s = MC.load(f)
            p = A.mooncake_program(s)
            rep = simulate(p)
            if rep is not None:
                MC.outcome(rep, s)
        elif kind == "sglang":
            s = SG.load(f)
            p = A.sglang_program(s)
            SG.outcome(simulate(p), p, s.get("overlap", False))
        elif kind == "sglang-output":    # compared with serQ's run of the scenario it is of (as --diff does)
            s = SG.load(os.path.join(C.ROOT, path.replace(".log.json", ".json").replace(".out.json", ".json")))
            theirs = SG.check_output(SG.read_json(f, "the SGLang output"), f)
            p = A.sglang_program(s)
            from serq.sim import simulate as run_logged
            rep = run_logged(p, step_log=True)        # (the committed scenario's: small)
            ours = SG.outcome(rep, p, s.get("overlap", False))
            SG.diff(ours, theirs)
            if "log" in theirs:
                SG.report(SG.ours_by_step(rep.step_log, ours), SG.theirs_by_step(theirs["log"]))
        else:   # a vLLM output to compare with, beside the scenario it is of
            scen = os.path.join(C.ROOT, path.replace(".log.json", ".json").replace(".out.json", ".json"))
            import serq
            c = serq.oracle.compare(scen, vllm=f)
            str(c)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- tables for plots

TABLE_CELLS = ("", "inf", "-inf", "nan", "NaN", "1e308", "-1e308", "1e400", "x", "1" * 400, "0", "-0", "1e-320")


@lru_cache(maxsize=None)
def base_tables() -> dict:
    rng = random.Random("table")
    sweep_cols = ["Lambda", "seed", "run.end", "sojourn.mean", "sojourn.p99", "claim.ok"]
    rows = []
    for lam in (0.3, 0.6, 0.9):
        for seed in (1, 2, 3):
            rows.append([repr(lam), str(seed), "100.0", repr(rng.random()), repr(rng.random() * 3), "holds"])
    dump = ["time,session,turn,value"] + [f"{rng.random() * 100!r},{k},{1 + k % 3},{rng.expovariate(1)!r}"
                                           for k in range(60)]
    gauge = ["time,value"] + [f"{k * 1.5!r},{rng.randint(0, 9)}" for k in range(40)]
    return {"sweep": [sweep_cols] + rows, "samples": [r.split(",") for r in dump],
            "gauge": [r.split(",") for r in gauge]}


def table_make(ch, i=None):
    kind = ch.pick(("sweep", "sweep", "samples", "gauge", "parquet"))
    lines = copy.deepcopy(base_tables()["sweep" if kind == "parquet" else kind])
    what = []
    for _ in range(1 + ch.below(3)):
        op = ch.below(5)
        k = ch.below(len(lines))
        if op <= 2 and k > 0:
            j = ch.below(len(lines[k]))
            lines[k][j] = ch.pick(TABLE_CELLS)
            what.append(f"row {k + 1} cell {j + 1} -> {lines[k][j][:20]!r}")
        elif op == 3:
            del lines[k]
            what.append(f"row {k + 1} removed")
        else:
            lines[k] = lines[k] + [ch.pick(TABLE_CELLS)]
            what.append(f"row {k + 1} longer")
    values_only = all("cell" in w for w in what) and kind in ("sweep", "parquet")
    raw = ("\n".join(",".join(r) for r in lines) + "\n").encode("utf-8")
    if kind == "parquet":
        try:
            raw = _as_parquet(lines) if values_only or ch.chance(1, 2) else raw
        except Exception:      # (the writer of the code under test could not: the CSV's bytes, named .parquet)
            values_only = False
        if ch.chance(1, 3):
            raw, more = J.break_bytes(ch, raw)
            what.append(more)
            values_only = False
    elif ch.chance(1, 4):
        raw, more = J.break_bytes(ch, raw)
        what.append(more)
        values_only = False
    return _mutant("table", kind, "; ".join(what), blob=raw, horizon=1.0 if values_only else 0.0)


def _as_parquet(lines) -> bytes:
    from serq.tables import table as T
    cols = lines[0]
    rows = [{c: T.parse_cell(v) for c, v in zip(cols, r)} for r in lines[1:] if len(r) == len(cols)]
    d = _tmpdir()
    try:
        p = os.path.join(d, "t.parquet")
        T.write(p, cols, rows)
        with open(p, "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _same(a, b, ext: str, column: list) -> bool:
    """A value read back as it was written: a CSV keeps its text; Parquet
    keeps a column's type (docs: whole numbers int64, numbers float64, else
    text), so a number of a mixed column comes back as its text, an integer of
    a column of numbers as a float."""
    if ext == ".parquet" and a is not None:
        from serq.tables.table import _arrow_column
        import pyarrow as pa
        kind = _arrow_column(pa, column).type
        a = str(a) if kind == pa.string() else float(a) if kind == pa.float64() else a
    if ext == ".csv":       # untyped: a text that reads as a number ("7", "nan") comes back as that number
        from serq.tables.table import cell, parse_cell
        return cell(parse_cell(cell(a))) == cell(b)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b and type(a) is type(b)


def table_run(m, simulate) -> None:
    import serq
    from serq.plot import gauge, samples, save, table
    kind = m.example
    d = _tmpdir()
    try:
        path = os.path.join(d, "t.parquet" if kind == "parquet" else "t.csv")
        with open(path, "wb") as f:
            f.write(m.blob)
        if kind in ("sweep", "parquet"):
            cols, rows = serq.read_table(path)
            if m.horizon:        # values only: written and read back, the same
                for ext in (".csv", ".parquet"):
                    back = os.path.join(d, "back" + ext)
                    from serq.tables.table import write
                    write(back, cols, rows)
                    c2, r2 = serq.read_table(back)
                    if c2 != cols or len(r2) != len(rows) or not all(
                            _same(x.get(c), y.get(c), ext, [r.get(c) for r in rows]) for x, y in zip(rows, r2)
                            for c in cols):
                        raise Finding("wrong", f"a table written as {ext} reads back otherwise: {m.what}")
            fig = table(path, x="Lambda", y="sojourn.mean", by=None)
        elif kind == "samples":
            fig = samples(path, bins=7)
        else:
            fig = gauge(path)
        if len(m.what) % 3 == 0:         # a third of them drawn to a file
            save(fig, os.path.join(d, "f.png" if len(m.what) % 2 else "f.svg"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- the Python API

ODD = (None, True, 2, 0, -1, 10 ** 400, 1.5, float("nan"), float("inf"), "", "nope", "nope.json", "/dev/null",
       b"bytes", [1, 2], {"a": 1}, (), "examples/single-turn/mg1.sq", "t.csv", "x.svg", "x.png", ".",
       "examples", 1e308)
MG1 = "examples/single-turn/mg1.sq"


@lru_cache(maxsize=None)
def _objects():
    import serq
    prog = serq.load(os.path.join(C.ROOT, MG1))
    rep = prog.run(horizon=5.0)
    sw = serq.sweep(prog, set={"lambda": [0.5, 0.6]}, seeds=[1, 2], horizon=3.0, jobs=1)
    return prog, rep, sw


@lru_cache(maxsize=None)
def _picture():
    return _objects()[0].draw(fmt="png")


API_CALLS = ("load", "loads", "run", "set", "draw", "save", "dump", "samples", "sweep", "write", "summary", "text",
             "read_table", "plot_table", "plot_samples", "plot_gauge", "plot_save", "oracle_run", "oracle_compare",
             "oracle_program", "campaign", "under", "text_under", "sweep_instance", "plot_tables", "inputs",
             "save_png")


def api_make(ch, i=None):
    call = ch.pick(API_CALLS)
    nargs = 1 + ch.below(3)
    picks = [ch.below(len(ODD)) for _ in range(nargs)]
    return _mutant("api", call, f"{call}{tuple(_shown_odd(ODD[k]) for k in picks)}", args=picks)


def _shown_odd(v) -> str:
    t = repr(v)
    return t if len(t) <= 30 else t[:27] + "..."


def api_run(m, simulate) -> None:
    import serq
    prog, rep, sw = _objects()
    a = [ODD[k] for k in m.args] + [None, None]
    call = m.example
    d = _tmpdir()
    here = os.getcwd()
    sentinel = os.path.join(d, "t.csv")
    with open(sentinel, "w") as f:
        f.write("mine\n")
    os.makedirs(os.path.join(d, "examples", "single-turn"))
    shutil.copy(os.path.join(C.ROOT, MG1), os.path.join(d, MG1))
    forced = call in ("save", "save_png", "dump", "write") and True in a[:3]
    os.chdir(d)
    try:
        fig = None
        if call == "load":
            serq.load(a[0], set=a[1], instance=a[2])
        elif call == "loads":
            serq.loads(a[0], set=a[1], path=a[2] if a[2] is not None else "<string>")
        elif call == "run":
            prog.run(horizon=a[0] if a[0] is not None else 2.0, warmup=a[1], seed=a[2])
        elif call == "set":
            prog.set(**{"lambda" if a[1] is None else str(a[1])[:10] or "x": a[0]})
        elif call == "draw":
            prog.draw(view=a[0], fmt=a[1] if a[1] is not None else "svg")
        elif call == "save":
            prog.draw().save(a[0], force=bool(a[1]) if isinstance(a[1], bool) else a[1] if a[1] is not None else False)
        elif call == "save_png":
            _picture().save(a[0], force=a[1] if a[1] is not None else False)
        elif call == "dump":
            rep.dump(a[0], force=a[1] if a[1] is not None else False)
        elif call == "samples":
            rep.samples(a[0])
        elif call == "sweep":
            serq.sweep(a[0] if a[0] is not None else prog, set=a[1], seeds=a[2] if a[2] is not None else (1,),
                       horizon=2.0, jobs=1)
        elif call == "write":
            sw.write(a[0], force=a[1] if a[1] is not None else False)
        elif call == "summary":
            sw.summary(a[0])
        elif call == "text":
            sw.text(a[0])
        elif call == "read_table":
            serq.read_table(a[0])
        elif call == "plot_table":
            fig = serq.plot.table(a[0] if a[0] is not None else sw, x=a[1] if a[1] is not None else "lambda",
                                  y=a[2] if a[2] is not None else "sojourn.mean")
        elif call == "plot_samples":
            fig = serq.plot.samples(a[0], bins=a[1] if a[1] is not None else 40)
        elif call == "plot_gauge":
            fig = serq.plot.gauge(a[0])
        elif call == "plot_save":
            serq.plot.save(serq.plot.samples([1.0, 2.0, 3.0]) if a[1] is None else a[1], a[0])
        elif call == "oracle_run":
            serq.oracle.run(a[0])
        elif call == "oracle_compare":
            serq.oracle.compare(a[0], vllm=a[1])
        elif call == "oracle_program":
            serq.oracle.program(a[0])
        elif call == "campaign":
            serq.oracle.campaign(a[0], n=a[1] if a[1] is not None else 1, seed=a[2] if a[2] is not None else 1,
                                 out=None)
        elif call == "under":
            sw.under(a[0] if a[0] is not None else "sojourn.mean", a[1])
        elif call == "text_under":
            sw.text(a[1], under=a[0] if not isinstance(a[0], str) else [(a[0], a[2])])
        elif call == "sweep_instance":
            serq.sweep(a[1] if a[1] is not None else MG1, seeds=(1,), horizon=2.0, jobs=1, instance=a[0])
        elif call == "plot_tables":
            fig = serq.plot.table([sw, a[0]] if a[0] is not None else {"a": sw, "b": sw}, x="lambda",
                                  y="sojourn.mean", labels=a[1], stat=a[2] if a[2] is not None else "median")
        elif call == "inputs":
            serq.load(a[0] if a[0] is not None else MG1, set=a[1]).inputs
        del fig
    except TypeError as e:
        from serq.diag import SerqError
        if isinstance(e, SerqError):
            raise
        if "positional argument" in str(e) or "keyword argument" in str(e):
            return      # the call itself is Python's to refuse, before serq is entered
        raise
    finally:
        os.chdir(here)
        for fd in (0, 1, 2):
            try:
                os.fstat(fd)
            except OSError:
                raise Finding("lost", f"standard stream {fd} closed by {m.what}") from None
        with open(sentinel, "rb") as f:
            if f.read() != b"mine\n" and not forced:
                raise Finding("lost", f"a user's file written over by {m.what}")
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- the command line

def _cli_commands():
    from serq.cli import main
    import click
    out = {}

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, path + [name])
        else:
            out[" ".join(path)] = [p for p in cmd.params if isinstance(p, click.Option)]
    walk(main, [])
    return out


SKIP = {"oracle diff", "oracle fuzz", "oracle pd-fuzz"}       # these run vLLM
VALUES = ("1", "0", "-1", "2", "0.5", "1e308", "inf", "nan", "-inf", "1e-320", "10" * 200, "", "x", "1,2",
          "1-3", "1-100000000000", "lambda=0.5", "lambda=", "=1", "Lambda=1,2", "kv", "svg", "tikz", "local",
          "session", "deployment", "vllm", "t.csv", "out.svg", "out.png", "prog.sq", "user.txt", "dumpdir",
          "missing/x.csv", ".", "/dev/null", "t.parquet", "lambda=(0/0)", "NAME=1e999")
FILES = ("prog.sq", "user.txt", "missing.sq", ".", "binary.sq", "prog.ir.json", "t.csv", "scenario.json",
         "trace.json", "pd.json", "/dev/null")


def cli_make(ch, i=None):
    cmds = {k: v for k, v in _cli_commands().items() if k not in SKIP}
    name = ch.pick(sorted(cmds))
    argv = name.split()
    if name.startswith("oracle "):
        argv.append(ch.pick(("scenario.json", "trace.json", "pd.json", "spec.json")) if ch.chance(2, 3)
                    else ch.pick(FILES))
    else:
        argv.append("prog.sq" if ch.chance(1, 2) else ch.pick(FILES))
    opts = cmds[name]
    for _ in range(ch.below(5) if opts else 0):
        o = ch.pick(opts)
        flag = ch.pick(o.opts)
        if o.is_flag:
            argv.append(flag)
        else:
            argv += [flag, ch.pick(_values_for(o) if ch.chance(2, 3) else VALUES)]
    if ch.chance(1, 6):
        argv += ["--", ch.pick(("lambda=0.5", "x", "lambda=inf", "=", "lambda=1 lambda=2"))]
    if argv[0] == "run":
        argv += ["--max-seconds", "1"]
    if argv[0] == "sweep" and "--horizon" not in argv:
        argv += ["--horizon", ch.pick(("1", "5"))]
    if argv[0] == "sweep" and "--out" not in argv and ch.chance(3, 4):
        argv += ["--out", ch.pick(("t.csv", "new.csv", "new.parquet", "-", "user.txt", "prog.sq"))]
    if argv[0] == "plot" and "--out" not in argv and ch.chance(3, 4):
        argv += ["--out", ch.pick(("new.png", "out.svg", "new.svg"))]
    return _mutant("cli", name, " ".join(argv), args=argv)


def _values_for(o) -> tuple:
    """Values of an option's own type, mostly plausible, some at the edges."""
    import click
    t = o.type
    if isinstance(t, click.Choice):
        return tuple(t.choices) + ("x",)
    if isinstance(t, (click.types.FloatParamType, click.types.IntParamType)) or t in (click.INT, click.FLOAT):
        return ("1", "5", "2", "0", "-1", "1e308", "inf", "nan", "1e-320", "3.5")
    if isinstance(t, click.Path):
        return FILES + ("out.svg", "out.png", "t.parquet", "dumpdir", "newdir", "missing/x")
    if o.name in ("sets",):
        return ("lambda=0.5", "lambda=0.5,0.6", "lambda=(0/0)", "lambda=1e999", "x=1", "lambda=")
    if o.name == "seeds":
        return ("1", "1-3", "1,1", "3-1", "1-10000000000000", "x")
    if o.name == "out":
        return ("t.csv", "new.csv", "t.parquet", "-", "out.svg", "out.png", "prog.sq", "user.txt", "new.png")
    return VALUES


SANDBOX_FILES = {"user.txt": b"a user's notes\n", "t.csv": b"name,value\nx,1\n", "binary.sq": b"\xff\xfe\x00fn",
                 "out.svg": b"<svg>the user's figure</svg>\n"}


def _sandbox(d: str) -> dict:
    shutil.copy(os.path.join(C.ROOT, MG1), os.path.join(d, "prog.sq"))
    for name, data in SANDBOX_FILES.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    from serq import ir
    from serq.link import compile_file
    with open(os.path.join(d, "prog.ir.json"), "w") as f:
        f.write(ir.dumps(compile_file(os.path.join(C.ROOT, MG1), horizon=5.0)))
    shutil.copy(os.path.join(C.ROOT, "tools/oracle/scenarios/hol.json"), os.path.join(d, "scenario.json"))
    shutil.copy(os.path.join(C.ROOT, "tools/oracle/traces/cache_trace.json"), os.path.join(d, "trace.json"))
    shutil.copy(os.path.join(C.ROOT, "tools/oracle/pd/pipeline.json"), os.path.join(d, "pd.json"))
    from serq.oracle.fuzz import generate_mooncake
    with open(os.path.join(d, "spec.json"), "w") as f:
        json.dump(generate_mooncake(random.Random("fuzz:0"), 0), f)
    os.mkdir(os.path.join(d, "dumpdir"))
    with open(os.path.join(d, "dumpdir", "keep.txt"), "w") as f:
        f.write("keep\n")
    return {p: _digest(os.path.join(d, p)) for p in _all_files(d)}


def _all_files(d):
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs)


def _digest(p):
    with open(p, "rb") as f:
        return f.read()


def cli_run(m, simulate) -> None:
    from click.testing import CliRunner
    from serq.cli import main
    d = _tmpdir()
    here = os.getcwd()
    try:
        before = _sandbox(d)
        os.chdir(d)
        r = CliRunner().invoke(main, list(m.args), catch_exceptions=True, env={"SERQ_DEBUG": None})
        code = r.exit_code
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        if code == 3 or "Traceback" in (r.output or ""):
            raise Finding("crash", f"exit {code}: {r.output[-600:]}")
        if code not in (0, 1, 2):
            raise Finding("crash", f"exit {code}: {r.output[-300:]}")
        status = "error" if code else "ok"
        forced = "--force" in m.args
        for p, data in before.items():
            now = os.path.join(d, p)
            if not os.path.exists(now) or _digest(now) != data:
                if forced and p != "prog.sq" and p in m.args:
                    continue
                raise Finding("lost", f"{p} {'removed' if not os.path.exists(now) else 'changed'} by "
                                      f"serq {' '.join(m.args)}")
        left = [f for f in _all_files(d) if f.endswith(".serq") or "/.serq" in f and "files.json" not in f]
        if left:
            raise Finding("lost", f"a temporary file left: {left[0]}")
        return status
    finally:
        os.chdir(here)
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- the parser against lark

# characters no terminal begins with, or only some: the lexer's errors and
# its retries with every terminal (and `"`, `/`, `.` inside a token)
ODD_CHARACTERS = ("@", "#", "$", "`", "'", "\\", '"', "/", "*", ".", "\u00e9", "\u03bb", "\x00", "\u00a0", "\t",
                  "\r", "\u2028", "\U0001d6cc", "e", "_", "0")


def parser_make(ch, i=None):
    """A source mutant, and in a third of them a character put anywhere."""
    from .mutate import source_mutant
    m = source_mutant(ch)
    text, what = m.text, m.what
    if ch.chance(1, 3):
        k = ch.below(len(text) + 1)
        c = ch.pick(ODD_CHARACTERS)
        text, what = text[:k] + c + text[k:], f"{what}; insert {c!r} at {k}"
    return _mutant("parser", m.example, what, text=text, horizon=m.horizon)


def parser_run(m, simulate):
    from tests import lark_reference as R
    diffs = R.differences(m.text)
    if diffs:
        start, a, b = diffs[0]
        raise Finding("wrong", f"from `{start}`: lark {str(a)[:300]} / the driver {str(b)[:300]}")
    return "error" if R.by_driver(m.text, "start")[0] != "tree" else None


# ---------------------------------------------------------------- the registry

KINDS = {
    "retype": (retype_make, retype_run),
    "trace": (trace_make, trace_run),
    "oracle": (oracle_make, oracle_run),
    "table": (table_make, table_run),
    "api": (api_make, api_run),
    "cli": (cli_make, cli_run),
    "signals": (interrupts.make, interrupts.run),
    "parser": (parser_make, parser_run),
}


def blob_record(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def blob_of(s: str) -> bytes:
    return base64.b64decode(s.encode("ascii"))
