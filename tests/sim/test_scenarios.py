"""Deterministic scenarios with hand-computed answers.

Each builds a small program as IR and checks the times and values it
records against the ones worked out by hand in its docstring.
"""


import pytest

from serq.ir import model as M
from serq.sim import simulate

from builder import by_session, samples, A, Builder, N, cond, fmin, now, query, sessions

S = M.SLOT
LIFO = M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False)



# ---------------------------------------------------------------------------
def test_head_of_line_blocking(tmp_path):
    """cap 10, fifo.  A (0) holds 8 until 5; B (arrives 1) wants 5 and waits;
    C (arrives 2) wants 2, which would fit beside A, but B, the head, blocks
    it: B and C are admitted at 5, when A releases."""
    b = Builder()
    p = b.pool("p", cap=10)
    gate = b.stage("gate", M.KDelay())
    work = b.stage("work", M.KDelay())
    u, arr, dur = b.attr("u"), b.attr("arr"), b.attr("dur")
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.hold([(p, A(u))], [b.observe("admitted", now()), b.run(work, A(dur))]),
    ])
    prog = b.program(arrival=sessions({u: 8, arr: 0, dur: 5}, {u: 5, arr: 1, dur: 1}, {u: 2, arr: 2, dur: 1}),
                     horizon=20)
    r = simulate(prog)
    assert by_session(r, tmp_path, "admitted") == {0: 0.0, 1: 5.0, 2: 5.0}
    pool = r.data()["pools"][0]
    assert pool["admissions"] == 3
    assert pool["wait"] == pytest.approx(((5 - 1) + (5 - 2)) / 3)


def test_queue_by_keys_and_head_blocking(tmp_path):
    """queue by (u): the smallest request is chosen, and if it does not fit
    it blocks the rest.  A holds 6 of 10 until 5; B (u 5) and C (u 3) wait;
    at 5 C (smaller) is admitted first, then B: both at 5.  D (u 1) arrives
    at 2 and is chosen first then (it fits beside A): admitted at 2."""
    b = Builder()
    u, arr, dur = b.attr("u"), b.attr("arr"), b.attr("dur")
    p = b.pool("p", cap=10, queue=[A(u)])
    gate = b.stage("gate", M.KDelay())
    work = b.stage("work", M.KDelay())
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.hold([(p, A(u))], [b.observe("admitted", now()), b.run(work, A(dur))]),
    ])
    prog = b.program(arrival=sessions({u: 6, arr: 0, dur: 5}, {u: 5, arr: 1, dur: 1}, {u: 3, arr: 1, dur: 1},
                                      {u: 1, arr: 2, dur: 1}), horizon=20)
    r = simulate(prog)
    # at 1: B and C wait, C is chosen (3) and fits beside A (6 + 3 <= 10)
    assert by_session(r, tmp_path, "admitted") == {0: 0.0, 2: 1.0, 3: 2.0, 1: 5.0}


# ---------------------------------------------------------------------------
def resume_program():
    """Two vLLM-like requests (prompt 8, 10 output tokens) on 6 blocks of 4,
    budget 100, preempt lifo; the re-executed hold reads `computed`."""
    b = Builder()
    kv = b.pool("kv", cap=24, block=4, preempt=LIFO)
    reqs = b.pool("reqs", cap=16)
    e = b.step("e", 100, 1, memory=kv)
    b.set_admit_via(reqs, e)
    prompt, o, known = b.attr("prompt"), b.attr("o"), b.attr("known")
    computed = A(S["computed"])
    known_e = cond(computed < A(prompt), A(prompt), computed + 1)
    b.session([
        b.turn(),
        b.hold([(reqs, 1), (kv, fmin(known_e, query("BudgetLeft", e)), known_e)], [
            b.set(known, known_e),
            b.observe("known", A(known)),
            b.run(e, A(known), mode="Prefill", growing=kv),
            b.run(e, A(o) - 1 - (A(known) - A(prompt)), mode="Decode", growing=kv),
        ]),
        b.observe("done", now()),
    ])
    return b.program(arrival=sessions({prompt: 8, o: 10}, {prompt: 8, o: 10}), horizon=50)


