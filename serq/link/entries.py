"""Queue entries called: the body in the call's place, an entry's scope (what it reads, holds), a relation's read."""

from __future__ import annotations

import math
from typing import Optional

from ..diag import Span, did_you_mean
from ..ir import model as M
from ..ir.expr import const_value, draws
from ..records import dataclass
from ..syntax import ast as A
from .env import Env
from .nodes import LinkAbort, fmt
from .queues import Entry, QueueInfo


@dataclass
class Scope:
    """The entry an expansion is in: its queue, the member the call names and,
    for `decode (…) from P`, the source member whose lease the body reads."""

    queue: QueueInfo
    entry: Entry
    member: Optional[tuple]    # (index AST, caller Env) or None for a single queue
    source: Optional[tuple]    # (QueueInfo, index AST or None, caller Env)
    assigned: dict             # id(A.Hold) -> frozenset of locals set above it


# ==================================================================== calls
def call_entry(lk, s: A.CallStmt, env: Env, side: str, out: list, ctx) -> None:
    """`Q[j].VERB (args) [from Q2[i]] [to POOL (e)];` — the entry's body in its place."""
    call = s.target
    fn = call.fn
    qname, index = _queue_of(fn.obj)
    q = lk.queues.get(qname) if qname else None
    if q is None:
        raise LinkAbort()  # its declaration failed and was reported
    verb = fn.attr
    where = f"`{qname}{'[…]' if index is not None else ''}.{verb}`"
    if side != "server":
        lk.fail("E280", f"{where}: a queue's entry is called by the deployment (the server), not by the "
                "session", s.span, env=env, help="call it in the server: `server { gw.route(); }`")
    if env.entry is not None and env.entry.queue is q:
        lk.fail("E280", f"{where}: an entry of queue `{q.name}` calls its own queue", s.span, env=env)
    if q.array and index is None:
        lk.fail("E301", f"queue `{qname}` is a family of {q.count}: name one member, "
                f"`{qname}[j].{verb} (…)`", fn.span, env=env,
                help="a family of one is still a family")
    if not q.array and index is not None:
        lk.fail("E302", f"queue `{qname}` is not a family; it takes no index", fn.span, env=env)
    if index is not None:
        _check_index(lk, index, q, env)
    # which entry: a `from` on a decode names a queue, on a transfer the pool the KV leaves
    src_q = src_idx = None
    if s.src is not None and verb == "decode":
        parts = s.src.parts
        src_q = lk.queues.get(parts[0].name)
        if src_q is None or len(parts) != 1:
            lk.fail("E277", f"{where} from `{s.src.text()}`: a decode reads its KV from a queue member, "
                    "`from P[i]`", s.src.span, env=env)
        src_idx = parts[0].index
        if src_q.array and src_idx is None:
            lk.fail("E301", f"queue `{src_q.name}` is a family of {src_q.count}: name the member the KV "
                    f"comes from, `from {src_q.name}[i]`", s.src.span, env=env)
        if not src_q.array and src_idx is not None:
            lk.fail("E302", f"queue `{src_q.name}` is not a family; it takes no index", s.src.span, env=env)
        if src_idx is not None:
            _check_index(lk, src_idx, src_q, env)
    key = (verb, src_q.name if src_q is not None else None)
    entry = q.entries.get(key)
    if entry is None:
        have = [e.title for e in q.entries.values()]
        if src_q is not None and (verb, None) in q.entries or \
                any(k[0] == verb and k[1] is not None for k in q.entries):
            srcs = sorted(k[1] for k in q.entries if k[0] == verb and k[1] is not None)
            what = (f"queue `{q.name}` has no entry `{verb} from {src_q.name}`: a call from another queue "
                    "is refused" if src_q is not None else
                    f"queue `{q.name}`'s `{verb}` reads its KV from a queue: name the member, "
                    f"`{q.name}{'[j]' if q.array else ''}.{verb} (…) from {srcs[0]}"
                    f"{'[i]' if lk.queues[srcs[0]].array else ''}`")
        else:
            what = f"queue `{q.name}` has no entry `{verb}`"
        lk.fail("E281", what, fn.span, env=env,
                help=("its entries: " + ", ".join(f"`{h}`" for h in have)) if have else
                f"queue `{q.name}` declares no entries")
    if entry.broken:
        raise LinkAbort()
    if len(call.args) != len(entry.params):
        lk.fail("E221", f"{where} takes {len(entry.params)} argument{'s' if len(entry.params) != 1 else ''}, "
                f"not {len(call.args)}", call.span, env=env)
    sub = {}
    for p, a in zip(entry.params, call.args):
        v = lk.expr(a, env.at("session"))
        if draws(v):
            lk.fail("E223", f"an argument of {where} may not draw: it is substituted, like an "
                    "`at admission` binding", a.span, env=env, help="sample into an attribute first")
        sub[p] = (a, env)
    if verb == "transfer":
        if s.to is None or s.src is None:
            lk.fail("E282", f"{where}: a link's transfer names the KV's way, `… from P to kv (m);`", s.span,
                    env=env, help="the body runs the link; then the KV of m tokens is loaded and P released")
    elif s.to is not None:
        lk.fail("E282", f"{where}: only a link's `transfer` takes `to POOL (m)`", s.span, env=env)
    elif s.src is not None and verb != "decode":
        lk.fail("E282", f"{where}: only a `decode` names the queue its KV comes from", s.span, env=env)
    scope = Scope(q, entry, (index, env) if index is not None else None,
                  (src_q, src_idx, env) if src_q is not None else None,
                  _assigned_before(entry.decl.block.stmts))
    benv = entry_env(lk, scope, sub, env).expanding(f"entry `{entry.title}`", s.span)
    lk.stmts(entry.decl.block.stmts, benv, side, out, ctx)
    if verb == "transfer":
        S = env.at("session")
        dst = lk.ref_of(s.to[0], S, "pool")
        n = lk.mk(M.ECost((M.Target("pool", dst.base),), lk.expr(s.to[1], S)), s.to[1].span)
        lk.emit(out, M.SLoad(dst, n), s.span, side)
        lk.emit(out, M.SRelease(lk.ref_of(s.src, S, "pool")), s.span, side)


