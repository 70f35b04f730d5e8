"""The Z3-discharged check: `each at most` is above 0 for every value its
condition can read; a failure comes with a counterexample in the program's names."""

import pytest

from serq.diag import SerqError
from serq.ir import model as M
from serq.smt import cap_counterexample
from tests.helpers import link

ENGINE = """
  let chunk_cap = args.number("chunk_cap", 64);
  device gpu { kv cap 1000; }
  engine llm on gpu {
    reqs cap 4; state r = 1;
    tokens cap 64;
    schedule { let t = %s; advance running each at most (t); admit waiting each at most (t); }
    execute (1);
  }
  pool kv on gpu { block 16; }
  pool reqs on llm { }
  workload { arrive poisson(1); }
"""


@pytest.mark.parametrize("cap", [
    "running.count + waiting.count > 1 ? chunk_cap : inf",
    "max(1, min(chunk_cap, running.count))",
    "running.count + 1",
    "running.kv_decode > 100 ? 8 : 16",
    "max(4, r)",
    "inf",
])
def test_caps_above_zero_everywhere_link(cap):
    p = link(ENGINE % cap)
    assert next(s for s in p.stages if s.name == "llm").kind.chunk is not None


@pytest.mark.parametrize("cap,state", [
    ("min(chunk_cap, running.count)", "running.count = 0"),
    ("max(0, running.kv_decode)", "running.kv_decode = 0"),
    ("r", "r = 0"),
])
def test_caps_that_can_reach_zero_are_refused_with_a_state(cap, state):
    with pytest.raises(SerqError) as info:
        link(ENGINE % cap)
    msg = info.value.diagnostics[0].message
    assert msg.startswith("each at most (t) is ") and msg.endswith(state), msg


def test_the_counterexample_is_a_real_one():
    with pytest.raises(SerqError) as info:
        link(ENGINE % "chunk_cap - running.count")
    msg = info.value.diagnostics[0].message
    value = float(msg.split(" is ")[1].split(" ")[0])
    count = float(msg.split("running.count = ")[1])
    assert value == 64 - count and value <= 0 and count == int(count)


def test_counterexample_directly_on_ir():
    nres = M.ECtx("Nres")
    cap = M.ECond(M.EBinary("Gt", nres, M.ENum(3.0)), M.ENum(0.0), M.ENum(16.0))
    cex = cap_counterexample(cap)
    assert cex.value == "0" and dict(cex.assignment)["running.count"] in ("4", "5", "6", "7", "8", "9")
    assert cap_counterexample(M.EFn("Max", (M.ENum(2.0), nres))) is None
