"""The code the simulator writes for a program (serq.sim.codegen), and the
numbers it computes faster (serq.sim.rng's streams in blocks, the inlined
draws, serq.sim.stats' summaries): the same results as the plain code, to
the bit, and the same errors at the same statements.  (tools/sim_regress.py
compares whole reports before and after a change.)"""

import math
import random

import pytest

from serq.ir import model as M
from serq.ir.expr import const_value
from serq.sim import RunError, simulate
from serq.sim import codegen
from serq.sim import rng as R
from serq.sim import stats as ST
from serq.sim.compile import Compiler, max_draws
from serq.sim.machine import Sim
from serq.sim.stages import Job
from serq.sim.threads import Session, Thread

from builder import A, Builder, N, sample

S = M.SLOT


def _mm1(horizon=50.0):
    b = Builder()
    svc = b.stage("svc", M.KFifo(1))
    t0 = b.attr("t0")
    b.turn_items([b.set(b.attr("s"), sample("Exp", 1.0))])
    b.session([b.turn(), b.set(t0, N(0)), b.run(svc, A(b.attr("s"))), b.observe("response", A(t0))])
    return b.program(arrival=M.APoisson(0.8), horizon=horizon)


# -- objects written out ---------------------------------------------------------------

def _fields(x):
    """What an object has set (its slots, or its own attributes)."""
    if hasattr(x, "__dict__"):
        return dict(vars(x))
    return {k: getattr(x, k) for k in type(x).__slots__ if hasattr(x, k)}


def test_construct_writes_out_what_new_sets():
    sim = Sim(_mm1())
    g = codegen._Gen(sim)
    g.emit("def _mk(sim, a):", 0)
    codegen.construct(g, "sess", Session, 1, sid="7", t_arr="1.5")
    codegen.construct(g, "t", Thread, 1, sim="sim", sess="sess", attrs="a")
    codegen.construct(g, "j", Job, 1, thread="t", stage="None", work="2.0", mode="1", t_arr="1.5", seq="3")
    g.emit("return sess, t, j")
    mk, _ = g.function("_mk", "test")
    a = [0.0, 1.0]
    s1, t1, j1 = mk(sim, a)
    s2 = Session.new(7, 1.5)
    t2 = Thread.new(sim, s2, a)
    l2 = Thread.fork(sim, s2, a, 2)
    j2 = Job.new(t2, None, 2.0, 1, 1.5, 3)
    assert _fields(s1) == _fields(s2)
    assert {k: v for k, v in _fields(t1).items() if k != "sess"} == \
        {k: v for k, v in _fields(t2).items() if k != "sess"}
    assert t1.leases is s1.leases and t2.leases is s2.leases        # a main thread's leases are its session's
    assert l2.leases is not s2.leases and l2.leases == [] and l2.leg and l2.leg_no == 2 and not t1.leg
    assert {k: v for k, v in _fields(j1).items() if k != "thread"} == \
        {k: v for k, v in _fields(j2).items() if k != "thread"}
    assert set(_fields(j1)) == set(_fields(j2)) and set(_fields(t1)) == set(_fields(t2))


def test_generated_source_is_kept():
    sim = Sim(_mm1())
    assert "def _open_arrival" in sim.arrive_src and "def _arrive" in sim.arrive_src
    assert sim.stages[0].done_src.startswith("def _done_stage0(job):")
    assert all(c.op != 17 or c.src.startswith("def _seg") for c in sim.session_block)


# -- a fault names its statement, wherever its segment is written out ------------------------

def _fault(session, extra=None):
    """Run a program whose session is ``session(b, svc, d)`` (a fifo stage run
    by it, a delay stage); the RunError's code, location and message."""
    b = Builder()
    svc = b.stage("svc", M.KFifo(1))
    d = b.stage("d", M.KDelay())
    x, y = b.attr("x"), b.attr("y")
    b.session(session(b, svc, d, x, y))
    p = b.program(arrival=M.APoisson(1.0), horizon=20.0)
    with pytest.raises(RunError) as info:
        simulate(p)
    diag = info.value.diagnostics[0]
    return p, diag.code, str(diag.span), diag.message


