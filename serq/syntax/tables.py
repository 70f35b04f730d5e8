"""The parser's tables, built once from the grammar by lark and kept beside
it (``grammar.tables``), so that a command runs the LALR(1) automaton with
serQ's own driver (serq.syntax.lalr) and never imports lark.

The file is a header line naming the grammar it was built from (its CRC-32
and length: a key, not a seal; ``make check`` compares the whole file) and
the lark that built it, then JSON: the terminals, the contextual lexer of
every parser state, the rules with the shape lark gives each one's tree
(which children it keeps, where ``[x]`` leaves a None, which rule is
inlined), and the parser's states, numbered canonically (breadth first from
the start states, each row's symbols in name order), so one grammar and one
lark give the same bytes whichever run built them.  Everything is read off
the objects lark builds for the grammar, never worked out again here: the
order each state's lexer tries its terminals in, the keywords a name is
retyped to, the shifts and reductions.  The one thing computed here is each
terminal's first characters (a superset: a terminal not listed for a
character cannot match there), with which the driver skips the terminals
that cannot start at a position instead of compiling each state's union of
patterns, as lark does, in every process.

A command uses the file where its header names this grammar; otherwise (the
grammar was edited, the file is missing or unreadable) it builds the tables
from the grammar with lark, in memory: the tables are a cache, never a
second grammar.  ``tools/gen_parser.py`` writes the file and ``make check``
holds it current; tests/test_parser_tables.py holds the driver to lark's
parser, trees and errors alike.
"""

from __future__ import annotations

import json
import os
import zlib
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMAR = os.path.join(HERE, "grammar.lark")
TABLES = os.path.join(HERE, "grammar.tables")
FORMAT = "serq-parser-tables 2"

START = ("start", "library", "expr_start", "instance")
# what lark builds the parser with (the driver reproduces exactly this)
OPTIONS = dict(parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True,
               start=list(START))


def read_grammar() -> bytes:
    with open(GRAMMAR, "rb") as f:
        return f.read()


def key(grammar: bytes) -> str:
    return f"grammar={zlib.crc32(grammar):08x}/{len(grammar)}"


def header(grammar: bytes, lark_version: str) -> bytes:
    return f"{FORMAT} {key(grammar)} lark={lark_version}\n".encode()


def read(grammar: bytes):
    """The tables of this grammar from the file, or None where the file is
    another grammar's (or missing, or unreadable)."""
    try:
        with open(TABLES, "rb") as f:
            head = f.readline().decode("ascii", "replace").split()
            if head[:3] != FORMAT.split() + [key(grammar)]:
                return None
            return json.loads(f.read())
    except (OSError, ValueError):   # a cache that cannot be read is rebuilt, never an error
        return None


def load() -> dict:
    """The tables of the grammar as it is now: from the file, else built."""
    grammar = read_grammar()
    data = read(grammar)
    if data is None:
        data = json.loads(body(build(grammar)))
    return data


# -- building the tables with lark (tools/gen_parser.py; a stale file) ----------

def build_lark(grammar: bytes):
    """lark's parser of the grammar: what the tables are read from, and the
    reference the driver is held to."""
    import lark
    return lark.Lark(grammar.decode("utf-8"), **OPTIONS)


def tables(grammar: bytes) -> bytes:
    """The file's bytes for this grammar, built by the lark installed."""
    import lark
    return header(grammar, lark.__version__) + body(build(grammar))


def build(grammar: bytes) -> dict:
    return extract(build_lark(grammar))


