"""The lints of §Lints and the server's hidden-attribute rule.

* E601: a `set` that reads live pool or stage state, whose attribute a hold's
  header then reads (the header would see the value from before the session
  queued; `at admission` is the clause for it);
* E602: a hold without `cache` whose body reads `cached` (or that writes
  `reuse`, checked by the validator);
* E603: a constant branch guard other than 0 or 1 (checked by the validator);
* E610: in the server, a decision (branch, choose, a grow or load amount, an
  index) that reads a hidden attribute, or one derived from it, before a run
  whose work reads it has ended.
"""

from __future__ import annotations

from ..ir import model as M
from ..ir.expr import walk

LIVE = (M.EQuery, M.EPrice)


def lint(linker, p: M.Program) -> None:
    _stale_header(linker, p)
    _cached_without_cache(linker, p)
    _hidden_in_server(linker, p)


def _span(linker, node):
    return linker.spans.get(id(node))


def _reads(e) -> set:
    return {x.slot for x in walk(e) if type(x) is M.EAttr}


def _stale_header(linker, p: M.Program) -> None:
    # attributes whose value comes from live state, transitively
    tainted: dict[int, object] = {}
    sets = [(st, b) for b in p.blocks for st in b.stmts if type(st) is M.SSet]
    changed = True
    while changed:
        changed = False
        for st, _b in sets:
            if st.slot in tainted:
                continue
            live = any(type(x) in LIVE for x in walk(st.expr))
            if live or _reads(st.expr) & set(tainted):
                tainted[st.slot] = st
                changed = True
    if not tainted:
        return
    for b in p.blocks:
        for st in b.stmts:
            if type(st) is not M.SHold:
                continue
            exprs = [hp.units for hp in st.pools] + [hp.reserve for hp in st.pools if hp.reserve] + \
                    ([st.reuse] if st.reuse is not None else [])
            for e in exprs:
                for x in walk(e):
                    if type(x) is M.EAttr and x.slot in tainted:
                        src = tainted[x.slot]
                        linker.diag.add(
                            "E601", f"the hold's header reads `{p.attrs[x.slot]}`, set from live pool "
                            "or stage state before the session queued",
                            _span(linker, x) or _span(linker, st),
                            help="name it in the header instead: `at admission ("
                                 f"{p.attrs[x.slot]} = …)`, read when the session is admitted",
                            notes=[f"`{p.attrs[x.slot]}` is set at {_span(linker, src)}"])


def _cached_without_cache(linker, p: M.Program) -> None:
    cached = M.SLOT["cached"]

    def body(bi: int, inside_plain: bool):
        for st in p.blocks[bi].stmts:
            t = type(st)
            exprs = []
            if t in (M.SSet, M.SObserve):
                exprs = [st.expr]
            elif t is M.SRun:
                exprs = [st.work]
            elif t in (M.SBranch, M.SWhile):
                exprs = [st.guard]
            elif t in (M.SGrow, M.SLoad):
                exprs = [st.expr]
            if inside_plain:
                for e in exprs:
                    for x in walk(e):
                        if type(x) is M.EAttr and x.slot == cached:
                            linker.diag.add(
                                "E602", "`cached` is 0 in the body of a hold without `cache`: the hold "
                                "takes no part in the prefix cache", _span(linker, x) or _span(linker, st),
                                help="add `cache (…)` to the hold (`cache (0)` consumes the prefix and "
                                     "keeps nothing)")
            if t is M.SHold:
                body(st.body, st.cache is None)
            elif t is M.SBranch:
                body(st.then, inside_plain)
                if st.other is not None:
                    body(st.other, inside_plain)
            elif t in (M.SLoop, M.SWhile, M.SFork):
                body(st.body, inside_plain)

    for root in (p.session, p.init, p.turn):
        if root is not None:
            body(root, False)


def _hidden_in_server(linker, p: M.Program) -> None:
    hidden = set(p.hidden)
    if not hidden:
        return

    def origins(e, derived) -> set:
        out = set()
        for s in _reads(e):
            if s in hidden:
                out.add(s)
            out |= derived.get(s, set())
        return out

    def check(e, revealed, derived, what, st):
        bad = origins(e, derived) - revealed
        if bad:
            name = p.attrs[sorted(bad)[0]]
            linker.diag.add("E610", f"{what} reads hidden `{name}` before a run reveals it",
                            _span(linker, e) or _span(linker, st),
                            help=f"the scheduler learns `{name}` when a run whose work reads it ends; "
                                 "decide on it after that run")

    def refs_of(st):
        t = type(st)
        if t in (M.SGrow, M.SLoad, M.SDrop, M.SRelease):
            return [st.pool]
        if t is M.SRun:
            return [st.stage] + list(st.also) + ([st.growing] if st.growing else [])
        if t is M.SHold:
            return [hp.pool for hp in st.pools]
        return []

    def block(bi, revealed, derived):
        b = p.blocks[bi]
        for st, side in zip(b.stmts, b.sides):
            if type(st) is M.STurn:
                revealed, derived = frozenset(), {}
            if side != "server":
                continue
            t = type(st)
            for r in refs_of(st):
                if r.index is not None:
                    check(r.index, revealed, derived, "the index that picks a pool or stage", st)
            if t is M.SSet:
                o = origins(st.expr, derived)
                if o:
                    derived = dict(derived)
                    derived[st.slot] = o
            elif t is M.SBranch:
                check(st.guard, revealed, derived, "a branch", st)
                r1, d1 = block(st.then, revealed, derived)
                r2, d2 = block(st.other, revealed, derived) if st.other is not None else (revealed, derived)
                revealed = r1 & r2
                derived = {**d1, **d2}
            elif t is M.SChoose:
                check(st.count, revealed, derived, "a choose", st)
                for k in st.keys:
                    check(k, revealed, derived, "a choose", st)
            elif t in (M.SGrow, M.SLoad):
                check(st.expr, revealed, derived, "a grow or load amount", st)
            elif t is M.SRun:
                revealed = revealed | origins(st.work, derived)
            elif t is M.SHold:
                r, d = block(st.body, revealed, derived)
                revealed, derived = r, d
            elif t in (M.SLoop, M.SWhile):
                if t is M.SWhile:
                    check(st.guard, revealed, derived, "a while", st)
                block(st.body, revealed, derived)
            elif t is M.SFork:
                block(st.body, revealed, derived)
        return revealed, derived

    # the server's statements follow each Turn in the session's blocks
    for bi in range(len(p.blocks)):
        b = p.blocks[bi]
        if any(s == "server" for s in b.sides) and not _is_nested_server_block(p, bi):
            block(bi, frozenset(), {})


def _is_nested_server_block(p: M.Program, bi: int) -> bool:
    """Blocks that are the body of a server statement are walked from it."""
    for b in p.blocks:
        for st, side in zip(b.stmts, b.sides):
            if side != "server":
                continue
            kids = M.child_blocks(st)
            if bi in kids:
                return True
    return False
