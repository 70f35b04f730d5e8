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
from tests.helpers import heard  # noqa: E402


def _start(tmp_path, extra):
    out = tmp_path / "t.csv"
    out.write_text("seed,run.end\n1,5\n")           # an earlier table, which must stay as it is
    cmd = [sys.executable, "-m", "serq.cli", "sweep", MG1, "--set", "lambda=0.5,0.6,0.7", "--seeds", "1-4",
           "--horizon", "1e7", "--out", str(out)] + extra
    p = subprocess.Popen(heard(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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
    kids = _wait_for_workers(p, 1)           # --jobs 2: this process and one worker
    os.kill(p.pid, sig)
    _check_stopped(p, out, kids, sig)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_stops_a_dask_sweep_and_its_cluster(tmp_path, sig):
    pytest.importorskip("distributed")
    p, out = _start(tmp_path, ["--jobs", "2", "--dask", "local"])
    kids = _wait_for_workers(p, 3)               # two workers and the resource tracker
    os.kill(p.pid, sig)
    _check_stopped(p, out, kids, sig)


def _listening(pid: int) -> bool:
    """Whether the process has a TCP socket listening (Linux /proc)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return False
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        if any(r.split()[3] == "0A" and r.split()[9] in inodes for r in rows):
            return True
    return False


@pytest.mark.parametrize("sig, to", [(signal.SIGINT, "process"), (signal.SIGTERM, "process"),
                                     (signal.SIGHUP, "process"), (signal.SIGINT, "group")],
                         ids=lambda x: getattr(x, "name", x))
def test_a_signal_while_a_dask_cluster_starts_stops_the_sweep(tmp_path, sig, to):
    """Sent as the LocalCluster starts (its scheduler listening, its workers
    to come; Ctrl-C to the terminal's whole group, or `kill` to serq): it gave distributed's
    "Nanny failed to start" and "AssertionError: Status.init" tracebacks (the
    cluster half made, closed by distributed at exit), or a worker's
    KeyboardInterrupt.  Now the start is whole, then closed: 128 + the
    signal's number, one line, no process left, the earlier table as it was."""
    pytest.importorskip("distributed")
    p, out = _start(tmp_path, ["--jobs", "2", "--dask", "local"])
    seen: set = set()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120 and p.poll() is None:
        seen.update(_children(p.pid))
        if _listening(p.pid):             # the cluster's scheduler is up; its workers are to come
            break
        time.sleep(0.002)
    else:
        p.kill()
        pytest.fail(f"no scheduler started: {p.communicate()}")
    (os.killpg if to == "group" else os.kill)(p.pid, sig)
    t0 = time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 90:      # (the cluster's processes, as they start)
        seen.update(_children(p.pid))
        time.sleep(0.02)
    _check_stopped(p, out, sorted(seen), sig)


def test_a_signal_once_the_table_is_in_place_does_not_stop_the_sweep(tmp_path):
    """SIGTERM as the sweep's table lands (sent the moment its file is renamed
    onto the place): it exited 143, "stopped by SIGTERM", with the new table
    in place — or died of SIGTERM as the interpreter exited.  The table is
    what the sweep was asked for: it exits 0 and says so."""
    out = tmp_path / "t.csv"
    out.write_text("seed,run.end\n1,5\n")
    first = out.stat().st_ino
    cmd = [sys.executable, "-m", "serq.cli", "sweep", MG1, "--set", "lambda=0.5,0.6", "--seeds", "1-2",
           "--horizon", "200", "--warmup", "0", "--out", str(out), "--jobs", "1"]
    p = subprocess.Popen(heard(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    while p.poll() is None and out.stat().st_ino == first:
        pass
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    assert stderr.splitlines()[-1].startswith("sweep: 2 points × 2 seeds = 4 runs in ")
    assert len(out.read_text().splitlines()) == 5
    assert os.listdir(tmp_path) == ["t.csv"]


def test_a_hangup_does_not_stop_a_sweep_started_under_nohup(tmp_path):
    """`nohup serq sweep …`: SIGHUP ignored as the process starts, and by its
    workers.  It stopped the sweep (129) all the same."""
    out = tmp_path / "t.csv"
    cmd = [sys.executable, "-m", "serq.cli", "sweep", MG1, "--set", "lambda=0.5,0.6,0.7", "--seeds", "1-2",
           "--horizon", "1e5", "--warmup", "0", "--out", str(out), "--jobs", "2"]
    p = subprocess.Popen(heard(cmd, ignore=(signal.SIGHUP,)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    kids = _wait_for_workers(p, 1)           # --jobs 2: this process and one worker
    os.killpg(p.pid, signal.SIGHUP)          # (the terminal's hangup reaches the whole group)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 0, stderr
    assert stderr.splitlines()[-1].startswith("sweep: 3 points × 2 seeds = 6 runs in ")
    assert len(out.read_text().splitlines()) == 7
    time.sleep(1.0)
    assert [k for k in kids if _alive(k)] == []
