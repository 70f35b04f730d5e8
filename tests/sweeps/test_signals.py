"""SIGINT, SIGTERM and SIGHUP sent to `serq sweep` alone (`kill PID`, not the
terminal's Ctrl-C to the whole group) end it as Ctrl-C does: its workers
(a process pool's, a Dask LocalCluster's nannies and workers) are stopped,
no table is written and an earlier one is left as it was, the exit status is
128 + the signal's number (docs/cli.md), and no process it started is left
(issue 24, finding 2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

MG1 = "examples/single-turn/mg1.sq"


from tests.fuzz.interrupts import _alive, _descendants as _children  # noqa: E402  (Linux /proc)


def _start(tmp_path, extra):
    out = tmp_path / "t.csv"
    out.write_text("seed,run.end\n1,5\n")           # an earlier table, which must stay as it is
    cmd = [sys.executable, "-m", "serq.cli", "sweep", MG1, "--set", "lambda=0.5,0.6,0.7", "--seeds", "1-4",
           "--horizon", "1e7", "--out", str(out)] + extra
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    return p, out


def _wait_for_workers(p, n: int, seconds: float = 120.0) -> list:
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        kids = [k for k in _children(p.pid) if _alive(k)]
        if len(kids) >= n:
            time.sleep(1.0)      # the runs under way
            return [k for k in _children(p.pid) if _alive(k)]
        if p.poll() is not None:
            break
        time.sleep(0.2)
    p.kill()
    pytest.fail(f"the sweep did not start {n} workers: {p.communicate()}")


def _check_stopped(p, out, kids, sig):
    try:
        stdout, stderr = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail(f"the sweep did not end within 90 s of {sig.name}")
    time.sleep(1.0)
    left = [k for k in kids if _alive(k)]
    for k in left:                                   # (so that a failure leaves nothing either)
        os.kill(k, signal.SIGKILL)
    assert p.returncode == 128 + sig, (p.returncode, stderr)
    want = "interrupted\n" if sig == signal.SIGINT else f"stopped by {sig.name}\n"
    assert stderr.endswith(want) and "Traceback" not in stderr, stderr
    assert left == [], f"{len(left)} of {len(kids)} processes left after {sig.name}"
    assert out.read_text() == "seed,run.end\n1,5\n"
    assert [f for f in os.listdir(out.parent) if f != "t.csv"] == []   # no temporary file left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_stops_a_process_pool_sweep_and_its_workers(tmp_path, sig):
    p, out = _start(tmp_path, ["--jobs", "2"])
    kids = _wait_for_workers(p, 2)
    os.kill(p.pid, sig)
    _check_stopped(p, out, kids, sig)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_stops_a_dask_sweep_and_its_cluster(tmp_path, sig):
    pytest.importorskip("distributed")
    p, out = _start(tmp_path, ["--jobs", "2", "--dask", "local"])
    kids = _wait_for_workers(p, 3)               # two workers and the resource tracker
    os.kill(p.pid, sig)
    _check_stopped(p, out, kids, sig)
