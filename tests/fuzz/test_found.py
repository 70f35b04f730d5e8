"""Each crash class the issue listed and the fuzzers found, pinned by its
whole message (or, where the input is valid, by what the run reports)."""

from __future__ import annotations

import json
import math

import pytest

from serq import ir
from serq.diag import SerqError
from serq.link import compile_file, compile_source
from serq.sim import RunStopped, simulate
from serq.sim import stats as S


def _err(fn) -> str:
    with pytest.raises(SerqError) as info:
        fn()
    return info.value.render()


def _example(path: str, old: str, new: str, horizon: float = 50.0):
    src = open(path, encoding="utf-8").read()
    assert old in src
    return compile_source(src.replace(old, new), path, horizon=horizon)


def _source(body: str, horizon: float = 10.0):
    return compile_source(body, "t.sq", horizon=horizon)


SVC = "fn main() {\n  stage svc : fifo;\n"


# -- the linker ----------------------------------------------------------------

def test_a_draw_in_a_constant_is_refused_where_it_is():
    """It was an internal `LinkAbort` escaping `serq check`."""
    assert _err(lambda: _source("let B = ~uniform(0, 3);\n" + SVC + "  workload { arrive closed(B); }\n}\n")) == (
        "t.sq:1:9: error[E403]: a constant cannot read a draw\n"
        "  |\n"
        "1 | let B = ~uniform(0, 3);\n"
        "  |         ^^^^^^^^^^^^^^\n"
        "  = help: a constant reads numbers, `inf` and earlier constants")


def test_an_infinite_population_does_not_link():
    """`OverflowError: cannot convert float infinity to integer`, exit 0."""
    assert _err(lambda: _example("examples/multi-turn/closed.sq", 'args.number("N", 5)',
                                 'args.number("N", inf)')) == (
        "examples/multi-turn/closed.sq:14:19: error[E404]: a population is a whole number from 1 to 1,000,000, "
        "not inf\n"
        "   |\n"
        "14 |     arrive closed(N);\n"
        "   |                   ^")


def test_an_infinite_mean_of_a_draw_does_not_link():
    """`args.number("N_new", inf)`: an `OverflowError` in serq/sim/pools/pool.py."""
    assert _err(lambda: _example("examples/multi-turn/vllm_chat.sq", 'args.number("N_new", 120)',
                                 'args.number("N_new", inf)')) == (
        "examples/multi-turn/vllm_chat.sq:70:20: error[E408]: the mean of `~exp` is a finite number ≥ 0, not inf\n"
        "   |\n"
        "70 |       set n = ceil(~exp(N_new));\n"
        "   |                    ^^^^^^^^^^^\n"
        "  = help: `~exp(m)` draws an exponential of mean m")


def test_an_h2_beyond_its_domain_does_not_link():
    """`~h2(1, 1e308)`: a `ZeroDivisionError` in serq/sim/rng.py."""
    assert _err(lambda: _example("examples/single-turn/mg1.sq", "~h2(S, cv2)", "~h2(1, 1e308)")) == (
        "examples/single-turn/mg1.sq:17:41: error[E408]: the squared coefficient of variation of `~h2` is from 1 "
        "to 1e15, not 1e+308\n"
        "   |\n"
        "17 |     turn { set s = cv2 == 0 ? ~det(S) : ~h2(1, 1e308); }\n"
        "   |                                         ^^^^^^^^^^^^^\n"
        "  = help: `~h2(m, cv2)` is a balanced two-phase hyperexponential of mean m; cv2 1 is `~exp(m)`")


def test_an_h2_below_an_exponential_does_not_run_as_one():
    """A cv2 below 1 was silently an exponential (mg1.sq with cv2 0.5)."""
    assert _err(lambda: compile_file("examples/single-turn/mg1.sq", sets={"cv2": "0.5"}, horizon=10)) == (
        "examples/single-turn/mg1.sq:17:41: error[E408]: the squared coefficient of variation of `~h2` is from 1 "
        "to 1e15, not 0.5 (below 1, `~erlang` varies less than an exponential)\n"
        "   |\n"
        "17 |     turn { set s = cv2 == 0 ? ~det(S) : ~h2(S, cv2); }\n"
        "   |                                         ^^^^^^^^^^^\n"
        "  = help: `~h2(m, cv2)` is a balanced two-phase hyperexponential of mean m; cv2 1 is `~exp(m)`")


def test_a_draw_a_constant_condition_never_takes_is_not_held_to_its_domain():
    """mg1.sq says `cv2 = 0 is deterministic (M/D/1)`, but `--set cv2=0` was refused: E408 for the
    `~h2(S, 0)` of `cv2 == 0 ? ~det(S) : ~h2(S, cv2)`, a draw the run never makes."""
    r = simulate(compile_file("examples/single-turn/mg1.sq", sets={"cv2": "0"}, horizon=200))
    svc = r.data()["stages"][0]
    assert (svc["name"], svc["completed"], svc["service"]) == ("svc", 177, 1.0)
    # the side a constant condition takes is still held to it
    src = open("examples/single-turn/mg1.sq", encoding="utf-8").read().replace("cv2 == 0 ?", "cv2 == 1 ?")
    assert _err(lambda: compile_source(src, "mg1.sq", sets={"cv2": "0"}, horizon=10)) == (
        "mg1.sq:17:41: error[E408]: the squared coefficient of variation of `~h2` is from 1 "
        "to 1e15, not 0 (below 1, `~erlang` varies less than an exponential)\n"
        "   |\n"
        "17 |     turn { set s = cv2 == 1 ? ~det(S) : ~h2(S, cv2); }\n"
        "   |                                         ^^^^^^^^^^^\n"
        "  = help: `~h2(m, cv2)` is a balanced two-phase hyperexponential of mean m; cv2 1 is `~exp(m)`")


def test_a_computed_draw_outside_its_domain_stops_the_run_there():
    p = _source(SVC + "  workload { arrive poisson(1); turn { set x = 2.5; } }\n"
                "  server { set s = ~erlang(x, 1); run svc (cost(svc, s)); }\n}\n")
    assert _err(lambda: simulate(p)) == (
        "t.sq:4:12: error[R016]: the phases of `~erlang` are a whole number from 1 to 1,000,000, not 2.5 "
        "(session 0, turn 1, time 0)\n"
        "  |\n"
        "4 |   server { set s = ~erlang(x, 1); run svc (cost(svc, s)); }\n"
        "  |            ^")


def test_a_computed_choose_of_no_candidate_stops_the_run_there():
    """A computed count is held where a constant one is (E403): it set j to 0
    from no candidates, silently."""
    p = _source("fn main() {\n  stage svc[2] : fifo;\n  workload { arrive poisson(1); turn { set m = 0; } }\n"
                "  server { choose j in m by (queue(svc[j])); run svc[j] (cost(svc, 1)); }\n}\n")
    assert _err(lambda: simulate(p)) == (
        "t.sq:4:12: error[R002]: the candidates of `choose` are a whole number ≥ 1, not 0 "
        "(session 0, turn 1, time 0)\n"
        "  |\n"
        "4 |   server { choose j in m by (queue(svc[j])); run svc[j] (cost(svc, 1)); }\n"
        "  |            ^")


def test_a_cap_written_with_an_exponent_is_read_by_z3():
    """`each at most (…)` with 1e-308 in it: `Z3Exception: parser error`."""
    p = _example("examples/multi-turn/vllm.sq", "running.count + waiting.count > 1",
                 "running.count + waiting.count > 1e-308", horizon=10)
    assert p.stages[0].kind.chunk is not None


def test_a_set_value_may_be_a_number():
    """`compile_file(p, sets={"lambda": 2})`: an AttributeError in the parser."""
    p = compile_file("examples/single-turn/mg1.sq", sets={"lambda": 2}, horizon=10)
    assert p.arrival.rate == 2.0
    assert _err(lambda: compile_file("examples/single-turn/mg1.sq", sets={"lambda": [2]}, horizon=10)) == (
        "error[E253]: --set lambda: a value is an expression's text or a number, not list [2]\n"
        '  = help: sets={"lambda": "1.5"}')


def test_a_file_that_is_not_utf8_is_named_at_its_first_bad_byte(tmp_path):
    path = tmp_path / "x.sq"
    path.write_bytes(b"fn main() {\n  stage s\xff : fifo;\n}\n")
    assert _err(lambda: compile_file(str(path))) == (
        f"{path}:2:10: error[E002]: the file is not UTF-8 text: byte 0xff does not decode\n"
        "  |\n"
        "2 |   stage s\ufffd : fifo;\n"
        "  |          ^\n"
        "  = help: save the file as UTF-8")


MM1_LINES = ["fn main() {", "  // one server", "  stage svc : fifo;", "  workload { arrive poisson(0.5); }",
             "  server { run svc (cost(svc, ~exp(1))); }", "}", ""]


