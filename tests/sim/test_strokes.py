"""Strokes (serq.sim.stroke) change how fast, never what: every report, sample
and dump with strokes is the step-by-step path's, byte for byte."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from serq.link import compile_file, compile_source
from serq.sim import simulate
from serq.sim.machine import Sim
from tools.examples import programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def both(p):
    a = simulate(p, strokes=False)
    b = simulate(p, strokes=True)
    return a, b


def same(a, b):
    assert a.json() == b.json()
    assert a.text() == b.text()
    for name in a.program.observes:
        assert a.samples(name) == b.samples(name), name


def stroked(p) -> int:
    sim = Sim(p)
    sim.run()
    return sum(s.stroke_iters for s in sim.step_stages)


@pytest.mark.parametrize("example", [e for e in programs() if "papers" not in e])
@pytest.mark.parametrize("seed", [1, 7])
def test_every_example_runs_the_same_with_and_without_strokes(example, seed):
    p = compile_file(os.path.join(ROOT, example), horizon=60.0, warmup=6.0, seed=seed)
    same(*both(p))


def test_the_benchmark_program_takes_strokes_and_agrees():
    p = compile_file(os.path.join(ROOT, "bench", "vllm_overview.sq"), horizon=300.0, warmup=30.0)
    same(*both(p))
    assert stroked(p) > 0.9 * sum(s["iterations"] for s in simulate(p).data()["stages"])


VLLM = """use "std/args";
use "{lib}";
fn main() {{
  device gpu {{ kv cap {blocks} * {bs}; }}
  engine vllm on gpu {{
    reqs cap {seqs};
    tokens cap {budget};
    schedule {{
      advance running;
      admit waiting while (running.preempted == 0)
        taking reqs (1), kv (min(known, reused + budget_left(vllm))) reserve (known) reuse (reused);
    }}
    execute ({c0} + max(0.0002 + {beta} * batch.kv_decode, 0.00002 * batch.tokens));
    request (prompt, output) {{
      set kept = prompt;
      at admission {{
        known = max(kept, computed + 1);
        reused = min(cachedin(kv), reusable(known, blocksize(kv)));
      }}
      set kept = known;
      set c = cached;
      prefill (known - c) growing kv;
      decode (output - 1 - (known - prompt)) growing kv;
      cache (prompt + output - 1);
    }}
  }}
  pool kv on gpu {{ block {bs}; evict lru; preempt lifo; }}
  pool reqs on vllm {{ queue fifo; }}
  workload {{
    arrive poisson({lam});
    hidden o;
    init {{ set K = 0; }}
    turn {{ set n = ceil(~exp({n})); set o = ceil(~exp({o})); set more = ~bernoulli(0.7); }}
    session {{ turn; while (more) {{ set K = K + n + o; tool (~exp(0.5)); turn; }} }}
  }}
  server {{ vllm (K + n, o); }}
}}
"""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.sampled_from([40, 80, 200, 2000]), bs=st.sampled_from([1, 4, 16]),
       seqs=st.sampled_from([1, 2, 8]), budget=st.sampled_from([8, 64, 512]),
       lam=st.sampled_from([0.5, 2.0, 8.0]), n=st.sampled_from([8, 60]), o=st.sampled_from([4, 40]),
       c0=st.sampled_from([0, 0.001]), beta=st.sampled_from([0, 0.000001]), seed=st.integers(0, 50))
def test_random_engines_agree_step_by_step(blocks, bs, seqs, budget, lam, n, o, c0, beta, seed):
    """Engines tight and roomy, with growth, eviction and preemption at the edges of strokes."""
    if budget < seqs:
        return
    src = VLLM.format(lib=os.path.join(ROOT, "examples", "lib", "vllm.sq"), blocks=blocks, bs=bs, seqs=seqs,
                      budget=budget, lam=lam, n=n, o=o, c0=c0, beta=beta)
    p = compile_source(src, "r.sq", horizon=20.0, warmup=2.0, seed=seed)
    same(*both(p))


# the same engine with its head's amounts, its budget, its queue and its
# preemption left to each example
ADMIT = VLLM.replace("tokens cap {budget};", "tokens cap @BUDGET@;") \
    .replace("kv (min(known, reused + budget_left(vllm))) reserve (known)", "kv (@UNITS@) reserve (known)") \
    .replace("preempt lifo;", "preempt @PREEMPT@;").replace("{{ queue fifo; }}", "{{ @QUEUE@ }}")
assert ADMIT.count("@") == 8

# what a waiting head's amounts read (serq.sim.stroke.head_reads): attributes
# and numbers alone; its own cached prefix and the budget left; the pool's
# free room; the holders and queue; the clock (no stroke past it)
HEAD_UNITS = ["known", "min(known, reused + budget_left(vllm))", "min(known, free(kv) + 16)",
              "known + holders(reqs) + queued(reqs)", "min(known, reused + budget_left(vllm)) + 0 * now",
              "min(known, reused + 8)"]
# the budget: the same at every iteration of a stroke, read again at its growths, or by the residents
HEAD_BUDGETS = ["{budget}", "min({budget}, 8 + free(kv))", "{budget} - running.count"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=st.sampled_from(HEAD_UNITS), budget_form=st.sampled_from(HEAD_BUDGETS),
       queue=st.sampled_from(["queue fifo;", "queue by (n);"]),
       preempt=st.sampled_from(["lifo", "by (-admission) requeue tail", "none"]),
       blocks=st.sampled_from([30, 60, 200]), bs=st.sampled_from([1, 4, 16]), seqs=st.sampled_from([2, 4, 16]),
       budget=st.sampled_from([16, 64, 512]), lam=st.sampled_from([2.0, 8.0, 20.0]),
       n=st.sampled_from([8, 40]), o=st.sampled_from([8, 40]), c0=st.sampled_from([0, 0.001]),
       seed=st.integers(0, 50))
def test_random_engines_with_waiting_heads_agree_step_by_step(units, budget_form, queue, preempt, blocks, bs, seqs,
                                                              budget, lam, n, o, c0, seed):
    """Engines whose queue waits most of the time (tight memory, many
    arrivals): strokes past heads that cannot be admitted, ended where a
    growth, an eviction or a budget could let one in."""
    if budget < seqs:
        return
    src = ADMIT.replace("@UNITS@", units).replace("@BUDGET@", budget_form).replace("@QUEUE@", queue) \
        .replace("@PREEMPT@", preempt)
    src = src.format(lib=os.path.join(ROOT, "examples", "lib", "vllm.sq"), blocks=blocks, bs=bs, seqs=seqs,
                     budget=budget, lam=lam, n=n, o=o, c0=c0, beta=0.000001)
    p = compile_source(src, "h.sq", horizon=15.0, warmup=1.5, seed=seed)
    same(*both(p))


def test_strokes_run_past_a_head_that_cannot_be_admitted():
    """The replay of the benchmark's trace (b): its queue waits in most
    iterations, and most iterations are strokes all the same."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from serq.oracle import replay
    from traces import trace
    t = trace()
    t = dict(t, sessions=t["sessions"][:60])
    p = replay.with_sessions(compile_file(os.path.join(ROOT, replay.PROGRAM), sets=replay.inputs(t),
                                          horizon=replay.horizon(t)), t)
    same(*both(p))
    sim = Sim(p)
    sim.run()
    s = sim.step_stages[0]
    assert s.stroke_past_head > 0.4 * s.iters_all and s.stroke_iters > 0.5 * s.iters_all, \
        (s.stroke_past_head, s.stroke_iters, s.iters_all)


