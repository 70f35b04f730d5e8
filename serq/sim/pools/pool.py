"""A pool's state: allocations, the prefix cache, the admission queue and
growers, and what changes it (taking, growing, giving back, eviction).

State of one pool (§Semantics, Configuration):

* ``allocs``: the allocations of its holders, in the order the pool
  admitted them (a dict keyed by a sequence number, so that removal is
  O(1) and iteration is admission order); a lease is an allocation too;
* the cache: entries of units with their release time and release order,
  per session (``live``: the entry a session's next admission can consume)
  or dead (the unusable remainder of a partly consumed entry);
* the admission queue: ``front`` (preempted holds that re-entered at the
  head, the most recent first) and ``rest`` (the others, in join order);
* the growers: holds waiting to grow, in the order they stalled.

Invariant (checked by the test hook): ``used + cached <= cap`` and every
allocation is >= 0.
"""

from __future__ import annotations

import math
from typing import Optional

from ...ir import model as M
from ..compile import CTX
from ..stages import MODE_DECODE, MODE_PREFILL

# what `reserve held (e)` reads for each live hold
_HELD_CTX = (CTX["Decoding"], CTX["Remaining"], CTX["Position"], CTX["Reserved"])


_WHOLE = 2.0 ** 52     # whole numbers below it add and subtract exactly


def round_up(b: Optional[float], u: float) -> float:
    if not b:
        return u
    if u <= 0:
        return 0.0
    q = u / b - 1e-12
    if q - q != 0.0:    # inf (or NaN): no whole number of blocks to round to
        return u
    return math.ceil(q) * b


def round_down(b: Optional[float], u: float) -> float:
    if not b:
        return u
    if u <= 0:
        return 0.0
    q = u / b + 1e-12
    if q - q != 0.0:
        return u
    return math.floor(q) * b


def decl_free(decl):
    """A pool's `then free (e)` expression, or None."""
    pre = decl.preempt
    return pre.free if type(pre) is M.PreemptBy else None


class Entry:
    """A cache entry: ``units`` of one session's prefix."""

    __slots__ = ("sess", "units", "last", "seq", "dead", "evicted")

    def __init__(self, sess, units: float, last: float, seq: int, dead: bool = False):
        self.sess = sess
        self.units = units
        self.last = last
        self.seq = seq
        self.dead = dead
        self.evicted = 0.0


class PoolAlloc:
    """One hold's (or lease's) allocation on one pool."""

    __slots__ = ("pool", "hold", "alloc", "pos", "res", "seq", "lease", "lease_evt", "thread",
                 "released", "cache_fn", "cache_carrier", "blocks", "nnamed")

    def __init__(self, pool, hold, thread, seq: int):
        self.pool = pool
        self.hold = hold
        self.thread = thread
        self.alloc = 0.0
        self.pos = 0.0       # consumed prefix + tokens computed (growing runs, loads)
        self.res = 0.0       # max(units, reserve) rounded to blocks, for `reserve held`
        self.seq = seq       # the pool's admission order
        self.lease = False
        self.lease_evt = None
        self.released = False
        self.cache_fn = None
        self.cache_carrier = None


class HoldInst:
    """One execution of a hold statement by a thread."""

    __slots__ = ("thread", "st", "allocs", "grown", "adm_seq", "frame_parent", "pc", "pids",
                 "consumed")

    def __init__(self, thread, st, pids, adm_seq: int):
        self.thread = thread
        self.st = st
        self.pids = pids
        self.allocs = []      # PoolAlloc per pool of the hold, in the hold's order
        self.grown = False    # a growing run or a load advanced a position
        self.adm_seq = adm_seq
        self.frame_parent = None
        self.pc = 0
        self.consumed = 0.0

    def alloc_on(self, pid: int):
        for pa in self.allocs:
            if pa.pool.pid == pid and not pa.released:
                return pa
        return None


