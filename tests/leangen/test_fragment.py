"""The fragment checker: it accepts the oracle programs and refuses each
construct the development guide's "What fits in the fragment" leaves out,
naming it and its source location."""

import dataclasses
import math
import os
import subprocess
import sys

import pytest

from serq.ir import dumps, model as M
from leangen.fragment import Outside, check, translate

from .util import ROOT, oracle_ir, scenario_inputs

SRC = "examples/oracle/vllm_request.sq"
ALL = scenario_inputs("scenarios") + scenario_inputs("traces") + scenario_inputs("random")


@pytest.mark.parametrize("path", ALL, ids=[os.path.basename(p)[:-5] for p in ALL])
def test_accepts_every_oracle_program(path):
    check(oracle_ir(path))


def hol():
    return oracle_ir(os.path.join(ROOT, "tools", "oracle", "scenarios", "hol.json"))


R = dataclasses.replace


def with_stmt(p, block, i, stmt):
    b = p.blocks[block]
    stmts = list(b.stmts)
    stmts[i] = stmt
    blocks = list(p.blocks)
    blocks[block] = R(b, stmts=tuple(stmts))
    return R(p, blocks=tuple(blocks))


def insert_stmt(p, block, stmt, loc):
    b = p.blocks[block]
    blocks = list(p.blocks)
    blocks[block] = R(b, stmts=(stmt,) + b.stmts, locs=(loc,) + b.locs, sides=(b.sides[0],) + b.sides)
    return R(p, blocks=tuple(blocks))


def set0(p, expr):
    """Block 0's first statement (`set prompt = …`, line 65) sets expr."""
    return with_stmt(p, 0, 0, M.SSet(12, expr))


def with_pool(p, i, **kw):
    pools = list(p.pools)
    pools[i] = R(pools[i], **kw)
    return R(p, pools=tuple(pools))


def with_step(p, **kw):
    st = p.stages[0]
    stages = list(p.stages)
    stages[0] = R(st, kind=R(st.kind, **kw))
    return R(p, stages=tuple(stages))


def with_stage(p, i, **kw):
    stages = list(p.stages)
    stages[i] = R(stages[i], **kw)
    return R(p, stages=tuple(stages))


def the_hold(p):
    return p.blocks[1].stmts[3]


N = M.ENum
NOPRE = M.EUnary("Not", M.ECtx("Preempted"))
ZERO_COST = ("an iteration cost that can be 0 (an iteration lasts a positive time: a constant term ≥ 1, or "
             "batch.tokens with a coefficient ≥ 1 on an engine that never preempts)")
SCHEDULE = ("a schedule other than `advance running …; admit waiting … while (running.preempted == 0)` "
            "(an iteration body)")
KV = M.Ref(0, 1, None)
REQS = M.Ref(1, 1, None)
AT = M.Loc(0, 70, 5)

