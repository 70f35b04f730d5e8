"""A command's start-up pays for what it runs (issue 22; bench/startup_bench.py
measures it): the modules a command imports, each command in a new process
as a user runs it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MG1 = "examples/single-turn/mg1.sq"
VLLM = "examples/multi-turn/vllm.sq"


def imported(*argv) -> set:
    """The modules ``serq ARGV…`` has imported when it is done."""
    code = ("import json, sys\nfrom serq.cli import main\nsys.argv = ['serq'] + %r\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)" % (list(argv),))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def tops(modules: set) -> set:
    return {m.split(".")[0] for m in modules}


# what no command below needs: the parser's builder (lark), the heavy
# libraries of other commands, and importlib.metadata (email, zipfile, a
# scan of sys.path) for the version a report names
NEVER = {"lark", "matplotlib", "numpy", "pandas", "pyarrow", "dask", "jinja2", "email", "zipfile", "pickle"}


@pytest.mark.parametrize("argv, also_not", [
    (("check", MG1), {"z3", "serq.sim", "hashlib", "shutil", "tempfile", "subprocess"}),
    (("run", MG1, "--horizon", "10"), {"z3", "shutil", "tempfile", "subprocess"}),
    (("target", VLLM, "--engine", "vllm"), {"z3", "serq.sim"}),
    (("check", VLLM), {"z3"}),
])
def test_a_command_imports_what_it_runs(argv, also_not):
    mods = imported(*argv)
    assert "serq.syntax.lalr" in mods    # it did parse
    assert tops(mods) & NEVER == set()
    assert {m for m in also_not if m in mods or m in tops(mods)} == set()


def test_the_version_a_report_names_is_the_installed_packages():
    from serq.about import version
    assert version() == importlib.metadata.version("serq")
