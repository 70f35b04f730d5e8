"""The wheel's package data from outside the package: the example programs
(the oracle commands link examples/oracle, examples/replay and examples/lib
at run time) and the harness scripts (tools/oracle; SGLang's imports its
stubs and their torchvision dist-info from tools/oracle/sglang), copied under
serq/_data/ so that a non-editable ``pip install .`` runs every command
(serq.paths finds them).  Everything else is in pyproject.toml."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

# (source directory, the file names it ships: a suffix, or "*" for all)
SHIPPED = (("examples", (".sq", ".json", ".jsonl", ".csv")),
           ("tools/oracle", (".py",)),
           ("tools/oracle/tiny_model", "*"),
           ("tools/oracle/sglang", ("stubs.py",)),
           ("tools/oracle/sglang/torchvision-0.28.0.dist-info", "*"))


class BuildWithData(build_py):
    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        for top, kinds in SHIPPED:
            for dirpath, dirnames, files in os.walk(os.path.join(here, top)):
                rel = os.path.relpath(dirpath, here)
                if top in ("tools/oracle", "tools/oracle/sglang") and rel != top:
                    dirnames[:] = []       # the harness scripts only; their data below
                    continue
                for f in files:
                    if kinds == "*" or f.endswith(kinds):
                        dest = os.path.join(self.build_lib, "serq", "_data", rel, f)
                        os.makedirs(os.path.dirname(dest), exist_ok=True)
                        shutil.copyfile(os.path.join(dirpath, f), dest)


setup(cmdclass={"build_py": BuildWithData})
