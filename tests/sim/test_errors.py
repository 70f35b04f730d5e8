"""Each run-time error, pinned by its whole message and its location."""

import math

import pytest

from serq.diag import SerqError
from serq.ir import model as M
from serq.sim import RunError, simulate

from builder import A, Builder, N, query, sample, samples, sessions

S = M.SLOT


def run_error(prog) -> RunError:
    with pytest.raises(RunError) as info:
        simulate(prog)
    err = info.value
    assert isinstance(err, SerqError)
    return err


def where(err):
    d = err.diagnostics[0]
    return d.code, (str(d.span) if d.span else None), d.message


def test_negative_work():
    b = Builder()
    s = b.stage("s", M.KDelay())
    x = b.attr("x")
    b.session([b.turn(), b.set(x, -1), b.run(s, A(x))])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R001", "test.sq:4:3", "the work of `run s` is -1: an amount is not negative and "
                          "not NaN (session 0, turn 1, time 0)")
    assert err.render() == ("test.sq:4:3: error[R001]: the work of `run s` is -1: an amount is not negative "
                            "and not NaN (session 0, turn 1, time 0)")


def test_nan_units():
    b = Builder()
    p = b.pool("p", cap=10)
    s = b.stage("s", M.KDelay())
    x = b.attr("x")
    b.session([b.turn(), b.run(s, 2), b.set(x, N(0) / 0), b.hold([(p, A(x) + query("Used", p))], [])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R001", "test.sq:6:3", "the units of `p` is NaN: an amount is not negative and "
                          "not NaN (session 0, turn 1, time 2)")


def test_negative_grow():
    b = Builder()
    p = b.pool("p", cap=10)
    x = b.attr("x")
    b.session([b.turn(), b.set(x, -3), b.hold([(p, 1)], [b.grow(p, A(x))])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R001", "test.sq:2:3", "the amount of `grow p` is -3: an amount is not negative "
                          "and not NaN (session 0, turn 1, time 0)")


def test_bad_index():
    b = Builder()
    s = b.stage("s", M.KDelay(), count=2)
    j = b.attr("j")
    b.session([b.turn(), b.set(j, 2.5), b.run(s, 1, index=A(j))])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R002", "test.sq:5:3", "index 2.5 does not name a member of `s`, which has 2 "
                          "members: an index is a whole number from 0 to 1 (session 0, turn 1, time 0)")


@pytest.mark.parametrize("count, shown", [(0, "0"), (-2, "-2"), (2.5, "2.5"), (math.nan, "NaN"),
                                          (math.inf, "inf")])
def test_choose_count_not_a_whole_number_from_one(count, shown):
    """A computed count of candidates is held to what a constant one is
    (E403 at link time): `choose j in 0` used to set j to 0 from no
    candidates, and 2.5 was rounded down."""
    b = Builder()
    s = b.stage("s", M.KDelay(), count=2)
    j = b.attr("j")
    m = b.attr("m")
    b.session([b.turn(), b.set(m, N(0) / 0 if math.isnan(count) else count), b.choose(j, A(m), [-A(j)]), b.run(s, 1, index=A(j))])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R002", "test.sq:5:3", f"the candidates of `choose` are a whole number ≥ 1, not {shown} "
                          "(session 0, turn 1, time 0)")


def test_choose_count_computed_whole_runs(tmp_path):
    """A computed whole count is every candidate (the least key: -j, the last)."""
    b = Builder()
    s = b.stage("s", M.KDelay(), count=3)
    j = b.attr("j")
    m = b.attr("m")
    b.session([b.turn(), b.set(m, 3), b.choose(j, A(m), [-A(j)]), b.observe("chosen", A(j)), b.run(s, 1, index=A(j))])
    rep = simulate(b.program(arrival=sessions({}), horizon=10))
    assert samples(rep, tmp_path, "chosen") == [(0, 0.0, 2.0)]


def test_guard_not_zero_or_one():
    b = Builder()
    x = b.attr("x")
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1.5), b.set(x, 0.5), b.branch(A(x), [b.run(s, 1)])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R003", "test.sq:6:3", "a guard is 0.5, neither 0 nor 1: a test has two answers "
                          "(session 0, turn 1, time 1.5)")


def test_while_guard_not_zero_or_one():
    b = Builder()
    x = b.attr("x")
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.set(x, 1), b.while_(A(x), [b.run(s, 1), b.set(x, A(x) + 1)])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R003", "test.sq:6:3", "a guard is 2, neither 0 nor 1: a test has two answers "
                          "(session 0, turn 1, time 1)")


def test_a_million_statements_without_blocking():
    b = Builder()
    x = b.attr("x")
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.loop([b.set(x, A(x) + 1), b.run(s, A(x) * 0)])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    code, span, msg = where(err)
    assert code == "R004"
    assert msg == ("session 0 executed 1,000,000 statements without blocking: a loop must let time pass "
                   "on every pass (session 0, turn 1, time 0)")


