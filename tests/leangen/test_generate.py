"""The generated Lean files: current, byte-identical on re-run, golden; the
values each oracle theorem states are the vLLM outputs; a program outside
the fragment stops the generator and nothing is written."""

import dataclasses
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from serq.ir import dumps, model as M, read
from leangen import generate as G

from .util import ROOT, oracle_ir

LEAN = os.path.join(ROOT, "lean")
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
WRITE = os.environ.get("LEANGEN_WRITE_GOLDEN") == "1"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "leangen", *args], cwd=ROOT, capture_output=True, text=True)


# ---------------------------------------------------------------- current, byte-identical

def test_oracle_files_are_current():
    res = run_cli("oracle", "--check")
    assert res.returncode == 0, res.stderr


def test_claims_files_are_current():
    res = run_cli("claims", "--check")
    assert res.returncode == 0, res.stderr


def test_generation_is_byte_identical():
    oracle_dir = os.path.join(ROOT, "tools", "oracle")
    a = G.oracle_outputs(oracle_dir)
    b = G.oracle_outputs(oracle_dir)
    assert [(o.path, o.text) for o in a] == [(o.path, o.text) for o in b]
    c = G.claims_outputs([claims_input()], LEAN)
    d = G.claims_outputs([claims_input()], LEAN)
    assert [(o.path, o.text) for o in c] == [(o.path, o.text) for o in d]


# ---------------------------------------------------------------- the values stated are vLLM's

def expected_rhs(ir, out: dict) -> str:
    """The right-hand side, written from the .out.json alone."""
    def pairs(xs):
        return "[" + ", ".join(f"({s}, {v})" for s, v in xs) + "]"
    if "requests" in out:
        key = {"sent": "sent", "first": "first", "done": "last", "cached_tokens": "cached"}
        rows = sorted(out["requests"], key=lambda r: (r["session"], r["turn"]))
        return "[" + ", ".join(pairs([(r["session"], r[key[o]]) for r in rows]) for o in ir.observes) + "]"
    lists = [pairs(sorted((int(s), v) for s, v in out[o].items())) for o in ir.observes]
    return "([" + ", ".join(lists) + f"], {out['preemptions']})"


def oracle_statements():
    text = open(os.path.join(LEAN, "Serq", "Gen", "Oracle.lean"), encoding="utf-8").read()
    stmts = {}
    for block in text.split("\n\n"):
        lines = block.strip().split("\n")
        for i, ln in enumerate(lines):
            if ln.startswith("theorem vllm_"):
                stmts[ln.split()[1]] = "\n".join(lines[i + 1:])
    return stmts


def test_every_oracle_theorem_states_the_vllm_output():
    stmts = oracle_statements()
    files = G.oracle_files(os.path.join(ROOT, "tools", "oracle"))
    assert len(files) >= 10
    for path in files:
        base = path[: -len(".ir.json")]
        name = G.ident(os.path.basename(base))
        ir = read(path)
        out = json.load(open(base + ".out.json", encoding="utf-8"))
        body = stmts[f"vllm_{name}"]
        assert body.split("=\n", 1)[1].split(" := by")[0].strip() == expected_rhs(ir, out), name
        steps = stmts[f"vllm_{name}_steps"]
        assert steps.strip().split(" := by")[0].endswith(f"= {out['steps']}"), name
        assert "decide +kernel" in body and "decide +kernel" in steps


def test_no_oracle_statement_is_left_unproved():
    text = open(os.path.join(LEAN, "Serq", "Gen", "Oracle.unproved.txt"), encoding="utf-8").read()
    assert [ln for ln in text.splitlines() if not ln.startswith("#")] == []


# ---------------------------------------------------------------- failures

def tmp_oracle(tmp_path, mutate=None, out_edit=None):
    """An oracle directory with hol's IR and output, maybe altered."""
    d = tmp_path / "oracle" / "scenarios"
    d.mkdir(parents=True)
    src = os.path.join(ROOT, "tools", "oracle", "scenarios", "hol.json")
    ir = oracle_ir(src)
    if mutate:
        ir = mutate(ir)
    (d / "hol.ir.json").write_text(dumps(ir), encoding="utf-8")
    out = json.load(open(src[:-5] + ".out.json", encoding="utf-8"))
    if out_edit:
        out_edit(out)
    (d / "hol.out.json").write_text(json.dumps(out), encoding="utf-8")
    return str(tmp_path / "oracle")


def test_outside_the_fragment_stops_and_writes_nothing(tmp_path):
    oracle = tmp_oracle(tmp_path, mutate=lambda p: dataclasses.replace(p, arrival=M.AClosed(3)))
    lean = tmp_path / "lean"
    res = run_cli("oracle", "--oracle-dir", oracle, "--lean-dir", str(lean))
    assert res.returncode == 1
    assert res.stderr == ("FAIL: outside the Lean fragment: a closed population (arrive closed(…)) "
                          "at examples/oracle/vllm_request.sq:67:7\n")
    assert not lean.exists()


