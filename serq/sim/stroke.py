"""Strokes: an engine's identical decode iterations advanced in one go.

When every resident of an idle engine decodes, nobody waits for it (or the
head of its queue cannot be admitted, below), and no other event is due
before its next iterations end, those iterations differ only in their clock
and in the blocks the residents grow into: each serves the same residents
one token each.  ``advance`` runs them here without the
event loop (no heap, no settling, no plan objects), doing exactly what the
step-by-step path does, in its order:

* each iteration's cost is ``execute``'s compiled expression, read with the
  batch as the step-by-step path sets it; it changes only where a resident
  grows a block, so it is read again only there;
* the clock adds the iterations' costs one by one (float addition is not
  associative), and the stage's time averages add each iteration's
  ``n · dt`` and ``dt`` as its ``tick`` would;
* a resident that needs a block grows at that iteration's start as
  ``Sim.grow_to`` grows it once it fits (``Pool.tick``, ``Pool.grow``), so
  the pool's accounting, its evictions and their order are the step-by-step
  path's own;
* between two growths the clock, and the time averages, add the same
  amounts again and again: while a sum stays in one binade each addition
  adds the same rounded amount, so a run of them is one multiplication
  (``repeat_add``, ``_run_in_binade``), to the bit;
* the counters (iterations, events, the heap's sequence numbers, tokens
  served, each request's remaining work and position, the client's output
  tokens) move by the number of iterations.

A waiting head does not stop a stroke when each of its iterations would try
it and refuse it: through a stroke nothing joins or leaves a queue, no hold
is admitted or released, and a pool's ``used`` only grows, so a head refused
once is refused again while what it asks for is the same (``head_reads``
says what its amounts read, and so when to read them again: never, at every
growth, or where an eviction changed its own cached prefix).  The first
iteration at which it would fit is the step-by-step path's, from its
admission on (its growth done, as that path does it first).

A content-addressed pool (``cache shared;``) is a stroke's too: a resident
grows there as anywhere (its growth evicting named blocks from the free
queue's head), and names each block at the iteration that fills it, as
``SharedPool.scheduled`` does when the step-by-step path serves it; a head
waiting to be admitted there is tried again after each growth that evicted
(its admission reads the index, whatever its amounts read).  No stroke while
a resident's next block could be named by another session's chain (its
tokens still the session's content): each block a stroke names holds a
token of the resident's own.

A stroke stops before an iteration that could differ: one whose growth would
not fit (a preemption), one whose end would reach the next event of the heap,
the horizon, the warm-up or a mark of the trend (serq.sim.trend), the last
token of a resident, or one that would admit the waiting head; the
step-by-step path takes over there.  It is never taken where something reads iterations
one by one (a claim over iterations, a gauge, a step log, a check hook, a
schedule body with registers) or where the engine's clauses read what
changes between iterations (the clock, a draw, ``work``, the running
estimates).  ``simulate(…, strokes=False)`` and ``serq run --no-strokes``
run step by step; ``tests/sim/test_strokes.py`` and ``tools/sim_regress.py``
hold the two to the same bytes.
"""

from __future__ import annotations

import heapq
import math
import operator
import sys

from ..ir import model as M
from ..ir.expr import walk
from .compile import CTX
from .errors import Fault
from .pools import round_up
from .stages import MODE_DECODE

C_NOW = CTX["Now"]
C_NRES, C_NDEC, C_KVB, C_KVP = CTX["Nres"], CTX["Ndec"], CTX["Kvb"], CTX["Kvp"]
C_NTOK, C_NPRE, C_ATTN = CTX["Ntok"], CTX["Npre"], CTX["Attn"]

# what an engine's clauses may read for its iterations to be identical (its
# budget and chunk are read before the batch is planned: not what the plan
# makes, which they would read from the iteration before)
_CTX_OK = {"Nres", "Ndec", "Kvb", "Kvp", "Ntok", "Npre", "Attn"}
_PLAN_CTX_OK = {"Nres", "Ndec", "Kvb", "Kvp"}
_QUERY_OK = {"Used", "Free", "Holders", "Queued", "Queue", "Busy", "CachedIn"}



