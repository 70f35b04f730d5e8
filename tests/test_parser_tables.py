"""The parser's tables (serq/syntax/grammar.tables) and serQ's driver that
runs them (serq.syntax.lalr): the grammar's tables, the same bytes from any
run, read by every command without lark, and the same parser as lark's —
every tree and every error — on every program in the repository and on
mutants of them (tests/lark_reference.py; the fuzz kind ``parser`` runs
many more)."""

from __future__ import annotations

import glob
import json
import os
import random
import re
import subprocess
import sys

import lark
import pytest

from serq.diag import SerqError
from serq.syntax import lalr, parser, tables as T

from . import lark_reference as R

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def programs() -> list:
    """Every .sq file of the repository: examples, libraries, tests, the standard library."""
    out = []
    for top in ("examples", "serq", "tests", "tools"):
        out += glob.glob(os.path.join(ROOT, top, "**", "*.sq"), recursive=True)
    return sorted(out)


def test_the_committed_tables_are_the_grammars():
    with open(T.TABLES, "rb") as f:
        head = f.readline()
    assert head == T.header(T.read_grammar(), lark.__version__), \
        "serq/syntax/grammar.tables is stale: run tools/gen_parser.py"
    assert T.read(T.read_grammar()) == json.loads(T.body(T.build(T.read_grammar())))


