"""The machine: the event loop, settling, sessions and their statements,
holds, preemption, the workload, and what the run records.

Event heap entries are ``(time, priority, seq, handler, arg)``: ``seq`` is
unique, so two entries never fall to comparing handlers, and events at one
instant run in the order they were scheduled (§Ties).  Every event has
priority 0; the field is kept for the SimPy shape of the heap.  A handler
returns ``False`` when the event was cancelled (a stale completion), which
then neither counts nor settles.

After every event the machine settles (§Events and settling): it runs every
ready session (in the order they became ready), then retries growers and
admissions at every pool no stage serves, until nothing changes; then, if no
other event is pending at the same instant, it attempts an iteration on
every idle step stage that has residents or a waiting queue it admits.

The hot paths are written for the program, once, by ``serq.sim.codegen``:
straight statements as segments, a session's arrival (``arrive``, and the
Poisson arrival event ``open_arrival``), the completions of fifo and delay
stages.  What they do is what the interpreter's code here does.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from typing import Optional

from ..ir import model as M
from ..ir.expr import is_test
from . import claims as claims_mod
from . import codegen
from . import rng as R
from .claims import ClaimCheck
from .compile import CTX, Compiler, check_amount, check_guard
from .errors import Fault, Locating, RunError, StopInside, field_of, fmt_num, fmt_time
from .limits import Limits, Stall
from .pools import Admission, Eviction, Growth, Pool, Release, SharedPool, add_content, round_up
from .statements import (MAX_STATEMENTS, OP_ANSWER, OP_BRANCH, OP_CHOOSE, OP_CONTENT, OP_DROP, OP_END,
                         OP_FORK, OP_GROW, OP_HOLD, OP_JOIN, OP_LOAD, OP_LOOP, OP_OBS, OP_RELEASE, OP_RUN,
                         OP_SEG, OP_SET, OP_TURN, OP_WHILE, last_loc)
from . import statements
from .stats import fsum
from .stages import (DelayStage, FifoStage, FlowNet, Job, PsStage,
                     SharedStage)
from .step import StepStage
from .workload import Workload, load_trace
from .threads import (F_BLOCK, F_HOLD, F_LEG, F_LOOP, F_ROOT, F_WHILE, S_ENDED, S_GROWING, S_JOIN, S_NEW, S_QUEUED,
                      S_READY, S_RUNNING, S_STAGE, TURN_NO, Carrier, Thread, cur_loc)

MAX_READY = 1000

C_NOW = CTX["Now"]
C_WAITED = CTX["Waited"]
C_PRESENT = CTX["Present"]
C_DECODING, C_ADMISSION, C_POSITION = CTX["Decoding"], CTX["Admission"], CTX["Position"]


class Sim(Locating, Workload, Admission, Release, Growth, Eviction):
    CTX_PRESENT = C_PRESENT

    def __init__(self, program: M.Program, progress: bool = False, check_hook=None,
                 step_log: bool = False, client_log: bool = False, samples: bool = True,
                 max_events: Optional[int] = None, max_seconds: Optional[float] = None, interrupt=None,
                 strokes: bool = True):
        self.program = program
        # an engine's identical decode iterations in one go (serq.sim.stroke),
        # where nothing reads iterations one by one
        self.strokes = strokes and not step_log and check_hook is None and not program.gauges
        # opt-in: one record per engine iteration (serq oracle diff)
        self.step_log = [] if step_log else None
        # opt-in: (session, first token, answer) of every answered turn (serq oracle --program)
        self.client_log = [] if client_log else None
        self.first_pre = {}     # with client_log: session -> the end of its turn's first prefill
        self.preempt_log = []
        self.seed = program.seed
        self.horizon = program.horizon
        self.warmup = program.warmup
        self.limits = Limits(self, progress, max_events, max_seconds, interrupt)
        self.stall = Stall(self)
        self.stopped = None     # (reason, words): the run stopped before its end
        self.inside = False     # ... inside an event (then no report)
        self.check_hook = check_hook
        self.now = 0.0
        self.ctx = [0.0] * len(M.CTX_VARS)
        self.regs = [r.init for r in program.registers]
        self.heap = []
        self.seq = 0
        self.nevents = 0
        self.npreempt = 0
        self.rel_seq = 0
        self.alloc_seq = 0
        self.adm_counter = 0
        self.job_seq = 0
        self.ready = deque()
        self.streams = R.Streams(self.seed)
        self.mcar = Carrier(R.stream(self.seed, R.MACHINE))
        self.arr_rng = R.stream(self.seed, R.ARRIVAL)
        self.trace_rng = R.stream(self.seed, R.TRACE)
        # what the run records
        self.n_arrived = 0
        self.arrivals_after = 0
        self.ended_after = 0
        self.turns_after = 0
        self.live = 0
        self.acc_live = 0.0
        self.t_live = 0.0
        self.stuck = {}   # (session, hold statement) -> pool: preempted without progress
        # what the statistics need, 8 bytes an observation: the values of
        # each observation (and the client's), in the order recorded; with
        # ``samples`` (``--dump``), the time, session and turn of each
        self.samples = samples
        self.obs_v = [array("d") for _ in program.observes]
        self.obs_t = [array("d") for _ in program.observes] if samples else None
        self.obs_s = [array("q") for _ in program.observes] if samples else None
        self.obs_k = [array("d") for _ in program.observes] if samples else None
        self.all_obs = [array("d") for _ in program.observes] if program.claims else None
        self.client = {"ttft": array("d"), "tpot": array("d"), "response": array("d")}
        self.joining = set()
        self.nattrs = len(program.attrs)
        self.closed = type(program.arrival) is M.AClosed
        self.warmed = False
        self.end_time = None
        # declarations
        self.pools = [(SharedPool if p.shared else Pool)(self, i, p) for i, p in enumerate(program.pools)]
        self.comp = Compiler(self)
        self.stages = []
        shared = set()
        for b in program.blocks:
            for s in b.stmts:
                if type(s) is M.SRun and s.also:
                    for ref in (s.stage,) + tuple(s.also):
                        for k in range(ref.count):
                            shared.add(ref.base + k)
        self.flows = FlowNet(self, program.share or "MaxMin") if shared else None
        from ..ir.expr import const_value
        for i, st in enumerate(program.stages):
            k = st.kind
            if type(k) is M.KFifo:
                self.stages.append(FifoStage(self, i, st))
            elif type(k) is M.KDelay:
                self.stages.append(DelayStage(self, i, st))
            elif type(k) is M.KPs:
                cv = const_value(k.capacity)
                if i in shared:
                    self.stages.append(SharedStage(self, i, st, cv))
                else:
                    self.stages.append(PsStage(self, i, st, None if cv is not None else self.comp.expr(k.capacity), cv))
            else:
                self.stages.append(None)  # placeholder: step stages need the pools' links
        for i, st in enumerate(program.stages):
            if type(st.kind) is M.KStep:
                self.stages[i] = StepStage(self, i, st, self.comp)
        for p in self.pools:
            if p.admit_via is not None:
                self.stages[p.admit_via].admit_pools.append(p)
        for s in self.stages:
            if s.is_step and s.memory is not None:
                s.memory.memory_of = s
        self.step_stages = [s for s in self.stages if s.is_step]
        # pool rules
        for p in self.pools:
            d = p.decl
            p.f_evict = [self.comp.expr(k) for k in p.evict_keys] if p.evict_keys else None
            p.f_victim = [self.comp.expr(k) for k in p.preempt_keys]
            p.f_queue = [self.comp.expr(k) for k in p.queue_keys] if p.queue_keys else None
            if d.spill is not None:
                p.spill_to = self.comp.member(d.spill.to, "pool")
                p.spill_via = self.comp.member(d.spill.via, "stage")
                p.spill_work = self.comp.expr(d.spill.work)
                p.spill_when = self.comp.expr(d.spill.when)
        # blocks
        self.blocks = {}
        self.session_block = statements.block(self, program.session)
        self.init_block = statements.block(self, program.init) if program.init is not None else None
        self.turn_block = statements.block(self, program.turn) if program.turn is not None else None
        self.session_end_loc = last_loc(program, program.session)
        # observations that are tests (for the constant-0 note)
        self.obs_test = [True] * len(program.observes)
        seen = [False] * len(program.observes)
        for b in program.blocks:
            for s in b.stmts:
                if type(s) is M.SObserve:
                    seen[s.observe] = True
                    if not is_test(s.expr):
                        self.obs_test[s.observe] = False
        self.obs_test = [a and b for a, b in zip(self.obs_test, seen)]
        # gauges and claims
        self.gauges = [self.comp.expr(g.expr) for g in program.gauges]
        self.gauge_t = [array("d") for _ in program.gauges]   # change points: times
        self.gauge_v = [array("d") for _ in program.gauges]   # and the values from them
        self.claims = [ClaimCheck(self, c) for c in program.claims]
        for c in self.claims:
            if c.stage is not None:
                self.stages[c.stage].claims_every.append(c)
        # the workload
        self.arrival = program.arrival
        self.trace = None
        if program.trace is not None:
            self.trace = load_trace(program.trace)
        self.draining = program.arrivals
        self.open_arrivals = 0
        self.open_done = False
        self.may_preset = type(program.arrival) is M.ASessions and any(
            spec.turns is not None for spec in program.arrival.sessions)
        # written for the program (serq.sim.codegen): the threads' blocks
        # with their straight statements as segments, a session's arrival
        # (`arrive(spec)`) and the Poisson arrival event (`open_arrival`),
        # the completions of fifo and delay stages
        self.facts = codegen.Facts(program)
        self.thread_blocks = {}
        self.session_block = codegen.thread_block(self, self.session_block, root=True)
        self.arrive, self.open_arrival = codegen.workload(self)
        codegen.completions(self, list(self.thread_blocks.values()) + [self.session_block])

    # -- compilation of blocks ---------------------------------------------
    # -- events ----------------------------------------------------------------
    def schedule(self, t: float, fn, arg) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, 0, self.seq, fn, arg))

    def next_release(self) -> int:
        self.rel_seq += 1
        return self.rel_seq

    def pool_tick(self, pool) -> None:
        pool.tick(self.now)

    # -- the run ------------------------------------------------------------
    def run(self):
        self.start_workload()
        if self.gauges:
            self.sample_gauges()
        extras = bool(self.step_stages) or self.check_hook is not None or bool(self.gauges) or \
            self.draining is not None
        # every so many events (or at --max-events): the progress line, the
        # limits and an interrupt (serq.sim.limits)
        check_at = self.limits.start(extras)
        try:
            self.loop(extras, check_at)
        except StopInside as stop:     # inside one long event: no consistent state to report
            self.stopped = stop.args[0]
            self.inside = True
            return
        self.limits.clear()
        self.conclude()

    def loop(self, extras: bool, check_at: int) -> None:
        heap = self.heap
        pop = heapq.heappop
        horizon = self.horizon
        warmup = self.warmup
        ctx = self.ctx
        gauges = bool(self.gauges)
        hook = self.check_hook
        draining = self.draining
        step_stages = self.step_stages
        pools = bool(self.pools)
        ready = self.ready
        settle = self.settle
        if not extras:
            # the same loop without what it does not need (no engine, hook,
            # gauge or draining)
            nev = self.nevents
            warmed = self.warmed
            try:
                while heap:
                    ev = pop(heap)
                    t = ev[0]
                    if t > horizon:
                        heapq.heappush(heap, ev)   # left as it was
                        break
                    if not warmed and t >= warmup:
                        self.snapshot_warmup()
                        warmed = True
                    self.now = t
                    ctx[C_NOW] = t
                    if ev[3](ev[4]) is not False:
                        nev += 1
                        if ready or pools:
                            settle()
                        if nev >= check_at:
                            self.nevents = nev
                            check_at = self.limits.checkpoint(nev)
                            if check_at is None:
                                break
            finally:
                self.nevents = nev
        while extras and heap:
            ev = heap[0]
            t = ev[0]
            if t > horizon:
                break
            pop(heap)
            if t >= warmup and not self.warmed:
                self.snapshot_warmup()
            self.now = t
            ctx[C_NOW] = t
            if ev[3](ev[4]) is False:
                # a cancelled event: nothing happened, but it may be the
                # instant's last, whose end still starts iterations and is
                # read by the gauges
                if heap and heap[0][0] <= t:
                    continue
            else:
                self.nevents += 1
                if ready or pools:
                    settle()
            if step_stages and (not heap or heap[0][0] > t):
                self.start_iterations()
            if hook is not None:
                hook(self)
            if gauges and (not heap or heap[0][0] > t):
                self.sample_gauges()
            if draining is not None and self.open_done and self.live == 0:
                break
            if self.nevents >= check_at:
                check_at = self.limits.checkpoint(self.nevents)
                if check_at is None:
                    break

    def conclude(self) -> None:
        """The run's end: its time, the drain and deadlock checks, the last
        accounting."""
        heap = self.heap
        horizon = self.horizon
        warmup = self.warmup
        draining = self.draining
        ctx = self.ctx
        if self.stopped is not None:
            end = self.now
        elif draining is not None:
            if not (self.open_done and self.live == 0):
                self.machine_fault(Fault("R008", f"--arrivals {draining}: {self.live} of the sessions are "
                                                 f"still live at the horizon {fmt_num(horizon)}; the run must "
                                                 "drain them"), None, "$.arrivals")
            end = self.now
            if end <= warmup:
                self.machine_fault(Fault("R009", f"--arrivals {draining}: the sessions drained at "
                                                 f"{fmt_time(end)}, at or before the warm-up "
                                                 f"{fmt_num(warmup)}: nothing is measured"), None, "$.warmup")
        else:
            end = horizon
            if not heap:
                self.check_deadlock()
        if not self.warmed:
            self.now = min(warmup, end)
            self.snapshot_warmup()
        self.now = end
        ctx[C_NOW] = end
        self.end_time = end
        self.finish()

    def snapshot_warmup(self) -> None:
        w = self.warmup
        self.warmed = True
        save = self.now
        self.now = w
        for p in self.pools:
            p.tick(w)
            p.w = (p.acc_used, p.acc_cached, p.acc_queue, p.acc_holders)
        for s in self.stages:
            s.tick(w)
            s.w = (s.acc_n, s.acc_busy)
        self.tick_live(w)
        self.w_live = self.acc_live
        self.now = save

    def settle(self) -> None:
        ready = self.ready
        if not self.pools:
            if ready:
                self.run_ready()
            return
        while True:
            if ready:
                self.run_ready()
            if not self.retry_pools() and not ready:
                return

    def start_iterations(self) -> None:
        nev = self.nevents
        for s in self.step_stages:
            if s.iterating or s.fail_evt == nev:
                continue
            if not s.residents:
                for p in s.admit_pools:
                    if p.nqueued:
                        break
                else:
                    continue
            s.attempt()
            self.settle()

    # -- ready sessions ------------------------------------------------------
    def make_ready(self, t) -> None:
        now = self.now
        if t.ready_t == now:
            t.ready_n += 1
            if t.ready_n >= MAX_READY:
                raise self.session_error(Fault("R005", f"session {t.sess.sid} became ready {MAX_READY} "
                                                       "times at one instant: it does not let time pass"),
                                         t, cur_loc(t))
        else:
            t.ready_t = now
            t.ready_n = 1
        t.state = S_READY
        self.ready.append((t, t.gen))

    def run_ready(self) -> None:
        ready = self.ready
        while ready:
            t, g = ready.popleft()
            if g != t.gen or t.state != S_READY:
                continue
            t.state = S_RUNNING
            self.run_thread(t)

    def run_now(self, t) -> None:
        """Run a thread at once (a session an engine just admitted)."""
        self.make_ready(t)  # counts toward `ready 1000 times at one instant`
        t.gen += 1          # and the ready entry is superseded
        t.state = S_RUNNING
        self.run_thread(t)

    # -- the statement interpreter -------------------------------------------
    def run_thread(self, t, count: int = 0) -> None:
        """Run a thread until it stops (``count``: the statements it has run
        since it started running)."""
        frames = t.frames
        st = None
        loc = None
        a = t.a
        try:
            while True:
                fr = frames[-1]
                stmts = fr[0]
                pc = fr[1]
                if pc >= len(stmts):
                    kind = fr[2]
                    if kind == F_BLOCK:
                        frames.pop()
                        continue
                    if kind == F_LOOP:
                        fr[1] = 0
                        count += 1
                        if count > MAX_STATEMENTS:
                            raise Fault("R004", self.livelock_msg(t))
                        continue
                    if kind == F_WHILE:
                        loc = fr[3].loc
                        count += 1
                        if count > MAX_STATEMENTS:
                            raise Fault("R004", self.livelock_msg(t))
                        if check_guard(fr[3].f(t)):
                            fr[1] = 0
                        else:
                            frames.pop()
                        continue
                    if kind == F_HOLD:
                        loc = fr[3].st.loc
                        self.hold_exit(t, fr[3])
                        frames.pop()
                        continue
                    if kind == F_ROOT:
                        loc = self.session_end_loc
                        self.end_session(t, loc)
                        return
                    # F_LEG
                    self.leg_end(t)
                    return
                st = stmts[pc]
                fr[1] = pc + 1
                loc = st.loc
                op = st.op
                if op == OP_SEG:
                    n = count + st.n
                    if n > MAX_STATEMENTS:
                        # near the limit: statement by statement, so that
                        # R004 names the statement
                        frames.append([st.stmts, 0, F_BLOCK, None])
                        continue
                    count = n
                    try:
                        if st.f(self, t):
                            return
                    except Fault as f:
                        loc = codegen.fault_loc(st, f)
                        raise
                    continue
                count += 1
                if count > MAX_STATEMENTS:
                    raise Fault("R004", self.livelock_msg(t))
                if op == OP_SET:
                    a[st.slot] = st.f(t)
                elif op == OP_RUN:
                    if self.do_run(t, st):
                        return
                elif op == OP_OBS:
                    self.observe(t, st.obs, st.f(t))
                elif op == OP_HOLD:
                    if self.do_hold(t, st, fr, pc, False):
                        return
                elif op == OP_TURN:
                    self.do_turn(t)
                elif op == OP_ANSWER:
                    if not t.leg:
                        self.answer(t)
                elif op == OP_BRANCH:
                    if check_guard(st.f(t)):
                        frames.append([st.then, 0, F_BLOCK, None])
                    elif st.other is not None:
                        frames.append([st.other, 0, F_BLOCK, None])
                elif op == OP_LOOP:
                    frames.append([st.body, 0, F_LOOP, st])
                elif op == OP_WHILE:
                    if check_guard(st.f(t)):
                        frames.append([st.body, 0, F_WHILE, st])
                elif op == OP_GROW:
                    if self.do_grow(t, st):
                        return
                elif op == OP_LOAD:
                    self.do_load(t, st)
                elif op == OP_RELEASE:
                    self.do_release(t, st)
                elif op == OP_DROP:
                    pool = self.pools[st.pool_m(t)]
                    pool.tick(self.now)
                    pool.drop(t.sess)
                    pool.dirty = True
                elif op == OP_CHOOSE:
                    self.do_choose(t, st)
                elif op == OP_END:
                    self.end_session(t, loc)
                    return
                elif op == OP_FORK:
                    self.do_fork(t, st)
                elif op == OP_CONTENT:
                    add_content(t.sess, st.f(t), st.f_len(t))
                elif op == OP_JOIN:
                    if t.sess.legs > 0:
                        t.state = S_JOIN
                        t.sess.joiner = t
                        self.joining.add(t.sess)
                        return
                else:  # pragma: no cover
                    raise AssertionError(op)
        except Fault as f:
            raise self.session_error(f, t, loc) from None

    def livelock_msg(self, t) -> str:
        return (f"session {t.sess.sid} executed {MAX_STATEMENTS:,} statements without blocking: "
                "a loop must let time pass on every pass")

    # -- statements ----------------------------------------------------------
    def observe(self, t, k: int, v: float) -> None:
        now = self.now
        if now >= self.warmup:
            self.obs_v[k].append(v)
            if self.samples:
                self.obs_t[k].append(now)
                self.obs_s[k].append(t.sess.sid)
                self.obs_k[k].append(t.a[TURN_NO])
        if self.all_obs is not None:
            self.all_obs[k].append(v)

    def do_run(self, t, st) -> bool:
        stage = st.stage_const
        if stage is None:
            stage = self.stages[st.stage_m(t)]
        w = st.f(t)
        if not (w >= 0.0):
            check_amount(w, st.what)
        if w == 0.0:
            return False
        self.job_seq += 1
        job = Job(t, stage, w, st.mode, self.now, self.job_seq)
        job.order = t.adm_seq
        if st.grow_m is not None:
            pid = st.grow_m(t)
            job.pa = self.innermost(t, pid)
        t.job = job
        t.state = S_STAGE
        if st.also_m:
            stages = [stage] + [self.stages[m(t)] for m in st.also_m]
            if len({s.sid for s in stages}) < len(stages):
                raise Fault("R013", "a run names one stage twice")
            self.flows.arrive(job, stages)
        elif stage.shared:
            self.flows.arrive(job, [stage])
        else:
            stage.arrive(job)
        return True

    def job_done(self, job) -> None:
        t = job.thread
        if t is None:
            if job.cb is not None:
                job.cb(job)
            return
        t.job = None
        self.make_ready(t)

    def job_done_tail(self, job) -> None:
        """A job ends as the last thing its event does: when no other session
        is ready, its session runs at once (as the settle right after the
        event would run it first)."""
        t = job.thread
        if t is None:
            if job.cb is not None:
                job.cb(job)
            return
        t.job = None
        if self.ready:
            self.make_ready(t)
            return
        now = self.now
        if t.ready_t == now:
            self.make_ready(t)
            return
        t.ready_t = now
        t.ready_n = 1
        t.state = S_RUNNING
        self.run_thread(t)

    def do_choose(self, t, st) -> None:
        a = t.a
        n = st.f(t)
        slot = st.slot
        if not (n >= 1) or math.isinf(n):
            if math.isinf(n) and n > 0:
                raise Fault("R002", "choose over infinitely many candidates")
            a[slot] = 0.0
            return
        n = int(math.floor(n))
        best = None
        best_j = 0
        for j in range(n):
            a[slot] = float(j)
            key = tuple(f(t) for f in st.keys)
            if best is None or key < best:
                best = key
                best_j = j
        a[slot] = float(best_j)

    def do_fork(self, t, st) -> None:
        sess = t.sess
        leg = Thread.fork(self, sess, list(t.a), sess.nlegs)
        sess.nlegs += 1
        sess.legs += 1
        leg.frames = [[st.body, 0, F_LEG, None]]
        self.make_ready(leg)

    # -- the client's view ---------------------------------------------------
    def client_decode(self, t, n: float) -> None:
        sess = t.sess
        if not sess.in_turn:
            return
        if sess.first is None:
            now = self.now
            if sess.last_pre is not None:
                sess.first = sess.last_pre
                sess.outs += n
            else:
                sess.first = now
                sess.outs += n - 1.0
            if now >= self.warmup:
                self.client["ttft"].append(sess.first - sess.t_turn)
        else:
            sess.outs += n

    def client_prefill_end(self, t) -> None:
        sess = t.sess
        if not sess.in_turn:
            return
        if sess.first is not None:
            sess.outs += 1.0   # a resumed prefill samples a token
        sess.last_pre = self.now
        if self.client_log is not None:
            self.first_pre.setdefault(sess.sid, self.now)

    def answer(self, t) -> None:
        sess = t.sess
        if not sess.in_turn:
            return
        sess.in_turn = False
        now = self.now
        after = now >= self.warmup
        if sess.first is None and sess.last_pre is not None:
            sess.first = sess.last_pre
            if after:
                self.client["ttft"].append(sess.first - sess.t_turn)
        if after:
            self.client["response"].append(now - sess.t_turn)
            if sess.first is not None and sess.outs > 0:
                self.client["tpot"].append((now - sess.first) / sess.outs)
        if self.client_log is not None:
            self.client_log.append((sess.sid, self.first_pre.pop(sess.sid, sess.first), now))

    def detach(self, t) -> None:
        """Take a thread out of whatever it waits in."""
        s = t.state
        t.gen += 1
        if s == S_STAGE:
            j = t.job
            if j is not None and j.alive:
                if j.stages is not None:
                    self.flows.remove(j)
                else:
                    j.stage.remove(j)
            t.job = None
        elif s == S_QUEUED:
            req = t.req
            if req is not None:
                self.pools[req.pids[0]].dequeue(req)
            t.req = None
        elif s == S_GROWING:
            g = t.grower
            if g is not None and g in g.pa.pool.growers:
                g.pa.pool.growers.remove(g)
            t.grower = None
        elif s == S_JOIN:
            if t.sess.joiner is t:
                t.sess.joiner = None
                self.joining.discard(t.sess)
        t.state = S_NEW

    def kill(self, t) -> None:
        """End a thread wherever it waits (its session was refused)."""
        if t.state == S_ENDED:
            return
        self.detach(t)
        self.release_all(t)
        t.state = S_ENDED

    def leg_end(self, t, refused: bool = False) -> None:
        sess = t.sess
        self.release_all(t)
        t.state = S_ENDED
        for pa in t.leases:
            if sess.ended:
                if not pa.released:
                    self.end_lease(pa)
            else:
                sess.leases.append(pa)
        t.leases = []
        sess.legs -= 1
        if sess.legs == 0 and sess.joiner is not None and not sess.ended:
            j = sess.joiner
            sess.joiner = None
            self.joining.discard(sess)
            self.make_ready(j)

    def check_deadlock(self) -> None:
        """The heap is empty before the horizon: sessions waiting only for each
        other, one at a join, is a hold-and-wait deadlock (§Legs)."""
        joiners = sorted((s for s in self.joining if s.joiner is not None and s.legs > 0 and not s.ended),
                         key=lambda s: s.sid)
        if not joiners:
            return
        s = joiners[0]
        raise RunError("R011", f"hold-and-wait deadlock: session {s.sid} waits at a join for "
                               f"{s.legs} leg{'s' if s.legs != 1 else ''}, and every live session and leg "
                               "waits for another with no event left to free it (a finite lease breaks "
                               f"the cycle) (time {fmt_time(self.now)})",
                       self.span(cur_loc(s.main)), field_of(cur_loc(s.main)) or "$.blocks")

    # -- claims and gauges --------------------------------------------------
    def agg_fn(self, agg: str, k: int):
        def f(t):
            vals = self.all_obs[k] if self.all_obs is not None else []
            if agg == "Total":
                return fsum(vals)
            if agg == "Count":
                return float(len(vals))
            if agg == "Largest":
                return max(vals) if vals else 0.0
            if agg == "Smallest":
                return min(vals) if vals else 0.0
            xs = sorted(vals)
            tot = 0.0
            run = 0.0
            for x in xs:
                run += x
                tot += run
            return tot
        return f

    def check_given(self, t) -> None:
        claims_mod.check_given(self, t)

    def check_iteration_claims(self, stage, plan) -> None:
        claims_mod.check_iteration(self, stage, plan)

    def sample_gauges(self) -> None:
        now = self.now
        for i, f in enumerate(self.gauges):
            v = f(self.mcar)
            ts = self.gauge_t[i]
            vs = self.gauge_v[i]
            if not vs or vs[-1] != v:
                if ts and ts[-1] == now:
                    vs[-1] = v
                else:
                    ts.append(now)
                    vs.append(v)

    # -- the end -------------------------------------------------------------
    def finish(self) -> None:
        end = self.end_time
        for p in self.pools:
            p.tick(end)
        for s in self.stages:
            s.tick(end)
        self.tick_live(end)
        # claims at end, and the verdicts of the others
        claims_mod.finish(self)
        # over-cap heads
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

