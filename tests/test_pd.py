"""Prefill/decode disaggregation against two real vLLM schedulers
(tools/oracle/vllm_pd_oracle.py): every committed P/D scenario agrees on every
field; the observable the decoder's load gate reads, worked by hand."""

from __future__ import annotations

import pytest

from serq.link import compile_source
from serq.sim import simulate

PREFILLING = """fn main() {
  device gpu { kv cap 100; }
  engine llm on gpu {
    reqs cap 4;
    tokens cap 8;
    schedule { advance running; admit waiting while (running.preempted == 0); }
    execute (1);
  }
  pool kv on gpu { block 4; evict lru; preempt lifo; }
  pool reqs on llm { queue fifo; }
  stage gate : delay;
  workload { arrive batch(2); }
  server {
    branch (serial == 0) {
      hold reqs (cost(reqs, 1)), kv (cost(kv, min(18, budget_left(llm)))) reserve (cost(kv, 18)) {
        run llm prefill (cost(llm, 18)) growing kv;
        run llm decode (cost(llm, 3)) growing kv;
      }
    } else {
      run gate (cost(gate, 0.5));
      observe a = prefilling(kv);
      run gate (cost(gate, 1));
      observe b = prefilling(kv);
      run gate (cost(gate, 1));
      observe c = prefilling(kv);
      run gate (cost(gate, 1));
      observe e = prefilling(kv);
    }
  }
}
"""


def test_prefilling_is_what_the_running_prefills_have_still_to_allocate():
    """An 18-token prompt, a budget of 8, blocks of 4.  The iteration at 0
    admits it with 8 tokens' blocks (2 blocks): its prefill ends at 18, 5
    blocks, so at 0.5 it has 20 - 8 = 12 units still to take; the iteration
    at 1 grows it to 16 (4 to go at 1.5); the one at 2 serves the last 2
    tokens and grows it to 20 (nothing to go at 2.5); from 3 it decodes,
    and a decode is no prefill (0 at 3.5)."""
    rep = simulate(compile_source(PREFILLING, "t.sq", horizon=20.0))
    got = {name: [v for _, _, _, v in rep.samples(name)] for name in ("a", "b", "c", "e")}
    assert got == {"a": [12.0], "b": [4.0], "c": [0.0], "e": [0.0]}
