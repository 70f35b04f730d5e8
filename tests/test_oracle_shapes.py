"""One link per shape (serq/link/shapes.py): the IR the oracle commands run
for a scenario is the one a full link gives, byte for byte, and so are its
report and its outcome -- for every committed scenario, trace, Mooncake
slice and P/D scenario, and for random ones of each family.  Each family
runs on an empty cache, and every call after the first of its shape must
have been an instance of the template (no shape left without one)."""

import glob
import json
import random

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from serq.api import harness as A
from serq.cli import main
from serq.diag import SerqError
from serq.ir import dumps
from serq.link import compile_file
from serq.link.shapes import Shapes
from serq.oracle import fuzz as F, mooncake as MC, outcome as O, pd as PD, pd_fuzz as G, replay as R
from serq.oracle import scenario as S
from serq.sim import simulate

from .helpers import needs_mooncake


def _inputs(*patterns):
    return [p for pat in patterns for p in sorted(glob.glob(pat))
            if not p.endswith((".out.json", ".log.json", ".ir.json")) and not p.endswith("programs.json")]


def _scenarios():
    out = [S.load(p) for p in _inputs("tools/oracle/scenarios/*.json", "tools/oracle/random/*.json",
                                      "tools/oracle/priority/*.json", "tools/oracle/priority/random/*.json",
                                      "tools/oracle/target/*.json")]
    out = [s for s in out if not s.get("adaptive")]     # the adaptive threshold is a --program's
    return out + [F.generate(random.Random(f"shapes:{i}"), i) for i in range(40)]


def _every(s):
    return True


# (harness, its inputs, its outcome, which inputs are also run): the committed
# Mooncake slices (200 to 1 500 requests, seconds a run) are compared by their
# IR alone; tests/test_prefix_oracle.py runs each against vLLM's outputs
FAMILIES = {
    "scenario": (S, _scenarios, lambda rep, p, s: O.scenario_outcome(rep, p), _every),
    "replay": (R, lambda: [R.load(p) for p in _inputs("tools/oracle/traces/*.json", "tools/oracle/shared/*.json")]
               + [F.generate_replay(random.Random(f"shapes:{i}"), i) for i in range(30)],
               lambda rep, p, s: O.trace_outcome(rep, p), _every),
    "mooncake": (MC, lambda: [MC.check(F.generate_mooncake(random.Random(f"shapes:{i}"), i), "fuzz")
                              for i in range(30)],
                 lambda rep, p, s: MC.outcome(rep, s), _every),
    # the committed slices read Mooncake's trace where it lies (../shared)
    "mooncake slices": (MC, lambda: [MC.load(p) for p in _inputs("tools/oracle/mooncake/*.json")],
                        lambda rep, p, s: MC.outcome(rep, s), lambda s: False),
    "pd": (PD, lambda: [PD.load(p) for p in _inputs("tools/oracle/pd/*.json", "tools/oracle/pd/random/*.json")]
           + [G.generate(7, i) for i in range(40)],
           lambda rep, p, s: PD.outcome(rep, p), _every),
}


@pytest.mark.parametrize("family", [pytest.param(f, marks=needs_mooncake) if f == "mooncake slices" else f
                                    for f in FAMILIES])
def test_one_link_per_shape_gives_the_full_links_ir_and_outcome(family, monkeypatch):
    monkeypatch.setattr(A, "_SHAPES", {})
    harness, inputs, outcome, runs = FAMILIES[family]
    cases = inputs()
    assert sum(map(runs, cases)) >= (30 if family != "mooncake slices" else 0) and len(cases) >= 4
    for s in cases:
        fast = A.harness_program(harness, s)
        with A.linking("each"):
            full = A.harness_program(harness, s)
        assert dumps(fast) == dumps(full), s
        assert repr(fast) == repr(full), s          # the same floats, ints and bools, not only equal JSON
        if not runs(s):
            continue
        a, b = simulate(fast), simulate(full)
        assert json.dumps(a.data(), sort_keys=True) == json.dumps(b.data(), sort_keys=True), s
        assert outcome(a, fast, s) == outcome(b, full, s), s
    counts = [c.counts for c in A._SHAPES.values()]
    assert sum(c["calls"] for c in counts) == len(cases)
    assert [c["untemplated"] for c in counts] == [0] * len(counts)
    assert [c["instances"] for c in counts] == [c["calls"] - c["shapes"] for c in counts]


