"""The content-addressed pool (`cache shared;`) kept as runs of blocks: the
same pool as ``prefix.SharedPool`` (its semantics, vLLM 0.33.0's and 0.19.0's,
are in that module's doc), with its work per run of consecutive blocks that
move together instead of per block.

A Mooncake request is thousands of tokens whose content is segments of 512
tokens: 32 blocks of 16 that are named, looked up, hit, freed and evicted
together.  Here:

* **Names.**  A block's name is its prefix: the tokens from position 0 to its
  end.  Two prefixes are equal exactly when they agree segment by segment up
  to the segment that holds the block's last token, which agrees up to it;
  so a block is named by the pair (its *slot*, its place j in the chain),
  the slot being that segment together with every whole segment before it
  (``_chain``: interned, so a slot is one integer) or, past the content, the
  session's own tokens after its whole content.  This is the name
  ``prefix.Chain``'s BLAKE2b digests give (one name, one prefix) without a
  digest per block: a session's chain is its list of segments, computed
  once, and the blocks of one segment are a range of j.
* **Runs.**  A ``Run`` is blocks j … j + n − 1 of one slot that were named
  together (or one after another by the same hold while no other block had
  their names) and have one reference count: the index keeps, per slot, its
  runs in the order they were named (the first run holding j is the block a
  lookup takes, ``get_one_block``); a hold keeps its named blocks as runs in
  chain order and its unnamed ones (always a tail: blocks are named in
  order) as a count; the free queue is a linked list of runs, each freed as
  a unit last block first, so its last block is nearest the head.
* **Splits.**  A run is split only where the blocks part: an admission whose
  hit ends inside it or that takes only part of it (the rest keeps its
  place in the queue and its holders), a release that keeps its first
  blocks and unnames the others, `drop`.  An eviction takes the top blocks
  of the queue's head run; a run emptied leaves the queue and the index.

Every amount changes by the blocks' count times the block in one operation
where the per-block loop's partial sums are whole numbers below 2^53 (then
both give the same float; otherwise block by block, ``_add``).  The
per-block pool (``prefix.SharedPool``) is this pool's reference:
``tests/sim/test_prefix_runs.py`` runs random operations and random
programs through both and compares every block after every step.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from .pool import Pool, round_up
from .prefix import SharedPool

_WHOLE = 2.0 ** 53
_HALF = 2.0 ** 52
_INF = math.inf


def _add(x: float, n: int, d: float) -> float:
    """``x + d`` added ``n`` times, one at a time: in one step where every
    partial sum is a whole number below 2^53 (each is then exact)."""
    y = x + n * d
    if -_WHOLE < y < _WHOLE and -_WHOLE < x < _WHOLE and x % 1.0 == 0.0 and d % 1.0 == 0.0 and \
            n * abs(d) < _WHOLE:
        return y
    for _ in range(n):
        x += d
    return x


class Run:
    """Blocks ``j`` … ``j + n − 1`` of slot ``g`` (``g`` None: free blocks
    without a name, in vLLM 0.19.0's queue), named as the ``seq``-th naming,
    held by ``holders`` (``ref`` of them); ``prev``/``next`` link it in the
    free queue while no hold uses it."""

    __slots__ = ("g", "j", "n", "ref", "seq", "holders", "prev", "next")

    def __init__(self, g, j: int, n: int, ref: int, seq: int, holders):
        self.g = g
        self.j = j
        self.n = n
        self.ref = ref
        self.seq = seq
        self.holders = holders
        self.prev = self.next = None


def _reach(lst, j, hi):
    """The first block from ``j`` on that no run of ``lst`` holds (at most
    ``hi``)."""
    while j < hi:
        for r in lst:
            if r.j <= j < r.j + r.n:
                j = r.j + r.n
                break
        else:
            return j
    return hi


def _first(lst, j, hi):
    """(the first run of ``lst``, in naming order, that holds block ``j``,
    the end of the blocks from ``j`` on, below ``hi``, for which it is the
    first), or (None, the end of the blocks from ``j`` that none holds)."""
    for k in range(len(lst)):
        r = lst[k]
        if r.j <= j < r.j + r.n:
            e = r.j + r.n
            if e > hi:
                e = hi
            for x in lst[:k]:      # a run named before it that starts further on
                if j < x.j < e:
                    e = x.j
            return r, e
    e = hi
    for x in lst:
        if j < x.j < e:
            e = x.j
    return None, e


class RunPool(SharedPool):
    """A content-addressed pool whose blocks are kept as runs (see the
    module's doc); it keeps ``SharedPool``'s calls and semantics.  What it
    inherits from it touches no block (``lookup``'s cache, ``_hit``, ``cached_of``,
    ``scheduled_at``)."""

    def __init__(self, sim, pid, decl):
        Pool.__init__(self, sim, pid, decl)
        self.bs = int(decl.block)
        self.index: dict = {}          # slot -> its runs, in naming order
        q = self.q = Run(None, 0, 0, 0, 0, None)    # the free queue's ends: q.next the head
        q.prev = q.next = q
        self.fifo = bool(decl.free_fifo) and math.isfinite(self.cap)
        # every amount (used, cached: at most the cap) a whole number below
        # 2^52: a count of blocks changes it in one step (see _add)
        self.whole = self.cap < _HALF
        if self.fifo and int(self.cap // self.bs) > 0:
            self._free_tail(int(self.cap // self.bs))
        self.seq = 0                   # namings so far
        self.version = 0               # bumped by every block named or unnamed
        self.hits_at = -1
        self.hits: dict = {}           # session -> leading blocks found, at `hits_at`
        tab = getattr(sim, "content_slots", None)
        if tab is None:                # (one table per run: every pool's chains read it)
            tab = sim.content_slots = ({}, {})
        self.tab = tab

    # -- a session's chain ------------------------------------------------------
    def _chain(self, sess):
        """(content, the token where each segment ends, its slot, the slot
        of the session's own tokens, the content's length), computed once
        per content."""
        c = sess.content
        got = getattr(sess, "run_chain", None)
        if got is not None and got[0] is c:
            return got
        nodes, slots = self.tab
        node = 0
        pos = 0
        ends = []
        ids = []
        for cid, n in c:
            if not n > 0:
                continue
            cid, n = int(cid), int(n)
            key = (node, cid)
            s = slots.get(key)
            if s is None:
                s = slots[key] = len(slots)
            pos += n
            ends.append(pos)
            ids.append(s)
            key = (node, cid, n)
            nd = nodes.get(key)
            if nd is None:
                nd = nodes[key] = len(nodes) + 1
            node = nd
        key = ("own", node, sess.sid)
        own = slots.get(key)
        if own is None:
            own = slots[key] = len(slots)
        got = sess.run_chain = (c, ends, ids, own, pos)
        return got

    def _slots(self, sess, a: int, b: int):
        """The chain's blocks a … b − 1 as (slot, first, end), slot by slot."""
        _, ends, ids, own, total = self._chain(sess)
        bs = self.bs
        if a >= total // bs:                         # the session's own tokens (a decode's)
            return [(own, a, b)] if a < b else []
        i = bisect_right(ends, (a + 1) * bs - 1)     # the segment holding block a's last token
        out = []
        n = len(ends)
        while a < b:
            if i == n:
                out.append((own, a, b))
                break
            e = ends[i] // bs
            if e > b:
                e = b
            if e > a:
                out.append((ids[i], a, e))
                a = e
            i += 1
        return out

    # -- the index and the queue -------------------------------------------------
    def _split(self, r, at: int):
        """Run ``r`` keeps its blocks below ``at``; the others are a new run
        beside it, in the index, in its holders and in the queue."""
        u = Run(r.g, at, r.j + r.n - at, r.ref, r.seq, None)
        r.n = at - r.j
        lst = self.index[r.g]
        lst.insert(lst.index(r) + 1, u)
        if r.ref:
            u.holders = r.holders[:]
            for pa in r.holders:
                b = pa.blocks
                b.insert(b.index(r) + 1, u)
        else:                           # freed last block first: its top nearer the head
            u.holders = []
            p = r.prev
            u.prev = p
            u.next = r
            p.next = u
            r.prev = u
        return u

    def _isolate(self, r, a: int, b: int):
        """The blocks a … b − 1 of run ``r`` as a run of their own."""
        if b < r.j + r.n:
            self._split(r, b)
        if a > r.j:
            r = self._split(r, a)
        return r

    def _unindex(self, r) -> None:
        lst = self.index[r.g]
        if len(lst) == 1:
            del self.index[r.g]
        else:
            lst.remove(r)

    def _unlink(self, r) -> None:
        p, x = r.prev, r.next
        p.next = x
        x.prev = p
        r.prev = r.next = None

    def _link_tail(self, r) -> None:
        q = self.q
        p = q.prev
        r.prev = p
        r.next = q
        p.next = r
        q.prev = r

    def _free_tail(self, n: int) -> None:
        """(``cache shared fifo;``) ``n`` free blocks without a name join the
        queue's tail."""
        last = self.q.prev
        if last is not self.q and last.g is None:
            last.n += n
        else:
            self._link_tail(Run(None, 0, n, 0, 0, None))

    def _found(self, sess) -> int:
        """(``lookup``'s answer, walked in the index run by run)"""
        _, ends, ids, own, _ = self._chain(sess)
        index = self.index
        bs = self.bs
        n = 0
        for i in range(len(ends)):
            e = ends[i] // bs
            if e <= n:
                continue
            lst = index.get(ids[i])
            if lst is None:
                break
            if len(lst) == 1:
                r = lst[0]
                if not r.j <= n < r.j + r.n:
                    break
                if r.j + r.n < e:
                    n = r.j + r.n
                    break
                n = e
                continue
            n = _reach(lst, n, e)
            if n < e:
                break
        else:
            lst = index.get(own)
            if lst is not None:
                n = _reach(lst, n, _INF)
        return n

    def _hit_runs(self, sess, h: int):
        """The runs a hit of ``h`` blocks takes, as (run, first block, end):
        for each block the first run, in naming order, that holds it."""
        index = self.index
        for g, a, b in self._slots(sess, 0, h):
            lst = index[g]
            while a < b:
                r, e = _first(lst, a, b)
                yield r, a, e
                a = e

    # -- what the machine calls ------------------------------------------------
    def fits_hold(self, need: float, sess, units: float, reuse, caching: bool) -> bool:
        """Room for ``need`` units next to the allocated ones, the hit blocks
        other holds already use counted once."""
        h = self._hit(sess, units, reuse, caching)
        held = 0
        if h:
            for r, a, e in self._hit_runs(sess, h):
                if r.ref > 0:
                    held += e - a
        return self.fits_admission(need - held * self.bs)

    def _use(self, pa, r, a: int, b: int) -> None:
        """The hold takes blocks a … b − 1 of run ``r`` (the first of their
        names): out of the free queue if no hold used them."""
        p = self._isolate(r, a, b)
        if p.ref == 0:
            self._unlink(p)
            if self.whole:
                self.cached -= p.n * self.bs
                self.used += p.n * self.bs
            else:
                self.cached = _add(self.cached, p.n, -self.bs)
                self.used = _add(self.used, p.n, self.bs)
        p.ref += 1
        p.holders.append(pa)
        pa.blocks.append(p)

    def take(self, pa, sess, units: float, caching: bool, reuse) -> float:
        bs = self.bs
        h = self._hit(sess, units, reuse, caching)
        pa.blocks = []
        if h:
            for r, a, e in self._hit_runs(sess, h):
                self._use(pa, r, a, e)      # (splits r in place: the walk goes on from e)
        new = int(round_up(bs, units) // bs) - h
        if new > 0:
            need = new * bs
            self.make_room(need)
            self.used += need
        pa.nnamed = h
        pa.alloc = float((h + (new if new > 0 else 0)) * bs)
        self.sim.alloc_ver += 1
        pa.pos = float(h * bs)
        return float(h * bs)

    def grow(self, pa, need: float) -> None:
        self.make_room(need)
        self.used += need
        pa.alloc += need
        self.sim.alloc_ver += 1

    def grow_at(self, pa, need: float, now: float) -> None:
        """``tick(now)`` then ``grow(pa, need)`` (a decode grows a block every
        few iterations)."""
        self.tick(now)
        if self.fifo or self.used + self.cached + need > self.cap:
            self.make_room(need)
        self.used += need
        pa.alloc += need
        self.sim.alloc_ver += 1

    def scheduled(self, pa, tokens: float) -> None:
        """(``SharedPool.scheduled``, a slot's blocks at a time)"""
        if pa.hold.st.f_cache is None:
            return
        bs = self.bs
        n = int(tokens // bs)
        nb = int(round(pa.alloc / bs))
        if n > nb:
            n = nb
        j = pa.nnamed
        if n <= j:
            return
        index = self.index
        named = 0
        if self.f_cache_at is None:
            for g, a, b in self._slots(pa.thread.sess, j, n):
                named += self._name(pa, g, a, b, index.get(g))
        else:
            for g, a, b in self._slots(pa.thread.sess, j, n):
                lst = index.get(g)
                while a < b:
                    r, e = (None, b) if lst is None else _first(lst, a, b)
                    if r is None:
                        named += self._name(pa, g, a, e, lst)
                        lst = index[g]
                    else:
                        self._adopt_run(pa, r, a, e)
                    a = e
        self.version += named
        pa.nnamed = n

    def _name(self, pa, g, a: int, b: int, lst) -> int:
        """The hold's blocks a … b − 1, of slot ``g``, are named: its last run
        goes on when they continue it and no block has their names yet (then
        they are the first of their names whatever its place in the naming
        order), else a new run, the latest named."""
        blocks = pa.blocks
        if blocks:
            last = blocks[-1]
            if last.g == g and last.j + last.n == a and last.ref == 1:
                for x in lst:
                    if x.j < b and a < x.j + x.n:
                        break
                else:
                    last.n += b - a
                    return b - a
        self.seq += 1
        r = Run(g, a, b - a, 1, self.seq, [pa])
        if lst is None:
            self.index[g] = [r]
        else:
            lst.append(r)
        blocks.append(r)
        return b - a

    def _adopt_run(self, pa, r, a: int, b: int) -> None:
        """(`cache at`) Blocks found late whose names the pool has: the hold
        takes the pool's (``SharedPool._adopt``, per block) and its own are
        free."""
        self._use(pa, r, a, b)
        self.used = _add(self.used, b - a, -self.bs)
        if self.fifo:
            self._free_tail(b - a)

    def give_back(self, pa, keep, now: float, preempt: bool = False) -> None:
        """(``SharedPool.give_back``, a run at a time: a run kept in part
        loses the names of its blocks from ``keep`` on)"""
        bs = self.bs
        k = self._kept(pa, keep)
        fifo = self.fifo
        used, cached = self.used, self.cached
        loose = int(round(pa.alloc / bs)) - pa.nnamed      # its unnamed blocks, a tail
        if loose > 0:
            used = _add(used, loose, -bs)
            if fifo:
                self._free_tail(loose)
        blocks = pa.blocks
        gone = 0
        for i in range(len(blocks) - 1, -1, -1):
            r = blocks[i]
            r.ref -= 1
            r.holders.remove(pa)
            if r.ref:
                continue
            used = _add(used, r.n, -bs)
            top = r.j + r.n
            if r.j < k:
                if top > k:             # its blocks from k on lose their names
                    r.n = k - r.j
                    gone += top - k
                    if fifo:
                        self._free_tail(top - k)
                self._link_tail(r)
                cached = _add(cached, r.n, bs)
            else:
                self._unindex(r)
                gone += r.n
                if fifo:
                    self._free_tail(r.n)
        self.used, self.cached = used, cached
        self.version += gone
        pa.blocks = []
        pa.nnamed = 0
        self.allocs.pop(pa.seq, None)

    def _take_head(self, count: int) -> None:
        """(``SharedPool._take_head``, a run at a time)"""
        q = self.q
        ticked = False
        after = self.sim.now >= self.sim.warmup
        while count > 0 and q.next is not q:
            r = q.next
            if r.g is None:
                if r.n > count:
                    r.n -= count
                    return
                count -= r.n
                self._unlink(r)
                continue
            if not ticked:
                self.sim.pool_tick(self)
                ticked = True
            t = r.n if r.n < count else count
            self._evict_top(r, t, after)
            count -= t

    def _evict_top(self, r, t: int, after: bool) -> None:
        """The ``t`` blocks of the head run ``r`` nearest the head are evicted."""
        bs = self.bs
        r.n -= t
        if r.n == 0:
            self._unlink(r)
            self._unindex(r)
        if self.whole:
            self.cached -= t * bs
        else:
            self.cached = _add(self.cached, t, -bs)
        self.version += t
        if after:
            ev = self.evicted_units
            self.evicted_units = ev + t * bs if ev < _HALF and t * bs < _HALF else _add(ev, t, bs)
            self.evicted_entries += t

    def _evict_for(self, need: float) -> None:
        """(``SharedPool.make_room`` without ``fifo``: the blocks it evicts
        taken a run at a time)"""
        q = self.q
        used, cached, cap = self.used, self.cached, self.cap
        if used + cached + need <= cap or q.next is q:
            return
        self.sim.pool_tick(self)
        after = self.sim.now >= self.sim.warmup
        if not (self.whole and need % 1.0 == 0.0 and -_HALF < need < _HALF):
            while q.next is not q and self.used + self.cached + need > cap:
                self._evict_top(q.next, 1, after)
            return
        # the blocks the per-block loop evicts: the least m after which it
        # stops, found on the loop's own sums (exact: whole numbers below 2^53)
        bs = self.bs
        m = max(1, math.ceil((used + cached + need - cap) / bs))
        while m > 1 and not used + (cached - (m - 1) * bs) + need > cap:
            m -= 1
        while used + (cached - m * bs) + need > cap and m * bs <= cached:
            m += 1
        while m > 0 and q.next is not q:
            r = q.next
            t = r.n if r.n < m else m
            self._evict_top(r, t, after)
            m -= t

    def drop(self, sess) -> None:
        """`drop`: the named blocks of the session's chain that no hold uses
        lose their names."""
        n = self.lookup(sess)
        index = self.index
        bs = self.bs
        for g, a, b in self._slots(sess, 0, n):
            for r in list(index[g]):
                if r.ref:
                    continue
                lo = r.j if r.j > a else a
                hi = r.j + r.n
                if hi > b:
                    hi = b
                if lo >= hi:
                    continue
                p = self._isolate(r, lo, hi)
                self._unindex(p)
                self.cached = _add(self.cached, p.n, -bs)
                self.version += p.n
                if self.fifo:
                    p.g = None          # it stays in its place, free
                else:
                    self._unlink(p)
