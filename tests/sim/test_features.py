"""The rest of the pool and workload semantics, each on a small program with
a hand-computed answer."""

import csv
import os

import pytest

from serq.ir import model as M
from serq.sim import simulate

from builder import by_session, samples, A, Builder, now, query, sample, sessions

S = M.SLOT
LIFO = M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False)



def test_rejection_of_a_request_that_can_never_fit(tmp_path):
    """units 12 > cap 10, read from an attribute: rejected when the session
    joins the queue; the session ends (the turn is not answered) and the
    report counts it."""
    b = Builder()
    p = b.pool("p", cap=10)
    s = b.stage("s", M.KDelay())
    u = b.attr("u")
    b.session([b.turn(), b.hold([(p, A(u))], [b.run(s, 1)]), b.observe("done", now())])
    r = simulate(b.program(arrival=sessions({u: 12}, {u: 4}), horizon=10))
    d = r.data()
    assert d["pools"][0]["rejected"] == 1
    assert d["run"]["ended"] == 2
    assert by_session(r, tmp_path, "done") == {1: 1.0}
    assert d["client"]["response"]["count"] == 1


def test_rejection_by_reserve_after_block_rounding():
    """reserve 9 rounds up to 12 > cap 10 with block 4: rejected."""
    b = Builder()
    p = b.pool("p", cap=10, block=4)
    s = b.stage("s", M.KDelay())
    u = b.attr("u")
    b.session([b.turn(), b.hold([(p, 1, A(u))], [b.run(s, 1)])])
    d = simulate(b.program(arrival=sessions({u: 9}), horizon=10)).data()
    assert d["pools"][0]["rejected"] == 1


def test_state_dependent_demand_waits_and_is_over_cap():
    """units read the pool's state (used + 11): never rejected, the request
    waits, and the report names the head still asking more than the cap."""
    b = Builder()
    p = b.pool("p", cap=10)
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(p, query("Used", p) + 11)], [b.run(s, 1)])])
    r = simulate(b.program(arrival=sessions({}), horizon=10))
    d = r.data()
    assert d["pools"][0]["rejected"] == 0
    assert d["pools"][0]["over_cap"] == 1
    assert "over: pool p: the head of its queue (session 0) asks 11 > cap 10" in r.text()


def test_reserve_held():
    """reserve held: A holds 2 reserving 8 of 10; B (wants 3) must wait
    although 2 + 3 fits, since A's unallocated 6 stay reserved; A grows into
    its reservation (2 -> 8) and releases at 2: B is admitted at 2.  Without
    reserve held B is admitted at 0.5."""
    for held, want in ((True, 2.0), (False, 0.5)):
        b = Builder()
        p = b.pool("p", cap=10, reserve_held=held)
        s = b.stage("s", M.KDelay())
        role = b.attr("role")
        b.session([b.turn(), b.branch(A(role).eq(0), [
            b.hold([(p, 2, 8)], [b.run(s, 1), b.grow(p, 6), b.run(s, 1)]),
        ], [
            b.run(s, 0.5),
            b.hold([(p, 3)], [b.observe("admitted", now()), b.run(s, 1)]),
        ])])
        d = simulate(b.program(arrival=sessions({role: 0}, {role: 1}), horizon=10)).data()
        assert d["observes"]["admitted"]["mean"] == want


def test_grow_waits_under_preempt_none(tmp_path):
    """preempt none: a growth that does not fit waits (grow:) and resumes
    when another holder frees room."""
    b = Builder()
    p = b.pool("p", cap=10)
    s = b.stage("s", M.KDelay())
    role = b.attr("role")
    b.session([b.turn(), b.branch(A(role).eq(0), [
        b.hold([(p, 6)], [b.run(s, 3)]),
    ], [
        b.hold([(p, 2)], [b.run(s, 1), b.grow(p, 4), b.observe("grown", now())]),
    ])])
    r = simulate(b.program(arrival=sessions({role: 0}, {role: 1}), horizon=10))
    assert by_session(r, tmp_path, "grown") == {1: 3.0}


