"""`cache at (e);` (docs/language.md, docs/engines.md "SGLang as an oracle"):
from which iteration of its engine a content-addressed pool's lookup finds
a hold's blocks, worked by hand on the step clock.  Two requests of 20
prompt tokens, the first 16 of them one shared prompt, 3 outputs each, on an
engine that admits every waiting request while it has budget; a request's
`cached_tokens` is its hit at admission."""

from __future__ import annotations

import dataclasses

import pytest

from serq.diag import SerqError
from serq.ir import model as M
from serq.oracle.scenario import with_shared_kv
from serq.sim import simulate

from .helpers import gated_batch, link

BODY = """
  device gpu {{ kv cap {cap}; }}
  engine e on gpu {{
    reqs cap 4;
    tokens cap 64;
    schedule {{ advance running; admit waiting taking reqs (1), kv (prompt)
                 reserve (prompt + o) reuse (cachedin(kv)); }}
    execute (1);
    request (prompt, output) {{
      set c = cached;
      observe cached_tokens = c;
      prefill (prompt - c) growing kv;
      decode (output - 1) growing kv;
      cache (prompt + output - 1);
    }}
  }}
  pool kv on gpu {{ block 1; evict lru; {at} }}
"""
GATED = gated_batch(1, 20, 3)


def run(at: str, arrivals, cap: int = 200, o: int = 3):
    p = link(BODY.format(at=at, cap=cap) + GATED, horizon=100.0)
    slot = {n: p.attrs.index(n) for n in ("prompt", "o", "arrive")}
    sessions = tuple(M.SessionSpec(attrs=((slot["prompt"], 20.0), (slot["o"], float(o)), (slot["arrive"], float(a))),
                                   content=((0.0, 16.0),)) for a in arrivals)
    p = dataclasses.replace(p, arrival=M.ASessions(sessions), pools=with_shared_kv(p.pools))
    rep = simulate(p, step_log=True)
    cached = {s: v for _, s, _, v in rep.samples("cached_tokens")}
    return [cached[i] for i in range(len(arrivals))], rep


def test_without_it_a_block_is_found_by_a_later_admission_of_the_same_iteration():
    """vLLM's naming: the second request, admitted in iteration 0 after the
    first, finds the first's 16 shared blocks at once."""
    assert run("", [0, 0])[0] == [0.0, 16.0]


def test_cache_at_one_finds_the_blocks_from_the_next_iteration():
    """`cache at (1)`: admitted in the same iteration, the second finds
    nothing; admitted in iteration 1, it finds the 16."""
    assert run("cache at (1);", [0, 0])[0] == [0.0, 0.0]
    assert run("cache at (1);", [0, 1])[0] == [0.0, 16.0]


def test_cache_at_two_finds_them_an_iteration_later_still():
    """`cache at (2)` (SGLang's overlap loop): the blocks iteration 0
    computes are found from iteration 2 on, not in 1."""
    assert run("cache at (2);", [0, 1])[0] == [0.0, 0.0]
    assert run("cache at (2);", [0, 2])[0] == [0.0, 16.0]


def test_cache_at_inf_finds_them_only_after_the_release():
    """`cache at (inf)`: r0 prefills at 0, decodes at 1 and 2 and is
    released at 3 (its `cache` keeps 22 tokens); r1 admitted at 2 finds
    nothing, admitted at 3 it finds every shared token."""
    assert run("cache at (inf);", [0, 2])[0] == [0.0, 0.0]
    assert run("cache at (inf);", [0, 3])[0] == [0.0, 16.0]


def test_a_block_found_late_that_the_pool_has_is_merged():
    """`cache at (2)`, 6 outputs each, r0 admitted at 0 and r1 at 1: both
    compute the 16 shared tokens.  At iteration 2 the pool holds r0's 20 + 2
    and r1's 20 + 1 (157 of 200 free); r1's blocks are found at iteration 3,
    and the pool keeps r0's copy of the 16 and frees r1's: r0's 20 + 3 and
    r1's 20 + 2 less 16, 171 free, not 155."""
    _, rep = run("cache at (2);", [0, 1], o=6)
    free = {int(r["time"]): r["free"] for r in rep.step_log}
    assert free[2] == 200 - (20 + 2 + 20 + 1)
    assert free[3] == 200 - (20 + 3 + 20 + 2 - 16)
    _, plain = run("cache at (1);", [0, 0], o=6)      # r1 admitted beside r0: merged at 1
    assert {int(r["time"]): r["free"] for r in plain.step_log}[1] == 200 - (20 + 1 + 20 + 1 - 16)


def test_cache_at_reads_what_a_hold_has_left():
    """`remaining` is what the hold's run has left after the iteration (0
    for a whole prefill: its blocks found two iterations later), `decoding`
    1 for a decode's (never found before the release)."""
    ok, _ = run("cache at (decoding ? inf : 1 + (remaining == 0));", [0, 2])
    assert ok == [0.0, 16.0]
    late, _ = run("cache at (decoding ? inf : 1 + (remaining == 0));", [0, 1])
    assert late == [0.0, 0.0]


def test_cache_at_reading_budget_left_does_not_link():
    with pytest.raises(SerqError) as e:
        link(BODY.format(at="cache at (budget_left(e));", cap=200) + GATED, horizon=100.0)
    assert "budget_left" in str(e.value)


def test_the_held_total_is_rounded_down_to_whole_blocks():
    """`reserve held (0.6)` for each of two live holds reserves 1 token (1.2
    rounded down to a block), not 1.2: with 40 tokens used, a third request
    reserving 23 fits a pool of 64 (40 + 1 + 23) in the same iteration, and
    not a pool of 63."""
    def admitted_at_0(cap):
        _, rep = run("cache at (inf); reserve held (0.6);", [0, 0, 0], cap=cap)
        return sorted(rep.step_log[0]["admitted"])
    assert admitted_at_0(64) == [0, 1, 2]
    assert admitted_at_0(63) == [0, 1]
