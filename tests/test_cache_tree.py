"""`cache shared tree;` and `preempt … then free (e);` (docs/language.md,
docs/engines.md "SGLang as an oracle"): a content-addressed pool kept as a
radix tree, and the eviction a preemption makes, worked by hand on the step
clock.  Requests are explicit sessions: (prompt, outputs, arrival, the
content id its prompt starts with, how many of its tokens are that
content's); a request's `cached_tokens` is its hit at each admission."""

from __future__ import annotations

import dataclasses

import pytest

from serq.diag import SerqError
from serq.ir import model as M
from serq.ir.validate import validate
from serq.sim import simulate

from .helpers import CACHING, EXPLICIT, link, sessions

# An engine that admits every waiting request while it has budget, a prefill
# found only at the release (`cache at (inf)`: the whole request is one node)
PLAIN = CACHING + """  pool kv on gpu {{ block 1; evict lru; {cache} cache at (inf); }}
""" + EXPLICIT

# An engine whose requests are preempted when a decode does not fit: the
# victim has the fewest outputs, then the longest prompt, and keeps its
# outputs; a prefill is found from the next iteration, a decode at the release
PREEMPTING = """
  device gpu {{ kv cap {cap}; }}
  engine e on gpu {{
    reqs cap 4;
    tokens cap 64;
    schedule {{ advance running; admit waiting while (running.preempted == 0) taking reqs (1), kv (known)
                 reserve (known) reuse (min(cachedin(kv), known - 1)); }}
    execute (1);
    request (prompt, output) {{
      at admission {{ known = max(prompt, computed + 1); }}
      set c = cached;
      observe cached_tokens = c;
      prefill (known - c) growing kv;
      decode (output - 1 - (known - prompt)) growing kv;
      cache (prompt + output - 1);
    }}
  }}
  pool kv on gpu {{ block 1; evict lru; {cache} cache at (decoding ? inf : 1);
                   preempt by (1 - decoding, position - prompt, -prompt) requeue tail{free}; }}
""" + EXPLICIT


def run(body: str, reqs, **fmt):
    """Each request's `cached_tokens` at its admissions, and the report."""
    p = sessions(link(body.format(**fmt), horizon=200.0),
                 [(pr, o, a, ((cid, n),) if cid is not None else ()) for pr, o, a, cid, n in reqs])
    rep = simulate(p, step_log=True)
    cached: dict = {}
    for _, s, _, v in rep.samples("cached_tokens"):
        cached.setdefault(s, []).append(v)
    return [cached.get(i) for i in range(len(reqs))], rep


TREE, BLOCKS = "cache shared tree;", "cache shared;"


def test_a_tree_evicts_whole_leaves():
    """KV of 30.  r0 (20 tokens, 16 of them shared content, 3 outputs) ends
    at 3 and leaves 22 tokens cached, one node.  r1 (12 tokens of its own,
    reserving 13) at 3 needs 5 of them: the block-by-block pool evicts r0's
    5 last tokens and keeps the 16 shared ones, which r2 (the same shared
    prompt, at 5) finds; the tree evicts the whole node, and r2 finds
    nothing."""
    reqs = [(20, 3, 0, 0, 16), (12, 1, 3, None, 0), (20, 3, 5, 0, 16)]
    assert run(PLAIN, reqs, cap=30, cache=BLOCKS)[0] == [[0.0], [0.0], [16.0]]
    assert run(PLAIN, reqs, cap=30, cache=TREE)[0] == [[0.0], [0.0], [0.0]]


def test_a_tree_evicts_the_least_recently_used_leaf_not_the_least_recently_freed():
    """KV of 50.  r0 (content 0) ends at 3, r1 (content 1) at 4: 22 tokens
    each cached.  r2 (17 tokens, the 16 of content 0) at 5 takes 16 of r0's
    as its hit: the tree splits r0's node there and uses its head (and
    stamps the 6 left as new).  r3 (8 of its own, reserving 9) at 7 needs 4
    more than the 5 free: the block-by-block pool evicts r0's last 4 tokens
    (freed first, at 3), the tree r1's whole node (used last at 4), so r4
    (content 1, at 9) finds 16 in the first and nothing in the tree."""
    reqs = [(20, 3, 0, 0, 16), (20, 3, 1, 1, 16), (17, 1, 5, 0, 16), (8, 1, 7, None, 0), (20, 3, 9, 1, 16)]
    blocks, _ = run(PLAIN, reqs, cap=50, cache=BLOCKS)
    tree, rep = run(PLAIN, reqs, cap=50, cache=TREE)
    assert blocks == [[0.0], [0.0], [16.0], [0.0], [16.0]]
    assert tree == [[0.0], [0.0], [16.0], [0.0], [0.0]]
    # r3's 8 tokens fit once 4 were evicted: 50 less what is held, in both
    assert [(r["time"], r["free"]) for r in rep.step_log if r["admitted"] == [3]] == [(7.0, 42.0)]


