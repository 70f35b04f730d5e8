"""Queues (§Queues): a station declared whole, its entries and relations, lowered to the kernel.

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

This module declares (a queue or relation item, ``declare_queue``,
``declare_relation``; ``check_relations`` once all are; the attribute
collection, ``collect_attributes``); ``entries.py`` lowers what calls them
(an entry call statement, ``call_entry``; a transfer, ``relation_transfer``,
``link_waits``; the name checks of an entry's scope, ``check_read``,
``check_pool``, ``member_parts``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import field
from typing import Optional

from ..diag import Span, did_you_mean
from ..records import dataclass
from ..syntax import ast as A
from .env import Env
from .nodes import LinkAbort, fmt

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
    stageless_said: bool = False                  # E273 said once, at an entry's `run (…)`

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


# ==================================================================== declarations
def declare_queue(lk, item: A.QueueDecl) -> None:
    """Declare queue ``item``: its pools, device, stage, NIC and entries."""
    name = item.name
    lk.declare(name, "queue", item.name_span)
    n, array = 1, item.count is not None
    if item.count is not None:
        try:
            n, array = lk.count_of(item.count, f"queue `{name}`")
        except LinkAbort:
            pass        # (its size's error said: linked on as a family of one, so that what reads it links)
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
    own = next((r for r in (_own_run(e.decl.block) for e in q.entries.values()) if r is not None), None)
    if own is not None and not q.stage:
        lk.diag.add("E273", f"`run (…)` runs queue `{name}`'s own stage, and it declares none",
                    own.span, help="declare it: `serve fifo;` or `engine on DEVICE { … }`")
        q.stageless_said = True
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


def _own_run(block) -> Optional[A.Run]:
    """The first `run (…)` written in the block (not through a definition)."""
    for s in block.stmts:
        if isinstance(s, A.Run) and not s.refs:
            return s
        for b in ([s.body] if isinstance(s, A.Hold) else _child_blocks(s)):
            found = _own_run(b)
            if found is not None:
                return found
    return None


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
