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
* a resident that needs a block grows through ``Sim.grow_to`` at that
  iteration's start, so the pool's accounting, its evictions and their order
  are the step-by-step path's own;
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

import math

from ..ir import model as M
from ..ir.expr import walk
from .compile import CTX
from .errors import Fault
from .pools import round_up
from .stages import MODE_DECODE

C_NOW = CTX["Now"]
C_NRES, C_NDEC, C_KVB, C_KVP = CTX["Nres"], CTX["Ndec"], CTX["Kvb"], CTX["Kvp"]
C_NTOK, C_NPRE, C_ATTN = CTX["Ntok"], CTX["Npre"], CTX["Attn"]

# what an engine's clauses may read for its iterations to be identical
_CTX_OK = {"Nres", "Ndec", "Kvb", "Kvp", "Ntok", "Npre", "Attn"}
_QUERY_OK = {"Used", "Free", "Holders", "Queued", "Queue", "Busy", "CachedIn"}

GROW_OK = 0


def steady(e: M.Expr) -> bool:
    """Does `e` read nothing that moves between two identical iterations?"""
    for x in walk(e):
        t = type(x)
        if t is M.ECtx and x.var not in _CTX_OK:
            return False
        if t in (M.ESample, M.EPrice, M.EAgg):
            return False
        if t is M.EQuery and x.query not in _QUERY_OK:
            return False
    return True


def eligible(stage, decl) -> bool:
    """Whether stage `decl`'s engine can take strokes at all (read once)."""
    k = decl.kind
    if k.iteration is not None or type(k.serve) is not M.ServeBy or k.serve.keys:
        return False
    if not all(steady(e) for e in (k.budget, k.chunk, k.cost)):
        return False
    return True


def _plain(pool) -> bool:
    """A pool whose growth is the step-by-step path's alone to say: no
    content-addressed index, no spill, no outstanding reservations."""
    return not (pool.shared or pool.decl.spill is not None or pool.reserve_held)


def _integral(x: float) -> bool:
    return x == math.floor(x) and abs(x) < 2.0 ** 50