def steady(e: M.Expr, ok=_CTX_OK) -> bool:
    """Does `e` read nothing that moves between two identical iterations?"""
    for x in walk(e):
        t = type(x)
        if t is M.ECtx and x.var not in ok:
            return False
        if t in (M.ESample, M.EPrice, M.EAgg, M.ERunSum):
            return False
        if t is M.EQuery and x.query not in _QUERY_OK:
            return False
    return True


# the queries a resident's growth changes (a pool's occupancy, and the cache
# its evictions shrink); the others stay as they are through a stroke
_GROWTH_QUERIES = {"Used", "Free", "CachedIn"}


def moves_with_growth(e: M.Expr) -> bool:
    """Does `e` read what a resident's growth changes (kv_decode, a pool's
    occupancy or cache)?"""
    for x in walk(e):
        t = type(x)
        if (t is M.ECtx and x.var in ("Kvb", "Kvp")) or (t is M.EQuery and x.query in _GROWTH_QUERIES):
            return True
    return False


# -- a waiting head that cannot be admitted ----------------------------------
#
# A stroke's iterations each try to admit the head of the first non-empty
# queue the engine admits (serq.sim.step: ``admit waiting`` after the
# residents' tokens).  Through the stroke nothing joins or leaves a queue, no
# hold is admitted or released, and a pool's ``used`` only grows (the
# residents' growth; eviction takes from the cache), so a head refused once
# is refused again as long as what it needs is the same: its units and
# reserves are read from its thread's attributes (fixed while it waits) and
# from what they name.  ``head_reads`` sorts what they name:
#
# * what a stroke never changes (numbers, attributes, registers,
#   running.count and .decoding, the holders or queue of a pool, a stage's
#   queue and busy count, `prefilling`, the engine's own `budget_left` when
#   its budget and chunk are the same at every iteration): read once;
# * what only a growth can change (a pool's used or free units, kv_decode,
#   `budget_left` otherwise): read again at every iteration that grows;
# * the head's own `cachedin(p)`: read again where a growth's evictions
#   changed it;
# * anything else (the clock, `waited`, a draw, a running estimate, an
#   aggregate, a queue ordered by keys): no stroke while it waits.

_HEAD_CTX_STILL = {"Nres", "Ndec"}
_HEAD_CTX_GROWTH = {"Kvb", "Kvp"}
_HEAD_QUERY_STILL = {"Holders", "Queued", "Queue", "Busy", "Prefilling"}
_HEAD_QUERY_GROWTH = {"Used", "Free"}

STILL, GROWTH = 0, 1


def head_reads(stage, st):
    """What a waiting hold's amounts read, for stage `stage`'s strokes: None
    where they read what moves between iterations; else (kind, cached): kind
    STILL or GROWTH (read again at every growth), cached the pools whose
    `cachedin` they read (read again where it changed), and whether they read
    kv_decode or kv_prefill.  Kept per statement."""
    key = id(st)
    memo = stage.head_memo
    if key in memo:
        return memo[key][1]
    hold = st.ir
    exprs = []
    for hp in hold.pools:
        exprs.append(hp.units)
        if hp.reserve is not None:
            exprs.append(hp.reserve)
    if hold.reuse is not None:
        exprs.append(hold.reuse)
    kind = STILL
    cached = set()
    kv = False
    out = None
    for e in exprs:
        for x in walk(e):
            t = type(x)
            if t is M.ECtx:
                if x.var in _HEAD_CTX_GROWTH:
                    kind = GROWTH
                    kv = True
                elif x.var not in _HEAD_CTX_STILL:
                    break
            elif t is M.EQuery:
                q = x.query
                if q in _HEAD_QUERY_GROWTH:
                    kind = GROWTH
                elif q == "CachedIn":
                    k = stage.sim.comp.const_member(x.ref)
                    if k is None:
                        kind = GROWTH
                    else:
                        cached.add(k)
                elif q == "BudgetLeft":
                    if stage.sim.comp.const_member(x.ref) != stage.sid:
                        break     # another engine's plan: its clauses may read anything
                    if not stage.stroke_plan_static:
                        kind = GROWTH
                elif q not in _HEAD_QUERY_STILL:
                    break
            elif t in (M.ESample, M.EPrice, M.EAgg):
                break
        else:
            continue
        break
    else:
        out = (kind, tuple(sorted(cached)), kv)
    memo[key] = (st, out)       # (the statement kept alive beside its id)
    return out