def _loc(p, block, i):
    loc = p.blocks[block].locs[i]
    return f"test.sq:{loc.line}:{loc.col}"


def test_fault_in_the_first_segment():
    # the session's first statements are written out in the arrival
    p, code, where, msg = _fault(lambda b, svc, d, x, y: [
        b.turn(), b.set(x, 1), b.set(y, 2), b.run(d, A(x) - 5), b.set(y, 3)])
    assert (code, where) == ("R001", _loc(p, p.session, 3))
    assert msg == ("the work of `run d` is -4: an amount is not negative and not NaN (session 0, turn 1, "
                   "time 0)")


def test_fault_in_the_segment_after_a_stage_run_once():
    # written out in the fifo stage's completion
    p, code, where, msg = _fault(lambda b, svc, d, x, y: [
        b.turn(), b.set(x, 1), b.run(svc, 1), b.set(y, 2), b.observe("o", A(y)), b.run(d, A(x) - 5)])
    assert (code, where) == ("R001", _loc(p, p.session, 5))
    assert msg.endswith("(session 0, turn 1, time 1)")


def test_fault_in_a_segment_after_a_stage_run_twice():
    # a segment of its own, called
    p, code, where, msg = _fault(lambda b, svc, d, x, y: [
        b.turn(), b.set(x, 1), b.run(svc, 1), b.set(y, 2), b.run(svc, 1), b.set(y, 3), b.run(d, A(x) - 5)])
    assert (code, where) == ("R001", _loc(p, p.session, 6))
    assert msg.endswith("(session 0, turn 1, time 2)")


def test_fault_in_a_nested_segment():
    holder = {}

    def session(b, svc, d, x, y):
        body = [b.set(x, A(x) + 1), b.run(svc, 1), b.set(y, 2), b.run(d, A(x) - 5)]
        holder["w"] = b.while_(A(x) < 3, body)
        return [b.turn(), b.set(x, 0), holder["w"]]
    p, code, where, msg = _fault(session)
    inner = holder["w"][0].body
    assert (code, where) == ("R001", _loc(p, inner, 3))
    assert msg.endswith("(session 0, turn 1, time 1)")


def test_fault_in_a_turn_block_names_the_turn():
    b = Builder()
    pool = b.pool("p", cap=4, count=2)
    x = b.attr("x")
    bad = M.EQuery("Used", M.Ref(pool.base, 2, M.EAttr(x)))     # pool p[x], x = 0.5
    b.turn_items([b.set(x, N(0.5)), (M.SSet(b.attr("s"), M.EBinary("Add", bad, M.ENum(1.0))), "client")])
    b.session([b.turn(), b.set(x, 1)])
    p = b.program(arrival=M.APoisson(1.0), horizon=20.0)
    with pytest.raises(RunError) as info:
        simulate(p)
    diag = info.value.diagnostics[0]
    assert (diag.code, str(diag.span)) == ("R002", _loc(p, p.session, 0))


# -- streams made in blocks ------------------------------------------------------------

def test_streams_made_in_blocks_are_the_substreams():
    streams = R.Streams(99)
    wl = streams.kind(R.WORKLOAD)
    rows = list(range(3000)) + list(range(500)) + [2 ** 40, 2 ** 63 - 1, 2 ** 63, 2 ** 64 + 3]
    for a in rows:
        for b in (0, 1, 7):
            d = (a + b) % (R.AHEAD + 1)
            got = wl.draws(a, b, d)
            ref = R.substream(99, R.WORKLOAD, a, b)
            assert [got.pop() for _ in range(d)] == [ref.random() for _ in range(d)]
            s = streams.get(R.SESSION, a, b)
            ref = R.substream(99, R.SESSION, a, b)
            assert [s.random() for _ in range(R.AHEAD + 3)] == [ref.random() for _ in range(R.AHEAD + 3)]


# -- draws written out -----------------------------------------------------------------

class _Carrier:
    def __init__(self, rng, a):
        self.rng = rng
        self.a = a
        self.sess = None

    def make_rng(self):  # pragma: no cover
        return self.rng