def entry_env(lk, scope: Scope, sub: dict, caller: Env) -> Env:
    """The Env an entry's body is linked in: the parameters, the queue's own
    names bound to the member, `self`, and the source's lease."""
    q = scope.queue
    s = dict(sub)
    if scope.member is not None:
        idx, cenv = scope.member
        s["self"] = (idx, cenv)
    for local, full in q.pools.items():
        s[local] = (_member_ast(full, scope.member, q.decl.span), caller)
    if q.stage:
        s[q.name] = (_member_ast(q.name, scope.member, q.decl.span), caller)
    if scope.source is not None:
        src_q, src_idx, cenv = scope.source
        pool = src_q.lease
        s[src_q.name] = (_member_ast(pool, (src_idx, cenv) if src_idx is not None else None,
                                     src_q.decl.span), caller)
    if q.gateway:
        return Env(clause="session", subst=s, entry=scope, expansions=caller.expansions)
    return Env(clause="session", subst=s, entry=scope, rename=q.rename(), expansions=caller.expansions)


def own_pools(lk, q: QueueInfo, member: int) -> dict:
    """Inside a queue's engine, its own pools bare (`queued(kv)`), each the
    member's, as its entries read them."""
    span = q.decl.span
    out = {}
    for local, full in q.pools.items():
        ast = A.Name(span, full) if not q.array else A.Index(span, A.Name(span, full), A.Num(span, float(member)))
        out[local] = (ast, Env(clause="const"))
    return out


def _member_ast(full: str, member, span: Span):
    if member is None:
        return A.Name(span, full)
    span = getattr(member[0], "span", None) or span
    return A.Index(span, A.Name(span, full), member[0])


def _queue_of(obj):
    if isinstance(obj, A.Name):
        return obj.name, None
    if isinstance(obj, A.Index) and isinstance(obj.obj, A.Name):
        return obj.obj.name, obj.index
    return None, None


