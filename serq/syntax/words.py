"""The words of the language, read from its grammar: the one list the
highlighters (``serq.highlight``, the VS Code grammar under ``editors/``) and
the language's size metrics are made from."""

from __future__ import annotations

import os
import re
from functools import lru_cache

_GRAMMAR = os.path.join(os.path.dirname(__file__), "grammar.lark")

# Words the grammar spells that begin a declaration (the rest are keywords of
# statements, options and clauses).
DECLARATIONS = ("fn", "let", "def", "use", "pool", "stage", "device", "engine", "queue", "workload",
                "server", "share", "gauge", "claim")


@lru_cache(maxsize=None)
def keywords() -> tuple[str, ...]:
    """Every word the grammar spells as a literal (`"hold"`, `"each"`, …),
    plus the terminals it spells as alternatives (`poisson | renewal | …`),
    sorted."""
    with open(_GRAMMAR, encoding="utf-8") as f:
        text = f.read()
    words = set(re.findall(r'"([a-z_]+)"', text))
    return tuple(sorted(words))


def declarations() -> tuple[str, ...]:
    return tuple(w for w in DECLARATIONS if w in keywords())