def test_the_switch_runs_the_plain_path_to_the_same_output(monkeypatch):
    monkeypatch.setattr(A, "_SHAPES", {})
    runner = CliRunner()
    for args in (["run", "tools/oracle/random/r001.json"], ["pd", "tools/oracle/pd/random/p001.json"],
                 ["replay", "tools/oracle/traces/cache_evict.json"]):
        each = runner.invoke(main, ["oracle", "--link-each"] + args)
        assert A._SHAPES == {}, args
        shaped = runner.invoke(main, ["oracle"] + args)
        assert each.exit_code == shaped.exit_code == 0, (each.output, shaped.output)
        assert each.output == shaped.output
        assert sum(c.counts["calls"] for c in A._SHAPES.values()) == len(A._SHAPES) == 1
        A._SHAPES.clear()
    assert A._EACH == [False]


PROGRAM = """use "std/args";

fn main() {
  let bs = args.number("bs", 4);
  let n = args.number("n", 10);
  let k = args.number("k", 4);
  device gpu { kv cap n * bs; }
  engine e on gpu {
    reqs cap K;
    tokens cap 64;
    schedule {
      advance running;
      admit waiting while (running.preempted == 0) taking reqs (1), kv (prompt + EXTRA) reserve (prompt + EXTRA);
    }
    execute (1);
    request (prompt) { prefill (prompt); }
  }
  pool kv on gpu { block bs; evict lru; preempt lifo; }
  pool reqs on e { queue fifo; }
  workload { arrive batch(1); init { set prompt = 8; } }
  server { e (prompt); }
}
"""


def _calls(tmp_path, k="k", extra="1", values=((4, 10, 5), (8, 20, 7), (2, 7, 1), (16, 3, 9)), cap="n * bs"):
    path = tmp_path / "p.sq"
    path.write_text(PROGRAM.replace("K;", k + ";").replace("EXTRA", extra).replace("kv cap n * bs", "kv cap " + cap))
    shapes = Shapes(str(path))
    for bs, n, kk in values:
        sets = {"bs": str(bs), "n": str(n), "k": str(kk)}
        assert dumps(shapes.link(sets, 10.0)) == dumps(compile_file(str(path), sets=sets, horizon=10.0)), sets
    return shapes.counts


def test_products_of_inputs_are_holes(tmp_path):
    # the cap n * bs, the block bs, the queue's cap k: one template, three instances
    assert _calls(tmp_path) == {"calls": 4, "links": 3, "instances": 3, "shapes": 1, "untemplated": 0}


def test_a_fold_of_an_input_but_by_products_is_linked_every_time(tmp_path):
    # k > 2 is 1 at 5, at the probe's 10 and at the check's 5 * 7, and 0 at
    # 1: the linker says it folded a comparison, so no template is made
    assert _calls(tmp_path, k="(k > 2 ? 4 : 2)") == {"calls": 4, "links": 4, "instances": 0, "shapes": 1,
                                                   "untemplated": 1}


def test_a_number_that_is_no_product_of_inputs_has_no_template(tmp_path):
    # blocksize(kv) + 1 (folded from the pool's block, not from the input's
    # name): bs + 1 changed by no product of primes at the probe
    assert _calls(tmp_path, extra="(blocksize(kv) + 1)") == {"calls": 4, "links": 5, "instances": 0, "shapes": 1,
                                                            "untemplated": 1}