def test_growing_at_end_and_stuck():
    """A hold whose growth can never fit: under preempt none it waits to
    the end (growing_at_end); under preempt lifo on an engine it preempts
    itself at the same position again and again (stuck)."""
    b = Builder()
    p = b.pool("p", cap=10)
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(p, 2)], [b.run(s, 1), b.grow(p, 20)])])
    r = simulate(b.program(arrival=sessions({}), horizon=10))
    assert r.data()["run"]["waiting_to_grow"] == 1
    assert "grow: 1 hold still waiting to grow at p" in r.text()

    b = Builder()
    kv = b.pool("kv", cap=32, block=16, preempt=LIFO)
    e = b.step("e", 100, 1, memory=kv)
    b.session([b.turn(), b.hold([(kv, 16)], [b.run(e, 64, mode="Prefill", growing=kv)])])
    r = simulate(b.program(arrival=sessions({}), horizon=10))
    d = r.data()
    assert d["pools"][0]["stuck"] == 1
    assert r.stuck_sessions == 1
    assert d["pools"][0]["preemptions"] == 11  # one preempt-only step at each of 0, 1, …, 10
    assert ("stuck: 1 session preempted again without advancing past their previous preemption at pool kv: a "
            "preemption storm (vLLM's scheduler, when its KV cache cannot hold what the running requests grow to, "
            "preempts the last admitted and recomputes it, again and again); the run finished, and their stuck "
            "turns are not in its figures. To change: a lower load, fewer requests at once (vLLM's "
            "max_num_seqs), more KV blocks (num_gpu_blocks), shorter requests or another instance") \
        in r.text().splitlines()


def test_idle_engine_with_work():
    """An engine whose schedule only admits into an empty engine with a
    register that never resets: its queue waits and the report says so."""
    b = Builder()
    reqs = b.pool("reqs", cap=4)
    e = b.step("e", 100, 1)
    b.set_admit_via(reqs, e)
    gate = M.EBinary("Gt", M.ECtx("Ntok"), M.ENum(0))
    st = b.stages[e.base]
    b.stages[e.base] = M.Stage(st.name, st.index, M.KStep(
        st.kind.budget, st.kind.cost, st.kind.chunk, st.kind.serve, None, None,
        (M.IServe(None, None), M.IAdmit(None, gate))), st.loc)
    b.session([b.turn(), b.hold([(reqs, 1)], [b.run(e, 4, mode="Prefill")])])
    r = simulate(b.program(arrival=sessions({}), horizon=10))
    assert r.data()["run"]["idle_with_work"] == ["e"]
    assert "idle: engine e ended with work it did not schedule" in r.text()


def test_drop_discards_the_own_prefix():
    b = Builder()
    kv = b.pool("kv", cap=100)
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(kv, 10)], [b.run(s, 1)], cache=10),
               b.observe("before", query("CachedIn", kv)), b.drop(kv),
               b.observe("after", query("CachedIn", kv))])
    d = simulate(b.program(arrival=sessions({}), horizon=10)).data()
    assert d["observes"]["before"]["mean"] == 10.0
    assert d["observes"]["after"]["mean"] == 0.0


def test_end_keeps_the_cache():
    """end releases the holds but keeps the cached prefixes: a later session's
    admission finds them in the pool (and evicts them)."""
    b = Builder()
    kv = b.pool("kv", cap=100)
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(kv, 40)], [b.run(s, 1)], cache=40), b.end()])
    r = simulate(b.program(arrival=sessions({}, {}), horizon=10))
    d = r.data()["pools"][0]
    assert d["cached"] == pytest.approx((40 * 9 + 0) / 10 * 2)  # both cached from 1 to 10


