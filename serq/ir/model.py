"""The IR: the definition of a serQ program.

Every consumer (simulator, drawer, Z3 checks, Lean generator, vLLM oracle)
reads this and nothing else.  The IR holds no sugar, no defaults to fill in
and no names to resolve: attributes, observations, pools, stages and
registers are referred to by index, and every value is explicit.

Layout (see ``docs/ir.md`` for the field-by-field meaning):

* expressions are trees of the ``E*`` classes below;
* statements live in an arena of :class:`Block` s; a hold's body, a branch's
  arms and a loop's body are block indices;
* every statement carries its source location (``Loc``) and its side
  (``"client"`` for the workload's statements, ``"server"`` for the
  server's), in tables aligned with the block's statements.

The classes are frozen dataclasses; ``serq.ir.codec`` turns them into
canonical JSON and back.
"""

from __future__ import annotations

from ..records import dataclass, field
from typing import Optional, Union

IR_VERSION = 1

# A field with this metadata is left out of the JSON when it has its default
# (serq.ir.codec), so that a program that does not use what it says serialises
# as it did before the field existed.
OMIT_DEFAULT = {"omit_default": True}

# ---------------------------------------------------------------------------
# Built-in attributes occupy the first slots of every program, in this order.
BUILTIN_ATTRS = ("serial", "turn_no", "cached", "computed", "new", "out", "think", "more", "forced")
SLOT = {name: i for i, name in enumerate(BUILTIN_ATTRS)}
TRACE_ATTRS = ("new", "out", "think", "more", "forced")

# ---------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class Ref:
    """A pool or stage reference: member ``index`` of the family of ``count``
    declarations starting at ``base`` (``index`` is None for a family of one
    named without an index)."""

    base: int
    count: int
    index: Optional["Expr"] = None


@dataclass(frozen=True)
class ENum:
    value: float
    # the program's input (`args.number("NAME", …)`) whose value this number
    # is, when it is one: what a consumer that fits constants (serq.calib)
    # names; no consumer's result depends on it, and it takes no part in equality
    input: Optional[str] = field(default=None, metadata=OMIT_DEFAULT, compare=False)


@dataclass(frozen=True)
class EAttr:
    slot: int


# Context variables, by moment (see serq.ir.moments).
CTX_VARS = (
    "Now",        # the clock, at every moment
    "Waited",     # Select: seconds since the hold joined the queue
    "Size", "Age", "Last", "Waiting",  # Evict: one cache entry
    "Present",    # Ps: jobs present
    "Nres", "Ndec", "Kvb", "Kvp",       # running.count/decoding/kv_decode/kv_prefill
    "Ntok", "Npre", "Attn",             # batch.tokens/prefilled/attention
    "Decoding", "Admission", "Remaining",  # Serve (per resident) / Victim
    "Position",   # Victim
    "Admitted", "Preempted",            # Plan
    "Demand", "Served", "Arrived",      # Iteration (claims)
    "Reserved",   # Held: a live hold's reserve less its allocation
    "Blocked",    # Plan: the iteration's admission stopped at a head its engine's memory could not hold
)


@dataclass(frozen=True)
class ECtx:
    var: str


DISTS = {"Exp": 1, "Det": 1, "Uniform": 2, "Erlang": 2, "H2": 2, "Bernoulli": 1}


@dataclass(frozen=True)
class ESample:
    dist: str
    args: tuple["Expr", ...]


@dataclass(frozen=True)
class EReg:
    index: int


# Pure arithmetic functions and their arities.
FNS = {"Min": 2, "Max": 2, "Abs": 1, "Floor": 1, "Ceil": 1, "Sqrt": 1, "Exp": 1, "Ln": 1, "Pow": 2}


@dataclass(frozen=True)
class EFn:
    fn: str
    args: tuple["Expr", ...]


POOL_QUERIES = ("Used", "Free", "CachedIn", "Holders", "Queued", "Prefilling")
STAGE_QUERIES = ("Queue", "Busy", "Work", "EstLambda", "EstRho", "EstWait", "BudgetLeft")


@dataclass(frozen=True)
class EQuery:
    """An observable: ``query`` of the pool or stage ``ref``."""

    query: str
    ref: Ref


@dataclass(frozen=True)
class EPrice:
    ref: Ref
    s_hit: "Expr"
    ds: "Expr"


UNOPS = ("Neg", "Not")
BINOPS = ("Add", "Sub", "Mul", "Div", "Pow", "Lt", "Le", "Gt", "Ge", "Eq", "Ne", "And", "Or")
COMPARISONS = ("Lt", "Le", "Gt", "Ge", "Eq", "Ne")


