"""Closed forms of queueing theory, each inside the run's 95 % confidence
interval (batch means, 20 batches) on three seeds, and Little's law on every
stage of the report.

The figures (λ, E[S], cv²) are chosen so that a run of 200 000 time units
settles: M/M/1 at ρ = 0.8 (E[T] = 5), M/D/1 at ρ = 0.8 (Pollaczek-Khinchine:
3), M/H₂/1 with cv² = 4 at ρ = 0.5 (3.5), M/G/1-PS at ρ = 0.6 under exp, det
and h2 service (insensitivity: E[S]/(1-ρ) = 2.5), and the closed M/M/1//5
network with think time 4 by mean value analysis.
"""

import pytest

from serq.ir import model as M
from serq.sim import simulate

from builder import det, exp, h2
from queueing import closed, mva, pk, single

HORIZON = 200_000.0
WARMUP = 5_000.0
SEEDS = (1, 2, 3)

CASES = {
    "M/M/1": (lambda s: single(M.KFifo(1), exp(1.0), 0.8, HORIZON, WARMUP, s), pk(0.8, 1.0, 1.0)),
    "M/D/1": (lambda s: single(M.KFifo(1), det(1.0), 0.8, HORIZON, WARMUP, s), pk(0.8, 1.0, 0.0)),
    "M/H2/1": (lambda s: single(M.KFifo(1), h2(1.0, 4.0), 0.5, HORIZON, WARMUP, s), pk(0.5, 1.0, 4.0)),
    "M/M/1-PS": (lambda s: single(M.KPs(M.ENum(1.0)), exp(1.0), 0.6, HORIZON, WARMUP, s), 1 / (1 - 0.6)),
    "M/D/1-PS": (lambda s: single(M.KPs(M.ENum(1.0)), det(1.0), 0.6, HORIZON, WARMUP, s), 1 / (1 - 0.6)),
    "M/H2/1-PS": (lambda s: single(M.KPs(M.ENum(1.0)), h2(1.0, 4.0), 0.6, HORIZON, WARMUP, s), 1 / (1 - 0.6)),
    "M/M/1//5": (lambda s: closed(5, 4.0, 1.0, HORIZON / 4, WARMUP, s), mva(5, 4.0, 1.0)[0]),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("seed", SEEDS)
def test_closed_form_in_ci(name, seed):
    make, formula = CASES[name]
    d = simulate(make(seed)).data()
    o = d["observes"]["response"]
    assert o["count"] > 10_000
    assert abs(o["mean"] - formula) <= o["ci"], (name, seed, o["mean"], o["ci"], formula)
    # the client section sees the same turns
    assert d["client"]["response"]["count"] == o["count"]
    # Little's law on every stage: number = throughput × time at the stage
    for s in d["stages"]:
        if s["completed"] == 0:
            continue
        t = s["wait"] + s["service"]
        assert s["number"] == pytest.approx(s["throughput"] * t, rel=0.01), (name, s)


def test_closed_network_throughput():
    """MVA's throughput X(N) against the service stage's."""
    r, x = mva(5, 4.0, 1.0)
    d = simulate(closed(5, 4.0, 1.0, HORIZON / 4, WARMUP, 1)).data()
    svc = next(s for s in d["stages"] if s["name"] == "svc")
    assert svc["throughput"] == pytest.approx(x, rel=0.01)
    assert svc["utilization"] == pytest.approx(x * 1.0, rel=0.01)
