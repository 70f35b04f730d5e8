"""Signals sent to ``serq`` at a drawn moment: the ``signals`` surface (issue 24).

A case is ``serq sweep`` of a tiny program (examples/single-turn/mg1.sq, 2
points × 2 seeds, a horizon of 2 000 s) on a pool of two processes, on one,
or on a Dask LocalCluster of two — its table a CSV or a Parquet file — or
``serq run --dump``, sent SIGINT, SIGTERM or SIGHUP, to the process alone
(``kill PID``) or to its whole process group (a terminal's Ctrl-C or
hangup), at a moment drawn over the command's life (its duration measured
undisturbed, and again every five minutes: the machine's load changes), and
one case in four a second signal after the first (Ctrl-C pressed twice).

Cheap, so that 10^4 cases run in hours: three cases in four are forked from
this process, whose serq modules are already imported (``fork``: the
command's own code from its entry to its exit, then Python's finalization
as the interpreter runs it — threads joined, atexit, handlers reset); the
fourth runs the ``serq`` console script (``exec``: a real process from the
interpreter's start, imports and all).  This process is the subreaper of
every process a case starts (``PR_SET_CHILD_SUBREAPER``), so a process left
behind is found whoever started it, not only those seen while it ran.

What each case checks:

* its end: exit 0 (done: its output the undisturbed run's, byte for byte,
  else ``wrong``) or 128 + a signal sent (stopped: the output's place as it
  was, byte for byte, else ``lost``), its last line on stderr saying which;
  one case in eight runs under ``nohup``, whose SIGHUP must not stop it;
  killed by the signal itself only before serq's handling is in place
  (``early``: the interpreter starting, serq's entry importing it; nothing
  said, started or written), and a traceback on stderr only the
  interpreter's own KeyboardInterrupt from before serq's first line (an
  exec'd process, or a forked one's lines before ``main()``; it then ends
  as stopped or done); anything else, or a
  traceback or "Exception ignored" on stderr, is a ``crash``; one that
  dies of a fatal signal (a segmentation fault) is reported with every
  thread's stack as faulthandler wrote it (on an exec'd case's stderr, in
  a file of a forked case's own; its innermost 100 frames: with
  ``SERQ_FUZZ_CORES=DIR`` the process's core is kept in DIR too, for gdb's
  ``py-bt``, whose every frame says where a stack overflow began);
* a finished command heard no signal sent it before its output was
  renamed onto its place (``wrong``: a signal lost);
* no process it started alive 5 s after it ended (``orphan``);
* nothing left beside the output or in its TMPDIR but Dask's own lock
  files (``lost``: a temporary file, a worker's scratch directory)."""

from __future__ import annotations

import collections
import os
import shutil
import signal
import sys
import tempfile
import time

from . import corpus as C
from .check import Finding

PROGRAM = "examples/single-turn/mg1.sq"
SWEEP = ["sweep", PROGRAM, "--set", "lambda=0.5,0.7", "--seeds", "1-2", "--horizon", "2000", "--warmup", "0"]
RUN = ["run", PROGRAM, "--horizon", "20000", "--warmup", "0"]
BACKENDS = {"pool": ["--jobs", "2"], "one": ["--jobs", "1"], "dask": ["--jobs", "2", "--dask", "local"]}
HOWS = ("pool", "pool", "one", "dask", "run", "run")
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
EARLIER_TABLE = b"seed,run.end\n1,5\n"          # a table a sweep made (serq/files.py's mark), to be kept
GRACE = 5.0                                    # how long a process may outlive its command
SKEW = 0.05                                    # a file's time stamp against time.time (the kernel's tick)
LIMIT = 120.0                                  # how long a case may take after its signal
REMEASURE = 300.0                              # how old a command's measured duration may be (s)
DASK_LOCKS = {"dask-scratch-space", "dask-scratch-space/global.lock", "dask-scratch-space/purge.lock"}
SERQ = os.path.join(os.path.dirname(sys.executable), "serq")
CORES = "SERQ_FUZZ_CORES"                      # a directory for the core of a case killed by a fatal signal
FATAL = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL)
BAD = ("Traceback", "Exception ignored", "Task exception was never retrieved", "Aborted!", "internal error",
       "Fatal Python error", "Warning:", "WARNING", "ERROR")

