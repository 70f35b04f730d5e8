"""The AST: one dataclass per grammar rule, each keeping its source span.

The parser (``serq.syntax.parser``) builds these; the linker reads them and
produces the IR.  Nothing downstream of the linker sees the AST.
"""

from __future__ import annotations

from ..records import dataclass, field
from typing import Optional, Union

from ..diag import Span


@dataclass
class Node:
    span: Span


# ---------------------------------------------------------------- expressions


@dataclass
class Num(Node):
    value: float


@dataclass
class Name(Node):
    name: str


@dataclass
class Str(Node):
    value: str


@dataclass
class Dot(Node):
    obj: "Expr"
    attr: str


@dataclass
class Index(Node):
    obj: "Expr"
    index: "Expr"


@dataclass
class Call(Node):
    fn: "Expr"
    args: list["Expr"]


@dataclass
class Draw(Node):
    dist: str
    args: list["Expr"]


@dataclass
class Agg(Node):
    kind: str  # max | min | sum
    var: str
    count: "Expr"
    body: "Expr"


@dataclass
class Unary(Node):
    op: str  # - !
    arg: "Expr"


@dataclass
class Binary(Node):
    op: str  # + - * / % ^ == != < <= > >= && ||
    lhs: "Expr"
    rhs: "Expr"


@dataclass
class Cond(Node):
    cond: "Expr"
    then: "Expr"
    other: "Expr"


Expr = Union[Num, Name, Str, Dot, Index, Call, Draw, Agg, Unary, Binary, Cond]


@dataclass
class RefPart(Node):
    name: str
    index: Optional[Expr]


@dataclass
class Ref(Node):
    parts: list[RefPart]

    def text(self) -> str:
        return ".".join(p.name + ("[…]" if p.index is not None else "") for p in self.parts)


# ---------------------------------------------------------------- statements


@dataclass
class Block(Node):
    stmts: list["Stmt"]


@dataclass
class Turn(Node):
    pass


@dataclass
class RequestStmt(Node):
    pass


@dataclass
class SizeDecl(Node):
    name: str
    expr: Expr
    name_span: Span


@dataclass
class CostDecl(Node):
    name: str
    expr: Expr
    name_span: Span


@dataclass
class CostField(Node):
    resource: str
    expr: Expr


@dataclass
class CostRecord(Node):
    name: str
    fields: list[CostField]
    name_span: Span


@dataclass
class Set(Node):
    name: str
    expr: Expr
    name_span: Span


@dataclass
class Observe(Node):
    name: str
    expr: Expr
    name_span: Span


@dataclass
class HoldPool(Node):
    ref: Ref
    units: Expr
    reserve: Optional[Expr]


@dataclass
class Binding(Node):
    name: str
    expr: Expr


@dataclass
class Lease(Node):
    ref: Ref
    time: Expr


@dataclass
class Hold(Node):
    pools: list[HoldPool]
    reuse: Optional[Expr]
    admission: list[Binding]
    body: Block
    cache: Optional[Expr]
    lease: Optional[Lease]


@dataclass
class Grow(Node):
    ref: Ref
    expr: Expr


@dataclass
class Drop(Node):
    ref: Ref


@dataclass
class Release(Node):
    ref: Ref


@dataclass
class Content(Node):
    """``content (id, n);``: the session's tokens continue with n tokens of
    the shared content id."""
    id: Expr
    n: Expr


@dataclass
class Load(Node):
    ref: Ref
    expr: Expr


@dataclass
class Run(Node):
    refs: list[Ref]          # empty: the queue's own stage (`run (e);`)
    mode: Optional[str]      # prefill | decode
    work: Expr
    growing: Optional[Ref]


@dataclass
class Branch(Node):
    guard: Expr
    then: Block
    other: Optional[Block]
    draw: bool  # `branch with (p)`


@dataclass
class While(Node):
    guard: Expr
    body: Block


