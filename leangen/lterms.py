"""The Lean structures as Python values, and their Lean spelling.

Each dataclass here is a `structure` of `lean/Serq/Spec/Syntax.lean` or
`Exec.lean`, with the same name and the same fields in the same order.  A
value of an `inductive` is a tuple whose first item is the constructor's
name: `("num", 3)` is `Expr.num 3`, `("some", x)` is `some x`.  `lean(v)`
writes any such value as a Lean term (what the generated files contain).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import Any

# ---------------------------------------------------------------- Syntax.lean


@dataclass(frozen=True)
class HoldPool:
    pool: int
    units: Any          # Expr
    reserve: Any        # Option Expr


@dataclass(frozen=True)
class Pool:
    cap: int
    block: int          # 0: no block
    viaEngine: bool
    keys: list          # List Expr: queue by (ascending, ties in join order); []: fifo


@dataclass(frozen=True)
class Engine:
    budget: Any         # Expr
    chunk: Any          # Expr, 0: no cap
    memory: Any         # Option Nat
    cost: Any           # Expr of the batch (Expr.iter): the iteration's duration
    keys: list          # List Expr: serving keys (ascending, ties in admission order)
    serveOnly: Any      # Option Expr: advance running only (p)
    admits: bool        # the schedule admits (while running.preempted == 0)
    admitOnly: Any      # Option Expr: admit waiting only (p)


@dataclass(frozen=True)
class Session:
    arrive: int         # arrival time
    attrs: list         # List (Nat × Nat)
    turns: list         # List (List (Nat × Nat))
    preset: bool


@dataclass(frozen=True)
class Program:
    nattrs: int
    nobs: int
    pools: list
    engine: Engine
    blocks: list        # List (List Stmt)
    init: Any           # Option Nat
    main: int
    sessions: list


@dataclass(frozen=True)
class Claim:
    kind: str           # ClaimKind: "everyIter" | "someIter" | "atEnd"
    expr: Any
    given: Any          # Option Expr


# ---------------------------------------------------------------- Exec.lean


@dataclass(frozen=True)
class Entry:
    owner: Any          # Option Nat (none: dead)
    units: int
    time: int
    ord: int


@dataclass(frozen=True)
class PoolSt:
    used: int
    cache: list
    queue: list


@dataclass(frozen=True)
class Alloc:
    pool: int
    units: int
    pos: int


@dataclass(frozen=True)
class HoldSt:
    allocs: list
    cache: Any          # Option Expr
    grown: bool
    depth: int
    first: int


@dataclass(frozen=True)
class Frame:
    blk: int
    pc: int
    kind: str           # Kind: "seq" | "loop" | "body"


@dataclass(frozen=True)
class Job:
    sess: int
    decode: bool
    rem: int
    grow: Any           # Option Nat
    key: int
    work: int


@dataclass(frozen=True)
class Sess:
    attrs: list
    frames: list
    holds: list
    status: str         # Status: "ready" | "queued" | "busy" | "ended" | "absent"
    turnIx: int
    adm: int
    front: bool


@dataclass(frozen=True)
class Event:
    time: int
    ev: Any             # Ev: ("wake", s) | ("iterEnd", [(s, n)]) | ("arrive", s)


@dataclass(frozen=True)
class Iter:
    now: int
    tokens: int
    prefilled: int
    decoders: int
    residents: int
    kvDecode: int
    kvPrefill: int
    demand: int
    served: int
    arrived: int
    attention2: int
    used: list
    holders: list
    queued: list


@dataclass(frozen=True)
class Machine:
    now: int
    sess: list
    pools: list
    residents: list
    busy: bool
    stalled: bool
    events: list
    ord: int
    admc: int
    ready: list
    obs: list           # List (Nat × Nat × Nat), newest first
    preempts: int
    served: int
    iters: list         # newest first


@dataclass(frozen=True)
class Plan:
    left: int
    chunk: int
    batch: list         # List (Nat × Nat)
    stop: bool
    noAdmit: bool
    pre0: int


# ---------------------------------------------------------------- Lean spelling

# the inductive a constructor tuple belongs to, by (first item, arity)
CTORS = {
    # Expr
    "num": "Expr", "attr": "Expr", "now": "Expr", "cachedIn": "Expr", "budgetLeft": "Expr",
    "running": "Expr", "waiting": "Expr", "min": "Expr", "max": "Expr", "bin": "Expr",
    "floorDiv": "Expr", "ceilDiv": "Expr", "cond": "Expr", "lnot": "Expr", "iter": "Expr", "used": "Expr",
    "holders": "Expr", "agg": "Expr", "decoding": "Expr", "admission": "Expr", "remaining": "Expr",
    "runDecoding": "Expr", "runKv": "Expr",
    # Stmt
    "turn": "Stmt", "set": "Stmt", "observe": "Stmt", "hold": "Stmt", "run": "Stmt",
    "branch": "Stmt", "loop": "Stmt", "stop": "Stmt",
}
# bare enumerations (a string is one of their constructors)
ENUMS = {
    "add": "BinOp", "sub": "BinOp", "mul": "BinOp", "lt": "BinOp", "le": "BinOp", "gt": "BinOp",
    "ge": "BinOp", "eq": "BinOp", "ne": "BinOp", "and": "BinOp", "or": "BinOp",
    "plain": "Mode", "prefill": "Mode", "decode": "Mode",
    "tokens": "IterVar", "prefilled": "IterVar", "decoders": "IterVar", "residents": "IterVar",
    "kvDecode": "IterVar", "kvPrefill": "IterVar", "demand": "IterVar", "served": "IterVar",
    "arrived": "IterVar", "attention2": "IterVar",
    "everyIter": "ClaimKind", "someIter": "ClaimKind", "atEnd": "ClaimKind",
    "total": "Agg", "count": "Agg", "largest": "Agg", "smallest": "Agg", "prefixTotal": "Agg",
}


def lean(v: Any) -> str:
    """A Lean term for v, on one line."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        if v in ENUMS:
            return f"{ENUMS[v]}.{v}"
        raise ValueError(f"no Lean spelling for the string {v!r}")
    if isinstance(v, tuple):
        if v and isinstance(v[0], str):
            tag = v[0]
            if tag == "none" and len(v) == 1:
                return "none"
            if tag == "some" and len(v) == 2:
                return f"(some {lean(v[1])})"
            if tag in CTORS:
                args = " ".join(_atom(x) for x in v[1:])
                head = f"{CTORS[tag]}.{tag}"
                return f"({head} {args})" if args else head
            raise ValueError(f"no Lean constructor {tag!r}")
        return "(" + ", ".join(lean(x) for x in v) + ")"
    if isinstance(v, list):
        return "[" + ", ".join(lean(x) for x in v) + "]"
    if is_dataclass(v):
        parts = [f"{f.name} := {lean(getattr(v, f.name))}" for f in fields(v)]
        return "{ " + ", ".join(parts) + " }"
    raise ValueError(f"no Lean spelling for {v!r}")


