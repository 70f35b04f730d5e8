"""The content-addressed prefix cache (`cache shared;`), as vLLM 0.33.0's
KV-cache manager and block pool keep it.

A session's tokens are its content (``content (id, n);``, a trace's block
hashes, an explicit session's ``content``): segments from position 0, token k
of segment (id, n) being the pair (id, k), and every later token the
session's own (a pair no other session has).  A pool that says
``cache shared;`` holds blocks of ``block`` tokens; a full block is named by
its tokens and the name of the block before it (``Chain``: a 128-bit BLAKE2b
digest, as vLLM names blocks by a SHA-256 chain), so one name is one prefix,
whoever computed it.  The pool (``SharedPool``) keeps, as vLLM's
``BlockPool`` does (paths below are in vLLM 0.33.0's installed source,
``vllm/v1/core/``):

* blocks with a reference count: a block several holds use is one block
  (``block_pool.py:792-810``, ``touch``), so ``used`` counts it once;
* the index, name → the blocks of that name in the order they were named
  (vLLM's ``BlockHashToBlockMap`` does not merge a block computed twice,
  ``block_pool.py:36-53``; a lookup takes the first, ``get_one_block``,
  ``:63-72``);
* the free queue of named blocks no hold uses (``cached``), in the order they
  were freed; a hold frees its blocks last block first, so an entry's tail is
  evicted first (``free_blocks(reversed(...))``,
  ``single_type_kv_cache_manager.py:598-599``, ``block_pool.py:816-847``);
  blocks without a name are free space, used before any named block is
  evicted (they go to the queue's head, ``prepend_n``,
  ``block_pool.py:837-845``), and eviction takes the queue's head
  (``get_new_blocks``, ``block_pool.py:706-740``; its name goes,
  ``_maybe_evict_cached_block``, ``:769-790``).

What a hold on such a pool does (the pool commands and step.py call these):

* its admission looks its session's chain up (``cachedin``: the leading
  blocks found, stopping at the first miss, ``get_cached_block``,
  ``single_type_kv_cache_manager.py:792-800``), fits when the pool has room
  for its reserve less the hit blocks other holds already use
  (``num_evictable_blocks`` in ``get_num_blocks_to_allocate``, ``:256-266``,
  ``kv_cache_manager.py:531-548``), takes the hit (at most ``reuse`` and its
  units, whole blocks; the hit blocks' references go up first, so the same
  admission cannot evict them: ``allocate_new_computed_blocks`` before
  ``allocate_new_blocks``, ``kv_cache_manager.py:590-609``) and allocates
  the rest;
* the blocks an engine schedules tokens for are named when the iteration
  schedules them (``cache_blocks``, ``kv_cache_manager.py:616-625``), so a
  request admitted later in the same iteration finds them;
* at release (its end, a preemption, a lease's end) its first
  ``min(cache, computed)`` tokens' blocks keep their names (named now if no
  iteration did) and join the free queue; a block past them that no other
  hold uses loses its name.

The cost of an admission or a release is the blocks it touches, never the
size of the cache: the index is a dict, the free queue an ordered dict, and a
session's chain is computed once per block and kept.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections import OrderedDict
from itertools import islice, takewhile

from ..compile import CTX
from ..errors import Fault, fmt_num
from ..stages import MODE_DECODE
from .pool import Pool, round_up

# A run of a block's tokens: (tag, id, first offset, count), tag 0 a content
# id (a 64-bit unsigned hash id, exact: a Mooncake trace's), tag 1 a session
# number (the session's own tokens); every run is as long, so runs joined
# name their tokens one way only.
_PART = struct.Struct("<BQqq")
_AT_CTX = (CTX["Decoding"], CTX["Remaining"], CTX["Position"])   # what `cache at (e)` reads
_WHOLE = 2.0 ** 53


def add_content(sess, cid: float, n: float) -> None:
    """`content (id, n);`: the session's tokens continue with n tokens of
    the shared content id."""
    for v, what in ((cid, "the id"), (n, "the length")):
        # (below 2^53: every whole number there is a float's, and a block's
        # name packs it as a 64-bit integer)
        if not (v >= 0 and v < _WHOLE and v == math.floor(v)):
            raise Fault("R021", f"`content`: {what} is {fmt_num(v)}: a whole number from 0 to 2^53")
    if n > 0:
        sess.content = sess.content + ((cid, n),)
        sess.chains = None


def shared_from_start(a: tuple, b: tuple) -> float:
    """How many tokens two sessions' contents (segments (id, n), token k of
    a segment being the pair (id, k), every token after them a session's
    own) have in common from the start."""
    n = 0.0
    i = j = 0
    oa = ob = 0.0
    while i < len(a) and j < len(b):
        (ia, na), (ib, nb) = a[i], b[j]
        if ia != ib or oa != ob:
            break
        m = min(na - oa, nb - ob)
        n += m
        oa += m
        ob += m
        if oa >= na:
            i, oa = i + 1, 0.0
        if ob >= nb:
            j, ob = j + 1, 0.0
    return n


class Chain:
    """One session's block names for one block size, computed as far as a
    lookup or an iteration has needed them."""

    __slots__ = ("names", "segs", "seg", "off", "own")

    def __init__(self, sess):
        self.names = []
        self.segs = [(int(i), int(n)) for i, n in sess.content if n > 0]
        self.seg = 0          # the segment holding the next block's first token
        self.off = 0          # its offset there
        self.own = sess.sid

    def extend(self, bs: int, n: int) -> list:
        """Name blocks until there are ``n``: a block's name is the digest of
        its parent's and of its tokens, as runs (id, first offset, count)."""
        names = self.names
        segs = self.segs
        nseg = len(segs)
        pack = _PART.pack
        blake = hashlib.blake2b
        parent = names[-1] if names else b""
        seg, off = self.seg, self.off
        pos = len(names) * bs
        append = names.append
        while len(names) < n:
            if seg < nseg and off + bs < segs[seg][1]:
                # whole blocks inside one segment, which goes on after them:
                # as many as are wanted and lie there, in one loop
                sid, slen = segs[seg]
                count = (slen - off - bs - 1) // bs + 1
                want = n - len(names)
                if want < count:
                    count = want
                for _ in range(count):
                    parent = blake(parent + pack(0, sid, off, bs), digest_size=16).digest()
                    append(parent)
                    off += bs
                pos += count * bs
                continue
            if seg >= nseg:
                data = pack(1, self.own, pos, bs)
            else:
                left = bs
                parts = []
                while left:
                    if seg < nseg:
                        sid, slen = segs[seg]
                        take = min(left, slen - off)
                        parts.append(pack(0, sid, off, take))
                        off += take
                        if off >= slen:
                            seg += 1
                            off = 0
                        left -= take
                    else:
                        parts.append(pack(1, self.own, pos + bs - left, left))
                        left = 0
                data = b"".join(parts)
            parent = blake(parent + data, digest_size=16).digest()
            names.append(parent)
            pos += bs
        self.seg, self.off = seg, off
        return names


