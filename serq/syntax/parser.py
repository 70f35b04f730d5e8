"""The parser: the grammar's LALR(1) tables run by serQ's driver
(serq.syntax.lalr; lark built the tables and is not imported), a transformer
to the AST, and parse errors phrased in words (expression, `;`, end of
input), not token names."""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache
from typing import Optional

from ..diag import LONE_CR, Diagnostic, SerqError, Sources, Span
from . import ast as A, tables
from .lalr import Parser, Token, Transformer, UnexpectedCharacters, UnexpectedInput, UnexpectedToken, with_meta


@lru_cache(maxsize=None)
def _parser() -> Parser:
    """The parser: the grammar's tables (serq.syntax.tables), read from their
    file where it is the grammar's, else built."""
    return Parser(tables.load())


class _Names(list):
    """A list of names (strings), with where each is written (``spans``)."""

    def __init__(self, tokens, spans):
        super().__init__(str(t) for t in tokens)
        self.spans = spans


class _Builder(Transformer):
    """Grammar rules → AST nodes.  A rule without a handler fails loudly."""

    def __init__(self, path: str):
        self.path = path

    def __default__(self, data, children, meta):  # pragma: no cover - a grammar/handler mismatch
        raise NotImplementedError(f"no AST handler for grammar rule {data!r}")

    # -- spans --
    def sp(self, meta) -> Span:
        if getattr(meta, "empty", False) or not hasattr(meta, "line"):
            return Span(self.path, 1, 1, 1, 2)
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def tsp(self, tok: Token) -> Span:
        return Span(self.path, tok.line, tok.column, tok.end_line, tok.end_column)

    # -- program --
    @with_meta
    def start(self, meta, children):
        top, main, after, seen = [], None, [], False
        for c in children:
            if isinstance(c, A.Main) and not seen:
                main, seen = c, True
            elif seen:
                after.append(c)
            else:
                top.append(c)
        return A.Program(self.sp(meta), top, main, after, self.path)

    @with_meta
    def library(self, meta, children):
        return A.Program(self.sp(meta), list(children), None, [], self.path)

    def expr_start(self, c):
        return c[0]

    @with_meta
    def main(self, meta, children):
        return A.Main(self.sp(meta), [c for c in children if not isinstance(c, Token)])

    @with_meta
    def let_item(self, meta, c):
        return A.Let(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def use_item(self, meta, c):
        return A.Use(self.sp(meta), str(c[0])[1:-1])

    @with_meta
    def def_item(self, meta, c):
        name, params, body = c
        kind, payload = body
        return A.Def(self.sp(meta), str(name), params or [],
                     payload if kind == "expr" else None,
                     payload if kind == "block" else None, self.tsp(name))

    @with_meta
    def def_block(self, meta, c):
        return ("block", A.Block(self.sp(meta), list(c)))

    @with_meta
    def def_expr(self, meta, c):
        return ("expr", c[0])

    @with_meta
    def def_eq(self, meta, c):
        return ("expr", c[0])

    def names(self, c):
        return _Names(c, [self.tsp(t) for t in c])

    def count(self, c):
        return c[0]

    # -- pools --
    @with_meta
    def pool_item(self, meta, c):
        name, count, *opts = c
        return A.PoolDecl(self.sp(meta), str(name), count, list(opts), name_span=self.tsp(name))

    @with_meta
    def pool_on_item(self, meta, c):
        name, owner, device, *opts = c
        return A.PoolDecl(self.sp(meta), str(name), None, list(opts), owner=str(owner),
                          device=str(device) if device is not None else None, name_span=self.tsp(name))

    q_pool_on = pool_on_item

    @with_meta
    def q_pool(self, meta, c):
        name, *opts = c
        return A.PoolDecl(self.sp(meta), str(name), None, list(opts), name_span=self.tsp(name))

    def _opt(kind, nexprs=0):
        @with_meta
        def f(self, meta, c):
            return A.Opt(self.sp(meta), kind, exprs=list(c[:nexprs]) if nexprs else [])
        return f

    opt_cap = _opt("cap", 1)
    opt_block = _opt("block", 1)
    opt_evict_lru = _opt("evict_lru")
    opt_preempt_none = _opt("preempt_none")

    @with_meta
    def opt_preempt_lifo(self, meta, c):
        return A.Opt(self.sp(meta), "preempt_lifo", then=c[0])

    opt_queue_fifo = _opt("queue_fifo")
    opt_reserve_held = _opt("reserve_held")
    opt_reserve_held_by = _opt("reserve_held", 1)
    opt_cache_shared = _opt("cache_shared")
    opt_cache_shared_fifo = _opt("cache_shared_fifo")
    opt_cache_shared_tree = _opt("cache_shared_tree")
    opt_cache_at = _opt("cache_at", 1)

    @with_meta
    def opt_evict_by(self, meta, c):
        return A.Opt(self.sp(meta), "evict_by", exprs=c[0])

    @with_meta
    def opt_queue_by(self, meta, c):
        return A.Opt(self.sp(meta), "queue_by", exprs=c[0])

    @with_meta
    def opt_queue_ordered(self, meta, c):
        tail = c[2]
        return A.Opt(self.sp(meta), "queue_ordered", exprs=c[1], word=str(c[0]),
                     tail=None if tail is None else list(tail))

    def queue_tail(self, c):
        return (c[0], c[1])

    @with_meta
    def opt_preempt_by(self, meta, c):
        return A.Opt(self.sp(meta), "preempt_by", exprs=c[0], word=c[1], then=c[2])

    def requeue(self, c):
        return str(c[0])

    def then_free(self, c):
        return c[0]

    @with_meta
    def opt_spill(self, meta, c):
        to, via, work, when = c
        return A.Opt(self.sp(meta), "spill", exprs=[work, when], refs=[to, via])

    @with_meta
    def opt_admit_via(self, meta, c):
        return A.Opt(self.sp(meta), "admit_via", word=str(c[0]))

    # -- stages --
    @with_meta
    def stage_item(self, meta, c):
        name, count, kind = c
        return A.StageDecl(self.sp(meta), str(name), count, kind, self.tsp(name))

    @with_meta
    def kind_fifo(self, meta, c):
        return A.Kind(self.sp(meta), "fifo", c[0] if c else None)

    @with_meta
    def kind_ps(self, meta, c):
        return A.Kind(self.sp(meta), "ps", c[0])

    @with_meta
    def kind_delay(self, meta, c):
        return A.Kind(self.sp(meta), "delay")

    @with_meta
    def stage_step_old(self, meta, c):
        name, count, *items = c
        return A.StageDecl(self.sp(meta), str(name), count, A.Kind(self.sp(meta), "step", None, list(items)),
                           self.tsp(name))

    @with_meta
    def oldstep(self, meta, c):
        return (str(c[0]), c[1], self.sp(meta))

    # -- devices and engines --
    @with_meta
    def device_item(self, meta, c):
        name, count, *res = c
        return A.DeviceDecl(self.sp(meta), str(name), count, list(res), self.tsp(name))

    @with_meta
    def q_device(self, meta, c):
        name, *res = c
        return A.DeviceDecl(self.sp(meta), str(name), None, list(res), self.tsp(name))

    @with_meta
    def res_time(self, meta, c):
        return A.TimeResource(self.sp(meta), str(c[0]), c[1] or [], c[2])

    @with_meta
    def res_cap(self, meta, c):
        return A.CapResource(self.sp(meta), str(c[0]), c[1])

    @with_meta
    def engine_item(self, meta, c):
        name, count, device, *items = c
        return A.EngineDecl(self.sp(meta), str(name), count, str(device), list(items), self.tsp(name))

    @with_meta
    def q_engine(self, meta, c):
        device, *items = c
        return A.EngineDecl(self.sp(meta), "", None, str(device), list(items), self.sp(meta))

    @with_meta
    def e_cap(self, meta, c):
        return A.ECap(self.sp(meta), str(c[0]), c[1], c[2])

    @with_meta
    def e_granule(self, meta, c):
        return A.EGranule(self.sp(meta), c[0])

    @with_meta
    def e_state(self, meta, c):
        return A.EState(self.sp(meta), str(c[0]), c[1])

    @with_meta
    def e_schedule(self, meta, c):
        lets = [x for x in c if isinstance(x, A.Let)]
        stmts = [x for x in c if not isinstance(x, A.Let)]
        return A.ESchedule(self.sp(meta), lets, stmts)

    @with_meta
    def slet(self, meta, c):
        return A.Let(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def e_execute(self, meta, c):
        return A.EExecute(self.sp(meta), c[0])

    @with_meta
    def e_request(self, meta, c):
        params, *stmts = c
        return A.ERequest(self.sp(meta), params or [], list(stmts))

    @with_meta
    def s_advance(self, meta, c):
        return A.SAdvance(self.sp(meta), c[0], c[1], c[2])

    @with_meta
    def s_admit(self, meta, c):
        return A.SAdmit(self.sp(meta), c[0], c[1], c[2], c[3])

    @with_meta
    def s_exclusive(self, meta, c):
        return A.SExclusive(self.sp(meta), c[0])

    @with_meta
    def s_branch(self, meta, c):
        return A.SBranch(self.sp(meta), c[0], c[1], c[2])

    def sblock(self, c):
        return list(c)

    @with_meta
    def s_set(self, meta, c):
        return A.SSet(self.sp(meta), str(c[0]), c[1])

    def only(self, c):
        return c[0]

    def swhile(self, c):
        return c[0]

    def atmost(self, c):
        return c[0]

    @with_meta
    def order_admission(self, meta, c):
        return A.Order(self.sp(meta), "admission")

    @with_meta
    def order_by(self, meta, c):
        return A.Order(self.sp(meta), "by", c[0])

    @with_meta
    def order_decode_first(self, meta, c):
        return A.Order(self.sp(meta), "decode_first")

    @with_meta
    def taking(self, meta, c):
        *takes, reuse = c
        return A.Taking(self.sp(meta), list(takes), reuse)

    @with_meta
    def take(self, meta, c):
        return A.Take(self.sp(meta), c[0], c[1], c[2])

    def reserve(self, c):
        return c[0]

    def reuse(self, c):
        return c[0]

    @with_meta
    def r_prefill(self, meta, c):
        return A.RPrefill(self.sp(meta), c[0], c[1])

    @with_meta
    def r_decode(self, meta, c):
        return A.RDecode(self.sp(meta), c[0], c[1])

    @with_meta
    def r_await(self, meta, c):
        return A.RAwait(self.sp(meta))

    @with_meta
    def r_admission(self, meta, c):
        return A.RAdmission(self.sp(meta), list(c))

    @with_meta
    def r_cache(self, meta, c):
        return A.RCache(self.sp(meta), c[0])

    @with_meta
    def binding(self, meta, c):
        return A.Binding(self.sp(meta), str(c[0]), c[1])

    def growing(self, c):
        return c[0]

    # -- workload --
    @with_meta
    def workload_item(self, meta, c):
        return A.Workload(self.sp(meta), list(c))

    @with_meta
    def wl_arrive(self, meta, c):
        return A.WArrive(self.sp(meta), str(c[0]), c[1])

    @with_meta
    def wl_trace(self, meta, c):
        return A.WTrace(self.sp(meta), str(c[0])[1:-1], c[1] is not None)

    @with_meta
    def wl_init(self, meta, c):
        return A.WBlock(self.sp(meta), "init", c[0])

    @with_meta
    def wl_turn(self, meta, c):
        return A.WBlock(self.sp(meta), "turn", c[0])

    @with_meta
    def wl_session(self, meta, c):
        return A.WBlock(self.sp(meta), "session", c[0])

    @with_meta
    def wl_hidden(self, meta, c):
        return A.WHidden(self.sp(meta), list(c[0]), c[0].spans)

    @with_meta
    def server_item(self, meta, c):
        return A.Server(self.sp(meta), c[0])

    # -- queues and relations --
    @with_meta
    def queue_item(self, meta, c):
        name, count, roles, *items = c
        roles = roles or []
        return A.QueueDecl(self.sp(meta), str(name), count, [str(r) for r in roles], list(items),
                           self.tsp(name), [self.tsp(r) for r in roles])

    def roles(self, c):
        return list(c)

    @with_meta
    def q_serve(self, meta, c):
        return A.QServe(self.sp(meta), c[0], c[1])

    @with_meta
    def q_nic(self, meta, c):
        return A.QNic(self.sp(meta), c[0])

    @with_meta
    def q_entry(self, meta, c):
        verb, params, src, block = c
        vspan = self.tsp(verb) if isinstance(verb, Token) else self.sp(meta)
        return A.QEntry(self.sp(meta), str(verb), params or [], str(src) if src is not None else None,
                        block, vspan)

    def verb_prefill(self, c):
        return "prefill"

    def verb_decode(self, c):
        return "decode"

    def verb_transfer(self, c):
        return "transfer"

    @with_meta
    def share_item(self, meta, c):
        return A.ShareDecl(self.sp(meta), str(c[0]))

    @with_meta
    def relation_item(self, meta, c):
        reader, verb, source, latency, share = c
        return A.Relation(self.sp(meta), str(reader), str(verb), str(source), latency, str(share))

    @with_meta
    def gauge_item(self, meta, c):
        return A.GaugeDecl(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def claim_item(self, meta, c):
        name, given, (form, stage, expr) = c
        return A.ClaimDecl(self.sp(meta), str(name), given, form, stage, expr, self.tsp(name))

    def given(self, c):
        return c[0]

    def claim_every(self, c):
        return ("every", c[0], c[1])

    def claim_some(self, c):
        return ("some", c[0], c[1])

    def claim_end(self, c):
        return ("end", None, c[0])

    @with_meta
    def runblock_item(self, meta, c):
        return A.RunBlock(self.sp(meta), [(str(c[i]), c[i + 1], self.tsp(c[i])) for i in range(0, len(c), 2)])

    def instance(self, c):
        return c[0]

    # -- statements --
    @with_meta
    def block(self, meta, c):
        return A.Block(self.sp(meta), list(c))

    @with_meta
    def st_turn(self, meta, c):
        return A.Turn(self.sp(meta))

    @with_meta
    def st_request(self, meta, c):
        return A.RequestStmt(self.sp(meta))

    @with_meta
    def st_size(self, meta, c):
        return A.SizeDecl(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def st_cost(self, meta, c):
        return A.CostDecl(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def st_cost_record(self, meta, c):
        return A.CostRecord(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    def fields(self, c):
        return list(c)

    @with_meta
    def field(self, meta, c):
        return A.CostField(self.sp(meta), str(c[0]), c[1])

    @with_meta
    def st_set(self, meta, c):
        return A.Set(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def st_observe(self, meta, c):
        return A.Observe(self.sp(meta), str(c[0]), c[1], self.tsp(c[0]))

    @with_meta
    def st_hold(self, meta, c):
        pools = [x for x in c if isinstance(x, A.HoldPool)]
        rest = c[len(pools):]
        reuse, admission, body, cache, lease = rest
        return A.Hold(self.sp(meta), pools, reuse, admission or [], body, cache, lease)

    @with_meta
    def holdpool(self, meta, c):
        return A.HoldPool(self.sp(meta), c[0], c[1], c[2])

    @with_meta
    def admission(self, meta, c):
        return c[0]

    @with_meta
    def binding_list(self, meta, c):
        out = []
        for i in range(0, len(c), 2):
            name, expr = c[i], c[i + 1]
            out.append(A.Binding(Span(self.path, name.line, name.column, expr.span.end_line,
                                      expr.span.end_col), str(name), expr))
        return out

    def cache(self, c):
        return c[0]

    @with_meta
    def lease(self, meta, c):
        return A.Lease(self.sp(meta), c[0], c[1])

    @with_meta
    def st_grow(self, meta, c):
        return A.Grow(self.sp(meta), c[0], c[1])

    @with_meta
    def st_drop(self, meta, c):
        return A.Drop(self.sp(meta), c[0])

    @with_meta
    def st_content(self, meta, c):
        return A.Content(self.sp(meta), c[0], c[1])

    @with_meta
    def st_release(self, meta, c):
        return A.Release(self.sp(meta), c[0])

    @with_meta
    def st_load(self, meta, c):
        return A.Load(self.sp(meta), c[0], c[1])

    @with_meta
    def st_run(self, meta, c):
        ref, mode, work, growing = c
        return A.Run(self.sp(meta), [ref], mode, work, growing)

    def mode_prefill(self, c):
        return "prefill"

    def mode_decode(self, c):
        return "decode"

    @with_meta
    def st_run_multi(self, meta, c):
        *refs, work = c
        return A.Run(self.sp(meta), list(refs), None, work, None)

    @with_meta
    def st_run_own(self, meta, c):
        return A.Run(self.sp(meta), [], None, c[0], None)

    @with_meta
    def st_branch(self, meta, c):
        return A.Branch(self.sp(meta), c[0], c[1], c[2], False)

    @with_meta
    def st_branch_with(self, meta, c):
        return A.Branch(self.sp(meta), c[0], c[1], c[2], True)

    @with_meta
    def st_while(self, meta, c):
        return A.While(self.sp(meta), c[0], c[1])

    @with_meta
    def st_loop(self, meta, c):
        return A.Loop(self.sp(meta), c[0])

    @with_meta
    def st_fork(self, meta, c):
        return A.Fork(self.sp(meta), c[0])

    @with_meta
    def st_join(self, meta, c):
        return A.Join(self.sp(meta))

    @with_meta
    def st_choose(self, meta, c):
        return A.Choose(self.sp(meta), str(c[0]), c[1], c[2], self.tsp(c[0]))

    @with_meta
    def st_end(self, meta, c):
        return A.End(self.sp(meta))

    @with_meta
    def st_mark(self, meta, c):
        return A.Mark(self.sp(meta), str(c[0]))

    @with_meta
    def st_transfer(self, meta, c):
        where, work, src, dst, tokens = c
        return A.Transfer(self.sp(meta), where, work, src, dst, tokens)

    @with_meta
    def st_tool(self, meta, c):
        return A.Tool(self.sp(meta), c[0], c[1])

    @with_meta
    def tool_where(self, meta, c):
        w = c[0]
        if w is None:
            return A.Where(self.sp(meta), None, [])
        return w

    @with_meta
    def tool_index(self, meta, c):
        return A.Where(self.sp(meta), c[0], [])

    @with_meta
    def tool_on(self, meta, c):
        return A.Where(self.sp(meta), None, list(c))

    @with_meta
    def st_call(self, meta, c):
        target, src, to = c
        return A.CallStmt(self.sp(meta), target, src, to)

    def from_clause(self, c):
        return c[0]

    def to_clause(self, c):
        return (c[0], c[1])

    # -- references --
    @with_meta
    def ref(self, meta, c):
        return A.Ref(self.sp(meta), list(c))

    @with_meta
    def refpart(self, meta, c):
        return A.RefPart(self.sp(meta), str(c[0]), c[1])

    # -- expressions --
    def exprs(self, c):
        return list(c)

    @with_meta
    def e_cond(self, meta, c):
        return A.Cond(self.sp(meta), c[0], c[1], c[2])

    @with_meta
    def e_or(self, meta, c):
        return A.Binary(self.sp(meta), "||", c[0], c[1])

    @with_meta
    def e_and(self, meta, c):
        return A.Binary(self.sp(meta), "&&", c[0], c[1])

    @with_meta
    def e_cmp(self, meta, c):
        return A.Binary(self.sp(meta), str(c[1]), c[0], c[2])

    @with_meta
    def e_add(self, meta, c):
        return A.Binary(self.sp(meta), str(c[1]), c[0], c[2])

    @with_meta
    def e_mul(self, meta, c):
        return A.Binary(self.sp(meta), str(c[1]), c[0], c[2])

    @with_meta
    def e_neg(self, meta, c):
        return A.Unary(self.sp(meta), "-", c[0])

    @with_meta
    def e_not(self, meta, c):
        return A.Unary(self.sp(meta), "!", c[0])

    @with_meta
    def e_pow(self, meta, c):
        return A.Binary(self.sp(meta), "^", c[0], c[1])

    @with_meta
    def e_dot(self, meta, c):
        return A.Dot(self.sp(meta), c[0], str(c[1]))

    @with_meta
    def e_index(self, meta, c):
        return A.Index(self.sp(meta), c[0], c[1])

    @with_meta
    def e_call(self, meta, c):
        return A.Call(self.sp(meta), c[0], c[1] or [])

    @with_meta
    def e_num(self, meta, c):
        return A.Num(self.sp(meta), float(str(c[0])))

    @with_meta
    def e_name(self, meta, c):
        return A.Name(self.sp(meta), str(c[0]))

    @with_meta
    def e_string(self, meta, c):
        return A.Str(self.sp(meta), str(c[0])[1:-1])

    @with_meta
    def e_draw(self, meta, c):
        return A.Draw(self.sp(meta), str(c[0]), c[1] or [])

    @with_meta
    def e_agg(self, meta, c):
        kind, var, count, body = c
        return A.Agg(self.sp(meta), str(kind), str(var), count, body)


# ---------------------------------------------------------------- errors

_WORDS = {
    "NAME": "a name", "NUMBER": "a number", "STRING": "a string in quotes",
    "CMP_OP": "a comparison", "ADD_OP": "`+` or `-`", "MUL_OP": "`*` or `/`",
    "MODE": "`prefill` or `decode`", "ARRIVAL_KIND": "an arrival (`poisson`, `renewal`, `closed`, `batch`, `none`)",
    "SHARE_KIND": "`maxmin` or `bottleneck`", "RELATION": "`pull` or `push`",
    "HEAD_OR_TAIL": "`head` or `tail`", "ORDERED": "`ordered`", "MAIN": "`main`",
    "$END": "end of input",
}
_EXPR_START = {"NUMBER", "NAME", "LPAR", "TILDE", "MINUS", "BANG"}


_STATEMENT_START = {"SET", "HOLD", "RUN", "OBSERVE", "BRANCH"}
_ITEM_START = {"POOL", "STAGE", "WORKLOAD", "SERVER", "DEVICE"}


def _terminal_words(names: set[str]) -> list[str]:
    terminals = {t.name: t for t in _parser().terminals}
    words = []
    names = set(names)
    if _STATEMENT_START <= names:
        words.append("a statement")
        names = {n for n in names if n in ("RBRACE", "$END")}
    elif _ITEM_START <= names:
        words.append("a declaration")
        names = {n for n in names if n in ("RBRACE", "$END")}
    if _EXPR_START <= names or {"NUMBER", "NAME", "LPAR", "TILDE"} <= names:
        words.append("an expression")
        names -= _EXPR_START | {"STRING"}
    for n in sorted(names):
        if n in _WORDS:
            words.append(_WORDS[n])
        elif n in terminals and terminals[n].type == "str":
            words.append(f"`{terminals[n].value}`")
        else:
            words.append(n.lower())
    # keep the list readable
    words = sorted(set(words), key=lambda w: (w not in ("an expression", "a statement", "a declaration"), w))
    return words


def _join(words: list[str]) -> str:
    if len(words) > 8:
        words = words[:8] + ["…"]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _found(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return f"`{tok}`"


# ---------------------------------------------------------------- the first hour
# What a new user writes first and the grammar alone answers badly: a
# statement without its `;`, `if`, `=` for `==`, an assignment without
# `set`, a program without `fn main()`.

_ITEM_WORDS = {"pool", "stage", "device", "engine", "workload", "server", "queue", "share", "gauge", "claim"}


def _first_hour(path: str, text: str, e: UnexpectedInput, start: str) -> Optional[SerqError]:
    if not isinstance(e, UnexpectedToken):
        return None
    tok = e.token
    pos = _offset(text, tok)
    stmt = _statement_text(text, pos)
    words = stmt.split()
    span = _tok_span(path, text, tok)
    if start == "start" and tok.type != "$END" and str(tok) in _ITEM_WORDS and "FN" in e.expected \
            and not re.search(r"\bfn\s+main\b", _code(text)):
        return SerqError(Diagnostic(
            "E104", f"`{tok}` is declared inside `fn main() {{ … }}`, and this program has no `main`",
            span, help="the deployment and its workload are the body of `fn main() { … }`; only "
                       "`let`, `def` and `use` stand above it"))
    if words and words[0] in ("if", "elif") or words[:2] == ["else", "if"]:
        guard = stmt[stmt.find("(") + 1:stmt.rfind(")")].strip() if "(" in stmt and ")" in stmt else "…"
        return SerqError(Diagnostic(
            "E102", "serQ has no `if`: a test is `branch (…) { … } else { … }`", _word_span(path, text, pos, stmt),
            help=f"write `branch ({guard or '…'}) {{ … }}`; a guard is 0 or 1"))
    if str(tok) == "=" and words and words[0] in ("branch", "while") and "(" in stmt:
        lhs = stmt.split("(", 1)[1].strip()
        rhs = _code(text)[pos + 1:].split(")", 1)[0].split("\n", 1)[0].strip()
        return SerqError(Diagnostic(
            "E102", "a test compares with `==`: `=` is only the assignment of `set x = …;`", span,
            help=f"write `{words[0]} ({lhs} == {rhs})`; `!=`, `<`, `<=`, `>` and `>=` compare too"))
    if str(tok) == "=" and len(words) == 1 and re.fullmatch(r"[A-Za-z_][A-Za-z_0-9.]*", words[0]):
        return SerqError(Diagnostic(
            "E102", f"an assignment is a `set` statement: `set {words[0]} = …;`", span,
            help=f"write `set {words[0]} = …;` (a constant of main is `let {words[0]} = …;`)"))
    missing = _missing_semicolon(path, text, tok, pos, start)
    if missing is not None:
        return missing
    return _misspelt(path, text, tok, pos, stmt, set(e.expected))


def _keywords() -> list[str]:
    """The grammar's keywords (its terminals that are words)."""
    return sorted({w for t in _parser().terminals for w in _terminal_keywords(t.name)})


def _terminal_keywords(name: str) -> list[str]:
    """The words a terminal is: one for a keyword (`stage`), several for an
    alternation of words (`(?:pull|push)`), none for any other."""
    t = _parser().by_name.get(name)
    if t is None:
        return []
    if t.type == "str":
        return [t.value] if re.fullmatch(r"[a-z_]+", t.value) else []
    m = re.fullmatch(r"\(\?:([a-z_]+(?:\|[a-z_]+)*)\)", t.value)
    return m.group(1).split("|") if m else []


def _closest(word: str, candidates: list[str]) -> Optional[str]:
    """The candidate a typo of ``word`` most likely is: the fewest edits
    (insertions, deletions, substitutions and swaps of two neighbours), at
    most one for a short word and two for a longer one."""
    best, best_d = None, None
    limit = 1 if len(word) <= 4 else 2
    for c in candidates:
        d = _edits(word.lower(), c)
        if d <= limit and (best_d is None or d < best_d):
            best, best_d = c, d
    return best


def _edits(a: str, b: str) -> int:
    """The optimal-string-alignment distance of two words."""
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _misspelt(path: str, text: str, tok: Token, pos: int, stmt: str, expected: set) -> Optional[SerqError]:
    """A keyword misspelt where a declaration or a statement starts
    (`stgae svc : fifo;`, `workloda {`, `sever {`): the parser read it as a
    name and failed at the next token; said at the word, with the keyword it
    is close to."""
    words = stmt.split()
    if not words or len(words) > 2 or tok.type == "$END":
        return None
    word = words[0]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", word) or len(word) < 3:
        return None
    keywords = _keywords()
    if word in keywords:
        return None
    close = _closest(word, keywords)
    if close is None:
        return None
    return SerqError(Diagnostic("E102", f"expected a declaration or a statement, found `{word}`",
                                _word_span(path, text, pos, stmt), help=f"did you mean `{close}`?"))


def _open_brace(text: str, pos: int) -> Optional[tuple[int, str]]:
    """The innermost `{` still open at ``pos``: its offset and the words
    before it (``workload``, ``hold kv (…)``)."""
    code = _code(text)
    opened = []
    for i, ch in enumerate(code[:pos]):
        if ch == "{":
            opened.append(i)
        elif ch == "}" and opened:
            opened.pop()
    if not opened:
        return None
    at = opened[-1]
    k = max(code.rfind(c, 0, at) for c in ";{}")
    head = " ".join(code[k + 1:at].split())
    if len(head) > 40:
        head = "…" + head[-39:]
    return at, head


def _offset(text: str, tok: Token) -> int:
    if tok.type == "$END" or tok.start_pos is None:
        return len(text)
    return tok.start_pos


def _tok_span(path: str, text: str, tok: Token) -> Span:
    if tok.type == "$END" or tok.line is None:
        return _point(path, text, len(text.rstrip()))
    return Span(path, tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + len(str(tok)))


def _point(path: str, text: str, pos: int) -> Span:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return Span(path, line, col, line, col + 1)


def _code(text: str) -> str:
    """The text with comments and strings blanked (same length)."""
    return re.sub(r'//[^\n]*|"[^"\n]*"', lambda m: " " * len(m.group()), text)


def _statement_text(text: str, pos: int) -> str:
    """The source from the start of the statement that holds ``pos`` (after
    the last `;`, `{` or `}` before it) to ``pos``."""
    code = _code(text)
    k = max(code.rfind(c, 0, pos) for c in ";{}")
    return code[k + 1:pos]


def _word_span(path: str, text: str, pos: int, stmt: str) -> Span:
    k = pos - len(stmt) + (len(stmt) - len(stmt.lstrip()))
    m = re.match(r"[A-Za-z_]+", text[k:])
    sp = _point(path, text, k)
    return Span(path, sp.line, sp.col, sp.line, sp.col + (len(m.group()) if m else 1))


def _missing_semicolon(path: str, text: str, tok: Token, pos: int, start: str) -> Optional[SerqError]:
    """A `;` missing at the end of the line before the token that failed:
    reported there, at the end of the statement that lacks it, when the
    program parses on past the failing token with one written there."""
    code = _code(text)
    line_start = code.rfind("\n", 0, pos) + 1
    before = code[:line_start].rstrip()
    if not before or before[-1] in ";{":
        return None
    at = len(before)
    fixed = text[:at] + ";" + text[at:]
    try:
        _parser().parse(fixed, start)
    except UnexpectedToken as again:
        if _offset(fixed, again.token) <= pos + 1:    # the `;` does not get the parse past the token
            return None
    except UnexpectedInput:
        return None
    sp = _point(path, text, at - 1)
    return SerqError(Diagnostic("E102", "expected `;` at the end of this statement",
                                Span(path, sp.line, sp.col + 1, sp.line, sp.col + 2),
                                help="a statement ends with `;`"))


def _parse_error(path: str, text: str, e: UnexpectedInput) -> SerqError:
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        span = Span(path, e.line, e.column, e.line, e.column + 1)
        if ch == '"':
            return SerqError(Diagnostic("E101", "unterminated string", span,
                                        help="a string ends with `\"` on the same line"))
        return SerqError(Diagnostic("E101", f"unexpected character {_char(ch)}", span, help=_char_help(ch)))
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            lines = text.split("\n")
            line = len(lines)
            col = len(lines[-1]) + 1
            while line > 1 and not lines[line - 1].strip():
                line -= 1
                col = len(lines[line - 1]) + 1
            span = Span(path, line, col, line, col + 1)
        else:
            span = Span(path, tok.line, tok.column, tok.end_line or tok.line,
                        tok.end_column or tok.column + len(str(tok)))
        expected = _terminal_words(set(e.expected))
        help_ = _hint(tok, set(e.expected))
        closing = ""
        if "RBRACE" in e.expected and (tok.type == "$END" or str(tok) in _keywords()):
            brace = _open_brace(text, _offset(text, tok))
            if brace is not None:
                at, head = brace
                b = _point(path, text, at)
                closing = f" (closing {'`' + head + ' {`' if head else 'the `{`'} at {b.line}:{b.col})"
                if help_ is None:
                    help_ = f"`{tok}` cannot stand inside {'`' + head + ' { … }`' if head else 'that block'}: " \
                            "is its `}` missing?"
        if help_ is None and tok.type == "NAME" and len(str(tok)) >= 3:
            close = _closest(str(tok), sorted({w for n in e.expected for w in _terminal_keywords(n)}))
            if close is not None:
                help_ = f"did you mean `{close}`?"
        return SerqError(Diagnostic("E102", f"expected {_join(expected)}{closing}, found {_found(tok)}",
                                    span, help=help_))
    return SerqError(Diagnostic("E102", str(e).split("\n")[0]))    # pragma: no cover - the driver raises no other


def _char(ch: str) -> str:
    """A character as a message shows it: one that shows nothing (a control
    character, a space other than ` `, a zero-width or a direction mark) by
    its code point and name."""
    if unicodedata.category(ch)[0] in "CZ":
        name = unicodedata.name(ch, "")
        return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")
    return f"`{ch}`"


def _char_help(ch: str) -> Optional[str]:
    ascii_ = unicodedata.normalize("NFKC", ch)
    if ch in "\u201c\u201d\u201e\u00ab\u00bb":
        return 'a string is written between ASCII quotes, `"…"`'
    if ascii_ != ch and ascii_.isascii() and ascii_.strip():
        return f"did you mean `{ascii_}`?"
    kind = unicodedata.category(ch)[0]
    if kind == "L":
        return "a name is ASCII letters, digits and `_` (a string may hold any character)"
    if kind == "Z":
        return "write a plain space ` ` in its place"
    if kind == "C":
        return "delete it: it shows nothing"
    return None


def _hint(tok: Token, expected: set[str]) -> Optional[str]:
    if "SEMICOLON" in expected and tok.type != "SEMICOLON":
        return "a statement ends with `;`"
    if "RBRACE" in expected and tok.type == "$END":
        return "a block opened with `{` is closed with `}`"
    return None


def _parse(text: str, path: str, start: str):
    if text.startswith("\ufeff"):    # a byte-order mark: not part of the program
        text = text[1:]
    text = LONE_CR.sub("\n", text)     # a lone CR ends a line, as LF and CR LF do (same offsets)
    Sources.add(path, text)
    try:
        tree = _parser().parse(text, start)
    except UnexpectedInput as e:
        raise (_open_comment(path, text, e) or _first_hour(path, text, e, start)
               or _parse_error(path, text, e)) from None
    return _Builder(path).transform(tree)


_COMMENTS = re.compile(r'"[^"\n]*"|//[^\n]*|/\*(?:.|\n)*?\*/|/\*')


def _open_comment(path: str, text: str, e: UnexpectedInput) -> Optional[SerqError]:
    """A `/*` never closed, where the parse failed at or after it: the
    lexer read it as `/` and `*`."""
    failed = e.pos_in_stream if isinstance(e, UnexpectedCharacters) else _offset(text, e.token)
    for m in _COMMENTS.finditer(text):
        if m.group() == "/*" and m.start() <= failed:
            sp = _point(path, text, m.start())
            return SerqError(Diagnostic("E101", "unterminated comment", Span(path, sp.line, sp.col, sp.line, sp.col + 2),
                                        help="a comment opened with `/*` is closed with `*/`"))
    return None


def parse(text: str, path: str = "<input>") -> A.Program:
    """Parse a whole program; raises SerqError with a located message."""
    prog = _parse(text, path, "start")
    return prog


def parse_library(text: str, path: str) -> A.Program:
    """Parse a library (definitions, constants and imports, no main)."""
    return _parse(text, path, "library")


def parse_instance(text: str, path: str) -> A.RunBlock:
    """Parse an instance file: one `run { NAME value; … }`."""
    return _parse(text, path, "instance")


def parse_expr(text: str, path: str = "<expr>") -> A.Expr:
    """Parse one expression (a --set value)."""
    return _parse(text, path, "expr_start")
