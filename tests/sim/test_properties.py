"""Properties over random small programs (Hypothesis): every pool keeps
``used + cached <= cap`` and non-negative allocations at every event, and the
same IR and seed give a byte-identical JSON report."""

import json
import os
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serq.ir import codec
from serq.ir import model as M
from serq.sim import RunError, simulate

from builder import A, Builder, cond, exp, fmax, fmin, query, sample

S = M.SLOT


def invariant(sim):
    for p in sim.pools:
        total = 0.0
        for pa in p.allocs.values():
            assert pa.alloc >= 0, (p.label, pa.alloc)
            total += pa.alloc
        assert abs(total - p.used) <= 1e-6 * max(1.0, p.used), (p.label, total, p.used)
        cached = sum(e.units for e in p.entries.values())
        assert abs(cached - p.cached) <= 1e-6 * max(1.0, cached), (p.label, cached, p.cached)
        for e in p.entries.values():
            assert e.units > 0, (p.label, e.units)
        assert p.used + p.cached <= p.cap + 1e-6, (p.label, p.used, p.cached, p.cap)
        assert p.used >= -1e-9
        assert p.nqueued == len(p.front) + len(p.rest)


@st.composite
def programs(draw):
    b = Builder()
    block = draw(st.sampled_from([None, 1.0, 4.0, 16.0]))
    bsz = block or 1.0
    cap = draw(st.integers(4, 60)) * bsz
    evict = draw(st.sampled_from(["lru", "size", "age"]))
    evict = (M.EvictLru() if evict == "lru" else
             M.EvictBy((M.EUnary("Neg", M.ECtx("Size")),)) if evict == "size" else
             M.EvictBy((M.ECtx("Age"), M.ECtx("Size"))))
    preempt = draw(st.sampled_from(["none", "lifo", "position", "tail"]))
    preempt = (M.PreemptNone() if preempt == "none" else
               M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), False) if preempt == "lifo" else
               M.PreemptBy((M.ECtx("Position"),), False) if preempt == "position" else
               M.PreemptBy((M.EUnary("Neg", M.ECtx("Admission")),), True))
    reserve_held = draw(st.booleans())
    kv = b.pool("kv", cap=cap, block=block, evict=evict, preempt=preempt, reserve_held=reserve_held)
    reqs = b.pool("reqs", cap=draw(st.integers(1, 6)))
    budget = draw(st.integers(1, 64))
    chunk = draw(st.integers(0, 16))
    engine_memory = draw(st.booleans())
    e = b.step("e", budget, 1, chunk=chunk, memory=kv if engine_memory else None)
    via = draw(st.booleans())
    if via:
        b.set_admit_via(reqs, e)
    tool = b.stage("tool", M.KDelay())
    n, o, known = b.attr("n"), b.attr("o"), b.attr("known")
    computed = A(S["computed"])
    known_e = cond(computed < A(n), A(n), computed + 1)
    use_reserve = draw(st.booleans())
    use_cache = draw(st.booleans())
    use_budget = draw(st.booleans()) and via
    units = fmin(known_e, query("BudgetLeft", e)) if use_budget else fmin(known_e, 1 + 0 * A(n))
    hp = [(reqs, 1), (kv, units, known_e)] if use_reserve else [(reqs, 1), (kv, units)]
    body = [
        b.set(known, known_e),
        b.run(e, fmax(0, A(known) - (A(S["cached"]) if use_cache else 0)), mode="Prefill", growing=kv),
        b.run(e, fmax(0, A(o) - 1 - (A(known) - A(n))), mode="Decode", growing=kv),
    ]
    if draw(st.booleans()):
        body.append(b.grow(kv, 1 + 0 * A(n)))
    hold = b.hold(hp, body, cache=(A(n) + A(o)) if use_cache else None,
                  reuse=A(n) if use_cache and draw(st.booleans()) else None)
    turns = draw(st.integers(1, 3))
    items = [b.turn(), hold, b.run(tool, exp(2.0), side="client")]
    b.turn_items([b.set(n, sample("Uniform", 1, cap * 0.5)), b.set(o, sample("Uniform", 1, 8))])
    b.session([b.loop(items + [b.branch(A(S["turn_no"]) >= turns, [b.end()], side="client")],
                      side="client")])
    arrival = draw(st.sampled_from(["poisson", "batch"]))
    arrival = M.APoisson(draw(st.sampled_from([0.2, 0.5, 1.0]))) if arrival == "poisson" else \
        M.ABatch(draw(st.integers(1, 8)))
    return b.program(arrival=arrival, horizon=draw(st.sampled_from([20.0, 40.0])),
                     seed=draw(st.integers(0, 2 ** 31)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_pools_keep_their_invariant(prog):
    try:
        simulate(prog, check_hook=invariant)
    except RunError as e:
        # a hold that fits, grows past its pool and preempts itself at one
        # instant is the program's error, caught as such
        assert e.code in ("R005",), e.render()


def test_random_programs_do_work():
    """The generator's programs mostly run: preemptions, evictions and
    completions happen (so the invariant test exercises them)."""
    from hypothesis import find
    for what in ("preemptions", "evicted", "completed"):
        def busy(p, what=what):
            try:
                d = simulate(p).data()
            except RunError:
                return False
            if what == "completed":
                return d["stages"][0]["completed"] > 20
            return sum(x[what] for x in d["pools"]) > 0
        find(programs(), busy, settings=settings(deadline=None, database=None, max_examples=200,
                                                 suppress_health_check=list(HealthCheck)))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_same_ir_and_seed_same_report(prog):
    try:
        a = json.dumps(simulate(prog).data(), sort_keys=True)
    except RunError:
        return
    b = json.dumps(simulate(prog).data(), sort_keys=True)
    assert a == b
    assert "NaN" not in a and "Infinity" not in a


def test_report_does_not_depend_on_hash_seed(tmp_path):
    """Two processes with different PYTHONHASHSEED give the same bytes."""
    from queueing import single
    prog = single(M.KFifo(1), exp(1.0), 0.8, 2000, 100, 7)
    path = tmp_path / "p.ir.json"
    path.write_text(codec.dumps(prog))
    code = ("import json,sys; from serq.ir import codec; from serq.sim import simulate; "
            "p=codec.loads(open(sys.argv[1]).read()); "
            "print(json.dumps(simulate(p).data(), sort_keys=True))")
    outs = []
    for hs in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hs)
        r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env,
                           cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
