"""The papers' programs (examples/papers/) and their claims, checked on the
paths the simulator runs: over several seeds and workloads, among them
workloads on which a claim is expected to fail, or to be out of scope, and
is.

A workload here is what a tool gives the program besides its text: its
inputs (--set), another arrival law, explicit sessions, another init block
(tests/claims/workloads.py).  The deployment, the server and the claims are
the program's."""

import dataclasses
import random

import pytest

from serq.ir import model as M

from workloads import attr, claims, num, program, sessions, verdicts, with_claims, with_workload

DAI = "examples/papers/dai_sarathi.sq"
FT = "examples/papers/dai_fastertransformer.sq"
BARI = "examples/papers/bari_rad.sq"
KONG = "examples/papers/kong_svf.sq"

POINT_C = 5e6   # 50 s of 10 µs: 106 arrivals at point C


# ---------------------------------------------------------------- Dai et al.

def test_dai_sarathi_at_point_c():
    c = claims(program(DAI, horizon=POINT_C))
    for name in ("work_conserving", "token_rate"):
        assert (c[name]["verdict"], c[name]["iterations"]) == ("holds", 1060)


def test_dai_fastertransformer_at_point_c():
    """The first request arrives at 46 750, prefills in 3 iterations (128,
    128, 34 tokens) and decodes alone from 60 775, one token per 4 675; the
    second arrives at 93 500 = 60 775 + 7 · 4 675, as the 11th iteration
    starts: its 290 prompt tokens wait behind one decode token."""
    c = claims(program(FT, horizon=POINT_C))
    w = c["not_work_conserving"]
    assert (w["verdict"], w["iteration"], w["time"]) == ("witnessed", 11, 93500.0)
    assert w["read"] == {"demand": 291.0, "tokens": 1.0}
    assert (c["token_rate"]["verdict"], c["token_rate"]["iterations"]) == ("holds", 1060)


def test_fastertransformer_is_not_work_conserving():
    """§4, the failing workload: Sarathi's claim on FasterTransformer's engine
    fails, at the iteration the witness names."""
    ft = program(FT, horizon=POINT_C)
    wc = next(c for c in program(DAI, horizon=POINT_C).claims if c.name == "work_conserving")
    c = claims(with_claims(ft, ft.claims + (wc,)))["work_conserving"]
    assert (c["verdict"], c["iteration"], c["time"]) == ("fails", 11, 93500.0)
    assert c["read"] == {"demand": 291.0, "tokens": 1.0}


def test_dai_one_request_witnesses_nothing():
    """A request alone: FasterTransformer's batches are full or take every
    token there is (290 = 128 + 128 + 34, then one decode)."""
    c = claims(sessions(program(FT, horizon=POINT_C), [{}]))
    assert c["not_work_conserving"]["verdict"] == "not_witnessed"
    assert c["not_work_conserving"]["iterations"] == 3 + 990
    assert verdicts(sessions(program(DAI, horizon=POINT_C), [{}])) == {
        "work_conserving": "holds", "token_rate": "holds"}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("gap", [46750, 30000])