def test_ready_a_thousand_times_at_one_instant():
    """A hold that fits, grows past its pool and preempts itself: re-admitted
    at once, forever."""
    b = Builder()
    p = b.pool("p", cap=10, preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False))
    x = b.attr("x")
    b.session([b.turn(), b.set(x, 100), b.hold([(p, 1)], [b.grow(p, A(x))])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R005", "test.sq:5:3", "session 0 became ready 1000 times at one instant: it does "
                          "not let time pass (session 0, turn 1, time 0)")


def test_iteration_that_costs_zero():
    b = Builder()
    e = b.step("e", 10, 0)
    b.session([b.turn(), b.run(e, 4, mode="Prefill")])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R006", "test.sq:1:3", "engine `e`: an iteration that schedules 4 tokens costs 0; "
                          "an iteration lasts a positive time (time 0)")


def test_renewal_gap_not_positive():
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1)])
    err = run_error(b.program(arrival=M.ARenewal(sample("Uniform", -2, -1).e), horizon=10))
    code, span, msg = where(err)
    assert code == "R007" and span is None
    assert msg.startswith("a renewal gap is -1.")
    assert msg.endswith(": a gap is positive and finite (time 0)")


def test_arrivals_not_drained():
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.loop([b.run(s, 1)])])
    err = run_error(b.program(arrival=M.APoisson(1.0), horizon=10, arrivals=3))
    assert where(err) == ("R008", None, "--arrivals 3: 3 of the sessions are still live at the horizon 10; "
                          "the run must drain them (time 10)")


def test_arrivals_cut_short_by_the_horizon():
    """`--arrivals N` is exactly N arrivals: a horizon that stops them before
    N ran the sessions that came and said nothing (`serq run mg1.sq
    --arrivals 50 --horizon 1` reported 1 arrival)."""
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 0.1)])
    err = run_error(b.program(arrival=M.ARenewal(N(1.0).e), horizon=3.5, arrivals=10))
    assert where(err) == ("R008", None, "--arrivals 10: 3 arrived by the horizon 3.5; the run must have all 10 "
                          "(time 3.1)")
    assert err.diagnostics[0].field == "$.arrivals"


def test_arrivals_beyond_a_traces_rows():
    from serq.link import compile_file
    p = compile_file("examples/replay/mooncake.sq", horizon=1e9, arrivals=1000)
    err = run_error(p)
    assert where(err) == ("R008", None, "--arrivals 1000: 600 arrived by the horizon 1000000000 or the trace's "
                          "last row; the run must have all 1000 (time 200.289)")


def test_arrivals_drained_before_warmup():
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1)])
    err = run_error(b.program(arrival=M.APoisson(1.0), horizon=100, warmup=50, arrivals=1))
    assert where(err) == ("R009", None, "--arrivals 1: the sessions drained at 1, at or before the warm-up "
                          "50: nothing is measured (time 1)")


def test_arrivals_drained():
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1)])
    d = simulate(b.program(arrival=M.APoisson(1.0), horizon=100, arrivals=5)).data()
    assert d["run"]["arrivals"] == 5 and d["run"]["ended"] == 5 and d["run"]["end"] < 100


def test_session_ends_while_a_leg_runs():
    b = Builder()
    s = b.stage("s", M.KDelay())
    flag = b.attr("flag")
    b.session([b.turn(), b.fork([b.run(s, 5)]), b.run(s, 1), b.branch(A(flag), [b.join()]),
               b.end(side="server")])
    err = run_error(b.program(arrival=sessions({flag: 0}), horizon=10))
    assert where(err) == ("R010", "test.sq:8:3", "session 0 ends while 1 of its legs runs: join them first "
                          "(session 0, turn 1, time 1)")


def test_hold_and_wait_deadlock():
    """The session leases p (for ever) and joins a leg that waits for p."""
    b = Builder()
    p = b.pool("p", cap=1)
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.hold([(p, 1)], [b.run(s, 1)], lease=(p, math.inf)),
               b.fork([b.hold([(p, 1)], [b.run(s, 1)])]), b.join()])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R011", "test.sq:9:3", "hold-and-wait deadlock: session 0 waits at a join for 1 leg, "
                          "and every live session and leg waits for another with no event left to free it "
                          "(a finite lease breaks the cycle) (time 1)")


def test_load_beyond_allocation():
    b = Builder()
    p = b.pool("p", cap=100)
    b.session([b.turn(), b.hold([(p, 10)], [b.load(p, 12)])])
    err = run_error(b.program(arrival=sessions({}), horizon=10))
    assert where(err) == ("R012", "test.sq:2:3", "`load p` of 12 takes the hold's position to 12, beyond its "
                          "allocation of 10: grow it first (session 0, turn 1, time 0)")


