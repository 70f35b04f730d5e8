"""A claim reads and does not act: the same program without its claims gives
the identical report apart from the claims section (§Claims)."""

import glob

import pytest

from serq.link import compile_source
from serq.sim import simulate

from workloads import program, without_claims

# claims added to a program that has none: every form, with a given, reading
# the cost's variables, observables, demand, served, arrived and aggregates
VLLM_CLAIMS = """
  claim kv_fits: every iteration of vllm (used(kv) <= blocks * bs && tokens <= B && kv_decode >= 0);
  claim pressure: some iteration of vllm (demand > B && queued(reqs) > 0);
  claim arrivals given (K == 0): every iteration of vllm (served <= arrived * 1000000);
  claim hits: at end (total(hit) <= count(hit) && prefix_total(prefill_tokens) >= 0);
"""


def with_source_claims(path: str, extra: str, **kw):
    text = open(path, encoding="utf-8").read()
    cut = text.rindex("}")
    return compile_source(text[:cut] + extra + text[cut:], path, **kw)


def strip(d: dict) -> dict:
    """A report without its claims, and without the IR's digest (the IR
    without them is another IR)."""
    out = {k: v for k, v in d.items() if k != "claims"}
    out["made"] = {k: v for k, v in d["made"].items() if k != "ir"}
    return out


def text_without_claims(text: str) -> str:
    lines = text.splitlines()
    if any(x.startswith("claim ") for x in lines):
        i = next(k for k, x in enumerate(lines) if x.startswith("claim "))
        j = i
        while j < len(lines) and lines[j] != "":
            j += 1
        lines = lines[:i - 1] + lines[j:]   # the blank line before the table too
    return "\n".join(lines)


def same_run(p):
    with_c = simulate(p)
    without = simulate(without_claims(p))
    assert strip(with_c.data()) == strip(without.data()) and without.data()["claims"] == []
    assert with_c.data()["made"]["ir"] != without.data()["made"]["ir"]
    assert text_without_claims(with_c.text()) == without.text()
    return with_c


def test_the_vllm_engine_runs_the_same_with_claims():
    p = with_source_claims("examples/multi-turn/vllm.sq", VLLM_CLAIMS, horizon=60, warmup=5, seed=3)
    r = same_run(p)
    verdicts = {c["name"]: c["verdict"] for c in r.data()["claims"]}
    assert verdicts["kv_fits"] == "holds" and verdicts["arrivals"] == "holds"
    assert verdicts["hits"] == "not_evaluated"   # sessions are live at the horizon


@pytest.mark.parametrize("path", sorted(glob.glob("examples/papers/*.sq")))
def test_the_papers_programs_run_the_same_without_their_claims(path):
    horizon = {"bari_rad": 2e6, "kong_svf": 1e5}.get(path.split("/")[-1][:-3], 2e6)
    same_run(program(path, horizon=horizon, seed=2))
