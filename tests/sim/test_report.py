"""The report: its text, the --json data (one name per field), --dump, the
notes a reader must not miss."""

import json
import os

import numpy as np
import pytest

from serq.about import ir_digest, version
from serq.ir import model as M
from serq.link import compile_file, compile_source
from serq.sim import report as R, simulate
from serq.sim import stats as S

from builder import A, Builder, X, exp, now, sessions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def small():
    b = Builder()
    p = b.pool("slots", cap=2)
    svc = b.stage("svc", M.KFifo(1))
    t0 = b.attr("t0")
    b.session([b.turn(), b.set(t0, now()),
               b.hold([(p, 1)], [b.run(svc, exp(1.0))]),
               b.observe("response", now() - A(t0)),
               b.observe("slow", (now() - A(t0)) > 1000)])
    return b.program(arrival=M.APoisson(0.5), horizon=200, warmup=20, seed=4)


MADE_KEYS = {"program", "instance", "inputs", "seed", "horizon", "warmup", "arrivals", "trace", "serq"}
RUN_KEYS = {"end", "events", "arrivals", "ended", "turns", "live", "stuck", "waiting_to_grow", "idle_with_work",
            "growing", "partial"}
SUMMARY_KEYS = {"count", "mean", "ci", "cv2", "p50", "p90", "p95", "p99"}
STAGE_KEYS = {"name", "number", "utilization", "completed", "throughput", "wait", "service", "iterations"}
POOL_KEYS = {"name", "used", "cached", "queue", "holders", "wait", "admissions", "evictions", "evicted",
             "preemptions", "spills", "rejected", "stuck", "over_cap"}


def test_json_fields():
    d = simulate(small()).data()
    assert set(d) == {"schema", "made", "run", "observes", "client", "stages", "pools", "gauges", "claims", "notes"}
    assert d["schema"] == 1
    assert d["made"] == {"program": small().files[0], "instance": None, "inputs": None, "seed": 4,
                         "horizon": 200.0, "warmup": 20.0, "arrivals": None, "trace": None,
                         "ir": ir_digest(small()), "serq": version()}
    assert set(d["run"]) == RUN_KEYS and d["run"]["end"] == 200.0
    assert set(d["observes"]) == {"response", "slow"}
    for s in d["observes"].values():
        assert set(s) == SUMMARY_KEYS
    assert set(d["client"]) == {"ttft", "tpot", "response"}
    # no token was ever computed: ttft and tpot are empty, their NaNs null
    assert d["client"]["ttft"] == {"count": 0, "mean": None, "ci": None, "cv2": None, "p50": None, "p90": None,
                                   "p95": None, "p99": None}
    assert [set(s) for s in d["stages"]] == [STAGE_KEYS]
    assert [set(p) for p in d["pools"]] == [POOL_KEYS]
    assert d["gauges"] == {} and d["claims"] == []
    text = json.dumps(d, sort_keys=True, allow_nan=False)
    assert json.loads(text) == d


def test_the_origin_is_what_the_caller_says_made_the_run():
    p = compile_source(MM1, "mm1.sq", sets={"lam": "0.25"}, horizon=100.0)
    made = simulate(p, origin={"program": "mm1.sq", "instance": "i.sq", "inputs": {"lam": "1 / 4"}}).data()["made"]
    assert (made["program"], made["instance"], made["inputs"]) == ("mm1.sq", "i.sq", {"lam": "1 / 4"})
    text = simulate(p, origin={"program": "mm1.sq", "instance": "i.sq", "inputs": {"lam": "1 / 4"}}).text()
    assert text.split("\n")[0] == f"made: program mm1.sq instance i.sq inputs lam=1 / 4 seed 1 horizon 100 " \
                                  f"warmup 0"


def test_json_infinity_is_a_string():
    b = Builder()
    p = b.pool("p")  # cap inf
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(p, 1)], [b.run(s, 1)]), b.observe("free", X(M.EQuery("Free", p)))])
    d = simulate(b.program(arrival=sessions({}), horizon=5)).data()
    assert d["observes"]["free"]["mean"] == "inf"


def _tables(text: str) -> dict:
    """The text report's tables: first header word -> list of (header, rows)."""
    out = {}
    blocks = text.split("\n\n")
    for b in blocks:
        lines = b.split("\n")
        if len(lines) >= 2 and set(lines[1].replace(" ", "")) == {"-"}:
            out.setdefault(lines[0].split()[0], []).append((lines[0].split(), [x.split() for x in lines[2:]]))
    return out


