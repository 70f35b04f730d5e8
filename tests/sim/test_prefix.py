"""The content-addressed pool (`cache shared;`, serq/sim/pools/prefix.py and,
kept as runs, serq/sim/pools/runs.py).

The memory invariant at every event on random programs with shared content
(Hypothesis), with vLLM 0.33.0's free queue, 0.19.0's, and as a radix tree
(serq/sim/pools/tree.py): `used + cached <= cap` with a shared block counted
once, every block's reference count the number of allocations that hold it,
the free queue exactly the named blocks no hold uses, the index exactly the
named blocks (read on the pool a run uses, kept as runs, and on the
per-block pool where tests/sim/test_prefix_runs.py runs it; in a tree, every
named block in one node, the nodes' children and leaves counted).  And the
rules one at a time, on programs small enough to follow by hand (their
numbers are worked out in the comments)."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serq.ir import model as M
from serq.sim import RunError, simulate
from serq.sim.pools.prefix import Blk, FreeRun
from serq.sim.pools.runs import RunPool

from builder import A, Builder, cond, exp, floor, fmax, fmin, query, sample, sessions

S = M.SLOT


def shared_invariant(sim):
    for p in sim.pools:
        if isinstance(p, RunPool):
            _runs_invariant(p)
        elif p.shared:
            _blocks_invariant(p)
            if p.tree:
                tree_invariant(p)


def _blocks_invariant(p):
    """The per-block pool (serq/sim/pools/prefix.py)."""
    bs = p.bs
    held = {}
    for pa in p.allocs.values():
        assert pa.alloc == len(pa.blocks) * bs, (pa.alloc, len(pa.blocks))
        for b in pa.blocks:
            held[id(b)] = (b, held.get(id(b), (b, 0))[1] + 1)
    for b, n in held.values():
        assert b.ref == n, (b.ref, n)
    assert p.used == bs * len(held), (p.used, len(held))
    queued = [b for b in p.free_q if type(b) is Blk and b.name is not None]
    for b in queued:
        assert b.ref == 0 and id(b) not in held
    assert p.cached == bs * len(queued)
    if p.fifo:
        # every free block is in the queue, named or not (vLLM 0.19.0's)
        free = sum(b.n if type(b) is FreeRun else 1 for b in p.free_q if not (type(b) is Blk and b.name))
        assert all(type(b) is FreeRun or b.ref == 0 for b in p.free_q)
        assert p.used + p.cached + bs * free == bs * int(p.cap // bs), (p.used, p.cached, free, p.cap)
    else:
        assert len(queued) == len(p.free_q)
    named = 0
    for name, cur in p.index.items():
        blocks = cur if type(cur) is list else [cur]
        assert blocks and all(type(b) is Blk and b.name == name for b in blocks)
        assert len({id(b) for b in blocks}) == len(blocks)
        named += len(blocks)
    named_live = sum(1 for b, _ in held.values() if b.name is not None) + len(queued)
    assert named == named_live, (named, named_live)
    assert p.used + p.cached <= p.cap + 1e-9, (p.used, p.cached, p.cap)


def _runs_invariant(p):
    """The pool kept as runs (serq/sim/pools/runs.py): each hold's named
    blocks are runs covering its chain from 0 in order, its other blocks a
    count; a run's reference count is its holders; the free queue is the
    runs no hold uses (and, with vLLM 0.19.0's queue, the free blocks
    without a name); the index is every named run, each under its slot in
    naming order."""
    bs = p.bs
    held = {}
    loose = 0
    for pa in p.allocs.values():
        nb = pa.alloc / bs
        assert nb == int(nb), (pa.alloc, bs)
        j = 0
        for r in pa.blocks:
            assert r.g is not None and r.j == j and r.n > 0 and pa in r.holders, (r.j, j, r.n)
            held[id(r)] = r
            j += r.n
        assert j == pa.nnamed <= nb, (j, pa.nnamed, nb)
        loose += int(nb) - pa.nnamed
    for r in held.values():
        assert r.ref == len(r.holders) and all(r in x.blocks for x in r.holders), (r.ref, len(r.holders))
    assert p.used == bs * (loose + sum(r.n for r in held.values())), (p.used, loose)
    queued, free = {}, 0
    q = p.q
    r = q.next
    while r is not q:
        assert r.next.prev is r and r.ref == 0 and not r.holders and r.n > 0 and id(r) not in held
        if r.g is None:
            free += r.n
        else:
            queued[id(r)] = r
        r = r.next
    assert p.cached == bs * sum(r.n for r in queued.values()), (p.cached, len(queued))
    if p.fifo:
        # every free block is in the queue, named or not (vLLM 0.19.0's)
        assert p.used + p.cached + bs * free == bs * int(p.cap // bs), (p.used, p.cached, free, p.cap)
    else:
        assert free == 0
    named = 0
    for g, lst in p.index.items():
        assert lst and all(r.g == g and (id(r) in held or id(r) in queued) for r in lst)
        assert all(a.seq <= b.seq for a, b in zip(lst, lst[1:]))
        named += len(lst)
    assert named == len(held) + len(queued), (named, len(held), len(queued))
    assert p.used + p.cached <= p.cap + 1e-9, (p.used, p.cached, p.cap)


def tree_invariant(p):
    """A radix tree (`cache shared tree;`): every named block lies in one
    node and every node's blocks are named; a node's children are counted,
    the leaves are the nodes without any; a node in use is in use from its
    first block (a hold uses a chain's prefix)."""
    nodes = {id(n): n for n in p.node_of.values()}
    assert set(map(id, p.node_of)) == {id(b) for cur in p.index.values() for b in (cur if type(cur) is list else [cur])}
    kids = {}
    for n in nodes.values():
        assert n.blocks and all(p.node_of[b] is n and b.name is not None for b in n.blocks)
        assert n.parent is p.root or id(n.parent) in nodes
        kids[id(n.parent)] = kids.get(id(n.parent), 0) + 1
        assert any(b.ref for b in n.blocks) == (n.blocks[0].ref > 0)
        assert n.parent is p.root or n.blocks[0].ref == 0 or n.parent.blocks[0].ref > 0
    for n in nodes.values():
        assert n.kids == kids.get(id(n), 0)
    assert {id(n) for n in p.leaves} == {i for i, n in nodes.items() if n.kids == 0}


@st.composite
def programs(draw):
    """A vLLM-like engine over a content-addressed KV pool: conversations
    whose turns grow a context that starts with one of a few shared prompts,
    prefix lookups, chunked growth, preemption, leases and drops."""
    b = Builder()
    bs = draw(st.sampled_from([1, 2, 4, 16]))
    cap = draw(st.integers(6, 60)) * bs
    preempt = draw(st.sampled_from(["none", "lifo", "tail"]))
    preempt = (M.PreemptNone() if preempt == "none" else
               M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), preempt == "tail"))
    kv = b.pool("kv", cap=cap, block=bs, preempt=preempt, shared=True)
    reqs = b.pool("reqs", cap=draw(st.integers(1, 6)))
    e = b.step("e", draw(st.integers(1, 64)), 1, chunk=draw(st.integers(0, 16)),
               memory=kv if draw(st.booleans()) else None)
    if draw(st.booleans()):
        b.set_admit_via(reqs, e)
    tool = b.stage("tool", M.KDelay())
    n, o, known, K, tenant = b.attr("n"), b.attr("o"), b.attr("known"), b.attr("K"), b.attr("tenant")
    computed = A(S["computed"])
    prompt = A(K) + A(n)
    known_e = cond(computed < prompt, prompt, computed + 1)
    hit = fmin(query("CachedIn", kv), floor((known_e - 1) / bs) * bs)
    units = fmin(known_e, hit + query("BudgetLeft", e)) if draw(st.booleans()) else known_e
    res = draw(st.booleans())
    hp = [(reqs, 1), (kv, units, known_e)] if res else [(reqs, 1), (kv, units)]
    body = [
        b.set(known, known_e),
        b.run(e, fmax(0, A(known) - A(S["cached"])), mode="Prefill", growing=kv),
        b.run(e, fmax(0, A(o) - 1 - (A(known) - prompt)), mode="Decode", growing=kv),
    ]
    if draw(st.booleans()):
        body.append(b.grow(kv, bs))
    cache = draw(st.sampled_from(["all", "prompt", "none"]))
    cache = None if cache == "none" else prompt + A(o) - 1 if cache == "all" else prompt
    hold = b.hold(hp, body, cache=cache, reuse=hit if cache is not None and draw(st.booleans()) else None)
    tail = [b.set(K, prompt + A(o), side="client"), b.run(tool, exp(2.0), side="client")]
    if draw(st.booleans()):
        tail.append(b.drop(kv, side="client"))
    turns = draw(st.integers(1, 3))
    b.init([b.set(tenant, floor(sample("Uniform", 0, draw(st.integers(1, 3))))), b.set(K, 0)])
    b.turn_items([b.set(n, floor(sample("Uniform", 1, cap * 0.4))), b.set(o, floor(sample("Uniform", 1, 8)))])
    shared_len = draw(st.integers(0, 40))
    b.session([b.content(A(tenant), shared_len),
               b.loop([b.turn(), hold] + tail +
                      [b.branch(A(S["turn_no"]) >= turns, [b.end()], side="client")], side="client")])
    arrival = draw(st.sampled_from(["poisson", "batch"]))
    arrival = M.APoisson(draw(st.sampled_from([0.3, 1.0, 3.0]))) if arrival == "poisson" else \
        M.ABatch(draw(st.integers(1, 8)))
    return b.program(arrival=arrival, horizon=draw(st.sampled_from([20.0, 40.0])),
                     seed=draw(st.integers(0, 2 ** 31)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_shared_pools_keep_their_invariant(prog):
    import dataclasses
    for p in (prog, dataclasses.replace(prog, pools=tuple(dataclasses.replace(x, free_fifo=x.shared)
                                                             for x in prog.pools)),
              dataclasses.replace(prog, pools=tuple(dataclasses.replace(x, tree=x.shared) for x in prog.pools))):
        try:
            simulate(p, check_hook=shared_invariant)
        except RunError as e:
            # a hold that fits, grows past its pool and preempts itself at one
            # instant is the program's error, caught as such
            assert e.code in ("R005",), e.render()


def _kv(p):
    try:
        return simulate(p).data()["pools"][0]
    except RunError:
        return None


def _first_turn_hit(p):
    """Some session's first admission took blocks from the cache: blocks
    another session computed (its own chain is empty then)."""
    import dataclasses
    blocks = list(p.blocks)
    k = len(p.observes)
    for blk in p.blocks:
        for s in blk.stmts:
            if type(s) is M.SHold:
                body = blocks[s.body]
                blocks[s.body] = M.Block((M.SObserve(k, M.EAttr(S["cached"])),) + body.stmts,
                                         (None,) + body.locs, ("server",) + body.sides)
    prog = dataclasses.replace(p, blocks=tuple(blocks), observes=p.observes + ("hit",))
    try:
        r = simulate(prog)
    except RunError:
        return False
    first = {}
    for _, sess, turn, v in r.samples("hit"):
        if turn == 1:
            first.setdefault(sess, v)
    return any(v > 0 for v in first.values())


def test_random_shared_programs_share_evict_and_preempt():
    """The generator's programs hit blocks other sessions computed, evict and
    preempt, so the invariant test exercises all three."""
    from hypothesis import find
    opts = settings(deadline=None, database=None, max_examples=300, suppress_health_check=list(HealthCheck))
    find(programs(), lambda p: (_kv(p) or {}).get("preemptions", 0) > 0, settings=opts)
    find(programs(), lambda p: (_kv(p) or {}).get("evicted", 0) > 0, settings=opts)
    find(programs(), _first_turn_hit, settings=opts)


# -- the rules, by hand ----------------------------------------------------------
# examples/replay/mooncake.sq on the step clock (the Mooncake oracle's program),
# with rows whose hash ids name 8 tokens each, blocks of 4 tokens, 40 blocks.

def _run(rows, fifo=False, **engine):
    import dataclasses
    from serq.cli import mooncake_program
    from serq.oracle import mooncake as MC
    eng = {"budget": 100, "max_seqs": 4, "block_size": 4, "num_blocks": 40, "chunk": 0}
    eng.update(engine)
    s = MC.check({"engine": eng, "step_ms": 1, "hash_block": 8,
                  "rows": [dict(timestamp=t, input_length=n, output_length=o, hash_ids=ids)
                           for t, n, o, ids in rows]}, "test")
    p = mooncake_program(s)
    if fifo:
        p = dataclasses.replace(p, pools=tuple(dataclasses.replace(x, free_fifo=x.shared) for x in p.pools))
    rep = simulate(p, step_log=True, check_hook=shared_invariant)
    return MC.outcome(rep, s), rep


def test_a_request_admitted_later_in_a_step_hits_the_blocks_the_step_computes():
    # r0 and r1 have one prompt of 40 tokens.  Step 0 schedules r0's 40 tokens
    # and names its 10 full blocks; r1, admitted after it in the same step,
    # finds all 10 and takes 36 (never its last token: floor(39 / 4) * 4).
    out, rep = _run([(0, 40, 2, [1, 2, 3, 4, 5]), (0, 40, 2, [1, 2, 3, 4, 5])])
    assert [r["cached"] for r in out["requests"]] == [0, 36]
    assert [r["first"] for r in out["requests"]] == [1, 1]
    # shared blocks count once: r0 holds 11 blocks (40 tokens and the slot of
    # its first decode), r1 the 9 it shares and 1 of its own: 11 used of 40
    step0 = rep.step_log[0]
    assert step0["tokens"] == {0: 40.0, 1: 4.0} and step0["free"] == (40 - 11) * 4


def test_a_lookup_stops_at_the_first_block_that_differs():
    # r1 shares r0's first 16 tokens (hash ids 1, 2), then differs: 4 blocks
    out, _ = _run([(0, 40, 2, [1, 2, 3, 4, 5]), (5, 30, 3, [1, 2, 9, 10])])
    assert [r["cached"] for r in out["requests"]] == [0, 16]


def test_the_tail_of_a_freed_prompt_is_evicted_first():
    # r0 (40 tokens, 1 output: 10 blocks named, all freed at step 1, its
    # last block first into the free queue) then r1, 120 tokens of its own
    # (30 blocks) in a pool of 36: 30 - (36 - 10) = 4 blocks must be evicted,
    # r0's last four (its tail); r2 repeats r0's prompt and finds 6 blocks.
    out, _ = _run([(0, 40, 1, [1, 2, 3, 4, 5]), (3, 120, 1, list(range(20, 35))),
                   (6, 40, 1, [1, 2, 3, 4, 5])], num_blocks=36)
    assert [r["cached"] for r in out["requests"]] == [0, 0, 24]


def test_vllm_0_19s_free_queue_evicts_a_cached_block_before_a_free_one_freed_after_it():
    # 12 blocks of 4.  r0 (16 tokens: 4 named blocks) ends at step 1; r1 (6
    # tokens: one named block and one partial) ends at step 3, its partial
    # block freed after r0's.  r2 needs 7 blocks.  vLLM 0.33.0 reuses a
    # block without a name first: the 7 free ones, nothing evicted, so r3
    # (r0's 16 tokens and 8 more) finds r0's 4 blocks.  vLLM 0.19.0's free
    # queue is in the order freed (`cache shared fifo;`): r2 takes the 6
    # never used, then r0's last block, evicted, before r1's partial one; r3
    # finds 3.
    rows = [(0, 16, 1, [1, 2]), (2, 6, 1, [5]), (4, 28, 1, [20, 21, 22, 23]), (6, 24, 1, [1, 2, 9])]
    out, _ = _run(rows, num_blocks=12)
    assert [r["cached"] for r in out["requests"]] == [0, 0, 0, 16]
    out, _ = _run(rows, fifo=True, num_blocks=12)
    assert [r["cached"] for r in out["requests"]] == [0, 0, 0, 12]


def test_per_session_entries_do_not_share_what_a_shared_pool_does():
    # the same two requests with the pool's cache per session: r1 finds nothing
    import dataclasses
    from serq.cli import mooncake_program
    from serq.oracle import mooncake as MC
    s = MC.check({"engine": {"budget": 100, "max_seqs": 4, "block_size": 4, "num_blocks": 40, "chunk": 0},
                  "step_ms": 1, "hash_block": 8,
                  "rows": [dict(timestamp=t, input_length=40, output_length=2, hash_ids=[1, 2, 3, 4, 5])
                           for t in (0, 4)]}, "test")
    p = mooncake_program(s)
    per = dataclasses.replace(p, pools=tuple(dataclasses.replace(x, shared=False) for x in p.pools))
    assert [r["cached"] for r in MC.outcome(simulate(p), s)["requests"]] == [0, 36]
    assert [r["cached"] for r in MC.outcome(simulate(per), s)["requests"]] == [0, 0]


def test_content_statement_faults_name_the_statement():
    b = Builder()
    tool = b.stage("tool", M.KDelay())
    b.session([b.turn(), b.content(A(S["serial"]) - 1, 4), b.run(tool, 1, side="client")])
    prog = b.program(arrival=sessions({}), horizon=5)
    with pytest.raises(RunError) as e:
        simulate(prog)
    assert e.value.code == "R021"
    assert "`content`: the id is -1: a whole number from 0 to 2^53" in e.value.render()


ROW = '{"timestamp": %d, "input_length": 20, "output_length": 2, "hash_ids": [%d]}\n'
HELP = ('  = help: a Mooncake row is {"timestamp", "input_length", "output_length", "hash_ids"}: whole numbers, '
        'the hash ids 64-bit (from 0 to 2^64 - 1), one per 512 tokens')


def test_a_malformed_mooncake_trace_is_a_located_error(tmp_path):
    from serq.link import compile_file
    bad = tmp_path / "t.jsonl"
    bad.write_text(ROW % (0, 1) + ROW % (1, 2) + '{"timestamp": 5, "input_length": 3}\n', encoding="utf-8")
    p = compile_file("examples/replay/mooncake.sq", horizon=10.0, trace=str(bad))
    with pytest.raises(RunError) as e:
        simulate(p)
    assert e.value.render() == (
        f"{bad}:3:1: error[R014]: a row has the fields timestamp, input_length, output_length, hash_ids: it lacks "
        "`output_length`, `hash_ids`\n"
        "  |\n"
        '3 | {"timestamp": 5, "input_length": 3}\n'
        "  | ^\n" + HELP)
    short = tmp_path / "s.jsonl"
    short.write_text('{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [1]}\n')
    with pytest.raises(RunError) as e:
        simulate(compile_file("examples/replay/mooncake.sq", horizon=10.0, trace=str(short)))
    assert e.value.render().split("\n")[0] == (
        f"{short}:1:59: error[R014]: 600 input tokens need 2 hash ids (one per block of 512 tokens), not 1")


def test_a_mooncake_trace_arrives_at_its_timestamps():
    # the first rows of its trace (serq mooncake-trace's), on mooncake.sq's
    # clock: row i arrives at 0.001 × timestamp_i s (the scale times the
    # timestamp, in milliseconds)
    from serq.ir.trace import read_mooncake
    from serq.link import compile_file
    p = compile_file("examples/replay/mooncake.sq", horizon=1000.0, arrivals=40)
    assert p.trace == os.path.join("examples", "replay", "data", "mooncake_generated.jsonl")
    rows = read_mooncake(p.trace, 0, 40)
    r = simulate(p)
    sent = sorted((s, t) for t, s, _, _ in r.samples("sent"))
    assert sent == [(i, 0.001 * row.timestamp) for i, row in enumerate(rows)]
    # everyone shares the trace's first two blocks (hash ids 0 and 1, the
    # system prompt's 1 024 tokens): every request after the first finds them
    # (64 blocks of 16), and one that continues a conversation more
    cached = dict((s, v) for _, s, _, v in r.samples("cached_tokens"))
    assert all(row.hash_ids[:2] == (0, 1) for row in rows)
    assert cached[0] == 0 and all(cached[i] >= 1024 for i in range(1, 40))
    assert any(cached[i] > 1024 for i in range(1, 40))


def _mooncake(tmp_path, name, ids):
    """A Mooncake trace of one row a second, row i's prompt the blocks ``ids[i]``."""
    path = tmp_path / name
    path.write_text("".join(json.dumps({"timestamp": 1000 * i, "input_length": 512 * len(h) - 100,
                                        "output_length": 4, "hash_ids": h}) + "\n" for i, h in enumerate(ids)))
    return str(path)


def _cached(path):
    from serq.link import compile_file
    r = simulate(compile_file("examples/replay/mooncake.sq", horizon=60.0, trace=path))
    return [v for _, _, _, v in sorted(r.samples("cached_tokens"), key=lambda x: x[1])], r


def test_64_bit_hash_ids_are_kept_exact(tmp_path):
    """Real traces hash with 64 bits.  Ids from 2^53 up were floats, so that
    2^60 and 2^60 + 1 named one block (a false hit, exit 0), and 2^63 up a
    struct.error; now a row's ids are whole numbers end to end, and a trace
    runs as the same trace with its ids renamed small."""
    big = [[2 ** 60, 2 ** 60 + 1], [2 ** 60 + 1, 2 ** 60], [2 ** 60, 2 ** 60 + 1, 7],    # share, not, share
           [2 ** 64 - 1, 2 ** 63], [2 ** 64 - 1, 2 ** 63 + 1], [2 ** 53, 2 ** 53 + 1], [2 ** 53 + 1]]
    names = {}
    small = [[names.setdefault(h, len(names)) for h in row] for row in big]
    got, r = _cached(_mooncake(tmp_path, "big.jsonl", big))
    want, r2 = _cached(_mooncake(tmp_path, "small.jsonl", small))
    # the prefix each request finds: none, none (2^60 + 1 first is another prompt), the 924 tokens of
    # row 0 in whole blocks of 16, none, 2^64 - 1's block (then 2^63 + 1 is not 2^63), none, none
    assert got == want == [0, 0, 912, 0, 512, 0, 0]
    assert r.data()["pools"] == r2.data()["pools"]


def test_a_hash_id_beyond_64_bits_is_refused_where_it_is(tmp_path):
    path = _mooncake(tmp_path, "t.jsonl", [[1], [2 ** 64]])
    from serq.diag import SerqError
    with pytest.raises(SerqError) as e:
        _cached(path)
    assert e.value.render().split("\n")[0] == (
        f"{path}:2:62: error[R014]: `hash_ids[0]` is 18446744073709551616: a hash id is a whole number from 0 "
        "to 2^64 - 1")


@pytest.mark.parametrize("pool, stmt, message", [
    ("pool kv { cap 64; block 4; cache shared; evict by (age); }", "",
     "error[E291]: pool `kv` is content-addressed (`cache shared;`): it evicts the least recently freed block "
     "first (`evict lru;`) and does not spill"),
    ("pool kv { cap 64; cache shared; }", "",
     "error[E290]: pool `kv` is content-addressed (`cache shared;`): it needs a block of a whole number of "
     "tokens"),
    ("pool kv { cap 64; block 4; cache shared; }", "content (1.5, 4);",
     "error[E292]: `content`: the id is 1.5: a whole number ≥ 0"),
])
def test_what_a_content_addressed_program_may_not_say(tmp_path, pool, stmt, message):
    from serq.diag import SerqError
    from serq.link import compile_file
    src = tmp_path / "p.sq"
    src.write_text("fn main() {\n  " + pool + "\n  stage s : delay;\n"
                   "  workload { arrive poisson(1); session { " + stmt + " turn; } }\n"
                   "  server { hold kv (cost(kv, 4)) { run s (cost(s, 1)); } cache (cost(kv, 4)); }\n}\n")
    with pytest.raises(SerqError) as e:
        compile_file(str(src), horizon=10.0)
    assert message in e.value.render()


def test_a_trace_changed_in_place_while_the_run_reads_it_is_a_run_error(tmp_path):
    """A Mooncake trace is read as the run reaches its rows; one written to in
    place meanwhile (`>`, `>>`, an editor's save) gave the run the rows of two
    files, or a not-JSON error at a line the change cut in two (emptied at
    10 s: `t.jsonl:38:2: not JSON`, a line the file no longer has).  The run
    says the trace was written to (R014); a trace replaced whole by a rename (serq mooncake-trace --out)
    leaves the run the file it opened, and its report is that file's."""
    import shutil
    from serq.link import compile_file
    src = "examples/replay/data/mooncake_generated.jsonl"
    path = tmp_path / "t.jsonl"
    shutil.copy(src, path)
    p = compile_file("examples/replay/mooncake.sq", horizon=300.0, trace=str(path))
    whole = simulate(p).data()
    done = []

    def change(how):
        def hook(sim):
            if not done and sim.now > 10:
                done.append(how)
                how()
        return hook
    for how in (lambda: path.write_text(""),
                lambda: path.write_text(ROW % (0, 1) * 3),
                lambda: open(path, "a").write(ROW % (10 ** 9, 1))):
        shutil.copy(src, path)
        done.clear()
        with pytest.raises(RunError) as e:
            simulate(p, check_hook=change(how))
        assert done and e.value.render() == (
            f"$.trace: error[R014]: the trace {path} was written to while the run read it (its size or its time of "
            "change is not what it was as the run began): the rows the run read may not be one file's\n"
            "  = help: run it again on a trace nothing writes to as it runs (a writer that replaces the file whole, "
            "as serq mooncake-trace --out does, leaves a run the file it opened)")
    shutil.copy(src, path)
    done.clear()

    def replace():
        (tmp_path / "new.jsonl").write_text(ROW % (0, 1) * 3)
        os.replace(tmp_path / "new.jsonl", path)
    got = simulate(p, check_hook=change(replace)).data()
    assert done and got["run"] == whole["run"] and got["client"] == whole["client"]