def test_preemption_and_resume_through_computed(tmp_path):
    """t=0 both prefill 8 (2 blocks each); t=1..4 both decode to position 12
    (3 blocks each, 24 = cap); at t=5 r0 needs a 4th block: the victim is r1
    (admitted last, not yet served), preempted at position 12: computed = 12.
    r1 cannot re-enter (it reserves known = 13 -> 16 beside r0's 16) until
    r0 ends at 10 (9 decode tokens from t=1).  Re-executed at 10 it prefills
    known = 13 (first token at 11) and decodes only o - 1 - (13 - 8) = 4
    tokens: done at 15.  Client view of r1: ttft 1; its 9 tokens after the
    first (4 decodes, the resumed prefill's token, 4 decodes) over 15 - 1."""
    r = simulate(resume_program())
    assert by_session(r, tmp_path, "done") == {0: 10.0, 1: 15.0}
    knowns = [(s, v) for s, _, v in samples(r, tmp_path, "known")]
    assert knowns == [(0, 8.0), (1, 8.0), (1, 13.0)]
    d = r.data()
    assert d["pools"][0]["preemptions"] == 1
    assert d["pools"][0]["stuck"] == 0
    c = d["client"]
    assert c["ttft"]["count"] == 2 and c["ttft"]["mean"] == 1.0
    assert c["tpot"]["count"] == 2
    assert c["tpot"]["mean"] == pytest.approx(((10 - 1) / 9 + (15 - 1) / 9) / 2)
    assert c["response"]["mean"] == pytest.approx(12.5)


# ---------------------------------------------------------------------------
def test_eviction_order_with_ties(tmp_path):
    """cap 10, block 2, lru.  B (serial 1, arrives 0, runs 1) and A (serial 0,
    arrives 0.5, runs 0.5) both release 4 units cached at t=1; B's completion
    was scheduled first, so B released first.  At 2, C holds 4 (no cache):
    8 cached + 4 > 10, so one block goes, from the tail of the entry released
    first (B), not from A's (the tie falls to release order, not to the
    session number).  At 3 A and B read their own cache: 4 and 2."""
    b = Builder()
    kv = b.pool("kv", cap=10, block=2)
    gate = b.stage("gate", M.KDelay())
    work = b.stage("work", M.KDelay())
    role, arr, dur = b.attr("role"), b.attr("arr"), b.attr("dur")
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.branch(A(role).eq(1), [
            b.hold([(kv, 4)], [b.run(work, A(dur))], cache=4),
            b.run(gate, N(3) - now()),
            b.observe("mine", query("CachedIn", kv)),
        ], [
            b.hold([(kv, 4)], [b.run(work, 5)]),
        ]),
    ])
    prog = b.program(arrival=sessions({role: 1, arr: 0.5, dur: 0.5}, {role: 1, arr: 0, dur: 1},
                                      {role: 0, arr: 2, dur: 0}), horizon=20)
    r = simulate(prog)
    assert by_session(r, tmp_path, "mine") == {0: 4.0, 1: 2.0}
    pool = r.data()["pools"][0]
    assert pool["evicted"] == 2.0
    assert pool["evictions"] == 0


