"""The user documentation's programs run, and say what their pages say."""

from __future__ import annotations

import os
import re

import pytest

from serq.link import compile_file
from serq.sim import simulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUT = os.path.join(ROOT, "docs", "tutorial")


def run(name: str, **kw):
    return simulate(compile_file(os.path.join(TUT, name), **kw))


def by_session(rep, name):
    return {s: v for _, s, _, v in rep.samples(name)}


def test_the_tutorial_index_lists_every_chapter_and_program():
    with open(os.path.join(TUT, "README.md"), encoding="utf-8") as f:
        index = f.read()
    for page, prog in re.findall(r"\]\((\d\d_\w+\.md)\) \| `(\d\d_\w+\.sq)`", index):
        assert os.path.exists(os.path.join(TUT, page)), page
        assert os.path.exists(os.path.join(TUT, prog)), prog
    assert len(re.findall(r"\]\(\d\d_\w+\.md\)", index)) == 6


def test_chapter_1_the_mm1_meets_its_closed_form():
    r = run("01_mm1.sq", horizon=50000.0, warmup=1000.0).data()["client"]["response"]
    assert abs(r["mean"] - 1 / (1 - 0.5)) <= r["ci"]


def test_chapter_2_a_pool_of_two_slots_is_an_mm2():
    lam, mu, c = 1.0, 1.0, 2
    a, rho = lam / mu, lam / (c * mu)
    p0 = 1 / (1 + a + a ** 2 / (2 * (1 - rho)))
    wq = (a ** 2 / (2 * (1 - rho))) * p0 / (c * mu - lam)
    r = run("02_pool.sq", horizon=100000.0, warmup=1000.0).data()["client"]["response"]
    assert wq + 1 / mu == pytest.approx(4 / 3)
    assert abs(r["mean"] - 4 / 3) <= r["ci"]


def test_chapter_3_the_engines_iterations_as_the_table_says():
    rep = run("03_engine.sq", horizon=10.0)
    assert by_session(rep, "first") == {0: 1.0, 1: 2.0}
    assert by_session(rep, "done") == {0: 3.0, 1: 3.0}
    rep = run("03_engine.sq", horizon=10.0, sets={"B": "16"})
    assert by_session(rep, "first") == {0: 1.0, 1: 1.0}


def test_chapter_4_later_turns_hit_the_prefix_cache():
    d = run("04_multiturn.sq", horizon=600.0, warmup=60.0).data()
    hit = d["observes"]["hit"]
    assert 0.75 < hit["mean"] < 0.87          # the turns after each session's first
    kv = next(p for p in d["pools"] if p["name"] == "kv")
    assert kv["cached"] > 10 * kv["used"] and kv["evictions"] > 0


def test_chapter_5_the_claims_verdicts():
    claims = {c["name"]: c["verdict"] for c in run("05_claim.sq", horizon=10.0).data()["claims"]}
    assert claims == {"within_budget": "holds", "full": "witnessed", "on_time": "holds"}
    claims = {c["name"]: c["verdict"] for c in
              run("05_claim.sq", horizon=10.0, sets={"B": "4"}).data()["claims"]}
    assert claims["on_time"] == "fails"


def test_chapter_6_the_seeds_of_the_loaded_queue():
    means = [round(run("01_mm1.sq", horizon=20000.0, warmup=1000.0, seed=s,
                       sets={"lambda": "0.9"}).data()["client"]["response"]["mean"], 1) for s in (1, 2, 3)]
    assert means == [11.9, 9.5, 9.3]


def test_getting_started_shows_the_report_the_command_prints():
    from click.testing import CliRunner
    from serq.cli import main
    with open(os.path.join(ROOT, "docs", "getting-started.md"), encoding="utf-8") as f:
        page = f.read()
    shown = page.split("The report:\n\n```\n", 1)[1].split("```", 1)[0]
    r = CliRunner().invoke(main, ["run", "examples/single-turn/mg1.sq", "--horizon", "20000", "--warmup",
                                  "1000", "--set", "lambda=0.5"])
    assert r.exit_code == 0
    assert r.output.startswith(shown.rstrip("\n"))
    bad = page.split("$ serq run bad.sq --horizon 10\n", 1)[1].split("```", 1)[0]
    src = ('use "std/args";\nfn main() {\n  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = '
           '~exp(1); } }\n  server { run svc (cost(svc, ss)); }\n}\n')
    from serq.diag import SerqError
    from serq.link import compile_source
    with pytest.raises(SerqError) as e:
        compile_source(src, "bad.sq")
    assert e.value.render() == bad.rstrip("\n")


