"""The parser's tables, built once from the grammar and kept beside it
(``grammar.tables``), so that a command reads them instead of building the
LALR(1) automaton from ``grammar.lark`` in every process.

The file is a header line naming the grammar it was built from (its SHA-256)
and the lark that built it, then lark's own serialized parser (``Lark.save``'s
content), with its states numbered canonically: breadth first from the start
states, each state's tokens in name order, so the same grammar and the same
lark give the same bytes whichever run built them.  A command uses the file
only when both the grammar's digest and the lark version match; otherwise
(the grammar was edited, another lark is installed, the file is unreadable)
it builds the parser from the grammar as before: the tables are a cache,
never a second grammar.  ``tools/gen_parser.py`` writes the file and
``make check`` holds it current.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMAR = os.path.join(HERE, "grammar.lark")
TABLES = os.path.join(HERE, "grammar.tables")
FORMAT = "serq-parser-tables 1"

# what the parser is built with (serq.syntax.parser)
OPTIONS = dict(parser="lalr", propagate_positions=True, maybe_placeholders=True,
               start=["start", "library", "expr_start", "instance"])


def header(grammar: bytes, lark_version: str) -> bytes:
    return f"{FORMAT} grammar={hashlib.sha256(grammar).hexdigest()} lark={lark_version}\n".encode()


def build(grammar: bytes):
    """The parser, built from the grammar's text."""
    import lark
    return lark.Lark(grammar.decode("utf-8"), **OPTIONS)


def load(grammar: bytes, lark):
    """The parser from the tables, or None where they are not this grammar's
    and this lark's (or cannot be read)."""
    try:
        with open(TABLES, "rb") as f:
            if f.readline() != header(grammar, lark.__version__):
                return None
            return lark.Lark.load(f)
    except Exception:   # noqa: BLE001 - a cache that cannot be read is rebuilt, never an error
        return None


# -- writing the tables (tools/gen_parser.py) ----------------------------------

def _canonical(data: dict) -> dict:
    """Renumber the LALR states (and the tokens' indices) canonically: the
    automaton is the same, its numbering no longer depends on the order
    lark's analysis happened to visit sets in."""
    frontend = data["parser"]
    p = frontend["parser"]
    tokens = p["tokens"]
    names = sorted(set(tokens.values()))
    tok = {n: i for i, n in enumerate(names)}
    states = p["states"]
    order: dict = {}
    queue: deque = deque()
    for s in frontend["parser_conf"]["start"]:
        st = p["start_states"][s]
        if st not in order:
            order[st] = len(order)
            queue.append(st)
    while queue:
        acts = states[queue.popleft()]
        for k in sorted(acts, key=tokens.get):
            action, arg = acts[k]
            if action == 0 and arg not in order:      # a shift
                order[arg] = len(order)
                queue.append(arg)
    if len(order) != len(states):     # pragma: no cover - every state is reachable in an LALR automaton
        raise AssertionError("unreachable parser states")
    p["tokens"] = {i: n for i, n in enumerate(names)}
    p["states"] = {order[st]: {tok[tokens[k]]: ((0, order[v[1]]) if v[0] == 0 else v)
                               for k, v in sorted(states[st].items(), key=lambda kv: tokens[kv[0]])}
                   for st in sorted(order, key=order.get)}
    p["start_states"] = {k: order[v] for k, v in p["start_states"].items()}
    p["end_states"] = {k: order[p["end_states"][k]] for k in p["start_states"]}
    return data


def _plain(x):
    """`x` as JSON can say it (dicts as pairs, tuples marked), to be read back
    as fresh objects: pickle's bytes then depend on the values alone, not on
    which objects the build happened to share."""
    if isinstance(x, dict):
        return {"d": [[_plain(k), _plain(v)] for k, v in x.items()]}
    if isinstance(x, tuple):
        return {"t": [_plain(v) for v in x]}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def _back(x):
    if isinstance(x, dict):
        if "d" in x:
            return {_back(k): _back(v) for k, v in x["d"]}
        return tuple(_back(v) for v in x["t"])
    if isinstance(x, list):
        return [_back(v) for v in x]
    return x


def tables(grammar: bytes) -> bytes:
    """The file's bytes for this grammar, built by the lark installed."""
    import lark
    from lark.grammar import Rule
    from lark.lexer import TerminalDef
    lk = build(grammar)
    data, memo = lk.memo_serialize([TerminalDef, Rule])
    content = {"data": _canonical(data), "memo": memo}
    fresh = _back(json.loads(json.dumps(_plain(content))))
    return header(grammar, lark.__version__) + pickle.dumps(fresh, protocol=4)
