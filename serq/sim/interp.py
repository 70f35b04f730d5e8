"""The statement interpreter (a part of ``serq.sim.machine.Sim``): a thread
runs its frames' statements until one blocks (a run, a hold, a grow that
waits, a join, its end); a run becomes a job on its stage, whose end makes
the thread ready again (or, as its event's last act, runs it at once).

A thread that runs ``MAX_STATEMENTS`` statements without blocking is a
livelock (R004); a segment near the limit runs statement by statement, so
that the error names the statement.  The statements' pool commands are the
pools' (serq.sim.pools), the workload's (``turn``, ``end``) serq.sim.workload's,
legs serq.sim.legs'.  What runs here is also written out for the program by
serq.sim.codegen (segments, a job's end as its event's last act), to the
same effect.
"""

from __future__ import annotations

import math

from .codegen import fault_loc
from .compile import check_amount, check_guard
from .errors import Fault, fmt_num
from .stages import MODE_AWAIT, Job
from .statements import (MAX_STATEMENTS, OP_ANSWER, OP_BRANCH, OP_CHOOSE, OP_CONTENT, OP_DROP, OP_END,
                         OP_FORK, OP_GROW, OP_HOLD, OP_JOIN, OP_LOAD, OP_LOOP, OP_OBS, OP_RELEASE, OP_RUN,
                         OP_SEG, OP_SET, OP_TURN, OP_WHILE)
from .pools import add_content
from .threads import F_BLOCK, F_HOLD, F_LOOP, F_ROOT, F_WHILE, S_JOIN, S_RUNNING, S_STAGE


class Interpreter:
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
                        loc = fault_loc(st, f)
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
                    self.do_drop(t, st)
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

    def do_run(self, t, st) -> bool:
        stage = st.stage_const
        if stage is None:
            stage = self.stages[st.stage_m(t)]
        w = st.f(t)
        if not (w >= 0.0):
            check_amount(w, st.what)
        if w == 0.0 and st.mode != MODE_AWAIT:
            return False
        self.job_seq += 1
        job = Job.new(t, stage, w, st.mode, self.now, self.job_seq)
        job.order = t.adm_seq
        if st.grow_m is not None:
            job.pa = self.held(t, st.grow_m(t), f"run {st.name} … growing")
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
        now = self.now
        if t is None or self.ready or t.ready_t == now:
            self.job_done(job)
            return
        t.job = None
        t.ready_t = now
        t.ready_n = 1
        t.state = S_RUNNING
        self.run_thread(t)

    def do_choose(self, t, st) -> None:
        a = t.a
        n = st.f(t)
        slot = st.slot
        if not (n >= 1 and math.isfinite(n) and n == math.floor(n)):
            raise Fault("R002", f"the candidates of `choose` are a whole number ≥ 1, not {fmt_num(n)}")
        n = int(n)
        best = None
        best_j = 0
        for j in range(n):
            a[slot] = float(j)
            key = tuple(f(t) for f in st.keys)
            if best is None or key < best:
                best = key
                best_j = j
        a[slot] = float(best_j)
