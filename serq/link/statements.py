"""Statements and holds: blocks lowered (holds, runs, tools, transfers, calls of definitions and requests)."""

from __future__ import annotations

import math
from dataclasses import replace as _replace
from typing import Optional

from ..diag import Span, did_you_mean
from ..ir import model as M
from ..ir.expr import const_value, draws, walk
from ..records import dataclass
from ..syntax import ast as A
from . import catalogue as C
from . import entries
from .env import Env
from .nodes import LinkAbort, fmt, head_name, names_read, text_of
from .tables import EngineInfo


class Statements:
    """*Part of Linker*: blocks (`new_block`), each statement in its side
    (client or server) and context (`StmtCtx`); a hold's header, body and
    cache; a `turn;` followed by the server's statements."""

    def new_block(self, stmts, env: Env, side: str, where: str = "body", ctx=None) -> int:
        idx = len(self.blocks)
        self.blocks.append(None)
        out: list = []
        ctx = ctx or StmtCtx(where=where)
        self.stmts(stmts, env, side, out, ctx)
        self.blocks[idx] = out
        return idx

    def emit(self, out: list, stmt, span: Span, side: str):
        out.append((stmt, self.loc(span), side))
        self.spans[id(stmt)] = span
        self.keep.append(stmt)

    def stmts(self, stmts, env: Env, side: str, out: list, ctx: "StmtCtx"):
        for s in stmts:
            try:
                self.stmt(s, env, side, out, ctx)
            except LinkAbort:
                pass

    def stmt(self, s, env: Env, side: str, out: list, ctx: "StmtCtx"):
        S = env.at("session")
        t = type(s)
        if t is A.Turn:
            if ctx.where in ("init", "turn"):
                self.fail("E712", f"the workload's {ctx.where} block may only set (`set`, `Size`, `Cost`) and observe",
                          s.span)
            if side == "server":
                self.fail("E716", "`turn;` belongs to the session; a server is done with a request when "
                          "its block is", s.span, env=env)
            if ctx.in_fork:
                self.fail("E715", "a leg (fork) may not take a turn", s.span)
            self.emit(out, M.STurn(), s.span, "client")
            if self.server_ast is not None:
                sctx = StmtCtx(where="server")
                self.stmts(self.server_ast.stmts, Env(), "server", out, sctx)
            return
        if t is A.RequestStmt:
            self.fail("E110", "`request;` is the older spelling: `turn;` draws the turn's attributes, "
                      "submits it to the server and waits for the answer", s.span,
                      help="write the session as `session { turn; while (more) { …; turn; } }`")
        if ctx.where in ("init", "turn") and t not in (A.Set, A.Observe, A.SizeDecl, A.CostDecl, A.CostRecord):
            self.fail("E712", f"the workload's {ctx.where} block may only set (`set`, `Size`, `Cost`) and observe",
                      s.span)
        if t in (A.Set, A.SizeDecl, A.CostDecl):
            name = env.rename.get(s.name, s.name)
            if name not in self.attr_index:
                raise LinkAbort()  # its name was refused when the attributes were collected
            slot = self.attr_index[name]
            self.check_request_name(s.name, s.name_span, env)
            if t is A.SizeDecl:
                if side == "server":
                    self.fail("E311", "a `Size` is the workload's; the server computes values of its own",
                              s.span)
                self.declared_types[slot] = ("Size", s.span)
            elif t is A.CostDecl:
                self.declared_types[slot] = ("Cost", s.span)
            e = self.expr(s.expr, S)
            self.attr_side.setdefault(slot, set()).add(side)
            self.emit(out, M.SSet(slot, e), s.span, side)
            return
        if t is A.CostRecord:
            for f in s.fields:
                kind = self.kind_of(f.resource)
                if kind not in ("pool", "stage", "engine"):
                    self.fail("E302", f"`{f.resource}` is not a pool or a stage", f.span)
                fam = self.pool_fams.get(f.resource) if kind == "pool" else self.stage_fams.get(f.resource)
                slot = self.attr_index[f"{s.name}.{f.resource}"]
                inner = self.expr(f.expr, S)
                e = self.mk(M.ECost((M.Target("pool" if kind == "pool" else "stage", fam.base),), inner),
                            f.span)
                self.declared_types[slot] = ("Cost", f.span)
                self.attr_side.setdefault(slot, set()).add(side)
                self.emit(out, M.SSet(slot, e), f.span, side)
            return
        if t is A.Observe:
            self.declare(s.name, "observe", s.name_span)
            if s.name in self.attr_index:
                pass
            if s.name not in self.observe_index:
                self.observe_index[s.name] = len(self.observes)
                self.observes.append(s.name)
            self.emit(out, M.SObserve(self.observe_index[s.name], self.expr(s.expr, S)), s.span, side)
            return
        if t is A.Hold:
            self.hold(s, env, side, out, ctx)
            return
        if t in (A.Grow, A.Load):
            ref = self.ref_of(s.ref, S, "pool")
            entries.check_pool(self, ref, s.ref.span, env, "grow" if t is A.Grow else "load")
            stmt = (M.SGrow if t is A.Grow else M.SLoad)(ref, self.expr(s.expr, S))
            self.emit(out, stmt, s.span, side)
            return
        if t is A.Drop:
            ref = self.ref_of(s.ref, S, "pool")
            entries.check_pool(self, ref, s.ref.span, env, "drop")
            self.emit(out, M.SDrop(ref), s.span, side)
            return
        if t is A.Content:
            self.emit(out, M.SContent(self.expr(s.id, S), self.expr(s.n, S)), s.span, side)
            return
        if t is A.Release:
            ref = self.ref_of(s.ref, S, "pool")
            entries.check_pool(self, ref, s.ref.span, env, "release")
            self.emit(out, M.SRelease(ref), s.span, side)
            return
        if t is A.Run:
            self.run(s, env, side, out, ctx)
            return
        if t is A.Branch:
            if s.draw:
                p = self.expr(s.guard, S)
                g = self.mk(M.ESample("Bernoulli", (p,)), s.guard.span)
            else:
                g = self.expr(s.guard, S)
            then = self.new_block(s.then.stmts, env, side, ctx=ctx)
            other = self.new_block(s.other.stmts, env, side, ctx=ctx) if s.other is not None else None
            self.emit(out, M.SBranch(g, then, other), s.span, side)
            return
        if t is A.While:
            g = self.expr(s.guard, S)
            body = self.new_block(s.body.stmts, env, side, ctx=ctx.inner(loop=True))
            self.emit(out, M.SWhile(g, body), s.span, side)
            return
        if t is A.Loop:
            body = self.new_block(s.body.stmts, env, side, ctx=ctx.inner(loop=True))
            self.emit(out, M.SLoop(body), s.span, side)
            return
        if t is A.Fork:
            body = self.new_block(s.body.stmts, env, side, ctx=ctx.inner(fork=True))
            self.emit(out, M.SFork(body), s.span, side)
            return
        if t is A.Join:
            self.emit(out, M.SJoin(), s.span, side)
            return
        if t is A.Choose:
            name = env.rename.get(s.name, s.name)
            if name not in self.attr_index:
                raise LinkAbort()
            slot = self.attr_index[name]
            count = self.expr(s.count, S)
            n = const_value(count)
            if n is not None and not (n >= 1 and math.isfinite(n) and n == math.floor(n)):
                self.fail("E403", f"the candidates of `choose` are a whole number ≥ 1, not {fmt(n)}",
                          s.count.span, help=f"`choose {s.name} in n by (…);` sets `{s.name}` to one of 0 … n − 1",
                          env=env)
            keys = tuple(self.expr(k, S) for k in s.keys)
            short = _family_short_of(self, keys, slot, n)
            if short is not None:
                fam, count = short
                owner, _, own = fam.partition(".")      # a queue's pool or stage: `D[j].kv`
                read = f"{owner}[{s.name}]" + (f".{own}" if own else "")
                self.fail("E402", f"`{s.name}` runs over 0 … {fmt(n - 1)}, and the keys read `{read}`, "
                          f"which has {count} member{'s' if count != 1 else ''}", s.count.span,
                          help=f"choose among its members: `choose {s.name} in {count} by (…);`", env=env)
            self.attr_side.setdefault(slot, set()).add(side)
            self.emit(out, M.SChoose(slot, count, keys), s.span, side)
            return
        if t is A.End:
            if ctx.in_fork:
                self.fail("E715", "a leg (fork) may not end the session", s.span)
            self.emit(out, M.SEnd(), s.span, side)
            return
        if t is A.Mark:
            full = f"{env.in_request.name}.{s.name}" if env.in_request is not None else \
                entries.mark_name(env, s.name)
            if full is not None:
                slot = self.attr_index[full]
                self.emit(out, M.SSet(slot, self.mk(M.ECtx("Now"), s.span)), s.span, side)
                return
            self.fail("E255", "`mark` names a moment inside an engine's request or a queue's entry",
                      s.span)
        if t is A.Tool:
            self.tool(s, env, side, out, ctx)
            return
        if t is A.Transfer:
            self.transfer(s, env, side, out, ctx)
            return
        if t is A.CallStmt:
            self.call_stmt(s, env, side, out, ctx)
            return
        if t in (A.RPrefill, A.RDecode):
            mode = "prefill" if t is A.RPrefill else "decode"
            if env.in_request is None:
                self.mode_outside_request(mode, s.span, " growing kv" if s.growing is not None else "")
            eng = env.in_request
            work = self.expr(s.work, S)
            sref = self.mk(M.Ref(eng.base, 1, None), s.span)
            work = self.mk(M.ECost((M.Target("stage", eng.base),), work), s.work.span)
            growing = self.ref_of(s.growing, S, "pool") if s.growing is not None else None
            self.emit(out, M.SRun(sref, mode.capitalize(), work, growing), s.span, side)
            return
        if t is A.RAwait:
            if env.in_request is None:
                self.fail("E111", "`await;` is a statement of an engine's request", s.span,
                          help="it keeps the request on its engine for one more iteration")
            eng = env.in_request
            sref = self.mk(M.Ref(eng.base, 1, None), s.span)
            work = self.mk(M.ECost((M.Target("stage", eng.base),), self.num(0, s.span)), s.span)
            self.emit(out, M.SRun(sref, "Await", work), s.span, side)
            return
        if t is A.RAdmission:
            self.fail("E256", "`at admission { … }` stands once, at the top level of an engine's request",
                      s.span)
        if t is A.RCache:
            self.fail("E256", "`cache (…);` is the last item of an engine's request", s.span)
        raise AssertionError(t)  # pragma: no cover

    def mode_outside_request(self, mode: str, span: Span, growing: str = ""):
        """`prefill (…)` or `decode (…)` outside an engine's request: the run
        names its engine there (the program's, when it has one)."""
        e = next(iter(self.engines)) if len(self.engines) == 1 else "ENGINE"
        self.fail("E111", f"`{mode} (…)` is a statement of an engine's request", span,
                  help=f"in a server, the run names the engine: `run {e} {mode} (cost({e}, …)){growing};`")

    def hold(self, s: A.Hold, env: Env, side: str, out: list, ctx: "StmtCtx",
             body_env: Optional[Env] = None):
        header = env.at("header")
        if env.entry is not None:
            header = _replace(header, assigned=env.entry.assigned.get(id(s), frozenset()))
        bnames = set()
        for b in s.admission:
            if b.name in bnames:
                self.diag.add("E210", f"binding `{b.name}` is written twice", b.span)
            bnames.add(b.name)
            if b.name in self.consts or b.name in C.SUPPLIED or b.name in M.BUILTIN_ATTRS or \
                    (self.kind_of(b.name) not in (None, "attribute")):
                self.fail("E210", f"binding `{b.name}` takes a name the program already has", b.span,
                          help="a binding's name is its own")
            e = self.expr(b.expr, header)
            if draws(e):
                self.fail("E505", f"binding `{b.name}` draws: it is substituted, so each use would "
                          "draw again", b.expr.span, help="sample into an attribute first")
            header = header.with_subst({b.name: (b.expr, header)})
        pools = []
        for hp in s.pools:
            ref = self.ref_of(hp.ref, header, "pool")
            entries.check_pool(self, ref, hp.ref.span, env, "hold")
            units = self.expr(hp.units, header)
            reserve = self.expr(hp.reserve, header) if hp.reserve is not None else None
            for x in (units, reserve):
                if x is not None and draws(x):
                    self.fail("E505", "a hold's units and reserve are read at every admission attempt "
                              "and may not draw", self.spans.get(id(x), hp.span),
                              help="sample into an attribute first (`set x = ~…;`) and read it")
            pools.append(M.HoldPool(ref, units, reserve))
        reuse = self.expr(s.reuse, header) if s.reuse is not None else None
        if reuse is not None and draws(reuse):
            self.fail("E505", "a hold's reuse may not draw", s.reuse.span)
        cache_env = _replace(header.at("cache"), assigned=None)
        cache = self.expr(s.cache, cache_env) if s.cache is not None else None
        lease = None
        if s.lease is not None:
            lease = M.Lease(self.ref_of(s.lease.ref, cache_env, "pool"),
                            self.expr(s.lease.time, cache_env.at("lease")))
        # the body: a binding it reads is set at its top
        body_out: list = []
        benv = body_env or env
        read = names_read(s.body)
        prev = env.at("session")
        for b in s.admission:
            val = self.expr(b.expr, prev)
            prev = prev.with_subst({b.name: (b.expr, prev)})
            if read.get(b.name):
                live = [x for x in walk(val) if type(x) in (M.EQuery, M.EPrice, M.ECtx)
                        or (type(x) is M.EAttr and x.slot == M.SLOT["cached"])]
                if live:
                    self.fail("E257", f"the body reads `{b.name}`, a binding of live state: it has "
                              "another value after the admission", b.span,
                              help="the body reads `cached`, the units the admission consumed")
                slot = self.attr_index[env.rename.get(b.name, b.name)]
                self.emit(body_out, M.SSet(slot, val), b.span, side)
        idx = len(self.blocks)
        self.blocks.append(None)
        hctx = ctx.inner(hold=(tuple(pools), cache is not None))
        self.stmts(s.body.stmts, benv, side, body_out, hctx)
        self.blocks[idx] = body_out
        self.emit(out, M.SHold(tuple(pools), idx, reuse, cache, lease), s.span, side)

    def run(self, s: A.Run, env: Env, side: str, out: list, ctx):
        S = env.at("session")
        if not s.refs:
            s = A.Run(s.span, [entries.run_own(self, s, env)], s.mode, s.work, s.growing)
        refs = [self.ref_of(r, S, "stage") for r in s.refs]
        work = self.expr(s.work, S)
        growing = self.ref_of(s.growing, S, "pool") if s.growing is not None else None
        if growing is not None:
            entries.check_pool(self, growing, s.growing.span, env, "grow")
        mode = {"prefill": "Prefill", "decode": "Decode", None: "Plain"}[s.mode]
        self.emit(out, M.SRun(refs[0], mode, work, growing, tuple(refs[1:])), s.span, side)

    def tool(self, s: A.Tool, env: Env, side: str, out: list, ctx):
        S = env.at("session")
        work = self.expr(s.work, S)
        if s.where.on:
            refs = [self.ref_of(r, S, "stage") for r in s.where.on]
            targets = tuple(M.Target("stage", r.base) for r in refs)
            w = self.mk(M.ECost(targets, work), s.work.span)
            self.emit(out, M.SRun(refs[0], "Plain", w, None, tuple(refs[1:])), s.span, side)
            return
        fam = self.stage_fams.get("tool")
        if fam is not None and fam.item_no < (self.workload_item_no if side == "client" else 10 ** 9):
            idx = None
            if s.where.index is not None:
                idx = self.expr(s.where.index, S)
            elif fam.count > 1:
                self.fail("E301", f"stage `tool` is an array of {fam.count}: name one member",
                          s.span, help="write `tool[j] …;`")
            ref = self.mk(M.Ref(fam.base, fam.count, idx), s.span)
            w = self.mk(M.ECost((M.Target("stage", fam.base),), work), s.work.span)
            self.emit(out, M.SRun(ref, "Plain", w), s.span, side)
            return
        if fam is not None and side == "client":
            self.fail("E258", "stage `tool` is declared below the workload's `tool`: the call found no "
                      "stage above it and the program would have two", s.span,
                      notes=[f"stage `tool` is declared at {fam.span}"],
                      help="declare `stage tool : …;` above the workload")
        if side == "server":
            self.fail("E259", "`tool` in the server runs on a declared stage `tool`, and none is declared "
                      "above it", s.span, help="declare one (`stage tool : delay;`) or name a stage: "
                                               "`tool on S (…);`")
        if s.where.index is not None:
            self.fail("E259", "`tool[j]` needs a declared stage array `tool`", s.span)
        # the workload's own: a delay stage supplied after the declared stages
        if self.tool_needed is None:
            self.tool_needed = s.span
        placeholder = _ToolRef()
        w = self.mk(M.ECost((placeholder,), work), s.work.span)
        stmt = M.SRun(placeholder, "Plain", w)
        self.emit(out, stmt, s.span, side)

    def resolve_tool_placeholders(self):
        base = self.stage_fams["tool"].base
        for b, block in enumerate(self.blocks):
            new = []
            for stmt, loc, side in block:
                if type(stmt) is M.SRun and isinstance(stmt.stage, _ToolRef):
                    ref = M.Ref(base, 1, None)
                    w = stmt.work
                    w2 = M.ECost((M.Target("stage", base),), w.expr)
                    self.spans[id(w2)] = self.spans.get(id(w))
                    self.keep.append(w2)
                    st2 = M.SRun(ref, "Plain", w2)
                    self.spans[id(st2)] = self.spans.get(id(stmt))
                    self.keep.append(st2)
                    stmt = st2
                new.append((stmt, loc, side))
            self.blocks[b] = new

    def transfer(self, s: A.Transfer, env: Env, side: str, out: list, ctx):
        S = env.at("session")
        if env.entry is not None and not env.entry.queue.gateway and not s.where.on and \
                s.where.index is None:
            entries.relation_transfer(self, s, env, side, out)
            return
        work = self.expr(s.work, S)
        if s.where.on:
            refs = [self.ref_of(r, S, "stage") for r in s.where.on]
            entries.link_waits(self, s.where.on, env, side, out, s.span)
        else:
            cands = [n for n in ("link", "transfer") if n in self.stage_fams]
            if len(cands) != 1:
                self.fail("E259", "`transfer` runs on the stage `link` (or `transfer`): " +
                          ("none is declared" if not cands else "both are declared"), s.span,
                          help="declare one, or name it: `transfer on S (…) from P to Q (n);`")
            fam = self.stage_fams[cands[0]]
            idx = self.expr(s.where.index, S) if s.where.index is not None else None
            refs = [self.mk(M.Ref(fam.base, fam.count, idx), s.span)]
        targets = tuple(M.Target("stage", r.base) for r in refs)
        w = self.mk(M.ECost(targets, work), s.work.span)
        self.emit(out, M.SRun(refs[0], "Plain", w, None, tuple(refs[1:])), s.span, side)
        dst = self.ref_of(s.dst, S, "pool")
        entries.check_pool(self, dst, s.dst.span, env, "load")
        n = self.mk(M.ECost((M.Target("pool", dst.base),), self.expr(s.tokens, S)), s.tokens.span)
        self.emit(out, M.SLoad(dst, n), s.span, side)
        src = self.ref_of(s.src, S, "pool")
        entries.check_pool(self, src, s.src.span, env, "release")
        self.emit(out, M.SRelease(src), s.span, side)

    def call_stmt(self, s: A.CallStmt, env: Env, side: str, out: list, ctx):
        tgt = s.target
        if not isinstance(tgt, A.Call):
            self.fail("E260", "a statement here is a call: `NAME(…);`", s.span,
                      help="an expression alone does nothing; `set x = …;` keeps its value")
        if isinstance(tgt.fn, A.Dot):
            qname = head_name(tgt.fn.obj)
            if qname is not None and self.kind_of(qname) == "queue":
                entries.call_entry(self, s, env, side, out, ctx)
                return
            self.fail("E201", f"`{text_of(tgt.fn)}(…)`: only a queue's entry is called with a dot, "
                      "`Q.VERB (…)`", tgt.fn.span, env=env,
                      help=did_you_mean(qname or "", self.queues) or None)
        if not isinstance(tgt.fn, A.Name):
            self.fail("E260", "a statement here is a call: `NAME(…);`", s.span, env=env)
        name = tgt.fn.name
        if s.src is not None or s.to is not None:
            self.fail("E282", f"`from`/`to` belong to a queue's entry call, `Q[j].VERB (…) from …`, "
                      f"not to `{name}(…)`", s.span, env=env)
        if name in self.defs:
            d = self.defs[name]
            if d.body is None:
                self.fail("E302", f"`{name}` is an expression definition; use it in an expression",
                          s.span, env=env)
            if len(tgt.args) != len(d.params):
                self.fail("E221", f"`{name}` takes {len(d.params)} argument{'s' if len(d.params) != 1 else ''}, "
                          f"not {len(tgt.args)}", s.span, env=env)
            if any(w == f"`{name}`" for w, _ in env.expansions):
                self.fail("E222", f"definition `{name}` reaches itself", s.span, env=env)
            self.check_def_args(d, tgt.args, env, statement=True)
            sub = {p: (a, env) for p, a in zip(d.params, tgt.args)}
            benv = env.fresh(in_request=env.in_request).with_subst(sub).expanding(f"`{name}`", s.span)
            self.stmts(d.body.stmts, benv, side, out, ctx)
            return
        if name in self.engines:
            self.request_call(self.engines[name], tgt, env, side, out, ctx)
            return
        kind = self.kind_of(name)
        if kind == "queue":
            q = self.queues[name]
            verbs = sorted({e.verb for e in q.entries.values()})
            self.fail("E281", f"queue `{name}` is entered by one of its entries, `{name}"
                      f"{'[j]' if q.array else ''}.{verbs[0] if verbs else 'VERB'} (…);`", tgt.fn.span,
                      env=env, help=("its entries: " + ", ".join(f"`{v}`" for v in verbs)) if verbs else None)
        if name in ("prefill", "decode"):
            self.mode_outside_request(name, s.span)
        self.fail("E201", f"unknown statement `{name}(…)`", tgt.fn.span, env=env,
                  help=did_you_mean(name, list(self.defs) + list(self.engines)))

    def request_call(self, eng: EngineInfo, call: A.Call, env: Env, side: str, out: list, ctx):
        req = eng.request
        if req is None:
            self.fail("E261", f"engine `{eng.name}` has no request", call.span,
                      help=f"declare `request (…) {{ … }}` in engine `{eng.name}`, or write the hold "
                           f"and `run {eng.name} prefill/decode` yourself")
        if side != "server":
            self.fail("E262", f"engine `{eng.name}`'s request is called in the server", call.span)
        if any(w == f"engine `{eng.name}`'s request" for w, _ in env.expansions):
            self.fail("E222", f"engine `{eng.name}`'s request reaches itself", call.span, env=env,
                      help="the server calls the request; the request runs the engine "
                           f"(`prefill (…)`, `decode (…)`), not `{eng.name} (…)`")
        if len(call.args) != len(req.params):
            self.fail("E221", f"`{eng.name}` takes {len(req.params)} argument{'s' if len(req.params) != 1 else ''}, "
                      f"not {len(call.args)}", call.span, env=env)
        sub = {}
        for p, a in zip(req.params, call.args):
            v = self.expr(a, env.at("session"))
            if draws(v):
                self.fail("E223", f"an argument of `{eng.name}` may not draw: it is substituted",
                          a.span, help="sample into an attribute first")
            sub[p] = (a, env)
        renv = Env(engine=None, in_request=eng, expansions=env.expansions).with_subst(sub).expanding(
            f"engine `{eng.name}`'s request", call.span)
        stmts = list(req.stmts)
        adm_i = next((i for i, x in enumerate(stmts) if isinstance(x, A.RAdmission)), None)
        cache_i = [i for i, x in enumerate(stmts) if isinstance(x, A.RCache)]
        if len(cache_i) > 1 or (cache_i and cache_i[0] != len(stmts) - 1):
            self.fail("E256", "`cache (…);` is the last item of an engine's request",
                      stmts[cache_i[0]].span)
        cache = stmts[cache_i[0]].expr if cache_i else None
        if cache_i:
            stmts = stmts[:-1]
        if eng.taking is None:
            if adm_i is not None or cache is not None:
                self.fail("E263", "a request without `taking` holds nothing, and has no `at admission` "
                          "and no cache", req.span,
                          help=f"write `admit waiting … taking POOL (…);` in engine `{eng.name}`'s schedule")
            self.stmts(stmts, renv, side, out, ctx)
            return
        before = stmts[:adm_i] if adm_i is not None else []
        after = stmts[adm_i + 1:] if adm_i is not None else stmts
        bindings = stmts[adm_i].bindings if adm_i is not None else []
        if any(isinstance(x, A.RAdmission) for x in after):
            self.fail("E256", "`at admission { … }` stands once in a request", req.span)
        self.stmts(before, renv, side, out, ctx)
        taking = eng.taking
        targets = []
        for tk in taking.takes:
            fam_name = head_name(tk.ref)
            if fam_name not in self.pool_fams:
                self.fail("E201", f"unknown pool `{tk.ref.text()}` in `taking`", tk.ref.span,
                          help=did_you_mean(fam_name or "", self.pool_fams))
            targets.append(fam_name)
        hold_pools = []
        for tk in taking.takes:
            pname = head_name(tk.ref)
            units = A.Call(tk.units.span, A.Name(tk.units.span, "cost"), [A.Name(tk.ref.span, pname), tk.units])
            reserve = None
            if tk.reserve is not None:
                reserve = A.Call(tk.reserve.span, A.Name(tk.reserve.span, "cost"),
                                 [A.Name(tk.ref.span, pname), tk.reserve])
            hold_pools.append(A.HoldPool(tk.span, tk.ref, units, reserve))
        joint = [A.Name(taking.span, n) for n in targets]
        reuse = None
        if taking.reuse is not None:
            reuse = A.Call(taking.reuse.span, A.Name(taking.reuse.span, "cost"), joint + [taking.reuse])
        cache_e = None
        if cache is not None:
            cache_e = A.Call(cache.span, A.Name(cache.span, "cost"), joint + [cache])
        hold = A.Hold(call.span, hold_pools, reuse, bindings, A.Block(call.span, after), cache_e, None)
        self.hold(hold, renv, side, out, ctx)


