"""serq/datafile.py: what the readers of JSON data share."""

from __future__ import annotations

import re
from itertools import accumulate

from hypothesis import given, settings, strategies as st

from serq.datafile import depth_ok


def _deepest(text: str) -> int:
    """How deep ``text``'s brackets nest, brackets inside strings not counted:
    its strings (to their closing quote, or to the end) taken out, then the
    deepest running count of openers less closers."""
    outside = re.sub(r'"(?:\\.|[^"\\])*(?:"|\\?\Z)', "", text, flags=re.S)
    steps = [1 if ch in "[{" else -1 for ch in outside if ch in "[]{}"]
    return max(accumulate(steps, initial=0))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='[]{}"\\a,:1', max_size=40), st.integers(0, 8))
def test_depth_ok_is_whether_the_brackets_outside_strings_nest_at_most_so_deep(text, most):
    assert depth_ok(text, most) == (_deepest(text) <= most)


def test_brackets_in_a_string_do_not_count():
    assert depth_ok('{"k": "[[[[[[[[["}', 1)
    assert not depth_ok('{"k": [[["x"]]]}', 3)