NO_MEMORY = """fn main() {{
  device gpu {{ }}
  engine e on gpu {{
    reqs cap {seqs};
    tokens cap {budget};
    schedule {{ advance running; admit waiting while (running.preempted == 0); }}
    execute (1 + 0.01 * batch.tokens);
  }}
  pool reqs on e {{ queue fifo; }}
  pool kv {{ cap {cap}; block {bs}; preempt {preempt}; }}
  workload {{
    arrive poisson({lam});
    turn {{ set p = ceil(~exp(10)); set o = ceil(~exp({o})); }}
  }}
  server {{
    hold reqs (cost(reqs, 1)), kv (cost(kv, p)) {{
      run e prefill (cost(e, p)) growing kv;
      observe first = now;
      run e decode (cost(e, o)) growing kv;
    }}
  }}
}}
"""


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seqs=st.sampled_from([1, 3, 8]), budget=st.sampled_from([8, 64]), cap=st.sampled_from([30, 120, 1000]),
       bs=st.sampled_from([1, 8]), preempt=st.sampled_from(["none", "lifo"]), lam=st.sampled_from([0.05, 0.3]),
       o=st.sampled_from([5, 40]), seed=st.integers(0, 50))
def test_an_engine_whose_runs_grow_a_pool_that_is_not_its_memory(seqs, budget, cap, bs, preempt, lam, o, seed):
    """The growth of a pool that is no engine's memory is the stroke's too (found
    by the regression corpus: such a pool's time averages)."""
    src = NO_MEMORY.format(seqs=seqs, budget=budget, cap=cap, bs=bs, preempt=preempt, lam=lam, o=o)
    p = compile_source(src, "m.sq", horizon=300.0, warmup=30.0, seed=seed)
    same(*both(p))


def test_a_run_stopped_by_max_events_stops_at_the_same_event():
    from serq.sim import RunStopped
    p = compile_file(os.path.join(ROOT, "bench", "vllm_overview.sq"), horizon=300.0, warmup=30.0)
    out = []
    for strokes in (False, True):
        with pytest.raises(RunStopped) as e:
            simulate(p, strokes=strokes, max_events=54_321)
        out.append(e.value.report.text())
    assert e.value.report.partial
    assert out[0] == out[1]


# repeat_add and _run_in_binade: k additions of one amount, to the bit

_floats = st.floats(min_value=0.0, max_value=1e12, allow_nan=False, allow_infinity=False)
_amounts = st.one_of(st.floats(min_value=1e-300, max_value=1e6, allow_nan=False, allow_infinity=False),
                     st.integers(-60, 10).map(lambda e: 2.0 ** e),
                     st.integers(-60, 0).map(lambda e: 1.5 * 2.0 ** e))


