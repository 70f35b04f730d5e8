"""Instance files (`run { … }` beside a program), the default instance, and
inputs after `--`."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from serq.cli import main
from serq.diag import SerqError
from serq.instance import default_for, read
from serq.link import compile_file
from tools.examples import programs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args):
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


@pytest.mark.parametrize("example", programs())
def test_every_example_has_a_default_instance_that_links(example):
    path = default_for(os.path.join(ROOT, example))
    assert path is not None, f"no instances/{os.path.basename(example)} beside {example}"
    inst = read(path)
    assert inst.settings["horizon"] > 0
    compile_file(os.path.join(ROOT, example), sets=inst.inputs, horizon=inst.settings["horizon"],
                 warmup=inst.settings.get("warmup", 0.0), seed=inst.settings.get("seed", 1))


def test_the_default_instance_is_the_readmes_run():
    """`serq run examples/multi-turn/vllm.sq` (its default instance) prints what
    the README's `--horizon 300 --warmup 30` does, byte for byte."""
    a = cli("run", "examples/multi-turn/vllm.sq")
    b = cli("run", "examples/multi-turn/vllm.sq", "--instance", "examples/multi-turn/instances/vllm.sq")
    c = cli("run", "examples/multi-turn/vllm.sq", "--horizon", "300", "--warmup", "30")
    assert a[0] == 0 and a == b
    # the flags make the same run; only the made line says no instance was read
    made, rest = a[1].split("\n", 1)
    assert made == ("made: program examples/multi-turn/vllm.sq instance examples/multi-turn/instances/vllm.sq "
                    "seed 1 horizon 300 warmup 30")
    assert c == (0, "made: program examples/multi-turn/vllm.sq seed 1 horizon 300 warmup 30\n" + rest)


def test_flags_and_sets_win_over_the_instance(tmp_path):
    inst = tmp_path / "i.sq"
    inst.write_text("run { horizon 500; warmup 50; seed 3; lambda 0.3; S 2; }\n", encoding="utf-8")
    code, out = cli("run", "examples/single-turn/mg1.sq", "--instance", str(inst), "--json")
    assert code == 0
    import json
    d = json.loads(out)
    assert (d["made"]["horizon"], d["made"]["warmup"], d["made"]["seed"]) == (500.0, 50.0, 3)
    assert d["stages"][0]["utilization"] == pytest.approx(0.6, abs=0.15)    # lambda 0.3 · S 2
    code, out = cli("run", "examples/single-turn/mg1.sq", "--instance", str(inst), "--json",
                    "--horizon", "800", "--set", "S=1", "--", "lambda=0.5")
    d = json.loads(out)
    assert (d["made"]["horizon"], d["made"]["warmup"], d["made"]["seed"]) == (800.0, 50.0, 3)
    assert d["stages"][0]["utilization"] == pytest.approx(0.5, abs=0.1)


def test_inputs_after_a_double_dash_are_sets():
    a = cli("run", "examples/single-turn/mg1.sq", "--horizon", "1000", "--", "lambda=0.3")
    b = cli("run", "examples/single-turn/mg1.sq", "--horizon", "1000", "--set", "lambda=0.3")
    assert a[0] == 0 and a == b
    code, out = cli("ir", "examples/single-turn/mg1.sq", "--horizon", "10", "--", "lambda=0.3", "S=2")
    assert code == 0 and '"Poisson": 0.3' in out


def test_without_a_horizon_or_an_instance_run_says_what_to_pass(tmp_path):
    prog = tmp_path / "p.sq"
    with open(os.path.join(ROOT, "examples", "single-turn", "mg1.sq"), encoding="utf-8") as f:
        prog.write_text(f.read(), encoding="utf-8")
    code, out = cli("run", str(prog))
    assert code == 2
    assert ("Error: no horizon: a model says what the deployment is, the run says how long. Give "
            "--horizon T (and --warmup, --seed), or an instance file with --instance FILE "
            f"(`run {{ horizon T; warmup W; }}`); `{tmp_path / 'instances' / 'p.sq'}` would be this "
            "program's default instance") in " ".join(out.split())


def test_ir_without_a_horizon_is_for_inspection():
    code, out = cli("ir", "examples/single-turn/mg1.sq")
    assert code == 0 and '"horizon": 20000.0' in out      # its default instance
    code, out = cli("check", "examples/single-turn/mg1.sq")
    assert code == 0