def test_a_file_whose_lines_end_with_a_lone_cr_reads_as_its_lf_twin():
    """An old Mac's line ends: the file was one line, so the comment took
    the rest of it (E102 at 1:…) and every location was on line 1."""
    cr, lf = "\r".join(MM1_LINES), "\n".join(MM1_LINES)
    assert ir.to_data(compile_source(cr, "t.sq", horizon=10)) == ir.to_data(compile_source(lf, "t.sq", horizon=10))
    mixed = "\r".join(MM1_LINES[:3]) + "\r\n" + "\n".join(MM1_LINES[3:]).replace("~exp(1)", "~exp(zz)")
    assert _err(lambda: _source(mixed)) == (
        "t.sq:5:36: error[E201]: unknown name `zz`\n"
        "  |\n"
        "5 |   server { run svc (cost(svc, ~exp(zz))); }\n"
        "  |                                    ^^")


def test_a_bad_byte_of_a_file_with_lone_cr_line_ends_is_on_its_line(tmp_path):
    path = tmp_path / "x.sq"
    path.write_bytes(b"fn main() {\r  // \xff\r  stage s : fifo;\r}\r")
    assert _err(lambda: compile_file(str(path))) == (
        f"{path}:2:6: error[E002]: the file is not UTF-8 text: byte 0xff does not decode\n"
        "  |\n"
        "2 |   // \ufffd\n"
        "  |      ^\n"
        "  = help: save the file as UTF-8")


# -- the statistics -------------------------------------------------------------

def test_a_ps_stage_of_capacity_1e308_reports_its_statistics():
    """`stage svc : ps(1e308);`: a `ZeroDivisionError` in serq/sim/stats.py."""
    r = simulate(_example("examples/single-turn/ps.sq", "ps(1)", "ps(1e308)"))
    sojourn = r.data()["observes"]["sojourn"]
    # one sojourn of about 1e-308 (at time 0) and 43 the clock cannot tell from 0: cv2 n
    assert sojourn["count"] == 44 and 0 < sojourn["mean"] < 1e-300 and sojourn["cv2"] == pytest.approx(44.0)


@pytest.mark.parametrize("values, want", [
    ([1e-200, 3e-200], {"count": 2, "mean": 2e-200, "ci": math.nan, "cv2": 0.5, "p50": 2e-200, "p90": 2.8e-200,
                        "p95": 2.9e-200, "p99": 2.98e-200}),
    ([1e308, 1e308], {"count": 2, "mean": math.inf, "ci": math.nan, "cv2": math.nan, "p50": 1e308, "p90": 1e308,
                      "p95": 1e308, "p99": 1e308}),
    ([math.inf, -math.inf], {"count": 2, "mean": math.nan, "ci": math.nan, "cv2": math.nan, "p50": math.nan,
                             "p90": math.nan, "p95": math.nan, "p99": math.nan}),
])
def test_a_statistic_the_values_do_not_define_is_nan_or_inf(values, want):
    got = S.summary(values)
    assert list(got) == list(want)
    for k, w in want.items():
        assert (got[k] != got[k] and w != w) or got[k] == pytest.approx(w, rel=1e-12, abs=0), k


def test_a_gauge_window_narrower_than_the_clock_is_nan():
    assert repr(S.time_windows([1e15], [1.0], 1e15, 1e15 + 0.25)) == repr((1.0, math.nan, 1.0, 1.0))


# -- the IR reader --------------------------------------------------------------

def _mg1_ir() -> dict:
    return ir.to_data(compile_file("examples/single-turn/mg1.sq", horizon=10))


def _read(data: dict):
    p = ir.loads(json.dumps(data), "x.ir.json")
    ir.validate(p)
    return p


def test_a_reference_past_the_end_of_a_table_is_the_validators():
    """`IndexError`s in machine.py, compile.py and the generated segments."""
    d = _mg1_ir()
    d["blocks"][1]["stmts"][2]["Run"]["stage"]["base"] = 1
    assert _err(lambda: _read(d)) == (
        "examples/single-turn/mg1.sq:22:5: error[E910]: stage reference 1+1 out of range\n"
        "   |\n"
        "22 |     run svc (cost(svc, s));\n"
        "   |     ^")


def test_a_table_problem_names_its_field():
    d = _mg1_ir()
    d["session"] = 9
    assert _err(lambda: _read(d)) == (
        "$.session: error[E910]: session block 9 out of range (the program has 2 blocks)\n\n"
        "$.blocks[1]: error[E910]: block 1 is not reachable from init, turn or session\n\n"
        "error: 2 errors")


def test_a_reference_into_the_middle_of_a_family_is_refused():
    d = ir.to_data(compile_source(SVC.replace("svc : fifo", "svc[3] : fifo") +
                                  "  workload { arrive poisson(1); }\n  server { run svc[1] (cost(svc, 1)); }\n}\n",
                                  "t.sq", horizon=10))
    d["blocks"][0]["stmts"][1]["Run"]["stage"].update(base=1, count=2)
    assert _err(lambda: _read(d)).startswith("t.sq:4:12: error[E910]: stage reference 1+2 is not one whole family")


def test_a_run_time_error_of_an_ir_statement_without_a_location_names_its_field():
    d = _mg1_ir()
    d["blocks"][0]["stmts"][0]["Set"]["expr"] = {"Num": -1.0}      # s = -1
    d["blocks"][1]["locs"][2] = None                               # the run has no location
    p = _read(d)
    assert _err(lambda: simulate(p)) == (
        "$.blocks[1].stmts[2]: error[R001]: the work of `run svc` is -1: an amount is not negative and not NaN "
        "(session 0, turn 1, time 0)")


# -- runs that cannot finish ------------------------------------------------------

def test_arrivals_beyond_what_a_run_can_simulate_do_not_start():
    p = _source(SVC + "  workload { arrive poisson(1e308); }\n  server { run svc (cost(svc, 0.5)); }\n}\n")
    assert _err(lambda: simulate(p)) == (
        "$.arrival.Poisson: error[R018]: `arrive poisson(1e+308)` over the horizon 10 is more than 1e+308 "
        "arrivals, beyond the 1e+12 a run can simulate: the run cannot finish (time 0)")
    p = _source(SVC + "  workload { arrive renewal(~exp(1e-300)); }\n  server { run svc (cost(svc, 0.5)); }\n}\n")
    assert _err(lambda: simulate(p)) == (
        "$.arrival.Renewal: error[R018]: `arrive renewal(…)`, a mean gap of 1e-300, over the horizon 10 is about "
        "1e+301 arrivals, beyond the 1e+12 a run can simulate: the run cannot finish (time 0)")


def test_an_iteration_that_no_longer_advances_the_clock_stops_the_run():
    p = _source("fn main() {\n  device gpu { kv cap 100; }\n  engine llm on gpu {\n    reqs cap 4;\n"
                "    tokens cap 8;\n    schedule { advance running; admit waiting while (running.preempted == 0); }\n"
                "    execute (1e-30);\n  }\n  pool kv on gpu { }\n  pool reqs on llm { queue fifo; }\n"
                "  workload { arrive renewal(1); }\n"
                "  server { hold reqs (cost(reqs, 1)) { run llm prefill (cost(llm, 4)); } }\n}\n")
    assert _err(lambda: simulate(p)) == (
        "t.sq:3:3: error[R018]: engine `llm`: an iteration that schedules 4 tokens costs 1e-30, which no longer "
        "advances the clock: the run cannot finish (time 1)\n"
        "  |\n"
        "3 |   engine llm on gpu {\n"
        "  |   ^")


def test_a_turn_number_a_set_made_infinite_stops_the_run():
    p = _source(SVC + "  workload { arrive poisson(1); session { set turn_no = inf; turn; } }\n"
                "  server { run svc (cost(svc, 1)); }\n}\n")
    assert _err(lambda: simulate(p)) == (
        "t.sq:3:62: error[R017]: `turn_no` is inf: the turn number is a finite number (a set made it so) "
        "(session 0, turn inf, time 0)\n"
        "  |\n"
        "3 |   workload { arrive poisson(1); session { set turn_no = inf; turn; } }\n"
        "  |                                                              ^")


def test_a_run_stopped_by_its_limit_reports_what_it_measured_marked_partial():
    p = compile_file("examples/single-turn/mg1.sq", horizon=1e6)
    with pytest.raises(RunStopped) as info:
        simulate(p, max_events=5000)
    stop = info.value
    assert stop.render() == (
        "error[R019]: the run stopped at time 3048.26 of the horizon 1000000 (--max-events 5000 reached): it did "
        "not finish, and what it measured is partial\n"
        "  = help: give it more (--max-events, --max-seconds), or a shorter --horizon")
    text = stop.report.text().split("\n")
    assert text[:3] == [
        f"made: program examples/single-turn/mg1.sq seed 1 horizon 1000000 warmup 0",
        "run: end 3048.26 events 5000 arrivals 2502 ended 2498 turns 2502 live 4.064",
        "partial: the run stopped at 3048.26 (--max-events 5000 reached); these are the figures until then"]
    assert stop.report.data()["run"]["partial"] == "--max-events 5000 reached"
    assert stop.report.data()["run"]["events"] == 5000


