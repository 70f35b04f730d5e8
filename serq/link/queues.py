"""Queues (§Queues): a station declared whole, lowered to the kernel.

A queue adds no IR construct.  ``queue P[N] : prefill { … }`` becomes named
pools and stages (``P.kv[N]``, the stage ``P[N]``, the NIC ``P.nic[N]``, a
link's wait ``L.latency[N]``); an entry call ``P[i].prefill (prompt);``
expands to the entry's body in its place, the parameters substituted as an
``at admission`` binding is, the queue's own names bound to member ``i``;
what the body sets is the queue's (``P.c``), and ``mark m;`` is ``set P.m =
now;``.  A relation ``D pull P latency x share maxmin;`` makes the reader's
(pull) or the poster's (push) delay stage ``…nic.latency`` and sets the
program's share; inside an entry of ``D`` called from ``P[i]``, a transfer
without ``on`` is the read: ``run D.nic.latency[j] (x); run P.nic[i],
D.nic[j] (X); load D.kv[j] (m); release P.kv[i];``.

The linker (``linker.py``) calls in at five places: a queue or relation item
(``declare_queue``, ``declare_relation``), the attribute collection
(``collect_attributes``), an entry call statement (``call_entry``), a
transfer (``relation_transfer``, ``link_waits``), and the name checks of an
entry's scope (``check_read``, ``check_pool``, ``member_ref``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Optional

from ..diag import Span, did_you_mean
from ..ir import model as M
from ..ir.expr import const_value, draws
from ..syntax import ast as A
from .env import Env
from .exprs import LinkAbort, fmt, names_read

# The four roles the parser knows, and the entries each plays (verb -> number of parameters).
ROLES = {"gateway": {"route": 0}, "prefill": {"prefill": 1}, "decode": {"decode": 1},
         "link": {"transfer": 1}}
ENTRY_WORDS = {"route": "`route { … }`", "prefill": "`prefill (prompt) { … }`",
               "decode": "`decode (prompt) { … }` or `decode (prompt) from Q { … }`",
               "transfer": "`transfer (n) { … }`"}


@dataclass
class Entry:
    verb: str
    params: list
    source: Optional[str]       # `decode (prompt) from P`: the queue the KV comes from
    decl: A.QEntry
    queue: "QueueInfo"
    broken: bool = False        # found wrong where it is declared: its calls say nothing more

    @property
    def title(self) -> str:
        return f"{self.queue.name}.{self.verb}" + (f" from {self.source}" if self.source else "")


@dataclass
class QueueInfo:
    name: str
    count: int
    array: bool
    decl: A.QueueDecl
    roles: list
    pools: dict = field(default_factory=dict)     # own name -> IR name (`kv` -> `P.kv`)
    device: Optional[str] = None                  # the member's device, IR name (`P.gpu`)
    engine: object = None                         # EngineInfo of `engine on DEVICE`
    stage: bool = False                           # has its stage (an engine or a serve)
    stage_span: Optional[Span] = None
    latency: Optional[float] = None               # a link's `serve … latency x`
    nic: bool = False
    entries: dict = field(default_factory=dict)   # (verb, source) -> Entry
    sets: set = field(default_factory=set)        # names its entries set (renamed `Q.x`)
    lease: Optional[str] = None                   # the own pool every entry leases, IR name
    lease_everywhere: bool = False

    @property
    def gateway(self) -> bool:
        return "gateway" in self.roles

    def rename(self) -> dict:
        return {} if self.gateway else {n: f"{self.name}.{n}" for n in self.sets}


@dataclass
class Relation:
    reader: str
    source: str
    mode: str                  # "pull" | "push"
    latency: Optional[float]
    stage: Optional[str]       # the delay stage of the wait, IR name
    span: Span
    broken: bool = False       # found wrong where it is declared


@dataclass
class Scope:
    """The entry an expansion is in: its queue, the member the call names and,
    for `decode (…) from P`, the source member whose lease the body reads."""

    queue: QueueInfo
    entry: Entry
    member: Optional[tuple]    # (index AST, caller Env) or None for a single queue
    source: Optional[tuple]    # (QueueInfo, index AST or None, caller Env)
    assigned: dict             # id(A.Hold) -> frozenset of locals set above it


# ==================================================================== declarations
def declare_queue(lk, item: A.QueueDecl) -> None:
    """Declare queue ``item``: its pools, device, stage, NIC and entries."""
    name = item.name
    lk.declare(name, "queue", item.name_span)
    if item.count is not None:
        n, array = lk.count_of(item.count, f"queue `{name}`")
    else:
        n, array = 1, False
    q = QueueInfo(name, n, array, item, list(item.roles), sets=set(lk.queue_sets.get(name, ())))
    lk.queues[name] = q
    for r, sp in zip(item.roles, item.role_spans or [item.name_span] * len(item.roles)):
        if r not in ROLES:
            lk.diag.add("E270", f"`{r}` is not a role: a queue plays `gateway`, `prefill`, `decode` "
                        "or `link`", sp, help=did_you_mean(r, ROLES) or
                        "user-defined roles are not supported; the four roles are the vocabulary")
    if len(set(item.roles)) != len(item.roles):
        lk.diag.add("E210", f"queue `{name}` names a role twice", item.name_span)
    if q.gateway and array:
        lk.diag.add("E271", f"a gateway is a single queue: `queue {name} : gateway`, not a family",
                    item.count.span, help="several gateways are several queues")
    phase = 0      # 0: device and pools, 1: the stage, 2: entries
    for it in item.items:
        try:
            if isinstance(it, A.DeviceDecl):
                _order(lk, q, phase, 0, it, "its device")
                _own_name(lk, q, it.name, it.name_span, "device")
                if q.device is not None:
                    lk.fail("E210", f"queue `{name}` declares one device", it.span)
                full = f"{name}.{it.name}"
                lk.declare_device(dataclasses.replace(it, name=full), n)
                q.device = full
            elif isinstance(it, A.PoolDecl) and it.owner is None:
                _order(lk, q, phase, 0, it, "its own pools")
                _own_name(lk, q, it.name, it.name_span, "pool")
                full = f"{name}.{it.name}"
                lk.declare_pool(dataclasses.replace(it, name=full), n, array)
                q.pools[it.name] = full
            elif isinstance(it, A.PoolDecl):
                _order(lk, q, phase, 1, it, "a pool on its device or engine")
                _own_name(lk, q, it.name, it.name_span, "pool")
                full = f"{name}.{it.name}"
                owner, device = _pool_owner(lk, q, it)
                lk.declare(full, "pool", it.name_span)
                lk.pending_pools_on.append((dataclasses.replace(it, name=full, owner=owner, device=device),
                                            lk.item_no))
                q.pools[it.name] = full
            elif isinstance(it, A.EngineDecl):
                _order(lk, q, phase, 1, it, "its stage")
                phase = 1
                _one_stage(lk, q, it.span)
                if it.device not in (d.split(".", 1)[1] for d in ([q.device] if q.device else [])):
                    lk.fail("E201", f"`engine on {it.device}`: queue `{name}` declares no device "
                            f"`{it.device}`", it.span,
                            help=f"declare the member's device above it: `device {it.device} {{ … }}`")
                for e in it.items:
                    if isinstance(e, A.ERequest):
                        lk.diag.add("E244", "a queue's engine has no request: its entries say what it "
                                    "does with one", e.span)
                    if isinstance(e, A.ECap) and e.count is not None:
                        lk.diag.add("E244", f"a queue's engine holds no `{e.name}[…]`: its entries name "
                                    "their own pool without an index", e.span)
                eng = lk.engine_decl(dataclasses.replace(it, name=name), count=(n, array),
                                     device=q.device, declare=False)
                q.engine = eng
            elif isinstance(it, A.QServe):
                _order(lk, q, phase, 1, it, "its stage")
                phase = 1
                _one_stage(lk, q, it.span)
                lk.declare_stage(name, n, array, it.kind, it.span, declare=False)
                if it.latency is not None:
                    if "link" not in q.roles:
                        lk.fail("E272", "`latency` on a serve is a link's wait before each transfer",
                                it.latency.span, help=f"queue `{name}` plays no `link` role")
                    v, _ = lk.const_expr(it.latency, Env(clause="const"))
                    if not (v >= 0 and math.isfinite(v)):
                        lk.fail("E403", f"a latency is a finite number ≥ 0, not {fmt(v)}", it.latency.span)
                    q.latency = v
                    lk.declare_stage(f"{name}.latency", n, array, A.Kind(it.span, "delay"), it.span,
                                     declare=False)
            elif isinstance(it, A.QNic):
                _order(lk, q, phase, 1, it, "its NIC")
                if q.nic:
                    lk.fail("E210", f"queue `{name}` declares one `nic`", it.span)
                q.nic = True
                lk.declare_stage(f"{name}.nic", n, array, it.kind, it.span, declare=False)
            elif isinstance(it, A.QEntry):
                phase = 2
                _entry(lk, q, it)
            else:  # pragma: no cover - the grammar allows nothing else in a queue
                lk.fail("E199", f"unsupported item in queue `{name}`", it.span)
        except LinkAbort:
            pass
    for (verb, src), e in q.entries.items():
        if q.latency is not None and verb == "transfer":
            lk.diag.add("E272", "only a link without an entry takes a `latency`: a link with a "
                        "`transfer (n)` entry is called, and its body is the time", e.decl.span)
    if q.entries and not q.stage and any(_runs_own(e.decl.block) for e in q.entries.values()):
        e = next(e for e in q.entries.values() if _runs_own(e.decl.block))
        lk.diag.add("E273", f"`run (…)` runs queue `{name}`'s own stage, and it declares none",
                    e.decl.span, help="declare it: `serve fifo;` or `engine on DEVICE { … }`")
    _leases(lk, q)


def _order(lk, q, phase, allowed, it, what):
    if phase > allowed:
        lk.diag.add("E274", f"queue `{q.name}` declares {what} after "
                f"{'its entries' if phase == 2 else 'its stage'}", it.span,
                help="a queue declares its device and pools, then its stage, then its entries, each "
                     "reading what is above it (a pool on its device or engine may follow the engine)")


def _own_name(lk, q, name, span, what):
    if name in lk.defs or name in lk.consts:
        other = "a def" if name in lk.defs else "a let"
        lk.diag.add("E210", f"`{name}` is already {other}; queue `{q.name}`'s {what} cannot take its name",
                    span, help=f"inside the queue its body reads `{name}` bare, which would read {other}")
    if name in q.pools or (q.device and q.device.endswith("." + name)):
        lk.fail("E210", f"queue `{q.name}` declares `{name}` twice", span)


def _one_stage(lk, q, span):
    if q.stage:
        lk.fail("E210", f"queue `{q.name}` has one stage: an engine or a serve", span,
                notes=[f"its stage is declared at {q.stage_span}"])
    q.stage = True
    q.stage_span = span


def _pool_owner(lk, q, it: A.PoolDecl):
    """`pool X on gpu` / `on Q` / `on Q.gpu` inside queue Q, as the kernel's owners."""
    own_dev = q.device.split(".", 1)[1] if q.device else None
    if it.device is not None:
        if it.owner != q.name:
            lk.fail("E246", f"`pool {it.name} on {it.owner}.{it.device}`: inside queue `{q.name}` a pool "
                    f"is on its own engine's device, `{q.name}.{own_dev or 'DEVICE'}`", it.span)
        if it.device != own_dev:
            lk.fail("E246", f"queue `{q.name}` runs on `{own_dev}`, not `{it.device}`", it.span)
        if q.engine is None:
            lk.fail("E201", f"`pool {it.name} on {q.name}.{it.device}`: queue `{q.name}` has no engine "
                    "above it", it.span)
        return q.name, q.device
    if it.owner == own_dev:
        return q.device, None
    if it.owner == q.name:
        if q.engine is None:
            lk.fail("E201", f"`pool {it.name} on {q.name}`: queue `{q.name}` has no engine above it",
                    it.span, help="a pool on the queue is a capacity of its engine")
        return q.name, None
    lk.fail("E201", f"`pool {it.name} on {it.owner}`: inside queue `{q.name}` a pool is on its device "
            f"(`{own_dev or 'DEVICE'}`) or on the queue (`{q.name}`)", it.span)


