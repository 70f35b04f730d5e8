"""`make lean`'s checks that do not need Lean: the audit script lists every
theorem, the audit's output is read right, `sorry` is found, and without
`lake` tools/lean.sh says so and fails."""

import os
import shutil
import subprocess

from leangen import audit as A

from .util import ROOT

LEAN = os.path.join(ROOT, "lean")


def test_theorem_names_follow_namespaces_and_skip_comments():
    text = """/- theorem not_this : True -/
namespace A.B
-- theorem nor_this : True
theorem t1 : True := trivial
section S
theorem t2 : True := trivial
end S
namespace C
theorem t3 : True := trivial
end C
end A.B
theorem t4 : True := trivial
"""
    assert A.theorems(text) == ["A.B.t1", "A.B.t2", "A.B.C.t3", "t4"]


def test_the_audit_lists_the_hand_written_theorems():
    script = A.audit_script(LEAN)
    assert script.startswith("-- Generated") and "import Serq\n" in script
    for name in ("Serq.Thm.Memory.invariant", "Serq.Thm.Serve.serve_eq_decode_first",
                 "Serq.Thm.Serve.chunk_cap_breaks_shape", "Serq.Gen.Oracle.vllm_mixed"):
        assert f"#print axioms {name}\n" in script


def test_no_sorry_in_the_package():
    assert A.sorries(LEAN) == []


def test_a_sorry_is_found(tmp_path):
    (tmp_path / "Serq").mkdir()
    (tmp_path / "Serq" / "X.lean").write_text("-- sorry in a comment is fine\ntheorem x : False := by\n  sorry\n")
    assert A.sorries(str(tmp_path)) == [f"{os.path.basename(tmp_path)}/Serq/X.lean:3"]


def test_axioms_output():
    out = ("'A.ok' depends on axioms: [propext, Quot.sound]\n"
           "'A.none' does not depend on any axioms\n"
           "'A.bad' depends on axioms: [propext, sorryAx, Lean.ofReduceBool]\n")
    assert A.check_axioms(out, ["A.ok", "A.none", "A.bad", "A.missing"]) == [
        "A.bad depends on Lean.ofReduceBool, sorryAx", "A.missing: no `#print axioms` answer"]


def test_lean_sh_without_lake_says_so():
    env = dict(os.environ)
    # a PATH with python but without lake
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not os.path.exists(os.path.join(p, "lake")))
    assert shutil.which("lake", path=env["PATH"]) is None
    res = subprocess.run(["bash", os.path.join(ROOT, "tools", "lean.sh")], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert res.returncode != 0
    assert ("lake not found: the Lean toolchain is not installed here; "
            "the generated files were checked for staleness only") in res.stderr
