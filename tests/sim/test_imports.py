"""The simulator reads the IR and nothing else: it never imports the front end."""

import ast
import os
import subprocess
import sys

SIM = os.path.join(os.path.dirname(__file__), "..", "..", "serq", "sim")


def test_no_front_end_import_in_source():
    for name in sorted(os.listdir(SIM)):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(SIM, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level:  # relative: from ..syntax import …
                    mod = "serq." + mod if node.level == 2 else "serq.sim." + mod
                mods = [mod] + [f"{mod}.{a.name}" for a in node.names]
            for m in mods:
                assert not (m.startswith("serq.syntax") or m.startswith("serq.link")), (name, m)


def test_no_front_end_module_loaded():
    code = ("import sys, serq.sim, serq.sim.machine; "
            "bad = [m for m in sys.modules if m.startswith(('serq.syntax', 'serq.link'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