CASES = {
    "draw": (lambda p: set0(p, M.ESample("Exp", (N(1.0),))), f"a draw (~exp) at {SRC}:65:12"),
    "renewal_drawn": (lambda p: R(p, arrival=M.ARenewal(M.ESample("Exp", (N(2.0),)))),
                      f"a renewal gap that is not a constant (arrive renewal(…)) at {SRC}:67:7"),
    "renewal_fractional": (lambda p: R(p, arrival=M.ARenewal(N(2.5))), f"a fractional renewal gap 2.5 at {SRC}:67:7"),
    "closed": (lambda p: R(p, arrival=M.AClosed(3)), f"a closed population (arrive closed(…)) at {SRC}:67:7"),
    "non_lru": (lambda p: with_pool(p, 0, evict=M.EvictBy((M.ECtx("Age"),))),
                f"a non-LRU pool `kv` (evict by) at {SRC}:58:3"),
    "spill": (lambda p: with_pool(p, 0, spill=M.Spill(REQS, M.Ref(1, 1, None), N(1.0), N(1.0))),
              f"spill on pool `kv` at {SRC}:58:3"),
    "queue_key_waited": (lambda p: with_pool(p, 1, queue=(M.ECtx("Waited"),)),
                         f"the context variable `waited` at {SRC}:59:3"),
    "queue_key_used": (lambda p: with_pool(p, 1, queue=(M.EQuery("Used", KV),)), f"the observable `used` at {SRC}:59:3"),
    "reserve_held": (lambda p: with_pool(p, 0, reserve_held=True), f"reserve held on pool `kv` at {SRC}:58:3"),
    "shared_pool": (lambda p: with_pool(p, 0, shared=True),
                    f"a content-addressed pool `kv` (cache shared; the semantics' cache entries are per session) "
                    f"at {SRC}:58:3"),
    "content": (lambda p: insert_stmt(p, 2, M.SContent(N(0.0), N(4.0)), AT),
                f"content (what a session's tokens are) at {SRC}:70:5"),
    "trace_arrival": (lambda p: R(p, arrival=M.ATrace(0.001)),
                      f"sessions that arrive at a trace's timestamps (arrive trace) at {SRC}:67:7"),
    "session_content": (lambda p: R(p, arrival=M.ASessions((R(p.arrival.sessions[0], content=((0.0, 4.0),)),)
                                                           + p.arrival.sessions[1:])),
                        f"an explicit session with an arrival time or content at {SRC}:67:7"),
    "then_free": (lambda p: with_pool(p, 0, preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False,
                                                                  M.ECtx("Ndec"))),
                  f"then free on pool `kv` at {SRC}:58:3"),
    "tree_pool": (lambda p: with_pool(p, 0, shared=True, tree=True),
                  f"a content-addressed pool `kv` (cache shared; the semantics' cache entries are per session) "
                  f"at {SRC}:58:3"),
    "preempt_none": (lambda p: with_pool(p, 0, preempt=M.PreemptNone()),
                     f"the engine's memory `kv` with a preemption other than lifo at {SRC}:58:3"),
    "requeue_tail": (lambda p: with_pool(p, 0, preempt=M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), True)),
                     f"the engine's memory `kv` with a preemption other than lifo at {SRC}:58:3"),
    "cost_zero": (lambda p: with_step(p, cost=N(0.0)), f"{ZERO_COST} at {SRC}:22:3"),
    "cost_tokens_preempting": (lambda p: with_step(p, cost=M.ECtx("Ntok")), f"{ZERO_COST} at {SRC}:22:3"),
    "cost_subtraction": (lambda p: with_step(p, cost=M.EBinary("Sub", N(5.0), M.ECtx("Ntok"))),
                         f"{ZERO_COST} at {SRC}:22:3"),
    "cost_attention_odd": (lambda p: with_step(p, cost=M.EBinary("Add", N(1.0), M.ECtx("Attn"))),
                           f"batch.attention outside ceil(a / k), floor(a / k) or an even multiple "
                           f"(half-tokens are not naturals) at {SRC}:22:3"),
    "cost_ceil_variable": (lambda p: with_step(p, cost=M.EFn("Ceil", (M.EBinary("Div", M.ECtx("Ntok"),
                                                                                M.ECtx("Ndec")),))),
                           f"ceil of something other than a / k for a constant k ≥ 1 at {SRC}:22:3"),
    "cost_sqrt": (lambda p: with_step(p, cost=M.EFn("Sqrt", (M.ECtx("Ntok"),))), f"the function `sqrt` at {SRC}:22:3"),
    "cost_attribute": (lambda p: with_step(p, cost=M.EAttr(12)),
                       f"the attribute `prompt` outside a session at {SRC}:22:3"),
    "cost_waiting": (lambda p: with_step(p, cost=M.ECtx("Admitted")),
                     f"the context variable `waiting.admitted` at {SRC}:22:3"),
    "exclusive": (lambda p: with_step(p, serve=M.ServeExclusivePrefill()), f"exclusive prefill at {SRC}:22:3"),
    "iteration_admit_first": (lambda p: with_step(p, iteration=(M.IAdmit(None, NOPRE), M.IServe())),
                              f"{SCHEDULE} at {SRC}:22:3"),
    "iteration_branch": (lambda p: with_step(p, iteration=(M.IBranch(N(1.0), (M.IServe(),), ()),)),
                         f"{SCHEDULE} at {SRC}:22:3"),
    "iteration_twice": (lambda p: with_step(p, iteration=(M.IServe(), M.IServe(), M.IAdmit(None, NOPRE))),
                        f"{SCHEDULE} at {SRC}:22:3"),
    "admit_ungated": (lambda p: with_step(p, iteration=(M.IServe(), M.IAdmit(None, None))),
                      f"an admission not gated on the iteration's preemptions (admit waiting while "
                      f"(running.preempted == 0)) at {SRC}:22:3"),
    "admit_other_gate": (lambda p: with_step(p, iteration=(M.IServe(), M.IAdmit(None, M.EBinary(
        "Lt", M.ECtx("Ntok"), N(8.0))))),
        f"an admission not gated on the iteration's preemptions (admit waiting while "
        f"(running.preempted == 0)) at {SRC}:22:3"),
    "only_now": (lambda p: with_step(p, iteration=(M.IServe(M.EBinary("Gt", M.ECtx("Now"), N(3.0)), None),)),
                 f"the context variable `now` at {SRC}:22:3"),
    "only_waiting": (lambda p: with_step(p, iteration=(M.IServe(M.EQuery("Queued", REQS), None),)),
                     f"the observable `queued` at {SRC}:22:3"),
    "key_tokens": (lambda p: with_step(p, serve=M.ServeBy((M.ECtx("Ntok"),))),
                   f"the context variable `batch.tokens` at {SRC}:22:3"),
    "plain_engine_run": (lambda p: with_stmt(p, 2, 3, R(p.blocks[2].stmts[3], mode="Plain")),
                         f"a plain run on the engine `vllm` (neither prefill nor decode) at {SRC}:50:7"),
    "granule": (lambda p: with_step(p, granule=16.0), f"a granule at {SRC}:22:3"),
    "fifo": (lambda p: with_stage(p, 1, kind=M.KFifo(1)), f"a fifo stage `gate` at {SRC}:60:3"),
    "ps": (lambda p: with_stage(p, 1, kind=M.KPs(N(1.0))), f"a ps stage `gate` at {SRC}:60:3"),
    "fractional": (lambda p: set0(p, N(0.5)), f"a fractional constant 0.5 at {SRC}:65:12"),
    "negative": (lambda p: set0(p, N(-1.0)), f"a negative constant -1 at {SRC}:65:12"),
    "infinite": (lambda p: set0(p, N(math.inf)), f"an infinite constant at {SRC}:65:12"),
    "division": (lambda p: set0(p, M.EBinary("Div", N(4.0), N(2.0))), f"a division outside floor(a / b) at {SRC}:65:12"),
    "power": (lambda p: set0(p, M.EBinary("Pow", N(4.0), N(2.0))), f"a power (^) at {SRC}:65:12"),
    "not": (lambda p: set0(p, M.EUnary("Not", N(0.0))), f"`!` at {SRC}:65:12"),
    "and": (lambda p: set0(p, M.EBinary("And", N(1.0), N(1.0))), f"`&&` at {SRC}:65:12"),
    "sqrt": (lambda p: set0(p, M.EFn("Sqrt", (N(4.0),))), f"the function `sqrt` at {SRC}:65:12"),
    "floor": (lambda p: set0(p, M.EFn("Floor", (M.EAttr(9),))), f"floor of something other than a / b at {SRC}:65:12"),
    "used": (lambda p: set0(p, M.EQuery("Used", KV)), f"the observable `used` at {SRC}:65:12"),
    "waited": (lambda p: set0(p, M.ECtx("Waited")), f"the context variable `waited` at {SRC}:65:12"),
    "budget_left": (lambda p: set0(p, M.EQuery("BudgetLeft", M.Ref(0, 1, None))),
                    f"budget_left outside a hold the engine admits at {SRC}:65:12"),
    "fork": (lambda p: insert_stmt(p, 2, M.SFork(3), AT), f"a fork at {SRC}:70:5"),
    "join": (lambda p: insert_stmt(p, 2, M.SJoin(), AT), f"join at {SRC}:70:5"),
    "while": (lambda p: insert_stmt(p, 2, M.SWhile(N(0.0), 3), AT), f"a while loop at {SRC}:70:5"),
    "choose": (lambda p: insert_stmt(p, 2, M.SChoose(12, N(2.0), ()), AT), f"choose at {SRC}:70:5"),
    "grow": (lambda p: insert_stmt(p, 2, M.SGrow(KV, N(4.0)), AT), f"grow at {SRC}:70:5"),
    "drop": (lambda p: insert_stmt(p, 2, M.SDrop(KV), AT), f"drop at {SRC}:70:5"),
    "release": (lambda p: insert_stmt(p, 2, M.SRelease(KV), AT), f"release at {SRC}:70:5"),
    "load": (lambda p: insert_stmt(p, 2, M.SLoad(KV, N(4.0)), AT), f"load at {SRC}:70:5"),
    "lease": (lambda p: with_stmt(p, 1, 3, R(the_hold(p), lease=M.Lease(KV, N(1.0)))), f"a lease at {SRC}:73:5"),
    "growing_reqs": (lambda p: with_stmt(p, 2, 3, R(p.blocks[2].stmts[3], growing=REQS)),
                     f"a growing run on `reqs`, which is not the engine's memory at {SRC}:50:7"),
    "multi_stage_run": (lambda p: with_stmt(p, 2, 3, R(p.blocks[2].stmts[3], also=(M.Ref(1, 1, None),))),
                        f"a run over several stages at {SRC}:50:7"),
    "trace": (lambda p: R(p, trace="data/short.csv"),
              f"a trace (data/short.csv; inline it with serq ir --inline-trace) at {SRC}:67:7"),
    "turn_block": (lambda p: R(p, turn=0), f"a turn block (its attributes are drawn per turn) at {SRC}:65:12"),
    "stage_family": (lambda p: with_stage(p, 1, index=0), f"a family of stages `gate[…]` at {SRC}:60:3"),
    "register": (lambda p: R(p, registers=(M.Register("r", 0, 0.0),)), "an engine register `r` at hol.ir.json"),
    "claim_attention": (lambda p: R(p, claims=(M.Claim("c", M.CEvery(0), M.ECtx("Attn"), None, M.Loc(0, 80, 3)),)),
                        f"the context variable `batch.attention` at {SRC}:80:3"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refuses(name):
    mutate, message = CASES[name]
    p = mutate(hol())
    with pytest.raises(Outside) as e:
        check(p, "hol.ir.json")
    assert e.value.line() == f"FAIL: outside the Lean fragment: {message}"


def test_the_replay_cost_with_zero_coefficients_is_the_step_clock():
    p = with_step(hol(), cost=M.EBinary("Add", N(1.0), M.EBinary("Mul", N(0.0), M.ECtx("Ntok"))))
    check(p)
    assert translate(p).engine.cost == ("num", 1)


C = M.ECtx
PHASE = M.ECond(M.EBinary("Gt", C("Ndec"), N(0.0)), C("Decoding"), M.EUnary("Not", C("Decoding")))
DEC_FIRST = M.ECond(C("Decoding"), N(0.0), N(1.0))


def ceil_div(a, k):
    return M.EFn("Ceil", (M.EBinary("Div", a, N(float(k))),))


# each construct the papers' programs brought into the fragment, on hol's
# program, and what it translates to
ACCEPTS = {
    "poisson": (lambda p: R(p, arrival=M.APoisson(0.5)), lambda t: t.sessions == []),
    "renewal": (lambda p: R(p, arrival=M.ARenewal(N(2.0))), lambda t: t.sessions == []),
    "batch": (lambda p: R(p, arrival=M.ABatch(3)), lambda t: t.sessions == []),
    "queue_key": (lambda p: with_pool(p, 1, queue=(M.EAttr(12), M.EBinary("Sub", N(9.0), M.EAttr(14)))),
                  lambda t: t.pools[1].keys == [("attr", 12), ("bin", "sub", ("num", 9), ("attr", 14))]),
    "cost_constant": (lambda p: with_step(p, cost=N(2.0)), lambda t: t.engine.cost == ("num", 2)),
    "cost_dai": (lambda p: with_step(p, cost=M.EBinary("Add", N(1128.0), M.EBinary("Mul", N(3547.0),
                                                                                   ceil_div(C("Ntok"), 128)))),
                 lambda t: t.engine.cost == ("bin", "add", ("num", 1128), ("bin", "mul", ("num", 3547),
                                             ("ceilDiv", ("iter", "tokens"), ("num", 128))))),
    "cost_batch_variables": (lambda p: with_step(p, cost=M.EBinary("Add", N(1.0), M.EBinary(
        "Add", M.EBinary("Mul", N(2.0), C("Npre")), M.EFn("Floor", (M.EBinary("Div", M.EBinary(
            "Add", C("Kvb"), M.EBinary("Add", C("Kvp"), M.EBinary("Add", C("Ndec"), C("Nres")))), N(4.0)),))))),
        lambda t: t.engine.cost[0] == "bin"),
    "cost_attention": (lambda p: with_step(p, cost=M.EBinary("Add", N(1.0), M.EBinary(
        "Add", ceil_div(M.EBinary("Add", C("Attn"), C("Ntok")), 64), M.EBinary("Mul", N(4.0), C("Attn"))))),
        lambda t: t.engine.cost == ("bin", "add", ("num", 1), ("bin", "add",
                                    ("ceilDiv", ("bin", "add", ("iter", "attention2"),
                                                 ("bin", "mul", ("num", 2), ("iter", "tokens"))), ("num", 128)),
                                    ("bin", "mul", ("num", 2), ("iter", "attention2"))))),
    "decode_first": (lambda p: with_step(p, serve=M.ServeBy((DEC_FIRST,))),
                     lambda t: t.engine.keys == [("cond", ("decoding",), ("num", 0), ("num", 1))]
                     and t.engine.admits),
    "serve_by_keys": (lambda p: with_step(p, serve=M.ServeBy((C("Remaining"), M.EUnary("Not", C("Decoding")),
                                                               C("Admission")))),
                      lambda t: t.engine.keys == [("remaining",), ("lnot", ("decoding",)), ("admission",)]),
    "serve_only_no_admission": (lambda p: with_step(p, iteration=(M.IServe(None, (DEC_FIRST,)),)),
                                lambda t: not t.engine.admits and t.engine.keys[0][0] == "cond"),
    "fastertransformer": (lambda p: with_step(p, iteration=(M.IServe(PHASE, None), M.IAdmit(PHASE, NOPRE))),
                          lambda t: t.engine.serveOnly[0] == "some" and t.engine.admitOnly == t.engine.serveOnly
                          and t.engine.admits),
    "gate_as_comparison": (lambda p: with_step(p, iteration=(M.IServe(), M.IAdmit(
        None, M.EBinary("Eq", C("Preempted"), N(0.0))))), lambda t: t.engine.admits),
    "only_reads_the_residents": (lambda p: with_step(p, iteration=(M.IServe(M.EBinary("Or", M.EBinary(
        "Ge", C("Kvb"), C("Kvp")), M.EBinary("And", M.EBinary("Lt", C("Nres"), M.EAttr(12)), C("Decoding"))),
        None),)), lambda t: t.engine.serveOnly[1][0] == "bin"),
    "given_logic": (lambda p: R(p, claims=(M.Claim("c", M.CAtEnd(), N(1.0), M.EBinary(
        "And", M.EUnary("Not", M.EAttr(12)), M.EBinary("Or", M.EAttr(13), M.EAttr(14))), M.Loc(0, 80, 3)),)),
        lambda t: True),
}


@pytest.mark.parametrize("name", sorted(ACCEPTS))
def test_accepts(name):
    mutate, what = ACCEPTS[name]
    p = mutate(hol())
    check(p, "hol.ir.json")
    assert what(translate(p))


def test_the_papers_programs_are_inside():
    for name in ("dai_sarathi", "dai_fastertransformer", "bari_rad", "kong_svf"):
        res = run_cli("check", os.path.join("tests", "golden", "ir", f"papers__{name}.ir.json"))
        assert res.returncode == 0, res.stdout
        assert res.stdout == f"ok: tests/golden/ir/papers__{name}.ir.json is inside the Lean fragment\n"


def test_the_memory_of_an_engine_that_never_grows_may_preempt_none():
    """Kong's pool: `preempt none` is no preemption rule only where no run
    grows the pool (hol's runs grow theirs: refused above)."""
    from .util import ROOT as R_
    from serq.ir import read
    kong = read(os.path.join(R_, "tests", "golden", "ir", "papers__kong_svf.ir.json"))
    assert type(kong.pools[0].preempt) is M.PreemptNone
    t = translate(kong)
    assert t.pools[0].keys == [("attr", kong.slot("volume"))] and t.engine.memory == ("some", 0)


def test_the_cost_lower_bound():
    from leangen.fragment import lower_bound
    dai = ("bin", "add", ("num", 1128), ("bin", "mul", ("num", 3547), ("ceilDiv", ("iter", "tokens"), ("num", 128))))
    bari = ("bin", "add", ("bin", "mul", ("num", 3000), ("ceilDiv", ("iter", "tokens"), ("num", 128))),
            ("bin", "mul", ("num", 8), ("iter", "tokens")))
    assert lower_bound(dai, 0) == 1128 and lower_bound(dai, 1) == 4675
    assert lower_bound(bari, 0) == 0 and lower_bound(bari, 1) == 3008


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "leangen", *args], cwd=ROOT, capture_output=True, text=True)