def test_the_progress_line_estimates_the_time_left():
    from serq.sim.machine import Sim
    sim = Sim(compile_file("examples/single-turn/mg1.sq", horizon=100))
    sim.limits.t_start, sim.now, sim.nevents = 0.0, 25.0, 1234
    assert sim.limits.progress_line(10.0).rstrip() == "serq run:  25.0% (t=25, 1234 events), about 30 s left"
    sim.now = 1e-290          # a clock that hardly moves
    assert sim.limits.progress_line(10.0).rstrip() == \
        "serq run:   0.0% (t=1e-290, 1234 events), about 3.17e+285 years left"
    drain = Sim(compile_file("examples/single-turn/mg1.sq", horizon=1e9, arrivals=1000))
    drain.limits.t_start, drain.open_arrivals = 0.0, 750
    assert drain.limits.progress_line(30.0).rstrip().endswith("75.0% (t=0, 0 events), about 10 s left")


@pytest.mark.parametrize("kw, want", [
    ({"horizon": "abc"}, "$.horizon: error[E740]: horizon is a number, not str 'abc'"),
    ({"seed": 1.5}, "$.seed: error[E740]: seed is a whole number, not float 1.5"),
    ({"warmup": None}, "$.warmup: error[E740]: warmup is a number, not NoneType None"),
])
def test_the_settings_from_python_are_of_their_types(kw, want):
    """A string for the horizon from Python was a ValueError in the linker."""
    assert _err(lambda: compile_file("examples/single-turn/mg1.sq", **kw)) == want


def test_an_aggregate_of_many_terms_is_read_and_written():
    """A 1 000-term aggregate linked, but `serq ir` (to_data, json) and an IR
    file's reading ran out of Python's stack (700 terms here, 1 400 levels:
    the canonical JSON's indentation makes a chain's text quadratic in its
    length, and 4 096 terms a minute's work)."""
    n = 700
    p = _source(f"fn main() {{\n  stage s[{n}] : fifo;\n  workload {{ arrive poisson(1); }}\n"
                f"  server {{ set x = sum j in {n} (queue(s[j])); run s[0] (cost(s, 1)); observe q = x; }}\n}}\n")
    q = ir.loads(ir.dumps(p))
    ir.validate(q)
    assert q == p
    assert simulate(q).data()["observes"]["q"]["count"] == 8


def test_a_program_nested_beyond_the_stack_is_a_located_error():
    """Located where it nests: the statement whose expression is the chain
    (it was said at 1:1, the program's first character)."""
    assert _err(lambda: _source("fn main() {\n  stage svc : fifo;\n  let a =\n" + "1+\n" * 12000 + "1;\n}\n")) == (
        "t.sq:3:3: error[E103]: the program nests too deeply for serq (an expression of some thousands of "
        "operators in a row, or definitions within definitions)\n"
        "  |\n"
        "3 |   let a =\n"
        "  |   ^^^^^^^\n"
        "  = help: write it in steps, each naming the last (`let`, `set`), or as an aggregate: `sum j in n (…)`")


