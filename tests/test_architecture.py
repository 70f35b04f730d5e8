"""The IR is the hub: nothing downstream of the linker reads the AST."""

import ast
import pathlib

CONSUMERS = ["serq/sim", "serq/draw", "serq/smt", "serq/oracle", "serq/calib", "leangen"]
FORBIDDEN = ("serq.syntax", "serq.link", "..syntax", "..link")


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            yield "." * node.level + mod


def test_consumers_import_neither_syntax_nor_link():
    bad = []
    for root in CONSUMERS:
        for path in pathlib.Path(root).rglob("*.py") if pathlib.Path(root).exists() else []:
            for name in _imports(path):
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN) or \
                        (name.startswith("..") and name.lstrip(".").split(".")[0] in ("syntax", "link")):
                    bad.append(f"{path}: {name}")
    assert bad == []


def test_the_ir_imports_nothing_of_the_front_end():
    for path in pathlib.Path("serq/ir").rglob("*.py"):
        for name in _imports(path):
            assert "syntax" not in name and "link" not in name, f"{path}: {name}"
