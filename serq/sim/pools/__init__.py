"""The pools: their state and their semantics.

* ``pool.py``: a pool's state (allocations, the per-session cache, the
  admission queue, growers) and the calls that change it;
* ``prefix.py``: a content-addressed pool (``cache shared;``), which keeps
  the same calls.
"""

from .pool import Entry, Grower, HoldInst, Pool, PoolAlloc, Req, round_down, round_up
from .prefix import SharedPool, add_content

__all__ = ["Entry", "Grower", "HoldInst", "Pool", "PoolAlloc", "Req", "SharedPool", "add_content", "round_down",
           "round_up"]
