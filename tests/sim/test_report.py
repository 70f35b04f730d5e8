"""The report: the text of the development guide, the --json data, --dump."""

import json
import os

from serq.ir import model as M
from serq.sim import simulate

from builder import A, Builder, X, exp, now, sessions

S = M.SLOT


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


STAGE_KEYS = {"name", "mean_number", "utilization", "completed", "throughput", "mean_wait", "mean_service",
              "iterations"}
POOL_KEYS = {"name", "mean_used", "mean_cached", "mean_queue", "mean_holders", "mean_wait", "admissions",
             "evicted_entries", "evicted_units", "preemptions", "spills", "rejected", "stuck", "over_cap"}
SUMMARY_KEYS = {"count", "mean", "ci", "cv2", "p99"}


def test_json_fields():
    d = simulate(small()).data()
    assert set(d) == {"horizon", "end", "warmup", "seed", "events", "arrivals", "ended", "turns", "mean_live",
                      "observes", "client", "stages", "pools", "growing_at_end", "idle_with_work"}
    assert d["horizon"] == 200.0 and d["end"] == 200.0 and d["warmup"] == 20.0 and d["seed"] == 4
    assert set(d["observes"]) == {"response", "slow"}
    for s in d["observes"].values():
        assert set(s) == SUMMARY_KEYS
    assert set(d["client"]) == {"ttft", "tpot", "response"}
    # no token was ever computed: ttft and tpot are empty, their NaNs null
    assert d["client"]["ttft"] == {"count": 0, "mean": None, "ci": None, "cv2": None, "p99": None}
    assert [set(s) for s in d["stages"]] == [STAGE_KEYS]
    assert [set(p) for p in d["pools"]] == [POOL_KEYS]
    text = json.dumps(d, sort_keys=True, allow_nan=False)
    assert json.loads(text) == d


def test_json_infinity_is_a_string():
    b = Builder()
    p = b.pool("p")  # cap inf
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(p, 1)], [b.run(s, 1)]), b.observe("free", X(M.EQuery("Free", p)))])
    d = simulate(b.program(arrival=sessions({}), horizon=5)).data()
    assert d["observes"]["free"]["mean"] == "inf"


def test_text_report():
    r = simulate(small())
    d = r.data()
    lines = r.text().splitlines()
    assert lines[0] == (f"run: horizon 200 end 200 warmup 20 seed 4 events {d['events']} arrivals "
                        f"{d['arrivals']} ended {d['ended']} turns {d['turns']} mean live "
                        f"{d['mean_live']:.3f}")
    i = next(k for k, line in enumerate(lines) if line.startswith("observe"))
    header, rule = lines[i], lines[i + 1]
    # every column as wide as its widest entry, two spaces apart
    widths = [len(x) for x in rule.split("  ")]
    assert all(set(x) == {"-"} for x in rule.split("  "))
    for row in lines[i:i + 4]:
        if not row:
            break
        assert len(row) <= sum(widths) + 2 * (len(widths) - 1)
    assert header.split() == ["observe", "count", "mean", "95%", "CI", "cv2", "p99"]
    assert any(line.startswith("stage ") for line in lines)
    assert any(line.startswith("pool ") for line in lines)
    assert any(line.startswith("client ") for line in lines)
    row = next(line for line in lines if line.startswith("svc "))
    svc = d["stages"][0]
    assert row.split() == ["svc", f"{svc['mean_number']:.3f}", f"{svc['utilization']:.3f}", str(svc["completed"]),
                           f"{svc['throughput']:.4f}", f"{svc['mean_wait']:.4f}", f"{svc['mean_service']:.4f}", "0"]
    assert not r.text().endswith("\n")  # the CLI's echo ends the line
    # a test that is 0 over 40 or more samples gets a note
    assert f"note: observe slow is constant 0 over {d['observes']['slow']['count']} samples" in lines


def test_dump(tmp_path):
    r = simulate(small())
    r.dump(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["response.csv", "slow.csv"]
    rows = (tmp_path / "response.csv").read_text().splitlines()
    assert rows[0] == "time,session,turn,value"
    assert len(rows) - 1 == r.data()["observes"]["response"]["count"]
    t, s, k, v = rows[1].split(",")
    assert float(t) >= 20 and int(s) >= 0 and int(k) == 1 and float(v) >= 0


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
