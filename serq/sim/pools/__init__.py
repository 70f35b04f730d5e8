"""The pools: their state and their semantics.

* ``pool.py``: a pool's state (allocations, the per-session cache, the
  admission queue, growers) and the calls that change it;
* ``prefix.py``: a content-addressed pool (``cache shared;``), which keeps
  the same calls, block by block (the reference);
* ``runs.py``: the same pool kept as runs of blocks (the one a run uses);
* ``tree.py``: a content-addressed pool kept as a radix tree (``cache shared
  tree;``): whole leaves evicted, the least recently used first;
* ``admission.py``: a hold's admission (its queue, its refusal, settle-time
  admissions), and the heads that could never fit;
* ``release.py``: release (and what it caches), ``drop`` and leases;
* ``growth.py``: growth (``grow``, ``load``, an engine's growing runs), the
  growers that wait, and preemption;
* ``evict.py``: what eviction asks of the machine (the keys of ``evict by``)
  and spills.

The commands are parts of the machine (``serq.sim.machine.Sim``): they read
and write its state (its clock, its pools, its threads) as one object.
"""

from .admission import Admission
from .evict import Eviction
from .growth import GROW_OK, GROW_SELF, GROW_STALL, Growth
from .pool import Entry, Grower, HoldInst, Pool, PoolAlloc, Req, round_down, round_up
from .prefix import SharedPool, add_content
from .tree import TreePool
from .release import Release
from .runs import RunPool

__all__ = ["Admission", "Entry", "Eviction", "GROW_OK", "GROW_SELF", "GROW_STALL", "Growth", "Grower", "HoldInst", "Pool", "PoolAlloc", "Release", "Req", "RunPool", "SharedPool", "TreePool",
           "add_content", "round_down", "round_up"]
