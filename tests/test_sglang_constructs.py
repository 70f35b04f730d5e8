"""The constructs SGLang's scheduler asked of the language (docs/engines.md,
"SGLang as an oracle"), each worked by hand on the step clock: `await;` (a
request stays on its engine one more iteration), `reserve held (e)` (what a
live hold keeps reserved, read for it at each admission) and `batch.tokens`
in the header of a hold an engine admits."""

from __future__ import annotations

import pytest

from serq.diag import SerqError
from serq.sim import simulate

from .helpers import gated_batch, link

ENGINE = """
  device gpu {{ kv cap {cap}; }}
  engine e on gpu {{
    reqs cap {reqs};
    tokens cap {tokens};
    schedule {{ advance running; admit waiting{gate} taking reqs (1), kv ({units}) reserve ({reserve}); }}
    execute (1);
    request (prompt, output) {{
      prefill (prompt) growing kv;
      decode (output - 1) growing kv;
      {tail}
    }}
  }}
  pool kv on gpu {{ block 1; evict lru; {held} preempt by (1 - decoding, position - prompt, -prompt) requeue tail; }}
  pool reqs on e {{ queue fifo; }}
  stage gate : delay;
  workload {{
    arrive batch({n});
    init {{ set prompt = 4; set o = 3; set arrive = 0; }}
    session {{ run gate (cost(gate, arrive)); turn; }}
  }}
  server {{ e (prompt, o); observe done = now; }}
"""


def program(n=2, cap=100, reqs=4, tokens=64, gate="", units="prompt", reserve="prompt", held="", tail=""):
    return link(ENGINE.format(n=n, cap=cap, reqs=reqs, tokens=tokens, gate=gate, units=units,
                              reserve=reserve, held=held, tail=tail), horizon=100.0)


def done(p, **kw):
    rep = simulate(p, step_log=True, **kw)
    return {s: v for _, s, _, v in rep.samples("done")}, rep


def test_a_request_that_awaits_leaves_one_iteration_later_holding_its_slot():
    """Two requests of 4 + 3 tokens, one slot (`reqs cap 1`).  Without await:
    r0 prefills at 0 (its first token), decodes at 1 and 2, ends at 3; r1 is
    admitted at 3 and ends at 6.  With `await;` after the decode r0 stays
    through iteration 3, taking no token and keeping its slot, so r1 waits
    until 4 and ends at 7; r0's answer is at 4."""
    plain, _ = done(program(reqs=1))
    assert plain == {0: 3.0, 1: 6.0}
    late, rep = done(program(reqs=1, tail="await;"))
    assert late == {0: 4.0, 1: 8.0}
    # iteration 3 runs for r0 alone at no token (nothing else is scheduled)
    assert [r["tokens"] for r in rep.step_log if r["time"] == 3.0] == [{}]
    assert [r["admitted"] for r in rep.step_log if r["time"] == 4.0] == [[1]]


def test_a_request_that_awaits_is_out_of_the_decode_batch_and_no_victim():
    """KV of 13 tokens, two requests of 4 + 3 (peak 6 each, 12 together)
    and a third arriving with them: r0 and r1 decode together; while r0
    awaits after its last decode (holding 6 units), r1's growth does not
    preempt it (it is no candidate), and the awaiting request takes no
    token in that iteration."""
    p = program(n=2, cap=13, tail="await;")
    got, rep = done(p)
    assert got == {0: 4.0, 1: 4.0}
    assert all(r["preempted"] == [] for r in rep.step_log)
    assert [r["tokens"] for r in rep.step_log] == [{0: 4.0, 1: 4.0}, {0: 1.0, 1: 1.0}, {0: 1.0, 1: 1.0}, {}]


def test_await_outside_an_engines_request_does_not_link():
    with pytest.raises(SerqError) as e:
        link("""
  stage s : delay;
  workload { arrive batch(1); }
  server { await; }
""", horizon=10.0)
    assert "error[E111]: `await;` is a statement of an engine's request" in e.value.render()


def test_reserve_held_with_an_expression_counts_what_it_reads_for_each_hold():
    """Cap 22, requests of 4 + 3 reserving 10 each.  With `reserve held;`
    a holder keeps 10 − 4 = 6 reserved after its admission: r0 (4 used + 6
    kept), r1 (4 + 10 ≤ 22 next to them), but r2 needs 8 + 12 + 10 = 30: it
    waits for r0 and r1 to end at 3.  With `reserve held (reserved / 3)` a
    holder keeps a third of that, 2: r2 needs 8 + 4 + 10 = 22 and is admitted
    with them."""
    base = dict(n=3, cap=22, units="prompt", reserve="10")
    held_full, _ = done(program(held="reserve held;", **base))
    assert held_full == {0: 3.0, 1: 3.0, 2: 6.0}
    third, _ = done(program(held="reserve held (reserved / 3);", **base))
    assert third == {0: 3.0, 1: 3.0, 2: 3.0}


