"""Names and scopes: what each name is, the attributes assignments make, the names a request keeps its own."""

from __future__ import annotations

from typing import Optional

from ..diag import Span, did_you_mean
from ..ir import model as M
from ..syntax import ast as A
from . import catalogue as C
from . import queues
from .env import Env
from .nodes import a_, names_read


class Names:
    """*Part of Linker*: `declare` (one kind per name, the language's own
    kept apart), `kind_of`, unknown names, and the attributes collected
    before anything is lowered."""

    def declare(self, name: str, kind: str, span: Span):
        if name in C.SUPPLIED and kind != "register":
            self.diag.add("E211", f"`{name}` is a name the language supplies; {a_(kind)} takes another name",
                          span, help="context variables, `inf`, `running`, `waiting` and `batch` are "
                                     "kept apart from the program's names")
            return
        builtin = set(M.BUILTIN_ATTRS[:4]) | (set(M.TRACE_ATTRS) if self.has_trace() else set())
        if name in builtin and kind not in ("attribute",):
            self.diag.add("E211", f"`{name}` is a built-in attribute; {a_(kind)} takes another name", span)
            return
        prev = self.kinds.get(name)
        if prev is not None:
            pkind, pspan = prev
            if pkind == kind and kind in ("observe", "attribute"):
                return
            if pkind == "attribute" and pspan.file == span.file and \
                    (span.line, span.col) < (pspan.line, pspan.col):
                # the attributes are collected first: a declaration above the set is the name's
                self.diag.add("E210", f"`{name}` is already {a_(kind)}; a set cannot make it an attribute",
                              pspan, notes=[f"the {kind} is declared at {span}"])
                self.kinds[name] = (kind, span)
                return
            if pkind == kind:
                self.diag.add("E210", f"{kind} `{name}` is declared twice", span,
                              notes=[f"first declared at {pspan}"])
            else:
                self.diag.add("E210", f"`{name}` is already {a_(pkind)}; {a_(kind)} cannot take its name", span,
                              notes=[f"the {pkind} is declared at {pspan}"])
            return
        self.kinds[name] = (kind, span)

    def has_trace(self) -> bool:
        wl = self.find_workload()
        return wl is not None and any(isinstance(i, A.WTrace) for i in wl.items)

    def find_workload(self) -> Optional[A.Workload]:
        for item in self.prog.main.items:
            if isinstance(item, A.Workload):
                return item
        return None

    def kind_of(self, n: str) -> Optional[str]:
        k = self.kinds.get(n)
        return k[0] if k else None

    def unknown(self, n: str, span: Span, env: Env, what: str = "name"):
        cands = set(self.consts) | set(self.attr_index) | set(C.CTX_BARE) | set(self.kinds) | \
            set(env.subst) | set(self.register_index)
        self.fail("E201", f"unknown {what} `{n}`", span, help=did_you_mean(n, cands), env=env)

    def check_request_name(self, n: str, span: Span, env: Env):
        owner = self.request_names.get(n)
        if owner is not None and env.in_request is None and self.strict_request_names:
            self.fail("E213", f"`{n}` is engine `{owner}`'s own: the rest of the program neither "
                      "reads nor sets it", span, env=env,
                      help=f"read what the request marks (`mark m;` is `{owner}.m`)")

    def collect_attributes(self, items):
        """Every name a set, choose, Size/Cost or read binding assigns."""
        found: list[tuple[str, Span]] = []

        def stmts(lst, acc=found):
            for s in lst:
                stmt(s, acc)

        def stmt(s, acc):
            if isinstance(s, (A.Set, A.SizeDecl, A.CostDecl)):
                acc.append((s.name, s.name_span))
            elif isinstance(s, A.CostRecord):
                for f in s.fields:
                    acc.append((f"{s.name}.{f.resource}", s.name_span))
            elif isinstance(s, A.Choose):
                acc.append((s.name, s.name_span))
            elif isinstance(s, A.Hold):
                read = names_read(s.body)
                for b in s.admission:
                    self.hold_binding_names.add(b.name)
                    if read.get(b.name):
                        acc.append((b.name, b.span))
                stmts(s.body.stmts, acc)
            elif isinstance(s, A.Branch):
                stmts(s.then.stmts, acc)
                if s.other:
                    stmts(s.other.stmts, acc)
            elif isinstance(s, (A.While, A.Loop, A.Fork)):
                stmts(s.body.stmts, acc)

        wl = None
        for item in items:
            if isinstance(item, A.Workload):
                wl = item
                for w in item.items:
                    if isinstance(w, A.WBlock):
                        stmts(w.block.stmts)
            elif isinstance(item, A.Server):
                stmts(item.block.stmts)
            elif isinstance(item, A.EngineDecl):
                for e in item.items:
                    if isinstance(e, A.ERequest):
                        self.request_attributes(item.name, e, found)
            elif isinstance(item, A.QueueDecl):
                queues.collect_attributes(self, item, found, stmts)
        for d in self.defs.values():
            if d.body is not None:
                stmts(d.body.stmts)
        for name, span in found:
            if name in self.attr_index:
                continue
            if name in self.consts:
                self.diag.add("E210", f"`{name}` is a constant; a set cannot make it an attribute", span,
                              notes=[f"the constant is declared at {self.consts[name].span}"])
                continue
            if name in C.SUPPLIED:
                self.diag.add("E211", f"`{name}` is a name the language supplies; an attribute takes "
                              "another name", span,
                              help="a stage's capacity or a claim reading it would read the attribute")
                continue
            if name in self.defs:
                self.diag.add("E210", f"`{name}` is already a def; an attribute cannot take its name", span)
                continue
            self.attr_index[name] = len(self.attrs)
            self.attrs.append(name)
            self.kinds.setdefault(name, ("attribute", span))

    def request_attributes(self, engine: str, req: A.ERequest, found: list):
        seen_adm = False
        rest_names = names_read(req.stmts)
        local: list[tuple[str, Span]] = []
        for s in req.stmts:
            if isinstance(s, A.RAdmission):
                seen_adm = True
                idx = req.stmts.index(s)
                after = names_read(req.stmts[idx + 1:])
                for b in s.bindings:
                    self.hold_binding_names.add(b.name)
                    if after.get(b.name):
                        local.append((b.name, b.span))
            elif isinstance(s, A.Mark):
                local.append((f"{engine}.{s.name}", s.span))
        sub: list = []

        def stmt(s):
            if isinstance(s, (A.Set, A.SizeDecl, A.CostDecl)):
                sub.append((s.name, s.name_span))
            elif isinstance(s, A.Choose):
                sub.append((s.name, s.name_span))
            elif isinstance(s, A.Hold):
                for x in s.body.stmts:
                    stmt(x)
            elif isinstance(s, A.Branch):
                for x in s.then.stmts:
                    stmt(x)
                for x in (s.other.stmts if s.other else []):
                    stmt(x)
            elif isinstance(s, (A.While, A.Loop, A.Fork)):
                for x in s.body.stmts:
                    stmt(x)

        for s in req.stmts:
            stmt(s)
        for name, span in sub + local:
            if "." not in name:
                self.request_names[name] = engine
            found.append((name, span))