def _entry(lk, q: QueueInfo, it: A.QEntry):
    """Register entry `it` of queue `q`.  An entry found wrong is registered
    all the same, marked broken, so that its calls say nothing more."""
    key = (it.verb, it.source)
    if key in q.entries:
        lk.fail("E210", f"queue `{q.name}` declares the entry `{it.verb}`" +
                (f" from {it.source}" if it.source else "") + " twice", it.span)
    entry = Entry(it.verb, list(it.params), it.source, it, q)
    q.entries[key] = entry
    before = len(lk.diag.items)
    try:
        _check_entry(lk, q, it)
    except LinkAbort:
        pass
    entry.broken = len(lk.diag.items) > before or any(r not in ROLES for r in q.roles)


def _check_entry(lk, q: QueueInfo, it: A.QEntry):
    plays = [r for r in q.roles if r in ROLES and it.verb in ROLES[r]]
    if not plays:
        if any(r not in ROLES for r in q.roles):
            return  # the role was refused
        allowed = [v for r in q.roles if r in ROLES for v in ROLES[r]]
        lk.fail("E275", f"`{it.verb}` is not an entry of queue `{q.name}`'s roles "
                f"({', '.join(q.roles) or 'none'})", it.verb_span,
                help=("its roles' entries are " + ", ".join(ENTRY_WORDS[v] for v in allowed)) if allowed
                else f"declare the role: `queue {q.name} : ROLE {{ … }}`")
    want = ROLES[plays[0]][it.verb]
    if len(it.params) != want:
        sig = {"route": "route { … }", "prefill": "prefill (prompt) { … }",
               "decode": "decode (prompt) { … }", "transfer": "transfer (n) { … }"}[it.verb]
        lk.fail("E221", f"the entry `{it.verb}` takes {want} parameter{'s' if want != 1 else ''}, "
                f"not {len(it.params)}", it.span, help=f"write `{sig}`")
    if len(set(it.params)) != len(it.params):
        lk.fail("E210", f"entry `{it.verb}` names a parameter twice", it.span)
    for p in it.params:
        if p in lk.consts or p in lk.defs or p in q.pools or lk.kind_of(p) not in (None, "attribute"):
            lk.fail("E210", f"`{p}` already names something: an entry's parameter is a new name", it.span)
    if it.source is not None:
        if it.verb != "decode":
            lk.fail("E276", f"only a `decode` entry names the queue its KV comes from, not `{it.verb}`",
                    it.span)
        src = lk.queues.get(it.source)
        if src is None or src is q:
            kind = lk.kind_of(it.source)
            lk.fail("E277", f"`decode (…) from {it.source}`: " +
                    ("a queue's KV comes from another queue" if src is q else
                     f"`{it.source}` is not a queue declared above" if kind is None or kind == "queue"
                     else f"`{it.source}` is a {kind}, not a queue"),
                    it.span, help="the queue the KV comes from is declared above this one")
        if src.lease is None:
            lk.fail("E278", f"`decode (…) from {it.source}`: queue `{it.source}` leases nothing, so "
                    "there is no KV to read from it", it.span,
                    help=f"`{it.source}`'s entries keep their KV for the reader with `… lease kv (t)`")
        if not src.lease_everywhere:
            lk.fail("E278", f"`decode (…) from {it.source}`: not every way through queue `{it.source}`'s "
                    f"entries leases `{src.lease.split('.', 1)[1]}`", it.span,
                    help="the reader needs the KV whichever way the request went")


