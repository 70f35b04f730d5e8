"""Growth and preemption (a part of ``serq.sim.machine.Sim``): a ``grow`` or
``load`` statement, a growing run's growth (an engine's, serq.sim.step and
serq.sim.stroke), the growers that wait, and the preemption a failed growth
makes.

A growth by d needs ``used + d <= cap`` (``reserve held``: plus the other
holds' outstanding reservations); cached prefixes are evicted to make room.
When it does not fit, a pool with a ``preempt`` rule preempts its victim (the
least key over the candidates, by default the latest admitted) and tries
again: a victim releases the holds from its innermost to the preempted one,
each caching its position, and its hold statement re-enters the queue of the
hold's first pool, at the head unless the pool says ``requeue tail``.
A radix tree (``cache shared tree;``) first evicts every block no hold uses;
after each preemption a pool with ``then free (e)`` evicts until e units are
free.  ``grow_to`` says how it went: ``GROW_OK``, ``GROW_SELF`` (the grower was
preempted, or its allocation released), ``GROW_STALL`` (no room and no
victim).  A session's ``grow`` that stalls waits as the pool's grower (the
head blocks the rest), retried at every settle before the pool's admissions.
"""

from __future__ import annotations

import math

from ..compile import CTX, check_amount
from ..errors import Fault, fmt_num
from ..stages import MODE_AWAIT, MODE_DECODE
from ..threads import COMPUTED, F_HOLD, S_GROWING
from .pool import Grower, round_up
from .release import cache_amount

C_DECODING, C_ADMISSION, C_POSITION = CTX["Decoding"], CTX["Admission"], CTX["Position"]
# what an iteration's plan sets (StepStage.set_plan_ctx), read by `then free (e)`
_PLAN_CTX = tuple(CTX[k] for k in ("Nres", "Ndec", "Kvb", "Kvp", "Ntok", "Npre", "Admitted", "Preempted", "Blocked"))

GROW_OK, GROW_SELF, GROW_STALL = 0, 1, 2