class _ToolRef(M.Ref):
    """The workload's supplied `stage tool : delay`, before its index is known."""

    def __init__(self):
        object.__setattr__(self, "base", -1)
        object.__setattr__(self, "count", 1)
        object.__setattr__(self, "index", None)
        object.__setattr__(self, "kind", "stage")


@dataclass
class StmtCtx:
    where: str = "body"
    in_fork: bool = False
    in_loop: bool = False
    holds: tuple = ()

    def inner(self, loop=False, fork=False, hold=None) -> "StmtCtx":
        return StmtCtx(self.where if self.where not in ("init", "turn") else self.where,
                       self.in_fork or fork, self.in_loop or loop,
                       self.holds + ((hold,) if hold is not None else ()))


def _family_short_of(lk, keys, slot: int, n) -> Optional[tuple]:
    """The first family that the keys of `choose` read at the chosen index
    itself (`queue(svc[j])`) and that has fewer than the choose's constant
    ``n`` members, as (name, count): every candidate's keys are read, so
    the run would stop at the first (R002).  None when there is none, or
    ``n`` is not a constant."""
    if n is None:
        return None
    pool_queries = set(C.POOL_QUERIES.values())
    for k in keys:
        for x in walk(k):
            if type(x) is M.EQuery or type(x) is M.EPrice:
                ref = x.ref
                if ref.index == M.EAttr(slot) and ref.count < n:
                    pool = type(x) is M.EPrice or x.query in pool_queries
                    meta = lk.pools_meta if pool else lk.stages_meta
                    return meta[ref.base].name, ref.count
    return None