@dataclass(frozen=True)
class EUnary:
    op: str
    arg: "Expr"


@dataclass(frozen=True)
class EBinary:
    op: str
    lhs: "Expr"
    rhs: "Expr"


@dataclass(frozen=True)
class ECond:
    cond: "Expr"
    then: "Expr"
    other: "Expr"


AGGS = ("Total", "Count", "Largest", "Smallest", "PrefixTotal")


@dataclass(frozen=True)
class EAgg:
    agg: str
    observe: int


@dataclass(frozen=True)
class Target:
    """A resource family a cost is in: ``kind`` "pool" or "stage", ``base``
    the family's first declaration."""

    kind: str
    base: int


@dataclass(frozen=True)
class ECost:
    """``cost(resource, e)``: the number ``e`` interpreted as an amount of the
    resource(s).  Evaluates to ``e``; the type is for validation."""

    targets: tuple[Target, ...]
    expr: "Expr"


@dataclass(frozen=True)
class ERunSum:
    """``sum r in running (e)``: Σ e over step stage ``stage``'s residents
    as they stand, e read for each (moment ``Running``: its attributes,
    decoding, admission, remaining, its position on the engine's memory)."""

    stage: int
    expr: "Expr"


Expr = Union[ENum, EAttr, ECtx, ESample, EReg, EFn, EQuery, EPrice, EUnary, EBinary, ECond, EAgg, ECost,
             ERunSum]

# ---------------------------------------------------------------------------
# Statements


@dataclass(frozen=True)
class Loc:
    """A source location: ``file`` indexes ``Program.files``."""

    file: int
    line: int
    col: int


@dataclass(frozen=True)
class STurn:
    pass


@dataclass(frozen=True)
class SSet:
    slot: int
    expr: Expr


@dataclass(frozen=True)
class SObserve:
    observe: int
    expr: Expr


@dataclass(frozen=True)
class HoldPool:
    pool: Ref
    units: Expr
    reserve: Optional[Expr] = None


@dataclass(frozen=True)
class Lease:
    pool: Ref
    time: Expr


@dataclass(frozen=True)
class SHold:
    pools: tuple[HoldPool, ...]
    body: int
    reuse: Optional[Expr] = None
    cache: Optional[Expr] = None
    lease: Optional[Lease] = None


@dataclass(frozen=True)
class SGrow:
    pool: Ref
    expr: Expr


@dataclass(frozen=True)
class SDrop:
    pool: Ref


@dataclass(frozen=True)
class SRelease:
    pool: Ref


@dataclass(frozen=True)
class SLoad:
    pool: Ref
    expr: Expr


RUN_MODES = ("Plain", "Prefill", "Decode", "Await")


@dataclass(frozen=True)
class SRun:
    stage: Ref
    mode: str
    work: Expr
    growing: Optional[Ref] = None
    also: tuple[Ref, ...] = ()


@dataclass(frozen=True)
class SBranch:
    guard: Expr
    then: int
    other: Optional[int] = None


@dataclass(frozen=True)
class SLoop:
    body: int


@dataclass(frozen=True)
class SWhile:
    guard: Expr
    body: int


@dataclass(frozen=True)
class SChoose:
    slot: int
    count: Expr
    keys: tuple[Expr, ...]


@dataclass(frozen=True)
class SEnd:
    pass


@dataclass(frozen=True)
class SFork:
    body: int


@dataclass(frozen=True)
class SJoin:
    pass


@dataclass(frozen=True)
class SContent:
    """`content (id, n);`: the session's tokens continue with `n` tokens of
    the shared content `id` (token k of it is the pair (id, k))."""
    id: Expr
    len: Expr


Stmt = Union[STurn, SSet, SObserve, SHold, SGrow, SDrop, SRelease, SLoad, SRun, SBranch, SLoop,
             SWhile, SChoose, SEnd, SFork, SJoin, SContent]

SIDES = ("client", "server")


@dataclass(frozen=True)
class Block:
    stmts: tuple[Stmt, ...]
    locs: tuple[Optional[Loc], ...]
    sides: tuple[str, ...]


# ---------------------------------------------------------------------------
# Declarations


@dataclass(frozen=True)
class EvictLru:
    pass


@dataclass(frozen=True)
class EvictBy:
    keys: tuple[Expr, ...]


@dataclass(frozen=True)
class PreemptNone:
    pass


