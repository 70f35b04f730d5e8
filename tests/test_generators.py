"""Generated files are never lost (issue 10): `make golden` and `make
oracle-ir` write every file or none, nothing when an input is refused, and
never over a file that is not the IR of the same program (the Lean
generator's own rules are in tests/leangen/test_generate.py)."""

import os
import sys

import pytest

import tools.check as check
from tools.generated import check_generated, same_program

from serq.ir import dumps
from serq.link import compile_file

MG1, PS = "examples/single-turn/mg1.sq", "examples/single-turn/ps.sq"


def test_a_file_of_another_program_stops_the_write_of_all(tmp_path):
    mine, other = tmp_path / "mg1.ir.json", tmp_path / "ps.ir.json"
    other.write_text(dumps(compile_file(MG1, horizon=100)))     # not ps's IR
    pairs = [(str(mine), dumps(compile_file(MG1, horizon=100))), (str(other), dumps(compile_file(PS, horizon=100)))]
    assert check_generated(pairs, True, source=same_program) == [
        f"REFUSED: {other}: it is the IR of {MG1}, not of {PS}; nothing written"]
    assert not mine.exists()
    assert other.read_text() == dumps(compile_file(MG1, horizon=100))


def test_a_file_that_is_no_ir_is_not_written_over(tmp_path):
    notes = tmp_path / "mg1.ir.json"
    notes.write_text("my notes\n")
    assert check_generated([(str(notes), dumps(compile_file(MG1, horizon=100)))], True, source=same_program) == [
        f"REFUSED: {notes}: it is not an IR file; nothing written"]
    assert notes.read_text() == "my notes\n"


def test_make_golden_writes_nothing_when_an_example_is_refused(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.sq"
    bad.write_text("fn main() { stage s : fifo }\n")
    out = tmp_path / "golden"
    monkeypatch.setattr(check, "examples", lambda: [MG1, str(bad)])
    monkeypatch.setattr(check, "golden_ir_path", lambda ex: str(out / (os.path.basename(ex) + ".ir.json")))
    monkeypatch.setattr(check, "oracle_ir_files", lambda: [])
    monkeypatch.setattr(sys, "argv", ["check.py", "--write-golden"])
    assert check.main() == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.endswith(f"FAIL: {bad} does not link\ncheck: 1 problem(s); no golden file written\n")


def test_make_oracle_ir_writes_nothing_when_a_scenario_is_refused(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"budget": 16}\n')
    out = tmp_path / "bad.ir.json"
    monkeypatch.setattr(check, "oracle_ir_files", lambda: [("scenario", str(bad), str(out))])
    monkeypatch.setattr(sys, "argv", ["check.py", "--write-oracle-ir"])
    assert check.main() == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.endswith(f"FAIL: {bad} does not compile\noracle-ir: 1 scenario(s) refused; nothing written\n")


@pytest.mark.parametrize("what", ["golden", "oracle"])
def test_the_committed_files_are_what_the_generators_write(what, monkeypatch):
    """(so the rules above refuse nothing in the repository)"""
    monkeypatch.chdir(check.ROOT)
    if what == "golden":
        pairs = [(check.golden_ir_path(ex), check.golden_ir(ex)) for ex in check.examples()]
    else:
        pairs = [(p, check.oracle_ir(k, s)) for k, s, p in check.oracle_ir_files()]
    for path, text in pairs:
        assert same_program(path, open(path, encoding="utf-8").read(), text) is None
