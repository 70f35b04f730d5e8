"""Programs the examples do not have: families, choose, multi-stage runs,
leases, crossing enclosures, unused declarations, and random nests of holds,
branches, whiles and forks."""

from __future__ import annotations

import random

import pytest

from drawing import bbox, descendants, enclosures, groups, inside
from serq.draw import figure, render
from serq.draw.check import svg_problems, tikz_problems
from tests.helpers import link

PROGRAMS = {
    "crossing": "  stage a : fifo;\n  stage b : fifo;\n  stage c : ps(2);\n  pool p { cap 4; }\n  pool q { cap 3; }\n"
                "  workload { arrive poisson(1); turn { set s = 1; } }\n"
                "  server { hold p (cost(p, 1)) { run a (cost(a, s)); run b (cost(b, s)); } "
                "hold q (cost(q, 1)) { run b (cost(b, s)); run c (cost(c, s)); } }",
    "family": "  stage svc[2] : fifo;\n  stage idle : fifo;\n  pool unused { cap 2; }\n"
              "  workload { arrive poisson(1); turn { set s = 1; } }\n"
              "  server { choose j in 2 by (queue(svc[j])); fork { run svc[j] (cost(svc, s)); } join; "
              "set r = s; while (r > 5) { run svc[0] (cost(svc, 1)); set r = r - 1; } }",
    "also": "  stage a[2] : ps(4);\n  stage b[2] : ps(8);\n  share maxmin;\n  workload { arrive poisson(1); }\n"
            "  server { run a[0], b[1] (cost(a, b, 3)); }",
    "transfer": "  stage link : ps(10);\n  pool src { cap 100; }\n  pool dst { cap 100; }\n"
                "  workload { arrive poisson(1); }\n"
                "  server { hold src (cost(src, 10)) { } lease src (inf); "
                "hold dst (cost(dst, 10)) { transfer (5) from src to dst (10); } }",
    "nothing": "  stage svc : fifo;\n  workload { arrive poisson(1); }\n  server { set x = 1; }",
    "special_names": "  stage my_stage : fifo;\n  pool my_pool { cap 2; }\n"
                     "  workload { arrive poisson(1); turn { set s_1 = ~exp(1); } }\n"
                     "  server { hold my_pool (cost(my_pool, 1)) { run my_stage (cost(my_stage, s_1 ^ 2 + 1)); } }",
}


def _check(p):
    for view in ("deployment", "session"):
        svg = render(p, view, "svg")
        assert svg_problems(svg) == []
        assert tikz_problems(render(p, view, "tikz")) == []
        assert render(p, view, "svg") == svg
    return render(p, "deployment", "svg")


def _holds_measure(svg: str):
    """Every hold box drawn as a box holds exactly its data-stations."""
    stations = {g.get("data-station"): bbox(g) for g in groups(svg, "station")}
    for g in enclosures(svg, "hold"):
        want = set(g.get("data-stations").split())
        assert {s for s, b in stations.items() if inside(b, bbox(g))} == want


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_odd_programs_draw(name):
    p = link(PROGRAMS[name])
    svg = _check(p)
    _holds_measure(svg)


def test_crossing_enclosures_become_notes_and_say_so():
    p = link(PROGRAMS["crossing"])
    fig = figure(p, "deployment")
    notes = [n for n in fig.nodes if "note" in n.role.split()]
    assert {n.texts[0].text for n in notes} == {"pool q", "hold q"}
    assert len(fig.notes) == 2 and all("crosses another enclosure" in t.text for t in fig.notes)
    # each note is linked to the stations it stands for
    for n in notes:
        linked = {e.dst for e in fig.edges if e.src == n.id and e.role == "note"}
        assert linked == set(n.data["stations"].split()) == {"st1", "st2"}


def test_unused_declarations_are_drawn():
    p = link(PROGRAMS["family"])
    fig = figure(p, "deployment")
    labels = {n.texts[0].text: n for n in fig.nodes}
    assert "unreached" in labels["idle"].role.split()
    assert "svc[0..1]" in labels and "svc[0]" in labels   # a member chosen at run time stands for the family
    assert "member j, one of 2" in [t.text for t in labels["svc[0..1]"].texts]
    pools = [c for c in fig.clusters if c.kind == "pool"]
    assert [c.texts[0].text for c in pools] == ["pool unused"]


def test_a_lease_keeps_the_pool_around_the_transfer():
    p = link(PROGRAMS["transfer"])
    fig = figure(p, "deployment")
    link_node = next(n for n in fig.nodes if n.texts[0].text == "link")
    for c in fig.clusters:
        if c.kind == "pool":
            assert c.contains(link_node), c.texts[0].text


def _gen(rng: random.Random, depth: int = 0, in_fork: bool = False) -> str:
    out = []
    for _ in range(rng.randint(1, 3)):
        kinds = ["run", "run", "set"] + (["hold", "branch", "while"] + ([] if in_fork else ["fork"])
                                          if depth < 3 else [])
        k = rng.choice(kinds)
        if k == "run":
            st = rng.choice("abc")
            out.append(f"run {st} (cost({st}, s));")
        elif k == "set":
            out.append("set x = x + 1;")
        elif k == "hold":
            pl = rng.choice("pq")
            out.append(f"hold {pl} (cost({pl}, 1)) {{ {_gen(rng, depth + 1, in_fork)} }}")
        elif k == "branch":
            out.append(f"branch (s > 2) {{ {_gen(rng, depth + 1, in_fork)} }} "
                       f"else {{ {_gen(rng, depth + 1, in_fork)} }}")
        elif k == "while":
            r = f"r{depth}"
            out.append(f"set {r} = 2; while ({r} > 0) {{ {_gen(rng, depth + 1, in_fork)} "
                       f"run a (cost(a, 1)); set {r} = {r} - 1; }}")
        else:
            out.append(f"fork {{ {_gen(rng, depth + 1, True)} }} join;")
    return " ".join(out)


@pytest.mark.parametrize("seed", range(12))
def test_random_nests_draw_and_measure(seed):
    rng = random.Random(seed)
    body = ("  stage a : fifo;\n  stage b : ps(2);\n  stage c : delay;\n  pool p { cap 4; }\n  pool q { cap 3; }\n"
            "  workload { arrive poisson(1); turn { set s = 1; } }\n  server { set x = 0; " + _gen(rng) + " }")
    p = link(body)
    svg = _check(p)
    _holds_measure(svg)
    fig = figure(p, "session")
    for c in fig.clusters:
        if c.kind == "hold":
            blocks = descendants(p, int(c.data["body"]))
            for n in fig.nodes:
                assert c.contains(n) == ("block" in n.data and int(n.data["block"]) in blocks)