class Head:
    """The head a stroke's iterations refuse: the request and what its
    refusal reads."""

    __slots__ = ("pool", "req", "kind", "cached", "kv", "sess")

    def __init__(self, pool, req, reads):
        self.pool = pool
        self.req = req
        self.kind, self.cached, self.kv = reads
        self.sess = req.thread.sess

    def cached_now(self, sim):
        return tuple(sim.pools[k].cached_of(self.sess) for k in self.cached)


def _shared_pools(sim, head) -> tuple:
    """The content-addressed pools of the head's hold."""
    pools = sim.pools
    return tuple(pools[pid] for pid in head.req.pids if pools[pid].shared)


def waiting_head(stage):
    """The head an iteration of `stage` would try to admit, if its refusal
    can be read as a stroke needs (Head); None where no queue it admits has
    one; False where one does but a stroke cannot run past it."""
    for p in stage.admit_pools:
        if p.nqueued:
            if p.queue_keys is not None and not p.front:
                return False      # the head is chosen by keys that read the clock
            req = p.front[0] if p.front else p.rest[0]
            reads = head_reads(stage, req.st)
            if reads is None:
                return False
            return Head(p, req, reads)
    return None


def refused(stage, head, budget, chunk, nres: int, kvb: float) -> bool:
    """Would the admission of an iteration of the stroke refuse the head, as
    the step-by-step path would try it (after each resident's token, with
    the plan's budget left, the context set as the iteration sets it)?  A
    fault is the step-by-step path's to report: not refused."""
    if budget % 1.0 == 0.0 and -_BIG < budget < _BIG:
        left = budget - float(nres)      # exact: whole numbers below 2**50
    else:
        left = budget
        for _ in range(nres):
            left -= 1.0
    if left <= 0:
        return True               # no admission is tried
    sim = stage.sim
    ctx = sim.ctx
    plan = stage.Plan(budget, chunk, sim.npreempt, stage.it + 1)
    plan.left = left
    saved = ctx[C_KVB], ctx[C_KVP]
    ctx[C_KVB] = kvb if stage.need_kv else 0.0
    ctx[C_KVP] = 0.0
    stage.plan = plan
    stage.planning = True
    try:
        return sim.fits_raw(head.req) is None
    except Fault:
        return False
    finally:
        stage.planning = False
        stage.plan = None
        ctx[C_KVB], ctx[C_KVP] = saved


def eligible(stage, decl) -> bool:
    """Whether stage `decl`'s engine can take strokes at all (read once);
    notes on the stage whether its plan (budget, chunk) is the same at every
    iteration of a stroke."""
    k = decl.kind
    if k.iteration is not None or type(k.serve) is not M.ServeBy or k.serve.keys:
        return False
    if any(p.tree for p in stage.sim.program.pools):
        return False      # a radix tree's lookups use its paths: no read-only trial admission
    if not (steady(k.budget, _PLAN_CTX_OK) and steady(k.chunk, _PLAN_CTX_OK) and steady(k.cost)):
        return False
    stage.stroke_plan_static = not (moves_with_growth(k.budget) or moves_with_growth(k.chunk))
    stage.stroke_cost_moves = moves_with_growth(k.cost)
    stage.stroke_reads_cached = any(type(x) is M.EQuery and x.query == "CachedIn"
                                    for e in (k.budget, k.chunk, k.cost) for x in walk(e))
    return True


def _plain(pool) -> bool:
    """A pool whose growth is the step-by-step path's alone to say: no
    spill, no outstanding reservations, no `cache at` (a content-addressed
    pool's growth and naming are otherwise the stroke's, below)."""
    v = pool.__dict__.get("stroke_plain")
    if v is None:
        v = pool.stroke_plain = not (pool.decl.spill is not None or pool.reserve_held
                                     or pool.decl.cache_at is not None)
    return v