def advance(stage) -> None:
    """Run the stroke of `stage`'s next iterations, if there is one, and leave
    the engine where the step-by-step path would be before the iteration the
    stroke stops at (which the caller then runs as usual)."""
    sim = stage.sim
    res = stage.residents
    if not res or stage.claims_every or sim.ready:
        return
    n = len(res)
    m_cap = math.inf
    for j in res:
        if not j.alive or j.mode != MODE_DECODE or not _integral(j.rem):
            return
        pa = j.pa
        if pa is not None and (pa.released or not (_integral(pa.pos) and _integral(pa.alloc))):
            return
        sess = j.thread.sess
        if sess.in_turn and (sess.first is None or not _integral(sess.outs)):
            return
        if j.rem - 1.0 < m_cap:
            m_cap = j.rem - 1.0         # the last token is the step-by-step path's
    cap_ev = sim.limits.max_events
    if cap_ev is not None:
        # --max-events stops the run at an event the step-by-step path counts:
        # the stroke leaves the last events before it to that path
        m_cap = min(m_cap, cap_ev - sim.nevents - 2)
    if m_cap < 1:
        return
    for p in stage.admit_pools:
        if p.nqueued:
            return
    for p in sim.pools:
        if p.growers or (p.nqueued and p.admit_via is None):
            return
    for s in sim.step_stages:
        if s is not stage and not s.iterating and (s.residents or any(p.nqueued for p in s.admit_pools)):
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

    # the residents' growth: (the iteration at which each next needs a block),
    # on whichever pool its run grows
    grows = []      # [resident's place, its hold's allocation, next crossing iteration]
    for r, j in enumerate(res):
        pa = j.pa
        if pa is not None:
            if not _plain(pa.pool):
                return
            grows.append([r, pa, int(pa.alloc - pa.pos)])
    if not all(_one_alloc(stage, j) for j in res):
        return
    # each resident's memory as kv_decode reads it (mem_alloc), and whether its
    # run's growth adds to it
    allocs = [stage.mem_alloc(j.thread) for j in res]
    in_kv = [j.pa is not None and j.pa.pool is mem for j in res]

    def batch_kv(allocs):
        """kv_decode as the step-by-step path sums it, the residents in order."""
        tot = 0.0
        for a in allocs:
            tot += a
        return tot

    need_kv = stage.need_kv
    fb, fc, fcost = stage.f_budget, stage.f_chunk, stage.f_cost
    nres = float(n)

    def plan_ok(kvb) -> bool:
        """The iteration's budget serves every resident a token, its chunk is a
        number (a fault is the step-by-step path's to report)."""
        ctx[C_NRES] = nres
        ctx[C_NDEC] = nres
        ctx[C_KVB] = kvb if need_kv else 0.0
        ctx[C_KVP] = 0.0
        try:
            budget = fb(mcar)
            chunk = fc(mcar)
        except Fault:
            return False
        return budget == budget and chunk == chunk and budget >= nres

    def cost_of(kvb) -> float:
        ctx[C_NRES] = nres
        ctx[C_NDEC] = nres
        ctx[C_KVB] = kvb if need_kv else 0.0
        ctx[C_KVP] = 0.0
        ctx[C_NTOK] = nres
        ctx[C_NPRE] = 0.0
        ctx[C_ATTN] = 0.0
        try:
            return fcost(mcar)
        except Fault:
            return math.nan

    ctx[C_NOW] = t
    kvb = batch_kv(allocs)
    if not plan_ok(kvb):
        return
    cost = cost_of(kvb)
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
    next_cross = min((g[2] for g in grows), default=math.inf)
    while i < m_cap:
        if i >= next_cross:
            # the residents that need a block at this iteration, in serving
            # order, each fitting as Pool.fits_growth would see it
            crossing = []
            post = allocs[:]
            used = {}
            short = False
            for g in grows:
                if g[2] > i:
                    continue
                pa = g[1]
                pool = pa.pool
                d = round_up(pool.block, pa.pos + i + 1.0) - pa.alloc
                u = used.get(pool.pid, pool.used)
                if not (u + d <= pool.cap):
                    short = True
                    break
                used[pool.pid] = u + d
                if in_kv[g[0]]:
                    post[g[0]] = allocs[g[0]] + d
                crossing.append(g)
            if short:
                break                 # a growth would preempt or wait: the step-by-step path's
            kvb_post = batch_kv(post)
            c = cost_of(kvb_post)
            if not (c > 0):
                break
            t_next = t + c
            if not (t < t_next < lim):
                break
            # this iteration is the stroke's: grow as its serving would
            if acc_n is None:
                stage.tick(t0)     # the first iteration's start closes the time before it
                acc_n, acc_busy = stage.acc_n, stage.acc_busy
            stage.acc_n, stage.acc_busy, stage.t_acc = acc_n, acc_busy, t
            sim.now = t
            ctx[C_NOW] = t
            for g in crossing:
                pa = g[1]
                pa.pos += i
                r = sim.grow_to(pa, pa.pos + 1.0, res[g[0]].thread)
                pa.pos -= i
                if r != GROW_OK:   # pragma: no cover - the room was counted
                    raise AssertionError("a stroke's growth did not fit")
                g[2] = int(pa.alloc - pa.pos)
            next_cross = math.inf
            for g in grows:
                if g[2] < next_cross:
                    next_cross = g[2]
            allocs = post
            kvb = kvb_post
            cost = c
            # the next iteration's plan reads the grown blocks
            if i + 1 < m_cap and not plan_ok(kvb):
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
        while True:
            dt = t_next - t
            acc_n += nres * dt
            acc_busy += dt
            t = t_next
            i += 1
            if i >= stop:
                break
            t_next = t + cost
            if not (t < t_next < lim):
                break
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
