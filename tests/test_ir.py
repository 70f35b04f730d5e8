"""The IR: canonical JSON round trips, and the validator on files of its own."""

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from serq.diag import SerqError
from serq.ir import dumps, loads, model as M, validate
from serq.ir.codec import from_data, to_data
from tests.helpers import link

nums = st.one_of(st.floats(allow_nan=False, width=64), st.just(math.inf), st.just(-math.inf))
ctx = st.sampled_from(M.CTX_VARS).map(M.ECtx)
leaves = st.one_of(nums.map(M.ENum), st.integers(0, 20).map(M.EAttr), ctx,
                   st.integers(0, 3).map(M.EReg))


def _exprs():
    return st.recursive(leaves, lambda kids: st.one_of(
        st.tuples(st.sampled_from(M.BINOPS), kids, kids).map(lambda t: M.EBinary(*t)),
        st.tuples(st.sampled_from(M.UNOPS), kids).map(lambda t: M.EUnary(*t)),
        st.tuples(kids, kids, kids).map(lambda t: M.ECond(*t)),
        st.tuples(st.sampled_from(sorted(M.FNS)), st.lists(kids, min_size=1, max_size=2))
          .map(lambda t: M.EFn(t[0], tuple(t[1]))),
        st.tuples(st.sampled_from(sorted(M.DISTS)), st.lists(kids, min_size=1, max_size=2))
          .map(lambda t: M.ESample(t[0], tuple(t[1]))),
        st.tuples(st.sampled_from(M.POOL_QUERIES), st.integers(0, 3), st.integers(1, 3),
                  st.one_of(st.none(), kids)).map(lambda t: M.EQuery(t[0], M.Ref(t[1], t[2], t[3]))),
        st.tuples(st.lists(st.tuples(st.sampled_from(["pool", "stage"]), st.integers(0, 5)),
                           min_size=1, max_size=3), kids)
          .map(lambda t: M.ECost(tuple(M.Target(k, b) for k, b in t[0]), t[1])),
    ), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_exprs())
def test_expression_json_round_trip_is_the_identity(e):
    data = to_data(e)
    text = json.dumps(data, sort_keys=True)
    from serq.ir.codec import _decode
    back = _decode(M.Expr, json.loads(text), "$")
    assert back == e
    assert json.dumps(to_data(back), sort_keys=True) == text


def _examples():
    from tools.examples import programs
    return programs()


@pytest.mark.parametrize("path", _examples())
def test_every_example_round_trips_exactly(path):
    from serq.link import compile_file
    p = compile_file(path, horizon=10)
    text = dumps(p)
    q = loads(text)
    assert q == p
    assert dumps(q) == text
    assert text.endswith("}\n") and json.loads(text)["version"] == M.IR_VERSION


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10 ** 6), st.floats(0.001, 1e6), st.floats(0, 0.999))
def test_program_round_trip_with_settings(seed, horizon, frac):
    import dataclasses
    p = link("  stage svc : fifo;\n  workload { arrive poisson(1); turn { set s = ~exp(1); } }\n"
             "  server { run svc (cost(svc, s)); }")
    p = dataclasses.replace(p, seed=seed, horizon=horizon, warmup=horizon * frac)
    assert loads(dumps(p)) == p


def _base():
    return json.loads(dumps(link("  stage svc : fifo;\n  workload { arrive poisson(1); }\n"
                                 "  server { run svc (cost(svc, 1)); }")))


def test_other_version_is_refused():
    d = _base()
    d["version"] = 99
    with pytest.raises(SerqError) as info:
        from_data(d, "x.json")
    assert info.value.render() == ("error[E902]: x.json: IR version 99 (this serq reads 1)\n"
                                   "  = help: regenerate the file from its program with `serq ir`")


def test_malformed_ir_names_the_path():
    d = _base()
    d["blocks"][0]["stmts"][1] = {"Run": {"stage": {"base": 0, "count": 1, "index": None}}}
    with pytest.raises(SerqError) as info:
        from_data(d, "x.json")
    assert info.value.render() == "error[E903]: x.json: malformed IR at $.blocks[0].stmts[1].Run.mode: missing field"


def test_validator_checks_references_of_an_ir_file():
    d = _base()
    d["blocks"][0]["stmts"][1]["Run"]["stage"]["base"] = 7
    p = from_data(d, "x.json")
    with pytest.raises(SerqError) as info:
        validate(p)
    assert "stage reference 7+1 out of range" in info.value.render()


def test_validator_checks_moments_in_an_ir_file():
    d = _base()
    d["blocks"][0]["stmts"][1]["Run"]["work"] = {"Cost": {"targets": [{"base": 0, "kind": "stage"}],
                                                          "expr": {"Ctx": "Ntok"}}}
    p = from_data(d, "x.json")
    with pytest.raises(SerqError) as info:
        validate(p)
    assert "error[E501]: `batch.tokens` is not available in a statement" in info.value.render()


def test_validator_refuses_a_shared_block():
    d = _base()
    blocks = d["blocks"]
    blocks.append({"locs": [None], "sides": ["server"], "stmts": ["End"]})
    n = len(blocks) - 1
    blocks[0]["stmts"].append({"Branch": {"guard": {"Num": 1.0}, "then": n, "other": n}})
    blocks[0]["locs"].append(None)
    blocks[0]["sides"].append("server")
    p = from_data(d, "x.json")
    with pytest.raises(SerqError) as info:
        validate(p)
    assert f"block {n} is the body of 2 statements" in info.value.render()