# -- a content-addressed pool (`cache shared;`) ------------------------------
#
# A decoding resident's hold on such a pool names each of its blocks as the
# iteration that schedules the block's last token (SharedPool.scheduled,
# from StepStage.serve after the resident's growth): block k at the
# iteration whose target position is (k + 1)·block.  A stroke names them at
# those iterations, as scheduled() itself.  A name made in a stroke changes
# nobody's view but the resident's session's: the block holds a token past
# the session's content (its own, a pair no other session has), so no other
# session's chain names it; the resident's own session is not the head.  An
# eviction (a growth's, from the free queue's head) takes a name out of the
# index, which a waiting head's admission on the pool reads (its hit blocks),
# whatever its amounts read: the head is tried again after each growth that
# evicted there.


def _content_len(sess) -> float:
    """The length of the session's content (kept beside the content it was
    summed from: a session's content is a tuple, replaced when it grows)."""
    c = sess.content
    m = sess.__dict__.get("stroke_clen")
    if m is not None and m[0] is c:
        return m[1]
    tot = 0.0
    for _cid, n in c:
        tot += n
    sess.stroke_clen = (c, tot)
    return tot


def _integral(x: float) -> bool:
    return x == math.floor(x) and abs(x) < _BIG


_REM = operator.attrgetter("rem")
_MODE = operator.attrgetter("mode")
_MANY = 16      # residents from which a C-level pass finds the commonest misses sooner
_BIG = 2.0 ** 50              # whole counts below it move by whole amounts exactly


_RUN = 24                     # iterations from which a run is cheaper added in one go

_EXACT = 2.0 ** 52            # whole numbers below it add exactly, in any order
_TOP = 2 ** 53 - 1            # the largest significand, in units of the last place
_NORMAL = sys.float_info.min  # the smallest normal float


def _same_step(a: float, c: float):
    """How adding `c` > 0 to `a` rounds while `a` stays in its binade: (A, M,
    u) with a = A·u, u the binade's unit in the last place, and each sum
    a + c rounding to a + M·u for as long as the result stays below the
    binade's top (2^53·u): the exact sum (A + c/u)·u lies between multiples
    of u there, and rounds to the nearer, A + round(c/u).  None where that
    does not hold: `a` zero or subnormal, c/u beyond the significand, or a
    tie (c/u an odd multiple of 1/2, which rounds to even and so depends on
    A)."""
    if not (a >= _NORMAL) or a == math.inf:
        return None
    u = math.ulp(a)
    q = c / u                 # exact: u is a power of two
    if not (q < 2.0 ** 53):
        return None
    fq = math.floor(q)
    r = q - fq                # exact (Sterbenz, or q itself below 1)
    if r == 0.5:
        return None
    return int(a / u), fq + 1 if r > 0.5 else fq, u


def repeat_add(a: float, c: float, k: int) -> float:
    """``a`` after ``for _ in range(k): a += c`` (c > 0), to the bit, in
    O(binades crossed) rather than O(k): within a binade each addition adds
    the same rounded amount (_same_step); the one that leaves it is done as
    the loop does it."""
    while k > 0:
        st = _same_step(a, c)
        if st is not None:
            A, m, u = st
            if m == 0:
                return a          # every sum rounds back to a
            s = (_TOP - A) // m
            if s > 0:
                if s > k:
                    s = k
                a = float(A + s * m) * u
                k -= s
                continue
        a += c
        k -= 1
    return a


def _run_in_binade(t: float, c: float, kmax: int, lim: float):
    """(k, dt, t_k): the next k ≤ kmax iterations of cost `c` from the clock
    `t` that stay in t's binade and end before `lim` each advance the clock
    by the same dt (the rounded cost, which is also their end minus their
    start, exactly), and end at t_k; k = 0 where none can be taken so."""
    st = _same_step(t, c)
    if st is None:
        return 0, 0.0, t
    T, m, u = st
    if m == 0:
        return 0, 0.0, t
    s = (_TOP - T) // m
    if lim < math.inf:
        L = lim / u           # exact: u is a power of two
        if L < math.inf:
            # T + s·m < L  <=>  T + s·m <= ceil(L) - 1 (T, s, m whole)
            s2 = (math.ceil(L) - 1 - T) // m
            if s2 < s:
                s = s2
    if s > kmax:
        s = kmax
    if s <= 0:
        return 0, 0.0, t
    return s, float(m) * u, float(T + s * m) * u