def test_a_content_addressed_pool_stops_and_writes_nothing(tmp_path):
    oracle = tmp_oracle(tmp_path, mutate=lambda p: dataclasses.replace(
        p, pools=(dataclasses.replace(p.pools[0], shared=True),) + p.pools[1:]))
    lean = tmp_path / "lean"
    res = run_cli("oracle", "--oracle-dir", oracle, "--lean-dir", str(lean))
    assert res.returncode == 1
    assert res.stderr == ("FAIL: outside the Lean fragment: a content-addressed pool `kv` (cache shared; the "
                          "semantics' cache entries are per session) at examples/oracle/vllm_request.sq:58:3\n")
    assert not lean.exists()


def test_an_oracle_program_has_explicit_sessions(tmp_path):
    """A program whose sessions arrive by a law is inside the fragment (its
    claims are stated over its family) but is no oracle scenario."""
    oracle = tmp_oracle(tmp_path, mutate=lambda p: dataclasses.replace(p, arrival=M.APoisson(0.5)))
    lean = tmp_path / "lean"
    res = run_cli("oracle", "--oracle-dir", oracle, "--lean-dir", str(lean))
    assert res.returncode == 1
    assert res.stderr.startswith("FAIL: ") and res.stderr.endswith(
        ": its sessions arrive by a law (at any times, in order, arrive poisson(…)): an oracle scenario runs "
        "explicit sessions\n")
    assert not lean.exists()


def test_a_statement_exec_does_not_reproduce_is_stated_not_proved(tmp_path):
    def wrong(out):
        out["first"]["0"] += 1
    oracle = tmp_oracle(tmp_path, out_edit=wrong)
    outs = {o.path: o.text for o in G.oracle_outputs(oracle)}
    lean = outs["Serq/Gen/Oracle.lean"]
    assert "def vllm_hol_stated : Prop :=" in lean and "theorem vllm_hol :" not in lean
    assert "theorem vllm_hol_steps :" in lean
    listed = [ln for ln in outs["Serq/Gen/Oracle.unproved.txt"].splitlines() if not ln.startswith("#")]
    assert len(listed) == 1 and listed[0].startswith("vllm_hol_stated  ")


def test_check_reports_a_stale_file(tmp_path):
    lean = tmp_path / "lean"
    shutil.copytree(os.path.join(LEAN, "Serq"), lean / "Serq")
    path = lean / "Serq" / "Gen" / "Oracle.lean"
    path.write_text(path.read_text(encoding="utf-8") + "\n-- edited\n", encoding="utf-8")
    res = run_cli("oracle", "--check", "--lean-dir", str(lean))
    assert res.returncode == 1
    assert "STALE: " in res.stderr and "Oracle.lean" in res.stderr


# ---------------------------------------------------------------- claims (golden)

def claims_input() -> str:
    return os.path.join(GOLDEN, "claims_example.ir.json")


def claims_example() -> M.Program:
    """hol's program with one claim of each form (one with a given, one that
    does not hold)."""
    hol = oracle_ir(os.path.join(ROOT, "tools", "oracle", "scenarios", "hol.json"))
    loc = lambda line: M.Loc(0, line, 3)  # noqa: E731
    N, C = M.ENum, M.ECtx
    claims = (
        M.Claim("tokens_within_budget", M.CEvery(0), M.EBinary("Le", C("Ntok"), N(64.0)), None, loc(80)),
        M.Claim("a_big_prefill", M.CSome(0), M.EBinary("Ge", C("Npre"), N(40.0)), None, loc(81)),
        M.Claim("all_done", M.CAtEnd(), M.EBinary("Eq", M.EAgg("Count", 1), N(3.0)),
                M.EBinary("Ge", M.EAttr(12), N(8.0)), loc(82)),
        M.Claim("never_decodes", M.CEvery(0), M.EBinary("Eq", C("Ndec"), N(0.0)), None, loc(83)),
    )
    return dataclasses.replace(hol, claims=claims)


def test_the_claims_example_input_is_current():
    text = dumps(claims_example())
    if WRITE:
        open(claims_input(), "w", encoding="utf-8").write(text)
    assert open(claims_input(), encoding="utf-8").read() == text