def _check_index(lk, index, q: QueueInfo, env: Env):
    v = const_value(lk.expr(index, env.at("session")))
    if v is not None and not (0 <= v < q.count and v == math.floor(v)):
        lk.fail("E402", f"index {fmt(v)} out of range for queue `{q.name}`, which has {q.count} "
                f"member{'s' if q.count != 1 else ''}", index.span, env=env,
                help=f"an index is a whole number from 0 to {q.count - 1}")


def _assigned_before(stmts) -> dict:
    """For each hold of an entry's body: the names set on every way to it."""
    out: dict = {}

    def walk(lst, have: frozenset) -> frozenset:
        for s in lst:
            if isinstance(s, (A.Set, A.SizeDecl, A.CostDecl, A.Choose)):
                have = have | {s.name}
            elif isinstance(s, A.Hold):
                out[id(s)] = have
                walk(s.body.stmts, have | {b.name for b in s.admission})
            elif isinstance(s, A.Branch):
                a = walk(s.then.stmts, have)
                b = walk(s.other.stmts, have) if s.other is not None else have
                have = a & b
            elif isinstance(s, A.Loop):
                have = walk(s.body.stmts, have)
            elif isinstance(s, (A.While, A.Fork)):
                walk(s.body.stmts, have)
        return have

    walk(stmts, frozenset())
    return out


# ==================================================================== an entry's scope
def check_read(lk, name: str, span: Span, env: Env) -> None:
    """An entry sees its own: what it sets, cached and computed, and in its body
    the request's hidden attributes; nothing else the session has set."""
    scope = env.entry
    if scope is None or scope.queue.gateway:
        return
    q = scope.queue
    if name in env.rename:
        if env.assigned is not None and name not in env.assigned:
            lk.fail("E283", f"the header of a hold in entry `{scope.entry.title}` reads `{name}`, which the "
                    "entry sets only in the hold's body or after it", span, env=env,
                    help=f"set `{name}` above the hold (on every way to it) to read it in the header")
        return
    if name in ("cached", "computed", "serial", "turn_no"):
        return
    slot = lk.attr_index.get(name)
    hidden = slot is not None and slot in lk.hidden
    if hidden and env.clause != "header":
        return
    if hidden:
        lk.fail("E284", f"the header of a hold in entry `{scope.entry.title}` reads `{name}`, a hidden "
                "attribute", span, env=env,
                help="the scheduler may not read it; the entry's body may")
    lk.fail("E284", f"entry `{scope.entry.title}` reads `{name}`, an attribute of the session: an entry "
            "sees its own", span, env=env,
            help=f"pass it as the entry's parameter, or let the gateway read it; queue `{q.name}` sees its "
                 "parameters, its pools and stage, the constants, cached, computed, what it sets and the "
                 "request's hidden attributes")


def check_now(lk, span: Span, env: Env) -> None:
    scope = env.entry
    if scope is not None and not scope.queue.gateway and env.clause == "header":
        lk.fail("E284", f"the header of a hold in entry `{scope.entry.title}` reads `now`", span, env=env,
                help="an entry's body reads the clock; its header reads the parameters, the queue's pools "
                     "and stage, the constants, cached and computed")


def check_pool(lk, ref: M.Ref, span: Span, env: Env, what: str) -> None:
    """An entry holds, grows, loads and releases only its queue's own pools and
    the pool its `from` names; a queue's own pool is held only by its entries."""
    name = lk.pools_meta[ref.base].name
    owner = _pool_queue(lk, name)
    scope = env.entry
    if scope is None:
        if owner is not None and what not in ("release", "drop"):
            lk.fail("E285", f"`{what} {name}`: pool `{name}` is queue `{owner}`'s own; only its entries "
                    f"{what} it", span, env=env, help=f"call one of `{owner}`'s entries")
        return
    q = scope.queue
    if owner == q.name:
        return
    if scope.source is not None and name == scope.source[0].lease:
        return
    if q.gateway and owner is None:
        return
    lk.fail("E285", f"`{what}` in entry `{scope.entry.title}` names pool `{name}`: an entry acts only on its "
            "queue's own pools and the pool its `from` names", span, env=env)


def _pool_queue(lk, name: str) -> Optional[str]:
    if "." not in name:
        return None
    head = name.split(".", 1)[0]
    return head if head in lk.queues else None


