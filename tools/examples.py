"""The example programs: every `examples/**/*.sq` but the libraries
(`examples/lib/`) and the instance files (`examples/*/instances/`), as
repository-relative paths with `/`, sorted.  The one list the checks, the
golden files, the regression corpus and the tests read."""

from __future__ import annotations

import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def programs() -> list[str]:
    out = []
    for p in glob.glob(os.path.join(ROOT, "examples", "**", "*.sq"), recursive=True):
        rel = os.path.relpath(p, ROOT).replace(os.sep, "/")
        parts = rel.split("/")
        if parts[1] == "lib" or "instances" in parts:
            continue
        out.append(rel)
    return sorted(out)
