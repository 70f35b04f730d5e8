"""Strokes: an engine's identical decode iterations advanced in one go.

When every resident of an idle engine decodes, nobody waits for it, and no
other event is due before its next iterations end, those iterations differ
only in their clock and in the blocks the residents grow into: each serves
the same residents one token each.  ``advance`` runs them here without the
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

A stroke stops before an iteration that could differ: one whose growth would
not fit (a preemption), one whose end would reach the next event of the heap,
the horizon, the warm-up or a mark of the trend (serq.sim.trend), or the
last token of a resident; the step-by-step path takes over there.  It is never taken where something reads iterations
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


def moves_with_growth(e: M.Expr) -> bool:
    """Does `e` read what a resident's growth changes (kv_decode, a pool's
    occupancy)?"""
    for x in walk(e):
        t = type(x)
        if (t is M.ECtx and x.var in ("Kvb", "Kvp")) or t is M.EQuery:
            return True
    return False


def eligible(stage, decl) -> bool:
    """Whether stage `decl`'s engine can take strokes at all (read once);
    notes on the stage whether its plan (budget, chunk) is the same at every
    iteration of a stroke."""
    k = decl.kind
    if k.iteration is not None or type(k.serve) is not M.ServeBy or k.serve.keys:
        return False
    if not (steady(k.budget, _PLAN_CTX_OK) and steady(k.chunk, _PLAN_CTX_OK) and steady(k.cost)):
        return False
    stage.stroke_plan_static = not (moves_with_growth(k.budget) or moves_with_growth(k.chunk))
    stage.stroke_cost_moves = moves_with_growth(k.cost)
    return True


def _plain(pool) -> bool:
    """A pool whose growth is the step-by-step path's alone to say: no
    content-addressed index, no spill, no outstanding reservations."""
    return not (pool.shared or pool.decl.spill is not None or pool.reserve_held)


def _integral(x: float) -> bool:
    return x == math.floor(x) and abs(x) < _BIG


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


def advance(stage) -> None:
    """Run the stroke of `stage`'s next iterations, if there is one, and leave
    the engine where the step-by-step path would be before the iteration the
    stroke stops at (which the caller then runs as usual)."""
    sim = stage.sim
    res = stage.residents
    if not res or stage.claims_every or sim.ready:
        return
    # what is cheap to read first: nobody waits for this engine, or for a
    # pool, or for another engine
    for p in stage.admit_pools:
        if p.nqueued:
            return
    for p in sim.pools:
        if p.growers or (p.nqueued and p.admit_via is None):
            return
    for s in sim.step_stages:
        if s is not stage and not s.iterating and (s.residents or any(p.nqueued for p in s.admit_pools)):
            return
    n = len(res)
    m_cap = math.inf
    # every resident decodes, its counts whole numbers (which then move by
    # i in one subtraction, exactly); x % 1.0 is 0.0 for a whole x (NaN for inf)
    for j in res:
        rem = j.rem
        if not j.alive or j.mode != MODE_DECODE or rem % 1.0 != 0.0 or rem >= _BIG:
            return
        pa = j.pa
        if pa is not None and (pa.released or pa.pos % 1.0 != 0.0 or pa.alloc % 1.0 != 0.0 or
                               pa.pos >= _BIG or pa.alloc >= _BIG):
            return
        sess = j.thread.sess
        if sess.in_turn and (sess.first is None or sess.outs % 1.0 != 0.0 or sess.outs >= _BIG):
            return
        if rem - 1.0 < m_cap:
            m_cap = rem - 1.0           # the last token is the step-by-step path's
    cap_ev = sim.limits.max_events
    if cap_ev is not None:
        # --max-events stops the run at an event the step-by-step path counts:
        # the stroke leaves the last events before it to that path
        m_cap = min(m_cap, cap_ev - sim.nevents - 2)
    if m_cap < 1:
        return
    if not _integral(stage.served_total):
        return

    heap = sim.heap
    te = heap[0][0] if heap else math.inf
    horizon = sim.horizon
    warmup = sim.warmup
    t = sim.now
    cold = t < warmup
    ctx = sim.ctx
    mcar = sim.mcar
    mem = stage.memory

    # the residents' growth: a heap of (the iteration at which each next
    # needs a block, its place in the serving order, its hold's allocation)
    cross = []
    for r, j in enumerate(res):
        pa = j.pa
        if pa is not None:
            if not _plain(pa.pool):
                return
            cross.append((int(pa.alloc - pa.pos), r, pa))
    if not all(_one_alloc(stage, j) for j in res):
        return
    heapq.heapify(cross)
    # each resident's memory as kv_decode reads it (mem_alloc), and whether its
    # run's growth adds to it
    allocs = [stage.mem_alloc(j.thread) for j in res]
    in_kv = [j.pa is not None and j.pa.pool is mem for j in res]
    need_kv = stage.need_kv
    plan_static = stage.stroke_plan_static
    cost_moves = stage.stroke_cost_moves
    fb, fc, fcost = stage.f_budget, stage.f_chunk, stage.f_cost
    nres = float(n)

    def plan_ok() -> bool:
        """The iteration's budget serves every resident a token, its chunk is a
        number (a fault is the step-by-step path's to report)."""
        try:
            budget = fb(mcar)
            chunk = fc(mcar)
        except Fault:
            return False
        return budget == budget and chunk == chunk and budget >= nres

    def cost_of() -> float:
        try:
            return fcost(mcar)
        except Fault:
            return math.nan

    # the context as the step-by-step path sets it for these iterations: only
    # kv_decode moves (with the growth), and only where the engine reads it
    ctx[C_NOW] = t
    kvb = _batch_kv(allocs)
    ctx[C_NRES] = nres
    ctx[C_NDEC] = nres
    ctx[C_KVB] = kvb if need_kv else 0.0
    ctx[C_KVP] = 0.0
    if not plan_ok():
        return
    ctx[C_NTOK] = nres
    ctx[C_NPRE] = 0.0
    ctx[C_ATTN] = 0.0
    cost = cost_of()
    if not (cost > 0):
        return
    acc_n = acc_busy = None        # read once the first iteration is the stroke's
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
    i = 0
    m_cap = int(m_cap)
    # kv_decode moves by the growth alone where every allocation is a whole
    # number of units (then every partial sum is exact, in any order): whole
    # blocks, or, in a pool without blocks, a whole position to grow from
    exact_kv = kvb < _EXACT and all(_integral(a) for a in allocs) and \
        all(_integral(c[2].pool.block) if c[2].pool.block else _integral(c[2].pos) for c in cross)
    pop, push = heapq.heappop, heapq.heappush
    while i < m_cap:
        next_cross = cross[0][0] if cross else m_cap
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
            t_next = t + c
            if not (c > 0 and t < t_next < lim):
                break
            # this iteration is the stroke's: grow as its serving would
            # (Sim.grow_to's own steps once the growth is known to fit)
            if acc_n is None:
                stage.tick(t0)     # the first iteration's start closes the time before it
                acc_n, acc_busy = stage.acc_n, stage.acc_busy
            sim.now = t
            ctx[C_NOW] = t
            for (_, r, pa), d in zip(crossing, grow):
                pa.pool.grow_at(pa, d, t)
                push(cross, (int(pa.alloc - pa.pos), r, pa))
            kvb = kvb_post
            cost = c
            # the next iteration's plan reads the grown blocks
            if not plan_static and i + 1 < m_cap and not plan_ok():
                m_cap = i + 1
            dt = t_next - t
            acc_n += nres * dt
            acc_busy += dt
            t = t_next
            i += 1
            continue
        # the iterations before the next growth: the same cost each
        t_next = t + cost
        if not (t < t_next < lim):
            break
        if acc_n is None:
            stage.tick(t0)         # the first iteration's start closes the time before it
            acc_n, acc_busy = stage.acc_n, stage.acc_busy
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
        ctx[C_NOW] = sim.now
        return
    # the stroke's i iterations: the counters, the residents, the clock
    stage.acc_n, stage.acc_busy, stage.t_acc = acc_n, acc_busy, t
    stage.it += i
    stage.iters_all += i
    stage.stroke_iters += i
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
        sess = j.thread.sess
        if sess.in_turn:
            sess.outs += fi
    sim.now = t
    ctx[C_NOW] = t


def _batch_kv(allocs) -> float:
    """kv_decode as the step-by-step path sums it, the residents in order."""
    tot = 0.0
    for a in allocs:
        tot += a
    return tot


def _one_alloc(stage, j) -> bool:
    """The resident's thread holds the engine's memory through its run's hold alone."""
    pid = stage.mem_pid
    if pid is None:
        return True
    k = 0
    for h in j.thread.holds:
        for pa in h.allocs:
            if pa.pool.pid == pid and not pa.released:
                k += 1
    return k <= 1
