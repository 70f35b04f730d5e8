"""What an iteration's schedule reads is kept, not made again by a pass at
each read: the residents' part of the context while the residents and the
allocations are the same (``StepStage.set_res_ctx``; the last test), and the
plan's batch's tokens and prefilled tokens as jobs join and leave it (``Plan.take``, ``Plan.leave``, ``Plan.clear``), so that an
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


def test_an_only_filter_sets_the_residents_context_only_where_it_is_read_unset(monkeypatch):
    """SGLang's schedule filters the residents (`advance running only
    (decoding)`): each filter read set the residents' part of the context
    first, n times an iteration at O(n) each.  Nothing in the program reads
    that part unset, so the filters leave it: the same report, to the byte,
    as with every filter setting it, and the context set a bounded number of
    times an iteration."""
    p = compile_file(os.path.join(ROOT, "examples/engines/sglang.sq"), horizon=20.0, seed=2,
                     sets={"Lambda": "2", "max_running": "32"})
    calls = [0]
    set_res_ctx = S.StepStage.set_res_ctx

    def counted(self):
        calls[0] += 1
        set_res_ctx(self)

    monkeypatch.setattr(S.StepStage, "set_res_ctx", counted)
    lazy = simulate(p, samples=True)
    lazy_calls = calls[0]
    st = lazy.data()["stages"][0]
    assert st["number"] > 10
    assert lazy_calls < 12 * st["iterations"]     # the schedule's guards, gates and registers
    calls[0] = 0
    monkeypatch.setattr(S, "_aggregates_read_unset", lambda program: True)
    eager = simulate(p, samples=True)
    assert calls[0] > lazy_calls + 10 * st["iterations"]
    assert eager.json() == lazy.json() and eager.text() == lazy.text()
    for name in p.observes:
        assert eager.samples(name) == lazy.samples(name)


@pytest.mark.parametrize("edit, unset", [
    # the language allows the residents' part (running.count, …) where it is
    # set just before: an engine's budget and cost, its schedule's guards
    # and registers, a pool's `then free` (serq/ir/moments.py); and in an
    # `only` filter, read for one request among the residents
    (None, False),
    (("execute (1)", "execute (1 + running.count + batch.kv_decode)"), False),
    (("advance running each at most (threshold);",
      "branch (running.decoding >= 0) { advance running each at most (threshold); }"), False),
    (("advance running each at most (threshold)", "advance running only (running.decoding >= 0)"), True),
    (("advance running each at most (threshold)",
      "advance running only (sum r in running (running.count) >= 0)"), True),
])
def test_what_reads_the_residents_context_unset(edit, unset):
    from serq.link import compile_source
    path = os.path.join(ROOT, "examples", "oracle", "vllm_request.sq")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    if edit is not None:
        assert edit[0] in src
        src = src.replace(edit[0], edit[1])
    assert S._aggregates_read_unset(compile_source(src, path, horizon=10.0)) is unset


@pytest.mark.parametrize("case", ["sglang", "vllm", "priority", "mooncake", "svf", "phases"])
def test_the_residents_context_kept_is_the_one_a_pass_makes(monkeypatch, case):
    """set_res_ctx makes the residents' part of the context again only where
    the residents or an allocation changed since it last did (res_ver, the
    machine's alloc_ver): at every call what it writes is what a pass over
    the residents gives, through admissions, growth, preemptions, releases,
    the end of iterations and a content-addressed pool's sharing."""
    set_res_ctx = S.StepStage.set_res_ctx
    seen = {"calls": 0, "kept": 0}

    def checked(self):
        kept = self.res_key == ((self.res_ver, self.sim.alloc_ver) if self.need_kv else self.res_ver)
        set_res_ctx(self)
        nd, kvb, kvp = self.res_values()
        ctx = self.sim.ctx
        assert (ctx[S.C_NRES], ctx[S.C_NDEC], ctx[S.C_KVB], ctx[S.C_KVP]) == \
            (float(len(self.residents)), float(nd), kvb, kvp)
        seen["calls"] += 1
        seen["kept"] += kept

    monkeypatch.setattr(S.StepStage, "set_res_ctx", checked)
    if case == "sglang":
        run("examples/engines/sglang.sq", Lambda=2, kv_tokens=20000)
    elif case == "vllm":
        run("examples/multi-turn/vllm.sq", Lambda=3, blocks=400)
    elif case == "priority":
        _, p = scenario_program(os.path.join(ROOT, "tools", "oracle", "priority", "prio_victim.json"))
        simulate(p, strokes=False)
    elif case == "mooncake":
        run("examples/replay/mooncake.sq")
    elif case == "svf":      # an engine whose context has no KV: kept while the residents are the same
        run("examples/papers/kong_svf.sq")
    else:
        run("examples/single-turn/separate_phases.sq")
    assert seen["calls"] > 3 and seen["kept"] > 0