def test_two_indices_name_one_member():
    b = Builder()
    p = b.pool("p", cap=10, count=2)
    i, j = b.attr("i"), b.attr("j")
    r1 = M.Ref(p.base, 2, M.EAttr(i))
    r2 = M.Ref(p.base, 2, M.EAttr(j))
    b.session([b.turn(), b.hold([(r1, 1), (r2, 1)], [])])
    err = run_error(b.program(arrival=sessions({i: 1, j: 1}), horizon=10))
    assert where(err) == ("R013", "test.sq:4:3", "two indices of one hold name the same member of `p` "
                          "(session 0, turn 1, time 0)")


def test_trace_missing(tmp_path):
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1)])
    path = str(tmp_path / "none.csv")
    err = run_error(b.program(arrival=sessions({}), horizon=10, trace=path))
    assert where(err) == ("R014", None, f"cannot read the trace {path}: No such file or directory")
    assert err.diagnostics[0].field == "$.trace"


def test_trace_bad_value(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("session,turn,new,out,think\n0,0,10,2,1\n0,1,ten,2,1\n")
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1)])
    err = run_error(b.program(arrival=sessions({}), horizon=10, trace=str(path)))
    assert where(err) == ("R014", f"{path}:3:5", "column `new` is `ten`, not a number")
    assert err.render() == (f"{path}:3:5: error[R014]: column `new` is `ten`, not a number\n"
                            "  |\n"
                            "3 | 0,1,ten,2,1\n"
                            "  |     ^")


def test_trace_session_exhausted(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("session,turn,new,out,think\n0,0,10,2,1\n")
    b = Builder()
    s = b.stage("s", M.KDelay())
    b.session([b.turn(), b.run(s, 1), b.turn(), b.run(s, 1)])
    err = run_error(b.program(arrival=sessions({}), horizon=10, trace=str(path), trace_ordered=True))
    assert where(err) == ("R015", "test.sq:4:3", "session 0 takes turn 2, but its trace session has 1 turn "
                          "(session 0, turn 2, time 1)")


_HELD = {
    "grow, in a loop's next pass": ("""      while (n < 2) {
        set n = n + 1;
        grow kv (cost(kv, 1));
        run svc (cost(svc, 0.1));
        release kv;
      }""", "t.sq:11:9", "`grow kv`", "time 0.1"),
    "load, after a branch taken": ("""      branch (n < 1) { release kv; }
      load kv (cost(kv, 1));""", "t.sq:10:7", "`load kv`", "time 0"),
    "a growing run, in a loop's next pass": ("""      while (n < 2) {
        set n = n + 1;
        run e prefill (cost(e, 10)) growing kv;
        release kv;
      }""", "t.sq:11:9", "`run e … growing kv`", "time 0.01"),
}


@pytest.mark.parametrize("case", sorted(_HELD))
def test_what_acts_on_a_pool_its_hold_released_stops_the_run(case):
    """A `release` the linker cannot be sure comes first (E720 refuses one
    that is: in an earlier pass of a loop, in a branch) gave the pool back,
    so a later grow, load or growing run has nothing to act on: it did
    nothing, silently."""
    from serq.link import compile_source
    body, at, what, when = _HELD[case]
    src = ("fn main() {\n  stage svc : fifo;\n  device gpu { kv cap 1000; }\n"
           "  engine e on gpu { tokens cap 64; schedule { advance running; admit waiting; } execute (0.01); }\n"
           "  pool kv on gpu { }\n  workload { arrive poisson(1); }\n"
           "  server { hold kv (cost(kv, 1)) {\n      set n = 0;\n" + body + "\n    }\n  }\n}\n")
    err = run_error(compile_source(src, "t.sq", horizon=20))
    assert where(err) == ("R022", at, f"{what} finds no allocation of `kv` in its holds: a `release kv` gave "
                          f"it back, or the hold is of another member (session 0, turn 1, {when})")


def test_a_growing_run_on_an_engine_named_by_an_attribute_after_its_release_stops_the_run():
    """(the interpreter's run: an engine of a family named by an attribute)"""
    from serq.link import compile_source
    src = ("fn main() {\n  device gpu[2] { kv cap 1000; }\n"
           "  engine e[2] on gpu { tokens cap 64; schedule { advance running; admit waiting; } execute (0.01); }\n"
           "  pool kv on gpu { }\n  workload { arrive poisson(1); }\n"
           "  server {\n    set m = 0;\n    hold kv[0] (cost(kv[0], 1)) {\n      set n = 0;\n"
           "      while (n < 2) {\n        set n = n + 1;\n"
           "        run e[m] prefill (cost(e[m], 10)) growing kv[0];\n        release kv[0];\n      }\n    }\n  }\n}\n")
    err = run_error(compile_source(src, "t.sq", horizon=20))
    assert where(err) == ("R022", "t.sq:12:9", "`run e … growing kv[0]` finds no allocation of `kv[0]` in its "
                          "holds: a `release kv[0]` gave it back, or the hold is of another member "
                          "(session 0, turn 1, time 0.01)")