def _atom(x: Any) -> str:
    s = lean(x)
    if s.startswith(("(", "[", "{")) or " " not in s:
        return s
    return f"({s})"


def lean_program(p: Program, sessions: str | None = None) -> str:
    """A program as a Lean structure instance (indented by two), one field
    per line, one statement per line: what a reviewer reads.  ``sessions``:
    a Lean term to write instead of the program's sessions (a workload
    variable)."""
    def block(stmts: list) -> str:
        if not stmts:
            return "[]"
        return "[" + ",\n       ".join(lean(st) for st in stmts) + "]"

    def items(xs: list, col: int) -> str:
        if not xs:
            return "[]"
        return "[" + (",\n" + " " * col).join(lean(x) for x in xs) + "]"

    blocks = ",\n".join(f"      -- block {i}\n      {block(b)}" for i, b in enumerate(p.blocks))
    lines = [
        f"  {{ nattrs := {p.nattrs},",
        f"    nobs := {p.nobs},",
        f"    pools := {items(p.pools, 14)},",
        "    engine := { " + ",\n                ".join(f"{f.name} := {lean(getattr(p.engine, f.name))}"
                                                  for f in fields(p.engine)) + " },",
        "    blocks := [\n" + blocks + "],",
        f"    init := {lean(p.init)},",
        f"    main := {p.main},",
        f"    sessions := {items(p.sessions, 17) if sessions is None else sessions} }}",
    ]
    return "\n".join(lines)
