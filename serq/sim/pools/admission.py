"""A hold's admission (a part of ``serq.sim.machine.Sim``): a hold statement
joins the queue of its first pool (or is refused, when it can never fit); at
every settle the heads of the queues of pools no engine admits are admitted
while every pool of the hold has room (an engine admits its pools' heads in
its iterations, serq.sim.step); a pool with queue keys admits the least key
first.

A hold that fits takes on each of its pools, in the hold's order, its units
rounded up to blocks (its reserve, when larger, is kept for ``reserve held``),
consuming the session's cached prefix when it has a cache clause (at most
``reuse``); ``cached`` is the largest amount consumed over its pools.
"""

from __future__ import annotations

from ..compile import CTX, check_amount, check_guard
from ..errors import Fault
from ..threads import CACHED, F_HOLD, S_ENDED, S_QUEUED
from .pool import HoldInst, PoolAlloc, Req, round_up
from .prefix import shared_from_start

C_WAITED = CTX["Waited"]


class Admission:
    def do_hold(self, t, st, fr, pc, front: bool) -> bool:
        """Join the queue of the hold's first pool (or be rejected).  Always
        blocks."""
        pids = [m(t) for m in st.members]
        if len(pids) > 1 and len(set(pids)) < len(pids):
            raise Fault("R013", "two indices of one hold name the same member of `"
                        + st.name[0] + "`")
        # a request that can never fit: judged now for what reads only
        # attributes and numbers
        pools = self.pools
        for i, pid in enumerate(pids):
            pool = pools[pid]
            for static, fns, what in ((st.st_units, st.f_units, "units"), (st.st_res, st.f_res, "reserve")):
                if static[i]:
                    v = fns[i](t)
                    if not (v >= 0):
                        check_amount(v, f"{what} of `{st.name[i]}`")
                    if round_up(pool.block, v) > pool.cap:
                        self.reject(t, pool, st)
                        return True
        self.alloc_seq += 1
        req = Req(t, st, pids, self.alloc_seq, self.now, front, fr, pc)
        t.req = req
        t.state = S_QUEUED
        pools[pids[0]].enqueue(req)
        return True

    def reject(self, t, pool, st) -> None:
        if self.now >= self.warmup:
            pool.rejected += 1
        sess = t.sess
        if t.leg:
            # a refused leg ends its session; the leg ends with it
            self.leg_end(t, refused=True)
            if not sess.ended:
                self.kill(sess.main)
                self.finish_session(sess)
        else:
            self.release_all(t)
            self.finish_session(sess, refused=True)
        t.state = S_ENDED

    def reuse_of(self, t, st):
        """A hold's `reuse` (None: none, or the hold takes no part in the cache)."""
        if st.f_cache is None or st.f_reuse is None:
            return None
        reuse = st.f_reuse(t)
        if not (reuse >= 0):
            check_amount(reuse, "reuse")
        return reuse

    def fits_req(self, req, memory=None):
        """The header's units and reserves if every pool of the hold has
        room now; None otherwise.  With ``memory`` (an engine's memory pool
        id), a hold another pool refuses is still tried on the memory, and
        ``unfit`` is the memory when it refuses too (`waiting.blocked`)."""
        try:
            vals = self.fits_raw(req)
            if vals is None and memory is not None and self.unfit != memory and memory in req.pids:
                first = self.unfit
                self.fits_raw(req, only=memory)
                if self.unfit is None:
                    self.unfit = first
            return vals
        except Fault as f:
            raise self.session_error(f, req.thread, req.st.loc) from None

    def fits_raw(self, req, only=None):
        """``fits_req`` without locating a fault (which it raises as it is):
        what a stroke asks of a waiting head (serq.sim.stroke).  ``only``:
        the one pool tried (its fit sets ``unfit`` or leaves it None)."""
        t = req.thread
        st = req.st
        pools = self.pools
        vals = []
        if only is not None:
            self.unfit = None
        for i, pid in enumerate(req.pids):
            if only is not None and pid != only:
                continue
            pool = pools[pid]
            u = st.f_units[i](t)
            if not (u >= 0):
                check_amount(u, f"units of `{st.name[i]}`")
            fr = st.f_res[i]
            if fr is not None:
                r = fr(t)
                if not (r >= 0):
                    check_amount(r, f"reserve of `{st.name[i]}`")
                need = round_up(pool.block, u if u >= r else r)
            else:
                need = round_up(pool.block, u)
            if pool.shared:
                if not pool.fits_hold(need, t.sess, u, self.reuse_of(t, st), st.f_cache is not None):
                    self.unfit = pid
                    return None
            elif not pool.fits_admission(need):
                self.unfit = pid
                return None
            vals.append((u, need))
        return vals

    def admit(self, req, vals) -> None:
        t = req.thread
        st = req.st
        now = self.now
        pools = self.pools
        pool0 = pools[req.pids[0]]
        pool0.dequeue(req)
        self.adm_counter += 1
        hold = HoldInst(t, st, req.pids, self.adm_counter)
        t.adm_seq = self.adm_counter
        try:
            reuse = self.reuse_of(t, st)
        except Fault as f:
            raise self.session_error(f, t, st.loc) from None
        consumed = 0.0
        after = now >= self.warmup
        for i, pid in enumerate(req.pids):
            pool = pools[pid]
            pool.tick(now)
            u, need = vals[i]
            self.alloc_seq += 1
            pa = PoolAlloc(pool, hold, t, self.alloc_seq)
            c = pool.take(pa, t.sess, u, st.f_cache is not None, reuse)
            if c > consumed:
                consumed = c
            pa.res = need
            pool.allocs[pa.seq] = pa
            hold.allocs.append(pa)
            if after:
                pool.admissions += 1
        if after:
            pool0.wait_sum += now - req.t_join
            pool0.wait_n += 1
        t.a[CACHED] = consumed
        hold.pc = req.pc
        hold.frame_parent = req.parent
        t.frames.append([st.body, 0, F_HOLD, hold])
        if t.holds:
            t.holds.append(hold)
        else:
            t.holds = [hold]     # (an empty tuple until the first)
        t.req = None

    def retry_pools(self) -> bool:
        changed = False
        for pool in self.pools:
            if pool.growers:
                if self.retry_growers(pool):
                    changed = True
            if pool.nqueued and pool.admit_via is None:
                while pool.nqueued:
                    req = pool.head()
                    vals = self.fits_req(req)
                    if vals is None:
                        break
                    self.admit(req, vals)
                    self.make_ready(req.thread)
                    changed = True
        return changed

    def select_by_keys(self, pool):
        ctx = self.ctx
        now = self.now
        best = None
        best_key = None
        keys = pool.f_queue
        for req in pool.rest:
            ctx[C_WAITED] = now - req.t_join
            try:
                k = tuple(f(req.thread) for f in keys)
            except Fault as f:
                raise self.session_error(f, req.thread, pool.decl.loc) from None
            if best is None or k < best_key:
                best = req
                best_key = k
        return best

    def sort_ordered(self, pool) -> None:
        """`queue ordered by (keys) [tail when (e) shared (n)]`: sort the
        queue (its holds not at the front) again, stably, by the keys read
        for each hold now; with a tail clause, walking the queue in its order
        first, a hold for which e holds goes behind every hold that stays
        when it shares n or more tokens of content from the start with an
        earlier hold for which e held and which stayed (SGLang's in-batch
        prefix caching, schedule_policy.py:346-396, 441-451)."""
        ctx = self.ctx
        now = self.now
        keys = pool.f_queue
        when, shared = pool.f_tail_when, pool.f_tail_shared
        stayed: list = []      # the contents of the holds e held for that stayed
        order = []
        for i, req in enumerate(pool.rest):
            t = req.thread
            ctx[C_WAITED] = now - req.t_join
            try:
                tail = False
                if when is not None and check_guard(when(t)):
                    mine = t.sess.content
                    n = shared(t)
                    if any(shared_from_start(mine, c) >= n for c in stayed):
                        tail = True
                    else:
                        stayed.append(mine)
                order.append(((tail,) + tuple(f(t) for f in keys), i, req))
            except Fault as f:
                raise self.session_error(f, t, pool.decl.loc) from None
        order.sort(key=lambda x: (x[0], x[1]))
        pool.rest[:] = [req for _, _, req in order]

    def note_over_cap(self) -> None:
        """The run has ended: a hold still at the head of a pool's queue that
        needs more than one of its pools' capacity could never have been
        admitted (the report's note)."""
        for pool in self.pools:
            req = pool.head() if pool.nqueued else None
            if req is None:
                continue
            t = req.thread
            st = req.st
            for i, pid in enumerate(req.pids):
                p = self.pools[pid]
                try:
                    u = st.f_units[i](t)
                    r = st.f_res[i](t) if st.f_res[i] is not None else u
                except Fault:
                    continue
                need = round_up(p.block, max(u, r))
                if need > p.cap:
                    p.over_cap += 1
                    p.over_notes.append((t.sess.sid, need))
