"""The language reference (docs/language.md) is held to what serq does: every
```sq example links and runs, every ```sq-error example is refused with the
error its first line says, every ```sq-instance example is an instance file
serq reads; every construct of the grammar has a section that shows it."""

import os
import re

import pytest

from serq.diag import SerqError
from serq.link import compile_source
from serq.sim import simulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "language.md")


def _blocks(kind: str) -> list:
    text = open(PAGE, encoding="utf-8").read()
    return [(m.group(1), text[:m.start()].count("\n") + 2)
            for m in re.finditer(r"```" + kind + r"\n(.*?)```", text, re.S)]


def _path(line: int) -> str:
    # examples read libraries (`use "std/args";`) and write nothing; placed in docs/
    return os.path.join(ROOT, "docs", f"language.md.example{line}.sq")


@pytest.mark.parametrize("src,line", _blocks("sq"), ids=lambda x: str(x) if isinstance(x, int) else "")
def test_every_example_links_and_runs(src, line):
    p = compile_source(src, _path(line), horizon=30.0, warmup=0.0, seed=1)
    rep = simulate(p)
    assert rep.data()["run"]["end"] == 30.0


@pytest.mark.parametrize("src,line", _blocks("sq-error"), ids=lambda x: str(x) if isinstance(x, int) else "")
def test_every_refused_example_gets_its_error(src, line):
    first = src.splitlines()[0]
    assert first.startswith("// error["), f"docs/language.md:{line}: a refused example says its error first"
    want = first[len("// "):]
    with pytest.raises(SerqError) as e:
        compile_source(src, _path(line), horizon=30.0)
    got = [d.render().split("\n")[0] for d in e.value.diagnostics]
    assert any(g.split(": ", 1)[-1].startswith(want) for g in got), (line, got)


def test_the_instance_example_is_an_instance_file(tmp_path):
    from serq.instance import read
    (src, line), = _blocks("sq-instance")
    path = tmp_path / "mm1.sq"
    path.write_text(src)
    inst = read(str(path))
    assert inst.settings == {"horizon": 20000.0, "warmup": 1000.0, "seed": 1} and inst.texts == {"lambda": "0.5"}


# every keyword of the grammar is shown in an example of the page
def test_every_keyword_is_in_an_example():
    from serq.syntax.parser import _keywords
    shown = " ".join(src for kind in ("sq", "sq-error") for src, _ in _blocks(kind))
    words = set(re.findall(r"[a-z_]+", re.sub(r"//[^\n]*", "", shown)))
    # the older spellings the linker refuses (E108-E110), said in the text, not shown
    old = {"step", "via", "request"}
    missing = sorted(k for k in _keywords() if k not in words and k not in old)
    assert missing == [], f"docs/language.md shows no example of {missing}"


def test_every_error_code_the_front_end_raises_is_in_the_table():
    page = open(PAGE, encoding="utf-8").read()
    table = page.split("## Errors", 1)[1]
    ranges = [tuple(int(x[1:]) for x in m.groups()) for m in
              re.finditer(r"\| (E\d{3})–(E\d{3}) \|", table)]
    codes = set()
    for root, _, files in os.walk(os.path.join(ROOT, "serq")):
        for f in files:
            if f.endswith(".py"):
                codes |= set(re.findall(r'"(E\d{3})"', open(os.path.join(root, f), encoding="utf-8").read()))
    outside = sorted(c for c in codes if not any(a <= int(c[1:]) <= b for a, b in ranges))
    assert outside == []