def test_reserve_held_with_an_expression_reads_decoding_and_remaining():
    """`reserve held (decoding ? remaining : 0)`: a decoding holder keeps
    its outputs still to come; a prefilling one nothing.  Cap 13, each
    request 4 + 3 (reserve its 6 peak): r0 and r1 are admitted at 0 in one
    batch (r1 sees r0 prefilling: 0 kept); r2's reserve (6) does not fit
    next to the two decoders' 4 + 4 used and 2 + 2 kept until r0 and r1
    end at 3."""
    got, rep = done(program(n=3, cap=13, reserve="prompt + o - 1",
                            held="reserve held (decoding ? remaining : 0);"))
    assert got == {0: 3.0, 1: 3.0, 2: 6.0}
    assert [r["admitted"] for r in rep.step_log][:2] == [[0, 1], []]


def test_a_header_an_engine_admits_reads_the_batch_so_far():
    """`tokens cap inf`, a gate in the reserve: a newcomer other than the
    first of its iteration needs fewer new tokens than 6 less the batch so
    far, or it reserves more than the cap (SGLang's input budget without
    chunking).  Three 4-token prompts: r0 is the first; r1 would need
    4 < 6 − 4: it waits for iteration 1, whose batch is then r0's decode (1
    token): 4 < 5, admitted; r2 then needs 4 < 6 − 5 and waits; in iteration 2
    the batch is two decodes (4 < 4 fails); in 3, r0 has ended and the batch
    is r1's decode: admitted."""
    p = program(n=3, cap=100, tokens="inf", reserve="prompt + (batch.tokens > 0 && prompt >= 6 - batch.tokens ? 1000 : 0)")
    _, rep = done(p)
    assert [r["admitted"] for r in rep.step_log][:4] == [[0], [1], [], [2]]


def test_batch_tokens_in_a_header_no_engine_admits_does_not_link():
    with pytest.raises(SerqError) as e:
        link("""
  pool m { cap 10; }
  stage s : delay;
  workload { arrive batch(1); }
  server { hold m (cost(m, 1 + batch.tokens)) { run s (cost(s, 1)); } }
""", horizon=10.0)
    assert "`batch.tokens` is not available in a hold's units, reserve and reuse, read when the session " \
           "is admitted" in e.value.render()


def test_reserve_held_reading_budget_left_does_not_link():
    with pytest.raises(SerqError) as e:
        program(held="reserve held (budget_left(e));")
    assert "budget_left" in e.value.render() and "reserve held (e)" in e.value.render()


BLOCKED = """
  device gpu {{ kv cap {cap}; }}
  engine e on gpu {{
    reqs cap 4;
    tokens cap 64;
    state stop = 0;
    schedule {{
      advance running;
      admit waiting while (stop == 0) taking reqs ({reqs}), kv (prompt) reserve (prompt + o);
      set stop = {stop};
    }}
    execute (1);
    request (prompt, output) {{
      prefill (prompt) growing kv;
      decode (output - 1) growing kv;
    }}
  }}
  pool kv on gpu {{ block 1; evict lru; preempt none; }}
""" + gated_batch(3, 4, 2, to_format=True)


def test_waiting_blocked_says_the_kv_refused_the_head():
    """KV of 12, three requests reserving 4 + 2 each: r0 and r1 fill it, r2
    is refused by the KV at 0 (waiting.blocked 1): an engine that stops
    admitting for good once blocked never admits r2 (the run ends with it
    waiting), one that does not stop admits it at 2, when r0 and r1 have
    ended.  A head another pool refuses is tried on the KV too: refused by
    `reqs` (its units above the cap until 2) where the KV has room (18) r2
    does not block and is admitted at 2; where the KV has none (12) it
    blocks as before."""
    p = link(BLOCKED.format(cap=12, reqs="1", stop="waiting.blocked > 0 ? 1 : stop"), horizon=20.0)
    got, rep = done(p)
    assert got == {0: 2.0, 1: 2.0}
    p = link(BLOCKED.format(cap=12, reqs="1", stop="0"), horizon=20.0)
    got, rep = done(p)
    assert got == {0: 2.0, 1: 2.0, 2: 4.0}
    by_reqs = "serial == 2 && now < 2 ? 5 : 1"
    p = link(BLOCKED.format(cap=18, reqs=by_reqs, stop="waiting.blocked > 0 ? 1 : stop"), horizon=20.0)
    got, rep = done(p)
    assert got == {0: 2.0, 1: 2.0, 2: 4.0}
    p = link(BLOCKED.format(cap=12, reqs=by_reqs, stop="waiting.blocked > 0 ? 1 : stop"), horizon=20.0)
    got, rep = done(p)
    assert got == {0: 2.0, 1: 2.0}
