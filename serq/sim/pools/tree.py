"""A content-addressed pool kept as a radix tree (`cache shared tree;`), as
SGLang 0.5.23's radix cache keeps its KV (paths in its package, sglang/srt/).

The blocks, their names and the lookup are the content-addressed pool's
(serq.sim.pools.prefix.SharedPool): a block is named by its tokens and the
blocks before it, and a lookup finds the leading blocks of a session's chain
that the pool has.  What the tree changes is what eviction takes and in
which order:

* the named blocks lie in nodes, runs of blocks along a chain, each node the
  child of the one its first block continues.  The blocks a hold caches in
  one go (an iteration finds them, ``cache at``, or its release caches them)
  are one new node, below the node of the block before them (split there if
  that node goes on: the insert's walk, ``_insert_walk_step``,
  ``mem_cache/unified_cache/unified_tree_core.py:1282-1330``); an admission
  that takes a hit ending inside a node splits it there (``match_prefix``'s
  ``_split_node``, ``:905-983``); a block found late whose name the tree has
  is the tree's (``_adopt``: a prefix is kept once);
* a node is used when an admission tried (admitted or not: SGLang matches
  every request its adder tries before the checks, managers/scheduler.py:4260)
  takes a hit through it and when a hold's blocks are cached through it (the
  match's and the insert's walks stamp every node of the path, the deepest
  last: ``_match_post_processor`` ``:1012-1034``, ``_touch_node``
  ``:1096-1102``); a split's two halves are stamped as new; a preempted
  hold's release uses nothing (SGLang's retraction frees without inserting,
  ``managers/schedule_batch.py:2388``);
* eviction takes whole leaves (nodes no other node continues) that no hold
  uses, the least recently used first, until the room asked for is free, so
  it may free more than asked; a parent left without children is a leaf
  from then on, with its own last use (``components/full.py:209-247``, the
  LRU strategy ``mem_cache/evict_policy.py:16-18``);
* a release caches (inserts) the blocks up to its ``cache`` clause; named
  blocks beyond it leave the tree from the tail of a leaf while no hold uses
  them.
* on the memory of an engine, evictions wait while it forms an iteration
  (``deferring``, ``settle``): a batch allocates once it is formed, after
  every match its scheduling made (``mem_cache/allocation.py:152-160``);
  and a growth that does not fit evicts every block no hold uses before it
  preempts (serq.sim.pools.growth; SGLang's decode check,
  ``managers/schedule_batch.py:3432-3449``).

Only a hold's chain prefix is ever in use, so a node is in use when its
first block is.
"""

from __future__ import annotations

import heapq

from .prefix import SharedPool, chain


class Node:
    """A run of named blocks along a chain, the child of ``parent``."""

    __slots__ = ("blocks", "parent", "kids", "stamp", "seq")

    def __init__(self, blocks, parent, seq):
        self.blocks = blocks
        self.parent = parent
        self.kids = 0
        self.stamp = 0
        self.seq = seq