class Growth:
    def innermost(self, t, pid):
        for h in reversed(t.holds):
            for pa in h.allocs:
                if pa.pool.pid == pid and not pa.released:
                    return pa
        return None

    def held(self, t, pid, what: str):
        """The allocation of pool ``pid`` that ``what`` (a grow, a load, a
        run's growing) acts on: the innermost hold's.  None left is R022: a
        `release` gave it back, so the hold holds it no longer (the linker
        refuses a release sure to come first; one in an earlier pass of a
        loop or in a branch taken is found here), or the hold is of another
        member of the family (an index read again since)."""
        pa = self.innermost(t, pid)
        if pa is None:
            name = self.pools[pid].label
            raise Fault("R022", f"`{what} {name}` finds no allocation of `{name}` in its holds: a `release "
                                f"{name}` gave it back, or the hold is of another member")
        return pa

    def do_grow(self, t, st) -> bool:
        pid = st.pool_m(t)
        d = st.f(t)
        if not (d >= 0):
            check_amount(d, f"amount of `grow {st.name}`")
        pa = self.held(t, pid, "grow")
        if d == 0:
            return False
        target = pa.alloc + d
        r = self.grow_to(pa, target, t, session=True)
        if r == GROW_OK:
            return False
        if r == GROW_SELF:
            return True
        # wait as a grower
        pool = pa.pool
        g = Grower(t, pa, target, st)
        pool.growers.append(g)
        t.grower = g
        t.state = S_GROWING
        return True

    def do_load(self, t, st) -> None:
        pid = st.pool_m(t)
        n = st.f(t)
        if not (n >= 0):
            check_amount(n, f"amount of `load {st.name}`")
        pa = self.held(t, pid, "load")
        if pa.pos + n > pa.alloc + 1e-9:
            raise Fault("R012", f"`load {st.name}` of {fmt_num(n)} takes the hold's position to "
                                f"{fmt_num(pa.pos + n)}, beyond its allocation of {fmt_num(pa.alloc)}: "
                                "grow it first")
        pa.pos += n
        pa.hold.grown = True
        if pa.pool.shared:
            pa.pool.scheduled(pa, pa.pos)

    def grow_to(self, pa, target: float, t, session: bool = False) -> int:
        """Grow ``pa`` to cover ``target`` units (rounded up to blocks),
        preempting per the pool's rule."""
        pool = pa.pool
        need = round_up(pool.block, target) - pa.alloc
        if need <= 0:
            return GROW_OK
        while not pool.fits_growth(need, pa):
            if pool.tree:
                # a radix tree's check of the growth has evicted every
                # block no hold uses before anything gives way
                pool.free_up(math.inf)
            if not pool.preempt_by:
                return GROW_STALL
            cands = self.candidates(pool)
            if not cands:
                return GROW_STALL
            victim = self.choose_victim(pool, cands)
            vt = victim.thread
            self.preempt(victim, pool)
            if pool.f_then_free is not None:
                self.then_free(pool)
            if vt is t:
                return GROW_SELF
            if pa.released:
                return GROW_SELF
        pool.grow_at(pa, need, self.now)
        return GROW_OK

    def then_free(self, pool) -> None:
        """`preempt … then free (e)`: after a preemption, cached units are
        evicted until e are free, e read as the victim has left (its
        engine's residents, the iteration's batch so far, its registers)."""
        S = pool.memory_of
        ctx = self.ctx
        saved = [ctx[i] for i in _PLAN_CTX]
        try:
            if S is not None and S.planning and S.plan is not None:
                S.set_plan_ctx(S.plan)
            elif S is not None:
                S.set_res_ctx()
            e = pool.f_then_free(self.mcar)
        except Fault as f:
            self.machine_fault(f, pool.decl.loc, f"$.pools[{pool.pid}]")
        finally:
            for i, v in zip(_PLAN_CTX, saved):
                ctx[i] = v
        if e != e:
            self.machine_fault(Fault("R006", f"pool `{pool.label}`: `then free` is NaN"), pool.decl.loc,
                               f"$.pools[{pool.pid}]")
        if e > 0:
            pool.free_up(e)

    def retry_growers(self, pool) -> bool:
        changed = False
        while pool.growers:
            g = pool.growers[0]
            t = g.thread
            r = self.grow_to(g.pa, g.need, t, session=True)
            if r == GROW_STALL:
                break
            if pool.growers and pool.growers[0] is g:
                pool.growers.pop(0)
            t.grower = None
            changed = True
            if r == GROW_OK:
                self.make_ready(t)
        return changed

    def candidates(self, pool) -> list:
        """The holders a failed growth may preempt, in the candidates'
        admission order, each as its innermost allocation on the pool."""
        out = []
        seen = set()
        S = pool.memory_of
        if S is not None:
            for j in S.residents:
                if not j.alive or j.mode == MODE_AWAIT:
                    continue    # awaiting the next iteration: out of the batch, no victim
                t = j.thread
                if id(t) in seen:
                    continue
                pa = self.innermost(t, pool.pid)
                if pa is not None and not pa.lease:
                    seen.add(id(t))
                    out.append(pa)
            return out
        per = {}
        for pa in pool.allocs.values():
            if pa.lease or pa.released:
                continue
            per[id(pa.thread)] = pa  # the latest (innermost) allocation of each thread
        out = sorted(per.values(), key=lambda pa: pa.seq)
        return out

    def choose_victim(self, pool, cands):
        keys = pool.f_victim
        if not keys:
            return cands[-1]
        ctx = self.ctx
        best = None
        best_key = None
        for place, pa in enumerate(cands):
            t = pa.thread
            j = t.job
            ctx[C_DECODING] = 1.0 if (j is not None and j.mode == MODE_DECODE) else 0.0
            ctx[C_ADMISSION] = float(place)
            ctx[C_POSITION] = pa.pos
            try:
                k = tuple(f(t) for f in keys) + (-place,)
            except Fault as f:
                self.machine_fault(f, pool.decl.loc, f"$.pools[{pool.pid}]")
            if best is None or k < best_key:
                best = pa
                best_key = k
        return best

    def preempt(self, pa, pool) -> None:
        hold = pa.hold
        t = hold.thread
        now = self.now
        self.npreempt += 1
        if self.step_log is not None:
            self.preempt_log.append(t.sess.sid)
        pool.preemptions_all += 1
        if now >= self.warmup:
            pool.preemptions += 1
        pos = max(x.pos for x in hold.allocs)
        st = hold.st
        if t.preempt_pos is None:
            t.preempt_pos = {}
        prev = t.preempt_pos.get(st)
        if prev is not None and pos <= prev:
            self.stuck[(t.sess.sid, id(st))] = pool.pid
        t.preempt_pos[st] = pos
        self.detach(t)
        # release the holds from the innermost to the preempted one, each
        # caching its computed prefix (its position)
        while t.holds:
            h = t.holds.pop()
            try:
                cval = cache_amount(h.st.f_cache, t)
            except Fault as f:
                raise self.session_error(f, t, h.st.loc) from None
            for x in h.allocs:
                if not x.released:
                    self.release_pa(x, cval, True)
            if h is hold:
                break
        frames = t.frames
        while frames:
            fr = frames.pop()
            if fr[2] == F_HOLD and fr[3] is hold:
                break
        parent = frames[-1]
        # the hold statement is executed again by re-entering the queue; once
        # its body ends the parent goes on after it
        parent[1] = hold.pc + 1
        t.a[COMPUTED] = pos
        # re-enter the queue of the hold's first pool, at the head unless
        # the pool says `requeue tail`
        try:
            self.do_hold(t, st, parent, hold.pc, not pool.requeue_tail)
        except Fault as f:
            raise self.session_error(f, t, st.loc) from None
