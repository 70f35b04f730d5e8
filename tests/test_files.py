"""What serq writes gets the mode any other program's file would (the umask's),
not a temporary file's 0600: a figure, a dump's files and its directory."""

import os
import stat

from click.testing import CliRunner

from serq.cli import main
from serq.files import write_file, write_tree

MG1 = "examples/single-turn/mg1.sq"


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_and_dump_directories_have_the_umasks_mode(tmp_path):
    old = os.umask(0o022)
    try:
        write_file(str(tmp_path / "a.txt"), "x")
        write_tree(str(tmp_path / "d"), [("one.csv", "a\n"), ("sub/two.csv", "b\n")])
        r = CliRunner().invoke(main, ["draw", MG1, "--out", str(tmp_path / "f.svg")])
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(main, ["run", MG1, "--horizon", "50", "--warmup", "0", "--dump", str(tmp_path / "out")])
        assert r.exit_code == 0, r.output
        os.umask(0o077)
        write_file(str(tmp_path / "private.txt"), "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644
    assert _mode(tmp_path / "d") == 0o755 and _mode(tmp_path / "d" / "sub" / "two.csv") == 0o644
    assert _mode(tmp_path / "f.svg") == 0o644
    assert _mode(tmp_path / "out") == 0o755 and _mode(tmp_path / "out" / "sojourn.csv") == 0o644
    assert _mode(tmp_path / "private.txt") == 0o600
