"""No input crashes the front end: anything but a program raises SerqError."""

import re

from hypothesis import HealthCheck, given, settings, strategies as st

from serq.diag import SerqError
from serq.link import compile_source

from tools.examples import programs  # noqa: E402

EXAMPLES = programs()
SOURCES = {p: open(p, encoding="utf-8").read() for p in EXAMPLES}
TOKEN = re.compile(r'"[^"\n]*"|//[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\d+\.?\d*(?:[eE][+-]?\d+)?|==|!=|<=|>=|&&|\|\||\S')


def _link(text: str, path: str) -> None:
    try:
        compile_source(text, path, horizon=10)
    except SerqError as e:
        e.render()  # rendering must not fail either


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_arbitrary_text_raises_nothing_but_serq_error(text):
    _link(text, "t.sq")


ALPHABET = list("{}();,.:=+-*/<>!?~[]\"") + ["fn main() {", "hold", "run", "pool", "stage", "let",
                                               "turn;", "workload", "server", "engine", "inf", "x", "1"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ALPHABET), max_size=60))
def test_token_soup_raises_nothing_but_serq_error(parts):
    _link(" ".join(parts), "t.sq")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EXAMPLES), st.data())
def test_mutated_examples_raise_nothing_but_serq_error(path, data):
    src = SOURCES[path]
    toks = [m for m in TOKEN.finditer(src)]
    i = data.draw(st.integers(0, len(toks) - 1))
    op = data.draw(st.sampled_from(["delete", "duplicate", "swap", "replace"]))
    a, b = toks[i].span()
    if op == "delete":
        text = src[:a] + src[b:]
    elif op == "duplicate":
        text = src[:b] + " " + src[a:b] + src[b:]
    elif op == "swap" and i + 1 < len(toks):
        c, d = toks[i + 1].span()
        text = src[:a] + src[c:d] + src[b:c] + src[a:b] + src[d:]
    else:
        other = toks[data.draw(st.integers(0, len(toks) - 1))].group()
        text = src[:a] + other + src[b:]
    _link(text, path)