def test_instance_file_errors_are_located(tmp_path):
    bad = tmp_path / "bad.sq"
    bad.write_text("run { horizon -3; horizon 4; lamda 0.3; }\n", encoding="utf-8")
    with pytest.raises(SerqError) as e:
        read(str(bad))
    assert e.value.render() == (
        f"{bad}:1:15: error[E120]: the horizon is a positive finite number, not -3\n"
        "  |\n1 | run { horizon -3; horizon 4; lamda 0.3; }\n  |               ^^\n"
        "  = help: an instance file is `run { horizon T; warmup W; seed N; NAME value; }`\n\n"
        f"{bad}:1:19: error[E121]: `horizon` is given twice\n"
        "  |\n1 | run { horizon -3; horizon 4; lamda 0.3; }\n  |                   ^^^^^^^\n"
        f"  = note: first given at {bad}:1:7\n\nerror: 2 errors")
    bad.write_text("run { horizon 10; lamda 0.3; }\n", encoding="utf-8")
    code, out = cli("run", "examples/single-turn/mg1.sq", "--instance", str(bad))
    assert code == 1
    assert out.startswith(f"{bad}:1:19: error[E251]: `lamda`: the program declares no input `lamda`")
    assert "did you mean `lambda`?" in out


def test_a_seed_is_below_2_to_the_64_and_read_to_its_last_digit(tmp_path):
    """A seed's 64 bits seed the random streams (serq/sim/rng.py): seed 2^64
    ran as seed 0 and said it was 2^64, and an instance's `seed 9007199254740993`
    ran as 9007199254740992 (a float's), said so, and differed from `--seed
    9007199254740993`.  Every way a seed is given takes it whole or refuses it."""
    inst = tmp_path / "i.sq"
    inst.write_text("run { horizon 10; seed 9007199254740993; }\n", encoding="utf-8")
    assert read(str(inst)).settings["seed"] == 9007199254740993
    by_file = cli("run", "examples/single-turn/mg1.sq", "--instance", str(inst), "--json")
    by_flag = cli("run", "examples/single-turn/mg1.sq", "--horizon", "10", "--warmup", "0",
                      "--seed", "9007199254740993", "--json")
    assert by_file[0] == by_flag[0] == 0
    strip = lambda out: {k: v for k, v in __import__("json").loads(out).items() if k != "made"}
    assert strip(by_file[1]) == strip(by_flag[1])
    inst.write_text("run { horizon 10; seed 18446744073709551616; }\n", encoding="utf-8")
    with pytest.raises(SerqError) as e:
        read(str(inst))
    assert e.value.render() == (
        f"{inst}:1:24: error[E120]: a seed is a whole number from 0 to 2^64 − 1, not 18446744073709551616\n"
        "  |\n1 | run { horizon 10; seed 18446744073709551616; }\n  |                        ^^^^^^^^^^^^^^^^^^^^\n"
        "  = help: an instance file is `run { horizon T; warmup W; seed N; NAME value; }`")
    code, out = cli("run", "examples/single-turn/mg1.sq", "--horizon", "10", "--seed", "18446744073709551616")
    assert (code, out.splitlines()[-1]) == (
        2, "Error: Invalid value for '--seed': a seed is a whole number from 0 to 2^64 − 1, not 18446744073709551616")
    import serq
    with pytest.raises(SerqError) as e:
        serq.load("examples/single-turn/mg1.sq").run(horizon=10, warmup=1, seed=2 ** 64)
    assert e.value.render() == ("$.seed: error[E740]: seed must be a whole number from 0 to 2^64 − 1, "
                                "not 18446744073709551616")
    assert cli("run", "examples/single-turn/mg1.sq", "--horizon", "10", "--seed", str(2 ** 64 - 1))[0] == 0


def test_a_generated_traces_seed_is_not_negative():
    """`serq mooncake-trace --seed -1` was `--seed 1`'s trace (random.Random takes |seed|)."""
    code, out = cli("mooncake-trace", "--requests", "1", "--seed", "-1")
    assert (code, out.splitlines()[-1]) == (2, "Error: Invalid value for '--seed': -1 is not in the range x>=0.")
