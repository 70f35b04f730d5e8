"""Editor support: the Pygments lexer (registered as `serq`) and the VS Code
grammar generated from the same words."""

import glob
import json
import os
import re

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Error, Keyword, Name, Number

from serq.highlight import SerqLexer
from serq.syntax.words import keywords

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.sq"), recursive=True))


def test_the_lexer_is_registered_by_name_and_extension():
    assert isinstance(get_lexer_by_name("serq"), SerqLexer)
    assert isinstance(get_lexer_for_filename("prog.sq"), SerqLexer)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_example_lexes_without_an_error_token(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    toks = list(SerqLexer().get_tokens(text))
    assert [v for t, v in toks if t is Error] == []
    assert "".join(v for _, v in toks) == (text if text.endswith("\n") else text + "\n")


def test_words_are_classified():
    toks = dict((v, t) for t, v in SerqLexer().get_tokens(
        "pool kv { cap 10; }  hold kv (1) { run svc (~exp(2)); } set x = min(used(kv), now);"))
    assert toks["pool"] in Keyword and toks["hold"] in Keyword
    assert toks["10"] in Number
    assert toks["min"] is Name.Builtin and toks["used"] is Name.Builtin
    assert toks["now"] is Name.Builtin.Pseudo
    assert toks["kv"] is Name


def test_the_vscode_grammar_is_made_from_the_grammar_words():
    with open(os.path.join(ROOT, "editors", "vscode", "syntaxes", "serq.tmLanguage.json")) as f:
        g = json.load(f)
    pats = {p["name"]: p for p in g["patterns"]}
    decl = re.compile(pats["storage.type.declaration.serq"]["match"])
    kw = re.compile(pats["keyword.control.serq"]["match"])
    for w in keywords():
        assert decl.fullmatch(w) or kw.fullmatch(w), w
    for p in g["patterns"]:
        for k in ("match", "begin", "end"):
            if k in p:
                re.compile(p[k])
