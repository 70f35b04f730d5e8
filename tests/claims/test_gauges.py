"""Gauges against hand-computed time averages, their least and greatest value,
their CI, and their change points (--dump)."""

import math

import pytest

from serq.sim import simulate
from serq.sim.stats import T_975_19

from workloads import link

# Two sessions at time 0 each hold a slot while a delay runs 2 (s0) and 5
# (s1): used(slots) is 2 on [0, 2), 1 on [2, 5), 0 after.
SLOTS = """
  pool slots { cap 3; }
  stage svc : delay;
  workload { arrive batch(2); init { set w = serial == 0 ? 2 : 5; } }
  server { hold slots (cost(slots, 1)) { run svc (cost(svc, w)); } }
  gauge held = used(slots);
  gauge jobs = queue(svc) + 10 * holders(slots);
"""


def ci(means):
    k = len(means)
    mu = sum(means) / k
    var = sum((m - mu) ** 2 for m in means) / (k - 1)
    return T_975_19 * math.sqrt(var / k)


def test_time_average_least_greatest_and_ci():
    g = simulate(link(SLOTS, horizon=10)).data()["gauges"]
    assert g["held"]["mean"] == pytest.approx((2 * 2 + 1 * 3) / 10)
    assert (g["held"]["min"], g["held"]["max"]) == (0.0, 2.0)
    # 20 windows of 0.5: four at 2, six at 1, ten at 0
    assert g["held"]["ci"] == pytest.approx(ci([2] * 4 + [1] * 6 + [0] * 10))
    assert g["jobs"]["mean"] == pytest.approx((22 * 2 + 11 * 3) / 10)
    assert (g["jobs"]["min"], g["jobs"]["max"]) == (0.0, 22.0)


def test_the_average_is_over_warmup_to_end():
    g = simulate(link(SLOTS, horizon=10, warmup=1)).data()["gauges"]["held"]
    assert g["mean"] == pytest.approx((2 * 1 + 1 * 3) / 9)
    # windows of 0.45 over [1, 10]: [1, 2) is 2.2 windows at 2, [2, 5) 6.67 at 1
    w = 9 / 20
    means = []
    for k in range(20):
        a, b = 1 + k * w, 1 + (k + 1) * w
        area = 2 * max(0.0, min(b, 2) - max(a, 1)) + 1 * max(0.0, min(b, 5) - max(a, 2))
        means.append(area / w)
    assert g["ci"] == pytest.approx(ci(means))
    # after everything: only 0 is held there
    g = simulate(link(SLOTS, horizon=10, warmup=6)).data()["gauges"]["held"]
    assert (g["mean"], g["min"], g["max"], g["ci"]) == (0.0, 0.0, 0.0, 0.0)


def test_a_value_held_for_no_time_is_not_read():
    """The hold is admitted and released at time 0 (its run has no work): the
    gauge reads the state each instant leaves, never 2."""
    p = link("""
      pool slots { cap 3; }
      stage svc : delay;
      workload { arrive batch(1); }
      server { hold slots (cost(slots, 2)) { run svc (cost(svc, 0)); } run svc (cost(svc, 4)); }
      gauge held = used(slots);
      gauge q = queue(svc);
    """, horizon=10)
    g = simulate(p).data()["gauges"]
    assert (g["held"]["mean"], g["held"]["min"], g["held"]["max"]) == (0.0, 0.0, 0.0)
    assert g["q"]["mean"] == pytest.approx(0.4)
    assert (g["q"]["min"], g["q"]["max"]) == (0.0, 1.0)


def test_dump_writes_the_change_points(tmp_path):
    r = simulate(link(SLOTS, horizon=10, warmup=1))
    r.dump(str(tmp_path))
    # from time 0, the warm-up included
    assert (tmp_path / "gauge" / "held.csv").read_text() == "time,value\n0.0,2.0\n2.0,1.0\n5.0,0.0\n"
    assert (tmp_path / "gauge" / "jobs.csv").read_text() == "time,value\n0.0,22.0\n2.0,11.0\n5.0,0.0\n"


def test_an_engine_gauge():
    """busy(llm) is the batch while an iteration runs: the engine of the claim
    tests runs batches of 1, 2, 2, 2, 1, 1 requests on [0, 6); queue(llm), its
    residents, is 2 on [0, 4) and 1 on [4, 6)."""
    p = link("""
      device gpu { }
      engine llm on gpu { tokens cap 4; schedule { advance running decode first; } execute (1); }
      workload { arrive batch(2); init { set n = 6; } }
      server { run llm prefill (cost(llm, n)); run llm decode (cost(llm, 2)); }
      gauge batch_size = busy(llm);
      gauge at_engine = queue(llm);
    """, horizon=10)
    g = simulate(p).data()["gauges"]
    assert g["batch_size"]["mean"] == pytest.approx(9 / 10)
    assert (g["batch_size"]["min"], g["batch_size"]["max"]) == (0.0, 2.0)
    assert g["at_engine"]["mean"] == pytest.approx((2 * 4 + 1 * 2) / 10)


def test_a_gauge_over_a_family():
    """max j in 2 (used(kv[j])): one session in each of two pools."""
    p = link("""
      pool kv[2] { cap 10; }
      stage svc : delay;
      workload { arrive batch(2); init { set w = serial == 0 ? 2 : 4; } }
      server { hold kv[serial] (cost(kv, 3 + serial)) { run svc (cost(svc, w)); } }
      gauge fullest = max j in 2 (used(kv[j]));
      gauge spread = max j in 2 (used(kv[j])) - min j in 2 (used(kv[j]));
    """, horizon=8)
    g = simulate(p).data()["gauges"]
    # kv[0] holds 3 on [0, 2), kv[1] 4 on [0, 4)
    assert g["fullest"]["mean"] == pytest.approx(4 * 4 / 8)
    assert g["spread"]["mean"] == pytest.approx((1 * 2 + 4 * 2) / 8)
    assert (g["spread"]["min"], g["spread"]["max"]) == (0.0, 4.0)


def test_gauges_in_the_text_report():
    text = simulate(link(SLOTS, horizon=10)).text()
    lines = text.splitlines()
    i = lines.index(next(x for x in lines if x.startswith("gauge ")))
    assert lines[i].split() == ["gauge", "mean", "ci", "min", "max"]
    assert lines[i + 2].split()[:2] == ["held", "0.7000"]
    assert lines[i + 2].split()[-2:] == ["0.0000", "2.0000"]
