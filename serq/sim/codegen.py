"""The machine's hot paths compiled to Python, once, before the run.

The interpreter (``Sim.run_thread``) walks a thread's frames one statement a
step: fetch the statement, count it, dispatch on its kind, call its
expression.  Most of what a session executes is straight-line code (sets,
observes, turns, runs) between the statements that shape its frames
(``branch``, ``loop``, ``while`` and ``hold``).  As the DESIGN says of
Amaranth, the simulator compiles the design to Python once and runs that.
This module writes that Python, from the templates below (one function per
statement kind, per stage kind and for the arrival of a session), for the
program at hand: its expressions inlined (``Compiler.inline``), its
constants folded (the stage, the warm-up, which attributes, which lists),
the branches it cannot take left out.

**Segments.**  Each maximal run of *straight* statements of a block becomes
one segment, a ``CS`` of op ``OP_SEG``:

* ``f(sim, t)`` runs the statements in order; it returns True when the
  thread stopped (a run started, a grow waits, a join waits, the session
  ended) and False when it fell through to the next statement;
* ``n``: the statements it stands for (the livelock count, R004, counts
  each; a segment that would cross the limit is run statement by statement,
  from ``stmts``, so the error names the statement);
* ``loc``: the location of its last statement, where a thread stopped in it
  waits; ``lines`` and ``locs``: the first generated line of each statement
  and its location, so that a fault names the statement that raised it
  (``fault_loc``).

A segment ends at the first statement that may stop the thread (``run``,
``grow``, ``join``, ``end``), so a thread only ever resumes at the start of
a segment.  The segment that closes the session's block also ends the
session (``run_thread``'s ``F_ROOT``).

**Arrivals.**  ``workload`` writes ``Sim.arrive`` for the program (the
session's attributes, trace, init block, preset, givens, and the first
segment of its block run at once) and, for Poisson arrivals, the arrival
event with the next one's scheduling in front of it.

**Stages.**  A ``run`` on a fifo or delay stage named by a constant writes
out the stage's ``arrive`` (``ARRIVALS``).

Every template does exactly what the interpreter's code for it does, in the
same order (draws, checks, schedule): it is that code with the program's
constants in it.  What a template does not write out (a run with ``also``,
a ``grow``, a ``load``, …) it calls: the interpreter's methods remain the
reference.  The generated source of a segment is kept in ``CS.src``; the
arrival's in ``Sim.arrive_src``.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import inspect
import re

from ..ir import model as M
from ..ir.expr import nodes, walk
from . import rng as R
from .compile import check_amount, code, max_draws
from .errors import Fault, fmt_num
from .statements import (CS, MAX_STATEMENTS, OP_ANSWER, OP_BRANCH, OP_CHOOSE, OP_DROP, OP_END, OP_FORK, OP_GROW,
                         OP_HOLD, OP_JOIN, OP_LOAD, OP_LOOP, OP_OBS, OP_RELEASE, OP_RUN, OP_SEG, OP_SET, OP_TURN,
                         OP_WHILE)
from .stages import MODE_AWAIT, DelayStage, FifoStage, Job
from .threads import F_ROOT, S_ENDED, S_JOIN, S_RUNNING, S_STAGE, SERIAL, TURN_NO, Session, Thread
from .workload import turn_index


class Facts:
    """What the program can do at all, which decides what the templates
    must check for and keep: ``forks`` (legs, joins), ``holds``
    (allocations, preemption, refusal, stuck holds), ``leases``, ``spills``
    (the machine's own jobs), ``estimates`` (an expression reads a stage's
    online estimates, ``est_*`` or a price: its ``arr_all``, ``started_all``
    and ``wait_all``), ``main_read`` (``Session.main`` and ``attrs``)."""

    def __init__(self, program: M.Program):
        stmts = [s for b in program.blocks for s in b.stmts]
        self.forks = any(type(s) is M.SFork for s in stmts)
        self.holds = any(type(s) is M.SHold for s in stmts)
        self.leases = any(type(s) is M.SHold and s.lease is not None for s in stmts)
        self.spills = any(p.spill is not None for p in program.pools)
        self.estimates = _reads_estimates(program)
        # a program that sets `turn_no` can make it a number that keys no stream
        T = M.SLOT["turn_no"]
        self.turn_no_set = any(type(s) in (M.SSet, M.SChoose) and s.slot == T for s in stmts) or (
            type(program.arrival) is M.ASessions and any(
                slot == T for spec in program.arrival.sessions
                for row in (spec.attrs,) + tuple(spec.turns or ()) for slot, _ in row))
        # a session's main thread and attributes are read through it by a
        # refusal, a deadlock's report and its cache entries' keys
        self.main_read = self.holds or self.forks or bool(program.pools)


_ESTIMATES = ("EstLambda", "EstRho", "EstWait")


def _reads_estimates(program) -> bool:
    """Whether any expression anywhere in the program reads an estimate."""
    return any(type(x) is M.EPrice or (type(x) is M.EQuery and x.query in _ESTIMATES) for x in nodes(program))


class _Gen:
    """The source of one generated function: its lines, and the first line
    of each statement with its location.  The objects it names are bound in
    the compiler's namespace, shared by all generated code."""

    def __init__(self, sim):
        self.sim = sim
        self.comp = sim.comp
        self.facts = sim.facts
        self.lines = []
        self.starts = []
        self.locs = []
        self.indent = 0     # added to every line's depth
        self.has_sess = False   # the local ``sess`` is ``t.sess``

    def bind(self, obj, prefix="_g") -> str:
        return self.comp.bind(obj, prefix)

    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * (self.indent + depth) + line)

    def sess(self) -> None:
        """``sess = t.sess``, unless the function's straight line already
        has it."""
        if not self.has_sess:
            self.emit("sess = t.sess")
            self.has_sess = True

    def stmt(self, loc) -> None:
        """What follows is the statement at ``loc``."""
        self.starts.append(len(self.lines) + 1)   # line numbers count from 1
        self.locs.append(loc)

    def after_warmup(self, depth: int) -> int:
        """``if now >= warmup:`` (nothing when the warm-up is not positive:
        the clock starts at 0); the depth of what it guards."""
        w = self.sim.warmup
        if w <= 0.0:
            return depth
        self.emit(f"if now >= {self.comp.lit(w)}:", depth)
        return depth + 1

    def function(self, name: str, title: str):
        """The function ``name`` the lines define (left bound under its
        name), and its source."""
        src = "\n".join(self.lines) + "\n"
        ns = self.comp.ns
        exec(code(src, f"<serq {title}>", "exec"), ns)  # noqa: S102 - our own source
        return ns[name], src