def test_claims_golden(tmp_path):
    lean = tmp_path / "lean"
    (lean / "Serq" / "Thm").mkdir(parents=True)
    (lean / "Serq" / "Thm" / "ClaimProofs.lean").write_text(
        "theorem claims_example_tokens_within_budget : True := trivial\n", encoding="utf-8")
    outs = G.claims_outputs([claims_input()], str(lean))
    for o in outs:
        golden = os.path.join(GOLDEN, os.path.basename(o.path))
        if WRITE:
            open(golden, "w", encoding="utf-8", newline="\n").write(o.text)
        assert open(golden, encoding="utf-8", newline="").read() == o.text, golden
    listed = [ln.split()[0] for ln in outs[1].text.splitlines() if not ln.startswith("#")]
    assert listed == ["claims_example_a_big_prefill", "claims_example_all_done", "claims_example_never_decodes"]


def test_claims_verdicts():
    from leangen import exec_ref
    from leangen.fragment import translate, translate_claims
    ir = claims_example()
    p = translate(ir)
    verdicts = {name: exec_ref.check(p, G.fuel(ir), c) for name, c in translate_claims(ir)}
    assert verdicts == {"tokens_within_budget": True, "a_big_prefill": True, "all_done": True,
                        "never_decodes": False}


def test_claims_outside_the_fragment_are_listed_not_stated(tmp_path):
    ir = dataclasses.replace(claims_example(), arrival=M.AClosed(3))
    path = tmp_path / "closed.ir.json"
    path.write_text(dumps(ir), encoding="utf-8")
    outs = G.claims_outputs([str(path)], str(tmp_path / "lean"))
    assert "def prog_" not in outs[0].text
    assert "not stated, outside the Lean fragment: " in outs[1].text
    assert "FAIL: outside the Lean fragment: a closed population" in outs[1].text


# ---------------------------------------------------------------- claims over a family (the papers)

PAPERS = ("bari_rad", "dai_fastertransformer", "dai_sarathi", "kong_svf")


def claims_lean() -> str:
    return open(os.path.join(LEAN, "Serq", "Gen", "Claims.lean"), encoding="utf-8").read()


def test_every_paper_claim_is_stated_over_its_family():
    text = claims_lean()
    for name in PAPERS:
        ir = read(os.path.join(ROOT, "tests", "golden", "ir", f"papers__{name}.ir.json"))
        assert f"def prog_papers__{name} (ws : List Session) : Program :=" in text
        assert f"def family_papers__{name} (ws : List Session) : Bool :=" in text
        for c in ir.claims:
            stmt = text.split(f"def papers__{name}_{c.name} : Prop :=\n", 1)[1].split("\n\n", 1)[0]
            quant = "∃ ws" if type(c.kind) is M.CSome else "∀ ws"
            assert stmt.strip().startswith(f"{quant}, family_papers__{name} ws = true"), (name, c.name)
            assert "Serq.Claims.holdsAt (prog_papers__" in stmt
    assert "outside the Lean fragment" not in open(os.path.join(LEAN, "Serq", "Gen", "Claims.unproved.txt"),
                                                   encoding="utf-8").read()


def test_the_families():
    text = claims_lean()
    assert "Serq.Claims.inFamily (Serq.Claims.Law.renewal 46750) [9, 10] 500 ws" in text   # Dai: vp, vd
    assert "Serq.Claims.inFamily Serq.Claims.Law.poisson [9, 10] 500 ws" in text          # Bari
    assert "Serq.Claims.inFamily Serq.Claims.Law.batch [9, 10] 500 ws" in text            # Kong: s, o


def test_a_family_and_its_members():
    from leangen import exec_ref as X
    from leangen.lterms import Session
    ren = ("renewal", 10)
    s = lambda t, a=((9, 1), (10, 2)): Session(t, list(a), [], False)  # noqa: E731
    assert X.inFamily(ren, [9, 10], 500, [s(10), s(20), s(30)])
    assert not X.inFamily(ren, [9, 10], 500, [s(10), s(25)])                  # not the law's time
    assert not X.inFamily(ren, [9, 10], 500, [s(10, ((9, 1),))])               # an init attribute missing
    assert not X.inFamily(ren, [9, 10], 1, [s(10), s(20)])                     # over the bound
    assert X.inFamily(("poisson",), [9, 10], 500, [s(0), s(0), s(7), s(9)])
    assert not X.inFamily(("poisson",), [9, 10], 500, [s(5), s(4)])           # out of order
    assert X.inFamily(("batch",), [9, 10], 500, [s(0)] * 3)
    assert not X.inFamily(("batch",), [9, 10], 500, [s(0), s(1)])


# ---------------------------------------------------------------- the IR is the only input

def test_leangen_reads_only_the_ir():
    import ast
    allowed = ("serq.ir", "serq.diag")
    for path in glob.glob(os.path.join(ROOT, "leangen", "*.py")):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for n in names:
                if n == "serq" or n.startswith("serq."):
                    assert n.startswith(allowed), f"{path} imports {n}"