def _leases(lk, q: QueueInfo):
    """The own pool the queue's entries lease, and whether every way through every entry does."""
    leased = set()
    everywhere = bool(q.entries)
    for e in q.entries.values():
        found = _leased_pools(e.decl.block.stmts)
        leased |= found
        if not _leases_on_every_path(e.decl.block.stmts):
            everywhere = False
    own = {p for p in leased if p in q.pools}
    if len(own) == 1:
        q.lease = q.pools[own.pop()]
        q.lease_everywhere = everywhere
    elif len(own) > 1:
        lk.diag.add("E278", f"queue `{q.name}`'s entries lease {len(own)} pools; a reader takes the KV "
                    "from one", q.decl.name_span)


def _leased_pools(stmts) -> set:
    out = set()
    for s in stmts:
        if isinstance(s, A.Hold):
            if s.lease is not None and len(s.lease.ref.parts) == 1:
                out.add(s.lease.ref.parts[0].name)
            out |= _leased_pools(s.body.stmts)
        for b in _child_blocks(s):
            out |= _leased_pools(b.stmts)
    return out


def _leases_on_every_path(stmts) -> bool:
    for s in stmts:
        if isinstance(s, A.Hold) and (s.lease is not None or _leases_on_every_path(s.body.stmts)):
            return True
        if isinstance(s, A.Branch) and s.other is not None and \
                _leases_on_every_path(s.then.stmts) and _leases_on_every_path(s.other.stmts):
            return True
        if isinstance(s, A.Loop) and _leases_on_every_path(s.body.stmts):
            return True
    return False


