"""Attribute types (Size, Value, a Cost of resources) from what the blocks assign and the program declares."""

from __future__ import annotations

from dataclasses import replace as _replace

from ..ir import model as M


class Types:
    """*Part of Linker*: the types of the built program's attributes."""

    def attr_types(self, p: M.Program) -> tuple:
        from ..ir.validate import Checker
        types: list = ["Value"] * len(p.attrs)
        for name in M.TRACE_ATTRS:
            types[M.SLOT[name]] = "Size"
        for slot, sides in self.attr_side.items():
            if "client" in sides:
                types[slot] = "Size"
        sets: dict[int, list] = {}
        for b in p.blocks:
            for st in b.stmts:
                if type(st) is M.SSet:
                    sets.setdefault(st.slot, []).append(st.expr)
        checker = Checker(p)
        for _ in range(8):
            changed = False
            checker.p = _replace(p, attr_types=tuple(types))
            for slot, exprs in sets.items():
                got = [checker.type_of(e) for e in exprs]
                costs = [g for g in got if isinstance(g, tuple)]
                if costs:
                    t = costs[0]
                    if any(set(c) != set(t) for c in costs):
                        e0 = exprs[got.index(costs[-1])]
                        self.diag.add("E312", f"`{p.attrs[slot]}` is assigned costs of different resources",
                                      self.spans.get(id(e0)))
                    if types[slot] != t:
                        types[slot] = t
                        changed = True
            if not changed:
                break
        for slot, (decl, span) in self.declared_types.items():
            t = types[slot]
            if decl == "Cost" and not isinstance(t, tuple):
                self.diag.add("E312", f"`{p.attrs[slot]}` is declared a Cost but its value is a plain number",
                              span, help="interpret it: `cost(RESOURCE, …)`")
        for slot, sides in self.attr_side.items():
            if "client" in sides and "server" in sides and not isinstance(types[slot], tuple):
                # the validator reports the server's assignment of a Size
                pass
        return tuple(types)