@pytest.mark.parametrize("seed", ["0", "4242"])
def test_make_check_holds_them_current_whatever_the_hash_seed(seed):
    """Their states are numbered canonically and every list is sorted, so
    lark's sets iterated in another order give the same bytes."""
    env = dict(os.environ, PYTHONHASHSEED=seed)
    r = subprocess.run([sys.executable, "tools/gen_parser.py", "--check"], cwd=ROOT,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "parser tables: current"


def test_check_says_stale_tables(tmp_path, monkeypatch):
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_parser", os.path.join(ROOT, "tools", "gen_parser.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    stale = tmp_path / "grammar.tables"
    good = open(T.TABLES, "rb").read()
    monkeypatch.setattr(T, "TABLES", str(stale))
    stale.write_bytes(good.replace(b'"ignore": ["BLOCK_COMMENT", "COMMENT", "WS"]', b'"ignore": ["COMMENT", "WS"]'))
    assert gen.main(["--check"]) == 1
    stale.write_bytes(T.header(T.read_grammar() + b"// edited\n", lark.__version__) + good.split(b"\n", 1)[1])
    assert gen.main(["--check"]) == 1
    stale.unlink()
    assert gen.main(["--check"]) == 1


def test_tables_of_another_grammar_are_not_used_but_built(tmp_path, monkeypatch):
    grammar = T.read_grammar()
    assert T.read(grammar + b"\n// edited\n") is None
    built = json.loads(T.body(T.build(grammar)))
    for content in (None, T.header(grammar, lark.__version__) + b"not json",
                    T.header(grammar + b" ", lark.__version__) + T.body(T.build(grammar))):
        path = tmp_path / "g.tables"
        if content is not None:
            path.write_bytes(content)
        monkeypatch.setattr(T, "TABLES", str(path))
        assert T.read(grammar) is None
        assert T.load() == built


def test_a_command_never_imports_lark():
    code = ("import sys; from serq.cli import main; sys.argv = ['serq', 'check', 'examples/single-turn/mg1.sq']\n"
            "try: main()\nexcept SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('lark', 'pickle', 'hashlib')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]" and "ok" in r.stdout


ODD = ("@", "#", "$", "`", "'", "\\", '"', "/*", "*/", "//", "\u00e9", "\u03bb", "\x00", "\u00a0", "1e", ".5.")


def _mutants(src: str, rng: random.Random) -> list:
    """The text, four one-character deletions, two cuts, three of its words
    and two odd characters put in."""
    words = re.findall(r"[A-Za-z_]+|\S", src) or ["x"]
    out = [src]
    out += [src[:k] + src[k + 1:] for k in (rng.randrange(len(src)) for _ in range(4))]
    out += [src[:rng.randrange(len(src))] for _ in range(2)]
    for word in [rng.choice(words) for _ in range(3)] + [rng.choice(ODD) for _ in range(2)]:
        k = rng.randrange(len(src))
        out.append(src[:k] + " " + word + " " + src[k:])
    return out


def test_the_driver_parses_as_lark_does_trees_and_errors():
    rng = random.Random(22)
    files = programs()
    assert len(files) > 60
    n = outcomes = 0
    kinds = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        for text in _mutants(src, rng):
            for start in T.START:
                a, b = R.by_lark(text, start), R.by_driver(text, start)
                assert a == b, (path, start, text)
                kinds.add(a[0])
                n += 1
    assert n > 3000
    assert kinds == {"tree", "unexpected token", "unexpected character"}


@pytest.mark.parametrize("text", [
    "", "   \n// only a comment\n", "/* unclosed", "fn main() { let x = 1 @ 2; }", "fn main() { let s = \"x\n\"; }",
    "fn main() {\n  stage s : fifo;\n  workload { arrive poisson(1); }\n  server { run s (1e); }\n}\n",
    "fn main() { 𝛌 }", "let x = (((1)));", "def f(a, b) = a ? b : -a;", "use \"lib/x.sq\";",
    "fn main() { pool kv { cap 10 } }", "fn main() { workload { arrive poisson(1); } server { if (x) { } } }",
    "fn main() { stage s : fifo(1); server { set x = ; } }", 'fn main() { use "x }',
    "fn main() { pool p { cap 1; } server { hold p (1) { run s (1) } } }", "let x = 1",
    "\ufeff", "1e308e3", "run { lambda 0.5; B 2 * 2048; }", "a.b.c[1 + 2]",
])
def test_the_driver_and_lark_on_edge_cases(text):
    assert R.differences(text) == []


def test_the_comparison_sees_a_place_wrong():
    """A tree whose node ends one column early is a difference."""
    text = "fn main() { let x = (1 + 2) * 3; }"
    tree = R.driver().parse(text, "start")
    a = R.shape(tree)
    node = tree
    while node.children and isinstance(node.children[-1], lalr.Tree):
        node = node.children[-1]
    node.meta.end_column -= 1
    assert R.shape(tree) != a


def test_every_terminal_begins_with_one_of_its_first_characters():
    """The driver tries at a position only the terminals whose first
    characters (the tables') hold the character there: every match of a
    terminal at every position of every program, and of odd texts, begins
    with one of them."""
    terminals = R.driver().terminals
    texts = [open(p, encoding="utf-8").read() for p in programs()]
    texts += ["é 𝛌 \u00a0 ٣ ½ \x00 \t\r\x0c", "".join(chr(c) for c in range(1, 0x250))]
    tried = 0
    for t in terminals:
        rx = re.compile(t.regexp)
        for text in texts:
            for m in rx.finditer(text):
                ch = text[m.start()]
                assert ch in t.first or (ch >= "\x80" and t.other), (t.name, ch)
                tried += 1
    assert tried > 10000


def test_the_terminals_are_larks():
    lk = R.lark_parser()
    assert sorted((t.name, t.pattern.type, t.pattern.value) for t in lk.terminals) == \
        sorted((t.name, t.type, t.value) for t in R.driver().terminals)


# as lark's parser gave them (the commit before the driver), byte for byte
@pytest.mark.parametrize("text, message", [
    ("fn main() { pool kv { cap 10 } }",
     "bad.sq:1:30: error[E102]: expected `;`, found `}`\n  |\n1 | fn main() { pool kv { cap 10 } }\n"
     "  |                              ^\n  = help: a statement ends with `;`"),
    ('fn main() { use "x }',
     'bad.sq:1:17: error[E101]: unterminated string\n  |\n1 | fn main() { use "x }\n'
     '  |                 ^\n  = help: a string ends with `"` on the same line'),
    ("let x = 1",
     "bad.sq:1:10: error[E102]: expected `;`, found end of input\n  |\n1 | let x = 1\n  |          ^\n"
     "  = help: a statement ends with `;`"),
    ("fn main() { let x = 1 @ 2; }",
     "bad.sq:1:23: error[E101]: unexpected character `@`\n  |\n1 | fn main() { let x = 1 @ 2; }\n"
     "  |                       ^"),
    ("fn main() { \u03bb }",
     "bad.sq:1:13: error[E101]: unexpected character `\u03bb`\n  |\n1 | fn main() { \u03bb }\n  |             ^\n"
     "  = help: a name is ASCII letters, digits and `_` (a string may hold any character)"),
    ("fn main() {\n  stgae svc : fifo;\n}\n",
     "bad.sq:2:3: error[E102]: expected a declaration or a statement, found `stgae`\n  |\n2 |   stgae svc : fifo;\n"
     "  |   ^^^^^\n  = help: did you mean `stage`?"),
])
def test_a_parse_error_is_said_as_before(text, message):
    with pytest.raises(SerqError) as e:
        parser.parse(text, "bad.sq")
    assert e.value.render() == message