def test_a_chain_of_definitions_beyond_the_stack_is_located_at_its_call(tmp_path):
    (tmp_path / "chain.sq").write_text("def f0(x) { x }\n" +
                                       "".join(f"def f{i}(x) {{ f{i - 1}(x) + 1 }}\n" for i in range(1, 6000)))
    prog = tmp_path / "p.sq"
    prog.write_text('use "chain.sq";\nfn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); }\n'
                    '  server { set y = 1; run svc (cost(svc, f5999(y))); }\n}\n')
    assert _err(lambda: compile_file(str(prog))) == (
        f"{prog}:5:23: error[E103]: the program nests too deeply for serq (an expression of some thousands of "
        "operators in a row, or definitions within definitions)\n"
        "  |\n"
        "5 |   server { set y = 1; run svc (cost(svc, f5999(y))); }\n"
        "  |                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "  = help: write it in steps, each naming the last (`let`, `set`), or as an aggregate: `sum j in n (…)`")


def test_an_input_nested_beyond_the_stack_is_located_in_its_value():
    src = ('use "std/args";\nfn main() {\n  let rate = args.number("rate", 1);\n  stage svc : fifo;\n'
           '  workload { arrive poisson(rate); }\n  server { run svc (cost(svc, 1)); }\n}\n')
    err = _err(lambda: compile_source(src, "t.sq", sets={"rate": "1 +\n" * 12000 + "1"}))
    assert err == (
        "--set rate:1:1: error[E103]: the program nests too deeply for serq (an expression of some thousands of "
        "operators in a row, or definitions within definitions)\n"
        "  |\n"
        "1 | 1 +\n"
        "  | ^^^\n"
        "  = help: write it in steps, each naming the last (`let`, `set`), or as an aggregate: `sum j in n (…)`")


# -- found by the IR fuzzer's run of 10^4 mutants (seed 7) ------------------------

def test_a_family_beyond_what_an_aggregate_can_read_is_refused():
    """`queue R[N]` with N = 1e308 linked member by member until the fuzzer's
    time ran out."""
    assert _err(lambda: _source(SVC.replace("svc : fifo", "svc[1e308] : fifo") +
                                "  workload { arrive poisson(1); }\n  server { run svc[0] (cost(svc, 1)); }\n}\n")) == (
        "t.sq:2:13: error[E403]: the size of stage `svc` is at most 4096 members, not 1e+308\n"
        "  |\n"
        "2 |   stage svc[1e308] : fifo;\n"
        "  |             ^^^^^\n"
        "  = help: a family is read member by member (`max j in n (…)`, `choose j in n by …`): at most 4096 terms")


def test_a_content_addressed_pool_of_infinite_blocks_is_refused():
    """An `OverflowError` in the validator's check of a shared pool."""
    d = ir.to_data(compile_file("examples/replay/mooncake.sq", horizon=10))
    d["pools"][0]["block"] = "inf"
    assert _err(lambda: _read(d)) == (
        "examples/replay/mooncake.sq:66:3: error[E403]: pool `kv`: block must be positive and finite\n"
        "   |\n"
        "66 |   pool kv on gpu { block bs; evict lru; preempt lifo; cache shared; }\n"
        "   |   ^\n\n"
        "examples/replay/mooncake.sq:66:3: error[E290]: pool `kv` is content-addressed (`cache shared;`): it "
        "needs a block of a whole number of tokens\n"
        "   |\n"
        "66 |   pool kv on gpu { block bs; evict lru; preempt lifo; cache shared; }\n"
        "   |   ^\n"
        "  = help: say `block bs;` with bs whole\n\n"
        "error: 2 errors")


def test_a_run_over_several_stages_naming_one_past_the_table_is_refused():
    """An `IndexError` where the validator read the stages a multi-stage run names."""
    d = ir.to_data(compile_file("examples/pd-disaggregation/llmd_nixl_pull.sq", horizon=10))
    run = next(s["Run"] for b in d["blocks"] for s in b["stmts"] if isinstance(s, dict) and "Run" in s
               and s["Run"]["also"])
    run["also"][0]["base"] = 10 ** 9
    msg = _err(lambda: _read(d))
    assert f"error[E910]: stage reference {10 ** 9}+2 out of range\n" in msg and "error:" not in msg.split("\n", 1)[1]


def test_growth_in_a_pool_without_blocks_runs_the_same_with_and_without_strokes():
    """A `TypeError` in the strokes' test of whole blocks: a decode growing the
    request slots (a pool with no block size) instead of the KV."""
    d = ir.to_data(compile_file("examples/multi-turn/vllm.sq", horizon=60))
    reqs = [x["name"] for x in d["pools"]].index("reqs")
    runs = [s["Run"] for b in d["blocks"] for s in b["stmts"]
            if isinstance(s, dict) and "Run" in s and s["Run"]["mode"] == "Decode" and s["Run"]["growing"]]
    assert runs
    for r in runs:
        r["growing"]["base"] = reqs
    p = _read(d)
    assert simulate(p).text() == simulate(p, strokes=False).text()


def test_a_content_id_beyond_what_a_block_name_packs_stops_the_run_there():
    """A `struct.error` naming a block: `tenants = 1e308` made a content id
    no 64-bit integer holds."""
    p = _example("examples/multi-turn/shared_system_prompt.sq", 'args.number("tenants", 4)',
                 'args.number("tenants", 1e308)', horizon=5.0)
    msg = _err(lambda: simulate(p))
    assert msg.startswith("examples/multi-turn/shared_system_prompt.sq:85:7: error[R021]: `content`: the id is ")
    assert ": a whole number from 0 to 2^53 (session " in msg.splitlines()[0]


def test_a_queue_index_that_is_not_a_number_is_out_of_range():
    """`P[inf].prefill`: an `OverflowError` (a NaN index: a `ValueError`) where
    the linker read the index."""
    src = open("examples/oracle/vllm_pd.sq", encoding="utf-8").read()
    for index, shown, col, caret in (("1e999", "inf", 9, "^^^^^"), ("(0/0)", "NaN", 10, "^^^")):
        p = src.replace("P[0].prefill (prompt);", f"P[{index}].prefill (prompt);")
        msg = _err(lambda: compile_source(p, "examples/oracle/vllm_pd.sq", horizon=10))
        assert msg.startswith(f"examples/oracle/vllm_pd.sq:55:{col}: error[E402]: index {shown} out of range for "
                              "queue `P`, which has 1 member\n   |\n"
                              f"55 |       P[{index}].prefill (prompt);\n   |{' ' * col}{caret}\n"), msg


def test_a_content_addressed_block_beyond_what_a_name_counts_is_refused():
    """A `struct.error` naming a block of 1e308 tokens."""
    p = "examples/replay/mooncake.sq"
    msg = _err(lambda: _example(p, 'args.number("bs", 16)', 'args.number("bs", 1e308)', horizon=5.0))
    assert msg.startswith("examples/replay/mooncake.sq:66:3: error[E290]: pool `kv` is content-addressed "
                          "(`cache shared;`): its block of 1e+308 tokens is beyond the 2^53 tokens a block's "
                          "name counts\n"), msg


# -- issue 24: the IR by type and shape first (serq/ir/shape.py) -------------------
# The crash sites of the type-changing mutator, each with an input
# that reaches it: on main, a function of no arguments inside a cost
# reached the constant folder from the validator (ir/expr.py:78, :83, :87:
# unpacking its arguments); the others were refused by main's validator
# too, but by checks that came after the semantic ones read the node, and
# are now refused by the shape pass before anything reads them.

def _first(d, key):
    todo = [d]
    while todo:
        x = todo.pop(0)
        if isinstance(x, dict):
            if key in x:
                return x
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    raise KeyError(key)


def _cost_fn(d):
    hp = d["blocks"][2]["stmts"][4]["Hold"]["pools"][0]
    return hp["units"]["Cost"]["expr"]


def test_a_unary_function_of_no_arguments_in_a_cost_is_the_shapes():
    """ValueError at ir/expr.py:87 (`(x, *rest) = args`) from the validator."""
    d = ir.to_data(compile_file("examples/multi-turn/routing.sq", horizon=10))
    hp = d["blocks"][2]["stmts"][4]["Hold"]["pools"][0]
    hp["units"]["Cost"]["expr"] = {"Fn": {"fn": "Ceil", "args": []}}
    assert _err(lambda: _read(d)) == (
        "$.blocks[2].stmts[4].Hold.pools[0].units.Cost.expr.Fn.args: error[E910]: the field has 0 arguments: "
        "ceil takes 1")


def test_a_binary_function_of_no_arguments_in_a_cost_is_the_shapes():
    """ValueError at ir/expr.py:78 (`a, b = args`) from the validator."""
    d = ir.to_data(compile_file("examples/multi-turn/routing.sq", horizon=10))
    _cost_fn(d)["Fn"]["args"] = []
    assert _err(lambda: _read(d)) == (
        "$.blocks[2].stmts[4].Hold.pools[0].units.Cost.expr.Fn.args: error[E910]: the field has 0 arguments: "
        "min takes 2")


def _named_foo(d: dict, node: str, field: str) -> str:
    """The error of IR data ``d`` whose first ``node`` has its ``field``, a
    name from a closed list, made `Foo`."""
    _first(d, node)[node][field] = "Foo"
    return _err(lambda: _read(d))


def test_an_unknown_function_is_the_shapes():
    """ValueError at ir/expr.py:107 (`raise ValueError(fn)`)."""
    assert _named_foo(ir.to_data(compile_file("examples/multi-turn/vllm.sq", horizon=10)), "Fn", "fn") == (
        "$.blocks[1].stmts[0].Set.expr.Fn.fn: error[E910]: the field is 'Foo', not one of Min, Max, Abs, "
        "Floor, Ceil, Sqrt, Exp, Ln, Pow")


def test_an_unknown_operator_is_the_shapes():
    """ValueError at sim/compile.py:244 (`raise ValueError(op)`)."""
    assert _named_foo(_mg1_ir(), "Binary", "op") == (
        "$.blocks[1].stmts[3].Observe.expr.Binary.op: error[E910]: the field is 'Foo', not one of Add, Sub, Mul, "
        "Div, Pow, Lt, Le, Gt, Ge, Eq, Ne, And, Or")


def test_an_unknown_query_is_the_shapes():
    """ValueError at sim/compile.py:332 (`raise ValueError(q)`)."""
    assert _named_foo(ir.to_data(compile_file("examples/multi-turn/vllm.sq", horizon=10)), "Query", "query") == (
        "$.stages[0].kind.Step.chunk.Cond.cond.Binary.lhs.Binary.rhs.Query.query: error[E910]: the field is 'Foo', "
        "not one of Used, Free, CachedIn, Holders, Queued, Prefilling, Queue, Busy, Work, EstLambda, EstRho, "
        "EstWait, BudgetLeft")


def test_a_block_of_fewer_sides_than_statements_is_the_shapes():
    """IndexError at sim/statements.py:52 (`blk.sides[j]`)."""
    d = _mg1_ir()
    d["blocks"][1]["sides"] = d["blocks"][1]["sides"][:1]
    assert _err(lambda: _read(d)) == "$.blocks[1].sides: error[E910]: the field has 1 entries for 4 statements"


def test_a_block_past_the_table_is_refused():
    """IndexError at sim/statements.py:42 (`p.blocks[b]`)."""
    d = _mg1_ir()
    d["session"] = 99
    assert _err(lambda: _read(d)) == (
        "$.session: error[E910]: session block 99 out of range (the program has 2 blocks)\n\n"
        "$.blocks[1]: error[E910]: block 1 is not reachable from init, turn or session\n\n"
        "error: 2 errors")


def test_a_stage_past_the_table_is_refused():
    """IndexError at sim/compile.py:114 (`decls[base]`)."""
    d = ir.to_data(compile_file("examples/multi-turn/vllm.sq", horizon=10))
    _first(d, "Run")["Run"]["stage"]["base"] = 99
    assert _err(lambda: _read(d)) == (
        "examples/multi-turn/vllm.sq:97:35: error[E910]: stage reference 99+1 out of range\n"
        "   |\n"
        "97 |       branch (async_sched == 1) { await; }\n"
        "   |                                   ^")


def test_a_pool_admitted_by_a_stage_that_is_no_engine_is_refused():
    """AttributeError at sim/machine.py:170 (`admit_pools` of a fifo stage)."""
    d = ir.to_data(compile_file("examples/multi-turn/vllm.sq", horizon=10))
    d["stages"].append({"index": None, "kind": {"Fifo": 1}, "loc": None, "name": "extra"})
    next(p for p in d["pools"] if p["admit_via"] is not None)["admit_via"] = len(d["stages"]) - 1
    assert _err(lambda: _read(d)) == (
        "examples/multi-turn/vllm.sq:114:3: error[E910]: pool `reqs`: admit_via must name a step stage\n"
        "    |\n"
        "114 |   pool reqs on vllm { queue fifo; }\n"
        "    |   ^")


def test_a_value_of_another_type_where_a_number_stands_is_the_codecs():
    d = _mg1_ir()
    d["horizon"] = [10.0]
    assert _err(lambda: _read(d)) == "error[E903]: x.ir.json: malformed IR at $.horizon: expected a number (or \"inf\")"
    d = _mg1_ir()
    del d["blocks"][0]["locs"]
    assert _err(lambda: _read(d)) == "error[E903]: x.ir.json: malformed IR at $.blocks[0].locs: missing field"


def test_an_engine_reading_the_queue_of_an_engine_made_after_it_runs():
    """AttributeError at sim/step.py:270 (the queue of a stage not made yet,
    read by an engine's chunk): found by the IR fuzzer's string swaps."""
    d = ir.to_data(compile_file("examples/pd-disaggregation/llmd_nixl_pull.sq", horizon=10))
    q = d["stages"][0]["kind"]["Step"]["chunk"]["Cond"]["cond"]["Binary"]["lhs"]["Binary"]["rhs"]["Query"]
    assert q["query"] == "Queued"
    q["query"] = "Queue"              # the queue of stage 0, read by stage 0's own chunk
    p = _read(d)
    r = simulate(p)
    assert r.data()["run"]["arrivals"] == 6 and r.data()["stages"][0]["completed"] > 0
    assert simulate(p, strokes=False).text() == r.text()     # (the query read when it runs, either way)


# -- issue 24: every input surface (tests/fuzz/surfaces.py's classes) ---------------

TRACE_HELP = ('  = help: a trace is {"budget", "max_seqs", "block_size", "num_blocks", "chunk", "sessions": [{"arrive", '
              '"prefix": {"id", "tokens"}, "turns": [{"new", "out", "think"}]}]}')


def _json_file(tmp_path, name, obj=None, raw=None):
    path = tmp_path / name
    path.write_bytes(raw if raw is not None else json.dumps(obj).encode())
    return str(path)


def _trace():
    with open("tools/oracle/traces/cache_trace.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("edit, want", [
    (lambda t: t["sessions"][0]["turns"].__setitem__(0, 5), "$.sessions[0].turns[0] is a number, not an object"),
    (lambda t: t["sessions"][0].__setitem__("arrive", None),
     "$.sessions[0].arrive is null: a whole number from 0 below 2^53"),
    (lambda t: t["sessions"][0]["turns"][1].__setitem__("think", "3"),
     '$.sessions[0].turns[1].think is "3": a whole number from 0 below 2^53'),
], ids=["turn", "arrive", "think"])
def test_a_replay_trace_is_checked_value_by_value(tmp_path, edit, want):
    """AttributeError / TypeError in serq/oracle/replay.py (117 of the issue's
    internal errors)."""
    import serq
    t = _trace()
    edit(t)
    path = _json_file(tmp_path, "t.json", t)
    assert _err(lambda: serq.oracle.run(path)) == f"error[E951]: {path}: {want}\n{TRACE_HELP}"