def test_eviction_by_keys(tmp_path):
    """evict by (-size): the largest entry goes first, block by block, the
    keys read again after every block (then release order)."""
    b = Builder()
    kv = b.pool("kv", cap=12, block=2, evict=M.EvictBy((M.EUnary("Neg", M.ECtx("Size")),)))
    work = b.stage("work", M.KDelay())
    gate = b.stage("gate", M.KDelay())
    u, arr = b.attr("u"), b.attr("arr")
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.branch(A(u) < 10, [
            b.hold([(kv, A(u))], [b.run(work, 1)], cache=A(u)),
            b.run(gate, N(5) - now()),
            b.observe("mine", query("CachedIn", kv)),
        ], [b.hold([(kv, 8)], [b.run(work, 1)])]),
    ])
    # 2, 6 and 4 cached at 1, released in that order (12 in all); at 2 a
    # hold of 8 evicts 8 units, a block at a time, the largest entry first:
    # 6 -> 4; then 4 and 4 tie, the one released first (s1) -> 2; s2 -> 2;
    # then 2, 2, 2 tie, the one released first (s0) -> 0
    prog = b.program(arrival=sessions({u: 2, arr: 0}, {u: 6, arr: 0}, {u: 4, arr: 0}, {u: 10, arr: 2}),
                     horizon=20)
    r = simulate(prog)
    d = r.data()
    assert d["pools"][0]["evicted"] == 8.0
    assert d["pools"][0]["evictions"] == 1
    assert by_session(r, tmp_path, "mine") == {0: 0.0, 1: 2.0, 2: 2.0}


def test_prefix_hit_on_the_next_turn(tmp_path):
    """Block 16.  Turn 1 holds 100 and caches 100: 96 (six blocks) stay.
    Turn 2 holds 150 with reuse (100): it consumes min(100, 96) = 96 of its
    own prefix, `cached` = 96, and allocates 150 -> 160."""
    b = Builder()
    kv = b.pool("kv", cap=1000, block=16)
    work = b.stage("work", M.KDelay())
    b.session([
        b.turn(),
        b.hold([(kv, 100)], [b.observe("cached", A(S["cached"])), b.run(work, 1)], reuse=100, cache=100),
        b.turn(),
        b.hold([(kv, 150)], [b.observe("cached", A(S["cached"])), b.observe("used", query("Used", kv)),
                             b.run(work, 1)], reuse=100, cache=150),
    ])
    r = simulate(b.program(arrival=sessions({}), horizon=10))
    vals = [v for _, _, v in samples(r, tmp_path, "cached")]
    assert vals == [0.0, 96.0]
    assert [v for _, _, v in samples(r, tmp_path, "used")] == [160.0]


def test_hold_without_cache_leaves_the_prefix():
    """A hold without `cache` consumes nothing and reads cached as 0."""
    b = Builder()
    kv = b.pool("kv", cap=1000, block=16)
    work = b.stage("work", M.KDelay())
    b.session([
        b.turn(),
        b.hold([(kv, 64)], [b.run(work, 1)], cache=64),
        b.hold([(kv, 32)], [b.observe("cached", A(S["cached"])),
                            b.observe("mine", query("CachedIn", kv)), b.run(work, 1)]),
    ])
    d = simulate(b.program(arrival=sessions({}), horizon=10)).data()
    assert d["observes"]["cached"]["mean"] == 0.0
    assert d["observes"]["mine"]["mean"] == 64.0


# ---------------------------------------------------------------------------
def test_lease_expires(tmp_path):
    """A holds 10 of 10, runs 1 and leases the pool for 5 more: B (arrives
    0.5, wants 10) is admitted when the lease expires, at 6; the lease caches
    per the hold's clause then."""
    b = Builder()
    p = b.pool("p", cap=10)
    gate = b.stage("gate", M.KDelay())
    work = b.stage("work", M.KDelay())
    arr = b.attr("arr")
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.hold([(p, 10)], [b.observe("admitted", now()), b.run(work, 1)], cache=10, lease=(p, 5)),
        b.run(gate, 20),
    ])
    r = simulate(b.program(arrival=sessions({arr: 0}, {arr: 0.5}), horizon=40))
    assert by_session(r, tmp_path, "admitted") == {0: 0.0, 1: 6.0}


