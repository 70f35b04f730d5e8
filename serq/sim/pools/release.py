"""Release and leases (a part of ``serq.sim.machine.Sim``): the end of a
hold's body releases every pool it still holds (or leases the one its
``lease`` clause names), a ``release`` statement releases the innermost hold's
allocation on a pool (or ends the thread's lease on it), a session's end
releases every hold its thread is in.

A release caches, when the hold has a cache clause, ``min(cache, computed)``
rounded down to blocks, where ``computed`` is the position if a growing run
or a load ever advanced any of the hold's positions (and always for a
preempted hold), else the allocation, and never more than the allocation.
A lease keeps its allocation until its time has passed (a lease event), its
thread releases it or its session ends.
"""

from __future__ import annotations

import math

from ..compile import check_amount
from ..errors import Fault
from ..threads import COMPUTED
from .pool import round_down


def cache_amount(f, t):
    """A hold's cache clause read on ``t`` (None without one)."""
    if f is None:
        return None
    v = f(t)
    return check_amount(v, "cache") if not (v >= 0) else v


class Release:
    def hold_exit(self, t, hold) -> None:
        """The end of a hold's body: release (or lease) every pool it still
        holds, caching per its clause."""
        st = hold.st
        cval = cache_amount(st.f_cache, t)
        lease_pid = st.lease_m(t) if st.lease_m is not None else None
        for pa in hold.allocs:
            if pa.released:
                continue
            if lease_pid is not None and pa.pool.pid == lease_pid:
                self.make_lease(t, pa, st)
            else:
                self.release_pa(pa, cval, False)
        t.holds.remove(hold)
        t.a[COMPUTED] = 0.0
        if t.preempt_pos is not None:
            t.preempt_pos.pop(st, None)
            if self.stuck:
                self.stuck.pop((t.sess.sid, id(st)), None)

    def release_pa(self, pa, cval, preempt: bool) -> None:
        pool = pa.pool
        now = self.now
        pool.tick(now)
        keep = None
        if cval is not None:
            comp = pa.pos if (preempt or pa.hold.grown) else pa.alloc
            if comp > pa.alloc:
                # a hold caches at most what it holds: a prefix it consumed
                # beyond its units was never its memory (as Exec's release,
                # which the memory invariant's proof relies on)
                comp = pa.alloc
            keep = round_down(pool.block, cval if cval < comp else comp)
            if preempt and pool.shared and pool.f_cache_at is not None and keep > pa.nnamed * pool.bs:
                keep = float(pa.nnamed * pool.bs)   # `cache at`: a victim caches only what was found
        pool.give_back(pa, keep, now, preempt)
        pa.released = True
        self.alloc_ver += 1
        pool.dirty = True
        if pa.lease and pa.lease_evt is not None:
            pa.lease_evt = None

    def release_all(self, t) -> None:
        while t.holds:
            h = t.holds.pop()
            cval = cache_amount(h.st.f_cache, t)
            for pa in h.allocs:
                if not pa.released:
                    self.release_pa(pa, cval, False)

    def do_release(self, t, st) -> None:
        pid = st.pool_m(t)
        for h in reversed(t.holds):
            pa = h.alloc_on(pid)
            if pa is not None:
                self.release_pa(pa, cache_amount(h.st.f_cache, t), False)
                return
        for pa in list(t.leases):
            if pa.pool.pid == pid and not pa.released:
                self.end_lease(pa)
                return

    def do_drop(self, t, st) -> None:
        """``drop P``: the session's cache entry on P goes."""
        pool = self.pools[st.pool_m(t)]
        pool.tick(self.now)
        pool.drop(t.sess)
        pool.dirty = True

    def make_lease(self, t, pa, st) -> None:
        v = st.f_lease(t)
        if not (v >= 0):
            check_amount(v, "lease time")
        pa.lease = True
        pa.cache_fn = st.f_cache
        pa.cache_carrier = t
        t.leases.append(pa)
        if not math.isinf(v):
            pa.lease_evt = True
            self.schedule(self.now + v, self.lease_expire, pa)

    def end_lease(self, pa) -> None:
        car = pa.cache_carrier
        try:
            cval = cache_amount(pa.cache_fn, car)
        except Fault as f:
            raise self.session_error(f, car, None) from None
        owner = pa.cache_carrier
        for lst in (owner.leases, owner.sess.leases):
            if pa in lst:
                lst.remove(pa)
        self.release_pa(pa, cval, False)

    def lease_expire(self, pa):
        if pa.released:
            return False
        self.end_lease(pa)
