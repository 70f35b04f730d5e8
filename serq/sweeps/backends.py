"""Where a sweep's runs are run: this process (``jobs=1``), this process and
a pool of ``N - 1`` local worker processes (``jobs=N``), or a Dask cluster (``dask="local"`` starts a
``LocalCluster`` of ``jobs`` worker processes; an address such as
``tcp://host:8786`` connects to a running scheduler; a
``distributed.Client`` is used as it is).  Each yields ``(index, row,
diagnostics)`` as runs finish, in any order; the caller orders them."""

from __future__ import annotations

import os
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
    so no one waits while a run is left (the runs take unequal times).  The
    workers take the runs from the front of the list and this process from
    its back: a point's runs (its seeds) are next to each other, so each
    process compiles the programs of fewer points (a run's first use of a
    point's IR reads it and compiles its generated code, serq/sim/codegen.py)."""
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
            t = feed.take(last=True)
            if t is None:
                break
            yield run_task(t)
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
        import collections
        import queue
        import threading
        self.tasks = collections.deque(tasks)
        self.lock = threading.Lock()
        self.pool = pool
        self.workers = pool._max_workers
        self.done = queue.SimpleQueue()       # futures, then None when the thread ends
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="serq-sweep-feed", daemon=True)
        self.ended = False                    # the thread's last word (None) read

    def start(self) -> None:
        self.thread.start()

    def take(self, last: bool = False):
        with self.lock:
            if not self.tasks:
                return None
            return self.tasks.pop() if last else self.tasks.popleft()

    def _run(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait
        running = set()
        try:
            while not self.stop.is_set():
                while len(running) < self.workers:
                    t = self.take()
                    if t is None:
                        break
                    running.add(self.pool.submit(run_task, t))
                if not running:
                    return
                ended, running = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in ended:
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