def test_release_ends_a_lease(tmp_path):
    """A releases its lease at 3 (its session's `release p` outside the hold):
    B is admitted at 3."""
    b = Builder()
    p = b.pool("p", cap=10)
    gate = b.stage("gate", M.KDelay())
    work = b.stage("work", M.KDelay())
    arr = b.attr("arr")
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.hold([(p, 10)], [b.observe("admitted", now()), b.run(work, 1)], lease=(p, 100)),
        b.run(work, 2),
        b.release(p),
        b.run(gate, 20),
    ])
    r = simulate(b.program(arrival=sessions({arr: 0}, {arr: 0.5}), horizon=40))
    assert by_session(r, tmp_path, "admitted") == {0: 0.0, 1: 3.0}


# ---------------------------------------------------------------------------
def test_fork_join(tmp_path):
    """Two legs run 2 and 5 beside the session, which runs 1 then joins: it
    goes on at 5.  Each leg sets its own copy: the session reads x as 0."""
    b = Builder()
    work = b.stage("work", M.KDelay())
    x = b.attr("x")
    b.session([
        b.turn(),
        b.fork([b.set(x, 7), b.run(work, 2), b.observe("leg", now())]),
        b.fork([b.run(work, 5), b.observe("leg", now())]),
        b.run(work, 1),
        b.join(),
        b.observe("joined", now()),
        b.observe("x", A(x)),
    ])
    r = simulate(b.program(arrival=sessions({}), horizon=20))
    assert sorted(v for _, _, v in samples(r, tmp_path, "leg")) == [2.0, 5.0]
    assert [v for _, _, v in samples(r, tmp_path, "joined")] == [5.0]
    assert [v for _, _, v in samples(r, tmp_path, "x")] == [0.0]
    assert r.data()["client"]["response"]["mean"] == 5.0


def test_leg_lease_passes_to_the_session(tmp_path):
    """A leg leases p; when the leg ends the lease is the session's, whose
    `release p` gives it back (at 4): B is admitted at 4."""
    b = Builder()
    p = b.pool("p", cap=1)
    gate = b.stage("gate", M.KDelay())
    work = b.stage("work", M.KDelay())
    role = b.attr("role")
    b.session([
        b.turn(),
        b.branch(A(role).eq(0), [
            b.fork([b.hold([(p, 1)], [b.run(work, 1)], lease=(p, 100))]),
            b.join(),
            b.run(work, 3),
            b.release(p),
            b.run(gate, 10),
        ], [
            b.run(gate, 0.5),
            b.hold([(p, 1)], [b.observe("admitted", now())]),
        ]),
    ])
    r = simulate(b.program(arrival=sessions({role: 0}, {role: 1}), horizon=40))
    assert by_session(r, tmp_path, "admitted") == {1: 4.0}


# ---------------------------------------------------------------------------
def engine_requests(b, e, specs, reqs=None):
    """Sessions that wait `arr`, then (in a reqs hold if given) prefill p and
    decode d on engine e, observing done."""
    p_, d_, arr = b.attr("p"), b.attr("d"), b.attr("arr")
    gate = b.stage("gate", M.KDelay())
    body = [b.run(e, A(p_), mode="Prefill"), b.run(e, A(d_), mode="Decode")]
    if reqs is not None:
        body = [b.hold([(reqs, 1)], body)]
    b.session([b.run(gate, A(arr), side="client"), b.turn()] + body + [b.observe("done", now())])
    return sessions(*[{p_: p, d_: d, arr: a} for p, d, a in specs])


def test_exclusive_prefill(tmp_path):
    """A (p2 d2) at 0, B (p4) at 1, budget 4.  Exclusive: t0 A p2; t1 A's
    tentative decode is displaced by B's prefill, which takes the full
    budget (p4); t2, t3 A d1.  B done 2, A done 4.  In admission order the
    same requests mix: t1 A d1 + B p3, t2 A d1 + B p1: both done 3."""
    for exclusive, want in ((True, {1: 2.0, 0: 4.0}), (False, {0: 3.0, 1: 3.0})):
        b = Builder()
        reqs = b.pool("reqs", cap=4)
        e = b.step("e", 4, 1, exclusive=exclusive)
        b.set_admit_via(reqs, e)
        arrival = engine_requests(b, e, [(2, 2, 0), (4, 0, 1)], reqs)
        r = simulate(b.program(arrival=arrival, horizon=20))
        assert by_session(r, tmp_path, "done") == want


