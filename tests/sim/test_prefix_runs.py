"""The content-addressed pool kept as runs (serq/sim/pools/runs.py, the one a
run uses) against the per-block pool (serq/sim/pools/prefix.py's SharedPool,
its reference): every block after every step.

Both pools are read as the same per-block picture (``picture``): each name
(the prefix it stands for: the whole segments before the block's last token
and that token's segment, or the session's own tokens, and the block's
place) with its blocks in naming order and their reference counts; the free
queue from head to tail (a block as its name and its rank among the blocks
of that name, or None for a free block without a name); each hold's blocks
in chain order, its allocation, named blocks and position; and `used`,
`cached`, the evictions, the index's version and the times the pool ticked.

1. Random operations on the two pools directly (Hypothesis): sessions whose
   contents share prefixes (and grow while they hold), admissions (the fit
   and the take), naming as an iteration schedules, growth, releases that
   keep part of what they hold, `drop`, with and without `cache at` and
   vLLM 0.19.0's queue; after each operation the pictures, every session's
   lookup and the admission's fit are the same.
2. Random programs (tests/sim/test_prefix.py's, the Mooncake harness's
   program on random rows, with `cache at`): the pictures at every event
   and the reports are the same, and each pool keeps its memory invariant
   (test_prefix.py's) at every event.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serq.ir import model as M
from serq.sim import RunError, machine, simulate
from serq.sim.pools import HoldInst, PoolAlloc, RunPool, SharedPool, add_content
from serq.sim.pools import prefix as P
from serq.sim.pools import runs as R
from serq.sim.threads import Session

from test_prefix import programs, shared_invariant

# -- the per-block picture ------------------------------------------------------

# a BLAKE2b name of the per-block pool -> the prefix it names (filled as names are made)
NAMES: dict = {}
_extend = P.Chain.extend


def _recording_extend(self, bs, n):
    before = len(self.names)
    names = _extend(self, bs, n)
    for j in range(before, len(names)):
        NAMES[names[j]] = _prefix_of(self.segs, self.own, bs, j)
    return names


def _prefix_of(segs, own, bs: int, j: int):
    """Block j's name as its prefix: (the whole segments before the one
    holding its last token, that segment's id) or (all segments, "own",
    the session), and j."""
    last = (j + 1) * bs - 1
    pos = 0
    for i, (cid, n) in enumerate(segs):
        if last < pos + n:
            return (tuple(segs[:i]), cid), j
        pos += n
    return (tuple(segs), "own", own), j


@pytest.fixture(autouse=True)
def _names(monkeypatch):
    monkeypatch.setattr(P.Chain, "extend", _recording_extend)


def _slot_prefixes(pool):
    """A run pool's slot -> the prefix it stands for (as ``_prefix_of``'s)."""
    nodes, slots = pool.tab
    parent = {v: k for k, v in nodes.items()}
    memo = {0: ()}

    def segs(node):
        if node not in memo:
            p, cid, n = parent[node]
            memo[node] = segs(p) + ((cid, n),)
        return memo[node]
    out = {}
    for key, g in slots.items():
        if key[0] == "own":
            out[g] = (segs(key[1]), "own", key[2])
        else:
            out[g] = (segs(key[0]), key[1])
    return out


def _common(pool, index, queue, holds, ticks):
    return {"used": pool.used, "cached": pool.cached, "evicted_units": pool.evicted_units,
            "evicted_entries": pool.evicted_entries, "version": pool.version, "index": index,
            "queue": queue, "holds": holds, "ticks": ticks}


def picture(pool, ticks=None):
    """The pool, block by block, the same for either kind."""
    if type(pool) is SharedPool:
        rank, index = {}, {}
        for name, cur in pool.index.items():
            lst = cur if type(cur) is list else [cur]
            key = NAMES[name]
            index[key] = [b.ref for b in lst]
            for i, b in enumerate(lst):
                assert b.name == name
                rank[id(b)] = (key, i)
        queue = []
        for b in pool.free_q:
            if type(b) is P.FreeRun:
                queue += [None] * b.n
            else:
                queue.append(None if b.name is None else rank[id(b)])
        holds = [(pa.seq, pa.alloc, pa.nnamed, pa.pos,
                  [None if b.name is None else rank[id(b)] for b in pa.blocks]) for pa in pool.allocs.values()]
        return _common(pool, index, queue, holds, ticks)
    assert type(pool) is RunPool
    slot = _slot_prefixes(pool)
    rank, index = {}, {}
    for g, lst in pool.index.items():
        assert lst
        for r in lst:
            assert r.g == g and r.n > 0 and r.ref == len(r.holders)
            for j in range(r.j, r.j + r.n):
                key = (slot[g], j)
                refs = index.setdefault(key, [])
                rank[id(r), j] = (key, len(refs))
                refs.append(r.ref)
    queue = []
    q = pool.q
    r = q.next
    while r is not q:
        assert r.next.prev is r and r.ref == 0 and r.n > 0
        queue += [None] * r.n if r.g is None else [rank[id(r), j] for j in range(r.j + r.n - 1, r.j - 1, -1)]
        r = r.next
    holds = []
    for pa in pool.allocs.values():
        blocks = []
        for r in pa.blocks:
            assert r.g is not None and pa in r.holders and r.j == len(blocks)
            blocks += [rank[id(r), j] for j in range(r.j, r.j + r.n)]
        assert len(blocks) == pa.nnamed
        blocks += [None] * (round(pa.alloc / pool.bs) - pa.nnamed)
        holds.append((pa.seq, pa.alloc, pa.nnamed, pa.pos, blocks))
    return _common(pool, index, queue, holds, ticks)


# -- 1. the pools side by side ----------------------------------------------------

class _Sim:
    """What a pool reads of the machine."""

    now = 0.0
    warmup = 0.0
    alloc_ver = 0

    def __init__(self, decl):
        self.program = M.Program(files=(), attrs=(), attr_types=(), observes=(), pools=(decl,), stages=(),
                                 arrival=M.ANone(), blocks=(), session=0)
        self.ticks = 0

    def pool_tick(self, pool):
        self.ticks += 1


class _St:
    def __init__(self, caching):
        self.f_cache = True if caching else None


class _Thread:
    def __init__(self, sess):
        self.sess = sess


class Twin:
    """One kind of pool and its sessions, driven by the operations."""

    def __init__(self, cls, decl, cache_at):
        self.sim = _Sim(decl)
        self.pool = cls(self.sim, 0, decl)
        if cache_at:
            self.pool.f_cache_at = True     # (scheduled() merges; its value is read only by scheduled_at)
        self.sessions = []
        self.holds = []
        self.seq = 0

    def do(self, op):
        """Apply ``op``; what it answered (a fit, a grow's fit)."""
        pool, kind = self.pool, op[0]
        if kind == "arrive":
            s = Session.new(len(self.sessions), 0.0)
            for cid, n in op[1]:
                add_content(s, float(cid), float(n))
            self.sessions.append(s)
            return None
        if kind == "content":
            s = self.sessions[op[1] % len(self.sessions)]
            add_content(s, float(op[2]), float(op[3]))
            return None
        if kind == "admit":
            _, si, units, reuse, caching, res = op
            s = self.sessions[si % len(self.sessions)]
            need = P.round_up(pool.block, max(units, res))
            if not pool.fits_hold(need, s, units, reuse, caching):
                return False
            self.seq += 1
            t = _Thread(s)
            pa = PoolAlloc(pool, HoldInst(t, _St(caching), [0], self.seq), t, self.seq)
            pool.take(pa, s, units, caching, reuse)
            pool.allocs[pa.seq] = pa
            self.holds.append(pa)
            return True
        if kind == "drop":
            self.pool.drop(self.sessions[op[1] % len(self.sessions)])
            return None
        if not self.holds:
            return None
        pa = self.holds[op[1] % len(self.holds)]
        if kind == "schedule":
            pool.scheduled(pa, min(op[2], pa.alloc))
            return None
        if kind == "grow":
            need = op[2] * pool.bs
            if not pool.fits_growth(need, pa):
                return False
            pool.grow_at(pa, need, 0.0)
            return True
        if kind == "release":
            keep = None if op[2] is None else min(op[2], pa.alloc // pool.bs) * pool.bs
            pool.give_back(pa, keep, 0.0)
            self.holds.remove(pa)
            return None
        raise AssertionError(op)

    def view(self):
        return picture(self.pool, self.sim.ticks), [self.pool.lookup(s) for s in self.sessions]


# a few prompts that share their first segments, so that sessions share prefixes
PROMPTS = [[(0, 8), (1, 8), (2, 3)], [(0, 8), (1, 4)], [(0, 5)], [(3, 8), (0, 8)], [(0, 8), (1, 8), (2, 9)]]


@st.composite
def operations(draw):
    bs = draw(st.sampled_from([1, 2, 4]))
    cap = draw(st.integers(3, 40)) * bs + draw(st.sampled_from([0, 0, 1]))   # (a cap that is no whole block too)
    fifo = draw(st.booleans())
    cache_at = draw(st.booleans())
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        p = PROMPTS[draw(st.integers(0, len(PROMPTS) - 1))]
        ops.append(("arrive", p[:draw(st.integers(0, len(p)))] + draw(st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 6)), max_size=2))))
    h = st.integers(0, 7)
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.sampled_from(["arrive", "content", "admit", "admit", "admit", "schedule", "schedule",
                                     "grow", "release", "release", "drop"]))
        if kind == "arrive":
            p = PROMPTS[draw(st.integers(0, len(PROMPTS) - 1))]
            ops.append(("arrive", p[:draw(st.integers(0, len(p)))]))
        elif kind == "content":
            ops.append(("content", draw(h), draw(st.integers(0, 3)), draw(st.integers(1, 9))))
        elif kind == "admit":
            units = float(draw(st.integers(0, 30)))
            reuse = draw(st.one_of(st.none(), st.just(0.0), st.integers(0, 30).map(float)))
            ops.append(("admit", draw(h), units, reuse, draw(st.booleans()),
                        float(draw(st.sampled_from([0, 0, 40])))))
        elif kind == "schedule":
            ops.append(("schedule", draw(h), float(draw(st.integers(0, 30)))))
        elif kind == "grow":
            ops.append(("grow", draw(h), draw(st.integers(1, 4))))
        elif kind == "release":
            ops.append(("release", draw(h), draw(st.one_of(st.none(), st.integers(0, 12)))))
        else:
            ops.append(("drop", draw(h)))
    decl = M.Pool("kv", None, float(cap), float(bs), M.EvictLru(), M.PreemptNone(), None, None, None, False,
                  shared=True, free_fifo=fifo)
    return decl, cache_at, ops