@functools.lru_cache(maxsize=None)
def _signature(cls) -> tuple:
    """The parameters of ``cls.new``, the source of each default, and the
    pattern that finds a parameter's name in a field's source."""
    sig = inspect.signature(cls.new).parameters
    params = list(sig)
    return params, {p: repr(sig[p].default) for p in params}, re.compile(r"\b(" + "|".join(params) + r")\b")


def construct(g, var: str, cls, depth: int, fields=None, **args) -> None:
    """``var = cls.new(**args)`` written out: the object made bare
    (``cls()``) and each field ``new`` sets (``cls.FIELDS``) set from
    ``args`` (the sources of the arguments, by parameter name); ``fields``:
    the sources of fields to set to another value at once."""
    params, defaults, pat = _signature(cls)
    for p in params:
        if p not in args:
            args[p] = defaults[p]
    g.emit(f"{var} = {g.bind(cls, '_cls')}()", depth)
    fields = fields or {}
    for slot, value in cls.FIELDS:
        value = fields[slot] if slot in fields else pat.sub(lambda m: args[m.group(1)], value)
        g.emit(f"{var}.{slot} = {value}", depth)


# -- segments ---------------------------------------------------------------------

def thread_block(sim, stmts: list, root: bool = False) -> list:
    """A block as threads run it: its nested blocks likewise, then its
    straight statements as segments.  ``root``: the
    session's block (not shared with any other use of the block)."""
    done = sim.thread_blocks.get(id(stmts))
    if done is not None and not root:
        return done
    for c in stmts:
        if c.op in (OP_HOLD, OP_LOOP, OP_WHILE, OP_FORK):
            c.body = thread_block(sim, c.body)
        elif c.op == OP_BRANCH:
            c.then = thread_block(sim, c.then)
            if c.other is not None:
                c.other = thread_block(sim, c.other)
    out = segments(sim, stmts, root)
    if not root:
        sim.thread_blocks[id(stmts)] = out
    return out


def segments(sim, stmts: list, root: bool = False) -> list:
    """``stmts`` (a thread block's compiled statements) with each maximal run
    of straight statements replaced by one segment.  ``root``: the session's
    block, whose end ends the session."""
    straight = {OP_SET, OP_OBS, OP_TURN, OP_ANSWER, OP_RUN, OP_GROW, OP_LOAD,
                OP_RELEASE, OP_DROP, OP_CHOOSE, OP_FORK, OP_END, OP_JOIN}
    stops = {OP_RUN, OP_GROW, OP_END, OP_JOIN}
    out = []
    run = []
    for c in stmts:
        if c.op in straight:
            run.append(c)
            if c.op in stops:
                out.append(_segment(sim, run))
                run = []
        else:
            if run:
                out.append(_segment(sim, run))
                run = []
            out.append(c)
    if run:
        out.append(_segment(sim, run, ends_session=root))
    return out


def fault_loc(seg, exc):
    """The location of the statement of ``seg`` that raised ``exc``."""
    tb = exc.__traceback__
    code = seg.f.__code__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            i = bisect.bisect_right(seg.lines, tb.tb_lineno) - 1
            return seg.locs[max(i, 0)]
        tb = tb.tb_next
    return seg.loc  # pragma: no cover - the fault came from the segment


def _segment(sim, run: list, ends_session: bool = False):
    g = _Gen(sim)
    name = g.bind(None, "_seg")
    g.emit(f"def {name}(sim, t):", 0)
    g.emit("a = t.a")
    g.emit("now = sim.now")
    _segment_body(g, run, ends_session)
    g.emit("return False")
    seg = CS(OP_SEG, run[-1].loc)
    seg.f, seg.src = g.function(name, f"segment {name}")
    seg.n = len(run)
    seg.stmts = run
    seg.ends = ends_session
    seg.lines = g.starts
    seg.locs = g.locs
    return seg


