"""JSON layout of the oracle files (no side effects; any Python 3).

One layout for everything the oracles print or regen.py commits, so that a
committed NAME.out.json is byte-identical to `vllm_oracle.py NAME.json`.
"""

from __future__ import annotations

import json


def dumps_output(out: dict, one_line: bool) -> str:
    """Serialize an oracle output (or a scenario).

    one_line=True: a single line (batch mode).  Otherwise each top-level key
    goes on its own line, and the entries of a "log", "requests" or "sessions"
    list each on their own line -- still plain JSON.
    """
    if one_line:
        return json.dumps(out)
    parts = []
    for key, val in out.items():
        if key in ("log", "requests", "sessions") and isinstance(val, list) and val:
            body = ",\n".join("  " + json.dumps(e) for e in val)
            parts.append(f"{json.dumps(key)}: [\n{body}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(val)}")
    return "{" + ",\n".join(parts) + "}"