class TreePool(SharedPool):
    """`cache shared tree;` (see the module's doc)."""

    tree = True
    deferring = False

    def __init__(self, sim, pid, decl):
        super().__init__(sim, pid, decl)
        self.root = Node([], None, 0)
        self.node_of: dict = {}     # a named block -> its node
        self.leaves: dict = {}      # the nodes without children, in the order they became leaves
        self.clock = 0              # the last stamp given
        self.nodes = 0              # nodes made (their seq)

    # -- the tree ----------------------------------------------------------------
    def _new(self, blocks, parent) -> Node:
        self.nodes += 1
        n = Node(blocks, parent, self.nodes)
        node_of = self.node_of
        for b in blocks:
            node_of[b] = n
        self.clock += 1
        n.stamp = self.clock
        if parent is not self.root and parent.kids == 0:
            self.leaves.pop(parent, None)
        parent.kids += 1
        self.leaves[n] = None
        return n

    def _touch(self, n) -> None:
        """A use of ``n`` and of every node above it: each stamped anew,
        the deepest last."""
        path = []
        root = self.root
        while n is not root:
            path.append(n)
            n = n.parent
        for x in reversed(path):
            self.clock += 1
            x.stamp = self.clock

    def _end_at(self, b) -> Node:
        """The node of named block ``b``, split so that ``b`` is its last."""
        n = self.node_of[b]
        k = n.blocks.index(b) + 1
        if k == len(n.blocks):
            return n
        self.nodes += 1
        head = Node(n.blocks[:k], n.parent, self.nodes)
        head.kids = 1
        node_of = self.node_of
        for x in head.blocks:
            node_of[x] = head
        n.blocks = n.blocks[k:]
        n.parent = head
        self.clock += 1
        head.stamp = self.clock
        self.clock += 1
        n.stamp = self.clock
        return head

    def _cut(self, n) -> None:
        """Node ``n``, emptied, leaves the tree; its parent may become a leaf."""
        self.leaves.pop(n, None)
        p = n.parent
        p.kids -= 1
        if p.kids == 0 and p is not self.root:
            self.leaves[p] = None

    def _unname_block(self, b) -> None:
        del self.index[b.name]
        del self.node_of[b]
        b.name = None
        self.version += 1

    def _trim(self, b) -> bool:
        """Named block ``b`` leaves the tree if it ends a leaf no hold uses."""
        n = self.node_of.get(b)
        if b.ref != 0 or n is None or n.kids or n.blocks[-1] is not b:
            return False
        n.blocks.pop()
        del self.free_q[b]
        self.cached -= self.bs
        self._unname_block(b)
        if not n.blocks:
            self._cut(n)
        return True

    # -- what the machine calls ------------------------------------------------
    def fits_hold(self, need: float, sess, units: float, reuse, caching: bool) -> bool:
        """An admission tried: its hit's path is used (split where the hit
        ends), whether or not the hold fits."""
        h = self._hit(sess, units, reuse, caching)
        if h:
            names = chain(sess, self.bs, h)
            self._touch(self._end_at(self.index[names[h - 1]]))
        return super().fits_hold(need, sess, units, reuse, caching)

    def take(self, pa, sess, units: float, caching: bool, reuse) -> float:
        """The content-addressed pool's admission (its free queue holds the
        cached blocks, in no order that matters here); the path its
        admission tried was used then (fits_hold)."""
        c = super().take(pa, sess, units, caching, reuse)
        if pa.nnamed:
            self._end_at(pa.blocks[pa.nnamed - 1])
        return c

    def scheduled(self, pa, tokens: float, use: bool = True) -> None:
        """The hold's blocks up to ``tokens`` are cached in the tree: the
        leading ones the tree has already are its (``_adopt``), the others
        one new node; with ``use``, the path is used."""
        todo = self.to_name(pa, tokens)
        if todo is None:
            return
        j, n, names = todo
        blocks = pa.blocks
        index = self.index
        while j < n and names[j] in index:
            self._adopt(pa, j, blocks[j], names[j])
            j += 1
        parent = self.root if j == 0 else self._end_at(blocks[j - 1])
        if j < n:
            run = blocks[j:n]
            for k, b in enumerate(run):
                b.name = names[j + k]
                index[b.name] = b
            self.version += len(run)
            parent = self._new(list(run), parent)
        if use:
            self._touch(parent)
        pa.nnamed = n

    def give_back(self, pa, keep, now: float, preempt: bool = False) -> None:
        """Release a hold's blocks: the first ``keep`` units' are cached in
        the tree, the path used unless the hold was preempted; named blocks
        beyond them leave it from a leaf's tail while no hold uses them;
        the others are free."""
        bs = self.bs
        k = 0 if keep is None else int(keep // bs)
        blocks = pa.blocks
        if k > pa.nnamed:
            self.scheduled(pa, k * bs, use=not preempt)
        elif keep is not None and not preempt and k > 0:
            self._touch(self.node_of[blocks[k - 1]])
        free_q = self.free_q
        used, cached = self.used, self.cached
        for j in range(len(blocks) - 1, -1, -1):
            b = blocks[j]
            b.ref -= 1
            if b.ref == 0:
                used -= bs
                if b.name is not None:
                    free_q[b] = None
                    cached += bs
        self.used, self.cached = used, cached
        for j in range(pa.nnamed - 1, k - 1, -1):
            if not self._trim(blocks[j]):
                break
        pa.blocks = []
        pa.nnamed = 0
        self.allocs.pop(pa.seq, None)

    def make_room(self, need: float) -> None:
        """Room for ``need`` units: evicted at once, or, while the engine
        whose memory the pool is forms an iteration (``deferring``), once it
        has formed it (``settle``): the iteration's lookups come before its
        allocations' evictions."""
        if not self.deferring:
            self.free_up(need)

    def settle(self) -> None:
        """The iteration is formed: evict what its allocations need."""
        self.deferring = False
        self.free_up(0.0)

    def free_up(self, need: float) -> None:
        """Evict whole leaves no hold uses, the least recently used first,
        until ``need`` units fit next to the used and the cached ones."""
        cap = self.cap
        if self.used + self.cached + need <= cap:
            return
        heap = [(n.stamp, n.seq, n) for n in self.leaves if n.blocks[0].ref == 0]
        if not heap:
            return
        heapq.heapify(heap)
        self.sim.pool_tick(self)
        bs = self.bs
        free_q = self.free_q
        after = self.sim.now >= self.sim.warmup
        while self.used + self.cached + need > cap and heap:
            n = heapq.heappop(heap)[2]
            if n not in self.leaves or n.blocks[0].ref != 0:
                continue
            for b in n.blocks:
                del free_q[b]
                self._unname_block(b)
            self.cached -= bs * len(n.blocks)
            if after:
                self.evicted_units += bs * len(n.blocks)
                self.evicted_entries += 1
            n.blocks = []
            self._cut(n)
            p = n.parent
            if p.kids == 0 and p is not self.root and p.blocks[0].ref == 0:
                heapq.heappush(heap, (p.stamp, p.seq, p))

    def drop(self, sess) -> None:
        """`drop`: the session's chain leaves the tree from its tail, block
        by block, while the block ends a leaf no hold uses."""
        n = self.lookup(sess)
        names = chain(sess, self.bs, n)
        for j in range(n - 1, -1, -1):
            if not self._trim(self.index[names[j]]):
                break
