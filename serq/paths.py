"""Where the files serQ reads at run time are: the example programs the
oracle commands link (examples/oracle, examples/replay, examples/lib) and
vLLM's harness scripts (tools/oracle).  In a source tree (and an editable
install) they are the repository's; a wheel (``pip install .``) carries
copies under ``serq/_data/`` (setup.py)."""

from __future__ import annotations

import functools
import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def root() -> str:
    """The directory that holds ``examples/`` and ``tools/oracle/``: the
    repository's when serq is imported from one, else the package data's."""
    repo = os.path.dirname(_PACKAGE)
    if os.path.isdir(os.path.join(repo, "examples", "oracle")) and \
            os.path.isdir(os.path.join(repo, "tools", "oracle")):
        return repo
    return os.path.join(_PACKAGE, "_data")