def _run_twins(decl, cache_at, ops):
    ref, runs = Twin(SharedPool, decl, cache_at), Twin(RunPool, decl, cache_at)
    for i, op in enumerate(ops):
        a, b = ref.do(op), runs.do(op)
        assert a == b, (i, op)
        va, vb = ref.view(), runs.view()
        assert va == vb, (i, op, va, vb)
    return runs


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations())
def test_the_run_pool_is_the_per_block_pool_after_every_operation(case):
    _run_twins(*case)


def test_the_operations_split_runs_every_way_the_pool_can():
    """The generator reaches each case where a run splits or a name is had
    twice: a hit ending inside a run held by a hold and inside a free run,
    an eviction that takes part of a run, a release that keeps part of one,
    a block named while another has its name, a `cache at` adoption, a
    `drop` of part of a run; so the equality above covers them."""
    from hypothesis import find
    seen = set()

    def spy(name, fn):
        def wrapped(self, *a):
            seen.add(name(self, *a))
            return fn(self, *a)
        return wrapped
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(RunPool, "_split", spy(lambda s, r, at: "split held" if r.ref else "split free", RunPool._split))
        mp.setattr(RunPool, "_evict_top", spy(lambda s, r, t, a: "evict part" if t < r.n else "evict whole",
                                              RunPool._evict_top))
        mp.setattr(RunPool, "_adopt_run", spy(lambda s, pa, r, a, b: "adopt", RunPool._adopt_run))
        mp.setattr(RunPool, "_name", spy(lambda s, pa, g, a, b, lst: "duplicate" if lst and any(
            x.j < b and a < x.j + x.n for x in lst) else "name", RunPool._name))
        opts = settings(deadline=None, database=None, max_examples=2000, suppress_health_check=list(HealthCheck))
        want = {"split held", "split free", "evict part", "evict whole", "adopt", "duplicate", "name"}
        find(operations(), lambda c: bool(_run_twins(*c)) and want <= seen, settings=opts)
    finally:
        mp.undo()
    assert want <= seen


