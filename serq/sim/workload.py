"""The workload (a part of ``serq.sim.machine.Sim``): sessions arrive
(Poisson, renewal, closed or batch, explicit sessions, a trace's rows), take
turns (a turn block on the stream of (session, turn), an explicit session's
preset turns, a replayed trace session's rows) and end; the count of live
sessions and its time average.

A session's arrival itself (``Sim.arrive``) and the Poisson arrival event
(``Sim.open_arrival``) are written for the program by serq.sim.codegen;
closed sessions arrive again at the instant one ends.  A trace
(``load_trace``) is a CSV of session,turn,new,out,think[,forced] or a
Mooncake trace (serq.ir.trace).
"""

from __future__ import annotations

import math
import os

from ..diag import SerqError
from ..ir import model as M
from ..ir.trace import is_mooncake, read_mooncake
from .errors import Fault, RunError, fmt_num
from .limits import check_finite_run
from .statements import OP_OBS, OP_SET
from .threads import FORCED, MORE, NEW, OUT, S_ENDED, THINK, TURN_NO, Carrier, WlCarrier


class Workload:
    def start_workload(self) -> None:
        a = self.arrival
        t = type(a)
        check_finite_run(self)
        if t is M.APoisson:
            self.schedule(0.0, self.open_arrival, None)
        elif t is M.ARenewal:
            self.f_gap = self.comp.expr(a.gap)
            self.schedule_renewal()
        elif t is M.AClosed or t is M.ABatch:
            for _ in range(a.n):
                self.schedule(0.0, self.arrive, None)
        elif t is M.ASessions:
            for spec in a.sessions:
                self.schedule(spec.at, self.arrive, spec)
        elif t is M.ATrace:
            self.trace_arrival_at(0)
        if self.draining is None and t is not M.ATrace:
            self.open_done = True

    def trace_arrival_at(self, i: int) -> None:
        """`arrive trace(scale)`: row i arrives at scale × its timestamp (the
        trace read so far: a TraceStream)."""
        row = self.trace.row(i) if self.draining is None or i < self.draining else None
        if row is not None:
            nt = self.arrival.scale * row.ts
            if nt <= self.horizon:
                self.schedule(nt, self.trace_arrival, i)
                return
        self.open_done = True

    def trace_arrival(self, i):
        self.open_arrivals += 1
        self.trace_arrival_at(i + 1)
        self.arrive(None)

    def schedule_renewal(self) -> None:
        car = Carrier(self.arr_rng)
        try:
            gap = self.f_gap(car)
        except Fault as f:
            self.machine_fault(f, None, "$.arrival.Renewal")
        if not (gap > 0 and not math.isinf(gap)):
            self.machine_fault(Fault("R007", f"a renewal gap is {fmt_num(gap)}: a gap is positive and "
                                             "finite"), None, "$.arrival.Renewal")
        nt = self.now + gap
        if nt == self.now:
            self.stall.gap(f"`arrive renewal(…)`: a gap of {fmt_num(gap)}", "$.arrival.Renewal")
        if nt <= self.horizon:
            self.schedule(nt, self.renewal_arrival, None)
        elif self.draining is not None:
            self.open_done = True

    def renewal_arrival(self, _):
        self.open_arrivals += 1
        if self.draining is not None and self.open_arrivals >= self.draining:
            self.open_done = True
        else:
            self.schedule_renewal()
        self.arrive(None)

    def do_turn(self, t) -> None:
        sess = t.sess
        a = t.a
        a[TURN_NO] += 1
        k = turn_index(a[TURN_NO])
        if sess.preset is not None:
            self.turn_preset(sess, a)
        else:
            if sess.trace is not None:
                self.turn_trace(sess, a)
            if self.turn_block is not None:
                self.run_wl_block(t, self.turn_block, k)
        now = self.now
        sess.in_turn = True
        sess.t_turn = now
        sess.first = None
        sess.last_pre = None
        sess.outs = 0.0
        if now >= self.warmup:
            self.turns_after += 1

    def turn_preset(self, sess, a) -> None:
        """An explicit session's next turn: its preset attributes (no turn
        block)."""
        ts = sess.preset
        ix = sess.turn_ix
        if ix < len(ts):
            for slot, v in ts[ix]:
                a[slot] = v
            a[MORE] = 1.0 if ix + 1 < len(ts) else 0.0
            sess.turn_ix = ix + 1
        else:
            a[MORE] = 0.0

    def turn_trace(self, sess, a) -> None:
        """A replayed session's next turn: the trace's row."""
        rows = sess.trace
        ix = sess.turn_ix
        if ix >= len(rows):
            raise Fault("R015", f"session {sess.sid} takes turn {ix + 1}, but its trace session has "
                                f"{len(rows)} turn{'s' if len(rows) != 1 else ''}")
        new, out, think, forced = rows[ix]
        a[NEW] = new
        a[OUT] = out
        a[THINK] = think
        a[FORCED] = forced
        a[MORE] = 1.0 if ix + 1 < len(rows) else 0.0
        sess.turn_ix = ix + 1

    def run_wl_block(self, t, stmts, turn) -> None:
        car = WlCarrier(self, t, turn)
        a = t.a
        for st in stmts:
            if st.op == OP_SET:
                a[st.slot] = st.f(car)
            elif st.op == OP_OBS:
                self.observe(t, st.obs, st.f(car))

    def end_session(self, t, loc) -> None:
        """The session's main line ends (its block's end or `end;`); a leg
        cannot end its session (validated), so ``t`` is the main thread."""
        sess = t.sess
        if sess.legs > 0:
            raise Fault("R010", f"session {sess.sid} ends while {sess.legs} of its legs "
                                f"{'runs' if sess.legs == 1 else 'run'}: join them first")
        if t.holds:
            self.release_all(t)
        t.state = S_ENDED
        self.finish_session(sess)

    def finish_session(self, sess, refused: bool = False) -> None:
        if sess.ended:
            return
        sess.ended = True
        sess.main = None
        if self.stuck:
            for key in [k for k in self.stuck if k[0] == sess.sid]:
                del self.stuck[key]
        if sess.leases:
            for pa in list(sess.leases):
                if not pa.released:
                    self.end_lease(pa)
            sess.leases.clear()
        now = self.now
        dt = now - self.t_live    # tick_live
        if dt > 0.0:
            self.acc_live += self.live * dt
            self.t_live = now
        self.live -= 1
        if self.joining:
            self.joining.discard(sess)
        if now >= self.warmup:
            self.ended_after += 1
        if self.closed and now <= self.horizon:
            self.schedule(now, self.arrive, None)

    def tick_live(self, now) -> None:
        dt = now - self.t_live
        if dt > 0.0:
            self.acc_live += self.live * dt
            self.t_live = now