def member_parts(lk, parts, env: Env, kind: str):
    """`D[j].kv`, `D.kv[j]`, `P.nic[i]`, `L.latency[k]`: a member's pool or stage
    as the kernel's family reference (name, index AST, span), or None."""
    head, hidx, hspan = parts[0]
    q = lk.queues.get(head)
    if q is None:
        raise LinkAbort()  # its declaration failed and was reported
    rest = [p[0] for p in parts[1:]]
    full = ".".join([head] + rest)
    tail_idx = parts[-1][1]
    inner = [p for p in parts[1:-1] if p[1] is not None]
    fams = lk.pool_fams if kind == "pool" else lk.stage_fams
    if full not in fams:
        other = lk.stage_fams if kind == "pool" else lk.pool_fams
        if full in other:
            lk.fail("E302", f"`{full}` is a {'stage' if kind == 'pool' else 'pool'}, not a {kind}",
                    parts[-1][2], env=env)
        own = sorted(n.split(".", 1)[1] for n in fams if n.startswith(head + "."))
        lk.fail("E201", f"queue `{head}` has no {kind} `{'.'.join(rest)}`", parts[-1][2], env=env,
                help=did_you_mean(".".join(rest), own) or
                (f"its {kind}s: " + ", ".join(f"`{head}.{n}`" for n in own) if own else None))
    if inner or (hidx is not None and tail_idx is not None):
        lk.fail("E302", f"`{full}` is indexed once: `{head}[j].{'.'.join(rest)}` or `{full}[j]`",
                parts[-1][2], env=env)
    if env.entry is not None and not env.entry.queue.gateway and env.entry.queue.name != head:
        lk.fail("E285", f"entry `{env.entry.entry.title}` names `{full}`, queue `{head}`'s: an entry sees "
                "its own", parts[-1][2], env=env)
    return full, hidx if hidx is not None else tail_idx, parts[-1][2]


# ==================================================================== transfers
def relation_transfer(lk, s: A.Transfer, env: Env, side: str, out: list) -> None:
    """A transfer without `on` in an entry of D called from P[i]: the read."""
    scope = env.entry
    q = scope.queue
    rel = lk.relations.get(q.name)
    if rel is not None and rel.broken:
        raise LinkAbort()
    if rel is None:
        lk.fail("E286", f"`transfer` without `on` in entry `{scope.entry.title}` is the read of a pull or "
                f"push relation, and queue `{q.name}` reads from none", s.span, env=env,
                help=f"declare one (`{q.name} pull P latency x share maxmin;`) or name the stages: "
                     "`transfer on L[k], M[l] (…) from S to P (m);`")
    if scope.source is None or scope.source[0].name != rel.source:
        lk.fail("E286", f"`transfer` without `on` reads the KV from `{rel.source}`, and entry "
                f"`{scope.entry.title}` is not called from it", s.span, env=env,
                help=f"write the entry as `decode (prompt) from {rel.source} {{ … }}`")
    src_q, src_idx, cenv = scope.source
    S = env.at("session")
    work = lk.expr(s.work, S)

    def member(full: str, idx) -> M.Ref:
        """Member `idx` ((index AST, its Env), or None for a single queue) of stage family `full`."""
        fam = lk.stage_fams.get(full)
        if fam is None:
            raise LinkAbort()  # the queue's `nic` failed to declare, and was reported
        i = lk.expr(idx[0], idx[1].at("session")) if idx is not None and idx[0] is not None else None
        return lk.mk(M.Ref(fam.base, fam.count, i), s.span)

    mine = scope.member                                   # the reader's member, D[j]
    theirs = (src_idx, cenv) if src_idx is not None else None   # the source's, P[i]
    if rel.stage is not None:
        lat = member(rel.stage, mine if rel.mode == "pull" else theirs)
        w = lk.mk(M.ECost((M.Target("stage", lat.base),), lk.num(rel.latency, s.span)), s.span)
        lk.emit(out, M.SRun(lat, "Plain", w), s.span, side)
    out_nic = member(f"{src_q.name}.nic", theirs)
    in_nic = member(f"{q.name}.nic", mine)
    w = lk.mk(M.ECost((M.Target("stage", out_nic.base), M.Target("stage", in_nic.base)), work), s.work.span)
    lk.emit(out, M.SRun(out_nic, "Plain", w, None, (in_nic,)), s.span, side)
    dst = lk.ref_of(s.dst, S, "pool")
    check_pool(lk, dst, s.dst.span, env, "load")
    n = lk.mk(M.ECost((M.Target("pool", dst.base),), lk.expr(s.tokens, S)), s.tokens.span)
    lk.emit(out, M.SLoad(dst, n), s.span, side)
    src = lk.ref_of(s.src, S, "pool")
    check_pool(lk, src, s.src.span, env, "release")
    lk.emit(out, M.SRelease(src), s.span, side)