def _segment_body(g, run: list, ends_session: bool) -> None:
    """The statements of a segment (with ``a``, ``now``, ``t`` and ``sim``
    at hand): ``return True`` where the thread stops, nothing after the last
    statement."""
    for c in run:
        g.stmt(c.loc)
        STATEMENTS[c.op](g, c)
    if ends_session:
        g.stmt(g.sim.session_end_loc)
        _end_session(g, g.sim.session_end_loc)


# -- the statements -------------------------------------------------------------

def _set(g, c):
    g.emit(f"a[{c.slot}] = {g.comp.inline(c.ir.expr)}")


def _observe(g, c):
    _observe_lines(g, c.obs, g.comp.inline(c.ir.expr), 1)


def _observe_lines(g, k: int, e: str, depth: int):
    """``Sim.observe``."""
    sim = g.sim
    ov = g.bind(sim.obs_buf[k].append, "_obs")
    g.emit(f"v = {e}", depth)
    d = g.after_warmup(depth)
    if sim.samples:    # the columns --dump writes
        ot, os_, ok = (g.bind(x[k], "_obs") for x in (sim.obs_t, sim.obs_s, sim.obs_k))
        sid = "sess.sid" if g.has_sess else "t.sess.sid"
        g.emit(f"{ov}(v); {ot}.append(now); {os_}.append({sid}); {ok}.append(a[{TURN_NO}])", d)
    else:
        g.emit(f"{ov}(v)", d)
    if sim.all_obs is not None:
        g.emit(f"{g.bind(sim.all_obs[k], '_all')}.append(v)", depth)


def _turn(g, c):
    """``Sim.do_turn``: the turn number, the preset or trace turn, the turn
    block, the client's record of the turn."""
    sim = g.sim
    g.emit(f"a[{TURN_NO}] += 1")
    if g.facts.turn_no_set:
        g.emit(f"k = {g.bind(turn_index, '_turn')}(a[{TURN_NO}])")
    else:
        g.emit(f"k = int(a[{TURN_NO}])")
    g.sess()
    depth = 1
    if sim.may_preset:
        g.emit("if sess.preset is not None:")
        g.emit("sim.turn_preset(sess, a)", 2)
        g.emit("else:")
        g.emit("pass", 2)
        depth = 2
    if sim.trace is not None:
        g.emit("if sess.trace is not None:", depth)
        g.emit("sim.turn_trace(sess, a)", depth + 1)
    if sim.turn_block is not None:
        _wl_block(g, sim.turn_block, "sim.turn_block", "k", depth)
    g.emit("sess.in_turn = True; sess.t_turn = now")
    if sim.step_stages:    # only an engine's tokens set these (client_decode, client_prefill_end)
        g.emit("sess.first = None; sess.last_pre = None; sess.outs = 0.0")
    g.emit("sim.turns_after += 1", g.after_warmup(1))


def _wl_block(g, stmts, attr: str, turn: str, depth: int):
    """``Sim.run_wl_block``: an init or turn block (sets and observes), its
    draws on the stream of (session, turn), created at the first draw.  When
    the block cannot draw more than ``rng.AHEAD`` uniforms, each written
    out, the stream is just the list of its first draws (``draws``)."""
    exprs = [c.ir.expr for c in stmts if c.op in (OP_SET, OP_OBS)]
    if not all(_plain(e) for e in exprs):
        g.emit(f"sim.run_wl_block(t, {attr}, {turn})", depth)
        return
    streams = g.bind(g.sim.streams.kind(R.WORKLOAD), "_wl_streams")
    sid = "sess.sid" if g.has_sess else "t.sess.sid"
    counts = [max_draws(e) for e in exprs]
    if None not in counts and 0 < sum(counts) <= R.AHEAD:
        _wl_draws(g, streams, sid, turn, sum(counts), depth)
        rng, method = "wr", "pop"
    else:
        rng = f"(wr or (wr := {streams}.get({sid}, {turn})))"
        method = "random"
        g.emit("wr = None", depth)
    for c in stmts:
        if c.op == OP_SET:
            g.emit(f"a[{c.slot}] = {g.comp.inline(c.ir.expr, rng_src=rng, draw_method=method)}", depth)
        elif c.op == OP_OBS:
            _observe_lines(g, c.obs, g.comp.inline(c.ir.expr, rng_src=rng, draw_method=method), depth)


