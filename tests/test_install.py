"""A normal, non-editable `pip install .` into a fresh venv makes every
command work: the oracle programs and vLLM's harness scripts are package
data (setup.py, serq/paths.py).  About 30 s (a wheel built with pip's own
build isolation, its setuptools from pip's cache); the dependencies are the
dev venv's, seen through a .pth file, so that nothing else is downloaded."""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = ("pyproject.toml", "setup.py", "README.md", "serq", "leangen", "examples", "tools/oracle")
SCENARIO = os.path.join(ROOT, "tools", "oracle", "scenarios", "alone.json")
MG1 = os.path.join(ROOT, "examples", "single-turn", "mg1.sq")

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    for rel in SHIPPED:
        a, b = os.path.join(ROOT, rel), src / rel
        if os.path.isdir(a):
            shutil.copytree(a, b, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "_data"))
        else:
            os.makedirs(b.parent, exist_ok=True)
            shutil.copyfile(a, b)
    env = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    site = subprocess.run([str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # the dependencies: the dev venv's site-packages, after the new venv's own
    # (its .pth files are not read, so the dev venv's editable serq is not seen)
    with open(os.path.join(site, "serq-test-deps.pth"), "w", encoding="utf-8") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return env, tmp


def _serq(venv, *args):
    env, tmp = venv
    return subprocess.run([str(env / "bin" / "serq"), *args], capture_output=True, text=True, cwd=str(tmp))


def _here(*args):
    return subprocess.run([sys.executable, "-m", "serq.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_the_installed_package_is_not_the_source_tree(venv):
    env, _ = venv
    r = subprocess.run([str(env / "bin" / "python"), "-c", "import serq, serq.paths; print(serq.__file__); "
                        "print(serq.paths.root())"], capture_output=True, text=True, cwd="/")
    module, root = r.stdout.split()
    assert module.startswith(str(env)) and root == os.path.join(os.path.dirname(module), "_data")
    # the report's JSON Schema ships beside the package, as in the tree
    with open(os.path.join(os.path.dirname(module), "report.schema.json"), encoding="utf-8") as f, \
            open(os.path.join(ROOT, "serq", "report.schema.json"), encoding="utf-8") as g:
        assert f.read() == g.read()


def test_the_installed_oracle_runs_its_program_from_package_data(venv):
    """`serq oracle run` links examples/oracle/vllm_request.sq: from the
    wheel's copy, run from a directory that has no examples/."""
    got, want = _serq(venv, "oracle", "run", SCENARIO), _here("oracle", "run", SCENARIO)
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout and '"steps"' in got.stdout


def test_the_installed_sglang_harness_has_its_stubs(venv):
    """SGLang's harness imports tools/oracle/sglang/stubs.py and gives
    transformers the torchvision dist-info beside it (a user points
    SERQ_SGLANG_VENV at an environment): both ship, the scenarios do not."""
    env, _ = venv
    r = subprocess.run([str(env / "bin" / "python"), "-c", "import serq.paths; print(serq.paths.root())"],
                       capture_output=True, text=True, cwd="/")
    data = os.path.join(r.stdout.strip(), "tools", "oracle")
    for rel in ("sglang_oracle.py", "sglang/stubs.py", "sglang/torchvision-0.28.0.dist-info/METADATA"):
        with open(os.path.join(data, rel), "rb") as f, open(os.path.join(ROOT, "tools", "oracle", rel), "rb") as g:
            assert f.read() == g.read(), rel
    assert sorted(set(os.listdir(os.path.join(data, "sglang"))) - {"__pycache__"}) == \
        ["stubs.py", "torchvision-0.28.0.dist-info"]


def test_the_installed_run_prints_the_same_report(venv):
    got, want = _serq(venv, "run", MG1, "--horizon", "300", "--json"), _here("run", MG1, "--horizon", "300", "--json")
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
