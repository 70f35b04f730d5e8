"""`exec_ref.py` is `Exec.lean` and `Claims.lean` transcribed: the same
definitions, and the same structures with the same fields."""

import ast
import dataclasses
import os
import re

from leangen import lterms

from .util import ROOT

SPEC = os.path.join(ROOT, "lean", "Serq", "Spec")


def lean_text(*names):
    return "\n".join(open(os.path.join(SPEC, n), encoding="utf-8").read() for n in names)


def lean_defs():
    return set(re.findall(r"^def (\w+)", lean_text("Exec.lean", "Claims.lean"), re.M))


def python_defs():
    tree = ast.parse(open(os.path.join(ROOT, "leangen", "exec_ref.py"), encoding="utf-8").read())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_") and n != "NONE"}


def test_the_same_definitions():
    lean, py = lean_defs(), python_defs()
    assert sorted(lean - py) == [], "defined in Lean, missing in exec_ref.py"
    assert sorted(py - lean) == [], "defined in exec_ref.py, missing in Lean"
    assert len(lean) > 100


def lean_structures():
    text = lean_text("Syntax.lean", "Exec.lean")
    out = {}
    for m in re.finditer(r"^structure (\w+) where\n((?:  \w+ : .*\n)+)", text, re.M):
        out[m.group(1)] = [ln.split(":")[0].strip() for ln in m.group(2).splitlines()]
    return out


def test_the_same_structures():
    lean = lean_structures()
    py = {name: [f.name for f in dataclasses.fields(cls)] for name, cls in vars(lterms).items()
          if isinstance(cls, type) and dataclasses.is_dataclass(cls)}
    assert sorted(lean) == sorted(py)
    for name in lean:
        assert lean[name] == py[name], name