def extract(lk) -> dict:
    """The tables read off lark's parser ``lk``."""
    from lark.lexer import PatternStr
    from lark.parse_tree_builder import (ChildFilterLALR, ChildFilterLALR_NoPlaceholders, ExpandSingleChild,
                                         PropagatePositions)
    from lark.parsers.lalr_analysis import Shift
    from lark.tree import Tree as LarkTree

    if lk.options.postlex is not None or lk.options.lexer_callbacks or lk.options.transformer is not None \
            or lk.options.g_regex_flags or lk.options.regex or lk.options.use_bytes:
        raise ValueError("the driver reproduces lark's LALR parser without a postlexer, lexer callbacks, "
                         "a transformer, regex flags, the regex module or bytes")
    terms = sorted(lk.terminals, key=lambda t: t.name)
    tindex = {t.name: i for i, t in enumerate(terms)}
    for t in terms:
        if t.pattern.flags:
            raise ValueError(f"terminal {t.name}: the driver matches a string terminal as the string: no flags")
    ignore = sorted(lk.lexer_conf.ignore)

    # the contextual lexer: each state's scanner (terminals in the order lark
    # tries them, the string terminals a pattern's match is retyped to)
    frontend = lk.parser
    contextual = frontend.lexer
    lexers: list = []
    lexer_index: dict = {}

    def lexer_of(basic) -> int:
        scanner = basic.scanner
        if set(basic.ignore_types) != set(ignore):     # pragma: no cover - lark gives every lexer the same
            raise ValueError("a lexer with other ignored terminals")
        order = [tindex[t.name] for t in scanner.terminals]
        unless = {}
        for name, cb in sorted(basic.callback.items()):
            if type(cb).__name__ != "UnlessCallback":
                raise ValueError(f"lexer callback {cb!r} on {name}: not lark's keyword retyping")
            strs = cb.scanner.terminals
            if not all(isinstance(s.pattern, PatternStr) for s in strs):
                raise ValueError(f"lexer callback on {name}: not string terminals")
            unless[str(tindex[name])] = [[s.pattern.value, tindex[s.name]] for s in strs]
        entry = json.dumps([order, unless], sort_keys=True)
        if entry not in lexer_index:
            lexer_index[entry] = len(lexers)
            lexers.append([order, unless])
        return lexer_index[entry]

    root = lexer_of(contextual.root_lexer)

    # the rules, in a canonical order, and the shape of each one's tree
    rules = sorted(lk.rules, key=lambda r: (r.origin.name, r.order, [s.name for s in r.expansion], r.alias or ""))
    rindex = {r: i for i, r in enumerate(rules)}
    if len(rindex) != len(rules):   # pragma: no cover - lark refuses a rule written twice
        raise ValueError("two rules alike")
    out_rules = []
    for r in rules:
        f = lk._callbacks[r]
        if not isinstance(f, PropagatePositions) or f.node_filter is not None:
            raise ValueError(f"rule {r}: the driver propagates positions as lark does with propagate_positions=True")
        f = f.node_builder
        include, append_none = None, 0
        if isinstance(f, ChildFilterLALR):
            include = [[i, int(bool(x)), n] for i, x, n in f.to_include]
            append_none = f.append_none
            f = f.node_builder
        elif isinstance(f, ChildFilterLALR_NoPlaceholders):
            include = [[i, int(bool(x)), 0] for i, x in f.to_include]
            f = f.node_builder
        expand1 = 0
        if isinstance(f, ExpandSingleChild):
            expand1 = 1
            f = f.node_builder
        if getattr(f, "func", None) is not LarkTree or len(f.args) != 1 or f.keywords:
            raise ValueError(f"rule {r}: a tree builder the driver does not know: {f!r}")
        out_rules.append([r.origin.name, len(r.expansion), f.args[0], expand1, include, append_none])

    # the states, numbered breadth first from the start states
    table = frontend.parser._parse_table
    states = table.states
    order: dict = {}
    queue: deque = deque()
    for s in START:
        st = table.start_states[s]
        if st not in order:
            order[st] = len(order)
            queue.append(st)
    while queue:
        row = states[queue.popleft()]
        for sym in sorted(row):
            action, arg = row[sym]
            if action is Shift and arg not in order:
                order[arg] = len(order)
                queue.append(arg)
    if len(order) != len(states):     # pragma: no cover - every state is reachable in an LALR automaton
        raise ValueError("unreachable parser states")
    symbols = sorted({sym for row in states.values() for sym in row})
    sindex = {s: i for i, s in enumerate(symbols)}
    out_states = []
    for st in sorted(order, key=order.get):
        row = states[st]
        acts = []
        for sym in sorted(row):
            action, arg = row[sym]
            acts += [sindex[sym], order[arg] if action is Shift else -1 - rindex[arg]]
        out_states.append([lexer_of(contextual.lexers[st]), acts])

    terminals = []
    for t in terms:
        p = t.pattern
        regexp = p.to_regexp()
        first, other = _first(regexp)
        terminals.append([t.name, p.type, p.value, regexp, int(t.name in contextual.root_lexer.newline_types),
                          first, int(other)])
    return {"terminals": terminals, "ignore": ignore, "lexers": lexers, "root": root, "rules": out_rules,
            "symbols": symbols, "states": out_states, "start": {s: order[table.start_states[s]] for s in START},
            "end": {s: order[table.end_states[s]] for s in START}}


