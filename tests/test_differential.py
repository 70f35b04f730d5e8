"""Two independent implementations of the semantics, run against each other:
the simulator (serq/sim) and the Lean semantics' Python transcription
(leangen/exec_ref.py), on random engine scenarios of the oracle program.
Neither was written from the other; both are also checked against vLLM
(tests/test_oracle.py).  `serq oracle fuzz` does the same against vLLM itself."""

import random

import pytest

from leangen import exec_ref, outputs
from leangen.fragment import translate
from leangen.generate import fuel
from serq.cli import program_for_scenario
from serq.oracle import fuzz as F, outcome as O
from serq.sim import simulate


def lean_outcome(ir):
    prog = translate(ir, "<differential>")
    m = exec_ref.run(prog, fuel(ir))
    assert exec_ref.complete(prog, m)
    return outputs.outcome(ir.observes, exec_ref.observations(prog, m), m.preempts,
                           m.now + 1 if prog.sessions else 0)


@pytest.mark.parametrize("block", range(4))
def test_simulator_and_lean_semantics_agree_on_random_scenarios(block):
    for i in range(block * 60, (block + 1) * 60):
        s = F.generate(random.Random(f"differential:{i}"), i)
        p = program_for_scenario(s)
        ours = O.scenario_outcome(simulate(p), p)
        assert O.diff(ours, lean_outcome(p)) == [], s
