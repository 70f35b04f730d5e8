"""`serq draw`: every example draws; golden figures; names; enclosures
measured on the SVG; validity; determinism."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from drawing import (ROOT, all_holds, bbox, descendants, drawn, enclosures, groups, inside, placed,
                     pool_of, program, stages_run, texts)
from serq.draw.check import svg_problems, tikz_problems
from serq.draw.text import num
from tools.draw_check import GOLDEN, VIEWS, examples, golden_path

FORMATS = ("svg", "tikz")

def _examples():
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return examples()
    finally:
        os.chdir(cwd)


ALL = _examples()


def test_there_are_examples_and_five_golden_ones():
    assert len(ALL) >= 5
    assert len(GOLDEN) == 5 and all(g in ALL for g in GOLDEN)


@pytest.mark.parametrize("example", ALL)
@pytest.mark.parametrize("view", VIEWS)
def test_every_example_draws_valid_svg_and_tikz(example, view):
    svg = drawn(example, view, "svg")
    assert svg_problems(svg) == []
    tex = drawn(example, view, "tikz")
    assert tikz_problems(tex) == []


@pytest.mark.parametrize("example", GOLDEN)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_golden_figures_are_current(example, view, fmt):
    if os.environ.get("SERQ_DRAW_DOT"):
        pytest.skip("the golden figures are laid out by graphviz-pure, not $SERQ_DRAW_DOT")
    path = os.path.join(ROOT, golden_path(example, view, fmt))
    assert os.path.exists(path), f"no golden figure {path}: run tools/draw_check.py --write"
    with open(path, encoding="utf-8") as f:
        assert f.read() == drawn(example, view, fmt), \
            f"{path} is stale: run tools/draw_check.py --write and review the diff"


def test_the_engine_is_the_pinned_graphviz_pure():
    if os.environ.get("SERQ_DRAW_DOT"):
        pytest.skip("$SERQ_DRAW_DOT chooses another engine")
    from serq.draw.layout import ENGINE_VERSION, engine_version
    assert f"graphviz-pure version {ENGINE_VERSION}" in engine_version()


@pytest.mark.parametrize("example", ALL)
def test_every_pool_and_stage_name_appears(example):
    """Each declaration is named, as itself or as its family drawn once
    (`P.kv[0..1]` for the members of a family picked at run time)."""
    p = program(example)
    svg_text = texts(drawn(example, "deployment", "svg"))
    tex = drawn(example, "deployment", "tikz")
    for decls in (p.pools, p.stages):
        for d in decls:
            size = sum(1 for x in decls if x.name == d.name)
            names = [d.name] if d.index is None else [f"{d.name}[{d.index}]", f"{d.name}[0..{size - 1}]"]
            assert any(re.search(rf"(^|[\s(]){re.escape(n)}($|[\s,)\[])", svg_text, re.M) for n in names), \
                (example, names)
            assert any(n.replace("_", r"\_") in tex for n in names), (example, names)


@pytest.mark.parametrize("example", ALL)
def test_a_holds_enclosure_holds_exactly_the_stations_its_body_runs(example):
    """Measured on the SVG: the stations whose shapes lie inside a hold's box
    are the stages its body runs (read from the IR here, independently)."""
    p = program(example)
    svg = drawn(example, "deployment", "svg")
    stations = {g.get("data-station"): bbox(g) for g in groups(svg, "station")}
    drawn_stages = sorted(int(i) for g in groups(svg, "station") for i in g.get("data-stages").split())
    assert drawn_stages == list(range(len(p.stages)))      # each stage drawn once
    boxes = enclosures(svg, "hold")
    covered = set()
    for g in boxes:
        box = bbox(g)
        found = {s for s, b in stations.items() if inside(b, box)}
        locs = g.get("data-holds").split()
        assert locs
        for loc, hold in all_holds(p):
            if loc in locs:
                assert found == stages_run(p, hold.body), (example, loc)
                covered.add(loc)
        # the queue a hold waits in lies outside it
        for q in groups(svg, "queue"):
            assert not inside(bbox(q), box)
    # a hold that crosses another enclosure is a note linked to its stations
    for g in groups(svg, "note"):
        if "hold" in g.get("class", "").split():
            note_title = g.find("{http://www.w3.org/2000/svg}title").text
            loc = note_title.split(" ")[0]
            for l, hold in all_holds(p):
                if l == loc:
                    assert set(g.get("data-stations").split()) == stages_run(p, hold.body), (example, loc)
                    covered.add(l)
    # a hold of a queue's own pools is the queue's: its stations are drawn in the queue's box
    for loc, hold in all_holds(p):
        if loc not in covered and hold.pools and all(queue_of(p, h.pool.base) for h in hold.pools):
            queues = {g.get("id"): bbox(g) for g in enclosures(svg, "queue")}
            box = queues[f"queue_{queue_of(p, hold.pools[0].pool.base)}"]
            assert any(inside(b, box) for s, b in stations.items() if s in stages_run(p, hold.body))
            covered.add(loc)
    assert covered == {loc for loc, _ in all_holds(p)}


def texts_of(g) -> list:
    """The lines of an element group's texts (a wrapped line's continuation joined)."""
    out = []
    for t in g.iter("{http://www.w3.org/2000/svg}text"):
        line = t.text or ""
        if line.startswith("  ") and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def queue_of(p, i: int):
    """The queue a pool is its own of (`P.kv`: `P`, when a stage is named `P`), or None."""
    head, dot, _ = p.pools[i].name.partition(".")
    return head if dot and any(st.name == head for st in p.stages) else None


@pytest.mark.parametrize("example", ALL)
def test_a_pools_enclosure_holds_the_stations_its_holds_run(example):
    """Measured on the SVG: a pool's box holds the stations its holds run
    (leases aside); a pool that crosses another enclosure is a note linked to
    its stations."""
    p = program(example)
    svg = drawn(example, "deployment", "svg")
    stations = {g.get("data-station"): bbox(g) for g in groups(svg, "station")}
    pools = {tuple(int(i) for i in g.get("data-pool").split()): g for g in enclosures(svg, "pool")}
    notes = {tuple(int(i) for i in g.get("data-pool").split()): g for g in groups(svg, "note")
             if "pool" in g.get("class", "").split()}
    own = [i for i in range(len(p.pools)) if queue_of(p, i)]
    assert sorted([i for k in list(pools) + list(notes) for i in k] + own) == list(range(len(p.pools)))
    # a queue's own pool is drawn in its queue's box: named in its label, its wait (if any) inside it
    queues = {g.get("id"): g for g in enclosures(svg, "queue")}
    for i in own:
        g = queues[f"queue_{queue_of(p, i)}"]
        assert any(t.startswith(f"pool {p.pools[i].name}") for t in texts_of(g)), (example, p.pools[i].name)
        for q in groups(svg, "queue"):
            if "enclosure" not in q.get("class") and str(i) in q.get("data-pool", "").split():
                assert inside(bbox(q), bbox(g))
    leases = any(h.lease is not None for _, h in all_holds(p))
    for key, g in list(pools.items()) + list(notes.items()):
        want = set()
        for _, h in all_holds(p):
            if any(pool_of(hp.pool) == key for hp in h.pools):
                want |= stages_run(p, h.body)
        if key in pools:
            found = {s for s, b in stations.items() if inside(b, bbox(g))}
        else:
            found = set(g.get("data-stations").split())
        # a lease keeps the pool held past its hold, through the stations until the release
        assert found == want or (leases and want <= found), (example, p.pools[key[0]].name, found, want)


@pytest.mark.parametrize("example", ALL)
def test_session_holds_enclose_exactly_their_body(example):
    """In the session view a hold's box holds the boxes of its body's
    statements (nested blocks included) and nothing else."""
    p = program(example)
    fig = placed(example, "session")
    for c in fig.clusters:
        if c.kind != "hold":
            continue
        blocks = descendants(p, int(c.data["body"]))
        for n in fig.nodes:
            want = "block" in n.data and int(n.data["block"]) in blocks
            assert c.contains(n) == want, (example, c.title, n.title)


def test_the_path_of_the_multi_turn_vllm_program():
    fig = placed("examples/multi-turn/vllm.sq", "deployment")
    name = {n.id: n.texts[0].text for n in fig.nodes}
    flow = {(name[e.src], name[e.dst], " ".join(t.text for t in e.texts)) for e in fig.edges
            if e.role == "flow"}
    assert flow == {("arrivals", "reqs queue", ""), ("reqs queue", "vllm", ""), ("vllm", "tool", "more"),
                    ("tool", "reqs queue", ""), ("vllm", "done", "!more")}
    admits = [(name[e.src], name[e.dst]) for e in fig.edges if e.role == "admit"]
    assert admits == [("vllm", "reqs queue")]
    pools = {c.texts[0].text: c for c in fig.clusters if c.kind == "pool"}
    assert set(pools) == {"pool kv", "pool reqs"}
    p = program("examples/multi-turn/vllm.sq")
    cap = {q.name: q for q in p.pools}
    kv = " ".join(t.text for t in pools["pool kv"].texts)
    for word in (f"cap {num(cap['kv'].cap)} ", f"block {num(cap['kv'].block)}", "evict lru", "preempt lifo",
                 "memory of vllm"):
        assert word in kv
    reqs = " ".join(t.text for t in pools["pool reqs"].texts)
    for word in (f"cap {num(cap['reqs'].cap)} ", "queue fifo", "admitted by vllm"):
        assert word in reqs
    engine = " ".join(t.text for t in fig.node("st0").texts)
    budget = num(p.stages[0].kind.budget.value)
    assert f"engine · budget {budget}" in engine and "memory kv" in engine


def test_subagents_fork_and_replay_loop_show():
    fig = placed("examples/subagent/vllm_subagents.sq", "deployment")
    assert any(e.role == "fork" for e in fig.edges)
    sess = placed("examples/subagent/vllm_subagents.sq", "session")
    roles = " ".join(n.role for n in sess.nodes)
    for word in ("fork", "join", "branch", "while", "turn", "server", "client"):
        assert word in roles.split()
    replay = placed("examples/replay/vllm_replay.sq", "session")
    assert any("loop" in n.role.split() for n in replay.nodes)
    assert any(e.role == "back" for e in replay.edges)
    assert any("end" in n.role.split() for n in replay.nodes)


def test_server_statements_are_marked_as_the_servers():
    fig = placed("examples/multi-turn/vllm.sq", "session")
    servers = [c for c in fig.clusters if c.kind == "server"]
    assert len(servers) == 1  # the server's statements, copied after each of the two turns, drawn once
    again = [e for e in fig.edges if " ".join(t.text for t in e.texts) == "answered by the server"]
    back = [e for e in fig.edges if " ".join(t.text for t in e.texts) == "the answer"]
    assert len(again) == 1 and len(back) == 1
    for n in fig.nodes:
        if "stmt" not in n.role.split():
            continue
        inside_server = any(c.contains(n) for c in servers)
        assert inside_server == ("server" in n.role.split()), n.title


def test_determinism_in_process_and_across_hash_seeds(tmp_path):
    from serq.draw import render
    ex = "examples/subagent/vllm_subagents.sq"
    p = program(ex)
    for view in VIEWS:
        for fmt in FORMATS:
            assert render(p, view, fmt) == render(p, view, fmt)
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = tmp_path / f"s{seed}.svg"
        subprocess.run([sys.executable, "-c", "from serq.cli import main; main()", "draw", ex, "--out", str(out)],
                       cwd=ROOT, env=env, check=True, timeout=120)
        outs.append(out.read_text(encoding="utf-8"))
    assert outs[0] == outs[1] == drawn(ex, "deployment", "svg")


def test_the_cli(tmp_path):
    from click.testing import CliRunner
    from serq.cli import main
    r = CliRunner().invoke(main, ["draw", "examples/single-turn/mg1.sq"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("<?xml") and svg_problems(r.output) == []
    out = tmp_path / "f.tex"
    r = CliRunner().invoke(main, ["draw", "examples/multi-turn/closed.sq", "--view", "session", "--format", "tikz",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert tikz_problems(out.read_text(encoding="utf-8")) == []
    r = CliRunner().invoke(main, ["draw", "examples/single-turn/mg1.sq", "--view", "nope"])
    assert r.exit_code == 2


def test_an_ir_file_draws_like_its_source(tmp_path):
    from serq import ir
    from serq.draw import render
    p = program("examples/multi-turn/vllm.sq")
    path = tmp_path / "p.json"
    path.write_text(ir.dumps(p), encoding="utf-8")
    assert render(ir.read(str(path)), "deployment", "svg") == drawn("examples/multi-turn/vllm.sq", "deployment", "svg")


def test_a_missing_engine_is_an_error_not_a_traceback(monkeypatch):
    from serq.diag import SerqError
    from serq.draw import render
    monkeypatch.setenv("SERQ_DRAW_DOT", "/nonexistent/dot")
    with pytest.raises(SerqError) as e:
        render(program("examples/single-turn/mg1.sq"))
    assert "E960" in e.value.render()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex here")
@pytest.mark.parametrize("example", GOLDEN)
@pytest.mark.parametrize("view", VIEWS)
def test_tikz_compiles_with_pdflatex(example, view, tmp_path):
    src = tmp_path / "f.tex"
    src.write_text(drawn(example, view, "tikz"), encoding="utf-8")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "f.tex"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (tmp_path / "f.pdf").stat().st_size > 1000


@pytest.mark.parametrize("example", ALL)
@pytest.mark.parametrize("view", VIEWS)
def test_no_label_is_cut_off(example, view):
    """A label too long for its box is wrapped onto more lines, never cut."""
    fig = placed(example, view)
    for item in list(fig.nodes) + list(fig.clusters) + list(fig.edges):
        if getattr(item, "role", "") == "router":
            # a router's choice keys are elided in its label, whole in its tooltip
            assert "…" not in item.title, (example, item.title)
            continue
        for t in item.texts:
            assert "…" not in t.text, (example, item.title, t.text)


def test_engine_labels_spell_the_engines_own_names():
    """`waiting.count`, not the queues it sums; `batch.…` in the iteration time;
    the chunk's no-cap as the source writes it, `inf` (drawn ∞)."""
    fig = placed("examples/multi-turn/vllm.sq", "deployment")
    engine = " ".join(t.text.strip() for t in fig.node("st0").texts)
    assert "chunk running.count + waiting.count > 1 ? 512 : ∞" in engine
    assert "* batch.kv_decode" in engine and "* batch.kv_prefill" in engine and "queued(" not in engine
    assert "batch.prefilled > 0 ?" in engine and "running.count" in engine
