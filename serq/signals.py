"""Signals: SIGTERM and SIGHUP end a command as Ctrl-C (SIGINT) does.

``kill PID``, ``Popen.terminate()``, a CI job's cancel or a closed terminal
send SIGTERM or SIGHUP to serq alone, not to its process group.  Under
:func:`stopping` (the ``serq`` command's every subcommand) each raises
:class:`Stopped` — a ``KeyboardInterrupt`` — where the program is, so the
same cleanup runs as for Ctrl-C: a sweep's workers are stopped (below), a
vLLM harness is closed, a file being written is removed (serq/files.py
writes under a temporary name), and the command exits 128 + the signal's
number (130 SIGINT, 143 SIGTERM, 129 SIGHUP; docs/cli.md).

A sweep's worker processes ignore SIGINT and take SIGTERM and SIGHUP's
default (:func:`worker_init`): the parent alone decides when they stop, and
stops them (:func:`stop_processes`) whatever stopped it; on Linux a worker is
also sent SIGTERM should its parent die without a word (``SIGKILL``), so no
worker is ever left behind under PID 1."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Stopped(KeyboardInterrupt):
    """The command was sent ``signum`` (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def exit_code(e: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for Ctrl-C (SIGINT)."""
    return 128 + (e.signum if isinstance(e, Stopped) else signal.SIGINT)


def _raise(signum, frame):
    # the first signal stops the command; more during its cleanup are not
    # allowed to interrupt the cleanup (a worker pool half shut down)
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


@contextlib.contextmanager
def stopping():
    """SIGTERM and SIGHUP raise :class:`Stopped` while the block runs (in the
    main thread only: elsewhere signals cannot be handled)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class deferred:
    """A section a signal must not cut short (a Dask cluster starting, whose
    half-made state nothing could close): SIGTERM and SIGHUP are held while
    it runs, and ``release()``, called where the section's result is in hand
    to clean up, raises the held one."""

    def __enter__(self):
        import threading
        self.held = None
        self.old = {}
        if threading.current_thread() is threading.main_thread():
            self.old = {s: signal.signal(s, self._hold) for s in SIGNALS}
        return self

    def _hold(self, signum, frame):
        self.held = signum

    def __exit__(self, *exc):
        for s, h in self.old.items():
            signal.signal(s, h)
        return False

    def release(self) -> None:
        if self.held is not None:
            signum, self.held = self.held, None
            if self.old.get(signum) is _raise:
                _raise(signum, None)
            elif callable(self.old.get(signum)):
                self.old[signum](signum, None)


def worker_init() -> None:
    """A sweep worker's signals (a ProcessPoolExecutor's initializer)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for s in SIGNALS:
        signal.signal(s, signal.SIG_DFL)
    _die_with_parent()


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl
        return
    if os.getppid() == 1:  # pragma: no cover - the parent died before prctl
        os._exit(1)


def stop_processes(pool) -> None:
    """SIGTERM to every worker of a ProcessPoolExecutor that is still alive,
    and wait for each (the pool's shutdown then has nothing to wait for)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            if p.is_alive():
                p.terminate()
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
