"""Libraries and definitions: `use` (each library parsed once), `def`, and the items above main."""

from __future__ import annotations

import os
from typing import Optional

from ..diag import SerqError, Sources, read_text
from ..syntax import ast as A
from ..syntax.parser import parse_library
from . import catalogue as C
from .nodes import LinkAbort


def parse_once(parsed: Optional[dict], text: str, path: str, how):
    """``how(text, path)`` (a program's or a library's parse), kept in
    ``parsed`` when it is a dict."""
    if parsed is None:
        return how(text, path)
    key = (how, path, text)
    tree = parsed.get(key)
    if tree is None:
        tree = parsed[key] = how(text, path)
    else:
        Sources.add(path, text)     # a diagnostic shows this text, as a parse would have it
    return tree


class Libraries:
    """*Part of Linker*: the items above main and a library's, `use` and `def`."""

    def top_item(self, item, file: str, in_main: bool = False):
        if isinstance(item, A.Use):
            self.use(item, file)
        elif isinstance(item, A.Def):
            self.define(item)
        elif isinstance(item, A.Let):
            self.let(item, in_main)
        else:  # pragma: no cover - the grammar allows nothing else at top level
            self.diag.add("E105", "only constants, definitions and imports precede main", item.span)

    def use(self, item: A.Use, file: str, in_main: bool = False, declared: Optional[list] = None):
        """A library's definitions; its queues and relations, when it is used
        inside main, are appended to ``declared``, to be declared where the
        `use` stands (``link``)."""
        if item.path == "std/args":
            self.uses_args = True
            return
        base = os.path.dirname(file)
        path = os.path.normpath(os.path.join(base, item.path))
        if path in self.used_libraries:
            return
        if not os.path.isfile(path) or path == os.path.normpath(self.path):
            why = ("it is this program" if os.path.isfile(path) else
                   f"it is a directory ({path})" if os.path.isdir(path) else f"no such file (looked for {path})")
            self.diag.add("E230", f"cannot read library `{item.path}`: {why}", item.span,
                          help="a library is a file of definitions next to the program that uses it; "
                               "the standard one is `use \"std/args\";`")
            return
        try:
            text = read_text(path, "library ")
        except SerqError as e:
            self.diag.items.extend(e.diagnostics)
            return
        self.used_libraries.add(path)
        self.files.append(path)
        try:
            lib = parse_once(self.parsed, text, path, parse_library)
        except SerqError as e:
            self.diag.items.extend(e.diagnostics)
            return
        for sub in lib.top:
            if isinstance(sub, A.Let):
                self.diag.add("E231", "a library holds definitions and imports, not constants",
                              sub.span, help="declare the constant in the program that uses the library")
                continue
            if isinstance(sub, (A.QueueDecl, A.Relation)):
                if declared is None:
                    self.diag.add("E289", "a library's queues and relations are declared where the program "
                                  "uses it: `use` it inside main", item.span,
                                  notes=[f"the library declares one at {sub.span}"],
                                  help="a `use` above main brings only definitions")
                else:
                    declared.append(sub)
                continue
            try:
                if isinstance(sub, A.Use):
                    self.use(sub, path, in_main, declared)
                else:
                    self.top_item(sub, path)
            except LinkAbort:
                pass

    def define(self, d: A.Def):
        self.declare(d.name, "def", d.name_span)
        if d.name in C.FUNCTIONS or d.name in C.POOL_QUERIES or d.name in C.STAGE_QUERIES or \
                d.name in C.OTHER_FUNCTIONS or d.name in C.AGGREGATES or d.name in C.KEYWORDS:
            self.diag.add("E211", f"`{d.name}` is a function of the language; a definition takes "
                          "another name", d.name_span)
        for p in d.params:
            if p in C.SUPPLIED or p in C.FUNCTIONS or p in C.KEYWORDS:
                self.diag.add("E211", f"`{p}` is a name the language supplies; a parameter takes "
                              "another name", d.span)
        if len(set(d.params)) != len(d.params):
            self.diag.add("E210", f"definition `{d.name}` names a parameter twice", d.span)
        if d.body is not None:
            assigned = _assigned_names(d.body)
            for p in d.params:
                if p in assigned:
                    self.diag.add("E214", f"`{p}` is a parameter of `{d.name}` and its body assigns it",
                                  assigned[p], help="a definition's body assigns attributes of the program, "
                                                    "not its parameters")
        self.defs[d.name] = d


def _assigned_names(block) -> dict:
    """Each name the block assigns, at its first assignment."""
    out = {}

    def visit(x):
        if isinstance(x, (A.Set, A.SizeDecl, A.CostDecl, A.Choose)):
            out.setdefault(x.name, x.name_span)
        if isinstance(x, A.Hold):
            for b in x.admission:
                out.setdefault(b.name, b.span)
        if isinstance(x, A.Node):
            for k, v in vars(x).items():
                if isinstance(v, (A.Node, list)):
                    visit(v)
        elif isinstance(x, list):
            for y in x:
                visit(y)

    visit(block)
    return out

