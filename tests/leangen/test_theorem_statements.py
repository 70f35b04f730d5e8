"""The statements of the hand-written theorems (lean/Serq/Thm/), tested on
many instances in Python.  Not a proof (the Lean files have never been
compiled here, lean/README.md): a check that what the proofs claim is true
of the definitions as transcribed, so a false statement shows up here first.

Serve.lean's model is mirrored line for line below; Memory.lean's commands
are built from `exec_ref`'s own pool functions, as the Lean ones are from
`Exec`'s."""

from dataclasses import dataclass, replace

from hypothesis import given, settings, strategies as st

from leangen import exec_ref as X
from leangen.lterms import Entry, PoolSt

# ---------------------------------------------------------------- Serve.lean


@dataclass(frozen=True)
class Req:
    id: int
    decode: bool
    rem: int


def capTo(chunk, n):
    return n if chunk == 0 else (n if n <= chunk else chunk)


def take1(chunk, left, r):
    if r.decode:
        return 1 if 0 < left else 0
    c = capTo(chunk, r.rem)
    return c if c <= left else left


def serve(chunk, left, rs):
    if not rs:
        return []
    t = take1(chunk, left, rs[0])
    return [(rs[0].id, t)] + serve(chunk, X._sub(left, t), rs[1:])


def decodeFirst(rs):
    return [r for r in rs if r.decode] + [r for r in rs if not r.decode]


def step1(r, t):
    if r.decode:
        return r
    if r.rem <= t:
        return replace(r, decode=True, rem=0)
    return replace(r, rem=r.rem - t)


def after(rs, ts):
    if not rs:
        return []
    if not ts:
        return rs
    return [step1(rs[0], ts[0][1])] + after(rs[1:], ts[1:])


def allPrefill(rs):
    return all((not r.decode) and 0 < r.rem for r in rs)


def shaped(rs):
    if not rs:
        return True
    r = rs[0]
    if r.decode:
        return shaped(rs[1:])
    return 0 < r.rem and allPrefill(rs[1:])


reqs = st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=8).map(
    lambda xs: [Req(i, d, n) for i, (d, n) in enumerate(xs)])
prefills = st.lists(st.integers(1, 30), max_size=4)


@settings(max_examples=400, deadline=None)
@given(reqs, st.integers(0, 80))
def test_serve_eq_decode_first(rs, left):
    if shaped(rs):
        assert decodeFirst(rs) == rs
        assert serve(0, left, decodeFirst(rs)) == serve(0, left, rs)


@settings(max_examples=400, deadline=None)
@given(reqs, st.integers(0, 80))
def test_shaped_after(rs, left):
    if shaped(rs):
        assert shaped(after(rs, serve(0, left, rs)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), prefills), max_size=10))
def test_shaped_run(its):
    l, k = [], 100
    for left, news in its:
        n = [Req(k + i, False, x) for i, x in enumerate(news)]
        k += len(n)
        assert shaped(l + n)
        l = after(l + n, serve(0, left, l + n))
        assert serve(0, left, decodeFirst(l)) == serve(0, left, l)


def test_chunk_cap_breaks_shape():
    ex = [Req(0, False, 8), Req(1, False, 2)]
    cap_after = after(ex, serve(4, 10, ex))
    assert [r.decode for r in ex] == [False, False] and shaped(ex)
    assert cap_after == [Req(0, False, 4), Req(1, True, 0)] and not shaped(cap_after)
    assert serve(4, 1, cap_after) == [(0, 1), (1, 0)]
    assert serve(4, 1, decodeFirst(cap_after)) == [(1, 1), (0, 0)]


# ---------------------------------------------------------------- Memory.lean


def inv(cap, ps):
    return ps.used + X.cachedTotal(ps.cache) <= cap