@dataclass(frozen=True)
class PreemptBy:
    keys: tuple[Expr, ...]
    tail: bool = False
    # `then free (e);`: after each preemption the pool evicts cached units
    # until e are free, e read as the victim has left (None: no eviction)
    free: Optional[Expr] = field(default=None, metadata=OMIT_DEFAULT)


@dataclass(frozen=True)
class Spill:
    to: Ref
    via: Ref
    work: Expr
    when: Expr


@dataclass(frozen=True)
class Pool:
    name: str
    index: Optional[int]
    cap: float
    block: Optional[float]
    evict: Union[EvictLru, EvictBy]
    preempt: Union[PreemptNone, PreemptBy]
    queue: Optional[tuple[Expr, ...]]  # None: fifo
    spill: Optional[Spill]
    admit_via: Optional[int]  # the step stage that admits this pool's queue
    reserve_held: bool
    loc: Optional[Loc] = None
    # `cache shared;`: the cache is content-addressed (block by block, by the
    # tokens and the blocks before them) and shared by every session
    shared: bool = field(default=False, metadata=OMIT_DEFAULT)
    # `reserve held (e);`: what each live hold keeps reserved, e read for it
    # at every admission and growth (None: its reserve less its allocation)
    held: Optional[Expr] = field(default=None, metadata=OMIT_DEFAULT)
    # `cache shared fifo;`: every freed block joins the free queue's tail,
    # named or not, and a new block is its head (vLLM 0.19.0's block pool);
    # without, a block without a name is reused first (vLLM 0.33.0's)
    free_fifo: bool = field(default=False, metadata=OMIT_DEFAULT)
    # `cache at (e);`: the iteration, counted from the one that computes a
    # hold's blocks (0), from which a lookup of a content-addressed pool finds
    # them, e read for the hold as that iteration schedules it (None: at once)
    cache_at: Optional[Expr] = field(default=None, metadata=OMIT_DEFAULT)
    # `cache shared tree;`: the content-addressed cache is kept as a radix
    # tree: whole leaves evicted, the least recently used first, a node used
    # when a lookup takes it or a hold's blocks are cached through it
    tree: bool = field(default=False, metadata=OMIT_DEFAULT)
    # `queue ordered by (keys)`: the queue keeps the order it was last sorted
    # in; each time its engine's iteration reaches `admit waiting` it is
    # sorted again, stably, by the keys (without: the least key is the head,
    # ties in the order holds joined)
    ordered: bool = field(default=False, metadata=OMIT_DEFAULT)
    # its `tail when (e) shared (n)`: before that sort, walking the queue in
    # its order, a hold for which e holds goes to the tail (behind every hold
    # that does not, in their order) when it shares n or more tokens of its
    # content from the start with an earlier hold for which e held and which
    # stayed; e and n read for the hold as the queue's keys are
    tail_when: Optional[Expr] = field(default=None, metadata=OMIT_DEFAULT)
    tail_shared: Optional[Expr] = field(default=None, metadata=OMIT_DEFAULT)


@dataclass(frozen=True)
class KFifo:
    servers: int


@dataclass(frozen=True)
class KPs:
    capacity: Expr


@dataclass(frozen=True)
class KDelay:
    pass


@dataclass(frozen=True)
class ServeBy:
    keys: tuple[Expr, ...]


@dataclass(frozen=True)
class ServeExclusivePrefill:
    pass


@dataclass(frozen=True)
class IServe:
    only: Optional[Expr] = None
    by: Optional[tuple[Expr, ...]] = None


@dataclass(frozen=True)
class IAdmit:
    only: Optional[Expr] = None
    gate: Optional[Expr] = None


@dataclass(frozen=True)
class IBranch:
    guard: Expr
    then: tuple["Iter", ...]
    other: tuple["Iter", ...]


@dataclass(frozen=True)
class ISet:
    register: int
    expr: Expr


Iter = Union[IServe, IAdmit, IBranch, ISet]


@dataclass(frozen=True)
class KStep:
    budget: Expr
    cost: Expr
    chunk: Expr  # 0: no cap
    serve: Union[ServeBy, ServeExclusivePrefill]
    memory: Optional[int]
    granule: Optional[float] = None
    iteration: Optional[tuple[Iter, ...]] = None


StageKind = Union[KFifo, KPs, KDelay, KStep]


@dataclass(frozen=True)
class Stage:
    name: str
    index: Optional[int]
    kind: StageKind
    loc: Optional[Loc] = None


@dataclass(frozen=True)
class APoisson:
    rate: float


