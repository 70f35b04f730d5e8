"""What a command writes (serq/files.py, docs/cli.md "What a command writes"):
never over a file it did not make unless --force, never over its input,
whole or not at all under a temporary name of its own, a dump replacing an
earlier dump whole (issue 24, finding 1 and 3)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from serq import files
from serq.cli import main

MG1 = "examples/single-turn/mg1.sq"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_draw_never_writes_over_the_program_even_with_force(tmp_path):
    prog = tmp_path / "prog.sq"
    text = open(MG1, encoding="utf-8").read()
    prog.write_text(text)
    r = run("draw", str(prog), "--out", str(prog))     # (.sq is no figure's extension)
    assert (r.exit_code, prog.read_text()) == (2, text)
    for extra in ([], ["--force"]):
        r = run("draw", str(prog), "--out", str(prog), "--format", "svg", *extra)
        assert (r.exit_code, r.stderr) == (1, f"error[E005]: --out {prog} is an input of serq draw: it is not "
                                              "written over\n  = help: write the output elsewhere\n")
        assert prog.read_text() == text


def test_draw_writes_over_its_own_figure_and_over_another_file_only_with_force(tmp_path):
    out = tmp_path / "fig.svg"
    out.write_text("my notes\n")
    r = run("draw", MG1, "--out", str(out))
    assert (r.exit_code, r.stderr) == (1, (
        f"error[E005]: --out {out} exists and is not a file serq draw made: it is not written over\n"
        "  = help: give --force (force=True) to replace it, or write elsewhere (serq draw recognises its own "
        "files: a figure whose title says `serq draw:`)\n"))
    assert out.read_text() == "my notes\n"
    assert run("draw", MG1, "--out", str(out), "--force").exit_code == 0
    first = out.read_text()
    assert "<title>examples/single-turn/mg1.sq:1:1 serq draw: deployment view</title>" in first
    assert run("draw", MG1, "--out", str(out), "--view", "session").exit_code == 0   # its own: replaced
    assert out.read_text() != first and "serq draw: session view" in out.read_text()
    tikz = tmp_path / "fig.tex"
    assert run("draw", MG1, "--out", str(tikz), "--format", "tikz").exit_code == 0
    assert run("draw", MG1, "--out", str(tikz), "--format", "tikz").exit_code == 0
    assert sorted(os.listdir(tmp_path)) == ["fig.svg", "fig.tex"]     # no temporary file left


def test_a_sweep_refuses_a_foreign_table_before_its_first_run(tmp_path):
    out = tmp_path / "data.csv"
    out.write_text("name,value\nx,1\n")
    r = run("sweep", MG1, "--horizon", "1e9", "--out", str(out))     # (would run for minutes)
    assert (r.exit_code, r.stderr) == (1, (
        f"error[E005]: {out} exists and is not a file serq sweep made: it is not written over\n"
        "  = help: give --force (force=True) to replace it, or write elsewhere (serq sweep recognises its own "
        "files: a CSV whose header has `seed` and `run.…` columns, a Parquet file whose metadata says so)\n"))
    assert out.read_text() == "name,value\nx,1\n"
    assert run("sweep", MG1, "--horizon", "5", "--out", str(out), "--force").exit_code == 0
    assert out.read_text().startswith("seed,made.horizon,made.warmup,run.end,")
    assert run("sweep", MG1, "--horizon", "6", "--out", str(out)).exit_code == 0     # its own table
    assert out.read_text().split("\n")[1].startswith("1,6.0,")


def test_a_sweep_never_writes_over_the_trace_its_program_names(tmp_path):
    """`trace "data/short.csv";` in the program: `serq sweep vllm_replay.sq --out
    data/short.csv --force` wrote its table over the trace (only `--trace` was
    known for an input); refused before the first run, and by Sweep.write."""
    import shutil
    import serq
    for d in ("replay", "lib"):
        shutil.copytree(f"examples/{d}", tmp_path / d)
    prog, trace = tmp_path / "replay" / "vllm_replay.sq", tmp_path / "replay" / "data" / "short.csv"
    text = trace.read_text()
    r = run("sweep", str(prog), "--horizon", "1e9", "--out", str(trace), "--force")
    assert (r.exit_code, r.stderr) == (1, f"error[E005]: {trace} is an input of serq sweep: it is not written "
                                          "over\n  = help: write the output elsewhere\n")
    sw = serq.sweep(str(prog), horizon=5)
    with pytest.raises(serq.SerqError) as e:
        sw.write(str(trace), force=True)
    assert e.value.render() == (f"error[E005]: {trace} is an input of serq sweep: it is not written over\n"
                                "  = help: write the output elsewhere")
    assert trace.read_text() == text


def test_draw_and_calibrate_never_write_over_the_trace_their_program_names(tmp_path):
    """`serq draw vllm_replay.sq --out data/short.csv --format svg --force`
    replaced the program's trace with a figure (`serq calibrate --program …
    --out data/short.csv --force` with an instance file, `Drawing.save`
    likewise): a program's trace is an input of every command that links it
    (serq/files.py read_by)."""
    import shutil
    import serq
    for d in ("replay", "lib"):
        shutil.copytree(f"examples/{d}", tmp_path / d)
    prog, trace = tmp_path / "replay" / "vllm_replay.sq", tmp_path / "replay" / "data" / "short.csv"
    text = trace.read_text()
    r = run("draw", str(prog), "--out", str(trace), "--format", "svg", "--force")
    assert (r.exit_code, r.stderr) == (1, f"error[E005]: --out {trace} is an input of serq draw: it is not "
                                          "written over\n  = help: write the output elsewhere\n")
    with pytest.raises(serq.SerqError) as e:
        serq.load(str(prog)).draw().save(str(trace), force=True)
    assert e.value.render() == (f"error[E005]: {trace} is an input of serq draw: it is not written over\n"
                                "  = help: write the output elsewhere")
    profile = "../shared/data/llmservingsim/profiler/perf/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1"
    if os.path.isdir(profile):
        r = run("calibrate", profile, "--program", str(prog), "--out", str(trace), "--force")
        assert (r.exit_code, r.stderr) == (1, f"error[E005]: --out {trace} is an input of serq calibrate: it is "
                                              "not written over\n  = help: write the output elsewhere\n")
    assert trace.read_text() == text


def test_a_parquet_table_is_known_by_its_metadata(tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "t.parquet"
    assert run("sweep", MG1, "--horizon", "5", "--out", str(out)).exit_code == 0
    assert files.TABLE.made(str(out))
    assert run("sweep", MG1, "--horizon", "6", "--out", str(out)).exit_code == 0
    other = tmp_path / "o.parquet"
    other.write_bytes(b"PAR1 not a table of serq's")
    assert not files.TABLE.made(str(other))
    assert run("sweep", MG1, "--horizon", "5", "--out", str(other)).exit_code == 1
    assert other.read_bytes() == b"PAR1 not a table of serq's"


def test_plot_writes_over_its_own_figure_and_another_only_with_force(tmp_path):
    pytest.importorskip("matplotlib")
    table = tmp_path / "t.csv"
    assert run("sweep", MG1, "--set", "lambda=0.5,0.6", "--horizon", "5", "--out", str(table)).exit_code == 0
    before = table.read_text()
    for out in ("f.png", "f.svg"):
        args = ["plot", str(table), "--x", "lambda", "--y", "sojourn.mean", "--out", str(tmp_path / out)]
        assert run(*args).exit_code == 0
        assert files.PLOT.made(str(tmp_path / out))
        assert run(*args).exit_code == 0
    assert table.read_text() == before
    theirs = tmp_path / "theirs.png"
    theirs.write_bytes(b"\x89PNG not serq's")
    args = ["plot", str(table), "--x", "lambda", "--y", "sojourn.mean", "--out", str(theirs)]
    r = run(*args)
    assert r.exit_code == 1 and r.stderr.startswith(f"error[E005]: --out {theirs} exists and is not a file serq "
                                                    "plot made")
    assert theirs.read_bytes() == b"\x89PNG not serq's"
    assert run(*args, "--force").exit_code == 0 and files.PLOT.made(str(theirs))


def test_a_dump_over_an_earlier_dump_replaces_it_whole(tmp_path):
    d = tmp_path / "dump"
    assert run("run", "examples/multi-turn/routing.sq", "--horizon", "20", "--dump", str(d)).exit_code == 0
    first = sorted(files._entries(str(d)))
    assert "gauge/" not in first and any(f.startswith("gauge/") for f in first)
    assert run("run", MG1, "--horizon", "10", "--dump", str(d)).exit_code == 0
    assert sorted(files._entries(str(d))) == [".serq-files.json", "client/response.csv", "client/tpot.csv",
                                              "client/ttft.csv", "sojourn.csv"]
    assert files.read_manifest(str(d))["files"] == ["client/response.csv", "client/tpot.csv", "client/ttft.csv",
                                                    "sojourn.csv"]
    assert sorted(os.listdir(tmp_path)) == ["dump"]          # nothing beside it


def test_an_empty_directory_takes_a_dump(tmp_path):
    d = tmp_path / "dump"
    d.mkdir()
    assert run("run", MG1, "--horizon", "10", "--dump", str(d)).exit_code == 0
    assert "sojourn.csv" in os.listdir(d)


def test_the_temporary_name_is_the_writers_own():
    """Two writers of one place never share a temporary file (the fixed
    `.NAME.partial` of finding 3)."""
    src = open("serq/tables/table.py", encoding="utf-8").read()
    assert ".partial" not in src


WRITER = """
import sys
from serq.tables.table import write
rows = [{"seed": i, "run.end": float(sys.argv[2]), "x": sys.argv[2] * 200} for i in range(400)]
for _ in range(30):
    write(sys.argv[1], ["seed", "run.end", "x"], rows)
"""


def test_two_writers_of_one_table_leave_one_whole_table(tmp_path):
    out = tmp_path / "t.csv"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(out), tag], stderr=subprocess.PIPE, text=True)
             for tag in ("1", "2")]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    lines = out.read_text().split("\n")
    assert lines[0] == "seed,run.end,x" and lines[-1] == "" and len(lines) == 402
    tags = {ln.split(",")[1] for ln in lines[1:-1]}
    assert tags in ({"1.0"}, {"2.0"})
    assert os.listdir(tmp_path) == ["t.csv"]


def test_a_collection_replaces_its_own_files_and_refuses_others(tmp_path):
    c = files.Collection(str(tmp_path / "found"), what="--out ", command="serq oracle fuzz")
    c.add("s1_00003.json", "{}\n")
    c.add("s1_00003.json", "{\"a\": 1}\n")
    (tmp_path / "found" / "mine.json").write_text("x")
    with pytest.raises(files.SerqError) as e:
        c.add("mine.json", "{}\n")
    assert e.value.render().startswith(f"error[E005]: --out {tmp_path / 'found' / 'mine.json'} exists and is not "
                                       "a file serq oracle fuzz made")
    assert (tmp_path / "found" / "mine.json").read_text() == "x"
    assert files.read_manifest(str(tmp_path / "found"))["files"] == ["s1_00003.json"]


def test_the_api_writers_take_force(tmp_path):
    import serq
    prog = serq.load(MG1)
    out = tmp_path / "x.svg"
    out.write_text("mine")
    with pytest.raises(serq.SerqError):
        prog.draw().save(out)
    prog.draw().save(out, force=True)
    assert "serq draw:" in out.read_text()
    rep = prog.run(horizon=5)
    d = tmp_path / "d"
    d.mkdir()
    (d / "keep").write_text("k")
    with pytest.raises(serq.SerqError):
        rep.dump(d)
    rep.dump(d, force=True)
    assert (d / "keep").read_text() == "k" and (d / "sojourn.csv").exists()


def test_the_api_saves_a_png_as_serq_draw_out_does(tmp_path):
    """prog.draw(fmt="png") is a Picture whose save goes through serq/files.py
    as `serq draw --out f.png` does: the same bytes; its own figure replaced;
    another file only with force; the program never; an extension saying
    another format refused; no temporary file left."""
    pytest.importorskip("matplotlib")
    import serq
    prog_path = tmp_path / "prog.sq"
    text = open(MG1, encoding="utf-8").read()
    prog_path.write_text(text)
    prog = serq.load(str(prog_path))
    png = prog.draw(fmt="png")
    assert type(png).__name__ == "Picture" and png.startswith(b"\x89PNG") and png._repr_png_() == png
    out = tmp_path / "f.png"
    png.save(out)
    assert run("draw", str(prog_path), "--out", str(tmp_path / "cli.png")).exit_code == 0
    assert out.read_bytes() == bytes(png) == (tmp_path / "cli.png").read_bytes()
    session = prog.draw(view="session", fmt="png")
    session.save(str(out))                                # serq draw's own figure: replaced
    assert out.read_bytes() == bytes(session) != bytes(png)
    other = tmp_path / "photo.png"
    other.write_bytes(b"\x89PNG\r\n\x1a\nnot serq's")
    with pytest.raises(serq.SerqError) as e:
        png.save(other)
    assert e.value.render() == (
        f"error[E005]: {other} exists and is not a file serq draw made: it is not written over\n"
        "  = help: give --force (force=True) to replace it, or write elsewhere (serq draw recognises its own "
        "files: a figure whose title says `serq draw:`)")
    assert other.read_bytes() == b"\x89PNG\r\n\x1a\nnot serq's"
    png.save(other, force=True)
    assert other.read_bytes() == bytes(png)
    with pytest.raises(serq.SerqError) as e:
        png.save(prog_path, force=True)
    assert e.value.render() == (f"error[E005]: {prog_path} is an input of serq draw: it is not written over\n"
                                "  = help: write the output elsewhere")
    assert prog_path.read_text() == text
    with pytest.raises(serq.SerqError) as e:
        png.save(tmp_path / "f.svg")
    assert e.value.render() == (f"error[E970]: Picture.save: {tmp_path / 'f.svg'} says svg, and this figure is "
                                "png\n  = help: draw it with fmt=\"svg\", or give a name ending .png")
    with pytest.raises(serq.SerqError) as e:
        prog.draw(fmt="tikz").save(tmp_path / "f.png")
    assert e.value.render() == (f"error[E970]: Drawing.save: {tmp_path / 'f.png'} says png, and this figure is "
                                "tikz\n  = help: draw it with fmt=\"png\", or give a name ending .tex")
    assert sorted(os.listdir(tmp_path)) == ["cli.png", "f.png", "photo.png", "prog.sq"]


def _mode(path) -> int:
    import stat
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_and_dump_directories_have_the_umasks_mode(tmp_path):
    """What serq writes gets the mode any other program's file would (the
    umask's), not a temporary file's 0600: a figure, a dump's files and its
    directory."""
    mark = files.unmarked("a test")
    old = os.umask(0o022)
    try:
        files.write_file(str(tmp_path / "a.txt"), "x", what="", mark=mark)
        files.write_tree(str(tmp_path / "d"), [("one.csv", "a\n"), ("sub/two.csv", "b\n")], what="",
                         command="a test")
        r = CliRunner().invoke(main, ["draw", MG1, "--out", str(tmp_path / "f.svg")])
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(main, ["run", MG1, "--horizon", "50", "--warmup", "0", "--dump", str(tmp_path / "out")])
        assert r.exit_code == 0, r.output
        os.umask(0o077)
        files.write_file(str(tmp_path / "private.txt"), "x", what="", mark=mark)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644
    assert _mode(tmp_path / "d") == 0o755 and _mode(tmp_path / "d" / "sub" / "two.csv") == 0o644
    assert _mode(tmp_path / "f.svg") == 0o644
    assert _mode(tmp_path / "out") == 0o755 and _mode(tmp_path / "out" / "sojourn.csv") == 0o644
    assert _mode(tmp_path / "private.txt") == 0o600


def test_a_png_figure_is_known_for_serq_draws_own(tmp_path):
    """serq draw --out f.png (deploy's PNG) goes through serq/files.py as an
    SVG does: its title names serq draw, so a second draw replaces it; a PNG
    serq draw did not make is refused without --force."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "f.png"
    assert run("draw", MG1, "--out", str(out)).exit_code == 0
    first = out.read_bytes()
    assert first.startswith(b"\x89PNG") and b"serq draw: deployment view" in first[:files.HEAD]
    assert run("draw", MG1, "--out", str(out), "--view", "session").exit_code == 0
    assert b"serq draw: session view" in out.read_bytes()[:files.HEAD]
    other = tmp_path / "photo.png"
    other.write_bytes(b"\x89PNG\r\n\x1a\nnot serq's")
    r = run("draw", MG1, "--out", str(other))
    assert (r.exit_code, r.stderr) == (1, (
        f"error[E005]: --out {other} exists and is not a file serq draw made: it is not written over\n"
        "  = help: give --force (force=True) to replace it, or write elsewhere (serq draw recognises its own "
        "files: a figure whose title says `serq draw:`)\n"))
    assert other.read_bytes() == b"\x89PNG\r\n\x1a\nnot serq's"
    assert run("draw", MG1, "--out", str(other), "--force").exit_code == 0
    assert sorted(os.listdir(tmp_path)) == ["f.png", "photo.png"]


def test_a_device_or_a_pipe_is_written_to_not_replaced(tmp_path):
    """`serq mooncake-trace --out /dev/null --force` (as root) renamed its file onto
    /dev/null: the device became a regular file holding the trace.  A character
    device or a FIFO holds no file to lose: it is written to, with or without
    --force, and stays what it was; a socket is refused."""
    import socket
    import stat
    import threading
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    r = run("mooncake-trace", "--requests", "2", "--out", str(fifo))
    reader.join(10)
    assert (r.exit_code, got) == (0, [run("mooncake-trace", "--requests", "2").stdout.encode()])
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and sorted(os.listdir(tmp_path)) == ["fifo"]
    r = run("run", MG1, "--horizon", "10", "--dump", str(fifo))      # a directory's place: said what it is
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (1, f"error[E004]: cannot write --dump {fifo}: it is a pipe, "
                                                           "not a directory")
    if os.geteuid() == 0:          # a null device of the test's own (never the system's /dev/null)
        null = tmp_path / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        for extra in ([], ["--force"]):
            assert run("mooncake-trace", "--requests", "2", "--out", str(null), *extra).exit_code == 0
            assert run("draw", MG1, "--format", "svg", "--out", str(null), *extra).exit_code == 0
            assert stat.S_ISCHR(os.stat(null).st_mode) and os.stat(null).st_rdev == os.makedev(1, 3)
        assert sorted(os.listdir(tmp_path)) == ["fifo", "null"]
    sock = socket.socket(socket.AF_UNIX)
    path = str(tmp_path / "s")
    sock.bind(path)
    try:
        r = run("mooncake-trace", "--requests", "2", "--out", path, "--force")
        assert (r.exit_code, r.stderr) == (1, f"error[E004]: cannot write --out {path}: it is a socket, not a "
                                              "file\n  = help: write to a file, a character device (/dev/null) "
                                              "or a pipe\n")
        assert stat.S_ISSOCK(os.stat(path).st_mode)
    finally:
        sock.close()


def test_a_link_is_written_through_and_kept(tmp_path):
    """`--force` with a --out that is a symbolic link renamed the new file onto
    the link: the link became a regular file and the file it named was left
    as it was.  The file is written where the link leads, as a shell's `>`
    writes it (its temporary file beside the target), and the link stays; a
    link to nothing makes its target where the target's directory is there;
    without --force a link to a file the command did not make is refused as
    any such file is."""
    trace = run("mooncake-trace", "--requests", "2").stdout
    data = tmp_path / "data"
    data.mkdir()
    (data / "real.jsonl").write_text("my rows\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(os.path.join("data", "real.jsonl"))          # (a relative link)
    r = run("mooncake-trace", "--requests", "2", "--out", str(link))
    assert (r.exit_code, r.stderr) == (1, (
        f"error[E005]: --out {link} exists and is not a file serq mooncake-trace made: it is not written over\n"
        "  = help: give --force (force=True) to replace it, or write elsewhere (serq mooncake-trace recognises "
        "its own files: none: its files have no room to say so)\n"))
    assert (data / "real.jsonl").read_text() == "my rows\n"
    r = run("mooncake-trace", "--requests", "2", "--out", str(link), "--force")
    assert (r.exit_code, r.stderr) == (0, "")
    assert (os.readlink(link), (data / "real.jsonl").read_text()) == (os.path.join("data", "real.jsonl"), trace)
    assert (sorted(os.listdir(tmp_path)), os.listdir(data)) == (["data", "out.jsonl"], ["real.jsonl"])
    # a figure serq draw made, through a link: its own, written over without --force
    fig = tmp_path / "fig.svg"
    fig.symlink_to(data / "drawn.svg")
    assert run("draw", MG1, "--out", str(data / "drawn.svg")).exit_code == 0
    assert run("draw", MG1, "--out", str(fig), "--view", "session").exit_code == 0
    assert os.path.islink(fig) and "serq draw: session view" in (data / "drawn.svg").read_text()
    # a link to nothing: refused without --force; with it, its target is made
    dangling = tmp_path / "new.jsonl"
    dangling.symlink_to(data / "new.jsonl")
    r = run("mooncake-trace", "--requests", "2", "--out", str(dangling))
    assert (r.exit_code, os.path.exists(data / "new.jsonl")) == (1, False)
    assert run("mooncake-trace", "--requests", "2", "--out", str(dangling), "--force").exit_code == 0
    assert (os.path.islink(dangling), (data / "new.jsonl").read_text()) == (True, trace)
    # … unless the target's directory is not there, or the link leads round a loop
    nowhere = tmp_path / "nowhere.jsonl"
    nowhere.symlink_to(tmp_path / "missing" / "t.jsonl")
    r = run("mooncake-trace", "--requests", "2", "--out", str(nowhere), "--force")
    assert (r.exit_code, r.stderr) == (1, (
        f"error[E004]: cannot write --out {nowhere}: it is a link to {tmp_path / 'missing' / 't.jsonl'}, whose "
        "directory does not exist\n  = help: make the directory, or remove the link to write a file in its place\n"))
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    r = run("mooncake-trace", "--requests", "2", "--out", str(tmp_path / "a"), "--force")
    assert (r.exit_code, r.stderr) == (1, f"error[E004]: cannot write --out {tmp_path / 'a'}: it is a link in a "
                                          "loop (Too many levels of symbolic links)\n")
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "data", "fig.svg", "new.jsonl", "nowhere.jsonl", "out.jsonl"]
    assert all(os.path.islink(tmp_path / n) for n in ("a", "b", "fig.svg", "new.jsonl", "nowhere.jsonl", "out.jsonl"))
    assert sorted(os.listdir(data)) == ["drawn.svg", "new.jsonl", "real.jsonl"]


def test_a_dump_into_a_link_to_a_directory_goes_where_it_leads(tmp_path):
    """`serq run --dump LINK` (a link to an empty directory or an earlier dump)
    renamed the link aside and put a directory in its place: the link was gone
    and the directory it named stayed as it was.  The dump is written where the
    link leads, the link kept; a link to the directory holding the program is
    refused as the directory itself is."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to("real")
    for view in (1, 2):         # into the empty directory, then over the earlier dump
        r = run("run", MG1, "--horizon", "50", "--warmup", "0", "--dump", str(link))
        assert r.exit_code == 0, r.output
        assert (os.readlink(link), sorted(os.listdir(real))) == ("real", [".serq-files.json", "client", "sojourn.csv"])
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]
    src = tmp_path / "src"
    src.mkdir()
    prog = src / "mg1.sq"
    prog.write_text(open(MG1, encoding="utf-8").read())
    (tmp_path / "to_src").symlink_to(src)
    for extra in ([], ["--force"]):
        r = run("run", str(prog), "--horizon", "50", "--warmup", "0", "--dump", str(tmp_path / "to_src"), *extra)
        assert (r.exit_code, r.stderr.splitlines()[-2:]) == (1, [
            f"error[E005]: --dump {tmp_path / 'to_src'} holds {prog}, an input of serq run --dump: it is not "
            "written over", "  = help: write the output elsewhere"])
    assert os.listdir(src) == ["mg1.sq"] and os.path.islink(tmp_path / "to_src")


def test_a_place_whose_name_is_near_the_longest_takes_its_file(tmp_path):
    """A --out or --dump named with 241 to 255 bytes (a name the file system
    takes) was refused, `File name too long`: its temporary name, `.NAME.`,
    8 characters and `.serq`, was past 255 bytes.  The temporary name keeps
    the place's first 200 bytes."""
    trace = run("mooncake-trace", "--requests", "2").stdout
    long = tmp_path / ("a" * 249 + ".jsonl")                   # 255 bytes
    wide = tmp_path / ("é" * 126 + ".x")                       # 254 bytes, cut inside no character
    for out in (long, wide):
        r = run("mooncake-trace", "--requests", "2", "--out", str(out))
        assert (r.exit_code, r.stderr, out.read_text()) == (0, "", trace)
    dump = tmp_path / ("d" * 255)
    for _ in range(2):            # new, then over the earlier dump
        r = run("run", MG1, "--horizon", "50", "--warmup", "0", "--dump", str(dump))
        assert r.exit_code == 0, r.output
    assert sorted(os.listdir(tmp_path)) == sorted([long.name, wide.name, dump.name])
    assert sorted(os.listdir(dump)) == [".serq-files.json", "client", "sojourn.csv"]


def test_a_manifest_that_is_not_serqs_is_a_file_it_did_not_make(tmp_path):
    """A directory's .serq-files.json linked to /dev/zero was read until memory
    was gone (an internal error under a limit); one that is not a manifest
    (not JSON, not serq's shape) was taken for none, and the directory holding
    it for an empty one: a dump replaced it whole and the file was lost, a
    campaign wrote its manifest over it.  A manifest is a file of at most
    16 MB that serq wrote; any other .serq-files.json is refused as any file
    the command did not make is."""
    import resource
    with open("/proc/self/status") as f:        # (a reader without end fails here, not the machine)
        size = next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmSize:"))
    old = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), old[1]))
    try:
        _manifests(tmp_path)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def _manifests(tmp_path):
    for made in (lambda p: p.symlink_to("/dev/zero"), lambda p: p.write_text("[" * 100000),
                 lambda p: p.write_text('{"command": "serq run --dump"}')):
        d = tmp_path / "d"
        d.mkdir()
        made(d / files.MANIFEST)
        assert files.read_manifest(str(d)) is None
        r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", str(d))
        assert (r.exit_code, r.stderr.splitlines()[-2:]) == (1, [
            f"error[E005]: --dump {d} holds files serq run --dump did not make (.serq-files.json): it is not "
            "written into", "  = help: give an empty or new directory, or --force (force=True) to write the files "
            "into it (theirs of the same names replaced, the rest left)"])
        assert os.listdir(d) == [files.MANIFEST]
        c = files.Collection(str(d), what="--out ", command="serq oracle fuzz")
        with pytest.raises(files.SerqError) as e:
            c.add("s1_00003.json", "{}\n")
        assert e.value.render() == (
            f"error[E005]: --out {d / files.MANIFEST} exists and is not a manifest serq wrote: it is not written "
            "over\n  = help: give --force (force=True) to replace it, or another directory")
        assert os.listdir(d) == [files.MANIFEST]
        r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", str(d), "--force")
        assert r.exit_code == 0, r.output
        assert files.read_manifest(str(d))["files"] == ["client/response.csv", "client/tpot.csv", "client/ttft.csv",
                                                        "sojourn.csv"]
        import shutil
        shutil.rmtree(d)


def test_a_forced_dump_that_cannot_land_whole_moves_nothing_in(tmp_path):
    """`--dump DIR --force` into a directory holding a file `client` (where the
    dump writes client/…) or a folder .serq-files.json (where it writes its
    manifest) moved its first files in and then failed, `File exists` or `Is a
    directory`: half a dump among the user's files.  Each place is checked
    before anything moves; nothing is written."""
    for blocker, message in (("client", "client is a file there, where the dump writes client/ttft.csv"),
                             (files.MANIFEST, ".serq-files.json is a directory there")):
        d = tmp_path / "d"
        d.mkdir()
        (d / "other").write_text("x")
        if blocker == "client":
            (d / "client").write_text("mine")
        else:
            (d / blocker).mkdir()
        r = run("run", MG1, "--horizon", "10", "--warmup", "0", "--dump", str(d), "--force")
        assert (r.exit_code, r.stderr) == (1, f"error[E004]: cannot write --dump {d}: {message}\n")
        assert sorted(os.listdir(d)) == sorted(["other", blocker]) and (d / "other").read_text() == "x"
        assert sorted(os.listdir(tmp_path)) == ["d"]
        import shutil
        shutil.rmtree(d)
