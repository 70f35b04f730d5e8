"""How the command fails (issue 10): a program error exits 1 with its
located message, a bug of serq is an internal error (exit 3) and never a
bare traceback, Ctrl-C stops a run cleanly (exit 130), a run that cannot
finish says so, and --json, --dump and --out write nothing partial."""

import json
import os
import signal
import subprocess
import sys
import time

from click.testing import CliRunner

from serq.cli import main, version

MG1 = "examples/single-turn/mg1.sq"


def run(*args, env=None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


def _boom(monkeypatch):
    import serq.sim

    def simulate(*a, **kw):
        raise ZeroDivisionError("float division by zero")
    monkeypatch.setattr(serq.sim, "simulate", simulate)


def test_a_bug_of_serq_is_an_internal_error_with_the_rerun(monkeypatch):
    _boom(monkeypatch)
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", env={"SERQ_DEBUG": None})
    assert r.exit_code == 3
    assert r.output == (f"internal error: ZeroDivisionError: float division by zero (serq {version()})\n"
                        "  this is a bug of serq, not of the program; to see where, run it again as\n"
                        f"    SERQ_DEBUG=1 serq run {MG1} --horizon 10 --warmup 0\n")


def test_serq_debug_shows_the_traceback(monkeypatch):
    _boom(monkeypatch)
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", env={"SERQ_DEBUG": "1"})
    assert r.exit_code == 3
    assert r.output.startswith("Traceback (most recent call last):\n")
    assert r.output.endswith("ZeroDivisionError: float division by zero\n"
                             f"internal error: ZeroDivisionError: float division by zero (serq {version()})\n")


def test_a_run_stopped_by_max_events_prints_what_it_measured_and_exits_1():
    r = run("run", MG1, "--horizon", "1e6", "--max-events", "5000")
    assert r.exit_code == 1
    assert r.stdout.split("\n")[:3] == [
        f"made: program {MG1} instance examples/single-turn/instances/mg1.sq seed 1 horizon 1000000 warmup 1000",
        "run: end 3048.26 events 5000 arrivals 1686 ended 1683 turns 1686 live 4.332",
        "partial: the run stopped at 3048.26 (--max-events 5000 reached); these are the figures until then"]
    assert r.stderr == (
        "error[R019]: the run stopped at time 3048.26 of the horizon 1000000 (--max-events 5000 reached): it did "
        "not finish, and what it measured is partial\n"
        "  = help: give it more (--max-events, --max-seconds), or a shorter --horizon\n")


def test_json_and_dump_of_a_run_that_did_not_finish_write_nothing(tmp_path):
    out = tmp_path / "samples"
    r = run("run", MG1, "--horizon", "1e6", "--max-events", "5000", "--json", "--dump", str(out))
    assert r.exit_code == 1 and r.stdout == "" and not out.exists()
    assert r.stderr.endswith("  nothing written: --json and --dump are written only by a run that finished\n")


def test_max_seconds_stops_a_run():
    r = run("run", MG1, "--horizon", "1e12", "--max-seconds", "0.5")
    assert r.exit_code == 1 and "(--max-seconds 0.5 reached)" in r.stderr


def _busy(pid: int, cpu_seconds: float, timeout: float = 120.0) -> None:
    """Wait until the process has run ``cpu_seconds`` of CPU (its imports and
    link behind it, on a machine however loaded: Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / tick >= cpu_seconds:
            return
        time.sleep(0.1)


def test_ctrl_c_stops_a_run_cleanly_with_its_partial_report():
    from tests.helpers import heard
    p = subprocess.Popen(heard([sys.executable, "-m", "serq.cli", "run", MG1, "--horizon", "1e9"]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _busy(p.pid, 2.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130
    assert out.startswith(f"made: program {MG1} instance examples/single-turn/instances/mg1.sq seed 1 horizon "
                          "1000000000 warmup 1000\nrun: end ")
    assert "\npartial: the run stopped at " in out
    assert err.startswith("error[R020]: the run stopped at time ") and "(interrupted)" in err
    assert "Traceback" not in err


def test_ctrl_c_as_a_run_ends_stops_it_as_at_a_check(tmp_path, monkeypatch):
    """Ctrl-C after the run's last check, before it returned: the run went
    on to write its --dump and exit 0 as if no key had been pressed.  It
    stops as at a check: nothing written, 130."""
    import serq.sim
    real = serq.sim.simulate

    def ended_by_ctrl_c(program, **kw):
        report = real(program, **kw)
        kw["interrupt"]._handler(signal.SIGINT, None)        # (the key, its checks behind it)
        return report
    monkeypatch.setattr(serq.sim, "simulate", ended_by_ctrl_c)
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", str(tmp_path / "d"))
    assert (r.exit_code, r.stdout, r.stderr) == (130, "", "interrupted\n")
    assert os.listdir(tmp_path) == []


def test_a_dump_or_a_figure_that_cannot_be_written_is_an_error(tmp_path):
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", "/proc/nope")
    assert (r.exit_code, r.stderr) == (1, "error[E004]: cannot write --dump /proc/nope: No such file or directory\n"
                                          "  = help: the directory must exist and be writable\n")
    missing = tmp_path / "missing" / "x.svg"
    r = run("draw", MG1, "--out", str(missing))
    assert (r.exit_code, r.stderr) == (1, f"error[E004]: cannot write --out {missing}: No such file or directory\n"
                                          "  = help: the directory must exist and be writable\n")


def test_a_dump_into_a_directory_of_other_files_is_refused_and_with_force_keeps_them(tmp_path):
    d = tmp_path / "samples"
    d.mkdir()
    (d / "mine.txt").write_text("kept\n")
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", str(d))
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == (f"error[E005]: --dump {d} holds files serq run --dump did not make (mine.txt): it is "
                        "not written into\n"
                        "  = help: give an empty or new directory, or --force (force=True) to write the files into "
                        "it (theirs of the same names replaced, the rest left)\n")
    assert os.listdir(d) == ["mine.txt"]
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", str(d), "--force")
    assert r.exit_code == 0
    assert sorted(os.listdir(d)) == [".serq-files.json", "client", "mine.txt", "sojourn.csv"]
    assert (d / "mine.txt").read_text() == "kept\n"
    assert (d / "sojourn.csv").read_text().startswith("time,session,turn,value\n0.9219634323592031,0,1,")


def test_the_same_input_twice_is_a_usage_error():
    r = run("run", MG1, "--horizon", "10", "--set", "lambda=1", "--set", "lambda=2")
    assert r.exit_code == 2
    assert r.stderr.endswith("Error: Invalid value for --set: `lambda` is given twice (lambda=1 and lambda=2); "
                             "give each input once\n")


def test_a_trace_for_an_ir_file_without_one_is_a_usage_error(tmp_path):
    path = tmp_path / "mg1.ir.json"
    path.write_text(run("ir", MG1, "--horizon", "10", "--warmup", "0").stdout)
    r = run("run", str(path), "--trace", "examples/replay/data/short.csv")
    assert r.exit_code == 2
    assert r.stderr.endswith("Error: --trace examples/replay/data/short.csv: the program replays no trace, so "
                             "there is none to replace\n")


def test_a_report_is_json_a_strict_reader_reads():
    r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--json")
    assert r.exit_code == 0
    json.loads(r.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_an_empty_path_is_refused_at_its_option(tmp_path):
    """`serq run P --dump ""` (an unset $DIR) ran and exited 0 with no dump, as did
    `--trace ""`, `measured --figure ""` and `oracle fuzz --out ""` (the default
    folder); `draw --out ""` drew on stdout; `calibrate --out ""` was E004 at a file
    named ``.  Each is a usage error at its option, nothing run or written."""
    cases = [("run", MG1, "--horizon", "10", "--dump", ""), ("run", MG1, "--horizon", "10", "--trace", ""),
             ("draw", MG1, "--out", ""), ("calibrate", str(tmp_path), "--out", ""), ("oracle", "fuzz", "--out", ""),
             ("measured", str(tmp_path), "--figure", ""), ("inputs", MG1, "--instance", ""), ("check", "")]
    for args in cases:
        r = run(*args)
        option = "'FILE'" if args[0] == "check" else f"'{args[-2]}'"
        assert (r.exit_code, r.stdout, r.stderr.splitlines()[-1]) == (
            2, "", f"Error: Invalid value for {option}: an empty path names no file"), args
    assert os.listdir(tmp_path) == []


def test_a_dash_is_stdout_where_the_option_prints_there_and_refused_elsewhere(tmp_path, monkeypatch):
    """`serq mooncake-trace --out -` and `serq draw … --out -` wrote a file named `-`
    (`run --dump -`, `oracle fuzz --out -` a directory so named, `calibrate --out -`
    and `measured --figure -` would have too).  Where the option's default is
    stdout, `-` is stdout (a PNG too); anywhere else it is a usage error at the
    option, and `./-` still names a file called `-`."""
    import pytest
    prog = os.path.abspath(MG1)
    monkeypatch.chdir(tmp_path)
    trace = run("mooncake-trace", "--requests", "3").stdout
    for extra in ([], ["--force"]):
        r = run("mooncake-trace", "--requests", "3", "--out", "-", *extra)
        assert (r.exit_code, r.stdout, r.stderr) == (0, trace, "")
    r = run("draw", prog, "--out", "-")
    assert (r.exit_code, r.stdout) == (0, run("draw", prog).stdout)
    r = run("draw", prog, "--format", "tikz", "--out", "-")
    assert (r.exit_code, r.stdout) == (0, run("draw", prog, "--format", "tikz").stdout)
    assert os.listdir(tmp_path) == []
    for args, option, why in (
            (("run", prog, "--horizon", "10", "--dump", "-"), "--dump", "not a directory: give a directory"),
            (("oracle", "fuzz", "--out", "-"), "--out", "not a directory: give a directory"),
            (("oracle", "pd-fuzz", "--out", "-"), "--out", "not a directory: give a directory"),
            (("oracle", "sglang-fuzz", "--out", "-"), "--out", "not a directory: give a directory"),
            (("calibrate", str(tmp_path), "--out", "-"), "--out",
             "where serq calibrate prints its report: give a file"),
            (("measured", str(tmp_path), "--figure", "-"), "--figure",
             "where serq measured prints its report: give a file")):
        r = run(*args)
        assert (r.exit_code, r.stdout, r.stderr.splitlines()[-1]) == (
            2, "", f"Error: Invalid value for '{option}': - is stdout, {why} (./- names one called -)"), args
    assert os.listdir(tmp_path) == []
    r = run("mooncake-trace", "--requests", "3", "--out", "./-")
    assert (r.exit_code, r.stdout, open("-").read()) == (0, "", trace)
    pytest.importorskip("matplotlib")
    r = run("draw", prog, "--format", "png", "--out", "-")
    assert (r.exit_code, r.stdout_bytes[:8]) == (0, b"\x89PNG\r\n\x1a\n")
    assert b"serq draw: deployment view" in r.stdout_bytes[:4096]
    assert os.listdir(tmp_path) == ["-"]


def bounded(*args):
    """serq in a process of its own whose memory is bounded (4 GB): a reader
    that reads without end fails there, not the machine."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    return subprocess.run([sys.executable, "-m", "serq.cli", *args], capture_output=True, text=True,
                          preexec_fn=limit, timeout=120)


