"""An iteration's plan keeps its batch's tokens and prefilled tokens as jobs
join and leave it (``Plan.take``, ``Plan.leave``, ``Plan.clear``), so that an
admission does not pass over the batch so far: at every admission and every
`iteration` guard the sums are what a pass over the batch gives, to the bit,
also after a preemption took a job out of the batch and after an exclusive
prefill gave the batch up."""

from __future__ import annotations

import os

import pytest

from serq.cli import scenario_program
from serq.link import compile_file
from serq.sim import simulate
from serq.sim import step as S

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def passed(batch):
    ntok = npre = 0.0
    for j in batch:
        ntok += j.plan_n
        if j.mode == S.MODE_PREFILL:
            npre += j.plan_n
    return ntok, npre


@pytest.fixture
def watched(monkeypatch):
    """Every read of the sums checked against a pass; what was seen."""
    seen = {"checks": 0, "leaves": 0, "clears": 0, "nonempty": 0}

    def check(plan):
        assert (plan.ntok, plan.npre) == passed(plan.batch)
        seen["checks"] += 1
        seen["nonempty"] += bool(plan.batch)

    admit_one, set_plan_ctx = S.StepStage.admit_one, S.StepStage.set_plan_ctx
    leave, clear = S.Plan.leave, S.Plan.clear

    def admit_one_checked(self, plan):
        check(plan)
        return admit_one(self, plan)

    def set_plan_ctx_checked(self, plan):
        check(plan)
        return set_plan_ctx(self, plan)

    def leave_counted(self, j):
        seen["leaves"] += 1
        leave(self, j)
        check(self)

    def clear_counted(self):
        seen["clears"] += bool(self.batch)
        clear(self)

    monkeypatch.setattr(S.StepStage, "admit_one", admit_one_checked)
    monkeypatch.setattr(S.StepStage, "set_plan_ctx", set_plan_ctx_checked)
    monkeypatch.setattr(S.Plan, "leave", leave_counted)
    monkeypatch.setattr(S.Plan, "clear", clear_counted)
    return seen


def run(path, **sets):
    p = compile_file(os.path.join(ROOT, path), horizon=60.0, seed=3, sets={k: str(v) for k, v in sets.items()})
    simulate(p, strokes=False, samples=False)


def test_a_vllm_engine_short_of_blocks(watched):
    run("bench/vllm_overview.sq", Lambda=4, blocks=300, max_seqs=64)
    assert watched["checks"] > 1000 and watched["nonempty"] > 1000


def test_a_victim_already_in_the_batch_leaves_it(watched):
    # vLLM's priority policy: the victim (the lowest priority) was served
    # earlier in the iteration (tools/oracle/priority/prio_victim.json, which
    # agrees with vLLM's scheduler: tests/test_oracle.py)
    _, p = scenario_program(os.path.join(ROOT, "tools", "oracle", "priority", "prio_victim.json"))
    simulate(p, strokes=False)
    assert watched["leaves"] == 1 and watched["checks"] > 10


def test_an_iteration_body_reads_the_sums_in_its_guards(watched):
    # SGLang's schedule is an `iteration` body: its guards read the plan
    run("examples/engines/sglang.sq", Lambda=2, kv_tokens=20000)
    assert watched["checks"] > 1000 and watched["nonempty"] > 100


def test_an_exclusive_prefill_gives_the_batch_up(watched):
    # B's prefill displaces A's decode at step 1 (the program's header)
    run("examples/single-turn/separate_phases.sq")
    assert watched["clears"] == 1 and watched["checks"] >= 3
