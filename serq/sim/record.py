"""What the run records (a part of ``serq.sim.machine.Sim``): observations
(8 bytes a value; with ``samples``, the time, session and turn of each),
the client's view of each turn (time to first token, time per output token,
response), the gauges' change points, and the warm-up's snapshot of the
pools' and stages' time averages.  serq.sim.report turns them into the
report; the statistics are serq.sim.stats'.
"""

from __future__ import annotations

from struct import pack

from .threads import TURN_NO


class Recording:
    def observe(self, t, k: int, v: float) -> None:
        now = self.now
        if now >= self.warmup:
            self.obs_buf[k].append(v)
            if self.samples:
                self.obs_t[k].append(now)
                self.obs_s[k].append(t.sess.sid)
                self.obs_k[k].append(t.a[TURN_NO])
        if self.all_obs is not None:
            self.all_obs[k].append(v)

    def flush_values(self) -> None:
        """Move the values recorded since the last flush from their lists
        into their arrays (the machine's checkpoints, the run's end: before
        anything reads them), in the order they were recorded, the same
        doubles."""
        for buf, arr in self.value_bufs:
            if buf:
                arr.frombytes(pack(f"{len(buf)}d", *buf))
                buf.clear()

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
                self.client_buf["ttft"].append(sess.first - sess.t_turn)
                if self.samples:
                    self.client_sample("ttft", t)
        else:
            sess.outs += n

    def client_sample(self, key: str, t) -> None:
        """The time, session and turn of the client value just recorded (``--dump``)."""
        ts, ss, ks = self.client_at[key]
        ts.append(self.now)
        ss.append(t.sess.sid)
        ks.append(t.a[TURN_NO])

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
                self.client_buf["ttft"].append(sess.first - sess.t_turn)
                if self.samples:
                    self.client_sample("ttft", t)
        if after:
            self.client_buf["response"].append(now - sess.t_turn)
            if self.samples:
                self.client_sample("response", t)
            if sess.first is not None and sess.outs > 0:
                self.client_buf["tpot"].append((now - sess.first) / sess.outs)
                if self.samples:
                    self.client_sample("tpot", t)
        if self.client_log is not None:
            self.client_log.append((sess.sid, self.first_pre.pop(sess.sid, sess.first), now))

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
