"""The linker's records of the program's declarations (constants, families, pools, stages, devices, engines)."""

from __future__ import annotations

import math
from dataclasses import field
from typing import Optional

from ..diag import Span
from ..ir import model as M
from ..records import dataclass
from ..syntax import ast as A


@dataclass
class ConstInfo:
    value: float
    span: Span
    input: Optional[str] = None          # the external name, for an args.number input
    inputs: frozenset = frozenset()      # the inputs this constant depends on


@dataclass
class Fam:
    """A family of pools or stages: ``count`` declarations from ``base``."""

    base: int
    count: int
    array: bool
    span: Span
    item_no: int = 0


@dataclass
class PoolMeta:
    name: str
    index: Optional[int]
    cap: float = math.inf
    block: Optional[float] = None
    evict: object = M.EvictLru()
    preempt: object = M.PreemptNone()
    queue: Optional[tuple] = None
    spill: Optional[M.Spill] = None
    admit_via: Optional[int] = None
    reserve_held: bool = False
    held: Optional[M.Expr] = None
    loc: Optional[M.Loc] = None
    decl: Optional[A.PoolDecl] = None
    shared: bool = False
    free_fifo: bool = False
    cache_at: Optional[M.Expr] = None
    tree: bool = False
    ordered: bool = False
    tail_when: Optional[M.Expr] = None
    tail_shared: Optional[M.Expr] = None


@dataclass
class StageMeta:
    name: str
    index: Optional[int]
    kind: object = None
    loc: Optional[M.Loc] = None
    item_no: int = 0


@dataclass
class DeviceInfo:
    name: str
    count: int
    decl: A.DeviceDecl
    time: dict = field(default_factory=dict)
    caps: dict = field(default_factory=dict)
    engine: Optional["EngineInfo"] = None


@dataclass
class EngineInfo:
    name: str
    count: int
    decl: A.EngineDecl
    device: DeviceInfo
    base: int = 0
    caps: dict = field(default_factory=dict)       # name -> (count, ECap)
    request: Optional[A.ERequest] = None
    schedule: Optional[A.ESchedule] = None
    taking: Optional[A.Taking] = None
    memory: Optional[int] = None                   # pool family base
    admitted: list = field(default_factory=list)   # pool family bases, in declaration order

