"""The calibration at a replay's own batches (`serq calibrate --run`): the
simulator's batch log says what each iteration computed, the profile is
composed at any batch by interpolating its grid, and the fit at a replay's
batches recovers the constants a profile was made from."""

import dataclasses
import json

import numpy as np
import pytest

from serq.api import calibration as C
from serq.calib import compose, fit as F, models, profile as PF
from serq.ir import model as M
from serq.link import compile_file
from serq.sim import simulate

from .synthetic import batches as grid_rows, write_bundle
from .test_fit import PROGRAM, TRUTH


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    p = compile_file(PROGRAM, horizon=1.0)
    return PF.read(write_bundle(str(root), p, TRUTH, noise=0.01)), p


def test_the_attention_table_is_the_profile_at_its_points_and_linear_between(bundle):
    prof, _ = bundle
    t = compose.AttentionTable(prof)
    for pc, kp, nd, kvd, us in prof.attention:
        assert t.at(pc, kp, nd, kvd) == us
    # halfway between two profiled KV lengths, and between two decode counts
    a = {tuple(r[:4]): r[4] for r in prof.attention}
    assert t.at(256, 512, 8, 48) == pytest.approx((a[256, 512, 8, 32] + a[256, 512, 8, 64]) / 2, rel=1e-12)
    assert t.at(256, 512, 12, 64) == pytest.approx((a[256, 512, 8, 64] + a[256, 512, 16, 64]) / 2, rel=1e-12)
    assert t.at(0, 0, 0, 0) == 0.0


def _records(rows, block):
    """Batch-log records of the grid's batches: one chunk over its KV, nd
    decodes of kvd each, and the quantities serQ's engine computes."""
    g = compose.Grid(rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], np.zeros(len(rows)), {})
    q = F.batch_quantities(g, block)
    names = {"Ntok": "tokens", "Npre": "prefilled", "Ndec": "decoding", "Kvb": "kv_decode", "Kvp": "kv_prefill",
             "Attn": "attention", "Nres": "residents"}
    return [{"prefill": [(pc, kp)] if pc else [], "decode": [kvd] * int(nd),
             "ctx": {names[k]: float(v[i]) for k, v in q.items()}}
            for i, (pc, kp, nd, kvd) in enumerate(rows)]


def test_a_replays_batches_at_the_profiles_points_compose_as_the_grid(bundle):
    prof, p = bundle
    model = models.model(prof.model)
    grid = compose.grid(prof, model, layers=32, budget=2048, max_seqs=128, max_kv=4096)
    rows = np.stack([grid.pc, grid.kp, grid.nd, grid.kvd], axis=1)
    at = compose.at_batches(prof, model, layers=32, batches=_records(rows, 16), label="a replay")
    assert np.array_equal(at.seconds, grid.seconds)
    assert at.per_batch and at.limits == {"run": "a replay", "iterations": len(rows)}


def test_the_fit_at_a_replays_batches_recovers_the_constants(bundle):
    prof, p = bundle
    model = models.model(prof.model)
    rows = grid_rows()
    rows = rows[(rows[:, 0] + rows[:, 2] <= 2048)]
    g = compose.at_batches(prof, model, layers=32, batches=_records(rows, 16), label="a replay")
    cal = F.calibrate(p, g, layers=32)
    fitted = {c.name: c for c in cal.constants if not c.held}
    for name, true in TRUTH.items():
        c = fitted[name]
        assert abs(c.value - true) <= 3 * c.sigma, (name, c.value, true, c.sigma)
    # every iteration weighs alike: the weights are not the grid's per regime
    assert set(cal.weights.values()) == {1.0}


def test_the_batch_log_is_what_each_iteration_computed_and_changes_nothing_else():
    p = compile_file(PROGRAM, horizon=20.0, sets={"Lambda": "2"})
    plain = simulate(p)
    rep = simulate(p, batch_log=True)
    assert json.dumps(plain.data(), sort_keys=True) == json.dumps(rep.data(), sort_keys=True)
    assert plain.batch_log is None and len(rep.batch_log) > 100
    bs = p.pools[next(i for i, x in enumerate(p.pools) if x.name == "kv")].block
    mixed = 0
    for b in rep.batch_log:
        c = b["ctx"]
        assert c["tokens"] == sum(n for n, _ in b["prefill"]) + len(b["decode"])
        assert c["decoding"] == len(b["decode"]) and c["prefilled"] == sum(n for n, _ in b["prefill"])
        # a decode over k tokens holds the blocks of k + 1
        assert c["kv_decode"] == sum(bs * np.ceil((k + 1) / bs) for k in b["decode"])
        assert c["attention"] == sum(n * (k + n / 2) for n, k in b["prefill"])
        mixed += bool(b["prefill"] and b["decode"])
    assert mixed > 10