def apply(cap, b, ps, c):
    """Memory.lean's Cmd.apply."""
    k = c[0]
    if k == "enqueue":
        return replace(ps, queue=ps.queue + [c[1]])
    if k == "requeue":
        return replace(ps, queue=[c[1]] + ps.queue)
    if k == "dequeue":
        return replace(ps, queue=X.removeQ(c[1], ps.queue))
    if k == "take":
        _, s, took, need = c
        if took <= X.ownUnits(ps.cache, s) and (ps.used + need <= cap or need <= took):
            return X.poolAlloc(cap, b, need, replace(ps, cache=X.killOwn(ps.cache, s, took)))
        return ps
    if k == "grow":
        return X.poolAlloc(cap, b, c[1], ps) if ps.used + c[1] <= cap else ps
    if k == "release":
        _, units, keep, s, t, o = c
        return X.poolRelease(units, keep, s, t, o, ps) if units <= ps.used and keep <= units else ps
    return replace(ps, cache=X.evictOne(b, ps.cache))  # evict


owners = st.one_of(st.just(("none",)), st.integers(0, 3).map(lambda s: ("some", s)))
entries = st.lists(st.builds(Entry, owners, st.integers(0, 12), st.integers(0, 5), st.integers(0, 50)),
                   max_size=6)
cmds = st.one_of(
    st.tuples(st.just("enqueue"), st.integers(0, 3)),
    st.tuples(st.just("requeue"), st.integers(0, 3)),
    st.tuples(st.just("dequeue"), st.integers(0, 3)),
    st.tuples(st.just("take"), st.integers(0, 3), st.integers(0, 12), st.integers(0, 40)),
    st.tuples(st.just("grow"), st.integers(0, 40)),
    st.tuples(st.just("release"), st.integers(0, 40), st.integers(0, 40), st.integers(0, 3), st.integers(0, 9),
              st.integers(0, 9)),
    st.tuples(st.just("evict")),
)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 80), st.integers(0, 6), st.integers(0, 40), entries, st.lists(cmds, max_size=12))
def test_invariant(cap, b, used, cache, cs):
    ps = PoolSt(used, cache, [])
    if not inv(cap, ps):
        return
    for c in cs:
        ps = apply(cap, b, ps, c)
        assert inv(cap, ps), c


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 80), st.integers(0, 6), st.integers(0, 40), st.integers(0, 40), entries)
def test_makeRoom_fits(cap, b, used, need, cache):
    ps = PoolSt(used, cache, [])
    if used + need > cap:
        return
    r = X.makeRoom(X.evictable(cache) + 1, cap, b, need, ps)
    assert r.used == used
    assert r.used + X.cachedTotal(r.cache) + need <= cap
    assert X.cachedTotal(r.cache) <= X.cachedTotal(cache)


@settings(max_examples=400, deadline=None)
@given(entries, st.integers(0, 3), st.integers(0, 12))
def test_killOwn_total(cache, s, k):
    if k <= X.ownUnits(cache, s):
        assert X.cachedTotal(X.killOwn(cache, s, k)) + k == X.cachedTotal(cache)


@settings(max_examples=200, deadline=None)
@given(entries, st.integers(0, 6))
def test_evictOne_takes_something(cache, b):
    if cache:
        assert X.evictable(X.evictOne(b, cache)) < X.evictable(cache)


# ---------------------------------------------------------------- Batch.lean


def dem(j):
    return min(1, j.rem) if j.decode else j.rem


def demandS(m, ss):
    total = 0
    for s in ss:
        r = X.jobOf(m.residents, s)
        total += dem(r[1]) if r[0] == "some" else 0
    return total


def plain_program(keys=()):
    from leangen.lterms import Engine, Program
    return Program(1, 0, [], Engine(("num", 8), ("num", 0), ("none",), ("num", 1), list(keys), ("none",), False,
                                    ("none",)), [[]], ("none",), 0, [])


jobs = st.lists(st.tuples(st.integers(0, 6), st.booleans(), st.integers(0, 9)), max_size=7)


@settings(max_examples=400, deadline=None)
@given(jobs, st.integers(0, 25), st.lists(st.integers(0, 8), max_size=8), st.lists(st.tuples(st.integers(7, 9),
                                                                                           st.integers(0, 5)),
                                                                                 max_size=3))
