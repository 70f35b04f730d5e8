"""The grammar: every construct of §Syntax parses, and every node keeps its span."""

import pytest

from serq.diag import SerqError, Span
from serq.syntax import ast as A
from serq.syntax.parser import parse, parse_expr

FULL = r'''
use "std/args";
let top = 2;
def sq(x) { x * x }
def twice(x) = 2 * x;
fn main() {
  let a = args.number("a", 1e3);
  pool kv[2] { cap 100; block 16; evict by (age, -size); preempt by (position, -admission) requeue tail;
               queue by (waited, serial); reserve held; spill tier via link (size) when (size > 4); }
  pool tier { cap inf; evict lru; preempt none; queue fifo; }
  stage link : ps(min(present, 4));
  stage svc[3] : fifo(2);
  stage d : delay;
  device gpu[2] { compute (t) = t * 2; kv2 cap 64; }
  engine llm[2] on gpu {
    tokens cap 64;
    granule 8;
    schedule {
      let c = running.count > 1 ? 32 : inf;
      advance running only (decoding) by (remaining, -admission) each at most (c);
      admit waiting only (!decoding) while (batch.tokens < 64) each at most (c);
      branch (waiting.admitted > 0) { advance running decode first; } else { set r = 1; }
    }
    execute (1);
  }
  pool kv2 on gpu { }
  queue P[2] : prefill, decode {
    pool own { cap 4; }
    device mem { m cap 8; }
    engine on mem { tokens cap 8; schedule { exclusive prefill each at most (4); admit waiting; } execute (1); }
    pool m on P.mem { }
    serve ps(1) latency 0.5;
    nic ps(10);
    prefill (prompt) { run (cost(P, prompt)); mark done; }
    decode (prompt) from Q { run (cost(P, 1)); }
  }
  share maxmin;
  D pull P latency 0.1 share maxmin;
  P push D share (bottleneck);
  workload {
    arrive renewal(~h2(2, 4));
    trace "x.csv" ordered;
    hidden o, p;
    init { set K = 0; }
    turn { set o = ~erlang(2, 3); set p = ~uniform(1, 2) + ~det(1) + ~bernoulli(0.5); }
    session { turn; while (more) { tool (~exp(1)); tool[0] 2; tool on svc[1], d (3); turn; } end; }
  }
  server {
    Size q = 3;
    Cost w = cost(svc, 2);
    Cost r = { kv: 1, svc: 2 };
    set x = max j in 3 (used(kv[j % 1])) ;
  }
}
'''


def test_every_construct_parses():
    src = FULL.replace("kv[j % 1]", "kv[j]")
    prog = parse(src, "full.sq")
    kinds = [type(i).__name__ for i in prog.main.items]
    assert kinds == ["Let", "PoolDecl", "PoolDecl", "StageDecl", "StageDecl", "StageDecl", "DeviceDecl",
                     "EngineDecl", "PoolDecl", "QueueDecl", "ShareDecl", "Relation", "Relation",
                     "Workload", "Server"]
    assert [type(t).__name__ for t in prog.top] == ["Use", "Let", "Def", "Def"]


STMTS = r'''
use "std/args";
fn main() {
  server {
    turn;
    set a = 1;
    observe o = a ? 1 : 2;
    hold p (cost(p, 1)) reserve (cost(p, 2)), q (cost(q, 1)) reuse (cost(p, q, 0))
         at admission (k = 1, l = k + 1) { grow p (cost(p, 1)); load p (cost(p, 1)); release p; } cache (0) lease p (inf);
    drop p;
    run s prefill (cost(s, 1)) growing p;
    run s decode (1);
    run a, b (1);
    branch (a == 1) { end; } else { loop { join; } }
    branch with (0.5) { fork { set z = 1; } }
    choose j in 3 by (j, -j);
    mark m;
    D[0].decode (prompt) from P[1] to kv (3);
    vllm (a, b);
    transfer (5) from src to dst (10);
    transfer on e[0], i[1] (5) from src to dst (10);
    tool 3;
  }
}
'''


def test_every_statement_parses_and_keeps_its_span():
    prog = parse(STMTS, "s.sq")
    stmts = prog.main.items[0].block.stmts
    names = [type(s).__name__ for s in stmts]
    assert names == ["Turn", "Set", "Observe", "Hold", "Drop", "Run", "Run", "Run", "Branch", "Branch",
                     "Choose", "Mark", "CallStmt", "CallStmt", "Transfer", "Transfer", "Tool"]
    hold = stmts[3]
    assert [b.name for b in hold.admission] == ["k", "l"]
    assert hold.span.line == 8 and hold.span.col == 5 and hold.span.end_line == 9
    assert stmts[5].mode == "prefill" and stmts[5].growing is not None
    assert stmts[7].refs and len(stmts[7].refs) == 2
    assert stmts[9].draw is True


@pytest.mark.parametrize("text,expected", [
    ("1 + 2 * 3", "(+ 1 (* 2 3))"),
    ("-2 ^ 2", "(- (^ 2 2))"),
    ("a < b && c || !d", "(|| (&& (< a b) c) (! d))"),
    ("a ? b : c ? d : e", "(? a b (? c d e))"),
    ("running.count + kv[j].x", "(+ running.count kv[j].x)"),
    ("max j in 4 (f(j))", "(max j 4 (f j))"),
    ("~h2(1, 4)", "(~h2 1 4)"),
])
def test_expression_precedence(text, expected):
    assert _sexpr(parse_expr(text)) == expected


