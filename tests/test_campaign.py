"""`serq.oracle.campaign` (serq/oracle/campaigns.py), the fuzz loop under
`serq oracle fuzz` and `pd-fuzz`: refusals without vLLM; with it, a campaign
whose serQ side is made wrong finds, shrinks and writes the disagreement."""

from __future__ import annotations

import json

import pytest

import serq
from serq.oracle import campaigns as C

from .helpers import needs_vllm


@pytest.mark.parametrize("args, message", [
    (dict(harness="tgi"), "error[E964]: no oracle harness 'tgi'\n"
                          "  = help: a harness is one of scenario, replay, mooncake, pd, sglang"),
    (dict(n=0), "error[E964]: a campaign runs n ≥ 1 inputs, not 0"),
    (dict(seed=-1), "error[E964]: a campaign's seed is a whole number from 0 to 2^64 − 1, not -1"),
    (dict(seed=2 ** 64), "error[E964]: a campaign's seed is a whole number from 0 to 2^64 − 1, not "
                         "18446744073709551616"),
])
def test_a_campaign_refuses_what_it_cannot_run(args, message):
    with pytest.raises(serq.SerqError) as e:
        serq.oracle.campaign(**args)
    assert e.value.render() == message


def test_the_python_names_are_the_campaign_module_s():
    assert serq.oracle.campaign is C.campaign and serq.oracle.Campaign is C.Campaign
    assert C.HARNESSES == ("scenario", "replay", "mooncake", "pd", "sglang")


@pytest.mark.vllm
@needs_vllm
def test_a_small_campaign_agrees_and_its_summary_is_the_cli_s():
    c = serq.oracle.campaign("replay", n=6, seed=3)
    assert c.agree and c.disagreements == []
    assert c.summary().startswith("fuzz: 6 replay inputs with shared content (seed 3), 0 disagreed; ")
    assert set(c.seconds) == {"serq", "link", "run", "vllm", "start", "wall"}
    assert abs(c.seconds["serq"] - c.seconds["link"] - c.seconds["run"]) < 1e-9


@pytest.mark.vllm
@needs_vllm
def test_a_wrong_serq_side_is_found_shrunk_and_written(tmp_path, monkeypatch):
    """serQ's decoder given one KV block fewer than vLLM's: the campaign finds
    the scenarios where that matters, shrinks each to one that still
    disagrees and writes it with its first divergence."""
    from serq.oracle import pd as PD
    right = PD.inputs

    def wrong(s):
        out = right(s)
        out["blocksD"] = str(int(out["blocksD"]) + 1)
        return out
    monkeypatch.setattr(PD, "inputs", wrong)
    lines = []
    c = serq.oracle.campaign("pd", n=2, seed=1, out=str(tmp_path), progress=lines.append)
    # scenario 0's D never needs its last block; scenario 1's does
    assert [d.index for d in c.disagreements] == [1]
    assert c.summary().startswith("pd-fuzz: 2 scenarios (seed 1), 1 disagreed; ")
    for d in c.disagreements:
        assert len(d.shrunk["requests"]) <= len(d.scenario["requests"]) and d.differences
        assert d.divergence.startswith("first divergence at tick ")
        with open(d.path, encoding="utf-8") as f:
            assert json.load(f) == d.shrunk
        with open(d.path[:-5] + ".divergence.txt", encoding="utf-8") as f:
            assert f.read() == d.divergence + "\n" + "\n".join(d.differences) + "\n"
        assert f"scenario {d.index}: DISAGREE (" in "\n".join(lines)


@pytest.mark.parametrize("command", ["fuzz", "pd-fuzz", "sglang-fuzz"])
def test_a_fuzz_seed_past_2_64_is_refused_at_its_option(command, tmp_path):
    """`serq oracle fuzz --seed 1180591620717411303424` (2^70) was taken, its scenarios
    a campaign of their own: the seed range is serq's one, as for run and
    mooncake-trace, refused before anything runs or is written."""
    from click.testing import CliRunner
    from serq.cli import main
    for seed in (2 ** 64, 2 ** 70):
        r = CliRunner().invoke(main, ["oracle", command, "--n", "1", "--seed", str(seed), "--out", str(tmp_path / "f")])
        assert (r.exit_code, r.stdout, r.stderr.splitlines()[-1]) == (
            2, "", f"Error: Invalid value for '--seed': a seed is a whole number from 0 to 2^64 − 1, not {seed}")
    assert list(tmp_path.iterdir()) == []