def link_waits(lk, on: list, env: Env, side: str, out: list, span: Span) -> None:
    """`transfer on L[k], M[l] (…)`: one wait per named link with a latency, in the order named."""
    for r in on:
        q = lk.queues.get(r.parts[0].name) if len(r.parts) == 1 else None
        if q is None or "link" not in q.roles:
            continue
        if any(e.verb == "transfer" for e in q.entries.values()):
            lk.fail("E287", f"link `{q.name}` has a `transfer (n)` entry: it is called, "
                    f"`{q.name}{'[k]' if q.array else ''}.transfer (n) from P to kv (m);`, not named by "
                    "`transfer on`", r.span, env=env)
        if q.latency is None:
            continue
        fam = lk.stage_fams[f"{q.name}.latency"]
        idx = lk.expr(r.parts[0].index, env.at("session")) if r.parts[0].index is not None else None
        ref = lk.mk(M.Ref(fam.base, fam.count, idx), r.span)
        w = lk.mk(M.ECost((M.Target("stage", fam.base),), lk.num(q.latency, r.span)), r.span)
        lk.emit(out, M.SRun(ref, "Plain", w), span, side)


def run_own(lk, s: A.Run, env: Env):
    """`run (e);` in an entry: the queue's own stage, as `Q[self]`."""
    scope = env.entry
    if scope is None:
        lk.fail("E273", "`run (…)` without a stage runs a queue's own stage: it stands in an entry",
                s.span, env=env, help="name the stage: `run S (cost(S, …));`")
    q = scope.queue
    if not q.stage and q.stageless_said:
        raise LinkAbort()   # said at the queue's first `run (…)`
    if not q.stage:
        lk.fail("E273", f"`run (…)` runs queue `{q.name}`'s own stage, and it declares none", s.span,
                env=env, help="declare it: `serve fifo;` or `engine on DEVICE { … }`")
    if q.engine is not None:
        lk.fail("E288", f"queue `{q.name}`'s stage is an engine: its run names the mode, "
                f"`run {q.name} prefill (cost({q.name}, …))` or `run {q.name} decode (…)`", s.span, env=env)
    return A.Ref(s.span, [A.RefPart(s.span, q.name, None)])


def mark_name(env: Env, name: str) -> Optional[str]:
    scope = env.entry
    if scope is None:
        return None
    return name if scope.queue.gateway else f"{scope.queue.name}.{name}"


def dotted_value(lk, base: str, attr: str, span: Span, env: Env):
    """`D.read_done`: what queue D's entries set or mark (the request's, no member index)."""
    q = lk.queues[base]
    full = f"{base}.{attr}"
    scope = env.entry
    if scope is not None and not scope.queue.gateway and scope.queue is not q:
        lk.fail("E264", f"entry `{scope.entry.title}` of queue `{scope.queue.name}` reads `{full}`, queue "
                f"`{base}`'s: an entry's body reads nothing another queue has set", span, env=env,
                help=f"pass it as a parameter of `{scope.entry.title}`, or let the gateway read `{full}` and "
                     "pass it on")
    if full in lk.attr_index:
        return lk.mk(M.EAttr(lk.attr_index[full]), span)
    lk.fail("E201", f"queue `{base}` sets or marks no `{attr}`", span, env=env,
            help=did_you_mean(attr, sorted(q.sets)) or
            f"`mark {attr};` in one of `{base}`'s entries is read afterwards as `{full}`")