def _by_hand(fifo, ops, cap=12):
    """``ops`` on both pools (blocks of 1 token, one session of 8 tokens of
    content 0), the same after each; the run pool's picture at the end."""
    decl = M.Pool("kv", None, float(cap), 1.0, M.EvictLru(), M.PreemptNone(), None, None, None, False,
                  shared=True, free_fifo=fifo)
    return picture(_run_twins(decl, False, [("arrive", [(0, 8)])] + ops).pool)


def _block(j, rank=0):
    return (((), 0), j), rank


@pytest.mark.parametrize("fifo", [False, True])
def test_a_hit_takes_each_block_from_the_run_that_named_it_first(fifo):
    # A names blocks 0-4 (run E) and frees them; C's hit takes E's 0-1 and C
    # frees them without their names: E holds 2-4.  L, taking no hit, names
    # 0-7 (2-4 a second time) and frees them.  D's hit of 4 blocks takes
    # 0-1 from L and 2-3 from E, which named them first (each the first of
    # its name, rank 0); E's block 4 stays, the head of the queue, and L's
    # 7-2 after it (its 4-2 the second of their names).
    pic = _by_hand(fifo, [("admit", 0, 5.0, None, True, 0.0), ("schedule", 0, 5.0), ("release", 0, 5),
                          ("admit", 0, 2.0, None, True, 0.0), ("release", 0, 0),
                          ("admit", 0, 8.0, 0.0, True, 0.0), ("schedule", 0, 8.0), ("release", 0, 8),
                          ("admit", 0, 4.0, None, True, 0.0)], cap=20)
    assert pic["holds"][0][4] == [_block(0), _block(1), _block(2), _block(3)]
    assert [b for b in pic["queue"] if b is not None] == \
        [_block(4)] + [_block(j, 1 if j <= 4 else 0) for j in range(7, 1, -1)]