def test_spill_writes_evicted_prefixes_to_a_tier(tmp_path):
    """kv (cap 10, block 2) spills what it evicts to host via link (work 2):
    A caches 8 at 1; B's 6 at 2 evicts two blocks of A's entry, whose 4
    units arrive in host's cache at 4."""
    b = Builder()
    host = b.pool("host", cap=100)
    link = b.stage("link", M.KDelay())
    s = b.stage("s", M.KDelay())
    spill = M.Spill(host, link, M.ENum(2.0), M.ENum(1.0))
    kv = b.pool("kv", cap=10, block=2, spill=spill)
    role = b.attr("role")
    b.session([b.turn(), b.branch(A(role).eq(0), [
        b.hold([(kv, 8)], [b.run(s, 1)], cache=8),
        b.run(s, 9),
        b.observe("host", query("CachedIn", host)),
        b.observe("kv", query("CachedIn", kv)),
    ], [
        b.run(s, 2),
        b.hold([(kv, 6)], [b.run(s, 1)]),
    ])])
    r = simulate(b.program(arrival=sessions({role: 0}, {role: 1}), horizon=20))
    d = r.data()
    assert d["pools"][1]["spills"] == 1
    assert by_session(r, tmp_path, "host") == {0: 4.0}
    assert by_session(r, tmp_path, "kv") == {0: 4.0}


def test_renewal_first_arrival_after_one_gap(tmp_path):
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.observe("arrived", now()), b.run(s, 1)])
    r = simulate(b.program(arrival=M.ARenewal(M.ENum(2.5)), horizon=10))
    assert [t for _, t, _ in samples(r, tmp_path, "arrived")] == [2.5, 5.0, 7.5, 10.0]


def test_poisson_first_arrival_at_zero():
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.observe("arrived", now()), b.run(s, 1)])
    d = simulate(b.program(arrival=M.APoisson(1.0), horizon=1000)).data()
    assert d["observes"]["arrived"]["count"] == pytest.approx(1000, rel=0.1)


def trace_program(path, ordered):
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.observe("new", A(S["new"])), b.run(s, 1),
               b.while_(A(S["more"]), [b.turn(), b.observe("new", A(S["new"])), b.run(s, 1)])])
    return b.program(arrival=M.ABatch(3), horizon=20, trace=path, trace_ordered=ordered)


def test_trace_ordered(tmp_path):
    """Session i replays trace session i modulo the corpus, its turns in
    order; more is 1 while another turn remains."""
    path = tmp_path / "t.csv"
    path.write_text("session,turn,new,out,think\n7,1,20,2,0\n7,0,10,2,0\n9,0,30,2,0\n")
    r = simulate(trace_program(str(path), True))
    got = sorted((s, t, v) for s, t, v in samples(r, tmp_path, "new"))
    assert got == [(0, 0.0, 10.0), (0, 1.0, 20.0), (1, 0.0, 30.0), (2, 0.0, 10.0), (2, 1.0, 20.0)]


def test_trace_unordered_samples_sessions(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("session,turn,new,out,think,forced\n0,0,10,2,0,1\n1,0,30,2,0,0\n")
    r = simulate(trace_program(str(path), False))
    got = [v for _, _, v in samples(r, tmp_path, "new")]
    assert len(got) == 3 and set(got) <= {10.0, 30.0}


def test_workload_streams_are_paired():
    """Two deployments on one seed see the same per-turn draws: the turn
    block's stream is (seed, session, turn), whatever the deployment does."""
    def prog(work):
        b = Builder()
        s = b.stage("s", M.KFifo(1))
        x = b.attr("x")
        b.turn_items([b.set(x, sample("Uniform", 0, 1))])
        b.session([b.turn(), b.observe("x", A(x)), b.run(s, work), b.turn(), b.observe("x", A(x)),
                   b.run(s, work)])
        return b.program(arrival=M.APoisson(1.0), horizon=50, seed=3)

    def xs(work, tmp):
        r = simulate(prog(work))
        r.dump(tmp)
        with open(os.path.join(tmp, "x.csv")) as f:
            return sorted((int(r_["session"]), int(r_["turn"]), r_["value"]) for r_ in csv.DictReader(f))
    import tempfile
    a = xs(0.1, tempfile.mkdtemp())
    b_ = xs(3.0, tempfile.mkdtemp())
    common = {(s, t) for s, t, _ in a} & {(s, t) for s, t, _ in b_}
    assert len(common) > 20
    da = {(s, t): v for s, t, v in a}
    db = {(s, t): v for s, t, v in b_}
    assert all(da[k] == db[k] for k in common)


def test_closed_arrivals_replace_ended_sessions():
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1), b.end()])
    d = simulate(b.program(arrival=M.AClosed(3), horizon=10)).data()
    assert d["run"]["arrivals"] == 33 and d["run"]["ended"] == 30
    assert d["run"]["live"] == pytest.approx(3.0)