@dataclass
class Loop(Node):
    body: Block


@dataclass
class Fork(Node):
    body: Block


@dataclass
class Join(Node):
    pass


@dataclass
class Choose(Node):
    name: str
    count: Expr
    keys: list[Expr]
    name_span: Span


@dataclass
class End(Node):
    pass


@dataclass
class Mark(Node):
    name: str


@dataclass
class Where(Node):
    """``[e]`` or ``on S, T`` of a serving form (both absent: no clause)."""

    index: Optional[Expr]
    on: list[Ref]


@dataclass
class Transfer(Node):
    where: Where
    work: Expr
    src: Ref
    dst: Ref
    tokens: Expr


@dataclass
class Tool(Node):
    where: Where
    work: Expr


@dataclass
class CallStmt(Node):
    target: Expr
    src: Optional[Ref]
    to: Optional[tuple[Ref, Expr]]


# statements only an engine's request has
@dataclass
class RPrefill(Node):
    work: Expr
    growing: Optional[Ref]


@dataclass
class RDecode(Node):
    work: Expr
    growing: Optional[Ref]


@dataclass
class RAwait(Node):
    pass


@dataclass
class RAdmission(Node):
    bindings: list[Binding]


@dataclass
class RCache(Node):
    expr: Expr


Stmt = Union[Turn, RequestStmt, SizeDecl, CostDecl, CostRecord, Set, Observe, Hold, Grow, Drop,
             Release, Load, Run, Branch, While, Loop, Fork, Join, Choose, End, Mark, Transfer, Tool,
             CallStmt, RPrefill, RDecode, RAwait, RAdmission, RCache, Content]


# ---------------------------------------------------------------- declarations


@dataclass
class Let(Node):
    name: str
    expr: Expr
    name_span: Span


@dataclass
class Use(Node):
    path: str


@dataclass
class Def(Node):
    name: str
    params: list[str]
    expr: Optional[Expr]      # an expression definition
    body: Optional[Block]     # a statement definition
    name_span: Span


@dataclass
class Opt(Node):
    """A pool option: ``kind`` one of cap, block, evict_lru, evict_by,
    preempt_none, preempt_lifo, preempt_by (``then``: the expression of
    their `then free (e)`), queue_fifo, queue_by, queue_ordered (``tail``:
    the two expressions of its `tail when (e) shared (n)`),
    reserve_held (with an expression: what each live hold keeps reserved),
    cache_shared, cache_shared_fifo, cache_shared_tree, cache_at (with an
    expression: the iteration from which a hold's computed blocks are
    found), spill, admit_via."""

    kind: str
    exprs: list[Expr] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    word: Optional[str] = None
    then: Optional[Expr] = None
    tail: Optional[list[Expr]] = None


@dataclass
class PoolDecl(Node):
    name: str
    count: Optional[Expr]
    opts: list[Opt]
    owner: Optional[str] = None      # pool NAME on OWNER
    device: Optional[str] = None     # pool NAME on ENGINE.DEVICE
    name_span: Optional[Span] = None


@dataclass
class Kind(Node):
    kind: str  # fifo | ps | delay | step
    expr: Optional[Expr] = None
    old_items: list[tuple[str, Optional[Expr], Span]] = field(default_factory=list)


@dataclass
class StageDecl(Node):
    name: str
    count: Optional[Expr]
    kind: Kind
    name_span: Span


@dataclass
class TimeResource(Node):
    name: str
    params: list[str]
    expr: Expr


@dataclass
class CapResource(Node):
    name: str
    expr: Expr


@dataclass
class DeviceDecl(Node):
    name: str
    count: Optional[Expr]
    resources: list[Union[TimeResource, CapResource]]
    name_span: Span


@dataclass
class ECap(Node):
    name: str
    count: Optional[Expr]
    expr: Expr


@dataclass
class EGranule(Node):
    expr: Expr


@dataclass
class EState(Node):
    name: str
    expr: Expr