def test_serve_by_remaining(tmp_path):
    """Budget 1: two decodes A (5) and B (2) at 0.  Admission order serves A
    first (A 5, B 7); by (remaining) serves B first (B 2, A 7); by
    (-remaining) serves the longer: A at 0..3 (5 -> 1), B at 4 (2 -> 1), A at
    5 (a tie, to admission order: A done 6), B at 6 (done 7)."""
    rem = M.ECtx("Remaining")
    for keys, want in (((), {0: 5.0, 1: 7.0}), ((rem,), {1: 2.0, 0: 7.0}),
                       ((M.EUnary("Neg", rem),), {0: 6.0, 1: 7.0})):
        b = Builder()
        e = b.stage("e", M.KStep(M.ENum(1), M.ENum(1), M.ENum(0), M.ServeBy(keys), None))
        arrival = engine_requests(b, e, [(0, 5, 0), (0, 2, 0)])
        r = simulate(b.program(arrival=arrival, horizon=20))
        assert by_session(r, tmp_path, "done") == want


def test_granule(tmp_path):
    """Budget 7, granule 4.  At 0 r0 prefills 5 (all it has); r1's 10 would
    get the 2 left, which rounds down to 0: passed over, and nobody is
    admitted after it (r2 waits although 2 tokens are left).  At 1 r1 gets
    4 (7 rounded down to the granule), then r2 is admitted and prefills its
    1; at 2 r1's last 6 fit the budget whole."""
    b = Builder()
    reqs = b.pool("reqs", cap=4)
    e = b.step("e", 7, 1, granule=4.0)
    b.set_admit_via(reqs, e)
    arrival = engine_requests(b, e, [(5, 0, 0), (10, 0, 0), (1, 0, 0)], reqs)
    r = simulate(b.program(arrival=arrival, horizon=20))
    done = by_session(r, tmp_path, "done")
    assert done == {0: 1.0, 2: 2.0, 1: 3.0}


def test_only_predicate(tmp_path):
    """FasterTransformer's phases: only (running.decoding > 0 ? decoding :
    !decoding) on both statements.  A (p2 d3) at 0, B (p2 d1) at 1: B is
    admitted at 1 but excluded while A decodes (t1..t3, A done 4); B
    prefills at 4 and decodes at 5: done 6."""
    p = M.ECond(M.EBinary("Gt", M.ECtx("Ndec"), M.ENum(0)), M.ECtx("Decoding"),
                M.EUnary("Not", M.ECtx("Decoding")))
    gate = M.EBinary("Eq", M.ECtx("Preempted"), M.ENum(0))
    b = Builder()
    reqs = b.pool("reqs", cap=4)
    e = b.step("e", 100, 1, iteration=(M.IServe(p, None), M.IAdmit(p, gate)))
    b.set_admit_via(reqs, e)
    arrival = engine_requests(b, e, [(2, 3, 0), (2, 1, 1)], reqs)
    r = simulate(b.program(arrival=arrival, horizon=20))
    assert by_session(r, tmp_path, "done") == {0: 4.0, 1: 6.0}