def test_another_kind_of_value_is_another_shape(tmp_path):
    # inf stands for itself: n = inf is a shape of its own, with its own template
    counts = _calls(tmp_path, values=((4, 10, 5), (4, "inf", 5), (8, "inf", 7), (2, 7, 1)))
    assert counts == {"calls": 4, "links": 6, "instances": 2, "shapes": 2, "untemplated": 0}


def test_a_value_too_large_for_a_float_is_linked(tmp_path):
    counts = _calls(tmp_path, values=((4, 10, 5), (8, 20, 7), (2 ** 30, 2 ** 30, 3)))
    assert counts == {"calls": 3, "links": 4, "instances": 1, "shapes": 1, "untemplated": 0}


def test_a_changed_program_is_linked_again(tmp_path):
    path = tmp_path / "p.sq"
    path.write_text(PROGRAM.replace("K;", "k;").replace("EXTRA", "1"))
    shapes = Shapes(str(path))
    sets = {"bs": "4", "n": "10", "k": "3"}
    shapes.link(sets, 10.0)
    shapes.link(dict(sets, k="5"), 10.0)
    path.write_text(PROGRAM.replace("K;", "k;").replace("EXTRA", "2 "))
    assert dumps(shapes.link(dict(sets, k="6"), 10.0)) == dumps(compile_file(str(path), sets=dict(sets, k="6"),
                                                                             horizon=10.0))
    assert shapes.counts["shapes"] == 2


def test_a_square_of_an_input_has_no_template(tmp_path):
    # `bs * bs` is a product, so the linker notes no fold, but the probe's
    # cap changed by 2 * 2 * 3 (bs twice, n once): no product of distinct
    # inputs, so the shape is linked every time
    counts = _calls(tmp_path, values=((4, 10, 3), (8, 20, 3), (2, 7, 3)), cap="n * bs * bs")
    assert counts == {"calls": 3, "links": 4, "instances": 0, "shapes": 1, "untemplated": 1}


def test_a_shape_the_template_refuses_is_said_as_the_full_link_says_it(tmp_path, monkeypatch):
    # `branch (flag)` is right at flag = 1 and wrong at the probe's 2: the
    # shape gets no template, and a scenario at 3 is refused with the full
    # link's whole message, through the oracle's own path
    monkeypatch.setattr(A, "_SHAPES", {})
    path = tmp_path / "p.sq"
    path.write_text(PROGRAM.replace("K;", "k;").replace("EXTRA", "1")
                    .replace('let k = args.number("k", 4);', 'let k = args.number("k", 4);\n  let flag = args.number("flag", 1);')
                    .replace("{ prefill (prompt); }", "{ prefill (prompt); branch (flag) { observe first = now; } }"))

    class Harness:
        program = staticmethod(lambda s: str(path))
        inputs = staticmethod(lambda s: {"flag": str(s["flag"]), "k": str(s["k"])})
        horizon = staticmethod(lambda s: 10.0)
        with_sessions = staticmethod(lambda p, s: p)

    for flag, k in ((1, 3), (1, 5)):
        assert dumps(A.harness_program(Harness, {"flag": flag, "k": k})) == \
            dumps(compile_file(str(path), sets={"flag": str(flag), "k": str(k)}, horizon=10.0))
    with pytest.raises(SerqError) as e:
        A.harness_program(Harness, {"flag": 3, "k": 7})
    assert str(e.value) == (
        f"{path}:17:50: error[E603]: a constant guard is 3, neither 0 nor 1\n"
        "   |\n"
        "17 |     request (prompt) { prefill (prompt); branch (flag) { observe first = now; } }\n"
        "   |                                                  ^^^^\n"
        "  = help: a guard is a test; for a draw write `branch with (p)`")
    assert [c.counts for c in A._SHAPES.values()] == [
        {"calls": 3, "links": 4, "instances": 0, "shapes": 1, "untemplated": 1}]