class Req:
    """A hold waiting in a pool's queue."""

    __slots__ = ("thread", "st", "pids", "seq", "t_join", "front", "gen", "parent", "pc")

    def __init__(self, thread, st, pids, seq: int, t_join: float, front: bool, parent, pc: int):
        self.thread = thread
        self.st = st
        self.pids = pids
        self.seq = seq
        self.t_join = t_join
        self.front = front
        self.parent = parent
        self.pc = pc


class Grower:
    __slots__ = ("thread", "pa", "need", "st")

    def __init__(self, thread, pa, need, st):
        self.thread = thread
        self.pa = pa
        self.need = need
        self.st = st


class Pool:
    """A pool whose cache entries are per session (the default); a
    content-addressed one (`cache shared;`) is serq.sim.pools.prefix.SharedPool,
    which keeps the calls below."""

    shared = False
    tree = False        # a radix tree (serq.sim.pools.tree.TreePool)

    def __init__(self, sim, pid: int, decl: M.Pool):
        self.sim = sim
        self.pid = pid
        self.decl = decl
        self.label = sim.program.pool_label(pid)
        self.cap = decl.cap
        self.block = decl.block or None
        self.allocs: dict[int, PoolAlloc] = {}
        self.used = 0.0
        self.cached = 0.0
        self.live: dict[int, Entry] = {}        # session serial -> live entry
        self.entries: dict[int, Entry] = {}     # release seq -> entry (release order)
        self.front: list[Req] = []
        self.rest: list[Req] = []
        self.nqueued = 0
        self.growers: list[Grower] = []
        self.lru = type(decl.evict) is M.EvictLru
        self.evict_keys = None if self.lru else decl.evict.keys
        self.preempt_by = type(decl.preempt) is M.PreemptBy
        self.preempt_keys = decl.preempt.keys if self.preempt_by else ()
        self.requeue_tail = decl.preempt.tail if self.preempt_by else False
        self.queue_keys = decl.queue
        self.ordered = decl.ordered     # `queue ordered by`: rest kept in its last sort's order
        self.f_tail_when = self.f_tail_shared = None
        self.admit_via = decl.admit_via
        self.reserve_held = decl.reserve_held
        self.f_held = None      # `reserve held (e)`, compiled with the rules
        self.f_cache_at = None  # `cache at (e)` (read on a content-addressed pool)
        self.f_then_free = None  # `preempt … then free (e)`
        self.memory_of = None   # the step stage whose memory this pool is
        self.dirty = True
        # statistics
        self.acc_used = 0.0
        self.acc_cached = 0.0
        self.acc_queue = 0.0
        self.acc_holders = 0.0
        self.t_acc = 0.0
        self.admissions = 0
        self.wait_sum = 0.0
        self.wait_n = 0
        self.evicted_entries = 0
        self.evicted_units = 0.0
        self.preemptions = 0
        self.preemptions_all = 0
        self.spills = 0
        self.rejected = 0
        self.over_cap = 0
        self.over_notes: list = []

    def compile_rules(self, comp) -> None:
        """The pool's rules as functions: its eviction keys (``evict by``),
        preemption keys, queue keys and spill (``spill to … via … work …
        when …``)."""
        self.f_evict = [comp.expr(k) for k in self.evict_keys] if self.evict_keys else None
        self.f_victim = [comp.expr(k) for k in self.preempt_keys]
        self.f_queue = [comp.expr(k) for k in self.queue_keys] if self.queue_keys else None
        if self.decl.tail_when is not None:
            self.f_tail_when = comp.expr(self.decl.tail_when)
            self.f_tail_shared = comp.expr(self.decl.tail_shared)
        self.f_held = comp.expr(self.decl.held) if self.decl.held is not None else None
        self.f_cache_at = comp.expr(self.decl.cache_at) if self.decl.cache_at is not None else None
        free = decl_free(self.decl)
        self.f_then_free = comp.expr(free) if free is not None else None
        sp = self.decl.spill
        if sp is not None:
            self.spill_to = comp.member(sp.to, "pool")
            self.spill_via = comp.member(sp.via, "stage")
            self.spill_work = comp.expr(sp.work)
            self.spill_when = comp.expr(sp.when)

    # -- time averages -------------------------------------------------------
    def tick(self, now: float) -> None:
        dt = now - self.t_acc
        if dt > 0.0:
            self.acc_used += self.used * dt
            self.acc_cached += self.cached * dt
            self.acc_queue += self.nqueued * dt
            self.acc_holders += len(self.allocs) * dt
            self.t_acc = now

    # -- queries ---------------------------------------------------------------
    def cached_of(self, sess) -> float:
        if sess is None:
            return 0.0
        e = self.live.get(sess.sid)
        return e.units if e is not None else 0.0

    def outstanding(self, exclude=None) -> float:
        """Σ max(0, r_i - a_i) over live holds (``reserve held``); with
        ``reserve held (e)``, Σ e read for each (``held``)."""
        if self.f_held is not None:
            return self.held(exclude)
        tot = 0.0
        for pa in self.allocs.values():
            if pa is exclude or pa.lease:
                continue
            d = pa.res - pa.alloc
            if d > 0:
                tot += d
        return tot

    def held(self, exclude=None) -> float:
        """Σ over the live holds of ``reserve held (e)``'s e, read for each:
        ``decoding`` (its run on the engine is a decode), ``remaining`` (the
        tokens that run has left once the iteration's batch so far is done),
        ``position`` and ``reserved`` (its reserve less its allocation, at
        least 0); a negative or NaN value counts as 0, and the total is
        rounded down to whole blocks (a fraction of a block reserves none:
        SGLang's strict check of a whole number against a fraction,
        mem_cache/prefill_budget.py:114-130)."""
        ctx = self.sim.ctx
        saved = [ctx[i] for i in _HELD_CTX]
        c_dec, c_rem, c_pos, c_res = _HELD_CTX
        f = self.f_held
        tot = 0.0
        try:
            for pa in self.allocs.values():
                if pa is exclude or pa.lease:
                    continue
                t = pa.thread
                j = t.job
                if j is not None and j.alive:
                    rem = j.rem
                    st = j.stage
                    plan = getattr(st, "plan", None)
                    if plan is not None and getattr(j, "served_it", -1) == plan.it:
                        rem -= j.plan_n
                    ctx[c_dec] = 1.0 if j.mode == MODE_DECODE else 0.0
                    ctx[c_rem] = rem if rem > 0 else 0.0
                else:
                    ctx[c_dec] = 0.0
                    ctx[c_rem] = 0.0
                ctx[c_pos] = pa.pos
                d = pa.res - pa.alloc
                ctx[c_res] = d if d > 0 else 0.0
                v = f(t)
                if v > 0:
                    tot += v
        finally:
            for i, v in zip(_HELD_CTX, saved):
                ctx[i] = v
        return round_down(self.block, tot)

    def prefilling(self) -> float:
        """``prefilling(P)``: what the running prefills of the engine this pool
        is the memory of have still to allocate on it to finish -- for each
        resident whose growing run is a prefill, the run's end rounded up to
        blocks, less its allocation (vLLM's _inflight_prefill_reserved_blocks,
        v1/core/sched/scheduler.py:3404-3436).  0 for a pool that is no
        engine's memory."""
        S = self.memory_of
        if S is None:
            return 0.0
        tot = 0.0
        for j in S.residents:
            pa = j.pa
            if not j.alive or j.mode != MODE_PREFILL or pa is None or pa.pool is not self or pa.released:
                continue
            d = round_up(self.block, pa.pos + j.rem) - pa.alloc
            if d > 0:
                tot += d
        return tot

    def fits_admission(self, need: float) -> bool:
        if self.reserve_held:
            return self.used + self.outstanding() + need <= self.cap
        return self.used + need <= self.cap

    def fits_growth(self, need: float, pa) -> bool:
        if self.reserve_held and self.f_held is None:   # `reserve held (e)` is admission's alone
            return self.used + self.outstanding(exclude=pa) + need <= self.cap
        return self.used + need <= self.cap

    # -- a hold's allocation (what the pool commands call) ----------------------
    def fits_hold(self, need: float, sess, units: float, reuse, caching: bool) -> bool:
        return self.fits_admission(need)

    def take(self, pa, sess, units: float, caching: bool, reuse) -> float:
        """Admit ``pa``: consume the session's prefix (a hold with a cache
        clause), allocate ``units`` rounded up to blocks; the units consumed."""
        c = self.consume(sess, reuse) if caching else 0.0
        alloc = round_up(self.block, units)
        self.make_room(alloc)
        self.used += alloc
        pa.alloc = alloc
        self.sim.alloc_ver += 1
        pa.pos = c
        return c

    def grow(self, pa, need: float) -> None:
        self.make_room(need)
        self.used += need
        pa.alloc += need
        self.sim.alloc_ver += 1

    def grow_at(self, pa, need: float, now: float) -> None:
        """``tick(now)`` then ``grow(pa, need)``, in one call (an engine's
        residents grow a block every few iterations)."""
        dt = now - self.t_acc
        if dt > 0.0:
            self.acc_used += self.used * dt
            self.acc_cached += self.cached * dt
            self.acc_queue += self.nqueued * dt
            self.acc_holders += len(self.allocs) * dt
            self.t_acc = now
        if self.used + self.cached + need > self.cap and self.entries:
            self.make_room(need)
        self.used += need
        pa.alloc += need
        self.sim.alloc_ver += 1

    def scheduled(self, pa, tokens: float) -> None:
        """An engine schedules the hold's tokens up to ``tokens`` (a
        content-addressed pool names their blocks)."""

    def give_back(self, pa, keep, now: float, preempt: bool = False) -> None:
        """Release ``pa``, caching ``keep`` units (None or 0: nothing) as its
        session's entry (``preempt``: the hold was preempted)."""
        self.used -= pa.alloc
        if self.used < 1e-9 and len(self.allocs) <= 1:
            self.used = 0.0
        self.allocs.pop(pa.seq, None)
        if keep:
            self.add_entry(pa.thread.sess, keep, now)

    # -- the queue -------------------------------------------------------------
    def enqueue(self, req: Req) -> None:
        self.sim.pool_tick(self)
        if req.front:
            self.front.insert(0, req)
        else:
            self.rest.append(req)
        self.nqueued += 1
        self.dirty = True

    def dequeue(self, req: Req) -> None:
        self.sim.pool_tick(self)
        if req.front:
            self.front.remove(req)
        else:
            self.rest.remove(req)
        self.nqueued -= 1

    def head(self) -> Optional[Req]:
        if self.front:
            return self.front[0]
        if not self.rest:
            return None
        if self.queue_keys is None:
            return self.rest[0]
        if self.ordered:
            # sorted when its engine's iteration reaches `admit waiting`
            # (serq.sim.step); a queue no engine admits, whenever asked
            if self.admit_via is None:
                self.sim.sort_ordered(self)
            return self.rest[0]
        return self.sim.select_by_keys(self)

    # -- the cache -------------------------------------------------------------
    def add_entry(self, sess, units: float, now: float) -> None:
        """Cache ``units`` as the session's live entry (replacing the one it
        had)."""
        old = self.live.pop(sess.sid, None)
        if old is not None:
            del self.entries[old.seq]
            self.cached -= old.units
        seq = self.sim.next_release()
        e = Entry(sess, units, now, seq)
        self.entries[seq] = e
        self.live[sess.sid] = e
        self.cached += units

    def consume(self, sess, reuse: Optional[float]) -> float:
        """On admission of a hold with a cache clause: consume at most
        ``reuse`` (rounded down to blocks) of the session's live entry; the
        rest stays as a dead entry with the same age and release order."""
        e = self.live.pop(sess.sid, None)
        if e is None:
            return 0.0
        own = e.units
        if reuse is None:
            keep = own
        else:
            keep = round_down(self.block, min(reuse, own))
        dead = own - keep
        self.cached -= keep
        if dead > 0:
            e.units = dead
            e.dead = True
        else:
            del self.entries[e.seq]
        return keep

    def drop(self, sess) -> None:
        e = self.live.pop(sess.sid, None)
        if e is not None:
            del self.entries[e.seq]
            self.cached -= e.units

    def _evict_lru_whole(self, need: float) -> None:
        """make_room's loop in LRU order where every amount is a whole
        number (below 2^52): the blocks it would evict one by one from an
        entry are taken in one subtraction, which is then exact, so the
        state after is the loop's to the bit."""
        b = self.block
        sim = self.sim
        counted = sim.now >= sim.warmup
        entries = self.entries
        while entries:
            excess = self.used + self.cached + need - self.cap
            if not (excess > 0):
                break
            e = next(iter(entries.values()))
            units = e.units
            if units % 1.0 != 0.0:
                # an entry of a fraction of a unit: the loop's own steps
                rm = min(b, units)
                e.units = units - rm
                self.cached -= rm
                if counted:
                    self.evicted_units += rm
                if e.units <= 1e-12:
                    self._evicted(e, counted)
                continue
            k = math.ceil(excess / b)        # the blocks the loop would take, one by one
            if k * b < units:
                rm = k * b
                e.units = units - rm
                self.cached -= rm
                if counted:
                    self.evicted_units += rm
            else:
                e.units = 0.0
                self.cached -= units
                if counted:
                    self.evicted_units += units
                self._evicted(e, counted)
        if self.cached < 1e-9:
            self.cached = 0.0

    def _evicted(self, e, counted: bool) -> None:
        """An entry evicted to its last unit leaves the cache."""
        self.cached -= e.units
        del self.entries[e.seq]
        if not e.dead and self.live.get(e.sess.sid) is e:
            del self.live[e.sess.sid]
        if counted:
            self.evicted_entries += 1

    def free_up(self, need: float) -> None:
        """Evict until ``need`` units are free (`then free`)."""
        self.make_room(need)

    def make_room(self, need: float) -> None:
        """Evict, per entry or per block from an entry's tail, in the pool's
        order, until ``used + cached + need <= cap`` (or the cache is empty)."""
        if self.used + self.cached + need <= self.cap or not self.entries:
            return
        self.sim.pool_tick(self)
        sim = self.sim
        spill = self.decl.spill
        b = self.block
        # (x % 1.0 == 0.0: x is a whole number, of either type; not inf or NaN)
        if self.lru and spill is None and b and self.cap < _WHOLE and self.evicted_units < _WHOLE and \
                b % 1.0 == 0.0 and need % 1.0 == 0.0 and self.used % 1.0 == 0.0 and \
                self.cached % 1.0 == 0.0 and self.cap % 1.0 == 0.0 and self.evicted_units % 1.0 == 0.0:
            self._evict_lru_whole(need)
            return
        touched = [] if spill is not None else None
        while self.used + self.cached + need > self.cap and self.entries:
            if self.lru:
                # release time is nondecreasing in release order, so the
                # entries dict (release order) is already the LRU order
                e = next(iter(self.entries.values()))
            else:
                e = sim.evict_choice(self)
            rm = min(b, e.units) if b else e.units
            e.units -= rm
            self.cached -= rm
            e.evicted += rm
            if sim.now >= sim.warmup:
                self.evicted_units += rm
            if touched is not None and e not in touched:
                touched.append(e)
            if e.units <= 1e-12:
                self.cached -= e.units
                del self.entries[e.seq]
                if not e.dead and self.live.get(e.sess.sid) is e:
                    del self.live[e.sess.sid]
                if sim.now >= sim.warmup:
                    self.evicted_entries += 1
        if self.cached < 1e-9:
            self.cached = 0.0
        if touched:
            for e in touched:
                sim.maybe_spill(self, e, e.evicted)
                e.evicted = 0.0
        elif touched is None:
            pass