def test_an_admission_tried_uses_the_path_of_its_hit():
    """KV of 55: r0 (content 0) cached at 3, r1 (content 1) at 4, 22 tokens
    each; r2 (10 of its own, 4 outputs) runs from 4 to 8 and its decode at 6
    needs a token more than the 55.  r3 (content 0, reserving 50) is refused
    at 5 and 6 (r2 holds 11 and 12): each refused admission still uses the
    path of its 16-token hit, so at 6 the tree evicts r1's node and r3,
    admitted at 8, finds its 16; arriving at 8 instead (no refused try
    before 6), r0's node was the least recently used and is gone."""
    def r3_cached(arrive):
        reqs = [(20, 3, 0, 0, 16), (20, 3, 1, 1, 16), (10, 4, 4, None, 0), (20, 30, arrive, 0, 16)]
        return run(PLAIN, reqs, cap=55, cache=TREE)[0][3]
    assert r3_cached(5) == [16.0]
    assert r3_cached(8) == [0.0]


def test_a_tree_evicts_for_an_iteration_once_it_is_formed():
    """KV of 41: r0's 22 tokens (content 0) cached at 3.  r1 (20 of its own,
    1 output) at 5 needs 1 token more than the 19 the cache leaves.  When
    r2 (content 0, 20 tokens, 1 output) is admitted in the same iteration it
    takes r0's 16 as its hit before the iteration's evictions, which then
    take the 6 it left; admitted at 6, it finds nothing, r0's whole node
    having gone for r1 at 5 (a pool evicting block by block had taken one
    token of it, and r2 finds 16 either way)."""
    def r2_cached(arrive, cache):
        reqs = [(20, 3, 0, 0, 16), (20, 1, 5, None, 0), (20, 1, arrive, 0, 16)]
        return run(PLAIN, reqs, cap=41, cache=cache)[0][2]
    assert r2_cached(5, TREE) == [16.0]
    assert r2_cached(6, TREE) == [0.0]
    assert r2_cached(6, BLOCKS) == [16.0]


def test_then_free_evicts_after_a_preemption_until_e_are_free():
    """KV of 32: r0 (10 tokens of content 0) and r1 (8 of content 1), 12
    outputs each, decode together until the pool is full at 7; at 8 r0's
    decode (served first) does not fit and r0, with as many outputs and the
    longer prompt, is preempted.  Its 10 prompt tokens stay cached (found at
    1), its 7 decoded ones are freed: 32 − 15 held by r1 − 10 cached = 7
    free.  `then free (running.decoding * 7)` (7, r1 alone decoding)
    evicts nothing, and r0 finds its 10 when it comes back at 12; `* 8`
    evicts the tree's node of 10 (it finds nothing), or the pool's last
    block (it finds 9)."""
    reqs = [(10, 12, 0, 0, 10), (8, 12, 0, 1, 8)]
    for cache, left in ((TREE, 0.0), (BLOCKS, 9.0)):
        keep, rep = run(PREEMPTING, reqs, cap=32, cache=cache, free=" then free (running.decoding * 7)")
        assert keep[0] == [0.0, 10.0]
        assert [(r["time"], r["preempted"], r["admitted"]) for r in rep.step_log
                if r["preempted"] or r["admitted"]] == [(0.0, [], [0, 1]), (8.0, [0], []), (12.0, [], [0])]
        gone, _ = run(PREEMPTING, reqs, cap=32, cache=cache, free=" then free (running.decoding * 8)")
        assert gone[0] == [0.0, left]


