"""serQ's LALR(1) driver: lark's parser (``parser="lalr"``, its contextual
lexer, ``propagate_positions`` and ``maybe_placeholders``) run from the
tables lark built (serq.syntax.tables), without importing lark.

It gives what lark gives: the same tree (rule names, children, None for an
absent ``[x]``, inlined ``_rule``s and ``?rule``s, every node's positions,
the containers' included) and, on bad input, the same error (the token, its
place and the terminals expected; the character and the terminals allowed),
with classes of the same names.  tests/test_parser_tables.py and the fuzz
kind ``parser`` (tests/fuzz) hold it to lark on every example and on
mutants of them.

The lexer is lark's contextual lexer: in each parser state, the first of
that state's terminals, in lark's order, that matches at the position
(lark joins them into one pattern, ``A|B|…``, whose match is exactly that);
a string terminal a pattern's match spells (a keyword matched as a name) is
retyped to it; the ignored terminals are dropped; where no terminal of the
state matches, lark's error: the token all terminals make there, unexpected
here, else the character.  Instead of compiling a pattern for each state (a
third of lark's start-up), the driver tries only the terminals that can
begin with the character at the position (the tables say which), each
compiled once when first needed.
"""

from __future__ import annotations

import re


class Token(str):
    """A token: its text, with its terminal's name and its place."""

    __slots__ = ("type", "value", "start_pos", "line", "column", "end_line", "end_column", "end_pos")

    def __new__(cls, type_, value, start_pos=None, line=None, column=None, end_line=None, end_column=None,
                end_pos=None):
        t = str.__new__(cls, value)
        t.type = type_
        t.value = value
        t.start_pos = start_pos
        t.line = line
        t.column = column
        t.end_line = end_line
        t.end_column = end_column
        t.end_pos = end_pos
        return t

    def __repr__(self):
        return f"Token({self.type!r}, {self.value!r})"

    def __reduce__(self):
        return (Token, (self.type, self.value, self.start_pos, self.line, self.column, self.end_line,
                        self.end_column, self.end_pos))


class Meta:
    """A node's place: ``line``, ``column``, ``start_pos`` and the ends, and
    the ``container_…`` of each (the place of the text its rule read,
    delimiters included); none of them while ``empty``."""

    def __init__(self):
        self.empty = True


class Tree:
    __slots__ = ("data", "children", "meta")

    def __init__(self, data: str, children: list):
        self.data = data
        self.children = children
        self.meta = Meta()

    def __repr__(self):
        return f"Tree({self.data!r}, {self.children!r})"


class UnexpectedInput(Exception):
    line: int
    column: int
    pos_in_stream: int


class UnexpectedCharacters(UnexpectedInput):
    """No terminal of the parser's state matches at ``pos_in_stream``, nor
    any other; ``allowed``: the state's terminals."""

    def __init__(self, text: str, pos: int, line: int, column: int, allowed: set):
        self.char = text[pos]
        self.pos_in_stream = pos
        self.line = line
        self.column = column
        self.allowed = allowed
        super().__init__(f"No terminal matches {self.char!r} in the current parser context, "
                         f"at line {line} col {column}")


class UnexpectedToken(UnexpectedInput):
    """``token`` cannot stand where it is; ``expected``: the terminals that can."""

    def __init__(self, token: Token, expected: set):
        self.token = token
        self.expected = expected
        self.line = token.line
        self.column = token.column
        self.pos_in_stream = token.start_pos
        super().__init__(f"Unexpected token {token!r} at line {token.line}, column {token.column}. "
                         f"Expected one of: {sorted(expected)}")


class _NoMatch(Exception):
    pass


class _Terminal:
    __slots__ = ("name", "type", "value", "regexp", "newline", "first", "other", "literal", "_rx")

    def __init__(self, name, type_, value, regexp, newline, first, other):
        self.name = name
        self.type = type_          # "str" or "re", as lark says
        self.value = value         # the string, or the pattern as written
        self.regexp = regexp
        self.newline = bool(newline)
        self.first = frozenset(first)
        self.other = bool(other)
        self.literal = value if type_ == "str" else None
        self._rx = None

    def match(self, text: str, pos: int):
        if self.literal is not None:
            return self.literal if text.startswith(self.literal, pos) else None
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(self.regexp)
        m = rx.match(text, pos)
        return m.group() if m else None


