"""Which run a sweep's processes take next (serq.sweeps.backends.Longest):
the first run of every point in the grid's order, then the runs of the
point whose runs took longest, so the runs left for the end are short."""

from __future__ import annotations

import heapq

from serq.sweeps.backends import Longest


def _schedule(seconds: list, seeds: int, processes: int):
    """The runs of points taking ``seconds[i]`` each, ``seeds`` per point, on
    ``processes`` processes each taking the next run when free: the order
    runs were taken in, as (point, seed), and when the last one ended."""
    tasks = [(i * seeds + j, f"ir{i}", j) for i in range(len(seconds)) for j in range(seeds)]
    order = Longest(tasks)
    free = [(0.0, p) for p in range(processes)]       # (when free, process)
    running = []                                       # (when it ends, process, task)
    taken = []
    end = 0.0
    while True:
        now, p = heapq.heappop(free)
        t = order.take()
        if t is None:
            break
        taken.append((t[0] // seeds, t[2]))
        ends = now + seconds[t[0] // seeds]
        end = max(end, ends)
        heapq.heappush(running, (ends, p, t))
        # the next process free: one idle now, else the next run to end
        if free and free[0][0] <= now:
            continue
        ends, q, done = heapq.heappop(running)
        order.ran(done, seconds[done[0] // seeds])
        heapq.heappush(free, (ends, q))
    return taken, end


def test_every_run_is_taken_once_the_first_of_each_point_first():
    taken, _ = _schedule([1.0, 2.0, 3.0, 4.0, 5.0], 3, 2)
    assert sorted(taken) == [(i, j) for i in range(5) for j in range(3)]
    assert taken[:5] == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)]


def test_the_longest_points_runs_go_first_the_short_ones_last():
    # two processes; points of 1, 1, 3 and 3 seconds, three seeds each
    # (at 4 s point 2's first run has ended and point 3's has not been
    # counted: point 3 is taken first, as the longer for all that is known)
    taken, end = _schedule([1.0, 1.0, 3.0, 3.0], 3, 2)
    assert taken == [(0, 0), (1, 0), (2, 0), (3, 0), (3, 1), (2, 1), (2, 2), (3, 2),
                     (0, 1), (0, 2), (1, 1), (1, 2)]
    assert end == 12.0          # 24 seconds of runs on two processes: none idle


def test_a_point_still_running_counts_as_the_longest():
    # the 5-second point's first run is still running when the 1-second
    # points' first runs end: its second run is taken before theirs
    taken, end = _schedule([1.0, 1.0, 1.0, 5.0], 2, 2)
    assert taken[4] == (3, 1)
    assert end == 8.0           # 16 seconds on two processes
    # (taken from the two ends of the grid's list, as before, one process
    # ran both 5-second runs: 10 seconds)


def test_ties_go_in_the_grids_order_and_a_cleared_order_gives_nothing():
    order = Longest([(0, "a", 1), (1, "a", 2), (2, "b", 1), (3, "b", 2)])
    assert [order.take() for _ in range(2)] == [(0, "a", 1), (2, "b", 1)]
    order.ran((0, "a", 1), 2.0)
    order.ran((2, "b", 1), 2.0)
    assert order.take() == (1, "a", 2)
    order.clear()
    assert order.take() is None