@pytest.mark.parametrize("fifo", [False, True])
def test_a_hit_that_takes_the_middle_of_a_free_run_leaves_its_ends_in_their_places(fifo):
    # E names blocks 0-1 and frees them; L, taking no hit, names 0-7 and
    # frees them: the queue is E's 1, 0 then L's 7 … 0.  D's hit of 4
    # blocks takes E's 0-1 and L's 2-3: L's 7-4 and 1-0 stay where they were.
    pic = _by_hand(fifo, [("admit", 0, 2.0, None, True, 0.0), ("schedule", 0, 2.0), ("release", 0, 2),
                          ("admit", 0, 8.0, 0.0, True, 0.0), ("schedule", 0, 8.0), ("release", 0, 8),
                          ("admit", 0, 4.0, None, True, 0.0)])
    assert pic["holds"][0][4] == [_block(0), _block(1), _block(2), _block(3)]
    assert [b for b in pic["queue"] if b is not None] == [_block(j) for j in (7, 6, 5, 4)] + \
        [_block(1, 1), _block(0, 1)]


# -- 2. whole programs ------------------------------------------------------------

def _pictures(p, cls, monkeypatch, **kw):
    """The report and each content-addressed pool's picture at every event,
    with ``cls`` as the pool (its invariant checked there too)."""
    monkeypatch.setattr(machine, "RunPool", cls)
    shots = []

    def hook(sim):
        shared_invariant(sim)
        shots.append([picture(x) for x in sim.pools if x.shared])
    try:
        rep = simulate(p, check_hook=hook, **kw)
        out = json.dumps(rep.data(), sort_keys=True) + rep.text()
    except RunError as e:
        out = e.render()
    return out, shots


def _same(p, monkeypatch, **kw):
    ra, sa = _pictures(p, SharedPool, monkeypatch, **kw)
    rb, sb = _pictures(p, RunPool, monkeypatch, **kw)
    assert len(sa) == len(sb)
    for i, (a, b) in enumerate(zip(sa, sb)):
        assert a == b, (i, a, b)
    assert ra == rb