def body(data: dict) -> bytes:
    """The tables as JSON, a state, a rule, a lexer or a terminal a line."""
    parts = []
    for k in ("terminals", "ignore", "root", "start", "end", "lexers", "rules", "symbols", "states"):
        v = data[k]
        if isinstance(v, list) and k not in ("ignore", "symbols"):
            inner = ",\n".join(json.dumps(x, sort_keys=True, separators=(",", ":")) for x in v)
            parts.append(f"{json.dumps(k)}: [\n{inner}\n]")
        else:
            parts.append(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}")
    return ("{\n" + ",\n".join(parts) + "\n}\n").encode("ascii")


# -- a terminal's first characters ----------------------------------------------

def _first(regexp: str) -> tuple[str, bool]:
    """The ASCII characters a match of ``regexp`` can begin with, and whether
    it can begin with another: a superset (what is not understood counts as
    any character)."""
    from re import _parser as P   # noqa: the pattern's syntax tree, as re compiles it
    tree = P.parse(regexp)
    if tree.state.flags & ~P.SRE_FLAG_UNICODE:    # (?i), (?s), …: said as any character
        return "".join(sorted(ANY)), True
    chars, other, _ = _first_seq(tree, P)
    return "".join(sorted(chars)), other


ANY = frozenset(chr(c) for c in range(128))


def _first_seq(items, P) -> tuple[set, bool, bool]:
    """(first ASCII characters, another possible, can match empty) of a sequence."""
    chars: set = set()
    other = False
    for item in items:
        c, o, empty = _first_item(item, P)
        chars |= c
        other = other or o
        if not empty:
            return chars, other, False
    return chars, other, True


def _first_item(item, P) -> tuple[set, bool, bool]:
    op, av = item
    if op is P.LITERAL:
        return {chr(av)} if av < 128 else set(), av >= 128, False
    if op in (P.NOT_LITERAL, P.IN, P.ANY):
        from re import _compiler
        sub = P.SubPattern(P.State(), [item])
        rx = _compiler.compile(sub, 0)
        return {ch for ch in ANY if rx.fullmatch(ch)}, True, False
    if op is P.BRANCH:
        chars, other, empty = set(), False, False
        for alt in av[1]:
            c, o, e = _first_seq(alt, P)
            chars |= c
            other = other or o
            empty = empty or e
        return chars, other, empty
    if op is P.SUBPATTERN:
        group, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            return set(ANY), True, True
        return _first_seq(sub, P)
    if op in (P.MAX_REPEAT, P.MIN_REPEAT, getattr(P, "POSSESSIVE_REPEAT", None)):
        lo, hi, sub = av
        c, o, e = _first_seq(sub, P)
        return c, o, e or lo == 0
    if op is getattr(P, "ATOMIC_GROUP", None):
        return _first_seq(av, P)
    if op in (P.AT, P.ASSERT, P.ASSERT_NOT):    # zero-width: what follows begins the match
        return set(), False, True
    return set(ANY), True, True     # not understood: any character, and perhaps none
