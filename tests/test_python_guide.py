"""The examples of docs/python.md are run: the page says what the code does."""

import doctest
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_python_guide_runs():
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        r = doctest.testfile(os.path.join(ROOT, "docs", "python.md"), module_relative=False,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=True, verbose=False)
    finally:
        os.chdir(cwd)
    assert r.attempted > 40 and r.failed == 0