def test_a_tree_evicts_what_no_hold_uses_before_it_preempts():
    """KV of 35: r0 (10), r1 (8), r2 (6 tokens, 5 outputs) decode together;
    r3 (2 tokens of content 3, one output) leaves its 2 cached at 4.  At 4
    r0 and r1 grow to 35 and r2's decode does not fit: the tree first evicts
    r3's 2 (as SGLang's check of the decode batch evicts every unlocked
    node), then preempts r0, whose 10 prompt tokens stay cached with 4 free,
    which `then free (running.decoding * 2)` (4) leaves alone: r0 finds its
    10 when it comes back at 5 (had r3's 2 still been cached, 2 free, the
    least recently used node, r0's prompt, would have gone)."""
    reqs = [(10, 12, 0, 0, 10), (8, 12, 0, 1, 8), (6, 5, 0, 2, 6), (2, 1, 3, 3, 2)]
    got, rep = run(PREEMPTING, reqs, cap=35, cache=TREE, free=" then free (running.decoding * 2)")
    assert got[0][:2] == [0.0, 10.0]
    assert [(r["time"], r["preempted"], r["admitted"]) for r in rep.step_log if 4 <= r["time"] <= 5] == \
        [(4.0, [0], []), (5.0, [], [0])]
    got, _ = run(PREEMPTING, reqs, cap=35, cache=TREE, free=" then free (running.decoding * 3)")
    assert got[0][:2] == [0.0, 0.0]


def _pool(src_cache: str, free: str = ""):
    return link(PREEMPTING.format(cap=32, cache=src_cache, free=free), horizon=10.0)


def test_the_ir_keeps_the_tree_and_then_free():
    p = _pool(TREE, " then free (running.decoding * 20 - batch.tokens)")
    kv = p.pools[0]
    assert kv.shared and kv.tree and not kv.free_fifo
    assert type(kv.preempt) is M.PreemptBy and kv.preempt.tail and kv.preempt.free is not None
    plain = _pool(BLOCKS)
    assert not plain.pools[0].tree and plain.pools[0].preempt.free is None


def test_a_tree_that_is_not_content_addressed_is_refused_by_the_ir_check():
    p = _pool(TREE)
    for bad, why in (((dict(shared=False)), "and the pool is not one"),
                     ((dict(free_fifo=True)), "which has no free queue (free_fifo)")):
        q = dataclasses.replace(p, pools=(dataclasses.replace(p.pools[0], **bad),) + p.pools[1:])
        with pytest.raises(SerqError) as e:
            validate(q)
        assert ("error[E910]: pool `kv`: tree is the shape of a content-addressed pool's cache "
                f"(`cache shared tree;`), {why}") in e.value.render()


@pytest.mark.parametrize("free,msg", [
    ("budget_left(e)", "error[E507]: `budget_left(…)` cannot be read in a pool's then free (e), read after "
                       "each preemption, the victim gone"),
    ("waiting.count", "error[E501]: `waiting.count` is read in an engine's clauses"),
])
def test_then_free_reads_the_engine_as_the_victim_left_and_nothing_else(free, msg):
    with pytest.raises(SerqError) as e:
        _pool(TREE, f" then free ({free})")
    assert msg in e.value.render()


def test_then_free_follows_a_preemption_rule():
    with pytest.raises(SerqError) as e:
        link(PREEMPTING.format(cap=32, cache=TREE, free="").replace(
            "preempt by (1 - decoding, position - prompt, -prompt) requeue tail",
            "preempt none then free (1)"), horizon=10.0)
    assert "error[E102]: expected `;`, found `then`" in e.value.render()


def test_a_tree_takes_no_strokes_and_runs_as_step_by_step():
    """A stroke tries a waiting head's admission as a read-only trial; a
    tree's lookup uses its path, so an engine (the default procedure, which
    takes strokes with a content-addressed pool) whose program has a tree
    takes none, and the run is the step-by-step one to the byte."""
    import json
    from serq.sim.machine import Sim
    src = PLAIN.replace("admit waiting taking", "admit waiting while (running.preempted == 0) taking")
    assert Sim(link(src.format(cap=30, cache=BLOCKS), horizon=50.0), strokes=True).stages[0].strokes
    p = link(src.format(cap=30, cache=TREE), horizon=50.0)
    assert p.stages[0].kind.iteration is None and not Sim(p, strokes=True).stages[0].strokes
    a, b = simulate(p, strokes=True), simulate(p, strokes=False)
    assert json.dumps(a.data(), sort_keys=True) == json.dumps(b.data(), sort_keys=True)