def test_gauge_and_claims():
    """A gauge is the time average of a function of the state; claims over
    iterations hold or fail at an iteration; a claim at end reads totals."""
    b = Builder()
    p = b.pool("p", cap=10)
    e = b.step("e", 4, 1)
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(p, 5)], [b.run(s, 2)]), b.run(e, 8, mode="Prefill"),
               b.observe("done", now())])
    b.gauges = [M.Gauge("used", M.EQuery("Used", p))]
    b.claims = [
        M.Claim("full", M.CEvery(e.base), M.EBinary("Eq", M.ECtx("Ntok"), M.ENum(4))),
        M.Claim("small", M.CSome(e.base), M.EBinary("Lt", M.ECtx("Ntok"), M.ENum(4))),
        M.Claim("total", M.CAtEnd(), M.EBinary("Eq", M.EAgg("Total", 0), M.ENum(4))),
    ]
    r = simulate(b.program(arrival=sessions({}), horizon=10))
    d = r.data()
    assert d["gauges"]["used"]["mean"] == pytest.approx(5 * 2 / 10)
    assert d["gauges"]["used"]["max"] == 5.0 and d["gauges"]["used"]["min"] == 0.0
    claims = {c["name"]: c for c in d["claims"]}
    assert claims["full"] == {"name": "full", "form": "every iteration", "stage": "e", "verdict": "holds",
                              "time": None, "iteration": None, "iterations": 2, "session": None, "read": None}
    assert claims["small"]["verdict"] == "not_witnessed"
    assert claims["total"]["verdict"] == "holds"
    assert "full   every iteration of e  holds" in r.text()


def test_online_estimates_and_price():
    """est_lambda, est_rho, est_wait of an M/M/1 at ρ = 0.5 (measured from the
    start of the run) and price(), the miss price with those estimates."""
    from builder import X, exp
    b = Builder()
    svc = b.stage("svc", M.KFifo(1))
    b.session([b.turn(), b.run(svc, exp(1.0)),
               b.observe("lam", X(M.EQuery("EstLambda", svc))),
               b.observe("rho", X(M.EQuery("EstRho", svc))),
               b.observe("w", X(M.EQuery("EstWait", svc))),
               b.observe("price", X(M.EPrice(svc, M.ENum(1.0), M.ENum(0.5))))])
    d = simulate(b.program(arrival=M.APoisson(0.5), horizon=40_000, warmup=30_000, seed=2)).data()
    o = {k: v["mean"] for k, v in d["observes"].items()}
    assert o["lam"] == pytest.approx(0.5, rel=0.05)
    assert o["rho"] == pytest.approx(0.5, rel=0.05)
    assert o["w"] == pytest.approx(1.0, rel=0.1)     # M/M/1 wait ρ/(μ - λ) = 1
    lam, rho, w = o["lam"], o["rho"], o["w"]
    want = 0.5 + lam * (1.5 ** 2 - 1.0) / (2 * (1 - rho)) + lam * w * 0.5 / (1 - rho)
    assert o["price"] == pytest.approx(want, rel=0.02)