def test_the_text_columns_are_the_json_keys():
    r = simulate(small())
    d = r.data()
    lines = r.text().splitlines()
    assert lines[0] == f"made: program {d['made']['program']} seed 4 horizon 200 warmup 20"
    run = d["run"]
    assert lines[1] == (f"run: end 200 events {run['events']} arrivals {run['arrivals']} ended {run['ended']} "
                        f"turns {run['turns']} live {run['live']:.3f}")
    t = _tables(r.text())
    (obs_header, obs_rows), = t["observe"]
    assert obs_header == ["observe"] + list(S.FIELDS)
    (client_header, client_rows), = t["client"]
    assert client_header == ["client"] + list(S.FIELDS)
    assert [row[0] for row in client_rows] == ["response"]      # ttft and tpot: no sample, no row
    (stage_header, stage_rows), = t["stage"]
    assert stage_header[1:] == [k for k in d["stages"][0] if k != "name"]
    svc = d["stages"][0]
    assert stage_rows == [["svc", f"{svc['number']:.3f}", f"{svc['utilization']:.3f}", str(svc["completed"]),
                           f"{svc['throughput']:.4f}", f"{svc['wait']:.4f}", f"{svc['service']:.4f}", "0"]]
    pool_tables = t["pool"]
    assert [h for header, _ in pool_tables for h in header[1:]] == [k for k in d["pools"][0] if k != "name"]
    row = obs_rows[[x[0] for x in obs_rows].index("response")]
    s = d["observes"]["response"]
    assert row == ["response", str(s["count"]), f"{s['mean']:.4f}", f"±{s['ci']:.4f}", f"{s['cv2']:.3f}",
                   f"{s['p50']:.4f}", f"{s['p90']:.4f}", f"{s['p95']:.4f}", f"{s['p99']:.4f}"]
    assert not r.text().endswith("\n")  # the CLI's echo ends the line
    # a test that is 0 over 40 or more samples gets a note, the text's last line and the JSON's
    note = f"note: observe slow is constant 0 over {d['observes']['slow']['count']} samples"
    assert d["notes"] == [note] and lines[-1] == note and lines[-2] == ""


@pytest.mark.parametrize("horizon", [200, 2000])     # below and above the 256 samples of numpy's path
def test_the_quantiles_are_numpys_linear_percentiles(horizon):
    import dataclasses
    r = simulate(dataclasses.replace(small(), horizon=float(horizon)))
    values = [v for _, _, _, v in r.samples("response")]
    s = r.data()["observes"]["response"]
    assert len(values) == s["count"] > 40
    for key, q in S.QUANTILES:
        assert s[key] == float(np.percentile(values, 100 * q)), key
    few = S.summary([3.0, 1.0, 2.0, 10.0])
    assert (few["p50"], few["p90"], few["p95"], few["p99"]) == (2.5, pytest.approx(7.9), pytest.approx(8.95),
                                                                 pytest.approx(9.79))


