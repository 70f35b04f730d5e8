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
    assert info.value.render() == ("$.version: error[E902]: x.json: IR version 99 (this serq reads 1)\n"
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


def test_validator_refuses_a_negative_constant_ps_capacity():
    """A constant capacity was never read by the run's check (R006 reads a
    computed one), so `ps(-1)` ran with no job ever ending."""
    d = _base()
    d["stages"][0]["kind"] = {"Ps": {"Num": -2.0}}
    p = from_data(d, "x.json")
    with pytest.raises(SerqError) as info:
        validate(p)
    assert info.value.render() == ("t.sq:3:3: error[E403]: stage `svc`: a ps capacity is a number ≥ 0, not -2\n"
                                   "  |\n3 |   stage svc : fifo;\n  |   ^")

def test_validator_refuses_a_negative_constant_tokens_cap():
    """An engine of tokens cap -5 ran, scheduling nothing, with only the
    report's note that it ended with work it did not schedule."""
    d = json.loads(dumps(link("  device gpu { kv cap 1000; }\n"
                              "  engine e on gpu { tokens cap 64; schedule { advance running; admit waiting taking kv (1); }"
                              " execute (0.01); }\n  pool kv on gpu { }\n  workload { arrive poisson(1); }\n"
                              "  server { hold kv (cost(kv, 1)) { run e prefill (cost(e, 10)); } }")))
    d["stages"][0]["kind"]["Step"]["budget"] = {"Num": -5.0}
    with pytest.raises(SerqError) as info:
        validate(from_data(d, "x.json"))
    assert info.value.render().startswith("t.sq:4:3: error[E403]: engine `e`: a tokens cap is a number ≥ 0, not -5\n")

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


# -- the canonical text: the standard library's own characters -----------------

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                       st.floats(width=64), st.text(max_size=6))
# (lists of whole numbers, and lists of equal lists of them, have their own
# path: a trace's content; a bool among them, or a float, is not one)
_ints = st.lists(st.integers(-2 ** 70, 2 ** 70), max_size=5)
_int_rows = st.integers(0, 3).flatmap(lambda n: st.lists(
    st.lists(st.one_of(st.integers(-2 ** 70, 2 ** 70), st.integers(-2, 2), st.booleans(), st.floats(width=64)),
             min_size=n, max_size=n), max_size=4))
_json = st.recursive(st.one_of(_json_leaf, _ints, _int_rows), lambda kids: st.one_of(
    st.lists(kids, max_size=4),
    st.dictionaries(st.text(max_size=4), kids, max_size=4),
    st.dictionaries(st.integers(0, 3), kids, min_size=1, max_size=2)), max_leaves=20)


def _stdlib(d):
    return json.dumps(d, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_canonical_text_is_json_dumps_to_the_character(d):
    """codec.text writes what json.dumps(sort_keys, indent=1, ensure_ascii
    off, allow_nan off) writes, NaN and infinities refused as it refuses
    them, keys that are not strings written as it writes them."""
    from serq.ir.codec import text
    try:
        want = _stdlib(d)
    except ValueError as e:
        with pytest.raises(ValueError, match="JSON compliant"):
            text(d)
        assert "JSON compliant" in str(e)
        return
    assert text(d) == want


def test_to_data_of_every_example_is_the_field_by_field_encoding():
    """to_data's per-class plans give what reading each field in turn gives
    (the variant tags, the one-field forms, the fields left out at their
    defaults, the floats written as floats)."""
    import dataclasses
    import glob
    import os

    from serq.ir import codec
    from serq.link import compile_file

    def slow(obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)):
            return codec._num(obj)
        if isinstance(obj, tuple):
            return [slow(x) for x in obj]
        cls = type(obj)
        fields = dataclasses.fields(obj)
        hints = codec._hints(cls)
        record = {}
        for f in fields:
            v = getattr(obj, f.name)
            if f.metadata.get("omit_default") and v == f.default:
                continue
            if hints[f.name] is float and isinstance(v, (int, float)) and not isinstance(v, bool):
                record[f.name] = codec._num(float(v))
            else:
                record[f.name] = slow(v)
        if cls in codec._VARIANT_CLASSES:
            tag = codec._TAGS[cls]
            if not fields:
                return tag
            if len(fields) == 1 or codec._short(fields, record):
                return {tag: record[fields[0].name]}
            return {tag: record}
        return record

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in sorted(glob.glob(os.path.join(root, "examples", "**", "*.sq"), recursive=True))
             if os.sep + "lib" + os.sep not in p]
    assert len(paths) > 20
    for p in paths[::3]:
        try:
            prog = compile_file(p)
        except SerqError:
            continue       # an example that needs inputs given
        assert to_data(prog) == slow(prog), p
        assert dumps(prog) == _stdlib(slow(prog)) + "\n", p