# ---------------------------------------------------------------- drawn scenarios
#
# Engines and requests drawn by Hypothesis, beyond what the fuzz generators
# draw (block sizes of 3 and 5, budgets of 1, chunks of any size; in the main
# family requests that fit no pool): the fast path's IR, report and outcome are the full
# link's, or both paths refuse the scenario with the same message.

def _engine():
    return st.fixed_dictionaries(
        {"block_size": st.sampled_from([1, 2, 3, 4, 5, 8, 16]), "budget": st.integers(1, 300),
         "num_blocks": st.integers(1, 60), "max_seqs": st.integers(1, 8)},
        optional={"chunk": st.integers(0, 70), "prefix_caching": st.booleans()})


def _requests(extra: dict):
    return st.lists(st.fixed_dictionaries({"prompt": st.integers(1, 150), "out": st.integers(1, 40),
                                           "arrive": st.integers(0, 10)}, optional=extra),
                    min_size=1, max_size=6)


@st.composite
def _scenario(draw):
    s = draw(_engine())
    s["max_seqs"] = min(s["max_seqs"], s["budget"])
    if draw(st.booleans()):
        s["policy"] = "priority"
        s["requests"] = draw(_requests({"priority": st.integers(-2, 3)}))
    else:
        s["requests"] = draw(_requests({}))
    return s


@st.composite
def _pd_scenario(draw):
    P, D = draw(_engine()), draw(_engine())
    reqs = draw(_requests({"xfer": st.integers(1, 6)}))
    for r in reqs:
        if draw(st.booleans()):     # a shared prompt: both KV pools content-addressed (PD.with_sessions)
            r["prefix"] = {"id": draw(st.integers(0, 2)), "tokens": draw(st.integers(1, r["prompt"]))}
    for e, tokens in ((P, lambda r: r["prompt"]), (D, lambda r: r["prompt"] + r["out"] - 1)):
        e["max_seqs"] = min(e["max_seqs"], e["budget"])
        # every request fits each side alone, as the P/D harness requires
        e["num_blocks"] = max(e["num_blocks"], max(-(-tokens(r) // e["block_size"]) for r in reqs))
    return {"P": P, "D": D, "xfer_steps": draw(st.integers(1, 6)), "proxy_delay": draw(st.integers(0, 3)),
            "requests": reqs}


def _said(f, *args):
    try:
        return "ok", f(*args)
    except SerqError as e:
        return "error", str(e)


def _same_both_ways(harness, s, outcome):
    harness.check(s)
    fast = _said(A.harness_program, harness, s)
    with A.linking("each"):
        full = _said(A.harness_program, harness, s)
    assert fast[0] == full[0], (s, fast, full)
    if fast[0] == "error":
        assert fast[1] == full[1], s
        return
    fast, full = fast[1], full[1]
    assert dumps(fast) == dumps(full), s
    assert repr(fast) == repr(full), s
    a, b = _said(simulate, fast), _said(simulate, full)
    assert a[0] == b[0], s
    if a[0] == "error":
        assert a[1] == b[1], s
        return
    assert json.dumps(a[1].data(), sort_keys=True) == json.dumps(b[1].data(), sort_keys=True), s
    assert outcome(a[1], fast) == outcome(b[1], full), s


@pytest.mark.parametrize("harness, scenarios, outcome", [
    (S, _scenario(), O.scenario_outcome), (PD, _pd_scenario(), PD.outcome)], ids=["scenario", "pd"])
def test_drawn_scenarios_give_the_full_links_ir_report_and_outcome(harness, scenarios, outcome, monkeypatch):
    monkeypatch.setattr(A, "_SHAPES", {})

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(scenarios)
    def check(s):
        _same_both_ways(harness, s, outcome)
    check()
    counts = [c.counts for c in A._SHAPES.values()]
    assert [c["untemplated"] for c in counts] == [0] * len(counts)
    assert sum(c["instances"] for c in counts) >= 20, counts