def _wl_draws(g, streams: str, sid: str, turn: str, d: int, depth: int):
    """``wr = streams.draws(sid, turn, d)`` (``rng._Kind.draws``), its first
    case written out: the stream's first ``d`` draws, the first last, from
    the block at hand.  Taken before the block runs, also when a branch of
    it would not draw: a stream's numbers do not depend on when they are
    asked for."""
    keys = g.bind(g.sim.streams.kind(R.WORKLOAD).keys, "_wl_keys")
    g.emit(f"ws = {sid}", depth)
    g.emit(f"wk = {keys}.get({turn})", depth)
    g.emit(f"if wk is not None and ws >> {R.SHIFT} == wk.q and wk.ahead >= {d}:", depth)
    g.emit(f"wi = ((ws & {(1 << R.SHIFT) - 1}) + 1) * wk.ahead", depth + 1)
    g.emit(f"wr = wk.draws[wi - {d}:wi]", depth + 1)
    g.emit("else:", depth)
    g.emit(f"wr = {streams}.draws(ws, {turn}, {d})", depth + 1)


def _plain(e) -> bool:
    """An expression that reads its carrier only through attributes and
    draws, and is not deep: its inlined source needs no carrier object (an
    init or turn block's carrier draws from the turn's stream)."""
    for x in walk(e):
        t = type(x)
        if t is M.EPrice or t is M.EAgg:
            return False
        if t is M.EQuery and x.ref.index is not None:
            return False
    best = 0
    stack = [(e, 1)]
    while stack:
        x, d = stack.pop()
        best = max(best, d)
        stack.extend((ch, d + 1) for ch in _children(x))
    return best <= 30   # well within Compiler.MAX_DEPTH


def _children(x):
    t = type(x)
    if t is M.ESample or t is M.EFn:
        return x.args
    if t is M.EUnary:
        return (x.arg,)
    if t is M.EBinary:
        return (x.lhs, x.rhs)
    if t is M.ECond:
        return (x.cond, x.then, x.other)
    if t is M.ECost:
        return (x.expr,)
    return ()


def _answer(g, c):
    """``Sim.answer`` (a leg answers nothing)."""
    sim = g.sim
    ttft, resp, tpot = (g.bind(sim.client_buf[k], "_cl") for k in ("ttft", "response", "tpot"))
    g.sess()
    g.emit("if sess.in_turn and not t.leg:" if g.facts.forks else "if sess.in_turn:")
    g.emit("sess.in_turn = False", 2)
    if not sim.step_stages:    # no output tokens: first and last_pre stay None
        d = g.after_warmup(2)
        g.emit(f"{resp}.append(now - sess.t_turn)", d)
        _client_sample(g, "response", d)
        _client_log(g, sim)
        return
    g.emit("if sess.first is None and sess.last_pre is not None:", 2)
    g.emit("sess.first = sess.last_pre", 3)
    d = g.after_warmup(3)
    g.emit(f"{ttft}.append(sess.first - sess.t_turn)", d)
    _client_sample(g, "ttft", d)
    d = g.after_warmup(2)
    g.emit(f"{resp}.append(now - sess.t_turn)", d)
    _client_sample(g, "response", d)
    g.emit("if sess.first is not None and sess.outs > 0:", d)
    g.emit(f"{tpot}.append((now - sess.first) / sess.outs)", d + 1)
    _client_sample(g, "tpot", d + 1)
    _client_log(g, sim)


def _client_sample(g, key: str, depth: int):
    """``Sim.client_sample``, with ``samples`` (``--dump``)."""
    if g.sim.samples:
        g.emit(f"{g.bind(g.sim.client_sample, '_cs')}({key!r}, t)", depth)


def _client_log(g, sim):
    """``Sim.answer``'s opt-in record of the turn (written only when asked for)."""
    if sim.client_log is not None:
        g.emit(f"{g.bind(sim.client_log, '_cl')}.append((sess.sid, {g.bind(sim.first_pre, '_fp')}"
               ".pop(sess.sid, sess.first), now))", 2)


def _run(g, c):
    """``Sim.do_run``, written out for a stage named by a constant."""
    stage = c.stage_const
    if stage is None or c.mode == MODE_AWAIT:     # `await;` waits with no work: the interpreter's path
        g.emit(f"if sim.do_run(t, {g.bind(c, '_cs')}):")
        g.emit("return True", 2)
        return
    st = g.bind(stage, "_stage")
    g.emit(f"w = {g.comp.inline(c.ir.work)}")
    g.emit(f"if not (w >= 0.0): {g.bind(check_amount, '_check')}(w, {c.what!r})")
    g.emit("if w != 0.0:")
    g.emit("sim.job_seq = js = sim.job_seq + 1", 2)
    construct(g, "job", Job, 2, thread="t", stage=st, work="w", mode=str(c.mode), t_arr="now", seq="js")
    if stage.is_step:     # only an engine orders its residents by it
        g.emit("job.order = t.adm_seq", 2)
    if c.grow_m is not None:
        g.emit(f"job.pa = sim.held(t, {g.bind(c.grow_m, '_m')}(t), {f'run {c.name} … growing'!r})", 2)
    g.emit("t.job = job", 2)
    g.emit(f"t.state = {S_STAGE}", 2)
    if stage.shared:
        g.emit(f"sim.flows.arrive(job, [{st}])", 2)
    elif type(stage) in ARRIVALS:
        ARRIVALS[type(stage)](g, stage, st, 2)
    else:
        g.emit(f"{st}.arrive(job)", 2)
    g.emit("return True", 2)


