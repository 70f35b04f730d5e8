"""Where a sweep's runs are run: this process (``jobs=1``), this process and
a pool of ``N - 1`` local worker processes (``jobs=N``), or a Dask cluster (``dask="local"`` starts a
``LocalCluster`` of ``jobs`` worker processes; an address such as
``tcp://host:8786`` connects to a running scheduler; a
``distributed.Client`` is used as it is).  Each yields ``(index, row,
diagnostics)`` as runs finish, in any order; the caller orders them."""

from __future__ import annotations

import heapq
import os
import time
from typing import Callable, Iterable, Iterator

from ..api.extras import extra
from ..diag import Diagnostic, SerqError
from ..signals import whole
from .work import run_task, warm


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def start(jobs: int, n: int):
    """The pool of worker processes for ``n`` runs on ``jobs`` processes,
    started now (None for one): this process is one of the ``jobs`` (it runs
    runs too, :func:`local`), so the pool has ``jobs - 1`` workers, each of
    which imports what a run needs as it starts (serq.sweeps.work.warm) while
    the caller links the sweep's points.  The workers are forked with signals
    held (serq/signals.py: a signal now waits until the pool is whole, then
    stops it)."""
    if jobs <= 1 or n <= 1:
        return None
    return _pool(min(jobs, n) - 1)


def _pool(workers: int):
    from concurrent.futures import ProcessPoolExecutor
    from ..signals import deferred, ignored
    ignore = ignored()
    with deferred() as held:
        pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_start, initargs=(ignore,))
        pool.submit(int)      # the workers start with the first task
    try:
        held.release()
    except BaseException:
        stop(pool)
        raise
    return pool


def stop(pool) -> None:
    """The pool's workers stopped now, not after the runs they are in; the
    runs not started dropped."""
    from ..signals import deferred, stop_processes
    with deferred():          # (a second signal does not cut the stopping short)
        stop_processes(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def worker_start(ignore: tuple = ()) -> None:
    """A worker's start: its signals (serq/signals.py: SIGINT ignored, and
    what its parent ignores; dies with its parent), then the imports a run
    needs (``warm``)."""
    from ..signals import worker_init
    worker_init(ignore)
    warm()


HANDOFF = 2e-4
"""The longest this process's runs keep the interpreter from the threads that
hand a worker its next run, seconds (Python's default, 5 ms, is paid at each
of the four threads a handoff passes: the pool's result reader, the feeder,
the pool's queue manager and its pipe writer)."""


def local(tasks: list, jobs: int, pool=None) -> Iterator[tuple]:
    """The runs on this process and a pool's workers: each worker has one run
    at a time, handed to it by a feeder thread as soon as its last one ends,
    and this process takes the next run not handed out whenever it is free,
    so no one waits while a run is left.  The runs take unequal times (a
    point of twice the load runs twice as long), and the sweep ends when its
    last run does: which run is next is :class:`Longest`'s choice, the point
    whose runs have taken longest first, so that the runs left at the end
    are short ones."""
    if pool is None and (jobs <= 1 or len(tasks) <= 1):
        for t in tasks:
            yield run_task(t)
        return
    if pool is None:
        pool = _pool(min(jobs, len(tasks)) - 1)
    feed = _Feed(tasks, pool)
    import sys
    interval = sys.getswitchinterval()
    try:
        sys.setswitchinterval(HANDOFF)
        feed.start()
        while True:
            t = feed.take()
            if t is None:
                break
            began = time.perf_counter()
            out = run_task(t)
            feed.ran(t, time.perf_counter() - began)
            yield out
            yield from feed.finished(block=False)
        yield from feed.finished(block=True)
    except BaseException:
        # Ctrl-C, SIGTERM, SIGHUP (serq/signals.py) or an error: the workers
        # are stopped now, not after the runs they are in
        feed.cancel()
        stop(pool)
        raise
    finally:
        # on an error or Ctrl-C: the runs not started are dropped.  Whole
        # (serq/signals.py): a signal as the pool shuts down at the sweep's
        # end, raised in its shutdown, left the pool's manager thread closing
        # the pool's wake-up pipe as the interpreter exited, and Python 3.11's
        # exit wakes that thread through the pipe with no lock between the two
        # ("OSError: Bad file descriptor", seed 31 #1362)
        def close():
            feed.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            feed.join()
            sys.setswitchinterval(interval)
        whole(close)


class _Feed:
    """The runs not yet handed out, taken by this process (:meth:`take`) and
    by a thread that keeps each of the pool's workers busy with one run; the
    workers' results (a run's row, or its exception) are read in this
    process's thread by :meth:`finished`."""

    def __init__(self, tasks: list, pool):
        import queue
        import threading
        self.tasks = Longest(tasks)
        self.lock = threading.Lock()
        self.pool = pool
        self.workers = pool._max_workers
        self.done = queue.SimpleQueue()       # futures, then None when the thread ends
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="serq-sweep-feed", daemon=True)
        self.ended = False                    # the thread's last word (None) read

    def start(self) -> None:
        self.thread.start()

    def take(self):
        with self.lock:
            return self.tasks.take()

    def ran(self, task, seconds: float) -> None:
        with self.lock:
            self.tasks.ran(task, seconds)

    def _run(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait
        running = {}         # future: (its run, when it was handed out)
        try:
            while not self.stop.is_set():
                while len(running) < self.workers:
                    t = self.take()
                    if t is None:
                        break
                    running[self.pool.submit(run_task, t)] = t, time.perf_counter()
                if not running:
                    return
                ended, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                now = time.perf_counter()
                for f in ended:
                    t, began = running.pop(f)
                    self.ran(t, now - began)
                    self.done.put(f)
        except BaseException as e:      # the pool shut down under us (an interrupt): reported
            self.done.put(e)
        finally:
            for f in running:
                f.cancel()
            self.done.put(None)

    def finished(self, block: bool) -> Iterator[tuple]:
        import queue
        while not self.ended:
            try:
                item = self.done.get(block=block)
            except queue.Empty:
                return
            if item is None:
                self.ended = True
                return
            if isinstance(item, BaseException):
                raise item
            yield item.result()

    def cancel(self) -> None:
        self.stop.set()
        with self.lock:
            self.tasks.clear()

    def join(self) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout=10)