def test_dump(tmp_path):
    r = simulate(small())
    r.dump(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == [".serq-files.json", "client", "response.csv", "slow.csv"]
    assert sorted(os.listdir(tmp_path / "client")) == ["response.csv", "tpot.csv", "ttft.csv"]
    rows = (tmp_path / "response.csv").read_text().splitlines()
    assert rows[0] == "time,session,turn,value"
    assert len(rows) - 1 == r.data()["observes"]["response"]["count"]
    t, s, k, v = rows[1].split(",")
    assert float(t) >= 20 and int(s) >= 0 and int(k) == 1 and float(v) >= 0
    # the client's response is the observe's: the same turns, times and values
    assert (tmp_path / "client" / "response.csv").read_text() == (tmp_path / "response.csv").read_text()
    assert (tmp_path / "client" / "ttft.csv").read_text() == "time,session,turn,value\n"


def test_dump_writes_the_clients_per_turn_records(tmp_path):
    p = compile_file(os.path.join(ROOT, "examples", "multi-turn", "vllm.sq"), horizon=60.0, warmup=6.0)
    r = simulate(p)
    d = r.data()["client"]
    r.dump(str(tmp_path))
    for key in ("ttft", "tpot", "response"):
        rows = [x.split(",") for x in (tmp_path / "client" / f"{key}.csv").read_text().splitlines()[1:]]
        assert len(rows) == d[key]["count"] > 40
        values = [float(x[3]) for x in rows]
        assert sum(values) / len(values) == pytest.approx(d[key]["mean"], rel=1e-12)
        assert all(float(x[0]) >= 6.0 and int(x[2]) >= 1 for x in rows)
        assert [float(x[0]) for x in rows] == sorted(float(x[0]) for x in rows)
    # a turn's response ends after its first token: same (session, turn), later or at the same time
    first = {(x[1], x[2]): float(x[0]) for x in (tmp_path / "client" / "ttft.csv").read_text().splitlines()[1:]
             for x in [x.split(",")]}
    for line in (tmp_path / "client" / "response.csv").read_text().splitlines()[1:]:
        t, s, k, _ = line.split(",")
        if (s, k) in first:
            assert first[(s, k)] <= float(t)
    # the same run without samples computes the same statistics
    assert simulate(p, samples=False).data() == r.data()


def test_same_seed_same_bytes_other_seed_other_run():
    a = json.dumps(simulate(small()).data(), sort_keys=True)
    b = json.dumps(simulate(small()).data(), sort_keys=True)
    assert a == b
    p = small()
    import dataclasses
    c = json.dumps(simulate(dataclasses.replace(p, seed=5)).data(), sort_keys=True)
    assert c != a


def test_progress_only_on_a_terminal(capsys):
    simulate(small(), progress=True)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- notes

MM1 = """use "std/args";
fn main() {
  let lam = args.number("lam", 0.5);
  stage svc : fifo;
  workload { arrive poisson(lam); turn { set s = ~exp(1); } }
  server { set t0 = now; run svc (cost(svc, s)); observe sojourn = now - t0; }
}
"""


def mm1(lam: float, horizon: float, seed: int = 1):
    return simulate(compile_source(MM1, "mm1.sq", sets={"lam": str(lam)}, horizon=horizon,
                                   warmup=horizon / 20, seed=seed))


def test_an_overloaded_queue_is_growing_at_the_end():
    r = mm1(1.25, 20000.0)
    d = r.data()
    assert d["run"]["growing"] == ["run.live", "stage.svc.number"]
    notes = [n for n in d["notes"] if n.startswith("growing: ")]
    assert len(notes) == 2
    assert notes[0].startswith("growing: the live count rose over the run's second half (time averages ")
    assert notes[1].startswith("growing: the number at stage svc rose over the run's second half")
    assert notes[0].endswith(" over its quarters): it may not have settled; a longer run or other seeds tell")
    assert r.text().endswith("\n".join(d["notes"]))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_a_stable_queue_is_not_growing(seed):
    d = mm1(0.8, 50000.0, seed).data()
    assert d["run"]["growing"] == [] and d["notes"] == []


def test_growing_reads_the_quarters_of_the_second_half():
    """The rule of serq.sim.trend on made-up integrals: a count that is 0
    until the middle of [0, 100] and then rises as t - 50 has the quarter
    averages 6.25, 18.75, 31.25, 43.75; one rising by less than three roots
    of the last, or not in every quarter, is not growing."""
    from types import SimpleNamespace as NS
    from serq.sim import trend as T

    def sim(live):     # the integral of the live count to t is live(t), nothing else counts
        s = NS(program=NS(arrivals=None, warmup=0.0, horizon=100.0), pools=[], stages=[], live=0, t_live=0.0)
        s.integral = live
        return s

    def judge(integral):
        s = sim(integral)
        tr = T.Trend(s)
        assert tr.marks == [50.0, 62.5, 75.0, 87.5]
        for t in tr.marks + [100.0]:
            s.acc_live, s.t_live = integral(t), t
            tr.pass_until(t)
        return T.growing(s, tr, 100.0)

    ((name, avg),) = judge(lambda t: max(t - 50, 0) ** 2 / 2)
    assert name == "run.live" and avg == [6.25, 18.75, 31.25, 43.75]
    assert judge(lambda t: 400 * t + max(t - 50, 0) ** 2 / 20) == []     # 402.5 … 404.4: within the noise
    assert judge(lambda t: min(t, 80) ** 2 / 2) == []                    # falls in the last quarter


def test_rejected_sessions_are_a_note():
    b = Builder()
    p = b.pool("p", cap=10)
    s = b.stage("s", M.KDelay())
    u = b.attr("u")
    b.session([b.turn(), b.hold([(p, A(u))], [b.run(s, 1)]), b.observe("done", now())])
    d = simulate(b.program(arrival=sessions({u: 12}, {u: 4}), horizon=10)).data()
    assert d["notes"][0] == "rejected: pool p rejected 1 request that can never fit (cap 10); its session ended"


def test_a_claim_that_fails_is_a_note():
    path = os.path.join(ROOT, "docs", "tutorial", "05_claim.sq")
    d = simulate(compile_file(path, horizon=10.0, sets={"B": "4"})).data()
    on_time = next(c for c in d["claims"] if c["name"] == "on_time")
    assert on_time["verdict"] == "fails" and on_time["time"] == 10.0
    assert [n for n in d["notes"] if n.startswith("fails: ")] == ["fails: claim on_time fails at end 10"]


def test_statistics_without_samples_are_left_out_and_said():
    src = """fn main() {
  stage svc : fifo;
  stage never : fifo;
  workload { arrive poisson(1); turn { set s = ~exp(0.5); } }
  server { set t0 = now; run svc (cost(svc, s)); observe sojourn = now - t0;
           branch (s > 100) { run never (cost(never, 1)); observe rare = now - t0; } }
}
"""
    r = simulate(compile_source(src, "few.sq", horizon=30.0))
    d = r.data()
    n = d["observes"]["sojourn"]["count"]
    assert 0 < n < 40 and d["observes"]["rare"]["count"] == 0
    assert d["notes"] == [
        "undefined: no sample after the warm-up (no row): observe rare",
        f"undefined: below 40 samples the ci is null (below 2, the cv2 too): observe sojourn {n}; "
        f"client response {d['client']['response']['count']}"]
    assert d["stages"][1]["name"] == "never" and d["stages"][1]["wait"] is None
    t = _tables(r.text())
    assert [row[0] for row in t["observe"][0][1]] == ["sojourn"]
    assert "pool" not in t and "gauge" not in t and "claim" not in t


def test_the_report_validates_against_its_schema():
    """The schema holds for reports with every section filled (the papers'
    claims, routing's gauges), a drained and a partial run, and refuses a key
    it does not know (every example's report: tests/sim/test_examples.py)."""
    jsonschema = pytest.importorskip("jsonschema")
    import dataclasses
    from serq.sim import RunStopped
    with open(os.path.join(ROOT, "serq", "report.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    ex = os.path.join(ROOT, "examples")
    reports = [simulate(small()).data(),
               simulate(compile_file(os.path.join(ex, "papers", "kong_svf.sq"), horizon=60.0)).data(),
               simulate(compile_file(os.path.join(ex, "multi-turn", "routing.sq"), horizon=30.0)).data(),
               simulate(dataclasses.replace(small(), arrivals=20)).data()]
    with pytest.raises(RunStopped) as stop:
        simulate(compile_file(os.path.join(ex, "single-turn", "mg1.sq"), horizon=1e6), max_events=300)
    reports.append(stop.value.report.data())
    assert reports[1]["claims"] and reports[2]["gauges"] and reports[3]["made"]["arrivals"] == 20
    assert reports[4]["run"]["partial"] == "--max-events 300 reached"
    for d in reports:
        v.validate(json.loads(json.dumps(d, allow_nan=False)))
    bad = simulate(small()).data()
    bad["stages"][0]["mean_number"] = 1.0
    with pytest.raises(jsonschema.ValidationError):
        v.validate(bad)


def test_the_headers_are_the_schemas_keys():
    with open(os.path.join(ROOT, "serq", "report.schema.json"), encoding="utf-8") as f:
        defs = json.load(f)["$defs"]
    assert R.STAGE_HEADER == [k for k in defs["stage"]["properties"] if k != "name"]
    assert R.POOL_HEADERS[0] + R.POOL_HEADERS[1] == [k for k in defs["pool"]["properties"] if k != "name"]
    assert R.SUMMARY_HEADER == list(defs["summary"]["properties"])
    assert R.GAUGE_HEADER == list(defs["gauge"]["properties"])