def _call(method: str, stops: bool):
    """A statement the interpreter's method executes."""
    def template(g, c):
        if stops:
            g.emit(f"if sim.{method}(t, {g.bind(c, '_cs')}):")
            g.emit("return True", 2)
        else:
            g.emit(f"sim.{method}(t, {g.bind(c, '_cs')})")
    return template


def _drop(g, c):
    g.emit(f"pool = sim.pools[{g.bind(c.pool_m, '_m')}(t)]")
    g.emit("pool.tick(now)")
    g.emit("pool.drop(t.sess)")
    g.emit("pool.dirty = True")


def _end(g, c):
    _end_session(g, c.loc)


def _end_session(g, loc):
    """``Sim.end_session`` (the session's ``end;`` or its block's end),
    written out for a session with no legs, holds, leases or stuck holds."""
    sim = g.sim
    f = g.facts
    g.sess()
    general = ((["sess.legs > 0"] if f.forks else []) + (["t.holds", "sess.ended", "sim.stuck"] if f.holds else [])
               + (["sess.leases"] if f.leases or f.forks else []))
    if general:
        g.emit(f"if {' or '.join(general)}:")
        g.emit(f"sim.end_session(t, {g.bind(loc, '_loc')})", 2)
        g.emit("return True", 2)
    g.emit(f"t.state = {S_ENDED}")
    g.emit("sess.ended = True    # finish_session")
    if f.main_read:
        g.emit("sess.main = None")
    g.emit("dt = now - sim.t_live    # tick_live")
    g.emit("if dt > 0.0:")
    g.emit("sim.acc_live += sim.live * dt", 2)
    g.emit("sim.t_live = now", 2)
    g.emit("sim.live -= 1")
    if f.forks:
        g.emit("if sim.joining:")
        g.emit("sim.joining.discard(sess)", 2)
    g.emit("sim.ended_after += 1", g.after_warmup(1))
    if sim.closed:
        g.emit(f"if now <= {g.comp.lit(sim.horizon)}:")
        g.emit("sim.schedule(now, sim.arrive, None)", 2)
    g.emit("return True")


def _join(g, c):
    g.emit("if t.sess.legs > 0:")
    g.emit(f"t.state = {S_JOIN}", 2)
    g.emit("t.sess.joiner = t", 2)
    g.emit("sim.joining.add(t.sess)", 2)
    g.emit("return True", 2)


# the template of each statement kind a segment holds, by op
STATEMENTS = {
    OP_SET: _set,
    OP_OBS: _observe,
    OP_TURN: _turn,
    OP_ANSWER: _answer,
    OP_RUN: _run,
    OP_GROW: _call("do_grow", True),
    OP_LOAD: _call("do_load", False),
    OP_RELEASE: _call("do_release", False),
    OP_DROP: _drop,
    OP_CHOOSE: _call("do_choose", False),
    OP_FORK: _call("do_fork", False),
    OP_END: _end,
    OP_JOIN: _join,
}


# -- stages: a job's arrival, written out ------------------------------------------

def _arrive_fifo(g, stage, st, d):
    """``FifoStage.arrive`` (and ``_start``, and ``Sim.schedule``)."""
    heap, push, done = g.bind(g.sim.heap, "_heap"), g.bind(heapq.heappush, "_push"), _done_name(g, stage)
    g.emit(f"dt = now - {st}.t_acc", d)
    g.emit("if dt > 0.0:", d)
    g.emit(f"{st}.acc_n += {st}.n * dt", d + 1)
    g.emit(f"{st}.acc_busy += {_busy_dt(st, stage)}", d + 1)
    g.emit(f"{st}.t_acc = now", d + 1)
    g.emit(f"{st}.n += 1", d)
    est = g.facts.estimates
    if est:
        g.emit(f"{st}.arr_all += 1", d)
    g.emit(f"if not {st}.serving:" if stage.c == 1 else f"if len({st}.serving) < {stage.c!r}:", d)
    g.emit("job.t_start = now", d + 1)
    g.emit(f"{st}.serving.append(job)", d + 1)
    if est:
        g.emit(f"{st}.started_all += 1", d + 1)
        g.emit(f"{st}.wait_all += now - job.t_arr", d + 1)
    g.emit("sim.seq = sq = sim.seq + 1", d + 1)
    g.emit(f"{push}({heap}, (now + job.rem, 0, sq, {done}, job))", d + 1)
    g.emit("else:", d)
    g.emit(f"{st}.q.append(job)", d + 1)


def _busy_dt(st: str, stage) -> str:
    """``busy_level() * dt`` of a fifo stage: its busy servers over its
    servers, times ``dt`` (one server: the count times ``dt``, the same
    float, the division by 1 exact)."""
    if stage.c == 1:
        return f"len({st}.serving) * dt"
    return f"len({st}.serving) / {stage.c!r} * dt"


