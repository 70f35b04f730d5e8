"""Sessions and threads: what a session is, the state of a thread (a
session's main line or one of its legs: a carrier for expressions and a
continuation, a stack of block frames), and the carriers that the machine's
own moments, a session's workload draws and a cache entry's keys evaluate on.

A thread's frames are ``[statements, pc, kind, x]``: ``kind`` is one of
``F_*``, ``x`` the loop, while or hold statement (a hold's frame: the hold).
"""

from __future__ import annotations

from . import rng as R

# the built-in attributes' slots (serq.ir.model.BUILTIN_ATTRS)
SERIAL, TURN_NO, CACHED, COMPUTED = 0, 1, 2, 3
NEW, OUT, THINK, MORE, FORCED = 4, 5, 6, 7, 8

# the kinds of a thread's frames ([statements, pc, kind, statement or hold])
F_BLOCK, F_LOOP, F_WHILE, F_HOLD, F_ROOT, F_LEG = range(6)

# a thread's states
S_READY, S_RUNNING, S_STAGE, S_QUEUED, S_GROWING, S_JOIN, S_ENDED, S_NEW = range(8)


class Carrier:
    """What the machine's own moments evaluate on: no session, its stream."""

    __slots__ = ("a", "rng", "sess")

    def __init__(self, rng):
        self.a = None
        self.rng = rng
        self.sess = None

    def make_rng(self):  # pragma: no cover - rng is always set
        return self.rng


class Session:
    """A session.  ``main`` is its main thread until it ends (then None, so
    that the two do not keep each other alive); ``attrs`` the main thread's
    attributes, which its cache entries' eviction keys read.

    The client's record of the current turn (§What the client sees):
    ``in_turn`` while the turn is not answered (there is none before the
    first turn), ``t_turn`` its start, ``first`` the time of its first output
    token (None before), ``last_pre`` the end of its latest prefill (None
    before), ``outs`` its output tokens after the first."""

    # no __slots__ (a session is made per arrival): what a session has not
    # set is read from these class attributes
    main = None
    attrs = None
    legs = 0
    joiner = None
    ended = False
    in_turn = False
    first = None
    last_pre = None
    outs = 0.0
    trace = None
    turn_ix = 0
    preset = None
    nlegs = 0
    content = ()     # what its tokens are (serq.sim.pools.prefix)
    chains = None

    # made bare (``Session()``: no ``__init__``, a type's call being cheaper
    # than ``object.__new__``), then given what ``new`` sets; FIELDS for
    # code that writes the construction out (serq.sim.codegen.construct)
    FIELDS = (("sid", "sid"), ("t_arr", "t_arr"), ("leases", "[]"))

    @classmethod
    def new(cls, sid, t_arr):
        self = cls()
        self.sid = sid
        self.t_arr = t_arr
        self.leases = []
        return self


class Thread:
    """A session's main line or one of its legs: a carrier for expressions
    and a continuation (a stack of block frames)."""

    # no __slots__ (a thread is made per arrival and fork): what a thread
    # has not set is read from these class attributes
    leg = False     # a leg (and its number), not the session's main line
    leg_no = 0
    rng = None
    state = S_NEW
    gen = 0
    holds = ()      # the holds it is in, innermost last (a list from the first)
    job = None
    req = None
    grower = None
    ready_t = -1.0
    ready_n = 0
    adm_seq = 0
    preempt_pos = None

    # made bare (as a session), then given what ``new`` sets; FIELDS for code
    # that writes the construction out (serq.sim.codegen.construct)
    FIELDS = (("sim", "sim"), ("sess", "sess"), ("a", "attrs"), ("frames", "[]"),
              ("leases", "sess.leases"))

    @classmethod
    def new(cls, sim, sess, attrs):
        """The session's main line."""
        self = cls()
        self.sim = sim
        self.sess = sess
        self.a = attrs
        self.frames = []
        self.leases = sess.leases
        return self

    @classmethod
    def fork(cls, sim, sess, attrs, leg_no: int):
        """A leg of the session, its ``leg_no``-th."""
        t = cls()
        t.sim = sim
        t.sess = sess
        t.a = attrs
        t.frames = []
        t.leg = True
        t.leg_no = leg_no
        t.leases = []
        return t

    def make_rng(self):
        sim = self.sim
        if self.leg:
            self.rng = sim.streams.get(R.LEG, self.sess.sid, self.leg_no)
        else:
            self.rng = sim.streams.get(R.SESSION, self.sess.sid)
        return self.rng


class WlCarrier:
    """A session's attributes with the stream of one (session, turn)."""

    __slots__ = ("a", "rng", "sess", "streams", "turn")

    def __init__(self, sim, thread, turn):
        self.a = thread.a
        self.sess = thread.sess
        self.rng = None
        self.streams = sim.streams
        self.turn = turn

    def make_rng(self):
        self.rng = self.streams.get(R.WORKLOAD, self.sess.sid, self.turn)
        return self.rng


class EntryCarrier:
    __slots__ = ("a", "rng", "sess")

    def __init__(self, a, rng, sess):
        self.a = a
        self.rng = rng
        self.sess = sess

    def make_rng(self):  # pragma: no cover
        return self.rng


def cur_loc(t):
    """The location of the statement a thread last executed or waits at."""
    if t is None:
        return None
    for fr in reversed(t.frames):
        pc = fr[1] - 1
        if 0 <= pc < len(fr[0]):
            return fr[0][pc].loc
        if fr[2] == F_HOLD:
            return fr[3].st.loc
    return None