_MISSED = object()      # a stroke that read its residents one by one and took no iteration


def advance(stage) -> None:
    """Run the stroke of `stage`'s next iterations, if there is one, and leave
    the engine where the step-by-step path would be before the iteration the
    stroke stops at (which the caller then runs as usual).

    A stroke that reads its residents one by one and then takes no
    iteration costs about half an iteration of the step-by-step path.  An
    engine of hundreds of residents busy with arrivals misses at nearly every
    iteration: there (more than _MANY residents), after the third such miss
    in a row the next 1, 3, 7, then 15 iterations are left to the
    step-by-step path untried, until a stroke takes an iteration again.  (A
    miss among a few residents costs little beside the iteration's fixed
    work, and what is found in one C-level pass over many — one whose last
    token is next, one that does not decode — is no miss.)  Which iterations
    a stroke takes never changes what the run does (the stroke ends where
    the step-by-step path would be), only how fast."""
    if stage.stroke_skip:
        stage.stroke_skip -= 1
        stage.stroke_untried += 1
        return
    took = _stroke(stage)
    if took is _MISSED and len(stage.residents) > _MANY:
        stage.stroke_misses = m = stage.stroke_misses + 1
        if m >= 3:
            stage.stroke_skip = (1 << min(m - 2, 4)) - 1
    elif took:
        stage.stroke_misses = 0


