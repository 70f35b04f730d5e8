"""bench/where.py (``make bench PROFILE=1``): a run's profiled time summed by
the simulator's parts, each built-in's time given to the parts of its
callers, none lost or counted twice."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import where  # noqa: E402


def test_a_file_is_counted_in_its_part():
    assert where.part_of(os.path.join(ROOT, "serq", "sim", "stroke.py")).startswith("strokes")
    assert where.part_of(os.path.join(ROOT, "serq", "sim", "pools", "runs.py")).startswith("pools")
    assert where.part_of("<serq open_arrival>").startswith("generated code")
    assert where.part_of(os.path.join(ROOT, "serq", "link", "resolve.py")) == "serq/link/resolve.py"
    assert where.part_of("/usr/lib/python3.11/heapq.py") == "other (Python's library)"


def test_a_builtins_time_is_shared_among_its_callers_parts_by_their_calls():
    stroke = os.path.join(ROOT, "serq", "sim", "stroke.py")
    step = os.path.join(ROOT, "serq", "sim", "step.py")
    stats = {
        (stroke, 10, "advance"): (5, 5, 0.5, 1.0, {}),
        (step, 20, "attempt"): (5, 5, 0.25, 2.0, {}),
        ("~", 0, "<built-in method _heapq.heappush>"): (40, 40, 0.2, 0.2, {
            (stroke, 10, "advance"): (30, 30, 0.15, 0.15), (step, 20, "attempt"): (10, 10, 0.05, 0.05)}),
        ("~", 0, "<method 'disable' of '_lsprof.Profiler' objects>"): (1, 1, 0.05, 0.05, {}),
    }
    parts, top, total = where.summary(stats)
    got = dict(parts)
    assert got["strokes (identical iterations in one go)"] == pytest.approx(0.5 + 0.15)
    assert got["the engine's iteration (plan, serve, admit, end)"] == pytest.approx(0.25 + 0.05)
    assert got["other (Python's library)"] == pytest.approx(0.05)
    assert total == pytest.approx(1.0)           # every second counted once
    assert [n for _, _, n in top] == ["serq/sim/stroke.py:10(advance)", "serq/sim/step.py:20(attempt)",
                                      "<built-in method _heapq.heappush>",
                                      "<method 'disable' of '_lsprof.Profiler' objects>"]


def test_an_m_m_1_runs_mostly_in_its_generated_code_and_the_event_loop():
    from serq.link import compile_file
    from serq.sim import simulate
    prog = compile_file(os.path.join(ROOT, "examples", "single-turn", "mg1.sq"), horizon=2000.0, warmup=0.0,
                        seed=1)
    simulate(prog, samples=False)          # imports and codegen's caches outside the profile
    parts, _, total = where.profile(simulate, prog, samples=False)
    got = dict(parts)
    main = got["generated code (arrivals, completions, the sessions' segments)"] + got["the event loop"]
    assert main > 0.5 * total
    assert not any(p.startswith("strokes") for p in got)       # no engine: no stroke