def turn_index(v: float) -> int:
    """The turn number a turn's stream is keyed by (``turn_no``, which a
    program may set)."""
    if v - v == 0.0:
        return int(v)
    raise Fault("R017", f"`turn_no` is {fmt_num(v)}: the turn number is a finite number (a set made it so)")


class TraceRow(list):
    """A Mooncake trace's row as a trace session: one turn (input_length,
    output_length, 0, 0), its prompt's content (whole numbers: a 64-bit hash
    id kept exact) and its timestamp."""

    def __init__(self, row):
        super().__init__([(float(row.input_length), float(row.output_length), 0.0, 0.0)])
        self.content = row.content()
        self.ts = float(row.timestamp)


def _run_error(e: SerqError) -> RunError:
    d = e.diagnostics[0]
    err = RunError("R014", d.message, d.span, field=None if d.span is not None else "$.trace")
    err.diagnostics[0].help = d.help
    return err


class TraceStream:
    """A Mooncake trace read as its rows arrive (``arrive trace(scale)``):
    ``row(i)`` is row i, read when first asked for (None past the last);
    what is kept is what the run has reached.  A malformed row is a run
    error where it is read."""

    def __init__(self, path: str):
        from ..ir.trace import iter_mooncake
        self.path = path
        self.rows: list = []
        # the file the rows come from, as it is as its reading begins: one
        # written to in place as the run reads it (`>`, `>>`, an editor's
        # save) gave the run rows of two files, or fewer rows, silently
        try:
            self.fd = os.open(path, os.O_RDONLY)
            self.seen = _state(os.fstat(self.fd))
        except OSError:
            self.fd = None      # (the reading says why it cannot)
        self.it = iter_mooncake(path)
        if self.row(0) is None:
            raise RunError("R014", f"the trace {path} has no rows", field="$.trace")

    def row(self, i: int):
        rows = self.rows
        while i >= len(rows) and self.it is not None:
            try:
                _, r = next(self.it)
            except StopIteration:
                self.it = None
                self.check()
                break
            except SerqError as e:
                self.check()
                raise _run_error(e) from None
            rows.append(TraceRow(r))
        return rows[i] if i < len(rows) else None

    def check(self) -> None:
        """At the end of its reading (its last row, an error, the run's end):
        a trace changed in place since its reading began is a run error, R014."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            now = _state(os.fstat(fd))
        finally:
            os.close(fd)
        if now != self.seen:
            e = RunError("R014", f"the trace {self.path} was written to while the run read it (its size or its "
                                 "time of change is not what it was as the run began): the rows the run read may "
                                 "not be one file's", field="$.trace")
            e.diagnostics[0].help = ("run it again on a trace nothing writes to as it runs (a writer that replaces "
                                     "the file whole, as serq mooncake-trace --out does, leaves a run the file it "
                                     "opened)")
            raise e

    def __del__(self):
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)

    def __getitem__(self, i: int):
        return self.row(i)


def _state(st) -> tuple:
    return (st.st_size, st.st_mtime_ns)


def load_trace(path: str, streamed: bool = False):
    """The corpus: per trace session (in the order sessions first appear),
    its turns in turn order as (new, out, think, forced); a Mooncake trace's
    rows, each one session (``streamed``: a :class:`TraceStream`).  Every
    problem is a run error (R014) at the file's line and column."""
    from ..ir.trace import read_trace
    if is_mooncake(path):
        if streamed:
            return TraceStream(path)
        try:
            return [TraceRow(r) for r in read_mooncake(path)]
        except SerqError as e:
            raise _run_error(e) from None
    try:
        sessions = read_trace(path)
    except SerqError as e:
        raise _run_error(e) from None
    return [[(t.new, t.out, t.think, t.forced) for t in turns] for turns in sessions]