def test_serveAll_plain(js, left, order, served):
    """Serve any fresh list of sessions (residents or not), none served yet:
    the machine is unchanged and the batch gains min(left, demandS)."""
    from leangen.lterms import Job, Machine, Plan
    residents = [Job(s, d, r, ("none",), i, r) for i, (s, d, r) in enumerate(js)]
    ss = list(dict.fromkeys(order))                     # Fresh
    m = Machine(0, [], [], residents, False, False, [], 0, 1, [], [], 0, 0, [])
    pl = Plan(left, 0, list(served), False, False, 0)
    if any(X.batchOf(pl.batch, s) != 0 for s in ss):
        return
    m1, pl1 = X.serveAll(10, plain_program(), m, pl, ss)
    assert m1 == m
    assert X.batchSum(pl1.batch) == X.batchSum(pl.batch) + min(left, demandS(m, ss))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 25), st.builds(lambda d, r: (d, r), st.booleans(), st.integers(0, 30)))
def test_want_chunk0(left, dr):
    from leangen.lterms import Job, Plan
    j = Job(0, dr[0], dr[1], ("none",), 0, dr[1])
    assert X.want(Plan(left, 0, [], False, False, 0), j) == min(dem(j), left)


# ---------------------------------------------------------------- ClaimProofs.lean


def test_the_rate_lemmas_on_every_batch():
    """`dai_batch_rate` and `bari_batch_rate` for every b ≤ 128 (and the
    costs the programs' terms evaluate to, `sarathi_cost`, `bari_cost`)."""
    import os
    from serq.ir import read
    from leangen.fragment import translate
    from leangen.lterms import Iter
    root = os.path.join(os.path.dirname(__file__), "..", "golden", "ir")
    costs = {n: translate(read(os.path.join(root, f"papers__{n}.ir.json"))).engine.cost
             for n in ("dai_sarathi", "dai_fastertransformer", "bari_rad")}
    for b in range(0, 129):
        dai = 1128 + 3547 * ((b + 128 - 1) // 128)
        bari = 3000 * ((b + 128 - 1) // 128) + 8 * b
        assert b * 4675 <= 128 * dai and b * 4024 <= 128 * bari
        r = Iter(0, b, 0, 0, 0, 0, 0, 0, 0, 0, 0, [], [], [])
        assert X.evalI(r, costs["dai_sarathi"]) == dai == X.evalI(r, costs["dai_fastertransformer"])
        assert X.evalI(r, costs["bari_rad"]) == bari
    assert 256 * 4675 > 128 * (1128 + 3547 * 2)    # the bound needs b ≤ b_max: two tiles' worth breaks it


def test_the_fastertransformer_witness():
    """The witness of `papers__dai_fastertransformer_not_work_conserving`, as
    ClaimProofs.lean writes it: in the family, the claim true after 13
    events (and not after 12: the proof's number is the least)."""
    import os
    import re
    from serq.ir import read
    from leangen.fragment import translate_claims, translate_with
    from leangen.lterms import Session
    here = os.path.dirname(__file__)
    text = open(os.path.join(here, "..", "..", "lean", "Serq", "Thm", "ClaimProofs.lean"), encoding="utf-8").read()
    rows = re.findall(r"\{ arrive := (\d+), attrs := \[\(9, (\d+)\), \(10, (\d+)\)\], turns := \[\], "
                      r"preset := false \}", text.split("def ftWitness", 1)[1].split(":=", 1)[1].split("\n\n")[0])
    ws = [Session(int(t), [(9, int(a)), (10, int(b))], [], False) for t, a, b in rows]
    assert [w.arrive for w in ws] == [46750, 93500]
    n = int(re.search(r"exact ⟨ftWitness, by decide \+kernel, by decide \+kernel, (\d+), by decide \+kernel⟩",
                      text).group(1))
    ir = read(os.path.join(here, "..", "golden", "ir", "papers__dai_fastertransformer.ir.json"))
    p = translate_with(ir, ws)
    c = dict(translate_claims(ir))["not_work_conserving"]
    assert X.inFamily(("renewal", 46750), [9, 10], 500, ws)
    assert X.givenOk(p, c.given)
    assert X.holdsAt(p, c, n) and not X.holdsAt(p, c, n - 1)