def test_an_endless_file_is_refused_at_the_most_serq_reads(tmp_path):
    """`serq check /dev/zero` (or `--instance /dev/zero`, an IR file linked to it)
    read until the machine's memory was gone and the kernel killed it: a file
    is read to 256 MB at most, more is E001."""
    import pytest
    if not os.path.exists("/dev/zero"):
        pytest.skip("needs /dev/zero")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for args, what in ((("check", "/dev/zero"), "/dev/zero"),
                       (("run", MG1, "--horizon", "10", "--instance", "/dev/zero"), "instance file /dev/zero"),
                       (("ir", str(tmp_path / "zero.json")), str(tmp_path / "zero.json"))):
        r = bounded(*args)
        assert (r.returncode, r.stdout, r.stderr) == (
            1, "", f"error[E001]: cannot read {what}: it is more than 256 MB, the most serq reads of a file\n"), args


def test_a_data_file_without_end_is_refused_at_its_first_line(tmp_path):
    """A trace, a table or a samples file linked to /dev/zero was refused at its
    first line, too long, and the refusal then read the whole file to show that
    line (an internal error under a memory limit; without one, memory gone):
    the line's head is shown, the file read no further."""
    import pytest
    if not os.path.exists("/dev/zero"):
        pytest.skip("needs /dev/zero")
    for name in ("zero.jsonl", "zero.csv"):
        (tmp_path / name).symlink_to("/dev/zero")
    shown = "1 | " + "\u2400" * 200 + " …"     # (NUL shown by its picture, serq.diag.visible)
    for args, path, code, what in (
            (("run", "examples/replay/mooncake.sq", "--horizon", "10", "--trace", str(tmp_path / "zero.jsonl")),
             tmp_path / "zero.jsonl", "R014", "the Mooncake trace"),
            (("plot", str(tmp_path / "zero.csv"), "--x", "a", "--y", "b", "--out", str(tmp_path / "p.svg")),
             tmp_path / "zero.csv", "E972", "the table"),
            (("plot", "--samples", str(tmp_path / "zero.csv"), "--out", str(tmp_path / "p.svg")),
             tmp_path / "zero.csv", "E972", "the table")):
        r = bounded(*args)
        assert (r.returncode, r.stdout, r.stderr) == (
            1, "", f"{path}:1:1: error[{code}]: the line is longer than 16777216 bytes, the most a row of {what} "
                   f"may be\n  |\n{shown}\n  | ^\n"), args
    assert sorted(os.listdir(tmp_path)) == ["zero.csv", "zero.jsonl"]


def test_a_huge_number_is_written_short_in_a_message():
    """`serq run P --horizon 10 --warmup 1e308` said `warmup 1000000000000000010979…`,
    309 digits: a whole number from 10^16 on is written as Python writes a
    float, `1e+308`; below, as digits."""
    from serq.diag import number_text
    r = run("run", MG1, "--horizon", "10", "--warmup", "1e308")
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", "$.warmup: error[E740]: warmup 1e+308 must be below the "
                                                        "horizon 10\n")
    assert [number_text(v) for v in (2.0 ** 53, 1e16 - 2, 1e16, -1e20, 1.5e300, 1e300 * 1e10)] == [
        "9007199254740992", "9999999999999998", "1e+16", "-1e+20", "1.5e+300", "inf"]
