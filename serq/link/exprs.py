"""Expressions: AST → IR, with names resolved, definitions inlined, aggregates written out and constants folded."""

from __future__ import annotations

import math

from ..diag import Span, did_you_mean
from ..ir import model as M
from ..ir.expr import const_value, draws, walk
from ..syntax import ast as A
from . import catalogue as C
from . import entries
from .env import Env
from .nodes import LinkAbort, a_, fmt, head_name, names_read, text_of

MAX_AGG_TERMS = 4096

_BINOPS = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div", "^": "Pow", "<": "Lt", "<=": "Le",
           ">": "Gt", ">=": "Ge", "==": "Eq", "!=": "Ne", "&&": "And", "||": "Or"}


class Exprs:
    """*Part of Linker*: expression lowering (the Linker owns the tables)."""

    def expr(self, e: A.Expr, env: Env) -> M.Expr:
        out = self._expr(e, env)
        return self.fold(out)

    def try_expr(self, e: A.Expr, env: Env, default=None):
        try:
            return self.expr(e, env)
        except LinkAbort:
            return default if default is not None else self.num(0.0, e.span)

    def _expr(self, e: A.Expr, env: Env) -> M.Expr:
        t = type(e)
        if t is A.Num:
            return self.num(e.value, e.span)
        if t is A.Name:
            return self.name(e, env)
        if t is A.Str:
            self.fail("E320", "a string is not a value here", e.span, env=env)
        if t is A.Unary:
            arg = self.expr(e.arg, env)
            return self.mk(M.EUnary("Neg" if e.op == "-" else "Not", arg), e.span)
        if t is A.Binary:
            lhs = self.expr(e.lhs, env)
            rhs = self.expr(e.rhs, env)
            return self.mk(M.EBinary(_BINOPS[e.op], lhs, rhs), e.span)
        if t is A.Cond:
            c = self.expr(e.cond, env)
            a = self.expr(e.then, env)
            b = self.expr(e.other, env)
            return self.mk(M.ECond(c, a, b), e.span)
        if t is A.Draw:
            return self.draw(e, env)
        if t is A.Agg:
            return self.aggregate(e, env)
        if t is A.Call:
            return self.call(e, env)
        if t is A.Dot:
            return self.dotted(e, env)
        if t is A.Index:
            target = head_name(e)
            kind = self.kind_of(target) if target else None
            if kind in ("pool", "stage"):
                self.fail("E302", f"`{target}` is a {kind}, not a number", e.span,
                          help=f"read it with a query, e.g. `{'used' if kind == 'pool' else 'queue'}({text_of(e)})`",
                          env=env)
            self.fail("E302", "only a pool or a stage is indexed", e.span, env=env)
        raise AssertionError(t)  # pragma: no cover

    def name(self, e: A.Name, env: Env) -> M.Expr:
        n = e.name
        if n in env.subst:
            arg, aenv = env.subst[n]
            if isinstance(arg, (int, float)):
                return self.num(arg, e.span)
            return self.expr(arg, aenv)
        if n in self.consts:
            c = self.consts[n]
            # an input's value keeps the input's name (serq.calib fits it)
            node = self.num(c.value, e.span) if c.input is None else \
                self.mk(M.ENum(float(c.value), c.input), e.span)
            if c.inputs and any(x in self.sets for x in c.inputs):
                self.input_nums.add(id(node))
            return node
        if n in self.failed_lets:
            raise LinkAbort()   # its definition's error is reported
        if n == "inf":
            return self.num(math.inf, e.span)
        if env.entry is not None:
            if n in env.rename or n in self.attr_index:
                entries.check_read(self, n, e.span, env)
            elif n == "now":
                entries.check_now(self, e.span, env)
            n = env.rename.get(n, n)
        if n in self.attr_index:
            self.check_request_name(n, e.span, env)
            return self.mk(M.EAttr(self.attr_index[n]), e.span)
        if n in self.register_index:
            return self.mk(M.EReg(self.register_index[n]), e.span)
        if n in C.CTX_BARE:
            engine_clauses = ("tokens_cap", "sched_budget", "sched_serve", "sched_only", "sched_plan",
                              "execute")
            if n in C.CLAIM_ONLY and env.clause in engine_clauses:
                self.fail("E212", f"an engine names `{n}` as `{C.ENGINE_SPELLING[n]}`", e.span,
                          help=f"write `{C.ENGINE_SPELLING[n]}`", env=env)
            if n in C.CLAIM_ONLY and env.clause not in ("claim_iter",):
                where = {"session": "a session statement"}.get(env.clause, "here")
                self.fail("E501", f"`{n}` is read only by a claim over iterations, not {where}",
                          e.span, env=env,
                          help=f"an engine's clauses read `{C.ENGINE_SPELLING[n]}`" if n in C.ENGINE_SPELLING else None)
            return self.mk(M.ECtx(C.CTX_BARE[n]), e.span)
        kind = self.kind_of(n)
        if kind is not None:
            hint = {
                "pool": f"read it with a query, e.g. `used({n})`",
                "stage": f"read it with a query, e.g. `queue({n})`",
                "engine": f"read it with a query, e.g. `budget_left({n})`",
                "observe": f"a claim at end reads it with `total({n})`, `count({n})`, …",
                "def": f"call it: `{n}(…)`",
            }.get(kind)
            self.fail("E302", f"`{n}` is {a_(kind)}, not a value", e.span, help=hint, env=env)
        if n == "self":
            self.fail("E201", "`self` is the member's index, read in an entry of a queue family", e.span,
                      env=env)
        if n in ("running", "batch", "waiting"):
            self.fail("E302", f"`{n}` is an engine's list; read one of its values, e.g. `{n}.count`"
                      if n != "batch" else "`batch` is an engine's batch; read e.g. `batch.tokens`",
                      e.span, env=env)
        self.unknown(n, e.span, env)

    def dotted(self, e: A.Dot, env: Env) -> M.Expr:
        if isinstance(e.obj, A.Name):
            base, attr = e.obj.name, e.attr
            if base == "running" and base not in env.subst:
                return self.engine_value("running", attr, C.RUNNING, e.span, env)
            if base == "batch" and base not in env.subst:
                return self.engine_value("batch", attr, C.BATCH, e.span, env)
            if base == "waiting" and base not in env.subst:
                return self.engine_value("waiting", attr, C.WAITING, e.span, env)
            full = f"{base}.{attr}"
            if self.kind_of(base) == "queue":      # (an entry's scope is checked there)
                return entries.dotted_value(self, base, attr, e.span, env)
            if full in self.attr_index:
                return self.mk(M.EAttr(self.attr_index[full]), e.span)
            if self.kind_of(base) == "engine":
                self.fail("E201", f"engine `{base}` marks no `{attr}`", e.span, env=env,
                          help=did_you_mean(full, self.attr_index) or
                          f"`mark {attr};` in `{base}`'s request is read afterwards as `{full}`")
            if self.kind_of(base) == "queue":
                return entries.dotted_value(self, base, attr, e.span, env)
            if base == "args":
                self.fail("E220", "`args.number(…)` is the whole initializer of a `let` in main",
                          e.span, env=env, help='write `let x = args.number("x", default);`')
        self.fail("E201", f"unknown name `{text_of(e)}`", e.span, env=env)

    def engine_value(self, lst: str, attr: str, table: dict, span: Span, env: Env) -> M.Expr:
        spelled = f"{lst}.{attr}"
        if attr not in table:
            self.fail("E201", f"`{lst}` has no `{attr}`", span, env=env,
                      help=did_you_mean(attr, table) and
                      f"did you mean `{lst}.{did_you_mean(attr, table).split('`')[1]}`?")
        if env.clause in C.ENGINE_CLAUSES or env.clause == "sched_only":
            clause = "sched_serve" if env.clause == "sched_only" else env.clause
            if spelled not in C.ENGINE_CLAUSES[clause]:
                help_ = None
                if clause == "execute" and lst == "running":
                    help_ = f"`execute` times the batch: write `batch.{attr}`" \
                        if f"batch.{attr}" in C.ENGINE_CLAUSES["execute"] else None
                elif lst == "batch" and clause in ("tokens_cap", "sched_budget", "sched_serve"):
                    help_ = "the batch is not formed yet; read the residents, `running.…`"
                self.fail("E501", f"`{spelled}` cannot be read in {C.CLAUSE_WORDS[clause]}", span,
                          env=env, help=help_)
        if spelled == "waiting.count":
            eng = env.engine
            if eng is None:
                self.fail("E501", "`waiting.count` is read in an engine's clauses", span, env=env)
            pools = self.engine_admits(eng)
            if not pools:
                return self.num(0, span)
            out = None
            me = eng.base + (env.member if eng.count > 1 else 0)
            for base, count in pools:
                for k in range(count):
                    if self.pools_meta[base + k].admit_via != me:
                        continue  # a member of an engine family counts the queues it admits
                    q = self.mk(M.EQuery("Queued", M.Ref(base, count,
                                                           None if count == 1 and self.pools_meta[base].index is None
                                                           else self.num(k, span))), span)
                    out = q if out is None else self.mk(M.EBinary("Add", out, q), span)
            return out if out is not None else self.num(0, span)
        if env.clause not in C.ENGINE_CLAUSES and env.clause != "sched_only" and env.engine is None:
            if env.clause == "claim_iter":
                bare = {v: k for k, v in C.CTX_BARE.items() if k in C.CLAIM_ONLY}.get(table[attr])
                self.fail("E212", f"a claim names `{spelled}` as `{bare}`", span, env=env,
                          help=f"write `{bare}`" if bare else None)
        return self.mk(M.ECtx(table[attr]), span)

    def draw(self, e: A.Draw, env: Env) -> M.Expr:
        if e.dist not in C.DISTS:
            self.fail("E201", f"unknown distribution `~{e.dist}`", e.span, env=env,
                      help=(lambda h: h.replace("`", "`~", 1) if h else None)(did_you_mean(e.dist, C.DISTS)))
        n = C.DIST_ARITY[e.dist]
        if len(e.args) != n:
            self.fail("E221", f"`~{e.dist}` takes {n} argument{'s' if n > 1 else ''}, not {len(e.args)}",
                      e.span, env=env)
        args = tuple(self.expr(a, env) for a in e.args)
        return self.mk(M.ESample(C.DISTS[e.dist], args), e.span)

    def aggregate(self, e: A.Agg, env: Env) -> M.Expr:
        if isinstance(e.count, A.Name) and e.count.name == "running" and "running" not in env.subst:
            return self.running_sum(e, env)
        if e.kind not in C.AGG_KINDS:
            self.fail("E201", f"unknown aggregate `{e.kind}`", e.span, env=env,
                      help="an aggregate is `max j in n (e)`, `min j in n (e)` or `sum j in n (e)`")
        if e.var in self.kinds or e.var in self.attr_index or e.var in self.consts or \
                e.var in C.SUPPLIED or e.var in env.subst:
            self.fail("E210", f"`{e.var}` already names something: an aggregate's index is a new name",
                      e.span, env=env)
        count = self.expr(e.count, env.at("const"))
        v = const_value(count)
        if v is None:
            self.fail("E403", "an aggregate's count is a number or a constant", e.count.span, env=env)
        if not (v >= 0 and math.isfinite(v) and v == math.floor(v)):
            self.fail("E403", f"an aggregate's count must be a whole number, not {fmt(v)}",
                      e.count.span, env=env)
        n = int(v)
        if n == 0 and e.kind != "sum":
            self.fail("E403", f"`{e.kind}` over 0 terms has no value", e.count.span, env=env)
        self.agg_terms += n
        if self.agg_terms > MAX_AGG_TERMS:
            self.fail("E403", f"aggregates write out more than {MAX_AGG_TERMS} terms in this program",
                      e.span, env=env, help="the linker writes each aggregate out term by term: "
                                            "read fewer members, or name a value computed once (`set`)")
        if n == 0:
            return self.num(0, e.span)
        op = {"max": "Max", "min": "Min", "sum": "Add"}[e.kind]
        terms = [self.expr(e.body, env.with_subst({e.var: (float(k), env)})) for k in range(n)]
        out = terms[0]
        for t in terms[1:]:
            if op == "Add":
                out = self.mk(M.EBinary("Add", out, t), e.span)
            else:
                out = self.mk(M.EFn(op, (out, t)), e.span)
        return self.fold(out)

    def running_sum(self, e: A.Agg, env: Env) -> M.Expr:
        """`sum r in running (e)`: Σ e over the engine's running requests, e
        read for each (its attributes, decoding, admission, remaining, position)."""
        if e.kind != "sum":
            self.fail("E403", f"over an engine's running requests an aggregate is a sum, not `{e.kind}`",
                      e.span, env=env, help="write `sum r in running (…)`")
        eng = env.engine
        if eng is None:
            self.fail("E501", "`sum … in running (…)` is read in an engine's clauses", e.span, env=env,
                      help="an engine's running requests are read in its tokens cap, schedule and execute")
        if e.var in names_read(e.body):
            self.fail("E210", f"`{e.var}` names no number: a running sum's body reads the request's own "
                      "values (its attributes, decoding, admission, remaining)", e.span, env=env)
        body = self.expr(e.body, env.at("running_each"))
        stage = eng.base + (env.member if eng.count > 1 else 0)
        return self.mk(M.ERunSum(stage, body), e.span)

    def call(self, e: A.Call, env: Env) -> M.Expr:
        if isinstance(e.fn, A.Dot) and isinstance(e.fn.obj, A.Name) and e.fn.obj.name == "args":
            self.fail("E220", "`args.number(…)` is the whole initializer of a `let` in main", e.span,
                      env=env, help='write `let x = args.number("x", default);`')
        if not isinstance(e.fn, A.Name):
            if isinstance(e.fn, A.Dot) and self.kind_of(head_name(e.fn.obj) or "") == "queue":
                self.fail("E302", f"`{text_of(e.fn)}(…)` is a queue's entry: a statement, not a value",
                          e.span, env=env, help=f"call it as a statement, `{text_of(e.fn)} (…);`, and read "
                                                "what it marks afterwards")
            self.fail("E302", "only a function or a definition is called", e.span, env=env)
        f = e.fn.name
        args = e.args
        if f in env.subst:
            self.fail("E302", f"`{f}` is a parameter, not a function", e.fn.span, env=env)
        if f in C.FUNCTIONS and f not in self.defs:
            ir, n = C.FUNCTIONS[f]
            self.arity(f, args, n, e, env)
            return self.mk(M.EFn(ir, tuple(self.expr(a, env) for a in args)), e.span)
        if f in C.POOL_QUERIES or f in C.STAGE_QUERIES:
            self.arity(f, args, 1, e, env)
            kind = "pool" if f in C.POOL_QUERIES else "stage"
            ref = self.ref_of(args[0], env, kind)
            q = C.POOL_QUERIES.get(f) or C.STAGE_QUERIES[f]
            return self.mk(M.EQuery(q, ref), e.span)
        if f == "price":
            self.arity(f, args, 3, e, env)
            ref = self.ref_of(args[0], env, "stage")
            return self.mk(M.EPrice(ref, self.expr(args[1], env), self.expr(args[2], env)), e.span)
        if f == "blocksize":
            self.arity(f, args, 1, e, env)
            ref = self.ref_of(args[0], env, "pool")
            pool = self.pools_meta[ref.base]
            if pool.block is None:
                self.fail("E304", f"pool `{pool.name}` has no block", args[0].span, env=env,
                          help=f"declare `block …;` in pool `{pool.name}`")
            return self.num(pool.block, e.span)
        if f == "cost":
            if len(args) < 2:
                self.fail("E221", "`cost` takes the resource(s) and an amount: `cost(kv, n)`", e.span,
                          env=env)
            targets = []
            for a in args[:-1]:
                name = head_name(a)
                kind = self.kind_of(name) if name else None
                if name in env.subst:
                    sub, senv = env.subst[name]
                    name = head_name(sub) if not isinstance(sub, (int, float)) else None
                    kind = self.kind_of(name) if name else None
                if kind == "engine" or (kind == "queue" and name in self.stage_fams):
                    kind = "stage"
                if kind not in ("pool", "stage"):
                    self.fail("E302", f"`{text_of(a)}` is not a pool or a stage: cost names the "
                              "resource it is an amount of", a.span, env=env)
                fam = (self.pool_fams if kind == "pool" else self.stage_fams).get(name)
                if fam is None:
                    raise LinkAbort()
                if isinstance(a, A.Index):
                    self.ref_of(a, env, kind)  # checks the index
                targets.append(M.Target(kind, fam.base))
            inner = self.expr(args[-1], env)
            return self.mk(M.ECost(tuple(targets), inner), e.span)
        if f in C.AGGREGATES:
            self.arity(f, args, 1, e, env)
            if not isinstance(args[0], A.Name):
                self.fail("E302", f"`{f}` reads an observation by its name", args[0].span, env=env)
            o = args[0].name
            if o not in self.observe_index:
                self.fail("E201", f"unknown observation `{o}`", args[0].span, env=env,
                          help=did_you_mean(o, self.observe_index))
            return self.mk(M.EAgg(C.AGGREGATES[f], self.observe_index[o]), e.span)
        if f in self.defs:
            d = self.defs[f]
            if d.expr is None:
                self.fail("E302", f"`{f}` is a statement definition: call it as a statement, `{f}(…);`",
                          e.span, env=env)
            return self.expand_def(d, args, e.span, env)
        if env.device is not None and f in env.device.time:
            res = env.device.time[f]
            if len(args) != len(res.params):
                self.fail("E221", f"`{f}` takes {len(res.params)} argument{'s' if len(res.params) != 1 else ''}, "
                          f"not {len(args)}", e.span, env=env)
            if any(w == f"`{f}`" for w, _ in env.expansions):
                self.fail("E222", f"time resource `{f}` reaches itself", e.span, env=env)
            sub = {p: (a, env) for p, a in zip(res.params, args)}
            return self.expr(res.expr, env.fresh(clause=env.clause, engine=env.engine,
                                                 device=env.device).with_subst(sub)
                             .expanding(f"`{f}`", e.span))
        if f in self.device_time_names:
            self.fail("E501", f"`{f}` is a device's time resource, read only in its engine's `execute`",
                      e.span, env=env)
        if self.kind_of(f) == "engine":
            self.fail("E302", f"engine `{f}`'s request is a statement: `{f}(…);` in the server",
                      e.span, env=env)
        cands = set(C.FUNCTIONS) | set(C.POOL_QUERIES) | set(C.STAGE_QUERIES) | set(self.defs) | \
            C.OTHER_FUNCTIONS | set(C.AGGREGATES)
        self.fail("E201", f"unknown function `{f}`", e.fn.span, env=env, help=did_you_mean(f, cands))

    def arity(self, f: str, args, n: int, e: A.Call, env: Env):
        if len(args) != n:
            self.fail("E221", f"`{f}` takes {n} argument{'s' if n != 1 else ''}, not {len(args)}",
                      e.span, env=env)

    def expand_def(self, d: A.Def, args, span: Span, env: Env) -> M.Expr:
        if len(args) != len(d.params):
            self.fail("E221", f"`{d.name}` takes {len(d.params)} argument{'s' if len(d.params) != 1 else ''}, "
                      f"not {len(args)}", span, env=env)
        if any(w == f"`{d.name}`" for w, _ in env.expansions):
            self.fail("E222", f"definition `{d.name}` reaches itself", span, env=env)
        self.check_def_args(d, args, env, statement=False)
        sub = {p: (a, env) for p, a in zip(d.params, args)}
        benv = env.fresh(clause=env.clause, engine=env.engine, device=env.device,
                         in_request=env.in_request).with_subst(sub).expanding(f"`{d.name}`", span)
        return self.expr(d.expr, benv)

    def check_def_args(self, d: A.Def, args, env: Env, statement: bool):
        body_names = names_read(d.expr if d.expr is not None else d.body)
        for p, a in zip(d.params, args):
            if self.is_ref_arg(a, env):
                continue
            try:
                v = self.expr(a, env)
            except LinkAbort:
                continue
            if draws(v) and body_names.get(p, 0) > 1:
                self.fail("E223", f"this argument draws and `{d.name}` reads `{p}` "
                          f"{body_names[p]} times: each read would draw again", a.span, env=env,
                          help=f"sample into an attribute first (`set x = …;`) and pass `x`")
            if statement and any(type(x) is M.EQuery or (type(x) is M.ECtx and x.var == "Now")
                                 for x in walk(v)):
                self.fail("E224", "an argument of a statement definition cannot read the clock or live "
                          "state: the body may use it after time passes", a.span, env=env,
                          help="capture it with `set x = …;` first and pass the attribute")

    def is_ref_arg(self, a, env: Env) -> bool:
        n = head_name(a)
        if n is None:
            return False
        if n in env.subst:
            sub, senv = env.subst[n]
            if isinstance(sub, (int, float)):
                return False
            return self.is_ref_arg(sub, senv)
        return self.kind_of(n) in ("pool", "stage", "engine", "queue")

    def ref_of(self, a, env: Env, kind: str) -> M.Ref:
        """A pool or stage reference from an expression-shaped or Ref AST."""
        if isinstance(a, A.Ref):
            parts = [(p.name, p.index, p.span) for p in a.parts]
        else:
            parts = _ref_parts(a)
            if parts is None:
                self.fail("E302", f"expected a {kind}, found an expression", a.span, env=env)
        name, index, span = parts[0]
        if name in env.subst and len(parts) == 1:
            sub, senv = env.subst[name]
            if isinstance(sub, (int, float)):
                self.fail("E302", f"`{name}` is a number, not a {kind}", span, env=env)
            r = self.ref_of(sub, senv, kind)
            if index is not None:
                self.fail("E302", f"`{name}` is already one {kind}; it takes no index", span, env=env)
            return r
        if len(parts) > 1:
            head_kind = self.kind_of(name)
            if head_kind == "queue":
                name, index, span = entries.member_parts(self, parts, env, kind)
                parts = [(name, index, span)]
            else:
                self.fail("E201", f"unknown {kind} `{_ref_text(parts)}`", a.span, env=env)
        k = self.kind_of(name)
        if kind == "stage" and k == "engine":
            k = "stage"
        if k == "queue":
            fams = self.pool_fams if kind == "pool" else self.stage_fams
            if name in fams:
                k = kind
            elif kind == "stage" and getattr(self.queues.get(name), "stage", False):
                raise LinkAbort()  # it declares one, refused where it is (`serve ps(-1);`)
            elif kind == "stage":
                self.fail("E302", f"queue `{name}` declares no stage", span, env=env,
                          help="its stage is `serve KIND;` or `engine on DEVICE { … }`")
            else:
                self.fail("E302", f"`{name}` is a queue, not a pool: its pools are `{name}.NAME`", span,
                          env=env)
        if k != kind:
            if k is None:
                cands = self.pool_fams if kind == "pool" else self.stage_fams
                self.fail("E201", f"unknown {kind} `{name}`", span, env=env,
                          help=did_you_mean(name, cands))
            self.fail("E302", f"`{name}` is {a_(k)}, not a {kind}", span, env=env)
        fam = (self.pool_fams if kind == "pool" else self.stage_fams).get(name)
        if fam is None:
            raise LinkAbort()  # its declaration failed and was reported
        idx = None
        if index is not None:
            if not fam.array:
                self.fail("E302", f"{kind} `{name}` is not an array; it takes no index", span, env=env)
            idx = self.expr(index, env)
            v = const_value(idx)
            if v is not None and not (0 <= v < fam.count and v == math.floor(v)):
                self.fail("E402", f"index {fmt(v)} out of range for `{name}`, which has {fam.count} "
                          f"member{'s' if fam.count != 1 else ''}", index.span, env=env,
                          help=f"an index is a whole number from 0 to {fam.count - 1}")
        elif fam.count > 1:
            self.fail("E301", f"{kind} `{name}` is an array of {fam.count}: name one member", span,
                      env=env, help=f"write `{name}[j]`")
        return self.mk(M.Ref(fam.base, fam.count, idx), span)


def _ref_parts(a):
    """`kv` / `kv[j]` / `D[j].kv` as [(name, index, span)], or None."""
    if isinstance(a, A.Name):
        return [(a.name, None, a.span)]
    if isinstance(a, A.Index):
        inner = _ref_parts(a.obj)
        if inner is None or inner[-1][1] is not None:
            return None
        name, _, sp = inner[-1]
        return inner[:-1] + [(name, a.index, a.span)]
    if isinstance(a, A.Dot):
        inner = _ref_parts(a.obj)
        if inner is None:
            return None
        return inner + [(a.attr, None, a.span)]
    return None


def _ref_text(parts) -> str:
    return ".".join(n + ("[…]" if i is not None else "") for n, i, _ in parts)