def test_register_gates_admission(tmp_path):
    """TGI's rule: state just = 0; advance running; branch (just == 0 ||
    running.count == 0) { admit waiting; } set just = waiting.admitted > 0.
    r0 (p1 d3) at 0, r1 at 0.5, r2 at 1.5: t0 admits r0 (just 1); t1 no
    admission (just 0); t2 admits r1 and r2 (just 1); r0 done 4, r1, r2 done
    6.  Without the rule r1 is admitted at 1 and done at 5."""
    b = Builder()
    reqs = b.pool("reqs", cap=8)
    e = b.step("e", 100, 1)
    b.set_admit_via(reqs, e)
    just = b.register("just", e, 0)
    guard = M.EBinary("Or", M.EBinary("Eq", M.EReg(just), M.ENum(0)),
                      M.EBinary("Eq", M.ECtx("Nres"), M.ENum(0)))
    body = (M.IServe(None, None), M.IBranch(guard, (M.IAdmit(None, None),), ()),
            M.ISet(just, M.EBinary("Gt", M.ECtx("Admitted"), M.ENum(0))))
    st = b.stages[e.base]
    b.stages[e.base] = M.Stage(st.name, st.index, M.KStep(st.kind.budget, st.kind.cost, st.kind.chunk,
                                                           st.kind.serve, None, None, body), st.loc)
    arrival = engine_requests(b, e, [(1, 3, 0), (1, 3, 0.5), (1, 3, 1.5)], reqs)
    r = simulate(b.program(arrival=arrival, horizon=20))
    assert by_session(r, tmp_path, "done") == {0: 4.0, 1: 6.0, 2: 6.0}


# ---------------------------------------------------------------------------
@pytest.mark.parametrize("share,want", [("MaxMin", 1 + 1 / 3), ("Bottleneck", 1.5)])
def test_flows_share(share, want, tmp_path):
    """egress ps(3), ingress ps(1); f1 holds both (work 1), f2 egress alone
    (work 3).  maxmin: f1 stops at ingress's 1, f2 takes egress's other 2;
    f1 ends at 1, f2 then runs at 3: done at 1 + 1/3.  bottleneck: f2 gets
    its equal share 1.5 of egress, unused capacity left unused: done at 1.5."""
    b = Builder()
    eg = b.stage("egress", M.KPs(M.ENum(3.0)))
    ing = b.stage("ingress", M.KPs(M.ENum(1.0)))
    role = b.attr("role")
    b.session([
        b.turn(),
        b.branch(A(role).eq(0), [b.run(eg, 1, also=(ing,))], [b.run(eg, 3)]),
        b.observe("done", now()),
    ])
    r = simulate(b.program(arrival=sessions({role: 0}, {role: 1}), horizon=20, share=share))
    done = by_session(r, tmp_path, "done")
    assert done[0] == pytest.approx(1.0)
    assert done[1] == pytest.approx(want)


def test_ps_insensitive_two_jobs(tmp_path):
    """ps(1): jobs of 1 and 3 at 0 share the server: the first ends at 2, the
    second at 4."""
    b = Builder()
    s = b.stage("s", M.KPs(M.ENum(1.0)))
    w = b.attr("w")
    b.session([b.turn(), b.run(s, A(w)), b.observe("done", now())])
    r = simulate(b.program(arrival=sessions({w: 1}, {w: 3}), horizon=20))
    assert by_session(r, tmp_path, "done") == {0: 2.0, 1: 4.0}


def test_choose_smallest_key_then_index(tmp_path):
    """choose j in 3 by (work(s[j])): the emptiest member, ties to the
    smallest index."""
    b = Builder()
    s = b.stage("s", M.KFifo(1), count=3)
    j = b.attr("j")
    arr = b.attr("arr")
    gate = b.stage("gate", M.KDelay())
    idx = M.EAttr(j)
    b.session([
        b.run(gate, A(arr), side="client"), b.turn(),
        b.choose(j, 3, [query("Work", M.Ref(s.base, 3, idx))]),
        b.observe("j", A(j)),
        b.run(s, 10, index=A(j)),
    ])
    r = simulate(b.program(arrival=sessions({arr: 0}, {arr: 1}, {arr: 2}, {arr: 3}), horizon=40))
    assert [v for _, _, v in samples(r, tmp_path, "j")] == [0.0, 1.0, 2.0, 0.0]
