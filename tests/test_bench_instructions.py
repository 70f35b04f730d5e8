"""bench/instructions.py (``make bench-instructions``): the instructions one
run of a benchmark case executes, under valgrind's cachegrind."""

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import instructions  # noqa: E402


def test_an_unknown_case_is_named_with_the_cases_there_are():
    with pytest.raises(SystemExit) as e:
        instructions.program("z")
    assert str(e.value) == "bench/instructions.py: no case 'z' (the cases are a, b, c, e, h, s)"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_mm1_counts_one_runs_instructions():
    """A run of the M/M/1 at horizon 2 000 (about 3 200 events): tens of
    millions of instructions, not the process's hundreds (the imports, the
    IR's reading), which the count leaves out."""
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "instructions.py"), "--only", "c", "--quick"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "instructions of one simulate() of each case (valgrind's cachegrind; millions)"
    m = re.fullmatch(r"  \(c\)\s+([\d.]+) M", lines[1])
    assert m is not None, lines
    assert 20 < float(m.group(1)) < 300
