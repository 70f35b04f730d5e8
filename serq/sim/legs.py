"""Legs (a part of ``serq.sim.machine.Sim``): a ``fork`` starts a leg, a
thread of the session on a copy of its attributes and its own stream; a
leg's end releases what it holds and hands its leases to its session (or
ends them, when the session has ended), and the last leg's end wakes the
session's thread waiting at ``join``.  A thread is taken out of whatever it
waits in (``detach``) when its session is refused (``kill``).

With no event left before the horizon, a session waiting at a join for legs
that cannot proceed is a hold-and-wait deadlock (R011).
"""

from __future__ import annotations

from .errors import RunError, field_of, fmt_time
from .threads import F_LEG, S_ENDED, S_GROWING, S_JOIN, S_NEW, S_QUEUED, S_STAGE, Thread, cur_loc


class Legs:
    def do_fork(self, t, st) -> None:
        sess = t.sess
        leg = Thread.fork(self, sess, list(t.a), sess.nlegs)
        sess.nlegs += 1
        sess.legs += 1
        leg.frames = [[st.body, 0, F_LEG, None]]
        self.make_ready(leg)

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
