"""Stages where time passes: fifo(c), ps(φ(present)), delay, and the flows of
runs that hold several ps stages at once (``share maxmin`` / ``bottleneck``).

A job is one run: its work goes down at rate 1 (fifo, delay), at
φ(present)/present (ps), or at its flow's rate (a shared stage).  A job
belongs to a thread (a session or a leg), which resumes when the job ends,
or to the machine (a spill's write), which gets a callback.

Ties: jobs of a ps stage with equal finish tags finish in the order they
started (the heap key is (tag, start sequence)); fifo and delay completions
are events, which at one instant run in the order they were scheduled.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from heapq import heappush as _heappush

from ..ir import model as M
from .errors import Fault, fmt_num

MODE_PLAIN, MODE_PREFILL, MODE_DECODE, MODE_AWAIT = 0, 1, 2, 3
MODES = {"Plain": MODE_PLAIN, "Prefill": MODE_PREFILL, "Decode": MODE_DECODE, "Await": MODE_AWAIT}


class Job:
    """One run of a thread (or the machine's spill write) on a stage."""

    __slots__ = ("thread", "stage", "work", "rem", "t_arr", "t_start", "alive", "mode", "cb", "order", "seq",
                 "pa", "plan_n", "tag", "stages", "rate", "served_it", "stalled", "cb_arg", "mem_pas")

    # made bare (``Job()``: no ``__init__``, a type's call being cheaper than
    # ``object.__new__``), then given what ``new`` sets; FIELDS for code that
    # writes the construction out (serq.sim.codegen.construct;
    # tests/sim/test_codegen.py holds the two to the same)
    FIELDS = (("thread", "thread"), ("stage", "stage"), ("work", "work"), ("rem", "work"), ("t_arr", "t_arr"),
              ("t_start", "None"), ("alive", "True"), ("mode", "mode"), ("seq", "seq"), ("stages", "None"),
              ("pa", "None"), ("cb", "None"))

    @classmethod
    def new(cls, thread, stage, work: float, mode: int, t_arr: float, seq: int):
        self = cls()
        self.thread = thread
        self.stage = stage
        self.work = work
        self.rem = work
        self.t_arr = t_arr
        self.t_start = None
        self.alive = True
        self.mode = mode
        self.seq = seq
        self.stages = None
        self.pa = None
        self.cb = None
        # set where they are used: order, plan_n, served_it, stalled, mem_pas
        # (step stages), tag (ps), rate (flows), cb_arg (machine jobs)
        return self


class Stage:
    """What every stage reports."""

    kind = "stage"
    is_step = False
    shared = False

    def __init__(self, sim, sid: int, decl: M.Stage):
        self.sim = sim
        self.sid = sid
        self.decl = decl
        self.label = sim.program.stage_label(sid)
        self.n = 0             # jobs present
        self.acc_n = 0.0
        self.acc_busy = 0.0
        self.t_acc = 0.0
        self.completed = 0
        self.wait_sum = 0.0
        self.serv_sum = 0.0
        self.iterations = 0
        # online estimates, from time 0
        self.arr_all = 0
        self.wait_all = 0.0
        self.started_all = 0

    def tick(self, now: float) -> None:
        dt = now - self.t_acc
        if dt > 0.0:
            self.acc_n += self.n * dt
            self.acc_busy += self.busy_level() * dt
            self.t_acc = now

    def busy_level(self) -> float:
        return 1.0 if self.n > 0 else 0.0

    def present(self) -> int:
        return self.n

    def busy(self) -> int:
        return self.n

    def est_lambda(self) -> float:
        now = self.sim.now
        return self.arr_all / now if now > 0 else 0.0

    def est_rho(self) -> float:
        now = self.sim.now
        if now <= 0:
            return 0.0
        self.tick(now)
        r = self.acc_busy / now
        return min(r, 1.0 - 1e-9)

    def est_wait(self) -> float:
        return self.wait_all / self.started_all if self.started_all else 0.0

    def budget_left_query(self) -> float:  # pragma: no cover - validated away
        raise Fault("R002", f"budget_left reads an engine; `{self.label}` is not one")

    def record_done(self, job, now: float, wait: float) -> None:
        if now >= self.sim.warmup:
            self.completed += 1
            self.wait_sum += wait
            self.serv_sum += now - job.t_arr - wait


class FifoStage(Stage):
    kind = "fifo"

    def __init__(self, sim, sid, decl):
        super().__init__(sim, sid, decl)
        self.c = decl.kind.servers
        self.q = deque()
        self.serving = []
        self.done_cb = None     # its completion event, written by serq.sim.codegen.completions

    def busy_level(self) -> float:
        return len(self.serving) / self.c

    def busy(self) -> int:
        return len(self.serving)

    def arrive(self, job) -> None:
        sim = self.sim
        now = sim.now
        dt = now - self.t_acc
        if dt > 0.0:
            self.acc_n += self.n * dt
            self.acc_busy += len(self.serving) / self.c * dt
            self.t_acc = now
        self.n += 1
        self.arr_all += 1
        if len(self.serving) < self.c:
            self._start(job, now)
        else:
            self.q.append(job)

    def _start(self, job, now: float) -> None:
        job.t_start = now
        self.serving.append(job)
        self.started_all += 1
        self.wait_all += now - job.t_arr
        sim = self.sim    # sim.schedule(now + job.rem, <its completion>, job)
        sim.seq += 1
        _heappush(sim.heap, (now + job.rem, 0, sim.seq, self.done_cb, job))

    def remove(self, job) -> None:
        now = self.sim.now
        self.tick(now)
        job.alive = False
        self.n -= 1
        if job.t_start is None:
            self.q.remove(job)
        else:
            self.serving.remove(job)
            if self.q:
                self._start(self.q.popleft(), now)

    def work(self) -> float:
        now = self.sim.now
        w = 0.0
        for j in self.serving:
            w += max(0.0, j.t_start + j.rem - now)
        for j in self.q:
            w += j.rem
        return w


class DelayStage(Stage):
    """Every job on its own at rate 1 (ps(present)): a completion event each."""

    kind = "delay"

    def __init__(self, sim, sid, decl):
        super().__init__(sim, sid, decl)
        self.jobs = set()
        self.done_cb = None     # its completion event, written by serq.sim.codegen.completions

    def arrive(self, job) -> None:
        sim = self.sim
        now = sim.now
        dt = now - self.t_acc
        if dt > 0.0:
            self.acc_n += self.n * dt
            self.acc_busy += (1.0 if self.n > 0 else 0.0) * dt
            self.t_acc = now
        self.n += 1
        self.arr_all += 1
        self.started_all += 1
        job.t_start = now
        self.jobs.add(job)
        sim.seq += 1    # sim.schedule(now + job.rem, <its completion>, job)
        _heappush(sim.heap, (now + job.rem, 0, sim.seq, self.done_cb, job))

    def remove(self, job) -> None:
        self.tick(self.sim.now)
        job.alive = False
        self.n -= 1
        self.jobs.discard(job)

    def work(self) -> float:
        now = self.sim.now
        return sum(max(0.0, j.t_start + j.rem - now) for j in self.jobs)


class PsStage(Stage):
    """Processor sharing: every job at φ(present)/present.

    A virtual clock V advances at φ(n)/n; a job's finish tag is V at its
    start plus its work; the job with the least tag (ties: start order)
    finishes when V reaches it."""

    kind = "ps"

    def __init__(self, sim, sid, decl, cap_fn, cap_const):
        super().__init__(sim, sid, decl)
        self.cap_fn = cap_fn
        self.cap_const = cap_const
        self.V = 0.0
        self.tV = 0.0
        self.heap = []
        self.rate = 0.0      # dV/dt
        self.phi = 0.0
        self.token = 0
        self.dead = 0

    def busy_level(self) -> float:
        return 1.0 if self.n > 0 else 0.0

    def _advance(self, now: float) -> None:
        if now > self.tV:
            self.V += (now - self.tV) * self.rate
            self.tV = now

    def _capacity(self, n: int) -> float:
        if self.cap_const is not None:
            return self.cap_const
        sim = self.sim
        ctx = sim.ctx
        old = ctx[sim.CTX_PRESENT]
        ctx[sim.CTX_PRESENT] = float(n)
        try:
            phi = self.cap_fn(sim.mcar)
        finally:
            ctx[sim.CTX_PRESENT] = old
        if not (phi >= 0):
            raise Fault("R006", f"the capacity of ps stage `{self.label}` is {fmt_num(phi)} with "
                                f"{n} jobs present: a capacity is not negative and not NaN")
        return phi

    def _reschedule(self, now: float) -> None:
        self.token += 1
        live = self.n
        if live <= 0:
            self.rate = 0.0
            return
        try:
            self.phi = self._capacity(live)
        except Fault as f:
            self.sim.machine_fault(f, self.decl.loc, f"$.stages[{self.sid}]")
        self.rate = self.phi / live
        heap = self.heap
        while heap and not heap[0][2].alive:
            heapq.heappop(heap)
            self.dead -= 1
        if not heap or self.rate <= 0:
            return
        tag = heap[0][0]
        dt = (tag - self.V) / self.rate
        if dt < 0:
            dt = 0.0
        self.sim.schedule(now + dt, self._fire, self.token)

    def arrive(self, job) -> None:
        sim = self.sim
        now = sim.now
        self.tick(now)
        self._advance(now)
        self.n += 1
        self.arr_all += 1
        self.started_all += 1
        job.t_start = now
        job.tag = self.V + job.rem
        heapq.heappush(self.heap, (job.tag, job.seq, job))
        self._reschedule(now)

    def _fire(self, token):
        if token != self.token:
            return False
        sim = self.sim
        now = sim.now
        self.tick(now)
        self._advance(now)
        heap = self.heap
        while heap and not heap[0][2].alive:
            heapq.heappop(heap)
            self.dead -= 1
        if not heap:
            return False
        tag, _, job = heapq.heappop(heap)
        self.V = max(self.V, tag)
        self.n -= 1
        job.alive = False
        if now >= sim.warmup:
            self.completed += 1
            self.serv_sum += now - job.t_arr
        self._reschedule(now)
        sim.job_done_tail(job)

    def remove(self, job) -> None:
        now = self.sim.now
        self.tick(now)
        self._advance(now)
        job.alive = False
        self.dead += 1
        self.n -= 1
        self._reschedule(now)

    def work(self) -> float:
        self._advance(self.sim.now)
        return sum(max(0.0, tag - self.V) for tag, _, j in self.heap if j.alive)


class SharedStage(Stage):
    """A ps stage some run holds together with another: every job on it is a
    flow of the program's share; its utilisation is Σ rate / φ."""

    kind = "shared"
    shared = True

    def __init__(self, sim, sid, decl, phi: float):
        super().__init__(sim, sid, decl)
        self.phi = phi
        self.flows = []
        self.carried = 0.0   # Σ rate of its flows

    def busy_level(self) -> float:
        return self.carried / self.phi if self.phi > 0 else 0.0

    def work(self) -> float:
        self.sim.flows.advance(self.sim.now)
        return sum(j.rem for j in self.flows)


class FlowNet:
    """The flows over the shared stages, with their rates."""

    def __init__(self, sim, share: str):
        self.sim = sim
        self.maxmin = share == "MaxMin"
        self.flows = []
        self.t = 0.0
        self.token = 0

    def advance(self, now: float) -> None:
        dt = now - self.t
        if dt > 0.0:
            for f in self.flows:
                f.rem -= f.rate * dt
                if f.rem < 0:
                    f.rem = 0.0
            self.t = now

    def arrive(self, job, stages) -> None:
        sim = self.sim
        now = sim.now
        self.advance(now)
        job.stages = stages
        job.t_start = now
        for s in stages:
            s.tick(now)
            s.n += 1
            s.arr_all += 1
            s.started_all += 1
            s.flows.append(job)
        self.flows.append(job)
        self._rates(now)

    def remove(self, job) -> None:
        now = self.sim.now
        self.advance(now)
        job.alive = False
        self._drop(job, now)
        self._rates(now)

    def _drop(self, job, now) -> None:
        self.flows.remove(job)
        for s in job.stages:
            s.tick(now)
            s.n -= 1
            s.flows.remove(job)
            if not s.flows:
                # no flow left: it carries nothing (``_rates`` sets the rates
                # of the stages flows are on, and this one has none)
                s.carried = 0.0

    def _rates(self, now: float) -> None:
        flows = self.flows
        stages = []
        for f in flows:
            for s in f.stages:
                if s not in stages:
                    stages.append(s)
        for s in stages:
            s.tick(now)
        if self.maxmin:
            rate = {id(f): 0.0 for f in flows}
            left = {s.sid: s.phi for s in stages}
            active = list(flows)
            while active:
                counts = {}
                for f in active:
                    for s in f.stages:
                        counts[s.sid] = counts.get(s.sid, 0) + 1
                inc = min(left[sid] / c for sid, c in counts.items())
                if inc < 0:
                    inc = 0.0
                for f in active:
                    rate[id(f)] += inc
                full = set()
                for sid, c in counts.items():
                    left[sid] -= inc * c
                    if left[sid] <= 1e-12 * max(1.0, abs(left[sid]) + inc * c):
                        full.add(sid)
                if not full:
                    # guard against rounding: saturate the tightest one
                    full.add(min(counts, key=lambda sid: left[sid] / counts[sid]))
                active = [f for f in active if not any(s.sid in full for s in f.stages)]
            for f in flows:
                f.rate = rate[id(f)]
        else:
            for f in flows:
                f.rate = min(s.phi / len(s.flows) for s in f.stages)
        for s in stages:
            s.carried = sum(f.rate for f in s.flows)
        self.token += 1
        best = None
        for f in flows:
            if f.rate > 0:
                t = now + f.rem / f.rate
                if best is None or t < best:
                    best = t
        if best is not None:
            self.sim.schedule(best, self._fire, self.token)

    def _fire(self, token):
        if token != self.token:
            return False
        sim = self.sim
        now = sim.now
        self.advance(now)
        done = [f for f in self.flows
                if f.rem <= 1e-9 * max(1.0, f.work) or (f.rate > 0 and f.rem / f.rate <= 1e-12)]
        if not done:
            # the earliest one, which rounding left a hair short
            done = [min(self.flows, key=lambda f: (f.rem / f.rate if f.rate > 0 else math.inf, f.seq))]
        done.sort(key=lambda f: f.seq)
        for f in done:
            f.rem = 0.0
            f.alive = False
            self._drop(f, now)
            if now >= sim.warmup:
                for s in f.stages:
                    s.completed += 1
                    s.serv_sum += now - f.t_arr
        self._rates(now)
        for f in done:
            sim.job_done(f)