def _sexpr(e):
    if isinstance(e, A.Num):
        return str(int(e.value)) if e.value == int(e.value) else str(e.value)
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Dot):
        return f"{_sexpr(e.obj)}.{e.attr}"
    if isinstance(e, A.Index):
        return f"{_sexpr(e.obj)}[{_sexpr(e.index)}]"
    if isinstance(e, A.Binary):
        return f"({e.op} {_sexpr(e.lhs)} {_sexpr(e.rhs)})"
    if isinstance(e, A.Unary):
        return f"({e.op} {_sexpr(e.arg)})"
    if isinstance(e, A.Cond):
        return f"(? {_sexpr(e.cond)} {_sexpr(e.then)} {_sexpr(e.other)})"
    if isinstance(e, A.Call):
        return "(" + " ".join([_sexpr(e.fn)] + [_sexpr(a) for a in e.args]) + ")"
    if isinstance(e, A.Draw):
        return "(~" + " ".join([e.dist] + [_sexpr(a) for a in e.args]) + ")"
    if isinstance(e, A.Agg):
        return f"({e.kind} {e.var} {_sexpr(e.count)} {_sexpr(e.body)})"
    raise AssertionError(e)


def test_comments_are_ignored():
    prog = parse("// a\nfn main() { /* block\n comment */ let x = 1; // end\n}\n", "c.sq")
    assert prog.main.items[0].name == "x"


def test_spans_point_at_the_source():
    prog = parse("fn main() {\n  let abc = 1 + 2;\n}\n", "p.sq")
    let = prog.main.items[0]
    assert let.name_span == Span("p.sq", 2, 7, 2, 10)
    assert let.expr.span == Span("p.sq", 2, 13, 2, 18)


def test_a_program_without_main_is_a_syntax_error():
    with pytest.raises(SerqError) as info:
        parse("let x = 1;\n", "m.sq")
    assert info.value.diagnostics[0].render() == (
        "m.sq:1:11: error[E102]: expected `def`, `fn`, `let` or `use`, found end of input\n"
        "  |\n1 | let x = 1;\n  |           ^")


@pytest.mark.parametrize("text, where", [
    ("fn main() {\n  stage svc : fifo; /* the one stage\n}\n", (2, 21)),
    ("// a /* in a line comment is nothing\nfn main() {\n  let x = 2 /* half;\n}\n", (3, 13)),
])
def test_a_comment_never_closed_is_said_as_one(text, where):
    """It was said as the `/` the lexer read it as (`expected `}` or a
    name, found `/``)."""
    with pytest.raises(SerqError) as info:
        parse(text, "c.sq")
    line, col = where
    src = text.split("\n")[line - 1]
    assert info.value.render() == (
        f"c.sq:{line}:{col}: error[E101]: unterminated comment\n  |\n{line} | {src}\n  | {' ' * (col - 1)}^^\n"
        "  = help: a comment opened with `/*` is closed with `*/`")


def test_a_comment_opener_inside_a_string_or_a_closed_comment_is_not_one():
    with pytest.raises(SerqError) as info:
        parse('fn main() {\n  /* ok */ stage svc : fifo;\n  workload { trace "a/*b"; }\n  @\n}\n', "c.sq")
    assert info.value.render().startswith("c.sq:4:3: error[E101]: unexpected character `@`")


@pytest.mark.parametrize("ch, said, caret, help_", [
    ("\u200b", "U+200B (ZERO WIDTH SPACE)", "^", "delete it: it shows nothing"),
    ("\x0b", "U+000B", "^", "delete it: it shows nothing"),
    ("\u00a0", "U+00A0 (NO-BREAK SPACE)", "^", "write a plain space ` ` in its place"),
    ("\uff08", "`\uff08`", "^^", "did you mean `(`?"),            # a wide character: two columns
    ("\u201c", "`\u201c`", "^", 'a string is written between ASCII quotes, `"…"`'),
    ("\u00e9", "`\u00e9`", "^", "a name is ASCII letters, digits and `_` (a string may hold any character)"),
])
def test_a_character_serq_does_not_read_is_named_so_it_can_be_found(ch, said, caret, help_):
    """One that shows nothing was said as `` (a zero-width space, a control
    character); each now with what to write instead."""
    text = f"fn main() {{\n  stage{ch}svc : fifo;\n}}\n"
    with pytest.raises(SerqError) as info:
        parse(text, "c.sq")
    shown = "\u240b" if ch == "\x0b" else ch      # a control character is shown by its picture
    assert info.value.render() == (
        f"c.sq:2:8: error[E101]: unexpected character {said}\n  |\n2 |   stage{shown}svc : fifo;\n  |        {caret}\n"
        f"  = help: {help_}")


def test_a_line_shown_in_an_error_sends_no_control_character_to_the_terminal():
    """A file's line is shown with its control characters as their pictures
    (ESC would start a terminal's escape sequence, NUL and the others print
    as nothing or move the cursor), the C1 controls and the bidirectional
    overrides and isolates (which reorder what a terminal shows) as U+FFFD,
    a tab as a space: one column each, so the caret stays under its place.
    The line used to be printed as it was."""
    text = "fn main() {\n  let x\t= \"\x1b[2J\x00\x7f\x9b\u202e\u2066\"; @\n}\n"
    with pytest.raises(SerqError) as info:
        parse(text, "c.sq")
    assert info.value.render() == (
        "c.sq:2:24: error[E101]: unexpected character `@`\n  |\n"
        "2 |   let x = \"\u241b[2J\u2400\u2421\ufffd\ufffd\ufffd\"; @\n"
        "  |                        ^")