class _Lexer:
    """One state's lexer: its terminals in lark's order, the retyping of a
    pattern's match to a keyword, and for each character the terminals that
    can begin there."""

    __slots__ = ("order", "unless", "allowed", "_by_char")

    def __init__(self, order: list, unless: dict, ignore: frozenset):
        self.order = order
        self.unless = unless
        allowed = {t.name for t in order} - ignore
        self.allowed = allowed or {"<END-OF-FILE>"}
        self._by_char: dict = {}

    def candidates(self, ch: str) -> tuple:
        c = self._by_char.get(ch)
        if c is None:
            if ch < "\x80":
                c = tuple(t for t in self.order if ch in t.first)
            else:
                c = tuple(t for t in self.order if t.other)
            self._by_char[ch] = c
        return c


class _Rows(dict):
    """The parser's states, each read into a dict (symbol: a state to shift
    to, or -1 - the rule to reduce by) when first reached."""

    def __init__(self, rows: list, symbols: list):
        super().__init__()
        self.rows = rows
        self.symbols = symbols

    def __missing__(self, state):
        flat = self.rows[state][1]
        row = self[state] = dict(zip(map(self.symbols.__getitem__, flat[0::2]), flat[1::2]))
        return row


class Parser:
    """The parser of one grammar's tables (serq.syntax.tables)."""

    def __init__(self, data: dict):
        self.terminals = [_Terminal(*t) for t in data["terminals"]]
        by_name = {t.name: t for t in self.terminals}
        self.ignore = frozenset(data["ignore"])
        lexers = []
        for order, unless in data["lexers"]:
            lexers.append(_Lexer([self.terminals[i] for i in order],
                                 {self.terminals[int(k)].name: _retypes(v, self.terminals)
                                  for k, v in unless.items()}, self.ignore))
        self.root = lexers[data["root"]]
        self.state_lexer = [lexers[s[0]] for s in data["states"]]
        self.states = _Rows(data["states"], data["symbols"])
        self.rules = [tuple(r) for r in data["rules"]]
        self.start = data["start"]
        self.end = data["end"]
        self.by_name = by_name

    # -- lexing --
    def _next(self, lx: _Lexer, text: str, at: list):
        """The next token that is not ignored, from position ``at`` = [pos,
        line, start of the line] (moved past it); None at the end; _NoMatch
        where no terminal of ``lx`` matches."""
        pos, line, line_start = at
        n = len(text)
        ignore = self.ignore
        while pos < n:
            for t in lx.candidates(text[pos]):
                value = t.match(text, pos)
                if value is not None:
                    break
            else:
                at[0], at[1], at[2] = pos, line, line_start
                raise _NoMatch()
            type_ = t.name
            retype = lx.unless.get(type_)
            ignored = type_ in ignore
            tok = None
            if not ignored or retype is not None:
                tok = Token(type_, value, pos, line, pos - line_start + 1)
            if t.newline:
                k = value.count("\n")
                if k:
                    line += k
                    line_start = pos + value.rindex("\n") + 1
            pos += len(value)
            if tok is not None:
                tok.end_line = line
                tok.end_column = pos - line_start + 1
                tok.end_pos = pos
                if retype is not None:
                    new = retype.get(value)
                    if new is not None:
                        tok.type = new
                if not ignored:
                    at[0], at[1], at[2] = pos, line, line_start
                    return tok
        at[0], at[1], at[2] = pos, line, line_start
        return None

    def _unexpected(self, lx: _Lexer, text: str, at: list):
        """What lark's contextual lexer says where its state's lexer matches
        nothing: the token the lexer of all terminals reads there, if any."""
        err = UnexpectedCharacters(text, at[0], at[1], at[0] - at[2] + 1, set(lx.allowed))
        try:
            tok = self._next(self.root, text, at)
        except _NoMatch:
            return err
        return UnexpectedToken(tok, set(lx.allowed))

    # -- parsing --
    def parse(self, text: str, start: str = "start") -> Tree:
        """The tree of ``text`` read from the rule ``start``; raises
        UnexpectedToken or UnexpectedCharacters."""
        states = self.states
        rules = self.rules
        state_lexer = self.state_lexer
        end_state = self.end[start]
        stack = [self.start[start]]
        values: list = []

        def feed(tok, is_end=False):
            ttype = tok.type
            while True:
                row = states[stack[-1]]
                code = row.get(ttype)
                if code is None:
                    raise UnexpectedToken(tok, {s for s in row if s.isupper()})
                if code >= 0:
                    if is_end:      # pragma: no cover - lark's tables never shift the end
                        raise AssertionError("shifted $END")
                    stack.append(code)
                    values.append(tok)
                    return None
                origin, size, name, expand1, include, append_none = rules[-1 - code]
                if size:
                    children = values[-size:]
                    del stack[-size:]
                    del values[-size:]
                else:
                    children = []
                value = _node(children, name, expand1, include, append_none)
                new = states[stack[-1]][origin]
                stack.append(new)
                values.append(value)
                if is_end and new == end_state:
                    return value

        at = [0, 1, 0]
        last = None
        while True:
            lx = state_lexer[stack[-1]]
            try:
                tok = self._next(lx, text, at)
            except _NoMatch:
                raise self._unexpected(lx, text, at) from None
            if tok is None:
                break
            feed(tok)
            last = tok
        if last is not None:
            end = Token("$END", "", last.start_pos, last.line, last.column, last.end_line, last.end_column,
                        last.end_pos)
        else:
            end = Token("$END", "", 0, 1, 1)
        return feed(end, True)


