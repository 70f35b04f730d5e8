"""Eviction keys and spills (a part of ``serq.sim.machine.Sim``): what a
pool's eviction (``Pool.make_room``) asks of the machine.

Eviction is per block from an entry's tail (per entry without ``block``), in
LRU order (release order) or by the pool's ``evict by`` keys, read again
before each block with ``size``, ``last``, ``age`` and ``waiting`` (the
entry's session waits in a pool's queue) on the entry's session's attributes
and the machine's stream.  A pool with a ``spill`` rule writes what it
evicted of an entry to the ``spill`` pool through the ``via`` stage (a job of
the machine's own, with no thread), when its ``when`` holds; the written
units join the session's entry there.
"""

from __future__ import annotations

from ..compile import CTX, check_amount
from ..errors import Fault
from ..stages import Job
from ..threads import S_QUEUED, EntryCarrier
from .pool import round_down

C_SIZE, C_AGE, C_LAST, C_WAITING = CTX["Size"], CTX["Age"], CTX["Last"], CTX["Waiting"]


class Eviction:
    def evict_choice(self, pool):
        ctx = self.ctx
        now = self.now
        best = None
        best_key = None
        keys = pool.f_evict
        rng = self.mcar.rng
        for e in pool.entries.values():
            ctx[C_SIZE] = e.units
            ctx[C_LAST] = e.last
            ctx[C_AGE] = now - e.last
            ctx[C_WAITING] = 1.0 if self.session_waiting(e.sess) else 0.0
            car = EntryCarrier(e.sess.attrs, rng, e.sess)
            try:
                k = tuple(f(car) for f in keys) + (e.seq,)
            except Fault as f:
                self.machine_fault(f, pool.decl.loc, f"$.pools[{pool.pid}]")
            if best is None or k < best_key:
                best = e
                best_key = k
        return best

    def session_waiting(self, sess) -> bool:
        m = sess.main
        return m is not None and m.state == S_QUEUED

    def maybe_spill(self, pool, e, units: float) -> None:
        if units <= 0:
            return
        ctx = self.ctx
        now = self.now
        ctx[C_SIZE] = units
        ctx[C_LAST] = e.last
        ctx[C_AGE] = now - e.last
        ctx[C_WAITING] = 1.0 if self.session_waiting(e.sess) else 0.0
        car = EntryCarrier(e.sess.attrs, self.mcar.rng, e.sess)
        try:
            if not (pool.spill_when(car) != 0.0):
                return
            to = self.pools[pool.spill_to(car)]
            via = self.stages[pool.spill_via(car)]
            w = pool.spill_work(car)
            if not (w >= 0):
                check_amount(w, "work of the spill")
        except Fault as f:
            self.machine_fault(f, pool.decl.loc, f"$.pools[{pool.pid}]")
        if now >= self.warmup:
            pool.spills += 1
        self.job_seq += 1
        job = Job.new(None, via, w, 0, now, self.job_seq)
        job.cb = self.spill_done
        job.cb_arg = (to, e.sess, units)
        if w == 0:
            self.spill_done(job)
        elif via.shared:
            self.flows.arrive(job, [via])
        else:
            via.arrive(job)

    def spill_done(self, job) -> None:
        to, sess, units = job.cb_arg
        to.tick(self.now)
        units = round_down(to.block, min(units, to.cap - to.used))
        if units <= 0:
            return
        have = to.cached_of(sess)
        to.add_entry(sess, have + units, self.now)
        to.make_room(0.0)
        to.dirty = True
