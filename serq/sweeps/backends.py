"""Where a sweep's runs are run: this process (``jobs=1``), a pool of local
processes (``jobs=N``), or a Dask cluster (``dask="local"`` starts a
``LocalCluster`` of ``jobs`` worker processes; an address such as
``tcp://host:8786`` connects to a running scheduler; a
``distributed.Client`` is used as it is).  Each yields ``(index, row,
diagnostics)`` as runs finish, in any order; the caller orders them."""

from __future__ import annotations

import os
from typing import Callable, Iterable, Iterator

from ..api.extras import extra
from ..diag import Diagnostic, SerqError
from .work import run_task, warm


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def start(jobs: int, n: int):
    """The pool of worker processes for ``n`` runs on ``jobs`` processes,
    started now (None for one): each imports what a run needs as it starts
    (serq.sweeps.work.warm), while the caller links the sweep's points."""
    if jobs <= 1 or n <= 1:
        return None
    from concurrent.futures import ProcessPoolExecutor
    pool = ProcessPoolExecutor(max_workers=min(jobs, n), initializer=worker_start)
    pool.submit(int)      # the workers start with the first task
    return pool


def worker_start() -> None:
    """A worker's start: its signals (serq/signals.py: SIGINT ignored, dies
    with its parent), then the imports a run needs (``warm``)."""
    from ..signals import worker_init
    worker_init()
    warm()


def local(tasks: list, jobs: int, pool=None) -> Iterator[tuple]:
    if pool is None and (jobs <= 1 or len(tasks) <= 1):
        for t in tasks:
            yield run_task(t)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from ..signals import stop_processes
    if pool is None:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), initializer=worker_start)
    try:
        futures = [pool.submit(run_task, t) for t in tasks]
        for f in as_completed(futures):
            yield f.result()
    except BaseException:
        # Ctrl-C, SIGTERM, SIGHUP (serq/signals.py) or an error: the workers
        # are stopped now, not after the runs they are in
        stop_processes(pool)
        raise
    finally:
        # on an error or Ctrl-C: the runs not started are dropped
        pool.shutdown(wait=True, cancel_futures=True)


def dask(tasks: list, target, jobs: int) -> Iterator[tuple]:
    from ..signals import deferred
    distributed = extra("distributed", "dask")
    with deferred() as held:      # a signal while the cluster starts: once it can be closed
        client, close = _client(distributed, target, jobs)
    try:
        held.release()
        futures = client.map(run_task, tasks, pure=False)
        try:
            for f in distributed.as_completed(futures):
                yield f.result()
        finally:
            client.cancel(futures)
    finally:
        close()


def _client(distributed, target, jobs: int):
    if isinstance(target, distributed.Client):
        return target, lambda: None
    if target == "local":
        import logging
        cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.ERROR)
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