TALLY: collections.Counter = collections.Counter()     # how the cases ended (printed by `make fuzz`)


# ---------------------------------------------------------------- processes

def _descendants(pid: int) -> list:
    """Every process below ``pid`` (Linux /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _subreaper() -> None:
    """This process adopts every orphan below it (Linux ≥ 3.4)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _adopted() -> list:
    """The processes whose parent is this one (a case's, once it has ended:
    its orphans, adopted)."""
    return _descendants(os.getpid())


def _reap(pids) -> None:
    for k in pids:
        try:
            os.waitpid(k, os.WNOHANG)
        except ChildProcessError:
            pass


def _left_behind() -> tuple:
    """(the processes alive ``GRACE`` s after the case ended, the longest any
    outlived it), every one killed and reaped."""
    t0 = time.monotonic()
    longest = 0.0
    while True:
        kids = _adopted()
        _reap(kids)
        alive = [k for k in kids if _alive(k)]
        if not alive:
            return [], longest
        longest = time.monotonic() - t0
        if longest >= GRACE:
            break
        time.sleep(0.01)
    left = []
    while alive:                     # (a killed orphan's own children come to us next)
        left += alive
        for k in alive:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
        kids = _adopted()
        _reap(kids)
        alive = [k for k in kids if _alive(k) and k not in left]
    return left, longest


# ---------------------------------------------------------------- a command, forked or exec'd

_READY = False


def _ready() -> None:
    """Once per process: this process the subreaper, serq's modules imported
    (what a fork starts from; never Dask's, whose import starts threads)."""
    global _READY
    if _READY:
        return
    _subreaper()
    import serq.__main__  # noqa: F401
    import serq.cli  # noqa: F401
    import serq.link  # noqa: F401
    import serq.sim  # noqa: F401
    import serq.sweeps  # noqa: F401
    import serq.sweeps.backends  # noqa: F401
    import serq.sweeps.command  # noqa: F401
    import serq.tables.table  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    _READY = True


