"""Calibration recovers the constants a profile was made from, within the
uncertainty it states; and says what it cannot fit."""

import os

import pytest

from serq.api import calibration as C
from serq.diag import SerqError
from serq.link import compile_file

from .synthetic import write_bundle

PROGRAM = "examples/replay/vllm_measured.sq"
# Llama-3.1-8B on an RTX PRO 6000's order of magnitude (seconds)
TRUTH = {"dflat": 3.5e-4, "dlo": 4e-7, "dfix": 2e-4, "dtok": 1.1e-6, "kd": 2.8e-9, "km": 3.8e-9,
         "kmn": 2e-11, "kp": 1.6e-8, "at": 5e-11, "head": 3e-6}


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    tp = write_bundle(str(root), compile_file(PROGRAM, horizon=1.0), TRUTH, noise=0.01)
    return C.calibrate(tp, PROGRAM, {}, budget=2048, max_seqs=128)


def test_every_constant_is_recovered_within_three_standard_errors(calibrated):
    cal = calibrated.calibration
    fitted = {c.name: c for c in cal.constants if not c.held}
    assert set(fitted) == set(TRUTH)
    for name, true in TRUTH.items():
        c = fitted[name]
        assert c.sigma is not None and 0 < c.sigma < 0.2 * true, (name, c.value, c.sigma)
        assert abs(c.value - true) <= 3 * c.sigma, (name, c.value, true, c.sigma)


def test_the_held_constants_keep_their_values_and_say_why(calibrated):
    held = {c.name: c for c in calibrated.calibration.constants if c.held}
    assert held["layers"].value == 32 and held["layers"].held == "the model's layer count"
    assert held["gap"].value == 0.0017 and "kernel profile does not measure" in held["gap"].held
    assert set(held) == {"layers", "gap", "ar_lat", "ar_tok"}


def test_the_residuals_are_the_noise_per_regime(calibrated):
    res = {r.regime: r for r in calibrated.calibration.residuals}
    assert set(res) == {"decode", "prefill", "mixed", "all"}
    for r in res.values():
        # lognormal noise of 1 %: |error| has median 0.67 % and P90 1.6 %
        assert 0.004 < r.median < 0.01 and r.p90 < 0.025, r


def test_the_instance_file_runs_the_program_with_the_constants(calibrated, tmp_path):
    from serq import instance
    path = tmp_path / "inst.sq"
    path.write_text(calibrated.instance_text)
    inst = instance.read(str(path))
    for c in calibrated.calibration.constants:
        assert c.name in inst.inputs, c.name
    assert inst.settings == {"horizon": 60.0, "warmup": 10.0, "seed": 1}
    p = compile_file(PROGRAM, sets=inst.inputs, horizon=1.0)
    nums = {x.input: x.value for st in p.stages if st.name == "vllm" for x in _nums(st.kind.cost)}
    for c in calibrated.calibration.constants:
        assert nums[c.name] == pytest.approx(c.value, rel=1e-5), c.name


def _nums(e):
    from serq.ir import model as M
    from serq.ir.expr import walk
    return [x for x in walk(e) if type(x) is M.ENum and x.input is not None]


def test_a_cost_whose_constants_the_profile_cannot_tell_apart_is_refused(tmp_path):
    tp = write_bundle(str(tmp_path), compile_file(PROGRAM, horizon=1.0), TRUTH)
    with pytest.raises(SerqError) as e:
        C.calibrate(tp, PROGRAM, {}, free_too=("gap",))
    assert e.value.diagnostics[0].message == (
        "the profile cannot tell `gap`, `dflat`, `dfix` apart: they change the cost the same way at every "
        "profiled batch")


def test_a_cost_with_no_named_constant_has_nothing_to_fit(tmp_path):
    tp = write_bundle(str(tmp_path), compile_file(PROGRAM, horizon=1.0), TRUTH)
    prog = tmp_path / "p.sq"
    src = open(PROGRAM).read()
    src = src.replace('use "../lib/vllm.sq";', f'use "{os.path.abspath("examples/lib/vllm.sq")}";')
    start = src.index("    execute (")
    end = src.index(";", start)
    prog.write_text(src[:start] + "    execute (0.01 + 0.0001 * batch.tokens)" + src[end:])
    with pytest.raises(SerqError) as e:
        C.calibrate(tp, str(prog), {})
    assert e.value.diagnostics[0].message.startswith("the cost names no constants")


@pytest.mark.parametrize("kw, code, message, help", [
    (dict(free_too=("nope",)), "E983", "--fit nope: the cost names no constant `nope` (it names gap, head, layers, "
     "dflat, dlo, dfix, dtok, km, kmn, kd, kp, at, ar_lat, ar_tok)", None),
    (dict(free_too=("dfix",)), "E983", "--fit dfix: the profile measures `dfix`, so it is fitted without --fit",
     "--fit names a constant a kernel profile does not measure: gap, ar_lat, ar_tok"),
    (dict(hold=("gap",), free_too=("gap",)), "E984", "--hold gap and --fit gap: a constant is held at its value "
     "or fitted, not both", None),
])
def test_a_fit_of_a_constant_it_cannot_fit_is_refused(tmp_path, kw, code, message, help):
    """`--fit nope` and `--fit dfix` were accepted and did nothing; `--hold gap --fit gap`
    held gap and said nothing.  Each is refused before the fit, nothing written."""
    tp = write_bundle(str(tmp_path), compile_file(PROGRAM, horizon=1.0), TRUTH)
    with pytest.raises(SerqError) as e:
        C.calibrate(tp, PROGRAM, {}, **kw)
    d = e.value.diagnostics[0]
    assert (d.code, d.message, d.help) == (code, message, help)


def test_a_comment_of_several_lines_is_a_comment_line_each(tmp_path):
    """`--comment "$(printf 'a\\nb')"` wrote `b` as a line of the instance file's
    code, which serq then refused (E102 at `b`); bytes that are not UTF-8 were an
    internal error (exit 3) as the file was written."""
    from serq import instance
    tp = write_bundle(str(tmp_path), compile_file(PROGRAM, horizon=1.0), TRUTH)
    res = C.calibrate(tp, PROGRAM, {}, comments=["a\nb\r\nc\rd\u2028e", "", "x */ y"])
    lines = res.instance_text.splitlines()
    start = lines.index("// a")
    assert lines[start:start + 8] == ["// a", "// b", "// c", "// d", "// e", "//", "// x */ y", "run {"]
    out = tmp_path / "c.sq"
    out.write_text(res.instance_text, encoding="utf-8")
    assert instance.read(str(out)).settings == {"horizon": 60.0, "warmup": 10.0, "seed": 1}
    with pytest.raises(SerqError) as e:
        C.calibrate(tp, PROGRAM, {}, comments=["ok", "e\udc85f"])
    d = e.value.diagnostics[0]
    assert (d.code, d.message, d.help) == ("E984", "--comment 'e\\udc85f': byte 0x85 is not UTF-8",
                                           "the instance file is UTF-8: write the comment in it")
