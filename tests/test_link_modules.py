"""serq/link/ in one module per concern: the Linker a coordinator of parts,
no method in two of them, each module small and named in the README."""

import ast
import os
import re

from serq.link.linker import Linker

LINK = os.path.join(os.path.dirname(__file__), "..", "serq", "link")
MAX_LINES = 700


def _modules() -> list:
    return sorted(f for f in os.listdir(LINK) if f.endswith(".py"))


def test_every_module_is_small_and_says_what_it_holds():
    for f in _modules():
        text = open(os.path.join(LINK, f), encoding="utf-8").read()
        assert text.count("\n") <= MAX_LINES, (f, text.count("\n"))
        doc = ast.get_docstring(ast.parse(text))
        assert doc and doc.split("\n")[0].strip(), f


def test_the_readme_names_every_module_once():
    readme = open(os.path.join(LINK, "README.md"), encoding="utf-8").read()
    rows = re.findall(r"^\| `([a-z_]+\.py)` \|", readme, re.M)
    assert sorted(rows) == _modules()
    assert len(rows) == len(set(rows))


def defined_twice(cls) -> dict:
    """The methods two of the classes ``cls`` is made of define, each with
    the classes that do, in method resolution order."""
    where: dict = {}
    for part in cls.__mro__[1:-1]:
        for name, v in vars(part).items():
            if callable(v) and not name.startswith("__"):
                where.setdefault(name, []).append(part.__name__)
    return {n: ps for n, ps in where.items() if len(ps) > 1}


def test_the_linker_is_its_parts():
    # the Linker itself defines only its tables, the passes and the build
    own = {k for k, v in vars(Linker).items() if callable(v) and k != "__init__"}
    assert own == {"link", "build"}
    # no method is defined in two parts: the order of the bases decides nothing
    assert defined_twice(Linker) == {}
    # each part is a class of its own module under serq.link, with its docstring
    for part in Linker.__mro__[1:-1]:
        assert part.__module__.startswith("serq.link."), part
        assert part.__doc__ and "*Part of Linker*" in part.__doc__, part
    assert {p.__module__.rsplit(".", 1)[1] for p in Linker.__mro__[1:-1]} == {
        "nodes", "libraries", "constants", "names", "declarations", "engines", "exprs", "statements",
        "workload", "measures", "attrtypes"}


def test_a_method_in_two_parts_would_be_found():
    class A:
        def f(self):
            pass

    class B:
        def f(self):
            pass

    class Both(A, B):
        pass

    assert defined_twice(Both) == {"f": ["A", "B"]}
    # and a part overriding one of the Linker's parts
    Nodes = next(p for p in Linker.__mro__ if p.__name__ == "Nodes")

    class Shadow:
        def fail(self, *a, **k):
            pass

    class Linker2(Shadow, Linker):
        pass

    assert defined_twice(Linker2) == {"fail": ["Shadow", "Nodes"]}
    assert Nodes.fail is not Linker2.fail
