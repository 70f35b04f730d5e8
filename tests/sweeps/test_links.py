"""How a sweep links its points (serq.sweeps.links): one parse for them all,
and the points of one shape made from a template where they are many; every
point's IR is the one ``Program.set`` links, byte for byte, so the table is
the same bytes as before."""

from __future__ import annotations

import pytest

import serq
from serq import ir
from serq.api.program import set_texts
from serq.sweeps import grid as G
from serq.sweeps import links as L

VLLM = "examples/multi-turn/vllm.sq"


def irs(program, lists, link):
    out = []
    for point in G.points(G.value_lists(lists)):
        out.append(ir.dumps(program.linked(point, link).settings(horizon=40.0, warmup=4.0)))
    return out


@pytest.mark.parametrize("lists", [
    {"B": [1024, 2048, 3072, 4096, 5120]},                       # one shape of five points: a template
    {"B": [1024, 2048, 4096, 8192], "Lambda": [0.3, 0.9]},       # two shapes of four
    {"Lambda": [0.3, 0.6, 0.9]},                                  # three shapes of one: links, one parse
    {"B": [2048, 0, 4096, 8192, 16384]},                          # a 0 is a shape of its own
])
def test_every_point_is_the_ir_a_link_of_its_inputs_gives(lists):
    prog = serq.load(VLLM)
    points = [set_texts(p) for p in G.points(G.value_lists(lists))]
    link = L.Links(prog, points)
    assert irs(prog, lists, link) == irs(prog, lists, None)


def test_a_shape_of_many_points_is_made_from_its_template():
    prog = serq.load(VLLM)
    lists = {"B": [1024, 2048, 3072, 4096, 5120, 6144]}
    link = L.Links(prog, [set_texts(p) for p in G.points(G.value_lists(lists))])
    irs(prog, lists, link)
    c = link.shapes.counts
    assert c["calls"] == 6 and c["links"] == 3 and c["instances"] == 5, c   # 3 links, not 6


def test_a_shape_of_few_points_is_linked_each_time_with_one_parse():
    prog = serq.load(VLLM)
    lists = {"B": [1024, 2048, 4096]}
    link = L.Links(prog, [set_texts(p) for p in G.points(G.value_lists(lists))])
    assert link.shapes is None
    irs(prog, lists, link)
    assert len([k for k in link.parsed if k[1] == VLLM]) == 1     # the program parsed once


def test_a_program_not_read_from_its_file_is_linked_each_time(tmp_path):
    with open(VLLM, encoding="utf-8") as f:
        text = f.read()
    prog = serq.loads(text, path="examples/multi-turn/vllm_string.sq")    # no such file
    assert L.Links(prog, [{"B": str(b)} for b in (1, 2, 3, 4, 5)]).shapes is None
    path = tmp_path / "vllm.sq"
    path.write_text(text.replace("../lib/vllm.sq", "lib.sq"), encoding="utf-8")
    (tmp_path / "lib.sq").write_text(open("examples/lib/vllm.sq", encoding="utf-8").read(), encoding="utf-8")
    prog = serq.load(str(path))
    path.write_text(prog._text + "\n// edited after it was read\n", encoding="utf-8")
    assert L.Links(prog, [{"B": str(b)} for b in (1, 2, 3, 4, 5)]).shapes is None


def test_a_sweep_of_a_refused_value_is_refused_before_any_run(monkeypatch):
    from serq.sweeps import backends

    def no_run(*a, **k):
        raise AssertionError("a run started")
    monkeypatch.setattr(backends, "run", no_run)
    with pytest.raises(serq.SerqError) as e:
        serq.sweep(VLLM, {"max_seqs": [16, 32, 48, 64, 0]}, horizon=20, jobs=1)
    assert "error[E406]: the units 1 are above the cap 0 of `reqs`" in e.value.render()