def test_a_misspelt_key_of_a_replay_trace_is_refused_with_the_likely_one(tmp_path):
    import serq
    t = _trace()
    t["sessions"][0]["turns"][1]["thinks"] = t["sessions"][0]["turns"][1].pop("think")
    path = _json_file(tmp_path, "t.json", t)
    assert _err(lambda: serq.oracle.run(path)) == (
        f"error[E951]: {path}: $.sessions[0].turns[1].thinks is not a key of $.sessions[0].turns[1] (its keys: "
        "new, out, think)\n  = help: did you mean `think`?")


def test_an_oracle_input_that_is_not_utf8_is_named_at_its_byte(tmp_path):
    """UnicodeDecodeError in serq/oracle/scenario.py:47."""
    import serq
    path = _json_file(tmp_path, "s.json", raw=b'{"budget": 8,\n "max_seqs": "\xff"}')
    assert _err(lambda: serq.oracle.run(path)) == (
        f"{path}:2:15: error[E950]: the scenario is not UTF-8 text: byte 0xff does not decode\n"
        "  |\n"
        '2 |  "max_seqs": "\ufffd"}\n'
        "  |               ^\n"
        "  = help: save the file as UTF-8")


def test_a_key_given_twice_in_a_json_input_is_refused_where_it_is(tmp_path):
    """`{"budget": 64, "budget": 8, …}` ran with budget 8, json keeping the
    last of the two unsaid; likewise a Mooncake row's, an IR file's and a
    measured run's keys.  The second is named at its line and column."""
    import serq
    from serq.calib.read import json_lines
    path = _json_file(tmp_path, "s.json", raw=b'{"budget": 64, "max_seqs": 4, "block_size": 4, "num_blocks": 20,\n'
                                              b' "requests": [{"prompt": 40, "out": 12}], "budget": 8}')
    assert _err(lambda: serq.oracle.run(path)) == (
        f"{path}:2:43: error[E950]: the key \"budget\" is given twice in one object\n"
        "  |\n"
        '2 |  "requests": [{"prompt": 40, "out": 12}], "budget": 8}\n'
        "  |                                           ^")
    row = '{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [0], "\\u0074imestamp": 7}'
    trace = _json_file(tmp_path, "t.jsonl", raw=(row + "\n").encode())
    assert _err(lambda: serq.load("examples/replay/mooncake.sq").run(horizon=10, trace=trace)) == (
        f"{trace}:1:75: error[R014]: the key \"timestamp\" is given twice in one object\n"
        "  |\n"
        f"1 | {row}\n"
        "  |                                                                           ^\n"
        "  = help: a Mooncake row is {\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}: whole "
        "numbers, the hash ids 64-bit (from 0 to 2^64 - 1), one per 512 tokens")
    text = serq.load("examples/single-turn/mg1.sq").json()
    assert text.count('"seed": 1,') == 1
    ir_path = _json_file(tmp_path, "p.json", raw=text.replace('"seed": 1,', '"seed": 1, "seed": 2,').encode())
    line = text[:text.index('"seed": 1,')].count("\n") + 1
    assert _err(lambda: serq.load(ir_path)).split("\n")[0] == (
        f"{ir_path}:{line}:13: error[E900]: the key \"seed\" is given twice in one object")
    lines = _json_file(tmp_path, "w.jsonl", raw=b'{"a": 1}\n{"a": 1, "b": {"a": 2, "b": 3, "a": 4}}\n')
    assert _err(lambda: json_lines(lines, "workload")).split("\n")[0] == (
        f"{lines}:2:32: error[E981]: the key \"a\" is given twice in one object")


@pytest.mark.parametrize("value, shown", [("9" * 310, "9" * 37 + "..."), ("Infinity", "Infinity"),
                                          ("NaN", "NaN"), ("1e400", "Infinity")])
def test_a_number_no_scenario_holds_is_refused(tmp_path, value, shown):
    """OverflowError from integers of 310 digits and JSON's Infinity."""
    import serq
    path = _json_file(tmp_path, "n.json", raw=(
        '{"budget": %s, "max_seqs": 2, "block_size": 16, "num_blocks": 10, "requests": [{"prompt": 40, '
        '"out": 12}]}' % value).encode())
    assert _err(lambda: serq.oracle.run(path)).split("\n")[0] == (
        f"error[E951]: {path}: $.budget is {shown}: a whole number from 1 below 2^53")


def test_json_nested_beyond_the_bound_is_refused(tmp_path):
    """RecursionError from JSON 20 000 deep."""
    import serq
    path = _json_file(tmp_path, "d.json", raw=b"[" * 20000 + b"]" * 20000)
    assert _err(lambda: serq.oracle.run(path)) == f"$: error[E950]: {path}: the scenario nests more than 64 deep"


def test_a_pd_request_whose_prefix_is_null_is_refused(tmp_path):
    """`"prefix": null` passed and crashed (serq/oracle/pd.py:127)."""
    from serq.oracle import pd as PD
    with open("tools/oracle/pd/pipeline.json", encoding="utf-8") as f:
        s = json.load(f)
    s["requests"][0]["prefix"] = None
    path = _json_file(tmp_path, "p.json", s)
    assert _err(lambda: PD.load(path)).split("\n")[0] == (
        f"error[E951]: {path}: $.requests[0].prefix is null, not an object")


def test_a_mooncake_spec_is_read_as_a_trace_file_is(tmp_path):
    """A "trace" that is no string crashed (serq/oracle/mooncake.py:70); rows
    took "7", 1.5 and true by int()."""
    import random
    from serq.oracle import mooncake as MC
    from serq.oracle.fuzz import generate_mooncake
    spec = generate_mooncake(random.Random("x"), 0)
    s = {k: v for k, v in spec.items() if k != "rows"}
    s.update(trace=7, first=0, count=1)
    path = _json_file(tmp_path, "m.json", s)
    assert _err(lambda: MC.load(path)).split("\n")[0] == f"error[E951]: {path}: $.trace is 7: a trace file's path"
    for key, value, shown, lo in (("timestamp", "7", '"7"', 0), ("output_length", 1.5, "1.5", 1),
                                  ("input_length", True, "true", 1)):
        r = json.loads(json.dumps(spec))
        r["rows"][0][key] = value
        path = _json_file(tmp_path, "m.json", r)
        assert _err(lambda: MC.load(path)).split("\n")[0] == (
            f"error[E951]: {path}: $.rows[0].{key} is not a Mooncake row: `{key}` is {shown}: a whole number "
            f"from {lo} below 2^53")


@pytest.mark.parametrize("data, why", [
    (b"PAR1garbage", "Parquet magic bytes not found in footer"),
    (b"", "Parquet file size is 0 bytes"),
    (b"a,b\n1,2\n", "Parquet magic bytes not found in footer")], ids=["corrupt", "empty", "csv"])
def test_a_parquet_table_pyarrow_cannot_read_is_named(tmp_path, data, why):
    """pyarrow's ArrowInvalid (only OSError was caught)."""
    pytest.importorskip("pyarrow")
    import serq
    path = _json_file(tmp_path, "t.parquet", raw=data)
    msg = _err(lambda: serq.read_table(path))
    assert msg.startswith(f"error[E972]: {path}: not a Parquet table: Could not open Parquet input source "
                          f"'{path}': {why}")
    assert msg.endswith("\n  = help: a .parquet table is one pyarrow reads (serq sweep --out T.parquet)")


@pytest.mark.parametrize("values, legend", [
    ([1.0, math.inf, 2.0], "value (n = 2; 1 value not finite or beyond ±1e306 left out)"),
    ([1e308, -1e308, 2.0], "value (n = 1; 2 values not finite or beyond ±1e306 left out)")], ids=["inf", "1e308"])
def test_a_plot_leaves_out_what_its_axes_cannot_hold(tmp_path, values, legend):
    """An inf sample, values near 1e308: matplotlib's errors from serq plot."""
    pytest.importorskip("matplotlib")
    import serq
    fig = serq.plot.samples(values)
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == legend
    serq.plot.save(fig, str(tmp_path / "f.png"))