def test_cli_check(tmp_path):
    good = tmp_path / "good.ir.json"
    good.write_text(dumps(hol()), encoding="utf-8")
    res = run_cli("check", str(good))
    assert res.returncode == 0 and res.stdout.startswith("ok: ")
    bad = tmp_path / "bad.ir.json"
    bad.write_text(dumps(R(hol(), arrival=M.AClosed(3))), encoding="utf-8")
    res = run_cli("check", str(bad))
    assert res.returncode == 1
    assert res.stdout == f"FAIL: outside the Lean fragment: a closed population (arrive closed(…)) at {SRC}:67:7\n"


def test_cli_exec_refuses_outside(tmp_path):
    bad = tmp_path / "bad.ir.json"
    bad.write_text(dumps(R(hol(), arrival=M.AClosed(3))), encoding="utf-8")
    res = run_cli("exec", str(bad))
    assert res.returncode == 1 and res.stderr.startswith("FAIL: outside the Lean fragment: a closed population")


def test_cli_exec_runs_explicit_sessions_only(tmp_path):
    fam = tmp_path / "fam.ir.json"
    fam.write_text(dumps(R(hol(), arrival=M.APoisson(0.5))), encoding="utf-8")
    res = run_cli("exec", str(fam))
    assert res.returncode == 1
    assert res.stderr == (f"FAIL: {fam}: its sessions arrive by a law (at any times, in order, arrive poisson(…)): "
                          "exec runs explicit sessions\n")


def test_translation_of_the_oracle_program():
    p = translate(hol())
    assert [x.viaEngine for x in p.pools] == [False, True]
    assert p.engine.memory == ("some", 0)
    assert p.nobs == 2 and len(p.sessions) == 3
    assert p.sessions[1].attrs == [(12, 50), (13, 4), (14, 1)]
