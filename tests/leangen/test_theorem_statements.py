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