@pytest.mark.parametrize("call, want", [
    (lambda s, p, r: s.load(MG1, instance=2), "serq.load: instance= is a path (str or os.PathLike), not int 2"),
    (lambda s, p, r: r.dump(5), "Report.dump: directory= is a path (str or os.PathLike), not int 5"),
    (lambda s, p, r: s.sweep(5, horizon=1), "serq.sweep: program= is a path (str or os.PathLike), not int 5"),
    (lambda s, p, r: s.read_table(5), "serq.read_table: path= is a path (str or os.PathLike), not int 5"),
    (lambda s, p, r: s.plot.table(5, x="a", y="b"),
     "serq.plot.table: source= is a table's path, a Sweep, a DataFrame or (columns, rows), not int 5"),
    (lambda s, p, r: s.plot.samples(None), "serq.plot.samples: source= is a dump file's path, a list of numbers "
                                           "or Samples, or a dict of them, not NoneType None"),
    (lambda s, p, r: s.plot.gauge(5),
     "serq.plot.gauge: source= is a dump file's path, a list of (time, value) or a dict of them, not int 5"),
    (lambda s, p, r: s.oracle.run(5), "serq.oracle.*: scenario= is a path (str or os.PathLike) or a dict, not int 5"),
    (lambda s, p, r: s.oracle.run([1, 2]),
     "serq.oracle.*: scenario= is a path (str or os.PathLike) or a dict, not list [1, 2]"),
], ids=["instance", "dump", "sweep", "read_table", "plot_table", "samples", "gauge", "oracle", "oracle_list"])
def test_a_public_function_names_the_argument_of_the_wrong_type(call, want):
    """Bare TypeErrors from inside serq; serq.load(prog, instance=2) took the
    integer for a file descriptor and closed stderr."""
    import os
    import serq
    from serq.args import ArgumentTypeError
    prog = serq.load(MG1)
    rep = prog.run(horizon=5)
    with pytest.raises(ArgumentTypeError) as e:
        call(serq, prog, rep)
    assert isinstance(e.value, TypeError) and e.value.render() == f"error[E970]: {want}"
    os.fstat(2)        # stderr still open


def test_a_horizon_beyond_a_float_is_a_usage_error():
    import serq
    assert _err(lambda: serq.load(MG1).run(horizon=10 ** 400)) == (
        "error[E970]: Program.run: horizon= is beyond what a float holds (about 1.8e308)\n"
        "  = help: give inf for no bound")


def test_a_binary_program_is_not_utf8_from_python_too(tmp_path):
    import serq
    path = _json_file(tmp_path, "b.sq", raw=b"\xff\xfe\x00")
    assert _err(lambda: serq.load(path)).split("\n")[0] == (
        f"{path}:1:1: error[E002]: the file is not UTF-8 text: byte 0xff does not decode")


def test_seeds_and_bins_beyond_their_bounds_are_refused_at_once():
    """--seeds 1-100000 spent 40 s in a quadratic check; 1-10^12 raised
    MemoryError; --bins had no bound."""
    import serq
    from serq.sweeps.grid import parse_seeds
    assert len(parse_seeds("1-100000")) == 100000      # (in a linear pass: 0.04 s, it was 40 s)
    assert _err(lambda: parse_seeds("1-1000000000000")) == (
        "error[E970]: --seeds 1-1000000000000: more than 1,000,000 seeds, the most runs a sweep makes\n"
        "  = help: a sweep holds one row per run; give fewer seeds")
    assert _err(lambda: serq.plot.samples([1.0, 2.0], bins=10 ** 9)) == (
        "error[E973]: bins=1000000000: a histogram has from 1 to 10000 bins")


MG1 = "examples/single-turn/mg1.sq"


def test_a_vllm_log_of_a_far_step_is_compared_at_once():
    """A log entry at step 10^9 (a vLLM output given to compare with) walked
    every step up to it: found by the oracle inputs' fuzzer (a timeout)."""
    import serq
    with open("tools/oracle/scenarios/alone.log.json", encoding="utf-8") as f:
        out = json.load(f)
    out["log"][2]["step"] = 10 ** 9           # step 2's record (it scheduled tokens) said to be far away
    c = serq.oracle.compare("tools/oracle/scenarios/alone.json", vllm=out)
    assert not c.agree and str(c).split("\n")[0] == "first divergence at step 2:"


def test_a_table_whose_input_no_axis_holds_leaves_those_rows_out(tmp_path):
    """An x of 400 digits: matplotlib's OverflowError (found by the tables'
    fuzzer)."""
    pytest.importorskip("matplotlib")
    import serq
    path = tmp_path / "t.csv"
    path.write_text("Lambda,seed,run.end,sojourn.mean\n0.5,1,10.0,1.5\n" + "1" * 400 + ",1,10.0,2.5\n")
    fig = serq.plot.table(str(path), x="Lambda", y="sojourn.mean")
    assert fig.axes[0].get_title() == (
        "sojourn.mean against Lambda: mean and range over 1 seed (1 value not finite or beyond ±1e306 left out)")
    assert [list(l.get_xdata()) for l in fig.axes[0].get_lines()] == [[0.5]]


# -- found after the merge of deploy and sglang (seed 24, and CI's numeric run) ----

def test_a_family_sized_zero_by_an_input_is_refused_where_it_is_declared():
    """`--set ND=0` (a family's size is an input since deploy): the queue was
    never declared, and the first entry reading `D.x` raised KeyError in the
    linker (found by the numeric fuzzer: `2` -> 0 in llmd_nixl_pull.sq)."""
    from serq.link import compile_file as link
    with pytest.raises(SerqError) as e:
        link("examples/pd-disaggregation/llmd_nixl_pull.sq", sets={"ND": "0"})
    assert e.value.render() == (
        "examples/pd-disaggregation/llmd_nixl_pull.sq:115:19: error[E403]: the candidates of `choose` are a whole "
        "number ≥ 1, not 0\n"
        "    |\n"
        "115 |       choose j in ND by (-(2 * prefix_share(cachedin(D[j].kv), prompt) + queue_score_D(j)), "
        "~uniform(0, 1));\n"
        "    |                   ^^\n"
        "  = note: in entry `gw.route`, used at examples/pd-disaggregation/llmd_nixl_pull.sq:272:12\n"
        "  = help: `choose j in n by (…);` sets `j` to one of 0 … n − 1\n"
        "\n"
        "examples/pd-disaggregation/llmd_nixl_pull.sq:169:11: error[E403]: the size of queue `D` is a whole "
        "number ≥ 1, not 0\n"
        "    |\n"
        "169 |   queue D[ND] : decode {\n"
        "    |           ^^\n"
        "\n"
        "error: 2 errors")


def test_an_ir_without_a_numbers_input_name_is_the_same_program():
    """A number's `input` (deploy's, the name calibration fits) removed from
    the IR: the same program, which the type-changing mutator counted as past
    the validator; it runs, and reports as the canonical IR does."""
    d = ir.to_data(compile_file("examples/oracle/vllm_request_priority.sq", horizon=10))
    text = json.dumps(d)
    assert '"input": "' in text
    bare = json.loads(text.replace('"input": "', '"input_": "'))

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "input_"}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    p, q = ir.loads(text, "a.ir.json"), ir.loads(json.dumps(strip(bare)), "b.ir.json")
    ir.validate(q)
    assert p == q and ir.dumps(p) != ir.dumps(q)
    assert simulate(q).text() == simulate(p).text()


def test_a_queue_whose_size_does_not_link_is_still_read_by_name():
    """`queue P[NP]` with NP unknown (its `use "std/args";` deleted, found by
    the source fuzzer in llmd_nixl_pull.sq): the queue was never declared and
    `P.c` raised KeyError in the linker."""
    from tests.test_queue_errors import BASE
    src = BASE.replace("queue P[2] : prefill", "queue P[NP] : prefill").replace(
        "server { set i = 0;", "server { set i = 0; set w = P.c;")
    assert _err(lambda: compile_source(src, "t.sq", horizon=10)) == (
        "t.sq:3:11: error[E201]: unknown name `NP`\n"
        "  |\n"
        "3 |   queue P[NP] : prefill {\n"
        "  |           ^^\n"
        "  = help: did you mean `P`?\n"
        "\n"
        "t.sq:21:31: error[E201]: queue `P` sets or marks no `c`\n"
        "   |\n"
        "21 |   server { set i = 0; set w = P.c; P[i].prefill (n); D.decode (n) from P[i]; }\n"
        "   |                               ^^^\n"
        "  = help: `mark c;` in one of `P`'s entries is read afterwards as `P.c`\n"
        "\n"
        "error: 2 errors")


# -- issue 24: signals at a drawn moment (tests/fuzz/interrupts.py, seeds 1 and 2) ---

def _wait_for_it(seconds: float = 2.0) -> None:
    """Python code running while a signal sent to this process arrives."""
    import time
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(0.005)


def test_ctrl_c_while_serqs_entry_imports_its_handling_is_said_as_one():
    """An exec'd `serq sweep` sent SIGINT 30 ms into its life (seed 1 #123):
    a KeyboardInterrupt traceback from `from .signals import entry`, the
    first line of serq/__main__.py, before the handling is in place."""
    from tests.helpers import python
    r = python("import builtins\n"
               "real = builtins.__import__\n"
               "def imp(name, *a, **kw):\n"
               "    if name == 'signals' and a[3:4] == (1,):\n"
               "        raise KeyboardInterrupt\n"
               "    return real(name, *a, **kw)\n"
               "import serq.__main__ as m\n"
               "builtins.__import__ = imp\n"
               "m.main()\n")
    assert (r.returncode, r.stdout, r.stderr) == (130, "", "interrupted\n")


