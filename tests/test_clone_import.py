"""A script run beside a clone whose folder is named `serq` imports the package,
not the folder (which Python would otherwise make an empty namespace package,
`serq.load` missing): `make install` puts the clone's root on the venv's path
(tools/clone_path.py)."""

import os
import subprocess
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_script_beside_a_clone_named_serq_imports_the_package(tmp_path):
    pth = os.path.join(sysconfig.get_paths()["purelib"], "serq-clone.pth")
    assert os.path.isfile(pth), "make install writes serq-clone.pth (tools/clone_path.py); run it"
    (tmp_path / "serq").symlink_to(ROOT, target_is_directory=True)
    script = tmp_path / "try.py"
    script.write_text("import serq\nprint(serq.__file__)\n"
                      "print(serq.load('serq/docs/tutorial/01_mm1.sq').observes)\n", encoding="utf-8")
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [os.path.join(ROOT, "serq", "__init__.py"), "()"]