def chain(sess, bs: int, n: int) -> list:
    chains = sess.chains
    if chains is None:
        chains = sess.chains = {}
    c = chains.get(bs)
    if c is None:
        c = chains[bs] = Chain(sess)
    if len(c.names) < n:
        c.extend(bs, n)
    return c.names


class Blk:
    """A block: its name (None: not named) and how many holds use it."""

    __slots__ = ("name", "ref")

    def __init__(self, name, ref):
        self.name = name
        self.ref = ref


class FreeRun:
    """Blocks without a name in a row of the free queue (``cache shared fifo;``)."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


class SharedPool(Pool):
    """A pool whose cache is content-addressed (see the module's doc).

    With ``cache shared fifo;`` (``free_fifo``) its free queue holds every
    free block in the order freed, named or not, as vLLM 0.19.0's
    ``BlockPool.free_blocks`` appends them all to the tail (0.33.0 puts the
    ones without a hash at the head): a new block is the queue's head, which
    evicts a named block even while blocks without a name wait behind it.
    The free blocks without a name are kept as rows (``FreeRun``); at the
    start they are one row, every block of the pool."""

    shared = True

    def __init__(self, sim, pid, decl):
        super().__init__(sim, pid, decl)
        self.bs = int(decl.block)
        self.index: dict = {}          # name -> Blk, or a list of them in naming order
        self.free_q: OrderedDict = OrderedDict()   # named blocks no hold uses, head first
        self.fifo = bool(decl.free_fifo) and math.isfinite(self.cap)
        if self.fifo and int(self.cap // self.bs) > 0:
            self.free_q[FreeRun(int(self.cap // self.bs))] = None
        self.version = 0               # bumped when a name enters or leaves the index
        self.hits_at = -1
        self.hits: dict = {}           # session -> leading blocks found, at `hits_at`

    # -- the index -------------------------------------------------------------
    def _name(self, name, b) -> None:
        b.name = name
        cur = self.index.get(name)
        if cur is None:
            self.index[name] = b
        elif type(cur) is list:
            cur.append(b)
        else:
            self.index[name] = [cur, b]
        self.version += 1

    def _unname(self, b) -> None:
        cur = self.index[b.name]
        if cur is b:
            del self.index[b.name]
        else:
            cur.remove(b)
            if len(cur) == 1:
                self.index[b.name] = cur[0]
        b.name = None
        self.version += 1

    def _unname_all(self, blocks) -> None:
        """_unname of each block in turn, in one call (a prefill's growth
        evicts hundreds, a release frees hundreds)."""
        index = self.index
        for b in blocks:
            name = b.name
            cur = index[name]
            if cur is b:
                del index[name]
            else:
                cur.remove(b)
                if len(cur) == 1:
                    index[name] = cur[0]
            b.name = None
        self.version += len(blocks)

    def _first(self, name):
        cur = self.index[name]
        return cur[0] if type(cur) is list else cur

    def lookup(self, sess) -> int:
        """The leading blocks of the session's chain that the index has."""
        if self.hits_at != self.version:
            self.hits.clear()
            self.hits_at = self.version
        key = (sess.sid, len(sess.content))
        n = self.hits.get(key)
        if n is None:
            n = self.hits[key] = self._found(sess)
        return n

    def _found(self, sess) -> int:
        """(lookup's answer, walked in the index: the names the chain has
        so far in one pass in C, to the first the index lacks; the chain
        named further, a block at a time, where they all are there)"""
        has = self.index.__contains__
        bs = self.bs
        n = 0
        names = chain(sess, bs, 1)
        while True:
            n += len(list(takewhile(has, islice(names, n, None))))
            if n < len(names):
                return n
            names = chain(sess, bs, n + 1)

    # -- what the machine calls ------------------------------------------------
    def cached_of(self, sess) -> float:
        if sess is None:
            return 0.0
        return float(self.lookup(sess) * self.bs)

    def _hit(self, sess, units: float, reuse, caching: bool) -> int:
        if not caching:
            return 0
        h = self.lookup(sess)
        if reuse is not None:
            h = min(h, math.floor(reuse / self.bs + 1e-12))
        return min(h, math.floor(units / self.bs + 1e-12))

    def fits_hold(self, need: float, sess, units: float, reuse, caching: bool) -> bool:
        """Room for ``need`` units next to the allocated ones, the hit blocks
        other holds already use counted once."""
        h = self._hit(sess, units, reuse, caching)
        held = 0
        if h:
            names = chain(sess, self.bs, h)
            index = self.index
            for j in range(h):
                cur = index[names[j]]       # (_first, written out)
                if (cur[0] if type(cur) is list else cur).ref > 0:
                    held += 1
        return self.fits_admission(need - held * self.bs)

    def take(self, pa, sess, units: float, caching: bool, reuse) -> float:
        bs = self.bs
        h = self._hit(sess, units, reuse, caching)
        blocks = []
        if h:
            names = chain(sess, bs, h)
            free_q = self.free_q
            for j in range(h):
                b = self._first(names[j])
                if b.ref == 0:
                    del free_q[b]
                    self.cached -= bs
                    self.used += bs
                b.ref += 1
                blocks.append(b)
        alloc = round_up(bs, units)
        new = int(alloc // bs) - h
        if new > 0:
            need = new * bs
            self.make_room(need)
            self.used += need
            blocks.extend([Blk(None, 1) for _ in range(new)])
        pa.blocks = blocks
        pa.nnamed = h
        pa.alloc = float(len(blocks) * bs)
        self.sim.alloc_ver += 1
        pa.pos = float(h * bs)
        return float(h * bs)

    def grow_at(self, pa, need: float, now: float) -> None:
        self.tick(now)
        self.grow(pa, need)

    def grow(self, pa, need: float) -> None:
        self.make_room(need)
        self.used += need
        pa.blocks.extend([Blk(None, 1) for _ in range(int(round(need / self.bs)))])
        pa.alloc += need
        self.sim.alloc_ver += 1

    def to_name(self, pa, tokens: float):
        """The hold's full blocks up to ``tokens`` not named yet: (the first,
        the end, the chain's names), or None."""
        if pa.hold.st.f_cache is None:
            return None
        n = min(int(tokens // self.bs), len(pa.blocks))
        j = pa.nnamed
        if n <= j:
            return None
        return j, n, chain(pa.thread.sess, self.bs, n)

    def scheduled(self, pa, tokens: float) -> None:
        """The hold's tokens up to ``tokens`` are being computed: its full
        blocks among them are named now."""
        todo = self.to_name(pa, tokens)
        if todo is None:
            return
        j, n, names = todo
        blocks = pa.blocks
        index = self.index
        merge = self.f_cache_at is not None
        named = 0
        while j < n:
            b = blocks[j]
            if b.name is None:
                if merge and names[j] in index:
                    self._adopt(pa, j, b, names[j])
                    j += 1
                    continue
                # (_name, written out: a prefill names hundreds at once)
                name = b.name = names[j]
                cur = index.get(name)
                if cur is None:
                    index[name] = b
                elif type(cur) is list:
                    cur.append(b)
                else:
                    index[name] = [cur, b]
                named += 1
            j += 1
        self.version += named
        pa.nnamed = n

    def _adopt(self, pa, j: int, b, name) -> None:
        """(`cache at`) A block found late whose name the pool already has:
        as a radix tree keeps one copy of a prefix, the hold takes the
        pool's block and its own copy is free (SGLang's insert, which
        points the request at the tree's copy, mem_cache/unified_radix_cache.py:1238-1293)."""
        bs = self.bs
        ex = self._first(name)
        if ex.ref == 0:
            del self.free_q[ex]
            self.cached -= bs
            self.used += bs
        ex.ref += 1
        pa.blocks[j] = ex
        b.ref -= 1
        self.used -= bs
        if self.fifo:
            self._free_tail()

    def scheduled_at(self, stage, j, pa, tokens: float, rem: float) -> None:
        """`cache at (e)`: the hold's tokens up to ``tokens`` are being
        computed by ``stage``'s iteration; its full blocks among them are
        found from the iteration ``e`` after it (e read for the hold:
        ``decoding``, ``remaining`` after the iteration, ``position`` it
        reaches), at once when ``e`` ≤ 0, only at its release when ``inf``."""
        ctx = self.sim.ctx
        slots = _AT_CTX
        saved = [ctx[i] for i in slots]
        try:
            ctx[slots[0]] = 1.0 if j.mode == MODE_DECODE else 0.0
            ctx[slots[1]] = rem if rem > 0 else 0.0
            ctx[slots[2]] = tokens
            e = self.f_cache_at(pa.thread)
        finally:
            for i, v in zip(slots, saved):
                ctx[i] = v
        if e != e:
            raise Fault("R006", f"pool `{self.label}`: `cache at` is NaN")
        if e <= 0:
            self.scheduled(pa, tokens)
        elif e != math.inf:
            stage.found_later.append((stage.plan.it + e, pa, tokens))

    def give_back(self, pa, keep, now: float, preempt: bool = False) -> None:
        """Release a hold's blocks, last first: the first ``keep`` units'
        stay named and join the free queue's tail; the others are free
        (``preempt``: the hold was preempted, which changes nothing here)."""
        bs = self.bs
        k = self._kept(pa, keep)
        blocks = pa.blocks
        free_q = self.free_q
        fifo = self.fifo
        used, cached = self.used, self.cached
        gone = []
        for j in range(len(blocks) - 1, -1, -1):
            b = blocks[j]
            b.ref -= 1
            if b.ref == 0:
                used -= bs
                name = b.name
                if name is not None and j < k:
                    free_q[b] = None
                    cached += bs
                    continue
                if name is not None:
                    gone.append(b)
                if fifo:
                    self._free_tail()
        self.used, self.cached = used, cached
        if gone:
            self._unname_all(gone)
        pa.blocks = []
        pa.nnamed = 0
        self.allocs.pop(pa.seq, None)

    def _kept(self, pa, keep) -> int:
        """The blocks a release keeps named (named now if no iteration did)."""
        k = 0 if keep is None else int(keep // self.bs)
        if k > pa.nnamed:
            self.scheduled(pa, k * self.bs)
        return k

    def _free_tail(self) -> None:
        q = self.free_q
        if q:
            last = next(reversed(q))
            if type(last) is FreeRun:
                last.n += 1
                return
        q[FreeRun(1)] = None

    def _take_head(self, count: int) -> None:
        """(``cache shared fifo;``) A new block ``count`` times: the free
        queue's head, evicted when it has a name."""
        q = self.free_q
        bs = self.bs
        ticked = False
        after = self.sim.now >= self.sim.warmup
        while count > 0 and q:
            b = next(iter(q))
            if type(b) is FreeRun:
                if b.n > count:
                    b.n -= count
                    return
                count -= b.n
                del q[b]
                continue
            del q[b]
            count -= 1
            if b.name is None:      # dropped in place: free
                continue
            if not ticked:
                self.sim.pool_tick(self)
                ticked = True
            self._unname(b)
            self.cached -= bs
            if after:
                self.evicted_units += bs
                self.evicted_entries += 1

    def make_room(self, need: float) -> None:
        """Evict the free queue's head, block by block, until ``need`` units
        fit next to the used and the cached ones (with ``fifo``: take
        ``need`` units of blocks from its head, named or not)."""
        if self.fifo:
            self._take_head(int(round(need / self.bs)))
        else:
            self._evict_for(need)

    def _evict_for(self, need: float) -> None:
        """(make_room without ``fifo``)"""
        free_q = self.free_q
        if self.used + self.cached + need <= self.cap or not free_q:
            return
        self.sim.pool_tick(self)
        bs = self.bs
        after = self.sim.now >= self.sim.warmup
        used, cached, cap = self.used, self.cached, self.cap
        evicted = self.evicted_units
        popitem = free_q.popitem
        gone = []
        while used + cached + need > cap and free_q:
            gone.append(popitem(last=False)[0])
            cached -= bs
            if after:
                evicted += bs
        self.cached = cached
        self._unname_all(gone)
        if after:
            self.evicted_units = evicted
            self.evicted_entries += len(gone)

    def drop(self, sess) -> None:
        """`drop`: the named blocks of the session's chain that no hold uses
        lose their names."""
        n = self.lookup(sess)
        names = chain(sess, self.bs, n)
        for j in range(n):
            cur = self.index.get(names[j])
            for b in (list(cur) if type(cur) is list else [cur] if cur is not None else []):
                if b.ref == 0:
                    if not self.fifo:       # (with fifo it stays in its place, free)
                        del self.free_q[b]
                    self.cached -= self.bs
                    self._unname(b)

    def add_entry(self, sess, units, now):  # pragma: no cover - spill is refused for shared pools
        raise AssertionError("a content-addressed pool has no per-session entries")

    def consume(self, sess, reuse):  # pragma: no cover
        raise AssertionError("a content-addressed pool has no per-session entries")