def test_a_signal_python_drops_inside_a_callback_is_raised_again(capfd):
    """A SIGINT as serq imports what it runs (seed 1, found by replaying #24
    at other moments): its KeyboardInterrupt raised inside the import
    system's weak reference callback (`_get_module_lock.<locals>.cb`), which
    Python drops ("Exception ignored in: …"); the sweep went on to its end
    with every signal ignored.  SIGTERM in a `serq run` likewise (seed 2
    #300).  The signal is sent again, and raised where the program is next."""
    import os
    import signal
    import weakref
    from serq import signals

    class Thing:
        pass

    def callback(ref):
        os.kill(os.getpid(), signal.SIGTERM)
        _wait_for_it(0.05)                  # its exception is raised here, and dropped

    with pytest.raises(signals.Stopped) as e:
        with signals.stopping():
            thing = Thing()
            ref = weakref.ref(thing, callback)
            del thing
            _wait_for_it()
    assert e.value.signum == signal.SIGTERM and ref() is None
    assert capfd.readouterr().err == ""


def test_a_signal_while_a_parquet_table_is_made_stops_the_sweep(tmp_path, monkeypatch):
    """SIGTERM to a pool sweep writing `t.parquet` (seed 2 #39, #81, #227: a
    signal lost): the whole of the table's writing held signals, and making
    a Parquet table takes its while (0.7 s on a loaded machine), so the
    sweep finished, exit 0, as if not sent.  Only the rename that puts the
    table in its place holds them now: the sweep stops, the earlier table
    as it was."""
    pytest.importorskip("pyarrow")
    import os
    import signal
    from click.testing import CliRunner
    from serq.cli import main
    from serq.tables import table as T
    out = tmp_path / "t.parquet"
    args = ["sweep", "examples/single-turn/mg1.sq", "--set", "lambda=0.5", "--seeds", "1-2", "--horizon", "20",
            "--warmup", "0", "--jobs", "1", "--out", str(out)]
    assert CliRunner().invoke(main, args + ["--set", "S=0.5"]).exit_code == 0
    earlier = out.read_bytes()
    real = T._arrow_column

    def signalled(pa, values):
        os.kill(os.getpid(), signal.SIGTERM)
        _wait_for_it(0.1)
        return real(pa, values)
    monkeypatch.setattr(T, "_arrow_column", signalled)
    r = CliRunner().invoke(main, args)
    assert (r.exit_code, r.stdout, r.stderr) == (143, "", "stopped by SIGTERM\n")
    assert out.read_bytes() == earlier and os.listdir(tmp_path) == ["t.parquet"]


def test_a_dask_sweep_beside_another_cluster_says_nothing_of_its_port(tmp_path):
    """`serq sweep --dask local` while another program holds port 8787 (seed 1
    #69, #83, #102, #138): distributed's scheduler took 8787 for its HTTP
    routes though the dashboard is off, and warned `UserWarning: Port 8787
    is already in use. Perhaps you already have a cluster running? Hosting
    the HTTP server on port … instead`.  It takes a free port now."""
    pytest.importorskip("distributed")
    import re
    import socket
    import subprocess
    import sys
    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 8787))
        held.listen()
    except OSError:
        pass                                 # (another program has it: as the finding's machine had)
    try:
        r = subprocess.run([sys.executable, "-m", "serq.cli", "sweep", "examples/single-turn/mg1.sq", "--set",
                            "lambda=0.5", "--seeds", "1-2", "--horizon", "20", "--warmup", "0", "--jobs", "2",
                            "--dask", "local", "--out", str(tmp_path / "t.csv")], capture_output=True, text=True,
                           timeout=300)
    finally:
        held.close()
    assert r.returncode == 0
    assert re.fullmatch(r"sweep: 1 point × 2 seeds = 2 runs in \d+\.\d s \(dask local\); table \S+/t\.csv\n",
                        r.stderr), r.stderr


def test_a_dask_workers_own_log_is_not_said(capfd):
    """A worker's heartbeat racing its close as a stopped sweep closed its
    cluster (seed 1 #37, #46, #134) logged `Failed to communicate with
    scheduler during heartbeat.` with a `CommClosedError` traceback on the
    sweep's stderr: distributed's log, at ERROR, is not the user's to read
    (what fails reaches the sweep through its futures)."""
    distributed = pytest.importorskip("distributed")
    import logging
    from serq.sweeps import backends
    client, close = backends._client(distributed, "local", 1)
    try:
        said = client.run(lambda: logging.getLogger("distributed.worker").error(
            "Failed to communicate with scheduler during heartbeat.") or "logged")
    finally:
        close()
    assert list(said.values()) == ["logged"]
    assert capfd.readouterr().err == ""


def test_two_signals_at_once_say_nothing_of_a_race():
    """SIGTERM then SIGINT to a `serq run`'s group 29 ms apart, both caught
    before Python handled either (seed 3 #128): the first one's handler set
    the others to SIG_IGN, and Python said of the one still to handle
    `OSError: Signal 15 ignored due to race condition`, with a traceback.
    The first stops the command; the other is dropped, silently.  (In a
    process of its own, with one thread: both signals wait, blocked, and
    are taken at once; a test must not leave its own process's signals
    blocked either.)"""
    from tests.helpers import python
    r = python("import os, signal, sys, time\n"
               "sys.unraisablehook = lambda u: print('said:', u.exc_type.__name__, u.exc_value)\n"
               "from serq import signals\n"
               "try:\n"
               "    with signals.stopping():\n"
               "        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})\n"
               "        os.kill(os.getpid(), signal.SIGTERM)\n"
               "        os.kill(os.getpid(), signal.SIGINT)\n"
               "        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})\n"
               "        time.sleep(1)\n"
               "except KeyboardInterrupt:\n"
               "    time.sleep(0.2)\n"
               "    print('stopped')\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "stopped\n", "")


def test_a_signal_while_a_class_is_made_is_the_signals(monkeypatch):
    """SIGHUP, then SIGINT, to a pool sweep's group (seed 24 #154) as serq
    imported serq/instance.py: the signal's exception, raised inside a
    dataclass field's `__set_name__`, came out of the class statement as
    Python 3.11 wraps it, `RuntimeError: Error calling __set_name__ on
    'Field' instance 'settings' in 'Instance'`, and the sweep said
    `internal error: …` (exit 3).  It is the signal's: exit 129."""
    import os
    import signal
    from click.testing import CliRunner
    import serq.sim
    from serq.cli import main

    def simulate(*a, **kw):
        class Named:
            def __set_name__(self, owner, name):
                os.kill(os.getpid(), signal.SIGHUP)
                _wait_for_it(0.2)           # the signal's exception is raised here

        class Owner:
            field = Named()
        return None
    monkeypatch.setattr(serq.sim, "simulate", simulate)
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)        # (heard, were the tests run under nohup)
    try:
        r = CliRunner().invoke(main, ["run", "examples/single-turn/mg1.sq", "--horizon", "10", "--warmup", "0"])
    finally:
        signal.signal(signal.SIGHUP, old)
    assert (r.exit_code, r.stdout, r.stderr) == (129, "", "stopped by SIGHUP\n")


