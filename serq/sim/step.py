"""Step stages: engines that run iterations (continuous batching).

An iteration attempt, when the stage is idle and has residents or a waiting
queue it admits (§Engines, §The iteration as a program):

1. the budget (``tokens cap``) and the chunk (``each at most``) are read
   from the residents as they stand;
2. the schedule runs: the default procedure is ``advance running; admit
   waiting while (running.preempted == 0)``, an ``iteration`` body is run
   statement by statement, ``exclusive prefill`` is its own procedure;
3. an attempt that scheduled no token and preempted nobody is not an
   iteration: its register sets are undone unless it admitted someone, and
   the stage waits for the next event;
4. otherwise the iteration lasts ``execute``'s cost of the batch; its tokens
   are applied when it ends.

Serving one request: one token to a decode, up to the chunk (and the
granule) to a prefill, never more than the budget left; a ``growing`` run
first grows its hold to the position it will reach, preempting per the
pool's rule; a victim the iteration already served leaves the batch and its
tokens return to the budget; a grower that preempts itself ends the
iteration's serving under ``preempt lifo`` and leaves the iteration under any
other victim order, which goes on serving the requests after it.

Admission (``admit waiting``): the heads of the queues of the pools this
stage admits, tried in declaration order, one at a time while budget is left;
the first head that does not fit stops the iteration's admissions; each
newcomer runs its commands at once, and if it reaches its run on this engine
it is served in the same iteration with the budget left.
"""

from __future__ import annotations

import bisect
import math

from ..ir import model as M
from ..ir.expr import nodes, walk
from .compile import CTX, check_guard
from .errors import Fault, fmt_num
from . import stroke
from .limits import WATCH_RESIDENTS
from .pools import GROW_SELF, GROW_STALL
from .stages import MODE_AWAIT, MODE_DECODE, MODE_PREFILL, Stage
from .threads import TURN_NO

C_NRES, C_NDEC, C_KVB, C_KVP = CTX["Nres"], CTX["Ndec"], CTX["Kvb"], CTX["Kvp"]
C_NTOK, C_NPRE, C_ATTN = CTX["Ntok"], CTX["Npre"], CTX["Attn"]
C_DECODING, C_ADMISSION, C_REMAINING = CTX["Decoding"], CTX["Admission"], CTX["Remaining"]
C_ADMITTED, C_PREEMPTED, C_BLOCKED = CTX["Admitted"], CTX["Preempted"], CTX["Blocked"]

I_SERVE, I_ADMIT, I_BRANCH, I_SET = 0, 1, 2, 3


class Plan:
    __slots__ = ("budget", "left", "chunk", "batch", "ntok", "npre", "pre0", "admitted", "no_admit", "ended",
                 "it", "full", "admitted_sids", "blocked")

    def __init__(self, budget, chunk, pre0, it):
        self.budget = budget
        self.left = budget
        self.chunk = chunk
        self.batch = []
        # the batch's tokens and prefilled tokens (`batch.tokens`,
        # `batch.prefilled`), summed as each job joins it: the same additions
        # in the same order as a pass over the batch, so the same floats,
        # without a pass per admission (``take``, ``leave``)
        self.ntok = 0.0
        self.npre = 0.0
        self.pre0 = pre0
        self.admitted = 0
        self.no_admit = False
        self.ended = False      # a grower preempted itself under lifo: no more serving
        self.it = it
        self.full = False       # exclusive prefill: headers see the full budget
        self.blocked = 0.0      # admission stopped at a head the engine's memory could not hold

    def take(self, j, n: float) -> None:
        """Job ``j`` joins the batch with ``n`` tokens."""
        j.plan_n = n
        self.batch.append(j)
        self.ntok += n
        if j.mode == MODE_PREFILL:
            self.npre += n

    def leave(self, j) -> None:
        """Job ``j`` leaves the batch (a preemption): the sums are made again
        over the jobs left, as a pass over the batch makes them."""
        self.batch.remove(j)
        ntok = npre = 0.0
        for k in self.batch:
            ntok += k.plan_n
            if k.mode == MODE_PREFILL:
                npre += k.plan_n
        self.ntok = ntok
        self.npre = npre

    def clear(self) -> None:
        """The batch is given up (an exclusive prefill takes it over)."""
        self.batch = []
        self.ntok = 0.0
        self.npre = 0.0


