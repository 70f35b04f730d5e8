"""serq/signals.py: how a command meets SIGINT, SIGTERM and SIGHUP, part by
part (the sweeps' processes: tests/sweeps/test_signals.py; the findings of
the signal fuzzer, tests/fuzz/interrupts.py: tests/fuzz/test_found.py)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from serq import files, signals

from .helpers import python


def _wait_for_it(seconds: float = 2.0) -> None:
    """Python code running while a signal sent to this process arrives."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(0.005)


def test_a_signal_the_process_was_started_ignoring_stays_ignored():
    """`nohup serq …` ignores SIGHUP: the command does too, and stops for the
    others."""
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with pytest.raises(signals.Stopped) as e:
            with signals.stopping():
                os.kill(os.getpid(), signal.SIGHUP)
                _wait_for_it(0.2)
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_it()
        assert e.value.signum == signal.SIGTERM
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


def test_a_signal_that_stopped_one_call_does_not_stop_the_next():
    """From Python (a notebook), a call stopped by SIGTERM has said so by its
    exception; the signal was kept as still on its way, and the next call
    that put a file in its place (serq.plot.save, a sweep's table) raised it
    again, sent by nobody."""
    with pytest.raises(signals.Stopped):
        with signals.stopping():
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_it()
    done = []
    signals.put(lambda: done.append(1))       # (what serq/files.py renames through)
    assert done == [1]


def test_a_signal_waits_for_the_renames_that_put_a_result_in_its_place():
    """Outside a landing, the signal held is raised once the rename is done;
    in one, the command is done and the signal dropped, and later ones too."""
    with pytest.raises(signals.Stopped):
        with signals.stopping():
            done = []
            signals.put(lambda: (os.kill(os.getpid(), signal.SIGTERM), _wait_for_it(0.1), done.append(1)))
    assert done == [1]
    with signals.stopping():
        with signals.landing():
            signals.put(lambda: (os.kill(os.getpid(), signal.SIGTERM), _wait_for_it(0.1)))
        os.kill(os.getpid(), signal.SIGINT)
        _wait_for_it(0.2)


def test_a_signal_between_a_dumps_two_renames_loses_neither_dump(tmp_path, monkeypatch):
    """A dump replacing an earlier one moves it aside, then renames the new one
    onto its place; a signal between the two renames left neither (the one
    moved aside removed, the new one not in place).  Now it waits for both."""
    d = tmp_path / "d"
    files.write_tree(str(d), [("a.csv", "1\n")], what="", command="serq run --dump")
    rename = os.rename

    def renamed(a, b):
        rename(a, b)
        if os.path.basename(b) == "d" and os.path.dirname(b) != str(tmp_path):       # d moved aside
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_it(0.1)
    monkeypatch.setattr(os, "rename", renamed)
    with pytest.raises(signals.Stopped):
        with signals.stopping():
            files.write_tree(str(d), [("b.csv", "2\n")], what="", command="serq run --dump")
    assert sorted(os.listdir(d)) == [".serq-files.json", "b.csv"] and (d / "b.csv").read_text() == "2\n"
    assert os.listdir(tmp_path) == ["d"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_the_commands_process_ends_by_a_signal_as_it_imports(sig):
    """serq's entry: a signal while the command is still importing what it
    runs ends it with 128 + its number and one line, no traceback."""
    r = python("import os, signal, time\n"
                "from serq.signals import entry\n"
                "def body():\n"
                f"    os.kill(os.getpid(), {int(sig)})\n"
                "    time.sleep(5)\n"
                "entry(body)\n")
    said = "interrupted" if sig == signal.SIGINT else f"stopped by {sig.name}"
    assert (r.returncode, r.stdout, r.stderr) == (128 + sig, "", said + "\n")


def test_a_signals_exception_wrapped_on_its_way_is_the_signals():
    """Raised inside a class's making while serq imports (Python 3.11 wraps
    it: `RuntimeError: Error calling __set_name__ …`), it ends the command
    as the signal: 143, one line."""
    r = python("import os, signal, time\n"
                "from serq.signals import entry\n"
                "class Named:\n"
                "    def __set_name__(self, owner, name):\n"
                "        os.kill(os.getpid(), signal.SIGTERM)\n"
                "        time.sleep(1)\n"
                "def body():\n"
                "    class Owner:\n"
                "        field = Named()\n"
                "entry(body)\n")
    assert (r.returncode, r.stdout, r.stderr) == (143, "", "stopped by SIGTERM\n")


def test_the_command_hears_the_signals_a_parents_mask_would_block():
    """A process started with SIGINT and SIGTERM blocked (a parent's mask
    leaks across exec; a test process left so once started every sweep of
    its later tests deaf to them) hears them: serq's entry lets them
    through."""
    r = python("import os, signal, time\n"
               "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})\n"
               "from serq.signals import entry\n"
               "def body():\n"
               "    os.kill(os.getpid(), signal.SIGTERM)\n"
               "    time.sleep(5)\n"
               "entry(body)\n")
    assert (r.returncode, r.stdout, r.stderr) == (143, "", "stopped by SIGTERM\n")


def test_once_the_command_has_ended_a_signal_does_not_change_its_exit_status():
    """After the command (its exit status decided), the interpreter's own
    exit: a signal then is ignored, not a death by it."""
    r = python("import os, signal, sys\n"
                "from serq.signals import entry\n"
                "def body():\n"
                "    print('done')\n"
                "entry(body)\n"
                "os.kill(os.getpid(), signal.SIGTERM)\n"
                "os.kill(os.getpid(), signal.SIGINT)\n"
                "sys.exit(0)\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "done\n", "")


class _Unmade:
    """An object whose destructor fails, as one a signal cut short in its
    making (pyparsing's Forward as matplotlib builds its grammar)."""

    def __del__(self):
        self.never_set


def test_what_a_signal_cut_short_is_not_said_as_the_command_stops(monkeypatch):
    """Ctrl-C as `serq measured --figure` drew printed `Exception ignored in:
    <function Forward.__del__ …>` and its traceback before `interrupted`: a
    destructor's error while a signal stops the command is dropped; one with no
    signal is said as Python says it (the hook the command found).  (SIGTERM
    here: a process started in the background ignores SIGINT, and serq keeps
    a signal its process was started ignoring.)"""
    said = []
    monkeypatch.setattr("sys.unraisablehook", lambda u: said.append(u.exc_type))
    with pytest.raises(signals.Stopped):
        with signals.stopping():
            x = _Unmade()
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_it()
            except signals.Stopped:
                del x
                raise
    assert said == []
    with signals.stopping():
        y = _Unmade()
        del y
    assert said == [AttributeError]
