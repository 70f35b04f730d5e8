"""Signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP end a command alike.

``kill PID``, ``Popen.terminate()``, a CI job's cancel or a closed terminal
send SIGTERM or SIGHUP, to serq alone or to its whole process group (a
terminal's Ctrl-C and hangup reach the group).  Under :func:`stopping` (the
``serq`` command's every subcommand) each raises where the program is — a
``KeyboardInterrupt`` for SIGINT, :class:`Stopped` (one too) for the others
— so the same cleanup runs for all three: a sweep's workers are stopped
(below), a vLLM harness is closed, a file being written is removed
(serq/files.py writes under a temporary name), and the command exits 128 +
the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP; docs/cli.md).
The first signal decides: more during the cleanup are ignored.

In the ``serq`` command's own process (:func:`entry`, the console script
and ``python -m serq.cli``) this holds from its first line to its last: a
signal while it imports or reads its arguments ends it as one during its
work does; one the process was started ignoring (``nohup``) stays ignored;
one as click's own lines run, which would catch its exception and say
"Aborted!", waits for serq's next line (:func:`outside`); and once the
command has ended, or its result is in its place
(:func:`landing`), a signal comes too late to change its exit status.  A
signal's exception that Python drops (raised inside a destructor or a
callback) is raised again where the program is next.

A section a signal must not cut short — a worker pool or a Dask cluster
starting, whose half-made state nothing could close, a cluster closing, the
renames that put a result in its place (:func:`put`), the import of a
package of C extensions (:func:`imported`: numpy, pyarrow, matplotlib) —
runs :class:`deferred`: the signal waits for its end.

Workers: a sweep's pool workers ignore SIGINT and take SIGTERM and SIGHUP's
default (or ignore them as their parent does) (:func:`worker_init`), and a
Dask cluster's worker processes keep all three blocked (they are started
under :class:`deferred`): the parent alone decides when they stop, and stops
them (:func:`stop_processes`, the cluster's close) whatever stopped it.  On
Linux a pool worker is also sent SIGTERM should its parent die without a
word (``SIGKILL``), and a Dask worker exits when its parent's pipe closes, so
none is ever left behind under PID 1."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)
HELD = (signal.SIGINT,) + SIGNALS     # the signals that end a command

_process = False     # this is the `serq` command's own process (entry)
_depth = 0           # stopping() blocks open
_over = False        # stopped by a signal, or its result landed: nothing is to interrupt now
_pending = None      # the signal whose exception is on its way to the command's top
_landing = False     # a landing() block is open: the next put() lands the command's result
_hook = None         # sys.unraisablehook before stopping()
_held = None         # a signal that came as a library's own lines ran (outside): raised at serq's next block


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


def said(e: KeyboardInterrupt) -> str:
    """What the command says on stderr as it ends."""
    return f"stopped by {e.name}" if isinstance(e, Stopped) else "interrupted"


def interruption(e: BaseException):
    """The signal's exception behind ``e``, an exception that reached the
    command's top, or None: Python 3.11 wraps one raised inside a class's
    making (``RuntimeError: Error calling __set_name__ on …``, its cause),
    and code may catch it and raise another; a signal having stopped the
    command, its exception is the one to say."""
    seen = set()
    x = e
    while x is not None and id(x) not in seen:
        if isinstance(x, KeyboardInterrupt):
            return x
        seen.add(id(x))
        x = x.__cause__ or x.__context__
    if _pending is not None:
        return KeyboardInterrupt() if _pending == signal.SIGINT else Stopped(_pending)
    return None


def ending(e: KeyboardInterrupt) -> tuple:
    """(what the command says, its exit status) as a signal's exception
    reaches its top."""
    global _pending
    _pending = None
    return said(e), exit_code(e)


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _ignore_all() -> None:
    """The command has ended: signals ignored by the kernel (a Python handler
    would be reset to the default, a death by the signal, as the interpreter
    exits)."""
    for s in HELD:
        signal.signal(s, signal.SIG_IGN)


def _drop(signum, frame):
    """A signal after the first, or once the result is in place: nothing.  (A
    Python handler, not SIG_IGN: a signal caught and not yet handled when
    its handler became SIG_IGN is said by Python, "OSError: Signal 15
    ignored due to race condition", with a traceback.)"""


def _silence() -> None:
    for s in HELD:
        signal.signal(s, _drop)


def _raise(signum, frame):
    # the first signal stops the command; more during its cleanup are not
    # allowed to interrupt the cleanup (a worker pool half shut down)
    global _over, _pending
    _over = True
    _pending = signum
    _silence()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(signum)


def _unraisable(u) -> None:
    """Python drops an exception raised where it cannot propagate (a
    destructor, a weak reference's callback — the import system has some —,
    an atexit function): a signal's, dropped so, would leave the command
    running with every signal ignored.  The signal is sent again, from a
    thread, a moment later: it is raised where the program is then (were
    it dropped again, again).  Any other, once a signal is stopping the
    command, is what the signal cut short (an object half made whose
    destructor fails: pyparsing's ``Forward.__del__`` as matplotlib builds its
    grammar), and is not said: the command says only that it stopped."""
    if _pending is not None and u.exc_type is not None and issubclass(u.exc_type, KeyboardInterrupt):
        import threading
        signum = _pending
        signal.signal(signum, _raise)
        threading.Timer(0.001, os.kill, (os.getpid(), signum)).start()
        return
    if _pending is not None:
        return
    (_hook or sys.__unraisablehook__)(u)


def _unsaid(u) -> None:
    """The command's process after a signal stopped it: nothing more is said."""


def stop_now(signum, frame) -> None:
    """A handler that stops the command at once (``serq run``'s second Ctrl-C)."""
    _raise(signum, frame)


@contextlib.contextmanager
def stopping():
    """SIGINT, SIGTERM and SIGHUP raise while the block runs (in the main
    thread only: elsewhere signals cannot be handled), until the first has
    stopped the command; one the process was started ignoring stays ignored
    (``nohup`` ignores SIGHUP, a script's ``cmd &`` SIGINT).  When the
    outermost block ends, in the command's own process, its exit status is
    decided: signals are ignored from then on; elsewhere (a test's
    ``CliRunner``) the handlers before it are put back."""
    global _depth, _over, _pending, _hook, _held
    if not _main_thread():
        yield
        return
    if _depth == 0:
        _over = False
        _pending = None
        _held = None
        _hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    old = {s: signal.getsignal(s) for s in HELD}
    if not _over:
        for s in HELD:
            if old[s] != signal.SIG_IGN:      # (ignored as it started: `nohup`, a script's `&`)
                signal.signal(s, _raise)
    _depth += 1
    try:
        if _held is not None and not _over:        # (held as click's own lines ran: now it stops the command)
            signum, _held = _held, None
            signal.raise_signal(signum)
        yield
    finally:
        _depth -= 1
        if _depth == 0 and not _process:
            for s, h in old.items():
                signal.signal(s, h)
            _pending = None       # (said by the exception now leaving; a later block starts afresh)
        elif _depth == 0:
            _ignore_all()
        elif _over:
            _silence()
        else:
            for s, h in old.items():
                signal.signal(s, h)
        if _depth == 0:
            stopped = isinstance(sys.exc_info()[1], KeyboardInterrupt)
            sys.unraisablehook = _unsaid if _process and stopped else (_hook or sys.__unraisablehook__)


def _wait(signum, frame):
    global _held
    if _held is None:
        _held = signum


@contextlib.contextmanager
def outside():
    """A library's own lines around serq's blocks — click's ``main`` around
    the ``serq`` group's ``make_context`` and ``invoke``, each under
    :func:`stopping`: a signal there is held, not raised (click would catch
    its exception, say "Aborted!" and exit 1: seed 28 #420), and raised as
    serq's next block starts, or as this ends."""
    global _held
    if _depth == 0 or not _main_thread():
        yield
        return
    waits = [s for s in HELD if signal.getsignal(s) is _raise]
    for s in waits:
        signal.signal(s, _wait)
    try:
        yield
    finally:
        if _over:
            _silence()
        else:
            for s in waits:
                signal.signal(s, _raise)
        if _held is not None:
            signum, _held = _held, None
            if not _over:
                signal.raise_signal(signum)     # (raised by _raise where the program is next)


def entry(body) -> None:
    """The ``serq`` command's process: ``body()`` (its imports and the
    command) under :func:`stopping`, a signal at any moment said as one and
    ended with 128 + its number, never a traceback; signals ignored once it
    has ended (its exit status is decided)."""
    global _process
    _process = True
    if hasattr(signal, "pthread_sigmask"):
        # (a mask blocking them, leaked from a parent across exec, would leave
        # the command deaf to them: ignoring is SIG_IGN's, which is kept)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
    try:
        with stopping():
            body()
    except BaseException as e:
        stop = interruption(e) if isinstance(e, (KeyboardInterrupt, Exception)) else None
        if stop is None:
            raise
        _ignore_all()
        words, code = ending(stop)
        sys.stderr.write(words + "\n")
        sys.exit(code)


class deferred:
    """A section a signal must not cut short (a worker pool or a Dask cluster
    starting, whose half-made state nothing could close; a cluster closing):
    SIGINT, SIGTERM and SIGHUP are held while it runs, and ``release()``,
    called where the section's result is in hand to clean up, raises the
    held one as the handler it displaced would have.  They are also blocked
    in this thread while it runs, so the threads and processes the section
    starts inherit the block (it survives exec): a Ctrl-C or a hangup to the
    terminal's whole process group does not reach a worker half started.
    Should the section fail while a signal is held, the signal is raised in
    its stead (the user asked the command to stop).

    ``spawns``: the section starts processes through multiprocessing's spawn
    (a Dask cluster's workers); its resource tracker is started first, as it
    unblocks SIGINT and SIGTERM in the thread that starts it, which would
    let them through to the workers that thread starts next."""

    def __init__(self, spawns: bool = False):
        self.spawns = spawns

    def __enter__(self):
        self.held = None
        self.old = {}
        self.mask = None
        if _main_thread():
            self.old = {s: signal.signal(s, self._hold) for s in HELD}
            if hasattr(signal, "pthread_sigmask"):
                self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
                if self.spawns:
                    # (started with the three blocked: it ignores SIGINT and
                    # SIGTERM itself, and a hangup does not reach it either)
                    from multiprocessing import resource_tracker
                    resource_tracker.ensure_running()
                    signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
        return self

    def _hold(self, signum, frame):
        # the first the displaced handler would act on: one it ignores (nohup's
        # SIGHUP; any once the command is stopping) must not take the place
        # of a later one it would not (seed 24 #5296, #5316)
        if self.held is None and self.old.get(signum) not in (signal.SIG_IGN, _drop):
            self.held = signum

    def __exit__(self, typ, exc, tb):
        if self.mask is not None:
            # a signal that came while blocked is taken now, by _hold
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        for s, h in self.old.items():
            signal.signal(s, h)
        if typ is not None and issubclass(typ, Exception):
            self.release()
        return False

    def release(self) -> None:
        if self.held is None:
            return
        signum, self.held = self.held, None
        h = self.old.get(signum)
        if callable(h):
            h(signum, None)
        elif h == signal.SIG_DFL:
            signal.raise_signal(signum)     # its default action, now that it is back


def whole(fn) -> None:
    """``fn()`` — a cleanup that must run to its end (a temporary file
    removed, a worker pool shut down and its threads joined) — with the
    signals held (:class:`deferred`), the held one raised after it.  A
    signal's exception raised as this starts, before the hold (or as the
    hold ends), runs ``fn()`` all the same where it had not run, then goes
    on: the first signal silences the rest, so nothing cuts the cleanup
    short twice.  ``fn`` is to be safe to run again."""
    done = []
    try:
        with deferred() as held:
            fn()
            done.append(True)
        held.release()
    except KeyboardInterrupt:
        if not done:
            fn()
        raise


def imported(name: str):
    """``import name`` — a package of C extensions (numpy, pyarrow,
    matplotlib, pandas, Dask) imported when first needed — with the signals
    held (:class:`deferred`), the held one raised once it is imported.  A
    signal's exception raised while an extension module's init imports
    (numpy's C API, ``import_array``, which numpy's own ``_umath_linalg``
    and every extension built on numpy call) is printed there, a bare
    traceback, and replaced by an ImportError (seed 25 #5142); one that an
    ``except ImportError`` then catches is lost."""
    mod = sys.modules.get(name)
    if mod is not None and not getattr(getattr(mod, "__spec__", None), "_initializing", False):
        return mod
    import importlib
    with deferred() as held:
        mod = importlib.import_module(name)
    held.release()
    return mod


@contextlib.contextmanager
def landing():
    """The command writing its result (a sweep's table, a run's dump): the
    rename that puts it in its place (serq/files.py, :func:`put`) marks the
    command done — from then on a signal no longer stops it (ignored to its
    end: it exits 0).  A signal before that rename stops it as anywhere,
    nothing written."""
    global _landing
    if _depth == 0 or not _main_thread():       # (not a command: from Python)
        yield
        return
    _landing = True
    try:
        yield
    finally:
        _landing = False


def put(rename) -> None:
    """``rename()``, the rename or renames that put a result in its place
    (serq/files.py), with signals held: a signal cannot cut it in two (an
    earlier dump moved aside and the new one not yet in its place).  In a
    :func:`landing` the command is then done, and the signal held dropped;
    elsewhere it is raised now."""
    global _over
    if _pending is not None:      # a signal's exception Python dropped, sent again: it stops the command now
        raise KeyboardInterrupt if _pending == signal.SIGINT else Stopped(_pending)
    with deferred() as held:
        rename()
        if _landing:
            # done: the section ends with the signals dropped, not with the
            # handlers it displaced put back (one that came between their
            # return and a _silence() after the section stopped the command
            # whose result was in place)
            _over = True
            held.old = {s: _drop for s in held.old}
    if _landing:
        _silence()
    else:
        held.release()


def ignored() -> tuple:
    """SIGTERM and SIGHUP where this process ignores them (``nohup``): what a
    worker it starts is to ignore too (:func:`worker_init`)."""
    return tuple(s for s in SIGNALS if signal.getsignal(s) == signal.SIG_IGN)


def worker_init(ignore: tuple = ()) -> None:
    """A sweep worker's signals (a ProcessPoolExecutor's initializer): it was
    forked with the three blocked (:class:`deferred`); SIGINT is ignored,
    SIGTERM and SIGHUP take their default (or are ignored, as its parent
    does: ``ignore``), then they are let through."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN if s in ignore else signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)
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