def _child_blocks(s):
    if isinstance(s, A.Branch):
        return [s.then] + ([s.other] if s.other is not None else [])
    if isinstance(s, (A.While, A.Loop, A.Fork)):
        return [s.body]
    return []


def _runs_own(block) -> bool:
    for s in block.stmts:
        if isinstance(s, A.Run) and not s.refs:
            return True
        if isinstance(s, A.Hold) and _runs_own(s.body):
            return True
        if any(_runs_own(b) for b in _child_blocks(s)):
            return True
    return False


def declare_relation(lk, item: A.Relation) -> None:
    """`D pull P latency x share maxmin;` / `P push D …;`.  A relation found
    wrong is kept, marked broken, so that the reads it would lower say
    nothing more."""
    before = len(lk.diag.items)
    reader = item.reader if item.verb == "pull" else item.source
    try:
        _relation(lk, item)
    except LinkAbort:
        pass
    if len(lk.diag.items) > before and reader not in lk.relations:
        lk.relations[reader] = Relation(reader, "", item.verb, None, None, item.span, broken=True)


def _relation(lk, item: A.Relation) -> None:
    names = (item.reader, item.source)
    for n in names:
        if n not in lk.queues:
            kind = lk.kind_of(n)
            lk.fail("E279", f"`{item.reader} {item.verb} {item.source}`: " +
                    (f"`{n}` is not a queue declared above" if kind is None else
                     f"`{n}` is a {kind}, not a queue"), item.span,
                    help="both queues of a relation are declared above it")
    for n in names:
        if not lk.queues[n].nic:
            lk.fail("E279", f"`{item.reader} {item.verb} {item.source}`: queue `{n}` has no `nic`", item.span,
                    help=f"the KV crosses both NICs: declare `nic ps(Bw);` in queue `{n}`")
    if item.verb == "pull":
        reader, source = item.reader, item.source
    else:
        source, reader = item.reader, item.source
    if reader == source:
        lk.fail("E279", "a relation is between two queues", item.span)
    prev = lk.relations.get(reader)
    if prev is not None and not prev.broken:
        lk.fail("E279", f"queue `{reader}` already reads its KV from `{prev.source}`: a reader has one "
                "source", item.span, notes=[f"the relation is at {prev.span}"])
    latency = None
    stage = None
    if item.latency is not None:
        v, _ = lk.const_expr(item.latency, Env(clause="const"))
        if not (v >= 0 and math.isfinite(v)):
            lk.fail("E403", f"a latency is a finite number ≥ 0, not {fmt(v)}", item.latency.span)
        latency = v
        poster = lk.queues[reader if item.verb == "pull" else source]
        stage = f"{poster.name}.nic.latency"
        if stage in lk.stage_fams:
            lk.fail("E279", f"queue `{poster.name}` already waits before the copies it posts: one latency "
                    "per poster", item.span)
        lk.declare_stage(stage, poster.count, poster.array, A.Kind(item.span, "delay"), item.span,
                         declare=False)
    share = {"maxmin": "MaxMin", "bottleneck": "Bottleneck"}[item.share]
    if lk.relations and lk.share is not None and lk.share != share:
        lk.fail("E279", "every relation of a program shares the NICs by the one policy", item.span)
    lk.share = share
    lk.relations[reader] = Relation(reader, source, item.verb, latency, stage, item.span)