def test_the_catalogue_names_every_name_the_language_supplies():
    from serq.link import catalogue as C
    with open(os.path.join(ROOT, "docs", "catalogue.md"), encoding="utf-8") as f:
        page = f.read()
    names = (set(C.FUNCTIONS) | set(C.POOL_QUERIES) | set(C.STAGE_QUERIES) | C.OTHER_FUNCTIONS
             | set(C.AGGREGATES) | set(C.AGG_KINDS) | set(C.CTX_BARE))
    missing = sorted(n for n in names if f"`{n}" not in page and f" {n}(" not in page and f"`{n}(" not in page)
    assert missing == []
    for d in C.DISTS:
        assert f"`~{d}(" in page, d
    for lst, table in (("running", C.RUNNING), ("batch", C.BATCH), ("waiting", C.WAITING)):
        for k in table:
            assert f"{lst}.{k}" in page, (lst, k)
    from serq.ir.model import BUILTIN_ATTRS
    for a in BUILTIN_ATTRS:
        assert f"`{a}`" in page, a


def test_the_development_guides_sweep_loop_runs_as_written():
    """The tutorial's copy of the development guide's loop, with `.client.ttft`:
    run by the shell (one input value and one seed of it) with jq, each line
    the Python API's numbers for the same run."""
    import shutil
    import subprocess
    import sys
    import serq
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    with open(os.path.join(TUT, "06_sweep.md"), encoding="utf-8") as f:
        page = f.read()
    loop = next(b for b in re.findall(r"```sh\n(.*?)```", page, flags=re.S) if ".client.ttft.mean" in b)
    loop = loop.replace("for lam in 0.3 0.6 0.9", "for lam in 0.6").replace("for seed in 1 2 3", "for seed in 2")
    bindir = os.path.dirname(sys.executable)
    r = subprocess.run(["bash", "-c", loop], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"]})
    assert r.returncode == 0 and r.stderr == "", r.stderr
    rep = serq.load("examples/multi-turn/vllm.sq", set={"Lambda": 0.6}).run(seed=2)
    assert r.stdout.split("\n") == [f"0.6\t2\t{rep.client['ttft'].mean!r}\t{rep.pools['kv'].preemptions}", ""]


def test_pages_name_the_pool_columns_the_report_prints():
    """The tutorial and prefix-cache.md name a pool's columns as the report
    prints them (`admissions`, `rejected`, `evictions`, `evicted`), never an
    older report's (`admits`, `rej`, `evict(n)`, `evict(u)`)."""
    import re
    from serq.sim.report import POOL_HEADERS, STAGE_HEADER
    columns = set(POOL_HEADERS[0]) | set(POOL_HEADERS[1]) | set(STAGE_HEADER)
    old = {"admits", "rej", "evict(n)", "evict(u)", "preempt", "util", "thru", "iters", "done"}
    for page in ("docs/tutorial/02_pool.md", "docs/tutorial/04_multiturn.md", "docs/prefix-cache.md",
                 "docs/report.md", "docs/getting-started.md"):
        text = open(page, encoding="utf-8").read()
        named = set(re.findall(r"`([a-z_()]+)`", text))
        assert not named & old, (page, sorted(named & old))
    said = {"docs/tutorial/02_pool.md": {"used", "queue", "wait", "admissions", "rejected"},
            "docs/tutorial/04_multiturn.md": {"evictions", "evicted"},
            "docs/prefix-cache.md": {"evictions", "evicted"}}
    for page, want in said.items():
        text = open(page, encoding="utf-8").read()
        assert want <= set(re.findall(r"`([a-z_]+)`", text)) and want <= columns, page