@dataclass
class Order(Node):
    kind: str  # admission | by | decode_first
    keys: list[Expr] = field(default_factory=list)


@dataclass
class Take(Node):
    ref: Ref
    units: Expr
    reserve: Optional[Expr]


@dataclass
class Taking(Node):
    takes: list[Take]
    reuse: Optional[Expr]


@dataclass
class SAdvance(Node):
    only: Optional[Expr]
    order: Optional[Order]
    atmost: Optional[Expr]


@dataclass
class SAdmit(Node):
    only: Optional[Expr]
    guard: Optional[Expr]
    atmost: Optional[Expr]
    taking: Optional[Taking]


@dataclass
class SExclusive(Node):
    atmost: Optional[Expr]


@dataclass
class SBranch(Node):
    guard: Expr
    then: list["SStmt"]
    other: Optional[list["SStmt"]]


@dataclass
class SSet(Node):
    name: str
    expr: Expr


SStmt = Union[SAdvance, SAdmit, SExclusive, SBranch, SSet]


@dataclass
class ESchedule(Node):
    lets: list[Let]
    stmts: list[SStmt]


@dataclass
class EExecute(Node):
    expr: Expr


@dataclass
class ERequest(Node):
    params: list[str]
    stmts: list[Stmt]


EItem = Union[ECap, EGranule, EState, ESchedule, EExecute, ERequest]


@dataclass
class EngineDecl(Node):
    name: str
    count: Optional[Expr]
    device: str
    items: list[EItem]
    name_span: Span


@dataclass
class WArrive(Node):
    kind: str
    expr: Optional[Expr]


@dataclass
class WTrace(Node):
    path: str
    ordered: bool


@dataclass
class WBlock(Node):
    kind: str  # init | turn | session
    block: Block


@dataclass
class WHidden(Node):
    names: list[str]
    name_spans: list[Span]


@dataclass
class Workload(Node):
    items: list[Union[WArrive, WTrace, WBlock, WHidden]]


@dataclass
class Server(Node):
    block: Block


@dataclass
class QServe(Node):
    """``serve KIND [latency e];`` -- the queue's stage (a link's wait)."""

    kind: Kind
    latency: Optional[Expr]


@dataclass
class QNic(Node):
    """``nic KIND;`` -- the queue's NIC, the stage ``QUEUE.nic``."""

    kind: Kind


@dataclass
class QEntry(Node):
    """``VERB [(params)] [from QUEUE] { … }`` -- an entry of one of the queue's roles."""

    verb: str
    params: list[str]
    source: Optional[str]
    block: Block
    verb_span: Span


@dataclass
class QueueDecl(Node):
    name: str
    count: Optional[Expr]
    roles: list[str]
    items: list[Node]      # PoolDecl, DeviceDecl, EngineDecl (name ""), QServe, QNic, QEntry
    name_span: Span
    role_spans: list[Span] = field(default_factory=list)


@dataclass
class ShareDecl(Node):
    kind: str


@dataclass
class Relation(Node):
    reader: str
    verb: str
    source: str
    latency: Optional[Expr]
    share: str


@dataclass
class GaugeDecl(Node):
    name: str
    expr: Expr
    name_span: Span


@dataclass
class ClaimDecl(Node):
    name: str
    given: Optional[Expr]
    form: str  # every | some | end
    stage: Optional[Ref]
    expr: Expr
    name_span: Span


@dataclass
class RunBlock(Node):
    """`run { horizon 2000; warmup 200; Lambda 0.6; }`: an instance file's
    execution settings and input values (refused inside a program)."""

    items: list = field(default_factory=list)   # (name, expr, name span)


@dataclass
class Main(Node):
    items: list[Node]


@dataclass
class Program(Node):
    top: list[Node]          # constants, definitions and imports before main
    main: Main
    after: list[Node]        # anything after main (refused by the linker)
    path: str = ""