def _retypes(pairs: list, terminals: list) -> dict:
    out: dict = {}
    for value, i in pairs:
        out.setdefault(value, terminals[i].name)    # the first string terminal that spells it
    return out


def _node(children: list, name: str, expand1: int, include, append_none: int):
    """A rule's tree, as lark's ParseTreeBuilder makes it: the children kept
    (a None for each absent ``[x]``, an inlined ``_rule``'s children in its
    place), a ``?rule`` of one child that child, and its place from its
    first and last children's containers."""
    if include is None:
        kept = children
    else:
        kept = []
        for i, expand, nones in include:
            if nones:
                kept += [None] * nones
            if expand:
                if kept:
                    kept += children[i].children
                else:
                    kept = children[i].children
            else:
                kept.append(children[i])
        if append_none:
            kept += [None] * append_none
    if expand1 and len(kept) == 1:
        res = kept[0]
        if not isinstance(res, Tree):
            return res
    else:
        res = Tree(name, kept)
    first = _place(children)
    if first is not None:
        _take(res.meta, first, _START)
    last = _place(reversed(children))
    if last is not None:
        _take(res.meta, last, _END)
    return res


# (a place's attribute, its container's): a node's start, a node's end
_START = (("line", "container_line"), ("column", "container_column"), ("start_pos", "container_start_pos"))
_END = (("end_line", "container_end_line"), ("end_column", "container_end_column"),
        ("end_pos", "container_end_pos"))


def _take(meta: Meta, child, names) -> None:
    """One end of ``meta``'s place from ``child``'s (a token's, or a node's
    container's), kept where it is already set (an inlined ``?rule``'s
    node); its container's end always."""
    values = [getattr(child, c, getattr(child, a)) for a, c in names]
    if not hasattr(meta, names[0][0]):
        for (a, _), v in zip(names, values):
            setattr(meta, a, v)
        meta.empty = False
    for (_, c), v in zip(names, values):
        setattr(meta, c, v)


def _place(children):
    """The first child with a place: a tree's meta, or a token."""
    for c in children:
        if isinstance(c, Tree):
            if not c.meta.empty:
                return c.meta
        elif isinstance(c, Token):
            return c
    return None


# -- from the tree to what a program is made of ----------------------------------

def with_meta(f):
    """A Transformer's handler that takes the node's Meta as well:
    ``f(self, meta, children)``."""
    f.with_meta = True
    return f


class Transformer:
    """Bottom up, each tree replaced by what its rule's handler (the method
    named as the rule) returns for its children, tokens and None as they
    are; ``__default__(data, children, meta)`` for a rule with none.  No
    recursion: a tree as deep as the program nests is walked with a stack."""

    def __default__(self, data, children, meta):
        return Tree(data, children)

    def _call(self, node: Tree, children: list):
        f = getattr(self, node.data, None)
        if f is None:
            return self.__default__(node.data, children, node.meta)
        if getattr(f, "with_meta", False):
            return f(node.meta, children)
        return f(children)

    def transform(self, tree: Tree):
        stack = [(tree, iter(tree.children), [])]
        while True:
            node, it, done = stack[-1]
            for c in it:
                if isinstance(c, Tree):
                    stack.append((c, iter(c.children), []))
                    break
                done.append(c)
            else:
                stack.pop()
                value = self._call(node, done)
                if not stack:
                    return value
                stack[-1][2].append(value)
