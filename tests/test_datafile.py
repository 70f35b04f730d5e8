"""serq/datafile.py: what the readers of JSON data share."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from serq.datafile import depth_ok


def _deepest(text: str) -> int:
    """How deep ``text``'s brackets nest, brackets inside strings not counted."""
    depth = most = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            most = max(most, depth)
        elif ch in "]}":
            depth -= 1
    return most


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='[]{}"\\a,:1', max_size=40), st.integers(0, 8))
def test_depth_ok_is_whether_the_brackets_outside_strings_nest_at_most_so_deep(text, most):
    assert depth_ok(text, most) == (_deepest(text) <= most)


def test_brackets_in_a_string_do_not_count():
    assert depth_ok('{"k": "[[[[[[[[["}', 1)
    assert not depth_ok('{"k": [[["x"]]]}', 3)