def test_a_signal_ignored_under_nohup_does_not_hide_a_later_one():
    """A Dask sweep started under nohup, sent SIGTERM as its cluster started
    (and later SIGHUP; seed 24 #5296, #5316): both waited, blocked, for the
    cluster to be whole, and were then taken in the order of their numbers,
    SIGHUP first; the section kept that one, which nohup ignores, and the
    SIGTERM was lost: the sweep ran to its end (exit 0, its table
    written).  A section keeps only a signal its command would act on."""
    from tests.helpers import python
    r = python("import os, signal\n"
               "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
               "from serq import signals\n"
               "try:\n"
               "    with signals.stopping():\n"
               "        with signals.deferred() as held:\n"
               "            os.kill(os.getpid(), signal.SIGTERM)\n"
               "            os.kill(os.getpid(), signal.SIGHUP)\n"
               "        held.release()\n"
               "        print('went on')\n"
               "except signals.Stopped as e:\n"
               "    print('stopped by', e.name)\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "stopped by SIGTERM\n", "")


def test_a_sweeps_bound_beyond_a_float_is_refused():
    """`sw.under("sojourn.mean", 10 ** 400)` (the API surface, seed 24 #5571):
    `OverflowError: int too large to convert to float` in serq/sweeps."""
    import serq
    sw = serq.sweep("examples/single-turn/mg1.sq", set={"lambda": [0.5]}, seeds=[1], horizon=5.0, warmup=0.0,
                    jobs=1)
    for call in (lambda: sw.under("sojourn.mean", 10 ** 400), lambda: sw.text(under=[("sojourn.mean", 10 ** 400)])):
        assert _err(call) == ("error[E970]: Sweep.under: bound= is beyond what a float holds (about 1.8e308)\n"
                              "  = help: give inf for no bound")
    assert sw.under("sojourn.mean", 10 ** 300)[0]["bound"] == 1e300


def _stopped_writing(tmp_path, make: str) -> None:
    """A table (``mkstemp``) or a dump (``mkdtemp``) written under
    :func:`signals.stopping`, which a SIGTERM the test sends stops."""
    from serq import files, signals
    with pytest.raises(signals.Stopped):
        with signals.stopping():
            if make == "mkstemp":
                files.write_file(str(tmp_path / "t.csv"), "a\n", what="--out ", mark=files.unmarked("test"))
            else:
                files.write_tree(str(tmp_path / "d"), [("x.txt", "1\n")], what="--dump ", command="test")


@pytest.mark.parametrize("make", ["mkstemp", "mkdtemp"])
def test_a_signal_as_a_temporary_file_is_made_leaves_none(tmp_path, monkeypatch, make):
    """SIGTERM to a one-process sweep as its table's temporary file was made
    (seed 25 #6618): raised between mkstemp's return and the block that
    removes it, it left `.t.csv.XXXXXXXX.serq` beside the table.  A run's
    dump (mkdtemp) likewise.  The signal is held while the file is made."""
    import os
    import signal
    import tempfile
    real = getattr(tempfile, make)

    def signalled(*a, **k):
        made = real(*a, **k)
        os.kill(os.getpid(), signal.SIGTERM)
        _wait_for_it(0.1)
        return made
    monkeypatch.setattr(tempfile, make, signalled)
    _stopped_writing(tmp_path, make)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("make", ["mkstemp", "mkdtemp"])
def test_a_signal_as_the_section_making_a_temporary_file_ends_leaves_none(tmp_path, monkeypatch, make):
    """SIGTERM to a pool sweep at 0.998 of its life (seed 32 #1465): it came
    as the section that made the table's temporary file put its handlers
    back, was raised there, at the section's `with`, before the block that
    removes the file began, and left `.t.csv.XXXXXXXX.serq` beside the
    table.  The file's name is now the cleanup's from the moment it is
    made."""
    import os
    import signal
    from serq import signals
    real = signals.deferred.__exit__
    sent = []

    def exit_then_signal(self, *a):
        out = real(self, *a)
        if not sent and any(n.endswith(".serq") for n in os.listdir(tmp_path)):
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_it(0.1)
        return out
    monkeypatch.setattr(signals.deferred, "__exit__", exit_then_signal)
    _stopped_writing(tmp_path, make)
    assert sent and os.listdir(tmp_path) == []


def test_a_signal_as_a_pool_shuts_down_at_a_sweeps_end_leaves_its_threads_joined(monkeypatch):
    """SIGHUP to a pool sweep at 0.969 of its life (seed 31 #1362, exec'd):
    raised in the pool's shutdown at the sweep's end, it left the pool's
    manager thread closing its wake-up pipe as the command exited, and
    Python 3.11's exit, which wakes that thread through the pipe without a
    lock, wrote to the closed pipe: "Exception ignored in: <module
    'threading'>", a traceback ending in "OSError: [Errno 9] Bad file
    descriptor", after "stopped by SIGHUP".  The shutdown now runs whole,
    its threads joined, before the signal stops the sweep."""
    import os
    import signal
    import threading
    from concurrent.futures import ProcessPoolExecutor
    import serq
    from serq import signals
    real = ProcessPoolExecutor.shutdown
    sent = []

    def signalled(self, *a, **k):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_it(0.1)
        return real(self, *a, **k)
    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", signalled)
    with pytest.raises(signals.Stopped):
        with signals.stopping():
            serq.sweep("examples/single-turn/mg1.sq", set={"lambda": [0.5, 0.7]}, seeds=[1], horizon=50.0,
                       warmup=0.0, jobs=2)
    assert sent
    assert [t for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread"] == []


def test_a_signal_as_numpy_is_imported_is_said_as_the_signal_alone():
    """SIGTERM to an exec'd `serq run` as it imported numpy, at its 65th
    session (seed 25 #5142): the signal's exception, raised where numpy's
    C extension `_umath_linalg`, as its init ran, imported numpy's core
    (numpy's C API, `import_array`), was printed there — a bare traceback
    from `_lock_unlock_module` into `signals._raise` — and an ImportError
    raised in its stead (an `except ImportError` would have lost the
    signal).  A package of C extensions is now imported with the signals
    held; the signal then stops the command, one line said.  (The trigger
    is the first import lock numpy asks for once `_umath_linalg` is in
    sys.modules: its init's; it says `sent` so the test cannot pass
    without it.)"""
    from tests.helpers import python
    r = python("import os, signal, sys, _frozen_importlib as B\n"
               "real = B._lock_unlock_module\n"
               "def lock_unlock(name):\n"
               "    if 'numpy.linalg._umath_linalg' in sys.modules and B._lock_unlock_module is lock_unlock:\n"
               "        B._lock_unlock_module = real\n"
               "        os.write(1, b'sent\\n')\n"
               "        os.kill(os.getpid(), signal.SIGTERM)\n"
               "    return real(name)\n"
               "B._lock_unlock_module = lock_unlock\n"
               "sys.argv = ['serq', 'run', 'examples/single-turn/mg1.sq', '--horizon', '300', '--warmup', '0']\n"
               "from serq.__main__ import main\n"
               "main()\n")
    assert (r.returncode, r.stdout, r.stderr) == (143, "sent\n", "stopped by SIGTERM\n")


@pytest.mark.parametrize("making", ["eq", "init"])
def test_a_signal_as_a_lazy_class_is_made_leaves_it_whole_and_is_heard(making):
    """The segmentation faults (seed 25 #586, #5245, seed 26 #1281, #2263;
    reproduced with the signal fuzzer's harness: a SIGINT then a SIGTERM to
    a forked `serq run` as it linked, faulthandler's stack 8 875 frames of
    `records.py:56 in __get__`): a signal's exception raised as a lazy
    dataclass (serq/records.py) made its `__eq__` on its first `==` left
    the class half made, and `==`, which looks `__eq__` up from C, dropped
    the exception and compared identities: the signal was lost, and the next
    `==` called the stand-in left in place, which called itself until the C
    stack (8 MB, under a recursion limit of 20 000) overflowed.  A class is
    now made whole or not at all, the signal waiting for it and then raised
    where Python passes it on (`eq`; `init`: interrupted as `__init__` was
    made, the class was left without one)."""
    from tests.helpers import python
    r = python("import dataclasses, os, signal, time\n"
               "from serq import records, signals\n"
               "@records.dataclass(frozen=True)\n"
               "class Pair:\n"
               "    a: int\n"
               "    b: int\n"
               f"name = {'_twin' if making == 'eq' else 'dataclass'!r}\n"
               "where = records if name == '_twin' else dataclasses\n"
               "real = getattr(where, name)\n"
               "def signalled(*a, **k):\n"
               "    setattr(where, name, real)\n"
               "    os.kill(os.getpid(), signal.SIGTERM)\n"
               "    t0 = time.monotonic()\n"
               "    while time.monotonic() - t0 < 0.2:       # its exception raised here, once\n"
               "        time.sleep(0.005)\n"
               "    return real(*a, **k)\n"
               "x = Pair(1, 2) if name == '_twin' else None\n"
               "setattr(where, name, signalled)\n"
               "try:\n"
               "    with signals.stopping():\n"
               "        print(x == Pair(1, 2) if name == '_twin' else Pair(1, 2))\n"
               "    print('went on')\n"
               "except signals.Stopped as e:\n"
               "    print('stopped by', e.name)\n"
               "x, y = Pair(1, 2), Pair(1, 2)\n"
               "print(x == y, hash(x) == hash(y), repr(x))\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "stopped by SIGTERM\nTrue True Pair(a=1, b=2)\n", "")


# where the signal is sent: (the object, its method patched, which of its calls)
WINDOWS = {"before invoke": ("from serq.cli import _Group as owner", "invoke", "True"),
           "as click closes": ("from click.core import Context as owner", "close", "a[0].parent is None")}


@pytest.mark.parametrize("window", list(WINDOWS))
def test_a_signal_in_clicks_own_lines_is_said_as_the_signal(window):
    """A Ctrl-C at moment 0 of a forked `serq run` (seed 28 #420): raised in
    click's `main` outside the `serq` group's make_context and invoke (each
    under serq's handling), where click catches it, says `Aborted!` and exits
    1.  A signal there now waits, and is raised as serq's next block starts
    (`before invoke`: interrupted, 130), or as click's `main` ends (`as
    click closes` the command's context: its output written, 143)."""
    import signal
    from tests.helpers import python
    owner, name, which = WINDOWS[window]
    sig = signal.SIGINT if window == "before invoke" else signal.SIGTERM
    r = python("import os, sys, time\n"
               f"{owner}\n"
               f"real = owner.{name}\n"
               "def signalled(*a, **k):\n"
               f"    if {which}:\n"
               f"        os.kill(os.getpid(), {int(sig)})\n"
               "        t0 = time.monotonic()\n"
               "        while time.monotonic() - t0 < 0.2:     # its exception raised here, in click's lines\n"
               "            time.sleep(0.005)\n"
               "    return real(*a, **k)\n"
               f"owner.{name} = signalled\n"
               "sys.argv = ['serq', 'check', 'examples/single-turn/mg1.sq']\n"
               "from serq.__main__ import main\n"
               "main()\n")
    if window == "before invoke":
        assert (r.returncode, r.stdout, r.stderr) == (130, "", "interrupted\n")
    else:
        assert (r.returncode, r.stdout.split("\n")[0], r.stderr) == \
            (143, "examples/single-turn/mg1.sq: ok", "stopped by SIGTERM\n")
