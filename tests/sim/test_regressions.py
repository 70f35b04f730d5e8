"""Bugs found by the property tests, each pinned with the program that found it."""

from serq.ir import model as M
from serq.sim import simulate




def test_a_hold_caches_at_most_what_it_holds():
    # Found by test_pools_keep_their_invariant: a hold of kv (1) that consumed a
    # cached prefix of 2 cached its position 2 at release, one unit it never
    # held: used + cached went above the cap.
    import json
    import os
    path = os.path.join(os.path.dirname(__file__), "data", "cache_beyond_alloc.ir.json")
    from serq.ir import read
    p = read(path)

    def invariant(sim):
        for pool in sim.pools:
            assert pool.used + pool.cached <= pool.cap + 1e-6, (pool.label, pool.used, pool.cached)
    simulate(p, check_hook=invariant)