def _arrive_delay(g, stage, st, d):
    """``DelayStage.arrive`` (and ``Sim.schedule``)."""
    heap, push, done = g.bind(g.sim.heap, "_heap"), g.bind(heapq.heappush, "_push"), _done_name(g, stage)
    g.emit(f"dt = now - {st}.t_acc", d)
    g.emit("if dt > 0.0:", d)
    g.emit(f"{st}.acc_n += {st}.n * dt", d + 1)
    g.emit(f"{st}.acc_busy += (1.0 if {st}.n > 0 else 0.0) * dt", d + 1)
    g.emit(f"{st}.t_acc = now", d + 1)
    g.emit(f"{st}.n += 1", d)
    if g.facts.estimates:
        g.emit(f"{st}.arr_all += 1", d)
        g.emit(f"{st}.started_all += 1", d)
    g.emit("job.t_start = now", d)
    g.emit(f"{st}.jobs.add(job)", d)
    g.emit("sim.seq = sq = sim.seq + 1", d)
    g.emit(f"{push}({heap}, (now + job.rem, 0, sq, {done}, job))", d)


ARRIVALS = {FifoStage: _arrive_fifo, DelayStage: _arrive_delay}


def _done_name(g, stage) -> str:
    """The global name of the stage's completion event in generated code:
    its ``done_cb`` until ``completions`` writes it."""
    name = _done_name_of(stage)
    g.comp.ns.setdefault(name, stage.done_cb)
    return name


# -- stages: a job's completion, written out ---------------------------------------

def completions(sim, blocks: list) -> None:
    """Write the completion event of every fifo and delay stage (its
    ``_done``, then ``Sim.job_done_tail``) and make it the stage's
    ``done_cb``.  ``blocks``: the threads' blocks; where a stage is run by
    one statement only, named by a constant, and the thread goes on with a
    segment, that segment is written out in the completion (for a thread
    that is there; any other goes through ``run_thread``)."""
    sites = {}     # stage -> [(block, index of the segment that runs it)]
    for blk in blocks:
        for i, c in enumerate(blk):
            if c.op == OP_SEG and c.stmts[-1].op == OP_RUN and c.stmts[-1].stage_const is not None:
                sites.setdefault(c.stmts[-1].stage_const.sid, []).append((blk, i))
    for stage in sim.stages:
        tmpl = COMPLETIONS.get(type(stage))
        if tmpl is None:
            continue
        after = None
        here = sites.get(stage.sid, [])
        if len(here) == 1:
            blk, i = here[0]
            if i + 1 < len(blk) and blk[i + 1].op == OP_SEG and blk[i + 1].n <= MAX_STATEMENTS:
                after = (blk, i + 1)
        f = _completion(sim, stage, tmpl, after)
        stage.done_cb = f
        sim.comp.ns[_done_name_of(stage)] = f


def _done_name_of(stage) -> str:
    """The global name under which generated code calls the stage's
    completion event."""
    return f"_done_stage{stage.sid}"


def _completion(sim, stage, tmpl, after):
    sim.comp.ns["sim"] = sim
    g = _Gen(sim)
    g.where = _Where(g)
    name = _done_name_of(stage)
    st = g.bind(stage, "_stage")
    g.emit(f"def {name}(job):", 0)
    if g.facts.holds:    # only a preemption or a refusal takes a job away (stage.remove)
        g.emit("if not job.alive:")
        g.emit("return False", 2)
    g.emit("now = sim.now")
    tmpl(g, stage, st, name)
    _job_done_tail(g, after)
    f, src = g.function(name, f"completion of {stage.label}")
    g.where.f = f
    stage.done_src = src
    return f


def _done_fifo(g, stage, st, name):
    """``FifoStage._done`` (and ``_start``, and ``Sim.schedule``)."""
    g.emit(f"dt = now - {st}.t_acc")
    g.emit("if dt > 0.0:")
    g.emit(f"{st}.acc_n += {st}.n * dt", 2)
    g.emit(f"{st}.acc_busy += {_busy_dt(st, stage)}", 2)
    g.emit(f"{st}.t_acc = now", 2)
    g.emit(f"{st}.n -= 1")
    g.emit(f"{st}.serving.remove(job)")
    if g.facts.holds:   # (read only where a job can be taken away)
        g.emit("job.alive = False")
    d = g.after_warmup(1)
    g.emit(f"{st}.completed += 1", d)
    g.emit(f"{st}.wait_sum += job.t_start - job.t_arr", d)
    g.emit(f"{st}.serv_sum += now - job.t_start", d)
    g.emit(f"if {st}.q:")
    g.emit(f"nj = {st}.q.popleft()", 2)
    g.emit("nj.t_start = now", 2)
    g.emit(f"{st}.serving.append(nj)", 2)
    if g.facts.estimates:
        g.emit(f"{st}.started_all += 1", 2)
        g.emit(f"{st}.wait_all += now - nj.t_arr", 2)
    g.emit("sim.seq = sq = sim.seq + 1", 2)
    g.emit(f"{g.bind(heapq.heappush, '_push')}({g.bind(g.sim.heap, '_heap')}, (now + nj.rem, 0, sq, {name}, nj))",
           2)