def _variants(prog):
    """The program as written, with vLLM 0.19.0's queue, and with `cache at`
    0 (found at once, a late duplicate merged) and 1 (the next iteration)."""
    def pools(**kw):
        return dataclasses.replace(prog, pools=tuple(dataclasses.replace(x, **kw) if x.shared else x
                                                     for x in prog.pools))
    return [prog, pools(free_fifo=True), pools(cache_at=M.ENum(0.0)), pools(cache_at=M.ENum(1.0))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(programs())
def test_random_programs_see_the_same_pool_at_every_event(monkeypatch, prog):
    for p in _variants(prog):
        _same(p, monkeypatch)


@st.composite
def mooncake_rows(draw):
    """Rows of the Mooncake harness's program: prompts of 8-token hash ids
    drawn from a few shared prefixes, blocks of 4."""
    heads = [[1, 2, 3], [1, 2, 9], [5], [1, 7, 8, 3]]
    rows = []
    t = 0
    for _ in range(draw(st.integers(2, 12))):
        ids = heads[draw(st.integers(0, 3))][:draw(st.integers(1, 4))] + \
            draw(st.lists(st.integers(20, 40), max_size=3))
        n = 8 * len(ids) - draw(st.integers(0, 7))
        t += draw(st.integers(0, 3))
        rows.append((t, n, draw(st.integers(1, 12)), ids))
    eng = {"budget": draw(st.sampled_from([8, 16, 100])), "max_seqs": draw(st.sampled_from([2, 4])),
           "block_size": 4, "num_blocks": draw(st.integers(18, 40)), "chunk": draw(st.sampled_from([0, 8]))}
    return rows, eng


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(mooncake_rows())
def test_random_mooncake_replays_see_the_same_pool_at_every_event(monkeypatch, case):
    from serq.cli import mooncake_program
    from serq.oracle import mooncake as MC
    rows, eng = case
    s = MC.check({"engine": eng, "step_ms": 1, "hash_block": 8,
                  "rows": [dict(timestamp=t, input_length=n, output_length=o, hash_ids=ids)
                           for t, n, o, ids in rows]}, "test")
    for p in _variants(mooncake_program(s)):
        for strokes in (True, False):
            _same(p, monkeypatch, step_log=True, strokes=strokes)


def test_the_slot_of_a_block_is_its_prefix():
    """Two sessions name a block alike exactly when their tokens up to its
    end agree (the whole segments before it, its segment's id; a segment
    restarts its offsets, so (5, 10) then (5, 6) is not (5, 16))."""
    sim = _Sim(M.Pool("kv", None, 64.0, 4.0, M.EvictLru(), M.PreemptNone(), None, None, None, False, shared=True))
    pool = RunPool(sim, 0, sim.program.pools[0])

    def names(content, sid, n):
        s = Session.new(sid, 0.0)
        for cid, k in content:
            add_content(s, float(cid), float(k))
        return [(g, j) for g, a, b in pool._slots(s, 0, n) for j in range(a, b)]
    a = names([(5, 16), (6, 8)], 0, 8)
    assert names([(5, 16), (6, 4)], 1, 8)[:5] == a[:5]       # 20 tokens in common: 5 blocks
    assert names([(5, 16), (6, 4)], 1, 8)[5] != a[5]
    assert names([(5, 16), (6, 3)], 1, 8)[:5] == a[:4] + [names([(5, 16), (6, 3)], 1, 8)[4]] != a[:5]
    assert names([(5, 10), (5, 6)], 2, 4)[:2] == a[:2]        # the first 8 tokens are (5, 0..7)
    assert names([(5, 10), (5, 6)], 2, 4)[2:4] != a[2:4]      # then (5, 8, 9, 0, 1, …) against (5, 8 … 15)
    assert names([(5, 16)], 3, 6)[:4] == a[:4] and names([(5, 16)], 3, 6)[4] != a[4]   # its own tokens
    assert names([], 4, 2) != names([], 5, 2)                 # no content: nothing in common
