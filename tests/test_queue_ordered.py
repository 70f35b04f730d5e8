"""`queue ordered by (keys) [tail when (e) shared (n)];` (docs/language.md,
docs/engines.md "SGLang as an oracle"): a queue that keeps the order it was
last sorted in, sorted again, stably, each time its engine's iteration
reaches `admit waiting`, and SGLang's in-batch prefix caching as its tail
clause; worked by hand on the step clock.  One request runs at a time
(`reqs cap 1`), so the order requests are served in is the queue's: each
prefills its 20 tokens in one iteration and decodes its 2 other outputs in
the next two, and the next request is admitted as the last one ends."""

from __future__ import annotations

import dataclasses

import pytest

from serq.diag import SerqError
from serq.oracle.scenario import with_shared_kv
from serq.sim import simulate

from .helpers import CACHING, EXPLICIT, link, sessions

BODY = CACHING.replace("reqs cap 4;", "reqs cap 1;") + "  pool kv on gpu {{ block 1; evict lru; }}\n" + \
    EXPLICIT.replace("queue fifo;", "{queue}")


def order(queue: str, reqs) -> list:
    """The requests in the order they got their first token."""
    p = sessions(link(BODY.format(cap=400, queue=queue), horizon=100.0), reqs)
    p = dataclasses.replace(p, pools=with_shared_kv(p.pools))
    done = {s: v for _, s, _, v in simulate(p).samples("done")}
    assert len(done) == len(reqs)
    return sorted(done, key=lambda s: done[s])


THREE = [(20, 3, 0, ()), (21, 3, 0, ()), (22, 3, 0, ())]
AT_FIRST = "now < 1 ? -prompt : 0"      # the longest prompt first at step 0, then a tie


def test_an_ordered_queue_keeps_its_last_order_where_the_keys_tie():
    """At step 0 both queues serve r2 (the longest prompt); from step 1 the
    keys tie.  `queue by` then takes the one that joined first (r0), the
    ordered queue keeps the order step 0 sorted it in (r1 before r0)."""
    assert order(f"queue by ({AT_FIRST});", THREE) == [2, 0, 1]
    assert order(f"queue ordered by ({AT_FIRST});", THREE) == [2, 1, 0]


def test_a_hold_sharing_with_one_ahead_goes_to_the_tail():
    """r0 and r1 start with the same 16 tokens: r1 shares 16 with r0, which
    stayed, so it goes behind r2; 17 are not shared, so nothing moves."""
    reqs = [(20, 3, 0, ((0, 16),)), (20, 3, 0, ((0, 16),)), (20, 3, 0, ())]
    assert order("queue ordered by (0) tail when (1) shared (16);", reqs) == [0, 2, 1]
    assert order("queue ordered by (0) tail when (1) shared (17);", reqs) == [0, 1, 2]
    # a hold the condition does not hold for is neither moved nor matched against
    assert order("queue ordered by (0) tail when (prompt > 20) shared (16);", reqs) == [0, 1, 2]
    assert order("queue ordered by (0) tail when (arrive == 0 && prompt == 20) shared (1);",
                 reqs + [(20, 3, 0, ((0, 16), (1, 2)))]) == [0, 2, 1, 3]


def test_the_tail_is_matched_against_the_holds_that_stayed_only():
    """r1 shares 16 with r0 and goes to the tail; r2 shares 16 with r1 only
    through the same prompt, so with r0 too: it goes as well, in its order.
    r3's 8 tokens of prompt 1 share nothing."""
    reqs = [(20, 3, 0, ((0, 16),)), (20, 3, 0, ((0, 16),)), (20, 3, 0, ((0, 16),)), (20, 3, 0, ((1, 8),))]
    assert order("queue ordered by (0) tail when (1) shared (16);", reqs) == [0, 3, 1, 2]


def test_shared_counts_tokens_of_content_from_the_start():
    """Two sessions share the tokens their contents have in common from
    the start: a segment's token k is (id, k), and what follows a content
    is the session's own."""
    from serq.sim.pools.prefix import shared_from_start
    assert shared_from_start(((0, 16),), ((0, 16),)) == 16
    assert shared_from_start(((0, 16),), ((0, 10), (1, 4))) == 10
    assert shared_from_start(((0, 16), (2, 3)), ((0, 16), (2, 5))) == 19
    assert shared_from_start(((0, 16), (2, 3)), ((0, 16), (3, 5))) == 16
    assert shared_from_start(((1, 16),), ((0, 16),)) == 0
    assert shared_from_start((), ((0, 16),)) == 0


def test_a_tail_condition_that_is_not_a_test_is_an_error_at_the_program():
    with pytest.raises(SerqError) as e:
        order("queue ordered by (0) tail when (2) shared (16);", THREE)
    msg = e.value.render()
    assert "a guard is 2, neither 0 nor 1" in msg and "t.sq:" in msg


def test_the_lean_fragment_refuses_it_by_name():
    from leangen.fragment import Outside, translate
    body = BODY.replace("admit waiting taking", "admit waiting while (running.preempted == 0) taking") \
        .replace("evict lru;", "evict lru; preempt lifo;")
    p = link(body.format(cap=400, queue="queue ordered by (0);"), horizon=100.0)
    with pytest.raises(Outside, match="queue ordered by on pool `reqs`"):
        translate(p)