def _done_delay(g, stage, st, name):
    """``DelayStage._done``."""
    g.emit(f"dt = now - {st}.t_acc")
    g.emit("if dt > 0.0:")
    g.emit(f"{st}.acc_n += {st}.n * dt", 2)
    g.emit(f"{st}.acc_busy += (1.0 if {st}.n > 0 else 0.0) * dt", 2)
    g.emit(f"{st}.t_acc = now", 2)
    g.emit(f"{st}.n -= 1")
    g.emit(f"{st}.jobs.discard(job)")
    if g.facts.holds:   # (read only where a job can be taken away)
        g.emit("job.alive = False")
    d = g.after_warmup(1)
    g.emit(f"{st}.completed += 1", d)
    g.emit(f"{st}.serv_sum += now - job.t_arr", d)


def _job_done_tail(g, after):
    """``Sim.job_done_tail``: the job's session runs at once if nothing else
    is ready (``after``: see ``completions``)."""
    g.emit("t = job.thread")
    if g.facts.spills:
        g.emit("if t is None:")
        g.emit("if job.cb is not None:", 2)
        g.emit("job.cb(job)", 3)
        g.emit("return", 2)
    g.emit("t.job = None")
    g.emit("if sim.ready or t.ready_t == now:")
    g.emit("sim.make_ready(t)", 2)
    g.emit("return", 2)
    g.emit("t.ready_t = now")
    g.emit("t.ready_n = 1")
    g.emit(f"t.state = {S_RUNNING}")
    if after is not None:
        blk, i = after
        seg = blk[i]
        g.emit("fr = t.frames[-1]")
        g.emit(f"if fr[0] is {g.bind(blk, '_blk')} and fr[1] == {i}:")
        g.emit("# run_thread's first step, written out: the segment after the run", 2)
        g.emit(f"fr[1] = {i + 1}", 2)
        g.emit("a = t.a", 2)
        g.emit("try:", 2)
        g.indent += 2
        _segment_body(g, seg.stmts, seg.ends)
        g.indent -= 2
        g.emit(f"except {g.bind(Fault, '_Fault')} as f:", 2)
        g.emit(f"raise sim.session_error(f, t, {g.bind(fault_loc, '_fault_loc')}({g.bind(g.where, '_where')}, f)) "
               "from None", 3)
        g.emit(f"sim.run_thread(t, {seg.n})", 2)
        g.emit("return", 2)
    _run_thread(g)


def _run_thread(g):
    """``Sim.run_thread(t)``, its first step written out for a thread that
    goes on with a segment."""
    g.emit("fr = t.frames[-1]")
    g.emit("pc = fr[1]")
    g.emit("if pc < len(fr[0]):")
    g.emit("st = fr[0][pc]", 2)
    g.emit(f"if st.op == {OP_SEG} and st.n <= {MAX_STATEMENTS}:", 2)
    g.emit("fr[1] = pc + 1", 3)
    g.emit("try:", 3)
    g.emit("if st.f(sim, t):", 4)
    g.emit("return", 5)
    g.emit(f"except {g.bind(Fault, '_Fault')} as f:", 3)
    g.emit(f"raise sim.session_error(f, t, {g.bind(fault_loc, '_fault_loc')}(st, f)) from None", 4)
    g.emit("sim.run_thread(t, st.n)", 3)
    g.emit("return", 3)
    g.emit("sim.run_thread(t)")


COMPLETIONS = {FifoStage: _done_fifo, DelayStage: _done_delay}


# -- arrivals -------------------------------------------------------------------

class _Where:
    """What ``fault_loc`` reads of a segment, for statements written out in
    another generated function (``f`` is set once it is made)."""

    def __init__(self, g):
        self.f = None
        self.lines = g.starts
        self.locs = g.locs
        self.loc = None


def workload(sim):
    """``Sim.arrive(spec)`` for the program, and for Poisson arrivals the
    arrival event (``open_arrival``), which schedules the next arrival and
    then does what ``arrive(None)`` does; None for the other laws."""
    sim.comp.ns["sim"] = sim     # what the arrival functions name
    g = _Gen(sim)
    g.where = _Where(g)
    name = g.bind(None, "_arrive")
    g.emit(f"def {name}(spec):", 0)
    g.emit("now = sim.now")
    _arrive_lines(g, spec=True)
    arrive, src = g.function(name, "arrive")
    g.where.f = arrive
    sim.arrive_src = src
    if type(sim.arrival) is not M.APoisson:
        return arrive, None
    g = _Gen(sim)
    g.where = _Where(g)
    name = g.bind(None, "_open_arrival")
    g.emit(f"def {name}(_):", 0)
    g.emit("# the next arrival is scheduled before this one's session runs")
    depth = 1
    if sim.draining is not None:   # (open_arrivals counts only for --arrivals N)
        g.emit("n = sim.open_arrivals = sim.open_arrivals + 1")
        g.emit(f"if n >= {sim.draining!r}:")
        g.emit("sim.open_done = True", 2)
        g.emit("else:")
        depth = 2
    g.emit("now = sim.now", depth)
    # R.d_exp(arr_rng, 1 / rate), written out
    neg_mean = g.comp.lit(-(1.0 / sim.arrival.rate))
    g.emit(f"nt = now + {neg_mean} * _log(1.0 - {g.bind(sim.arr_rng.random, '_arr')}())", depth)
    g.emit("if nt == now:", depth)
    what = f"`arrive poisson({fmt_num(sim.arrival.rate)})`: a gap of mean {fmt_num(1.0 / sim.arrival.rate)}"
    g.emit(f"sim.stall.gap({what!r}, '$.arrival.Poisson')", depth + 1)
    g.emit(f"if nt <= {g.comp.lit(sim.horizon)}:", depth)
    g.emit("sim.seq = sq = sim.seq + 1", depth + 1)
    g.emit(f"{g.bind(heapq.heappush, '_push')}({g.bind(sim.heap, '_heap')}, (nt, 0, sq, {name}, None))",
           depth + 1)
    if sim.draining is not None:
        g.emit("else:", depth)
        g.emit("sim.open_done = True", depth + 1)
        g.emit("now = sim.now")
    _arrive_lines(g, spec=False)
    open_arrival, src = g.function(name, "open_arrival")
    g.where.f = open_arrival
    sim.arrive_src += "\n" + src
    return arrive, open_arrival