def check_relations(lk) -> None:
    """After every declaration: an entry of a reader names its relation's source,
    and a program with a relation writes no `share` of its own."""
    if lk.relations and lk.share_decl is not None:
        first = next(iter(lk.relations.values()))
        lk.diag.add("E279", "a program with a relation does not also write `share` on its own: the relation "
                    "says how the reads share the NICs", lk.share_decl,
                    notes=[f"the relation is at {first.span}"])
    for rel in lk.relations.values():
        q = lk.queues.get(rel.reader)
        if rel.broken or q is None:
            continue
        for (verb, src), e in q.entries.items():
            if src is not None and src != rel.source and not e.broken:
                lk.diag.add("E279", f"`decode (…) from {src}`: queue `{q.name}` reads its KV from "
                            f"`{rel.source}` (the relation at {rel.span})", e.decl.span)


# ==================================================================== attributes
def collect_attributes(lk, item: A.QueueDecl, found: list, stmts_of) -> None:
    """What a queue's entries set: the queue's (`D.known`), the gateway's the session's."""
    gateway = "gateway" in item.roles
    for it in item.items:
        if not isinstance(it, A.QEntry):
            continue
        sub: list = []
        stmts_of(it.block.stmts, sub)
        for s in _walk(it.block.stmts):
            if isinstance(s, A.Mark):
                sub.append((s.name, s.span))
        for name, span in sub:
            if gateway:
                found.append((name, span))
            else:
                found.append((f"{item.name}.{name}", span))
                lk.queue_sets.setdefault(item.name, set()).add(name)


def _walk(stmts):
    for s in stmts:
        yield s
        if isinstance(s, A.Hold):
            yield from _walk(s.body.stmts)
        for b in _child_blocks(s):
            yield from _walk(b.stmts)


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
        lk.fail("E285", f"entry `{scope.entry.title}` reads `{full}`, queue `{base}`'s: an entry sees its own",
                span, env=env)
    if full in lk.attr_index:
        return lk.mk(M.EAttr(lk.attr_index[full]), span)
    lk.fail("E201", f"queue `{base}` sets or marks no `{attr}`", span, env=env,
            help=did_you_mean(attr, sorted(q.sets)) or
            f"`mark {attr};` in one of `{base}`'s entries is read afterwards as `{full}`")