class Longest:
    """Which of a sweep's runs is next, for processes that each take one when
    they are free.  A sweep ends with its last run, so the runs left for the
    end should be short ones (longest first, the classic rule for unequal
    jobs on parallel machines); a run's time is not known before it runs, but
    a point's seeds take about the same time.  So the first run of each point
    goes first, in the grid's order, and after them the runs of the point
    whose finished runs took longest on average (a point with a run started
    and none finished counts as longest: it is taking longer than those that
    finished).  Ties go in the grid's order.  The order changes only which
    process runs a run and when, never a row: each run's row is its seed's
    and its point's (serq.sweeps.work)."""

    def __init__(self, tasks: list):
        self.left: dict = {}            # a point's IR → its runs not handed out, the next last
        for t in tasks:
            self.left.setdefault(t[1], []).append(t)
        for runs in self.left.values():
            runs.reverse()
        self.rank = {point: i for i, point in enumerate(self.left)}          # the grid's order
        self.fresh = list(reversed(self.left))    # the points not yet started, the next last
        self.times: dict = {}           # a point → [seconds of its finished runs, how many]
        self.heap: list = []            # (-estimate, rank, version, point)
        self.version: dict = {}

    def take(self):
        while self.fresh:
            runs = self.left[self.fresh.pop()]
            if runs:
                t = runs.pop()
                self._estimate(t[1])
                return t
        while self.heap:
            _, _, version, point = heapq.heappop(self.heap)
            runs = self.left[point]
            if version != self.version[point] or not runs:
                continue
            t = runs.pop()
            self._estimate(point)
            return t
        return None

    def ran(self, task, seconds: float) -> None:
        spent = self.times.setdefault(task[1], [0.0, 0])
        spent[0] += seconds
        spent[1] += 1
        self._estimate(task[1])

    def _estimate(self, point) -> None:
        """The point's place among those started, after a change."""
        if not self.left[point]:
            return
        spent = self.times.get(point)
        estimate = spent[0] / spent[1] if spent else float("inf")
        v = self.version[point] = self.version.get(point, 0) + 1
        heapq.heappush(self.heap, (-estimate, self.rank[point], v, point))

    def clear(self) -> None:
        self.fresh.clear()
        for runs in self.left.values():
            runs.clear()


def dask(tasks: list, target, jobs: int) -> Iterator[tuple]:
    """The runs on a Dask cluster.  Its start and its close run with signals
    held (serq/signals.py): a signal while a LocalCluster starts waits until
    it is whole (its worker processes inherit the signals blocked, so a
    Ctrl-C to the terminal's group does not kill one half started), then
    stops the sweep; one while it closes does not cut the close short."""
    from ..signals import deferred
    distributed = extra("distributed", "dask")
    with deferred(spawns=target == "local") as held:
        client, close = _client(distributed, target, jobs)
    futures = []
    done = False
    try:
        held.release()
        futures = client.map(run_task, tasks, pure=False)
        for f in distributed.as_completed(futures):
            yield f.result()
        done = True
    finally:
        with deferred() as closing:
            try:
                if futures and not done:
                    client.cancel(futures)
            finally:
                close()
        if done:
            closing.release()     # a signal while it closed, after the last run: the sweep stops


def _client(distributed, target, jobs: int):
    if isinstance(target, distributed.Client):
        return target, lambda: None
    if target == "local":
        import logging
        # no dashboard; the scheduler's HTTP routes (health, metrics) on a
        # free local port, not 8787: another cluster there made distributed
        # warn "Port 8787 is already in use".  Dask's own log is not the
        # user's to read (a worker's heartbeat racing its close logs an error
        # with a traceback): what fails reaches the sweep through its futures
        cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.CRITICAL,
                                           scheduler_kwargs={"dashboard": False,
                                                             "dashboard_address": "127.0.0.1:0"})
        client = distributed.Client(cluster)

        def close():
            client.close()
            cluster.close()
        return client, close
    if not isinstance(target, str):
        raise SerqError(Diagnostic("E975", f"dask= is \"local\", a scheduler's address or a "
                                           f"distributed.Client, not {type(target).__name__}"))
    try:
        client = distributed.Client(target, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise SerqError(Diagnostic("E975", f"cannot reach the Dask scheduler at {target}: {e}",
                                   help="start one (`dask scheduler` and `dask worker ADDRESS`), or "
                                        "give --dask local")) from None
    return client, client.close


def run(tasks: list, *, jobs: int, dask_target=None, on_done: Callable[[], None] = lambda: None,
        pool=None) -> Iterable[tuple]:
    it = local(tasks, jobs, pool) if dask_target is None else dask(tasks, dask_target, jobs)
    for out in it:
        on_done()
        yield out