@settings(max_examples=400, deadline=None)
@given(_floats, _amounts, st.integers(0, 3000))
def test_repeat_add_is_the_loop(a, c, k):
    from serq.sim.stroke import repeat_add
    x = a
    for _ in range(k):
        x += c
    assert repeat_add(a, c, k) == x


@settings(max_examples=400, deadline=None)
@given(st.floats(min_value=1e-3, max_value=1e9), _amounts, st.integers(0, 3000), st.floats(0.0, 5000.0))
def test_a_run_in_a_binade_is_the_loop(t, c, kmax, span):
    from serq.sim.stroke import _run_in_binade
    lim = t + c * span
    k, dt, t_k = _run_in_binade(t, c, kmax, lim)
    assert 0 <= k <= kmax
    x = t
    for _ in range(k):
        nxt = x + c
        assert x < nxt < lim
        assert nxt - x == dt
        x = nxt
    assert x == t_k


# the same engine on a content-addressed pool: sessions that share one of a
# few system prompts (the content before their own tokens), memory tight
# enough that the residents' growth evicts named blocks in strokes, and a
# content longer than some prompts (blocks a decode names that another
# session may share: no stroke while such a resident decodes)
SHARED = ADMIT.replace("{{ block {bs}; evict lru; preempt @PREEMPT@; }}",
                       "{{ block {bs}; evict lru; preempt @PREEMPT@; @CACHE@ }}") \
    .replace("init {{ set K = 0; }}", "init {{ set K = 0; set tenant = floor(~uniform(0, @TENANTS@)); }}") \
    .replace("session {{ turn;", "session {{ content (tenant, @SYSTEM@); turn;")
assert SHARED.count("@") == 14


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=st.sampled_from(HEAD_UNITS), cache=st.sampled_from(["cache shared;", "cache shared fifo;"]),
       system=st.sampled_from([0, 24, 100, 100000]), tenants=st.sampled_from([1, 3]),
       preempt=st.sampled_from(["lifo", "none"]), blocks=st.sampled_from([30, 60, 400]),
       bs=st.sampled_from([1, 4, 16]), seqs=st.sampled_from([2, 4, 16]), budget=st.sampled_from([16, 64, 512]),
       lam=st.sampled_from([2.0, 8.0]), n=st.sampled_from([8, 40]), o=st.sampled_from([8, 40]),
       seed=st.integers(0, 50))
def test_random_engines_on_a_content_addressed_pool_agree_step_by_step(units, cache, system, tenants, preempt,
                                                                       blocks, bs, seqs, budget, lam, n, o, seed):
    """Strokes through a `cache shared;` pool's growth, its evictions and its
    naming, past heads whose admission looks their chain up there."""
    if budget < seqs:
        return
    src = SHARED.replace("@UNITS@", units).replace("@BUDGET@", "{budget}").replace("@QUEUE@", "queue fifo;") \
        .replace("@PREEMPT@", preempt).replace("@CACHE@", cache).replace("@TENANTS@", str(tenants)) \
        .replace("@SYSTEM@", str(system))
    src = src.format(lib=os.path.join(ROOT, "examples", "lib", "vllm.sq"), blocks=blocks, bs=bs, seqs=seqs,
                     budget=budget, lam=lam, n=n, o=o, c0=0.001, beta=0.000001)
    p = compile_source(src, "s.sq", horizon=15.0, warmup=1.5, seed=seed)
    same(*both(p))


def test_the_mooncake_replay_takes_strokes_and_agrees():
    """examples/replay/mooncake.sq on its generated trace: strokes through the
    content-addressed pool, the same bytes."""
    p = compile_file(os.path.join(ROOT, "examples", "replay", "mooncake.sq"), horizon=300.0, arrivals=120)
    same(*both(p))
    assert stroked(p) > 0


def test_a_large_busy_engine_leaves_strokes_that_miss_untried_and_agrees():
    """An engine of up to 256 residents under a steady stream of arrivals: a
    stroke misses at nearly every iteration (an arrival, or a resident's last
    token, comes first), so most attempts are left to the step-by-step path
    untried (serq.sim.stroke.advance) — and the run is the same, byte for
    byte, with strokes still taken where they can be."""
    src = VLLM.format(lib=os.path.join(ROOT, "examples", "lib", "vllm.sq"), blocks=40000, bs=16, seqs=256,
                      budget=8192, lam=100.0, n=200, o=400, c0=0, beta=0.000000002)
    p = compile_source(src, "busy.sq", horizon=8.0, warmup=1.0, seed=3)
    same(*both(p))
    sim = Sim(p)
    sim.run()
    s = sim.step_stages[0]
    assert max(len(r["tokens"]) for r in simulate(p, step_log=True).step_log) == 256
    assert s.stroke_untried > 0.2 * s.it and s.stroke_iters > 0.2 * s.it, (s.stroke_untried, s.stroke_iters, s.it)