def _arrive_lines(g, spec: bool):
    """``arrive``: a session and its main thread, its trace session, its init
    block (on the stream of (session, 0)), its preset attributes (``spec``,
    an explicit session), the givens, and the session's first statements
    run at once when nothing else is ready."""
    sim = g.sim
    g.emit("sid = sim.n_arrived")
    g.emit("sim.n_arrived = sid + 1")
    g.emit("sim.arrivals_after += 1", g.after_warmup(1))
    g.emit("dt = now - sim.t_live    # tick_live")
    g.emit("if dt > 0.0:")
    g.emit("sim.acc_live += sim.live * dt", 2)
    g.emit("sim.t_live = now", 2)
    g.emit("sim.live += 1")
    # without leases (and legs, which hand theirs on), a session's and its
    # main line's lists of leases stay empty: one empty tuple for all
    no_leases = {} if g.facts.leases or g.facts.forks else {"leases": "()"}
    construct(g, "sess", Session, 1, fields=no_leases, sid="sid", t_arr="now")
    g.has_sess = True
    g.emit(f"a = [0.0] * {sim.nattrs}")
    g.emit(f"a[{SERIAL}] = float(sid)")
    root = g.bind(sim.session_block, "_root")
    # its frames as run_thread leaves them once the block's first statement
    # has run, as it will at once unless another thread is ready
    construct(g, "t", Thread, 1, fields={"frames": f"[[{root}, 1, {F_ROOT}, None]]", **no_leases}, sim="sim",
              sess="sess", attrs="a")
    if g.facts.main_read:
        g.emit("sess.main = t")
        g.emit("sess.attrs = a")
    if sim.trace is not None:
        corpus = g.bind(sim.trace, "_corpus")
        if type(sim.arrival) is M.ATrace:     # row i is session i, read as it arrives
            g.emit(f"sess.trace = {corpus}[sid]")
        elif sim.program.trace_ordered:
            g.emit(f"sess.trace = {corpus}[sid % {len(sim.trace)}]")
        else:
            g.emit(f"sess.trace = {corpus}[{g.bind(sim.trace_rng.randrange, '_pick')}({len(sim.trace)})]")
        if hasattr(sim.trace[0], "content"):
            g.emit("sess.content = sess.trace.content")
    if sim.init_block is not None:
        g.emit("try:")
        _wl_block(g, sim.init_block, "sim.init_block", "0", 2)
        g.emit(f"except {g.bind(Fault, '_Fault')} as f:")
        g.emit("raise sim.session_error(f, t, None) from None", 2)
    if spec and type(sim.arrival) is M.ASessions:
        g.emit("if spec is not None:")
        g.emit("for slot, v in spec.attrs:", 2)
        g.emit("a[slot] = v", 3)
        g.emit("if spec.turns is not None:", 2)
        g.emit("sess.preset = spec.turns", 3)
        if any(s.content for s in sim.arrival.sessions):
            g.emit("sess.content = spec.content", 2)
    if sim.claims:
        g.emit("sim.check_given(t)")
    g.emit("if sim.ready:")
    g.emit("t.frames[0][1] = 0", 2)
    g.emit("sim.make_ready(t)", 2)
    g.emit("return", 2)
    g.emit("# the arrival's last act: nothing else is ready, run it at once")
    g.emit("t.ready_t = now")
    g.emit("t.ready_n = 1")
    g.emit(f"t.state = {S_RUNNING}")
    first = sim.session_block[0] if sim.session_block else None
    if first is None or first.op != OP_SEG or first.n > MAX_STATEMENTS:
        g.emit("t.frames[0][1] = 0")
        g.emit("sim.run_thread(t)")
        return
    # run_thread's first step, written out: the block's first segment, its
    # statements written out here
    g.emit("try:")
    g.indent += 1
    _segment_body(g, first.stmts, first.ends)
    g.indent -= 1
    g.emit(f"except {g.bind(Fault, '_Fault')} as f:")
    g.emit(f"raise sim.session_error(f, t, {g.bind(fault_loc, '_fault_loc')}({g.bind(g.where, '_where')}, f)) "
           "from None", 2)
    g.emit(f"sim.run_thread(t, {first.n})")