@dataclass(frozen=True)
class ARenewal:
    gap: Expr


@dataclass(frozen=True)
class AClosed:
    n: int


@dataclass(frozen=True)
class ABatch:
    n: int


# a content id (a session's `content`, a trace row's hash id): below 2^64
CONTENT_IDS = 2 ** 64

# a run's seed: a whole number below 2^64, the 64 bits its random streams are
# seeded from (serq/sim/rng.py); a larger one would be some smaller one's run
SEEDS = 2 ** 64
SEEDS_TEXT = "a whole number from 0 to 2^64 − 1"


@dataclass(frozen=True)
class SessionSpec:
    attrs: tuple[tuple[int, float], ...]
    turns: Optional[tuple[tuple[tuple[int, float], ...], ...]] = None
    # the session's arrival time (0 when absent)
    at: float = field(default=0.0, metadata=OMIT_DEFAULT)
    # what its tokens are: segments [id, tokens] from position 0, in order,
    # whole numbers (an id a 64-bit hash, kept exact); every later token is
    # the session's own
    # (IR written before these were whole numbers said 1.0: read as 1)
    content: tuple[tuple[int, int], ...] = field(default=(), metadata={**OMIT_DEFAULT, "whole_floats": True})


@dataclass(frozen=True)
class ASessions:
    sessions: tuple[SessionSpec, ...]


@dataclass(frozen=True)
class ANone:
    pass


@dataclass(frozen=True)
class ATrace:
    """`arrive trace(scale);`: one session per row of a timestamped trace
    (Mooncake's JSONL), arriving at `scale` times the row's timestamp."""
    scale: float


Arrival = Union[APoisson, ARenewal, AClosed, ABatch, ASessions, ANone, ATrace]
OPEN_ARRIVALS = (APoisson, ARenewal, ATrace)
MAX_SESSIONS = 1_000_000


@dataclass(frozen=True)
class Gauge:
    name: str
    expr: Expr
    loc: Optional[Loc] = None


@dataclass(frozen=True)
class CEvery:
    stage: int


@dataclass(frozen=True)
class CSome:
    stage: int


@dataclass(frozen=True)
class CAtEnd:
    pass


@dataclass(frozen=True)
class Claim:
    name: str
    kind: Union[CEvery, CSome, CAtEnd]
    expr: Expr
    given: Optional[Expr] = None
    loc: Optional[Loc] = None


@dataclass(frozen=True)
class Register:
    name: str
    stage: int
    init: float


ATTR_TYPES = ("Value", "Size")  # or a tuple of Targets: a Cost


@dataclass(frozen=True)
class Program:
    files: tuple[str, ...]
    attrs: tuple[str, ...]
    attr_types: tuple[Union[str, tuple[Target, ...]], ...]
    observes: tuple[str, ...]
    pools: tuple[Pool, ...]
    stages: tuple[Stage, ...]
    arrival: Arrival
    blocks: tuple[Block, ...]
    session: int
    init: Optional[int] = None
    turn: Optional[int] = None
    trace: Optional[str] = None
    trace_ordered: bool = False
    hidden: tuple[int, ...] = ()
    share: Optional[str] = None  # "MaxMin" | "Bottleneck"
    gauges: tuple[Gauge, ...] = ()
    claims: tuple[Claim, ...] = ()
    registers: tuple[Register, ...] = ()
    horizon: float = 0.0
    warmup: float = 0.0
    seed: int = 1
    arrivals: Optional[int] = None
    version: int = IR_VERSION

    # --- conveniences (derived, not serialised) ---------------------------
    def slot(self, name: str) -> int:
        return self.attrs.index(name)

    def loc_str(self, loc: Optional[Loc]) -> str:
        if loc is None:
            return "<unknown>"
        return f"{self.files[loc.file]}:{loc.line}:{loc.col}"

    def pool_label(self, i: int) -> str:
        p = self.pools[i]
        return p.name if p.index is None else f"{p.name}[{p.index}]"

    def stage_label(self, i: int) -> str:
        s = self.stages[i]
        return s.name if s.index is None else f"{s.name}[{s.index}]"


def child_blocks(s: Stmt) -> list[int]:
    """The blocks a statement's bodies are (a hold's body, a branch's arms,
    a loop's, a while's or a fork's body)."""
    t = type(s)
    if t is SHold:
        return [s.body]
    if t is SBranch:
        return [s.then] + ([s.other] if s.other is not None else [])
    if t in (SLoop, SWhile, SFork):
        return [s.body]
    return []
