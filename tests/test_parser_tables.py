"""The parser's tables (serq/syntax/grammar.tables): the grammar's, read by
every command instead of building the automaton, and the same parser as the
one built from the grammar, errors included."""

from __future__ import annotations

import glob
import os
import random
import subprocess
import sys

import lark
import pytest

from serq.diag import SerqError
from serq.syntax import parser, tables as T

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def grammar() -> bytes:
    with open(T.GRAMMAR, "rb") as f:
        return f.read()


def test_the_committed_tables_are_the_grammars():
    with open(T.TABLES, "rb") as f:
        head = f.readline()
    assert head == T.header(grammar(), lark.__version__), \
        "serq/syntax/grammar.tables is stale: run tools/gen_parser.py"


def test_building_the_tables_twice_gives_the_same_bytes():
    """Their states are numbered canonically, so the check compares bytes."""
    assert T.tables(grammar()) == T.tables(grammar())


def test_make_check_holds_them_current():
    r = subprocess.run([sys.executable, "tools/gen_parser.py", "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "parser tables: current"


def test_tables_of_another_grammar_or_another_lark_are_not_used(tmp_path, monkeypatch):
    assert T.load(grammar() + b"\n// edited\n", lark) is None

    class OtherLark:
        __version__ = "0.0.1"
        Lark = lark.Lark
    assert T.load(grammar(), OtherLark) is None
    monkeypatch.setattr(T, "TABLES", str(tmp_path / "missing.tables"))
    assert T.load(grammar(), lark) is None
    bad = tmp_path / "bad.tables"
    bad.write_bytes(T.header(grammar(), lark.__version__) + b"not a pickle")
    monkeypatch.setattr(T, "TABLES", str(bad))
    assert T.load(grammar(), lark) is None


def test_a_command_reads_the_tables_and_never_builds_the_parser():
    code = ("import sys; from serq.syntax import tables; "
            "tables.build = lambda g: sys.exit('built'); "
            "from serq.cli import main; sys.argv = ['serq', 'check', 'examples/single-turn/mg1.sq']; main()")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def _outcome(p, text: str, start: str):
    try:
        return p.parse(text, start=start)
    except lark.exceptions.UnexpectedToken as e:
        return ("token", str(e.token), e.token.type, e.line, e.column, sorted(e.expected))
    except lark.exceptions.UnexpectedCharacters as e:
        return ("character", e.line, e.column, e.pos_in_stream, sorted(e.allowed or ()))
    except lark.exceptions.UnexpectedEOF as e:    # pragma: no cover - LALR reports an $END token
        return ("eof", sorted(e.expected))


def test_the_tables_parse_as_the_grammar_does_errors_included():
    built = T.build(grammar())
    loaded = T.load(grammar(), lark)
    assert loaded is not None
    rng = random.Random(22)
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.sq"), recursive=True))
    assert len(files) > 20
    n = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        texts = [src] + [src[:k] + src[k + 1:] for k in (rng.randrange(len(src)) for _ in range(6))] + \
            [src[:rng.randrange(len(src))] for _ in range(3)]
        for text in texts:
            for start in T.OPTIONS["start"]:
                assert _outcome(loaded, text, start) == _outcome(built, text, start), (path, start)
                n += 1
    assert n > 1000


@pytest.mark.parametrize("text", [
    "fn main() { pool kv { cap 10 } }",
    "fn main() { workload { arrive poisson(1); } server { if (x) { } } }",
    "fn main() { stage s : fifo(1); server { set x = ; } }",
    'fn main() { use "x }',
    "fn main() { pool p { cap 1; } server { hold p (1) { run s (1) } } }",
    "let x = 1",
])
def test_an_error_message_is_the_same_from_the_tables_and_from_the_grammar(text, monkeypatch):
    def message():
        try:
            parser.parse(text, "bad.sq")
        except SerqError as e:
            return e.render()
        return None
    from_tables = message()
    parser._lark.cache_clear()
    monkeypatch.setattr(T, "load", lambda g, lk: None)
    try:
        from_grammar = message()
    finally:
        parser._lark.cache_clear()
    assert from_tables is not None and from_tables == from_grammar
