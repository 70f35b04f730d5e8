"""A shared stage (a ps stage that a multi-stage run holds together with
another: a NIC of examples/pd-disaggregation) reports what it carried: its
utilization is the time average of Σ rate / φ over its flows, so it is never
above the fraction of time a flow is there, itself at most the mean number
present; and the mean number present is Little's L = λ W (the throughput
times the mean sojourn).  Issue 24, finding 12: the NIC stages of
vllm_nixl_pull.sq at Lambda=6 said utilization 0.999 for a mean number of
0.092 (a stage whose last flow left kept the rate it had carried)."""

from __future__ import annotations

import pytest

from serq.link import compile_file
from serq.sim import Report
from serq.sim.machine import Sim

CASES = [
    ("examples/pd-disaggregation/vllm_nixl_pull.sq", {"Lambda": "6"}, 300.0),
    ("examples/pd-disaggregation/vllm_nixl_pull.sq", {"Lambda": "1"}, 300.0),
    ("examples/pd-disaggregation/llmd_nixl_pull.sq", {}, 300.0),
    ("examples/pd-disaggregation/vllm_nixl_push.sq", {}, 300.0),
    ("examples/oracle/vllm_pd.sq", {}, 2000.0),
]


def _run(path, sets, horizon):
    sim = Sim(compile_file(path, sets=sets, horizon=horizon, warmup=horizon / 10))
    sim.run()
    data = Report(sim, None).data()
    return [(st, s) for st, s in zip(data["stages"], sim.stages) if s.shared]


@pytest.mark.parametrize("path, sets, horizon", CASES, ids=lambda x: str(x))
def test_every_shared_stage_keeps_littles_law_and_is_busy_only_when_present(path, sets, horizon):
    shared = _run(path, sets, horizon)
    assert shared, f"{path} has no shared stage"
    for st, _ in shared:
        if st["completed"] < 50:
            continue
        little = st["throughput"] * st["service"]
        assert st["number"] == pytest.approx(little, rel=0.05), st
        assert 0 <= st["utilization"] <= st["number"] + 1e-12, st


def test_the_nic_at_lambda_6_carries_what_it_moves():
    (p_nic, _), (d_nic, _) = _run("examples/pd-disaggregation/vllm_nixl_pull.sq", {"Lambda": "6"}, 300.0)
    for st in (p_nic, d_nic):
        assert st["number"] == pytest.approx(st["throughput"] * st["service"], rel=0.02)
        assert st["utilization"] < 0.7 * st["number"]       # (it was 0.999 for a number of 0.092)