def is_lifo(keys) -> bool:
    """The victim order `preempt lifo` writes: by (-admission)."""
    return (len(keys) == 1 and type(keys[0]) is M.EUnary and keys[0].op == "Neg"
            and type(keys[0].arg) is M.ECtx and keys[0].arg.var == "Admission")


def _order_key(j):
    return (j.order, j.seq)


class StepStage(Stage):
    kind = "step"
    is_step = True
    Plan = Plan     # (serq.sim.stroke plans a trial admission)

    def __init__(self, sim, sid, decl, comp):
        super().__init__(sim, sid, decl)
        k = decl.kind
        self.f_budget = comp.expr(k.budget)
        self.f_chunk = comp.expr(k.chunk)
        self.f_cost = comp.expr(k.cost)
        self.exclusive = type(k.serve) is M.ServeExclusivePrefill
        keys = k.serve.keys if type(k.serve) is M.ServeBy else ()
        self.serve_keys = [comp.expr(x) for x in keys]
        self.granule = k.granule
        self.memory = None if k.memory is None else sim.pools[k.memory]
        self.mem_pid = k.memory
        # a head another pool refuses is still tried on the memory where what
        # it could not hold is read (`waiting.blocked`) or a lookup uses a
        # radix tree's path
        self.try_memory = self.memory is not None and (self.memory.tree or _reads_blocked(k))
        self.residents = []
        # the residents' part of the context, kept with what it was made
        # from: the residents as they were (res_ver moves whenever they
        # change) and, where the KV is read, every allocation (the machine's
        # alloc_ver moves whenever one grows, is taken or is released)
        self.res_ver = 0
        self.res_key = None
        self.res_vals = None
        self.turn_done = {}         # session -> the turn last counted `completed` (a request, not a run)
        self.iterating = False
        self.plan = None
        self.planning = False
        self.fail_evt = -1
        self.last_failed = False
        self.it = 0
        self.found_later = []    # `cache at`: (iteration, allocation, tokens) found from then
        self.iters_all = 0      # iterations from the start of the run (warm-up included)
        self.served_total = 0.0
        self.batch = []
        self.batch_cost = 0.0
        self.admit_pools = []
        self.regs = [i for i, r in enumerate(sim.program.registers) if r.stage == sid]
        if k.iteration is None:
            self.items = None
        else:
            self.items = self._items(k.iteration, comp)
        needs = set()
        for e in [k.budget, k.chunk, k.cost] + list(keys):
            for x in _walk_ctx(e):
                needs.add(x)
        self.need_res_ctx = bool(needs & {"Nres", "Ndec", "Kvb", "Kvp"}) or self.items is not None
        # an `only` filter sets the residents' part of the context before it
        # is read only where something may read it without setting it first
        self.only_sets_res = _aggregates_read_unset(sim.program)
        self.need_kv = bool(needs & {"Kvb", "Kvp"}) or self.items is not None
        self.need_attn = "Attn" in needs
        self.claims_every = []
        self.awaits = any(type(s) is M.SRun and s.mode == "Await" and s.stage.base <= sid < s.stage.base + s.stage.count
                          for b in sim.program.blocks for s in b.stmts)
        self.awaiting = ()
        self.strokes = sim.strokes and stroke.eligible(self, decl)
        self.head_memo = {}     # hold statement -> what its refusal reads (serq.sim.stroke)
        self.stroke_iters = 0   # iterations advanced in strokes (for the tests and the benchmark)
        self.stroke_past_head = 0   # ... of them with a head waiting that they could not admit
        self.stroke_misses = 0      # strokes in a row that read the residents and took nothing
        self.stroke_skip = 0        # attempts left to the step-by-step path untried (serq.sim.stroke.advance)
        self.stroke_untried = 0     # ... so far (for the tests)

    def _items(self, body, comp):
        out = []
        for it in body:
            t = type(it)
            if t is M.IServe:
                out.append((I_SERVE, None if it.only is None else comp.expr(it.only),
                            None if it.by is None else [comp.expr(x) for x in it.by]))
            elif t is M.IAdmit:
                out.append((I_ADMIT, None if it.only is None else comp.expr(it.only),
                            None if it.gate is None else comp.expr(it.gate)))
            elif t is M.IBranch:
                out.append((I_BRANCH, comp.expr(it.guard), self._items(it.then, comp),
                            self._items(it.other, comp)))
            elif t is M.ISet:
                out.append((I_SET, it.register, comp.expr(it.expr)))
        return out

    # -- what the stage reports ---------------------------------------------
    def busy_level(self) -> float:
        return 1.0 if self.iterating else 0.0

    def busy(self) -> int:
        return len(self.batch) if self.iterating else 0

    def work(self) -> float:
        return sum(j.rem for j in self.residents)

    def has_work(self) -> bool:
        if self.residents:
            return True
        for p in self.admit_pools:
            if p.nqueued:
                return True
        return False

    # -- residents -----------------------------------------------------------
    def arrive(self, job) -> None:
        now = self.sim.now
        self.tick(now)
        self.n += 1
        self.arr_all += 1
        self.started_all += 1
        job.t_start = now
        job.served_it = -1
        job.stalled = False
        job.plan_n = 0.0
        job.mem_pas = None
        bisect.insort(self.residents, job, key=_order_key)
        self.res_ver += 1

    def remove(self, job) -> None:
        """A resident leaves without finishing (preemption, a refused session)."""
        self.tick(self.sim.now)
        job.alive = False
        self.n -= 1
        self.residents.remove(job)
        self.res_ver += 1
        plan = self.plan
        if self.planning and plan is not None and job.served_it == plan.it:
            if job in plan.batch:
                plan.leave(job)
                plan.left += job.plan_n
            job.served_it = -1

    def mem_alloc(self, job) -> float:
        """What a resident holds of the engine's memory: its thread's
        allocations there, in the thread's order.  Which allocations those
        are does not change while the job is a resident (its thread waits
        for it; a lease may end, which `released` says), so they are found
        once per residency."""
        pas = job.mem_pas
        if pas is None:
            pid = self.mem_pid
            if pid is None:
                return 0.0
            pas = job.mem_pas = [pa for h in job.thread.holds for pa in h.allocs if pa.pool.pid == pid]
        tot = 0.0
        for pa in pas:
            if not pa.released:
                tot += pa.alloc
        return tot

    def set_res_ctx(self) -> None:
        """The residents' part of the context: their count, the decoding
        ones, the KV of each kind.  Made again only where the residents or
        an allocation changed since it was last made (a schedule reads it at
        each guard, register and admission: each was a pass over the
        residents)."""
        sim = self.sim
        ctx = sim.ctx
        res = self.residents
        if len(res) >= WATCH_RESIDENTS and sim.limits.inside_too:   # an iteration this long may stop
            sim.limits.inside()
        key = (self.res_ver, sim.alloc_ver) if self.need_kv else self.res_ver
        if key == self.res_key:
            nd, kvb, kvp = self.res_vals
        else:
            nd, kvb, kvp = self.res_vals = self.res_values()
            self.res_key = key
        ctx[C_NRES] = float(len(res))
        ctx[C_NDEC] = float(nd)
        ctx[C_KVB] = kvb
        ctx[C_KVP] = kvp

    def res_values(self) -> tuple:
        """(decoding residents, their KV, the others' KV), by a pass over
        the residents in their order."""
        res = self.residents
        nd = 0
        kvb = kvp = 0.0
        if self.need_kv:
            mem_alloc = self.mem_alloc
            for j in res:
                pas = j.mem_pas
                if pas is None:
                    a = mem_alloc(j)
                else:
                    a = 0.0     # (mem_alloc, written out)
                    for pa in pas:
                        if not pa.released:
                            a += pa.alloc
                if j.mode == MODE_DECODE:
                    nd += 1
                    kvb += a
                else:
                    kvp += a
        else:
            for j in res:
                if j.mode == MODE_DECODE:
                    nd += 1
        return nd, kvb, kvp

    def set_plan_ctx(self, plan) -> None:
        self.set_res_ctx()
        ctx = self.sim.ctx
        ctx[C_NTOK] = plan.ntok
        ctx[C_NPRE] = plan.npre
        ctx[C_ADMITTED] = float(plan.admitted)
        ctx[C_PREEMPTED] = float(self.sim.npreempt - plan.pre0)
        ctx[C_BLOCKED] = plan.blocked

    def found_now(self) -> None:
        """`cache at`: the blocks due by this iteration are found from now on."""
        it = self.it
        later = []
        for e in self.found_later:
            if e[0] <= it:
                if not e[1].released:
                    e[1].pool.scheduled(e[1], e[2])
            else:
                later.append(e)
        self.found_later = later

    # -- budget_left ---------------------------------------------------------
    def budget_left_query(self) -> float:
        plan = self.plan
        if self.planning and plan is not None:
            # what the request being admitted can take now: the budget the
            # iteration has left (all of it when an exclusive prefill takes
            # the batch over), within the iteration's chunk ("each at most")
            left = plan.budget if plan.full else plan.left
            ch = plan.chunk
            return ch if 0 < ch < left else left
        # outside an iteration: plan the next one (read-only, on a copy of
        # the context the caller is evaluating in)
        sim = self.sim
        saved = list(sim.ctx)
        try:
            self.set_res_ctx()
            budget = self.f_budget(sim.mcar)
            chunk = self.f_chunk(sim.mcar)
        finally:
            sim.ctx[:] = saved
        if not (chunk > 0):
            chunk = math.inf
        demand = 0.0
        for j in self.residents:
            if j.mode == MODE_DECODE:
                demand += min(1.0, j.rem)
            else:
                demand += min(j.rem, chunk)
        left = budget - demand
        return left if left > 0 else 0.0

    # -- an attempt ----------------------------------------------------------
    def attempt(self) -> bool:
        sim = self.sim
        ctx = sim.ctx
        if self.strokes:
            stroke.advance(self)   # the identical iterations before this one, in one go
        self.it += 1
        if self.found_later:
            self.found_now()
        try:
            self.set_res_ctx()
            budget = self.f_budget(sim.mcar)
            chunk = self.f_chunk(sim.mcar)
        except Fault as f:
            sim.machine_fault(f, self.decl.loc, f"$.stages[{self.sid}]")
        if budget != budget:
            sim.machine_fault(Fault("R006", f"the tokens cap of engine `{self.label}` is NaN"), self.decl.loc, f"$.stages[{self.sid}]")
        if chunk != chunk:
            sim.machine_fault(Fault("R006", f"the chunk of engine `{self.label}` is NaN"), self.decl.loc, f"$.stages[{self.sid}]")
        if budget < 0:
            budget = 0.0
        if not (chunk > 0):
            chunk = 0.0
        plan = Plan(budget, chunk, sim.npreempt, self.it)
        if sim.step_log is not None:
            log_pre0 = len(sim.preempt_log)
            plan.admitted_sids = []
        saved_regs = [sim.regs[r] for r in self.regs] if self.regs else None
        self.plan = plan
        self.planning = True
        # a radix tree's evictions wait for the iteration to be formed
        tree = self.memory if self.memory is not None and self.memory.tree else None
        if tree is not None:
            tree.deferring = True
        try:
            if self.exclusive:
                self._exclusive(plan)
            elif self.items is None:
                self._serve(plan, None, None)
                self._admit(plan, None, None, True)
            else:
                self._exec(plan, self.items)
        except Fault as f:
            self.planning = False
            self.plan = None
            if tree is not None:
                tree.deferring = False
            sim.machine_fault(f, self.decl.loc, f"$.stages[{self.sid}]")
        self.planning = False
        if tree is not None:
            tree.settle()
        batch = plan.batch
        preempted = sim.npreempt - plan.pre0
        # the residents awaiting this iteration (`await;`): it runs for them
        # too, and they leave when it ends
        awaiting = [j for j in self.residents if j.mode == MODE_AWAIT and j.alive] if self.awaits else ()
        if not batch and not preempted and not awaiting:
            self.plan = None
            if saved_regs is not None and not plan.admitted:
                for r, v in zip(self.regs, saved_regs):
                    sim.regs[r] = v
            self.fail_evt = sim.nevents
            self.last_failed = True
            return False
        self.last_failed = False
        # the batch, as `execute` reads it
        ntok = npre = 0.0
        ndec = 0
        kvb = kvp = attn = 0.0
        need_kv = self.need_kv or bool(self.claims_every)
        for j in batch:
            n = j.plan_n
            ntok += n
            if j.mode == MODE_DECODE:
                ndec += 1
                if need_kv:
                    pas = j.mem_pas
                    if pas is None:
                        kvb += self.mem_alloc(j)
                    else:
                        a = 0.0     # (mem_alloc, written out)
                        for pa in pas:
                            if not pa.released:
                                a += pa.alloc
                        kvb += a
            else:
                if j.mode == MODE_PREFILL:
                    npre += n
                if need_kv:
                    kvp += self.mem_alloc(j)
                if self.need_attn or self.claims_every:
                    k0 = j.pa.pos if j.pa is not None else j.work - j.rem
                    attn += n * (k0 + n / 2.0)
        ctx[C_NRES] = float(len(self.residents))
        ctx[C_NDEC] = float(ndec)
        ctx[C_KVB] = kvb
        ctx[C_KVP] = kvp
        ctx[C_NTOK] = ntok
        ctx[C_NPRE] = npre
        ctx[C_ATTN] = attn
        try:
            cost = self.f_cost(sim.mcar)
        except Fault as f:
            sim.machine_fault(f, self.decl.loc, f"$.stages[{self.sid}]")
        if not (cost >= 0):
            sim.machine_fault(Fault("R006", f"engine `{self.label}`: the iteration's cost is {fmt_num(cost)}: "
                                            "a time is not negative and not NaN"), self.decl.loc,
                              f"$.stages[{self.sid}]")
        if ntok > 0 and sim.now + cost == sim.now:
            if cost == 0:
                sim.machine_fault(Fault("R006", f"engine `{self.label}`: an iteration that schedules "
                                                f"{fmt_num(ntok)} tokens costs 0; an iteration lasts a "
                                                "positive time"), self.decl.loc, f"$.stages[{self.sid}]")
            sim.machine_fault(Fault("R018", f"engine `{self.label}`: an iteration that schedules "
                                            f"{fmt_num(ntok)} tokens costs {fmt_num(cost)}, which no longer "
                                            "advances the clock: the run cannot finish"), self.decl.loc,
                              f"$.stages[{self.sid}]")
        self.iters_all += 1     # from the start of the run: a claim names its iteration
        if sim.step_log is not None:
            sim.step_log.append({
                "stage": self.label, "time": sim.now,
                "tokens": {j.thread.sess.sid: j.plan_n for j in batch},
                "admitted": plan.admitted_sids, "preempted": sim.preempt_log[log_pre0:],
                "free": None if self.memory is None else self.memory.cap - self.memory.used})
        if sim.batch_log is not None:
            self.log_batch(batch)
        now = sim.now
        self.tick(now)
        self.iterating = True
        self.batch = batch
        self.plan = None
        if self.claims_every:
            # read as the iteration starts, its batch scheduled: busy(S) is the batch
            sim.check_iteration_claims(self, plan)
        if now >= sim.warmup:
            self.iterations += 1
        self.awaiting = awaiting
        sim.schedule(now + cost, self._end, batch)
        return True

    def log_batch(self, batch) -> None:
        """One record of ``Sim.batch_log``: what this iteration computes
        (each prefill chunk's tokens and the KV before them, each decode's
        KV) and the quantities its `execute` read, as they stand in ctx."""
        ctx = self.sim.ctx
        pre, dec = [], []
        for j in batch:
            pa = j.pa
            pos = pa.pos if pa is not None and not pa.released else None
            if j.mode == MODE_DECODE:
                dec.append(pos)
            else:
                pre.append((j.plan_n, pos))
        self.sim.batch_log.append({
            "stage": self.label, "time": self.sim.now, "prefill": pre, "decode": dec,
            "ctx": {"tokens": ctx[C_NTOK], "prefilled": ctx[C_NPRE], "decoding": ctx[C_NDEC],
                    "kv_decode": ctx[C_KVB], "kv_prefill": ctx[C_KVP], "attention": ctx[C_ATTN],
                    "residents": ctx[C_NRES]}})

    # -- the procedures ------------------------------------------------------
    def _serve(self, plan, only, keys) -> None:
        if plan.ended:
            return
        sim = self.sim
        keys = keys if keys is not None else self.serve_keys
        if keys:
            self.set_res_ctx()
            ctx = sim.ctx
            scored = []
            for j in self.residents:
                ctx[C_DECODING] = 1.0 if j.mode == MODE_DECODE else 0.0
                ctx[C_ADMISSION] = float(j.order)
                ctx[C_REMAINING] = j.rem
                scored.append((tuple(f(j.thread) for f in keys), j.order, j.seq, j))
            scored.sort(key=lambda x: x[:3])
            order = [x[3] for x in scored]
        else:
            order = list(self.residents)
        it = plan.it
        batch = plan.batch
        for j in order:
            left = plan.left
            if plan.ended or left <= 0:
                break
            if not j.alive or j.served_it == it:
                continue
            if only is not None:
                if not self._only(only, j):
                    continue
            elif j.mode == MODE_DECODE and j.rem >= 1.0 and left >= 1.0:
                # a decode's token within its allocation: serve()'s own steps
                # for it, written out (most of an iteration's residents)
                pa = j.pa
                if pa is None or pa.released:
                    pass
                else:
                    target = pa.pos + 1.0
                    if target > pa.alloc:
                        self.serve(j, plan)
                        continue
                    pool = pa.pool
                    if pool.shared and int(target // pool.bs) > pa.nnamed:
                        pool.scheduled(pa, target)
                j.stalled = False
                j.plan_n = 1.0
                j.served_it = it
                batch.append(j)
                plan.ntok += 1.0    # (plan.take, written out: a decode)
                plan.left = left - 1.0
                continue
            self.serve(j, plan)

    def _only(self, only, j) -> bool:
        if self.only_sets_res:
            self.set_res_ctx()
        elif len(self.residents) >= WATCH_RESIDENTS and self.sim.limits.inside_too:
            self.sim.limits.inside()     # (what set_res_ctx does besides)
        ctx = self.sim.ctx
        ctx[C_DECODING] = 1.0 if j.mode == MODE_DECODE else 0.0
        ctx[C_ADMISSION] = float(j.order)
        ctx[C_REMAINING] = j.rem
        v = only(j.thread)
        return v != 0.0 and v == v

    def serve(self, j, plan) -> float:
        rem = j.rem
        if j.mode == MODE_DECODE:
            want = 1.0 if rem >= 1.0 else rem
            if want > plan.left:
                want = plan.left
        else:
            want = rem if rem <= plan.left else plan.left
            ch = plan.chunk
            if ch > 0 and want > ch:
                want = ch
            g = self.granule
            if g is not None and want < rem:
                want = 0.0 if math.isinf(g) else math.floor(want / g + 1e-9) * g
                if want <= 0:
                    plan.no_admit = True
                    return 0.0
        if want <= 0:
            return 0.0
        pa = j.pa
        if pa is not None and not pa.released:
            target = pa.pos + want
            if target > pa.alloc:
                r = self.sim.grow_to(pa, target, j.thread)
                if r == GROW_SELF:
                    # under `preempt lifo` the serving ends (vLLM's FCFS
                    # `break`: its victims were running[-1], none is left);
                    # under another victim order the grower leaves and the
                    # serving goes on (vLLM's PRIORITY `continue` once the
                    # request is RequestStatus.PREEMPTED,
                    # v1/core/sched/scheduler.py:970-994)
                    if is_lifo(pa.pool.preempt_keys):
                        plan.ended = True
                    return 0.0
                if r == GROW_STALL:
                    j.stalled = True
                    return 0.0
                if not j.alive:
                    return 0.0
            if pa.pool.shared:
                # vLLM names a request's full blocks when it allocates them
                # for the scheduled tokens (`allocate_slots` ends in
                # `cache_blocks`, kv_cache_manager.py:616-625); `cache at`
                # says from which iteration a lookup finds them
                if pa.pool.f_cache_at is None:
                    pa.pool.scheduled(pa, target)
                else:
                    pa.pool.scheduled_at(self, j, pa, target, rem - want)
        j.stalled = False
        j.served_it = plan.it
        plan.take(j, want)
        plan.left -= want
        return want

    def sort_waiting(self) -> None:
        """The iteration reaches its admission: an ordered queue it admits
        is sorted again (`queue ordered by`, admission.sort_ordered)."""
        for pool in self.admit_pools:
            if pool.ordered and pool.nqueued:
                self.sim.sort_ordered(pool)

    def _admit(self, plan, only, gate, nopreempt) -> None:
        sim = self.sim
        self.sort_waiting()
        while True:
            if plan.no_admit:
                return
            if nopreempt and sim.npreempt != plan.pre0:
                return
            if gate is not None:
                self.set_plan_ctx(plan)
                if not check_guard(gate(sim.mcar)):
                    return
            if plan.left <= 0:
                return
            t = self.admit_one(plan)
            if t is None:
                return
            plan.admitted += 1
            j = t.job
            if j is None or j.stage is not self or not j.alive or j.served_it == plan.it:
                continue
            if only is not None and not self._only(only, j):
                continue
            self.serve(j, plan)

    def admit_one(self, plan):
        """Admit the head of the first non-empty queue this stage admits;
        run its commands at once.  None when nothing was admitted."""
        sim = self.sim
        for pool in self.admit_pools:
            if not pool.nqueued:
                continue
            req = pool.head()
            # the header reads the iteration's batch so far (batch.tokens, batch.prefilled)
            ctx = sim.ctx
            ctx[C_NTOK] = plan.ntok
            ctx[C_NPRE] = plan.npre
            sim.unfit = None
            vals = sim.fits_req(req, self.mem_pid if self.try_memory else None)
            if vals is None:
                plan.no_admit = True
                if sim.unfit is not None and sim.unfit == self.mem_pid:
                    plan.blocked = 1.0
                return None
            t = req.thread
            sim.admit(req, vals)
            if sim.step_log is not None:
                plan.admitted_sids.append(t.sess.sid)
            sim.run_now(t)
            return t
        return None

    def _exec(self, plan, items) -> None:
        sim = self.sim
        for item in items:
            kind = item[0]
            if kind == I_SERVE:
                self._serve(plan, item[1], item[2])
            elif kind == I_ADMIT:
                self._admit(plan, item[1], item[2], False)
            elif kind == I_BRANCH:
                self.set_plan_ctx(plan)
                if check_guard(item[1](sim.mcar)):
                    self._exec(plan, item[2])
                else:
                    self._exec(plan, item[3])
            else:
                self.set_plan_ctx(plan)
                sim.regs[item[1]] = item[2](sim.mcar)

    def _exclusive(self, plan) -> None:
        """One prefill alone, or a decode-only batch (§Engines)."""
        sim = self.sim
        for j in list(self.residents):
            if j.alive and j.mode != MODE_DECODE:
                self.serve(j, plan)
                plan.no_admit = True
                return
        for j in list(self.residents):
            if plan.ended or plan.left <= 0:
                break
            if j.alive and j.served_it != plan.it:
                self.serve(j, plan)
        self.sort_waiting()
        while not plan.no_admit and sim.npreempt == plan.pre0 and plan.left > 0:
            plan.full = True
            try:
                t = self.admit_one(plan)
            finally:
                plan.full = False
            if t is None:
                return
            plan.admitted += 1
            j = t.job
            if j is None or j.stage is not self or not j.alive:
                continue
            if j.mode != MODE_DECODE:
                # a waiting prefill that fits takes over the batch
                for d in plan.batch:
                    d.served_it = -1
                plan.clear()
                plan.left = plan.budget
                self.serve(j, plan)
                plan.no_admit = True
                return
            self.serve(j, plan)

    # -- the end of an iteration ---------------------------------------------
    def _end(self, batch):
        sim = self.sim
        now = sim.now
        self.tick(now)
        self.iterating = False
        self.batch = []
        served = 0.0
        done_any = False
        for j in batch:
            if not j.alive:
                continue
            n = j.plan_n
            served += n
            j.rem -= n
            if j.rem < 1e-9:
                j.rem = 0.0
                done_any = True
            pa = j.pa
            if pa is not None and not pa.released:
                pa.pos += n
                pa.hold.grown = True
            if j.mode == MODE_DECODE:
                sess = j.thread.sess
                if sess.in_turn and sess.first is not None:
                    sess.outs += n      # (client_decode's usual case, written out)
                else:
                    sim.client_decode(j.thread, n)
        self.served_total += served
        awaited = self.awaiting
        if awaited:
            self.awaiting = ()
            done_any = True
        if done_any:
            res = self.residents
            # a resident awaiting an iteration (`await;`) leaves at the end of
            # one it was there for
            done = [j for j in res if j.rem == 0.0 and (j.mode != MODE_AWAIT or j in awaited)]
            # a job's end only makes its thread ready: the residents leave in
            # one pass, not one list.remove each (a machine job's callback
            # may read them, so then each leaves as it ends)
            one_pass = all(j.thread is not None for j in done)
            if one_pass:
                # (a resident that came to await while the iteration ran,
                # `await;` before its admission, stays for the next one)
                if self.awaits:
                    gone = {id(j) for j in done}
                    res[:] = [j for j in res if id(j) not in gone]
                else:
                    res[:] = [j for j in res if j.rem != 0.0]
                self.res_ver += 1
            for j in done:
                if not one_pass:
                    res.remove(j)
                    self.res_ver += 1
                self.n -= 1
                j.alive = False
                if now >= sim.warmup:
                    # an engine completes requests: a turn's runs there (its
                    # prefill, its decode, a recompute after a preemption)
                    # count once, at the first that ends after the warm-up
                    th = j.thread
                    if self.turn_done.get(th.sess.sid) != th.a[TURN_NO]:
                        self.turn_done[th.sess.sid] = th.a[TURN_NO]
                        self.completed += 1
                    self.serv_sum += now - j.t_arr
                if j.mode == MODE_PREFILL:
                    sim.client_prefill_end(j.thread)
                sim.job_done(j)


def _reads_blocked(node) -> bool:
    """Whether `waiting.blocked` is read anywhere in ``node`` (an engine's
    IR: its schedule, its budgets, its cost)."""
    return any(type(x) is M.ECtx and x.var == "Blocked" for x in nodes(node))


_AGGREGATES = frozenset(("Nres", "Ndec", "Kvb", "Kvp"))


def _aggregates_read_unset(program) -> bool:
    """Whether an expression may read the residents' part of the context
    (`running.count`, `running.decoding`, `batch.kv_decode`,
    `batch.kv_prefill`) as the last setting of it left it, rather than set
    for it: anything but an engine's budget, chunk and cost, its serving
    order, its schedule's guards, gates and registers, and a pool's `then
    free`, each of which is evaluated just after the context is set (by
    `set_res_ctx` or `set_plan_ctx`).  The language allows that part in
    those places and in an `only` filter (serq/ir/moments.py), so this is
    whether a filter reads it; the walk is of the whole program, in case a
    place is added.  Where nothing does, a filter, which reads a resident's
    own quantities, need not set the residents' part first: no one reads
    what it would set (an iteration of n residents set it n times, O(n)
    each: SGLang's schedule filters its residents twice an iteration)."""
    return any(type(x) is M.ECtx and x.var in _AGGREGATES for x in nodes(program, _unset_fields))


def _unset_fields(x):
    """(_aggregates_read_unset: the fields of ``x`` evaluated without the
    residents' part set just before)"""
    t = type(x)
    if t is M.KStep:
        return ("iteration",)       # budget, cost, chunk, serve: set before read
    if t is M.IServe or t is M.IAdmit:
        return ("only",)            # by: `_serve` sets it; gate: set_plan_ctx
    if t is M.IBranch:
        return ("then", "other")    # guard: set_plan_ctx
    if t is M.ISet:
        return ()                   # set_plan_ctx
    if t is M.PreemptBy:
        return ("keys",)            # free: then_free sets it
    return x.__dataclass_fields__


def _walk_ctx(e):
    for x in walk(e):
        if type(x) is M.ECtx:
            yield x.var