def _child(argv: list, box: dict, execute: bool, ready_w: int, nohup: bool = False) -> None:
    """In the forked child: a new session (its own process group), the box's
    directory and streams, the signals a new interpreter has (SIGHUP ignored
    under ``nohup``); then the ``serq`` console script exec'd, or serq's
    entry called here."""
    code = 99
    try:
        os.setsid()
        os.chdir(box["work"])
        fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        for k, name in ((1, "out"), (2, "err")):
            fd = os.open(box[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, k)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
            signal.signal(s, signal.SIG_DFL)
        if nohup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        # a fatal signal (SIGSEGV, SIGABRT, ...) writes every thread's stack:
        # an exec'd interpreter (and any process it spawns) on its stderr,
        # this forked one to the case's own file
        env = dict(os.environ, TMPDIR=box["tmp"], PYTHONFAULTHANDLER="1")
        if os.environ.get(CORES):
            import resource
            hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
            resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
        env.pop("SERQ_DEBUG", None)
        if execute:
            # (a new interpreter starts with SIGINT at its default till it sets
            # its own: a Ctrl-C from here to then kills it, nothing said)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.write(ready_w, b"x")
            os.execve(SERQ, ["serq"] + argv, env)
        import faulthandler
        faulthandler.enable(open(box["fault"], "w"), all_threads=True)
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None
        sys.argv = [SERQ] + argv
        _as_the_script()
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        code = _serq(ready_w)
    except BaseException:      # noqa: BLE001 - the harness's own trouble, said on the case's stderr
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _as_the_script() -> None:
    """``__main__`` as the console script's (multiprocessing's spawn runs a
    worker's ``__main__`` from it: the script, guarded, not this harness)."""
    import types
    main = types.ModuleType("__main__")
    main.__file__ = SERQ
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main


def _serq(ready_w: int) -> int:
    """serq's entry (its moment 0 said on ``ready_w`` just before), then what
    the interpreter does at its exit (Py_FinalizeEx): threads joined, atexit
    run, streams flushed, Python's handlers reset."""
    import atexit
    import threading
    import traceback
    from serq.__main__ import main
    code = 0
    try:
        os.write(ready_w, b"x")
        os.close(ready_w)
        main()
    except SystemExit as e:
        if isinstance(e.code, int):
            code = e.code
        elif e.code is not None:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:      # noqa: BLE001 - what the interpreter prints
        traceback.print_exc()
        code = 1
    for step in (threading._shutdown, atexit._run_exitfuncs):
        try:
            step()
        except BaseException:  # noqa: BLE001 - as the interpreter: "Exception ignored", and on
            print("Exception ignored in the interpreter's exit:", file=sys.stderr)
            traceback.print_exc()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except OSError:
            pass
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if callable(signal.getsignal(s)):
            signal.signal(s, signal.SIG_DFL)
    if code == -signal.SIGINT:
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _start(argv: list, box: dict, execute: bool, nohup: bool = False) -> tuple:
    """The command started: (its pid, the moment it began)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(argv, box, execute, w, nohup)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    return pid, time.monotonic()


def _wait(pid: int, until: float):
    """Its exit code (negative: killed by that signal), or None at ``until``."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= until:
            return None
        time.sleep(0.002)


def _box() -> dict:
    base = tempfile.mkdtemp(prefix="serq-fuzz-signals-")
    box = {"base": base, "work": os.path.join(base, "w"), "tmp": os.path.join(base, "tmp"),
           "out": os.path.join(base, "out.txt"), "err": os.path.join(base, "err.txt"),
           "fault": os.path.join(base, "fault.txt")}
    os.mkdir(box["work"])
    os.mkdir(box["tmp"])
    return box


# ---------------------------------------------------------------- what a case runs and keeps

def _argv(how: str, fmt: str) -> list:
    prog = os.path.join(C.ROOT, PROGRAM)
    if how == "run":
        return [RUN[0], prog] + RUN[2:] + ["--dump", "d"]
    return [SWEEP[0], prog] + SWEEP[2:] + BACKENDS[how] + ["--out", f"t.{fmt}"]


def _place(how: str, fmt: str) -> str:
    return "d" if how == "run" else f"t.{fmt}"


def _snapshot(path: str) -> dict:
    """A file's bytes, or a directory's every file's (relative path -> bytes)."""
    if not os.path.lexists(path):
        return {}
    if not os.path.isdir(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


def _earlier(how: str, fmt: str, box: dict) -> None:
    """The output's place holds an earlier output of the command's own (of
    another seed), which a stopped command must leave as it was."""
    if how == "run":
        shutil.copytree(_reference(how, fmt, earlier=True)["kept"], os.path.join(box["work"], "d"))
    elif fmt == "csv":
        with open(os.path.join(box["work"], "t.csv"), "wb") as f:
            f.write(EARLIER_TABLE)
    else:
        shutil.copy(_reference("one", fmt, earlier=True)["kept"], os.path.join(box["work"], "t.parquet"))


_REFERENCE: dict = {}


def _reference(how: str, fmt: str, earlier: bool = False) -> dict:
    """The command run undisturbed, once per process: its output (what a
    finished case must have written: ``out``, and a copy at ``kept``), and
    how long it takes exec'd and forked (:func:`_span`).  ``earlier``: the
    command of another seed, whose output is the earlier one a case starts
    beside."""
    key = (how, fmt, earlier)
    if key in _REFERENCE:
        return _REFERENCE[key]
    _ready()
    argv = _argv(how, fmt)
    if earlier:
        argv = argv[:argv.index("--seeds")] + ["--seeds", "3"] + argv[argv.index("--seeds") + 2:] \
            if how != "run" else argv + ["--seed", "9"]
    got = {"when": {}}
    for execute in ((False,) if earlier else (True, False)):
        took, out, kept = _undisturbed(argv, how, fmt, execute, keep=not execute)
        if "out" in got and out != got["out"]:
            raise RuntimeError(f"`serq {' '.join(argv)}` forked and exec'd wrote different outputs")
        got["out"] = out
        got["exec" if execute else "fork"] = took
        got["when"]["exec" if execute else "fork"] = time.monotonic()
        if kept:
            got["kept"] = kept
    _REFERENCE[key] = got
    return got


def _undisturbed(argv: list, how: str, fmt: str, execute: bool, keep: bool = False) -> tuple:
    """The command run undisturbed: (how long it took, its output, a copy of
    it kept if ``keep``)."""
    box = _box()
    try:
        pid, t0 = _start(argv, box, execute)
        code = _wait(pid, t0 + 600)
        took = time.monotonic() - t0
        _left_behind()
        with open(box["err"], encoding="utf-8", errors="replace") as f:
            err = f.read()
        if code != 0:
            raise RuntimeError(f"the undisturbed `serq {' '.join(argv)}` exited {code}: {err[-800:]}")
        src = os.path.join(box["work"], _place(how, fmt))
        kept = None
        if keep:
            kept = os.path.join(tempfile.mkdtemp(prefix="serq-fuzz-reference-"), os.path.basename(src))
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, kept)
        return took, _snapshot(src), kept
    finally:
        shutil.rmtree(box["base"], ignore_errors=True)


def _span(how: str, fmt: str, start: str, what: str) -> float:
    """How long the command takes undisturbed, exec'd or forked (the span a
    case's moment is drawn over), measured again once it is ``REMEASURE`` s
    old: on a machine whose load changes, a span measured at a lighter load
    would put the moments early in the command's life (its output checked
    each time against the first)."""
    ref = _reference(how, fmt)
    if time.monotonic() - ref["when"][start] > REMEASURE:
        took, out, _ = _undisturbed(_argv(how, fmt), how, fmt, start == "exec")
        if out != ref["out"]:
            raise Finding("wrong", f"the undisturbed command's output is not what it was, measured again before {what}")
        ref[start] = took
        ref["when"][start] = time.monotonic()
        TALLY["spans measured again"] += 1
    return ref[start]


# ---------------------------------------------------------------- the surface

def make(ch, i=None):
    from .mutate import Mutant
    how = ch.pick(HOWS)
    fmt = "parquet" if how != "run" and ch.chance(1, 5) else "csv"
    sig = ch.pick(SIGNALS)
    to = ch.pick(("process", "group"))
    at = ch.below(1100) / 1000                 # a fraction of the command's undisturbed duration
    second = [ch.pick(SIGNALS), ch.below(500) / 1000] if ch.chance(1, 4) else None
    start = "exec" if ch.chance(1, 4) else "fork"
    nohup = ch.chance(1, 8)
    what = (f"{start}ed {how}{' (' + fmt + ')' if how != 'run' else ''}{' under nohup' if nohup else ''}: "
            f"{sig} to the {to} at {at:.3f} of its life" + (f", then {second[0]} {second[1]:.3f} later" if second
                                                             else ""))
    return Mutant("signals", how, what, args=[how, fmt, sig, to, at, second, start, nohup])


def _send(pid: int, sig: int, to: str) -> None:
    try:
        (os.killpg if to == "group" else os.kill)(pid, sig)
    except ProcessLookupError:
        pass


def run(m, simulate=None) -> str:
    how, fmt, sig, to, at, second, start, nohup = m.args
    ref = _reference(how, fmt)
    span = _span(how, fmt, start, m.what)
    sigs = [getattr(signal, sig)] + ([getattr(signal, second[0])] if second else [])
    box = _box()
    try:
        _earlier(how, fmt, box)
        place = os.path.join(box["work"], _place(how, fmt))
        before = _snapshot(place)
        pid, t0 = _start(_argv(how, fmt), box, start == "exec", nohup)
        sent, when = [], []
        code = _wait(pid, t0 + at * span)
        if code is None:
            _send(pid, sigs[0], to)
            sent.append(sigs[0])
            when.append(time.time())
            if second:
                code = _wait(pid, time.monotonic() + second[1] * span)
                if code is None:
                    _send(pid, sigs[1], to)
                    sent.append(sigs[1])
                    when.append(time.time())
            if code is None:
                code = _wait(pid, time.monotonic() + LIMIT)
        if code is None:
            _send(pid, signal.SIGKILL, "group")
            _wait(pid, time.monotonic() + 30)
            _left_behind()
            raise Finding("orphan", f"no end {LIMIT:g} s after {m.what}")
        left, longest = _left_behind()
        with open(box["err"], encoding="utf-8", errors="replace") as f:
            err = f.read()
        early = _early(err, code, sent)
        fault = _fatal(_fault(box), err, early)
        core = _core(box) if code is not None and -code in FATAL else ""
        if fault or core:
            raise Finding("crash", f"exit {code}, a fatal error, {m.what}: {fault[-6000:]}{core}")
        if left:
            raise Finding("orphan", f"{len(left)} processes alive {GRACE:g} s after the command ended, {m.what}")
        after = _snapshot(place)
        if early and after == (ref["out"] if code == 0 else before):
            TALLY["early: the interpreter's own KeyboardInterrupt"] += 1
            return "error"
        bad = [b for b in BAD if b in err]
        if bad:
            raise Finding("crash", f"{bad[0]!r} on stderr, {m.what}: {err[-6000:]}")
        heard = [s for s in sent if not (nohup and s == signal.SIGHUP)]      # (nohup: SIGHUP is ignored)
        ending = _ending(how, code, heard, err, before, after, longest, m.what)
        if ending == "done" and after != ref["out"]:
            raise Finding("wrong", f"a finished command's output is not the undisturbed run's, {m.what}")
        if ending == "done" and heard:
            # a signal it heard before its output was renamed onto its place: lost
            first = when[sent.index(heard[0])]
            landed = _landed(place)
            if first < landed - SKEW:
                raise Finding("wrong", f"a signal lost: the command finished as if it had not been sent "
                                       f"{landed - first:.3f} s before its output was put in its place, {m.what}")
        if ending != "done" and after != before:
            raise Finding("lost", f"the earlier output changed by a command that did not finish, {m.what}")
        extra = sorted(set(os.listdir(box["work"])) - {os.path.basename(place)})
        if extra:
            raise Finding("lost", f"{extra[0]} left beside the output, {m.what}")
        junk = sorted(set(_files(box["tmp"])) - DASK_LOCKS)
        if junk:
            raise Finding("lost", f"{junk[0]} left in TMPDIR, {m.what}")
        TALLY[ending] += 1
        TALLY["longest outlived (s)"] = max(TALLY["longest outlived (s)"], round(longest, 2))
        return "ok" if ending == "done" else "error"
    finally:
        shutil.rmtree(box["base"], ignore_errors=True)


def _fault(box: dict) -> str:
    """The stacks faulthandler wrote as a forked case died of a fatal signal
    (an exec'd one writes them on its stderr: "Fatal Python error")."""
    try:
        with open(box["fault"], encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _core(box: dict) -> str:
    """With ``SERQ_FUZZ_CORES=DIR``: the core a case's process left (the
    kernel's ``core_pattern`` a file name, written in its working
    directory) moved into DIR, and how to read it."""
    keep = os.environ.get(CORES)
    if not keep:
        return ""
    os.makedirs(keep, exist_ok=True)
    said = ""
    for name in sorted(os.listdir(box["work"])):
        if name.startswith("core"):
            path = os.path.join(keep, f"{os.path.basename(box['base'])}.{name}")
            shutil.move(os.path.join(box["work"], name), path)
            said += (f"\ncore: {path} (every frame: gdb -batch -iex 'set auto-load safe-path /' -ex py-bt "
                     f"{os.path.realpath(sys.executable)} {path})")
    return said or "\nno core in the working directory (see /proc/sys/kernel/core_pattern)"


def _landed(place: str) -> float:
    """When the output was renamed onto its place (time.time's clock): its
    status change, which the rename is the last of (serq/files.py)."""
    return os.stat(place).st_ctime


def _files(d: str) -> list:
    out = []
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            out.append(os.path.relpath(os.path.join(root, n), d))
    return out


def _before_serq(err: str, sent: list) -> bool:
    """A Ctrl-C while the interpreter starts, before serq's first line: the
    interpreter's own KeyboardInterrupt (from its site module, its check of
    the script's path, the import of the console script's ``from
    serq.__main__ import main``; it exits 1, dies of SIGINT, or even goes
    on), in a traceback through no file of serq's but its package's
    ``__init__``.  A forked case's lines before it calls ``main()``
    (:func:`_serq`) stand for the console script's (seed 24 #1998: a SIGINT
    at moment 0 raised at the harness's own ``os.write``)."""
    lines = err.splitlines()
    if signal.SIGINT not in sent or not any(ln.startswith("KeyboardInterrupt") for ln in lines):
        return False
    package = os.path.join(C.ROOT, "serq") + os.sep
    frames = [ln.split('"')[1] for ln in lines if ln.startswith('  File "')]
    return all(not f.startswith(package) or f == package + "__init__.py" for f in frames)


def _early(err: str, code: int, sent: list) -> bool:
    """The interpreter's own KeyboardInterrupt before serq's first line
    (:func:`_before_serq`), and the ways the interpreter ends on it."""
    return _before_serq(err, sent) and code in (0, 1, -signal.SIGINT)


def _fatal(written: str, err: str, early: bool) -> str:
    """The fatal error a case's process reported: the stacks faulthandler
    wrote to the case's own file, else an exec'd process's stderr saying
    "Fatal Python error" -- but for the interpreter's own words on a Ctrl-C
    that interrupted its site module (``init_import_site: Failed to import
    the site module``, exit 1: seed 28 #2345, the ``.pth`` line of serq's
    editable install importing ``pathlib``), which is an early end."""
    if written:
        return written
    if "Fatal Python error" not in err:
        return ""
    if early and "Fatal Python error: init_import_site" in err and err.count("Fatal Python error") == 1:
        return ""
    return err


def _ending(how, code, sent, err, before, after, longest, what) -> str:
    """done | stopped | early (killed by the signal before serq's handling was
    in place: the interpreter starting, serq's entry importing it; nothing
    said, started or written); a crash otherwise."""
    last = err.rstrip("\n").rsplit("\n", 1)[-1]
    if code == 0:
        if how != "run" and not last.startswith("sweep: "):
            raise Finding("crash", f"exit 0 without the sweep's last line, {what}: {err[-600:]}")
        return "done"
    by = {128 + s: s for s in sent}
    if code in by:
        s = by[code]
        want = {"interrupted"} if s == signal.SIGINT else {f"stopped by {signal.Signals(s).name}"}
        if how == "run" and s == signal.SIGINT:
            want.add("  nothing written: --json and --dump are written only by a run that finished")
        if last not in want:
            raise Finding("crash", f"exit {code} saying {last!r}, {what}")
        return "stopped"
    if -code in sent and not err and after == before and longest == 0:
        return "early"
    raise Finding("crash", f"exit {code} after {', '.join(signal.Signals(s).name for s in sent) or 'no signal'}, "
                           f"{what}: {err[-600:]}")
