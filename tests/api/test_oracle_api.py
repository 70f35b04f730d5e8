"""serq.oracle from Python: the same outcomes and comparisons as `serq oracle …`."""

import json
import os

import pytest
from click.testing import CliRunner

import serq
from serq.cli import main

HOL = "tools/oracle/scenarios/hol.json"
TRACE = "tools/oracle/traces/cache_evict.json"


def test_run_is_serq_oracle_run():
    r = CliRunner().invoke(main, ["oracle", "run", HOL])
    assert json.loads(r.output) == serq.oracle.run(HOL)
    r = CliRunner().invoke(main, ["oracle", "replay", TRACE])
    assert json.loads(r.output) == serq.oracle.run(TRACE)


def test_compare_reads_the_committed_vllm_output():
    c = serq.oracle.compare(HOL)
    assert c.agree and c.fields == [] and c.divergence == "agree" and str(c) == "agree"
    assert c.theirs == {"first": {"0": 1, "1": 13, "2": 13}, "done": {"0": 12, "1": 16, "2": 16},
                        "preemptions": 0, "steps": 17}
    t = serq.oracle.compare(TRACE)
    assert t.agree and t.divergence is None


def test_a_changed_scenario_disagrees_at_its_first_step():
    with open(HOL, encoding="utf-8") as f:
        s = json.load(f)
    s["budget"] = 32
    c = serq.oracle.compare(s, vllm="tools/oracle/scenarios/hol.log.json")
    assert not c.agree
    assert str(c).splitlines()[:3] == ["first divergence at step 0:",
                                       "  serQ: scheduled {r0: 32}; admitted r0; 12 blocks free",
                                       "  vLLM: scheduled {r0: 40}; admitted r0; 10 blocks free"]
    assert "request 0: first serQ 2 vLLM 1" in c.fields
    with pytest.raises(serq.SerqError, match="a scenario given as a dict has no committed vLLM output"):
        serq.oracle.compare(s)


def test_program_is_the_oracle_program_for_the_scenario():
    p = serq.oracle.program(HOL)
    with open("tools/oracle/scenarios/hol.ir.json", encoding="utf-8") as f:
        assert p.json() == f.read()
    assert p.run().observes["done"].count == 3


def test_a_bad_scenario_is_a_located_error():
    with pytest.raises(serq.SerqError) as e:
        serq.oracle.run({"budget": 0})
    assert e.value.render().splitlines()[0] == "error[E951]: scenario: $.max_seqs is missing"
    with pytest.raises(serq.SerqError) as e:
        serq.oracle.run({"budget": 0, "max_seqs": 1, "block_size": 4, "num_blocks": 9, "requests": []})
    assert e.value.render().splitlines()[0] == "error[E951]: scenario: $.budget is 0: a whole number from 1 below 2^53"
    with pytest.raises(serq.SerqError) as e:
        serq.oracle.compare("nope.json")
    assert e.value.render() == "error[E950]: cannot read the scenario nope.json: No such file or directory"


@pytest.mark.vllm
@pytest.mark.skipif(not os.path.exists(os.path.join(".venv-vllm", "bin", "python")),
                    reason="needs .venv-vllm (make vllm-env)")
def test_diff_runs_vllm_and_agrees():
    c = serq.oracle.diff("tools/oracle/scenarios/preempt.json")
    assert c.agree and c.divergence == "agree" and c.seconds["vllm"] > 0 and c.seconds["serq"] > 0