_tuples = st.recursive(st.one_of(st.integers(-2 ** 70, 2 ** 70), st.booleans(), st.floats(width=64)),
                       lambda kids: st.lists(kids, max_size=4).map(tuple), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_tuples, st.lists(st.lists(st.integers(-9, 9), min_size=2, max_size=2), max_size=5)
                 .map(lambda rows: tuple(map(tuple, rows)))))
def test_to_data_of_tuples_is_lists_of_the_values(x):
    """A tuple is written as a list of its values' data, whatever path it
    takes (a trace's content, tuples of whole numbers, has its own): lists,
    not tuples; a bool a bool; an infinity its string."""
    import math

    from serq.ir import codec

    def want(v):
        if isinstance(v, tuple):
            return [want(u) for u in v]
        if isinstance(v, float) and math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    got = codec.to_data(x)
    assert repr(got) == repr(want(x))


_odd = st.one_of(st.integers(-3, 3), st.floats(width=64, allow_nan=False), st.booleans(), st.none(),
                 st.text(max_size=2), st.just(()), st.just((1, 2, 3)), st.just([1, 2]))


def _pair(first, second):
    def mostly(x):
        return st.one_of(x, x, x, _odd)
    return st.one_of(st.tuples(mostly(first), mostly(second)), st.tuples(first, second), _odd)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(
    st.one_of(st.lists(_pair(st.integers(0, 9), st.floats(0, 9)), max_size=3).map(tuple), _odd),
    st.one_of(st.none(), st.lists(st.lists(_pair(st.integers(0, 9), st.floats(0, 9)), max_size=3).map(tuple),
                                  max_size=3).map(tuple), _odd),
    st.one_of(st.lists(_pair(st.integers(0, 2 ** 64), st.integers(1, 99)), max_size=4).map(tuple), _odd)),
    min_size=1, max_size=4), st.lists(st.one_of(st.text(max_size=2), st.text(max_size=2), _odd), max_size=4))
def test_a_traces_sessions_have_their_problems_said_as_each_value_checked_alone(rows, observes):
    """The shape check of a list of many values (a trace's sessions, their
    content and turns) passes the whole list in C where its values' types
    are right; where one is wrong, every problem is said at its own path, as
    when each value is checked alone (the check before it had that pass)."""
    import dataclasses
    import os

    from serq.ir import shape
    from serq.link import compile_file

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = compile_file(os.path.join(root, "examples", "single-turn", "mg1.sq"), horizon=10.0)
    sessions = tuple(M.SessionSpec(attrs=a, turns=t, content=c) for a, t, c in rows)
    prog = dataclasses.replace(p, arrival=M.ASessions(sessions), observes=tuple(observes))

    def checked(fine_all):
        saved = shape._fine_all
        shape._fine_all = fine_all
        shape._check_of.cache_clear()
        shape._fields.cache_clear()
        try:
            return shape.problems(prog)
        finally:
            shape._fine_all = saved
            shape._check_of.cache_clear()
            shape._fields.cache_clear()

    alone = checked(lambda each: None)
    assert checked(shape._fine_all) == alone
    right = all(type(a) is tuple and all(type(x) is tuple and len(x) == 2 and type(x[0]) is int
                                         and type(x[1]) in (int, float) for x in a) for a, _, _ in rows)
    assert right == (not any(".attrs" in path for path, _ in alone))
    assert all(type(o) is str for o in observes) == (not any(".observes" in path for path, _ in alone))
