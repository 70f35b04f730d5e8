"""The messages a new user meets first (issue 10), each pinned whole: a
statement without its `;` is named where it lacks it, `if`, `=` in a guard
and an assignment without `set` say what to write, a program without `fn
main()` says so, and what would silently do nothing is an error."""

import dataclasses

import pytest

from serq.diag import SerqError
from serq.link import compile_file, compile_source

CASES = {
    'missing_semicolon': ('fn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = ~exp(1); } }\n  server {\n    set t0 = now\n    run svc (cost(svc, s));\n  }\n}\n',
        't.sq:5:17: error[E102]: expected `;` at the end of this statement\n  |\n5 |     set t0 = now\n  |                 ^\n  = help: a statement ends with `;`'),
    'missing_semicolon_of_a_let': ('fn main() {\n  let a = 1\n  stage svc : fifo;\n}\n',
        't.sq:2:12: error[E102]: expected `;` at the end of this statement\n  |\n2 |   let a = 1\n  |            ^\n  = help: a statement ends with `;`'),
    'if': ('fn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = ~exp(1); } }\n  server {\n    if (s > 1) { run svc (cost(svc, s)); }\n  }\n}\n',
        't.sq:5:5: error[E102]: serQ has no `if`: a test is `branch (…) { … } else { … }`\n  |\n5 |     if (s > 1) { run svc (cost(svc, s)); }\n  |     ^^\n  = help: write `branch (s > 1) { … }`; a guard is 0 or 1'),
    'assignment_in_a_guard': ('fn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = ~exp(1); } }\n  server {\n    branch (s = 1) { run svc (cost(svc, s)); }\n  }\n}\n',
        't.sq:5:15: error[E102]: a test compares with `==`: `=` is only the assignment of `set x = …;`\n  |\n5 |     branch (s = 1) { run svc (cost(svc, s)); }\n  |               ^\n  = help: write `branch (s == 1)`; `!=`, `<`, `<=`, `>` and `>=` compare too'),
    'assignment_without_set': ('fn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = ~exp(1); } }\n  server {\n    x = now;\n    run svc (cost(svc, s));\n  }\n}\n',
        't.sq:5:7: error[E102]: an assignment is a `set` statement: `set x = …;`\n  |\n5 |     x = now;\n  |       ^\n  = help: write `set x = …;` (a constant of main is `let x = …;`)'),
    'no_main': ('stage svc : fifo;\nworkload { arrive poisson(1); }\nserver { run svc (cost(svc, 1)); }\n',
        't.sq:1:1: error[E104]: `stage` is declared inside `fn main() { … }`, and this program has no `main`\n  |\n1 | stage svc : fifo;\n  | ^^^^^\n  = help: the deployment and its workload are the body of `fn main() { … }`; only `let`, `def` and `use` stand above it'),
    'prefill_in_a_server': ('fn main() {\n  device gpu { kv cap 100; }\n  engine llm on gpu {\n    reqs cap 4;\n    tokens cap 8;\n    schedule { advance running; admit waiting while (running.preempted == 0); }\n    execute (1);\n  }\n  pool kv on gpu { }\n  pool reqs on llm { queue fifo; }\n  workload { arrive poisson(1); }\n  server { prefill (4); }\n}\n',
        "t.sq:12:12: error[E111]: `prefill (…)` is a statement of an engine's request\n   |\n12 |   server { prefill (4); }\n   |            ^^^^^^^^^^^^\n  = help: in a server, the run names the engine: `run llm prefill (cost(llm, …));`"),
    'empty_main': ('fn main() {}\n',
        't.sq:1:1: error[E104]: `fn main()` is empty: there is nothing to check, draw or run\n  |\n1 | fn main() {}\n  | ^^^^^^^^^^^^\n  = help: main declares the deployment (pools, stages, engines) and its workload (`workload { arrive …; }`) with a `server { … }`'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_hour_message(name):
    src, want = CASES[name]
    with pytest.raises(SerqError) as info:
        compile_source(src, "t.sq", horizon=10)
    assert info.value.render() == want


def test_a_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "mg1.sq"
    text = open("examples/single-turn/mg1.sq", encoding="utf-8").read()
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    with_bom = compile_file(str(path), horizon=10)
    plain = compile_file("examples/single-turn/mg1.sq", horizon=10)
    assert dataclasses.replace(with_bom, files=plain.files) == plain
    assert compile_source("\ufeff" + text, "examples/single-turn/mg1.sq", horizon=10) == plain


def _mg1_err(**kw) -> str:
    with pytest.raises(SerqError) as info:
        compile_file("examples/single-turn/mg1.sq", horizon=10, **kw)
    return info.value.render()


def test_an_input_value_that_does_not_parse_is_the_only_error():
    """Not also `unknown name `lambda`` at each place the input is read."""
    assert _mg1_err(sets={"lambda": "1 +"}) == (
        "--set lambda:1:4: error[E102]: expected an expression, found end of input\n"
        "  |\n"
        "1 | 1 +\n"
        "  |    ^")
    assert _mg1_err(sets={"lambda": "abc"}) == (
        "--set lambda:1:1: error[E201]: unknown name `abc`\n"
        "  |\n"
        "1 | abc\n"
        "  | ^^^")


def test_a_trace_given_to_a_program_without_one_is_refused():
    assert _mg1_err(trace="examples/replay/data/short.csv") == (
        "examples/single-turn/mg1.sq:15:3: error[E234]: --trace examples/replay/data/short.csv: the program "
        "replays no trace, so there is none to replace\n"
        "   |\n"
        "15 |   workload {\n"
        "   |   ^^^^^^^^^^\n"
        "  = help: a workload replays one with `trace \"file.csv\";`")
