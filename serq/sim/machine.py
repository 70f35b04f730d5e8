"""The machine: the event loop, settling, and the run's start and end.
``Sim`` builds the run's parts from the IR (pools, stages, flows, compiled
blocks, claims, gauges, the workload) and orchestrates them; each concern
the machine's state serves is a part of ``Sim`` in its own module:

* serq.sim.interp: the statement interpreter (threads run their statements);
* serq.sim.workload: arrivals, turns, a session's end;
* serq.sim.legs: forks, a leg's end, the join deadlock;
* serq.sim.pools: admission, release and leases, growth and preemption,
  eviction and spills;
* serq.sim.record: observations, the client's view, gauges, the warm-up;
* serq.sim.claims: what the claims read;
* serq.sim.errors: the located errors.

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
stages.  What they do is what serq.sim.interp does.
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque
from typing import Optional

from ..ir import model as M
from ..ir.expr import const_value, is_test
from . import claims as claims_mod
from . import codegen
from . import rng as R
from . import statements
from .claims import ClaimCheck, Claims
from .compile import CTX, Compiler
from .errors import Fault, Locating, StopInside, fmt_num, fmt_time
from .interp import Interpreter
from .legs import Legs
from .limits import Limits, Stall
from .pools import Admission, Eviction, Growth, Pool, Release, RunPool, TreePool
from .record import Recording
from .stages import DelayStage, FifoStage, FlowNet, PsStage, SharedStage
from .statements import last_loc
from .step import StepStage
from .trend import Trend
from .threads import S_READY, S_RUNNING, Carrier, cur_loc
from .workload import Workload, load_trace

MAX_READY = 1000

C_NOW = CTX["Now"]
C_PRESENT = CTX["Present"]


class Sim(Locating, Interpreter, Workload, Legs, Admission, Release, Growth, Eviction, Recording, Claims):
    CTX_PRESENT = C_PRESENT

    def __init__(self, program: M.Program, progress: bool = False, check_hook=None,
                 step_log: bool = False, client_log: bool = False, samples: bool = True,
                 max_events: Optional[int] = None, max_seconds: Optional[float] = None, interrupt=None,
                 strokes: bool = True, batch_log: bool = False):
        self.program = program
        # an engine's identical decode iterations in one go (serq.sim.stroke),
        # where nothing reads iterations one by one
        self.strokes = strokes and not step_log and not batch_log and check_hook is None and not program.gauges
        # opt-in: one record per engine iteration (serq oracle diff)
        self.step_log = [] if step_log else None
        # opt-in: what each engine iteration computed (serq calibrate --run)
        self.batch_log = [] if batch_log else None
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
        self.alloc_ver = 0      # moves whenever an allocation is taken, grows or is released (StepStage.set_res_ctx)
        self.rel_seq = 0
        self.alloc_seq = 0
        self.unfit = None       # the pool the last refused admission did not fit (waiting.blocked)
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
        # the values (an observation's, the client's) are appended to a list
        # first, which is several times cheaper than an array's append, and
        # moved into their arrays in blocks (Recording.flush_values)
        self.obs_buf = [[] for _ in program.observes]
        self.client_buf = {k: [] for k in self.client}
        self.value_bufs = list(zip(self.obs_buf, self.obs_v)) + [(self.client_buf[k], self.client[k])
                                                                 for k in self.client]
        # with ``samples``: each client value's (times, sessions, turns), as an observation's
        self.client_at = {k: (array("d"), array("q"), array("d")) for k in self.client} if samples else None
        self.joining = set()
        self.nattrs = len(program.attrs)
        self.closed = type(program.arrival) is M.AClosed
        self.warmed = False
        self.end_time = None
        # the warm-up, then the trend's marks (serq.sim.trend): read before
        # the first event at or after each
        self.trend = Trend(self)
        self.next_mark = self.warmup
        # declarations
        self.pools = [(TreePool if p.tree else RunPool if p.shared else Pool)(self, i, p)
                      for i, p in enumerate(program.pools)]
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
            p.compile_rules(self.comp)
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
            self.trace = load_trace(program.trace, streamed=type(program.arrival) is M.ATrace)
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
        if hasattr(self.trace, "check"):      # (a trace read as the run went: the file it was)
            self.trace.check()
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
            mark = self.next_mark
            c_now = C_NOW
            try:
                while heap:
                    ev = pop(heap)
                    t, _, _, fn, arg = ev
                    if t > horizon:
                        heapq.heappush(heap, ev)   # left as it was
                        break
                    if t >= mark:
                        mark = self.pass_marks(t)
                    self.now = t
                    ctx[c_now] = t
                    if fn(arg) is not False:
                        nev += 1
                        if ready or pools:
                            settle()
                        if nev >= check_at:
                            self.nevents = nev
                            self.flush_values()
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
            if t >= self.next_mark:
                self.pass_marks(t)
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
                self.flush_values()
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
        self.flush_values()
        if self.stopped is not None:
            end = self.now
        elif draining is not None:
            if self.open_done and self.open_arrivals < draining:
                # the arrivals stopped at the horizon (or a trace's last row)
                # before N: the run was not the N arrivals it was asked for
                trace = type(self.arrival) is M.ATrace
                self.machine_fault(Fault("R008", f"--arrivals {draining}: {self.open_arrivals} arrived by the "
                                                 f"horizon {fmt_num(horizon)}"
                                                 + (" or the trace's last row" if trace else "")
                                                 + f"; the run must have all {draining}"), None, "$.arrivals")
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
        self.trend.pass_until(end)
        self.now = end
        ctx[C_NOW] = end
        self.end_time = end
        self.finish()


    def pass_marks(self, t) -> float:
        """Before the event at ``t``: the warm-up's snapshot and the trend's
        marks at or before ``t``; the next mark's time."""
        if not self.warmed:
            self.snapshot_warmup()
        self.trend.pass_until(t)
        self.next_mark = self.trend.next_mark()
        return self.next_mark

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
        self.note_over_cap()