class _Counting:
    def __init__(self, rng):
        self.rng = rng
        self.n = 0

    def random(self):
        self.n += 1
        return self.rng.random()


DRAWS = [
    M.ESample("Exp", (M.ENum(2.0),)),
    M.ESample("Exp", (M.EAttr(0),)),
    M.ESample("H2", (M.ENum(1.0), M.ENum(4.0))),
    M.ESample("H2", (M.ENum(3.0), M.ENum(9.0))),
    M.ESample("H2", (M.EAttr(0), M.ENum(2.0))),
    M.ESample("Uniform", (M.ENum(-1.0), M.ENum(3.0))),
    M.ESample("Uniform", (M.EAttr(0), M.EBinary("Add", M.EAttr(0), M.ENum(2.0)))),
    M.ESample("Bernoulli", (M.ENum(0.3),)),
    M.ESample("Bernoulli", (M.EBinary("Div", M.EAttr(0), M.ENum(4.0)),)),
    M.ESample("Det", (M.EAttr(0),)),
    M.ESample("Exp", (M.ESample("Uniform", (M.ENum(0.0), M.ENum(1.0))),)),
    M.ESample("Erlang", (M.ENum(3.0), M.ENum(1.0))),
]


def _reference(e, r, a):
    """The tree walk of the plain interpreter."""
    if type(e) is M.ENum:
        return e.value
    if type(e) is M.EAttr:
        return a[e.slot]
    if type(e) is M.EBinary:
        x, y = _reference(e.lhs, r, a), _reference(e.rhs, r, a)
        return {"Add": x + y, "Div": x / y}[e.op]
    args = [_reference(x, r, a) for x in e.args]
    return R.DISTS[e.dist](r, *args)


@pytest.mark.parametrize("e", DRAWS, ids=lambda e: e.dist)
def test_draws_written_out_are_the_distributions(e):
    sim = Sim(_mm1())
    comp = Compiler(sim)
    f = comp.expr(e)
    for seed in range(200):
        a = [random.Random(seed).uniform(0.1, 3.0)]
        r1, r2 = R.SplitMix(seed * 7919 + 1), R.SplitMix(seed * 7919 + 1)
        got = f(_Carrier(r1, a))
        assert got == _reference(e, r2, a)
        assert r1.s == r2.s      # as many draws
    n = max_draws(e)
    if e.dist == "Erlang" or (e.dist == "H2" and const_value(e.args[0]) is None):   # rng.d_* is called
        assert n is None
    else:
        r = _Counting(R.SplitMix(5))
        f(_Carrier(r, [1.0]))
        assert n == r.n


# -- summaries -----------------------------------------------------------------------

def _summary_reference(values):
    """stats.summary as plain Python computes it."""
    n = len(values)
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) * (v - mean) for v in values) / (n - 1)
    cv2 = var / (mean * mean) if mean != 0 else math.nan
    return {"count": n, "mean": mean, "ci": ST.batch_ci(values), "cv2": cv2,
            **{k: ST.percentile(values, q) for k, q in ST.QUANTILES}}


@pytest.mark.parametrize("kind", ["exp", "ties", "zeros", "inf", "nan", "huge"])
def test_summary_of_many_is_the_plain_summary(kind):
    r = random.Random(kind)
    n = 3000
    if kind == "exp":
        vals = [r.expovariate(0.3) for _ in range(n)]
    elif kind == "ties":
        vals = [float(r.randint(0, 5)) for _ in range(n)]
    elif kind == "zeros":
        vals = [r.choice([0.0, -0.0, 1.0]) for _ in range(n)]
    elif kind == "inf":
        vals = [r.choice([1.0, 2.0, math.inf]) for _ in range(n)]
    elif kind == "nan":
        vals = [r.choice([1.0, 2.0, math.nan]) for _ in range(n)]
    else:
        vals = [r.uniform(-1, 1) * 10 ** r.randint(-300, 300) for _ in range(n)]
    got, want = ST.summary(vals), _summary_reference(vals)
    assert repr(got) == repr(want)