def test_dai_poisson_arrivals(seed, gap):
    """Poisson arrivals at point C's rate and above it: Sarathi conserves
    work and both keep the rate; FasterTransformer's witness comes early."""
    arrival = M.APoisson(1.0 / gap)
    dai = with_workload(program(DAI, horizon=2e6), arrival=arrival, seed=seed)
    assert verdicts(dai) == {"work_conserving": "holds", "token_rate": "holds"}
    ft = claims(with_workload(program(FT, horizon=2e6), arrival=arrival, seed=seed))
    assert ft["token_rate"]["verdict"] == "holds"
    assert ft["not_work_conserving"]["verdict"] == "witnessed"
    assert ft["not_work_conserving"]["read"]["demand"] >= 128 > ft["not_work_conserving"]["read"]["tokens"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dai_a_burst_of_mixed_lengths(seed):
    """20 requests at time 0 with lengths drawn here, by the tool."""
    rnd = random.Random(seed)
    rows = [{"vp": rnd.randint(1, 600), "vd": rnd.randint(1, 400)} for _ in range(20)]
    assert verdicts(sessions(program(DAI, horizon=POINT_C), rows)) == {
        "work_conserving": "holds", "token_rate": "holds"}
    assert verdicts(sessions(program(FT, horizon=POINT_C), rows)) == {
        "not_work_conserving": "witnessed", "token_rate": "holds"}


# ---------------------------------------------------------------- Bari et al.

def uniform(lo, hi):
    return M.ESample("Uniform", (num(lo), num(hi)))


def floor(e):
    return M.EFn("Floor", (e,))


def bari_drawn(p):
    """The program's sizes drawn instead of spread: 1 to 8 tiles, outputs
    exponential of mean 200 capped at 512."""
    return with_workload(p, init={
        "vp": M.EBinary("Mul", num(128), floor(uniform(1, 9))),
        "vd": M.EFn("Min", (M.EFn("Ceil", (M.ESample("Exp", (num(200),)),)), num(512)))})


def test_bari_rad_as_written():
    c = claims(program(BARI, horizon=1e7))
    for name in ("token_rate", "optimal_tiling"):
        assert c[name]["verdict"] == "holds" and c[name]["iterations"] > 2000


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("rate", ["0.00002", "0.00003"])
def test_bari_rad_drawn_sizes(seed, rate):
    """20 and 30 requests per second for 5 s, sizes drawn: RAD fills its
    tiles and keeps Theorem 1's rate."""
    c = claims(bari_drawn(program(BARI, horizon=5e6, seed=seed, sets={"rate": rate})))
    for name in ("token_rate", "optimal_tiling"):
        assert c[name]["verdict"] == "holds"
        assert c[name]["iterations"] > 1000


@pytest.mark.parametrize("seed", [1, 2])
def test_bari_rad_a_burst(seed):
    """60 requests at time 0 with sizes chosen here, whole tiles."""
    rnd = random.Random(seed)
    rows = [{"vp": 128 * rnd.randint(1, 8), "vd": rnd.randint(1, 512)} for _ in range(60)]
    assert verdicts(sessions(program(BARI, horizon=1e8), rows)) == {
        "token_rate": "holds", "optimal_tiling": "holds"}


def off_tile(seed=1):
    """Prompts of 100 to 800 tokens, whole hundreds, session i's 100 (1 + i mod
    8): no prompt is a whole number of 128-token tiles."""
    p = program(BARI, horizon=5e6, seed=seed)
    i = attr(p, "serial")
    mod8 = M.EBinary("Sub", i, M.EBinary("Mul", num(8), floor(M.EBinary("Div", i, num(8)))))
    return with_workload(p, init={"vp": M.EBinary("Mul", num(100), M.EBinary("Add", num(1), mod8)),
                                  "vd": num(50)})


def test_bari_prompts_off_the_tile_are_out_of_scope():
    """Assumption 3 fails for the first session: the tiling claim is about
    no path of this workload; the rate still holds."""
    c = claims(off_tile())
    t = c["optimal_tiling"]
    assert (t["verdict"], t["session"], t["time"], t["read"]) == ("out_of_scope", 0, 0.0, {"vp": 100.0})
    assert c["token_rate"]["verdict"] == "holds"


def test_bari_tiling_needs_its_hypothesis():
    """The same workload with the claim's given left out: the first batch is
    the first prompt, 100 tokens, less than a tile, and it prefills."""
    p = off_tile()
    bare = tuple(dataclasses.replace(c, given=None) if c.name == "optimal_tiling" else c for c in p.claims)
    t = claims(with_claims(p, bare))["optimal_tiling"]
    assert (t["verdict"], t["iteration"], t["time"]) == ("fails", 1, 0.0)
    assert t["read"] == {"tokens": 100.0, "decoders": 0.0, "residents": 1.0}


# ---------------------------------------------------------------- Kong et al.

def kong_drawn(p):
    """The program's sizes drawn instead of spread, uniformly over the same ranges."""
    return with_workload(p, init={"s": floor(uniform(1, 1001)), "o": floor(uniform(1, 501))})


def bound(r, m=20000, big_p=2500):
    return (m - big_p) * (r["total(latency)"] - r["total(out)"]) <= 2 * (r["prefix_total(vol)"] - r["total(vol)"])


def test_kong_svf_as_written():
    c = claims(program(KONG, horizon=1e5))["queueing_bound"]
    assert c["verdict"] == "holds" and bound(c["read"])
    assert c["read"]["total(out)"] == sum(1 + (i * 211) % 500 for i in range(200))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kong_svf_drawn_sizes(seed):
    c = claims(kong_drawn(program(KONG, horizon=1e5, seed=seed)))["queueing_bound"]
    assert c["verdict"] == "holds" and bound(c["read"])


def test_kong_svf_long_outputs():
    p = program(KONG, horizon=1e5, sets={"N": "50", "s_max": "200", "o_max": "2000"})
    assert verdicts(p) == {"queueing_bound": "holds"}


@pytest.mark.parametrize("seed", [1, 2])
def test_kong_svf_poisson(seed):
    """Online arrivals, 200 of them at 0.05 per step: the bound still holds
    on these paths (the theorem does not promise it)."""
    p = with_workload(kong_drawn(program(KONG, horizon=1e5)), arrival=M.APoisson(0.05), arrivals=200,
                      seed=seed)
    assert verdicts(p) == {"queueing_bound": "holds"}


def test_kong_a_peak_above_p_is_out_of_scope():
    """Prompts up to 3 000 tokens: session 6's peak, 1 + 389 · 6 mod 3 000 =
    2 335 and 1 + 211 · 6 mod 500 = 267, passes P = 2 500 (sessions 0 to 5
    peak at most 2 500)."""
    c = claims(program(KONG, horizon=1e5, sets={"s_max": "3000"}))["queueing_bound"]
    assert c["verdict"] == "out_of_scope"
    assert (c["session"], c["time"], c["read"]) == (6, 0.0, {"s": 2335.0, "o": 267.0})


def test_kong_staggered_arrivals_break_the_bound():
    """Theorem 3.2 needs every request at time 0. Online, eight requests of
    peak P = 2 500 (s = 1, o = 2 499) arrive at 1, …, 8 and fill the 20 000
    tokens; eight of s = o = 1 arrive at 9, …, 16 and wait for the first to
    end at 2 500. Σ W = Σ (2 500 − a), a = 9 … 16, = 19 900, so the left side
    is 17 500 · 19 900 = 348 250 000; the right side is twice the pairs'
    smaller volume, 2 (28 · 3 126 249 + 64 · 2 + 28 · 2) = 175 070 312."""
    serial = attr(program(KONG), "serial")
    p = with_workload(program(KONG, horizon=1e5), arrival=M.ARenewal(num(1)), arrivals=16,
                      init={"s": num(1), "o": M.ECond(M.EBinary("Lt", serial, num(8)), num(2499), num(1))})
    c = claims(p)["queueing_bound"]
    assert (c["verdict"], c["time"]) == ("fails", 2507.0)
    r = c["read"]
    assert r == {"total(latency)": 8 * 2499 + 19900 + 8, "total(out)": 8 * 2499 + 8,
                 "prefix_total(vol)": 25010008 + 87535156, "total(vol)": 25010008}
    assert 17500 * (r["total(latency)"] - r["total(out)"]) == 348250000
    assert 2 * (r["prefix_total(vol)"] - r["total(vol)"]) == 175070312
    # the same requests all at time 0: SVF starts the small ones first
    q = with_workload(program(KONG, horizon=1e5), arrival=M.ABatch(16),
                      init={"s": num(1), "o": M.ECond(M.EBinary("Lt", serial, num(8)), num(2499), num(1))})
    assert verdicts(q) == {"queueing_bound": "holds"}