def _stroke(stage):
    """advance()'s stroke: True where it took an iteration, _MISSED where it
    read its residents one by one and took none, None where it stopped
    before."""
    sim = stage.sim
    res = stage.residents
    if not res or stage.claims_every or sim.ready:
        return
    # what is cheap to read first: nobody waits for this engine but a head
    # its iterations cannot admit, nobody for a pool, or for another engine
    head = waiting_head(stage) if stage.admit_pools else None
    if head is False:
        return
    for p in sim.pools:
        if p.growers or (p.nqueued and p.admit_via is None):
            return
    for s in sim.step_stages:
        if s is not stage and not s.iterating and (s.residents or any(p.nqueued for p in s.admit_pools)):
            return
    n = len(res)
    m_cap = math.inf
    mem = stage.memory
    mem_pid = stage.mem_pid
    # every resident decodes, its counts whole numbers (which then move by
    # i in one subtraction, exactly); x % 1.0 is 0.0 for a whole x (NaN for
    # inf); its growth is the step-by-step path's alone to say (_plain), and
    # its thread holds the engine's memory through its run's hold alone.
    # Alongside: each resident's memory as kv_decode reads it (mem_alloc),
    # whether its run's growth adds to it, and the heap of its growth (the
    # iteration at which each next needs a block, its place in the serving
    # order, its hold's allocation)
    # (what the loops below would find first, found in C where there are
    # many residents: one whose last token is the next iteration's, one that
    # does not decode)
    if n > _MANY and (min(map(_REM, res)) < 2.0 or [*map(_MODE, res)].count(MODE_DECODE) != n):
        return
    for j in res:       # first what is cheap to read
        rem = j.rem
        if not j.alive or j.mode != MODE_DECODE or rem % 1.0 != 0.0 or rem >= _BIG:
            return _MISSED
        if rem - 1.0 < m_cap:
            m_cap = rem - 1.0           # the last token is the step-by-step path's
    cap_ev = sim.limits.max_events
    if cap_ev is not None:
        # --max-events stops the run at an event the step-by-step path counts:
        # the stroke leaves the last events before it to that path
        m_cap = min(m_cap, cap_ev - sim.nevents - 2)
    if m_cap < 1:
        return
    allocs = []
    in_kv = []
    cross = []
    names = []          # (the iteration at which a resident names its next block, its place, its hold)
    exact_kv = True     # every allocation and growth a whole number of units
    plain_pool = None   # the last pool found _plain
    for r, j in enumerate(res):
        pa = j.pa
        if pa is not None:
            if pa.released or pa.pos % 1.0 != 0.0 or pa.alloc % 1.0 != 0.0 or pa.pos >= _BIG or \
                    pa.alloc >= _BIG:
                return _MISSED
            pool = pa.pool
            if pool is not plain_pool:
                if not _plain(pool):
                    return _MISSED
                plain_pool = pool
            if pool.shared and pa.hold.st.f_cache is not None:
                # its blocks are named as scheduled: the next one holds a
                # token of its own, the ones before it are named already
                bs = pool.bs
                k = pa.nnamed
                sess = j.thread.sess
                if stage.stroke_reads_cached or k < pa.pos // bs or not ((k + 1) * bs > _content_len(sess)) or \
                        (head is not None and head.sess is sess):
                    return _MISSED
                names.append((int((k + 1) * bs - pa.pos - 1), r, pa))
            cross.append((int(pa.alloc - pa.pos), r, pa))
            if exact_kv:
                x = pool.block or pa.pos        # (a pool without blocks grows from a whole position)
                if not (x % 1.0 == 0.0 and -_BIG < x < _BIG):
                    exact_kv = False
        sess = j.thread.sess
        if sess.in_turn and (sess.outs % 1.0 != 0.0 or sess.outs >= _BIG):
            return _MISSED
        # its memory (stage.mem_alloc, written out: the same sum in the same
        # order), and at most one of its allocations there unreleased
        a = 0.0
        if mem_pid is not None:
            pas = j.mem_pas
            if pas is None:
                stage.mem_alloc(j)
                pas = j.mem_pas
            k = 0
            for x in pas:
                if not x.released:
                    a += x.alloc
                    k += 1
            if k > 1:
                return _MISSED
        allocs.append(a)
        in_kv.append(pa is not None and pa.pool is mem)
        if exact_kv and not (a % 1.0 == 0.0 and -_BIG < a < _BIG):
            exact_kv = False
    if not _integral(stage.served_total):
        return _MISSED

    heap = sim.heap
    te = heap[0][0] if heap else math.inf
    horizon = sim.horizon
    warmup = sim.warmup
    t = sim.now
    cold = t < warmup
    ctx = sim.ctx
    mcar = sim.mcar
    need_kv = stage.need_kv
    plan_static = stage.stroke_plan_static
    cost_moves = stage.stroke_cost_moves
    fb, fc, fcost = stage.f_budget, stage.f_chunk, stage.f_cost
    nres = float(n)

    plan = [0.0, 0.0]      # the iteration's budget and chunk, as attempt() reads them

    def plan_ok() -> bool:
        """The iteration's budget serves every resident a token, its chunk is a
        number (a fault is the step-by-step path's to report)."""
        try:
            budget = fb(mcar)
            chunk = fc(mcar)
        except Fault:
            return False
        plan[0] = budget
        plan[1] = chunk if chunk > 0 else 0.0
        return budget == budget and chunk == chunk and budget >= nres

    def cost_of() -> float:
        try:
            return fcost(mcar)
        except Fault:
            return math.nan

    # the batch's part of the context, as the last iteration left it: the
    # admissions of the next one read it, so a stroke that takes no
    # iteration leaves it as it was
    batch_ctx = ctx[C_NTOK], ctx[C_NPRE], ctx[C_ATTN]

    def none():
        ctx[C_NTOK], ctx[C_NPRE], ctx[C_ATTN] = batch_ctx
        ctx[C_NOW] = sim.now
        return _MISSED

    # the context as the step-by-step path sets it for these iterations: only
    # kv_decode moves (with the growth), and only where the engine reads it
    ctx[C_NOW] = t
    kvb = _batch_kv(allocs)
    ctx[C_NRES] = nres
    ctx[C_NDEC] = nres
    ctx[C_KVB] = kvb if need_kv else 0.0
    ctx[C_KVP] = 0.0
    if not plan_ok():
        return none()
    ctx[C_NTOK] = nres
    ctx[C_NPRE] = 0.0
    ctx[C_ATTN] = 0.0
    cost = cost_of()
    if not (cost > 0):
        return none()
    t0 = t
    # an iteration is the stroke's when it ends before the next event, at or
    # before the horizon, and on the side it started on of the warm-up and of
    # the trend's marks (serq.sim.trend: read where the step-by-step path does)
    lim = te
    past = math.nextafter(horizon, math.inf)
    if past < lim:
        lim = past
    mark = sim.next_mark     # the warm-up until it has passed
    if t < mark < lim:
        lim = mark
    heapq.heapify(cross)
    heapq.heapify(names)
    if not (t < t + cost < lim) and not (cost_moves and cross and cross[0][0] == 0):
        return none()       # not even the first iteration (its cost is this one's)
    if head is not None and not refused(stage, head, plan[0], plan[1], n, ctx[C_KVB]):
        return none()
    # the content-addressed pools a waiting head's admission looks its chain up in
    shared_head = () if head is None else _shared_pools(sim, head)
    # a head read again where a growth may change what it needs: after the
    # growth, where the step-by-step path would then read the rest of the
    # iteration as it was; before it (the stroke ends there) where the plan
    # or the head read what the growth changes before the admission
    recheck = head is not None and (head.kind == GROWTH or bool(head.cached))
    recheck_before = recheck and (head.kv or not plan_static)
    # what a still head reads of a content-addressed pool's cache changes
    # only with the pool's index, whose version is compared below whichever
    # of the head's pools it is: its `cachedin` is read again only where it
    # reads another kind of pool's (a session's kept units)
    watch = shared_head
    read_cached = recheck and head.kind != GROWTH
    if read_cached:
        pools = sim.pools
        watch += tuple(pools[k] for k in sorted(head.cached) if pools[k].shared and pools[k] not in shared_head)
        read_cached = not all(pools[k].shared for k in head.cached)
    acc_n = acc_busy = None        # read once the first iteration is the stroke's
    i = 0
    m_cap = int(m_cap)
    # kv_decode moves by the growth alone where every allocation is a whole
    # number of units (then every partial sum is exact, in any order): whole
    # blocks, or, in a pool without blocks, a whole position to grow from
    exact_kv = exact_kv and kvb < _EXACT
    pop, push = heapq.heappop, heapq.heappush
    while i < m_cap:
        next_cross = cross[0][0] if cross else m_cap
        next_name = names[0][0] if names else m_cap
        if i >= next_name and i < next_cross:
            # an iteration that names blocks and grows none: the same cost;
            # nothing the head or the plan reads changes
            crossing = grow = ()
            kvb_post = kvb
            c = cost
        if i >= next_cross:
            # the residents that need a block at this iteration, in serving
            # order, each fitting as Pool.fits_growth would see it
            first = pop(cross)
            if not cross or cross[0][0] > i:
                # one resident (the usual case)
                _, r, pa = first
                pool = pa.pool
                d = round_up(pool.block, pa.pos + i + 1.0) - pa.alloc
                if not (pool.used + d <= pool.cap):
                    break             # it would preempt or wait: the step-by-step path's
                crossing = (first,)
                grow = (d,)
                add_kv = d if in_kv[r] else 0.0
            else:
                crossing = [first]
                while cross and cross[0][0] <= i:
                    crossing.append(pop(cross))
                used = {}
                short = False
                add_kv = 0.0
                grow = []
                for _, r, pa in crossing:
                    pool = pa.pool
                    d = round_up(pool.block, pa.pos + i + 1.0) - pa.alloc
                    u = used.get(pool.pid, pool.used)
                    if not (u + d <= pool.cap):
                        short = True
                        break
                    used[pool.pid] = u + d
                    if in_kv[r]:
                        add_kv += d
                    grow.append(d)
                if short:
                    break             # a growth would preempt or wait: the step-by-step path's
            if exact_kv:
                kvb_post = kvb + add_kv
                if not (kvb_post < _EXACT):
                    break
            else:
                for (_, r, pa), d in zip(crossing, grow):
                    if in_kv[r]:
                        allocs[r] += d
                kvb_post = _batch_kv(allocs)
            if need_kv:
                ctx[C_KVB] = kvb_post
            c = cost_of() if cost_moves else cost
        if i >= next_cross or i >= next_name:
            t_next = t + c
            if not (c > 0 and t < t_next < lim):
                break
            # this iteration is the stroke's: grow as its serving would
            # (Sim.grow_to's own steps once the growth is known to fit)
            if crossing and recheck_before:
                break
            if acc_n is None:
                stage.tick(t0)     # the first iteration's start closes the time before it
                acc_n, acc_busy = stage.acc_n, stage.acc_busy
            if crossing:
                sim.now = t
                ctx[C_NOW] = t
                if read_cached:
                    was = head.cached_now(sim)
                if watch:
                    vers = [p.version for p in watch]
                for (_, r, pa), d in zip(crossing, grow):
                    pa.pool.grow_at(pa, d, t)
                    push(cross, (int(pa.alloc - pa.pos), r, pa))
                if head is not None and (
                        (recheck and head.kind == GROWTH) or
                        (watch and vers != [p.version for p in watch]) or
                        (read_cached and head.cached_now(sim) != was)) and \
                        not refused(stage, head, plan[0], plan[1], n, kvb):
                    # the step-by-step path admits the head in this iteration:
                    # it takes the iteration over from here, the growth done
                    break
            # the blocks this iteration fills are named (SharedPool.scheduled)
            while names and names[0][0] <= i:
                _, r, pa = pop(names)
                pa.pool.scheduled(pa, pa.pos + i + 1.0)
                push(names, (i + pa.pool.bs, r, pa))
            kvb = kvb_post
            cost = c
            # the next iteration's plan reads the grown blocks
            if crossing and not plan_static and i + 1 < m_cap and not plan_ok():
                m_cap = i + 1
            dt = t_next - t
            acc_n += nres * dt
            acc_busy += dt
            if i == 0:
                t_first = t_next
            t = t_next
            i += 1
            continue
        # the iterations before the next growth or naming: the same cost each
        if next_name < next_cross:
            next_cross = next_name
        t_next = t + cost
        if not (t < t_next < lim):
            break
        if acc_n is None:
            stage.tick(t0)         # the first iteration's start closes the time before it
            acc_n, acc_busy = stage.acc_n, stage.acc_busy
        if i == 0:
            t_first = t_next
        stop = next_cross if next_cross < m_cap else m_cap
        while i < stop:
            if stop - i >= _RUN:
                # in runs: while the clock stays in one binade each iteration
                # adds the same rounded cost (_run_in_binade), so k of them are
                # one step
                k, dt, t_k = _run_in_binade(t, cost, stop - i, lim)
                if k:
                    acc_n = repeat_add(acc_n, nres * dt, k)
                    acc_busy = repeat_add(acc_busy, dt, k)
                    t = t_k
                    i += k
                    continue
            # one iteration as the step-by-step path adds it
            t_next = t + cost
            if not (t < t_next < lim):
                break
            dt = t_next - t
            acc_n += nres * dt
            acc_busy += dt
            t = t_next
            i += 1
        if i < stop:
            break
    if i == 0:
        return none()
    # the stroke's i iterations: the counters, the residents, the clock
    stage.acc_n, stage.acc_busy, stage.t_acc = acc_n, acc_busy, t
    stage.it += i
    stage.iters_all += i
    stage.stroke_iters += i
    if head is not None:
        stage.stroke_past_head += i
    if not cold:
        stage.iterations += i
    stage.served_total += nres * i
    sim.seq += i
    sim.nevents += i
    fi = float(i)
    for j in res:
        j.rem -= fi
        pa = j.pa
        if pa is not None:
            pa.pos += fi
            pa.hold.grown = True
    for j in res:
        sess = j.thread.sess
        if sess.in_turn and sess.first is None:
            # a turn's first output token: the client's view as the first
            # iteration's end records it, the residents in the batch's order
            sim.now = t_first
            for j in res:
                sim.client_decode(j.thread, 1.0)
            fi -= 1.0
            break
    if fi:
        for j in res:
            sess = j.thread.sess
            if sess.in_turn:
                sess.outs += fi
    sim.now = t
    ctx[C_NOW] = t
    return True


def _batch_kv(allocs) -> float:
    """kv_decode as the step-by-step path sums it, the residents in order."""
    tot = 0.0
    for a in allocs:
        tot += a
    return tot
