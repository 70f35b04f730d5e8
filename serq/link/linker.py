"""The linker: a parsed program → the IR, its passes in order over the parts that hold each concern.

Passes, in order (the module of each in brackets):

1. ``imports``      read `use` libraries and `std/args` (libraries.py);
2. ``constants``    fold `let`s and the program's inputs (`args.number`, `--set`) (constants.py);
3. ``attributes``   every name a `set`/`choose`/binding assigns is an attribute (names.py);
4. ``declare``      pools, stages, devices, engines, queues, pools on owners (declarations.py, queues.py);
5. ``engines``      each engine → its step stage(s) (budget, chunk, cost, serve, iteration) (engines.py);
6. ``workload``     init, turn and session blocks, each `turn;` followed by the server's statements
                    (workload.py, statements.py, exprs.py, entries.py);
7. ``gauges``/``claims`` (measures.py);
8. ``types``        attribute types (Size / Value / Cost) (attrtypes.py);
9. validation of the IR (``serq.ir.validate``) with every problem mapped to its source span;
10. ``lints``       the three lints and the server's hidden-attribute rule (lints.py).

Every error is collected and reported together, each at its source span.
The ``Linker`` holds the tables (its ``__init__``) and runs the passes
(``link``); its methods are its parts', each part a class of one module
(README.md), no method defined in two.
"""

from __future__ import annotations

from dataclasses import replace as _replace
from typing import Optional

from ..diag import Collector, Span
from ..ir import model as M
from ..ir.validate import validate
from ..syntax import ast as A
from . import queues
from .attrtypes import Types
from .constants import Constants
from .declarations import Declarations
from .engines import Engines
from .exprs import Exprs
from .libraries import Libraries, parse_once
from .measures import Measures
from .names import Names
from .nodes import LinkAbort, Nodes
from .statements import Statements
from .tables import ConstInfo, DeviceInfo, EngineInfo, Fam, PoolMeta, StageMeta
from .workload import Workload

__all__ = ["Linker", "parse_once"]


class Linker(Nodes, Libraries, Constants, Names, Declarations, Engines, Exprs, Statements, Workload,
             Measures, Types):
    def __init__(self, path: str, sets: Optional[dict] = None, settings: Optional[dict] = None,
                 strict_request_names: bool = True, parsed: Optional[dict] = None,
                 input_folds: Optional[list] = None, size_inputs: Optional[set] = None):
        self.path = path
        self.parsed = parsed                    # syntax trees kept between links (compile_source)
        self.input_nums: set = set()            # ids of the numbers that are (made from) an input's value
        self.input_folds = [] if input_folds is None else input_folds   # where one was folded but by products
        self.size_inputs = size_inputs          # with a set: the inputs a family's size reads are added to it
        self.sets = dict(sets or {})
        self.settings = dict(settings or {})
        self.diag = Collector()
        self.spans: dict[int, Span] = {}
        self.keep: list = []
        self.files: list[str] = [path]
        self.consts: dict[str, ConstInfo] = {}
        self.inputs: dict[str, str] = {}            # external name -> let name
        self.defs: dict[str, A.Def] = {}
        self.kinds: dict[str, tuple[str, Span]] = {}
        self.attrs: list[str] = list(M.BUILTIN_ATTRS)
        self.attr_index: dict[str, int] = {n: i for i, n in enumerate(self.attrs)}
        self.attr_side: dict[int, set] = {}
        self.declared_types: dict[int, tuple[str, Span]] = {}
        self.observes: list[str] = []
        self.observe_index: dict[str, int] = {}
        self.pools_meta: list[PoolMeta] = []
        self.stages_meta: list[StageMeta] = []
        self.pool_fams: dict[str, Fam] = {}
        self.stage_fams: dict[str, Fam] = {}
        self.devices: dict[str, DeviceInfo] = {}
        self.engines: dict[str, EngineInfo] = {}
        self.registers: list[M.Register] = []
        self.register_index: dict[str, int] = {}
        self.blocks: list = []
        self.agg_terms = 0
        self.uses_args = False
        self.request_names: dict[str, str] = {}
        self.strict_request_names = strict_request_names
        self.device_time_names: set[str] = set()
        self.gauges: list[M.Gauge] = []
        self.claims: list[M.Claim] = []
        self.share: Optional[str] = None
        self.workload: Optional[A.Workload] = None
        self.workload_item_no = 10 ** 9
        self.server: Optional[A.Server] = None
        self.hidden: list[int] = []
        self.arrival: M.Arrival = M.ANone()
        self.trace: Optional[str] = None
        self.trace_ordered = False
        self.tool_needed: Optional[Span] = None
        self.pending_pools_on: list = []
        self.claim_decls: list = []
        self.gauge_decls: list = []
        self.item_no = 0
        self.used_libraries: set[str] = set()
        self.library_defs: dict[str, str] = {}
        self.hold_binding_names: set[str] = set()
        self.queues: dict = {}                  # name -> queues.QueueInfo
        self.relations: dict = {}               # reader queue -> queues.Relation
        self.queue_sets: dict = {}              # queue -> names its entries set
        self.share_decl: Optional[Span] = None
        self.failed_lets: set[str] = set()    # constants whose definition failed (and was reported)

    def link(self, prog: A.Program) -> M.Program:
        self.prog = prog
        for item in prog.top:
            try:
                self.top_item(item, self.path)
            except LinkAbort:
                pass
        for item in prog.after:
            self.diag.add("E105", "declarations after `fn main()` are refused", item.span,
                          help="move them into main, or above it if they are constants, definitions "
                               "or imports")
        if not prog.main.items:
            self.diag.add("E104", "`fn main()` is empty: there is nothing to check, draw or run", prog.main.span,
                          help="main declares the deployment (pools, stages, engines) and its workload "
                               "(`workload { arrive …; }`) with a `server { … }`")
        # imports, definitions and constants first (in order), so that every
        # declaration can read them; a library used here declares its queues
        # and relations in the `use`'s place
        main_items = []
        for item in prog.main.items:
            self.item_no += 1
            main_items.append(item)
            try:
                if isinstance(item, A.Use):
                    self.use(item, self.path, in_main=True, declared=main_items)
                elif isinstance(item, (A.Let, A.Def)):
                    self.top_item(item, self.path, in_main=True)
            except LinkAbort:
                pass
        self.check_sets()
        self.collect_attributes(main_items)
        self.item_no = 0
        for item in main_items:
            self.item_no += 1
            try:
                self.declare_item(item)
            except LinkAbort:
                pass
        for decl in self.pending_pools_on:
            try:
                self.pool_on(*decl)
            except LinkAbort:
                pass
        queues.check_relations(self)
        for eng in self.engines.values():
            try:
                self.engine(eng)
            except LinkAbort:
                pass
        self.workload_blocks()
        self.diag.check()
        for g in self.gauge_decls:
            try:
                self.gauge(g)
            except LinkAbort:
                pass
        for c in self.claim_decls:
            try:
                self.claim(c)
            except LinkAbort:
                pass
        self.diag.check()
        program = self.build()
        types = self.attr_types(program)
        program = _replace(program, attr_types=types)
        self.diag.check()
        validate(program, span_of=lambda node: self.spans.get(id(node)))
        from .lints import lint
        lint(self, program)
        self.diag.check()
        return program

    def build(self) -> M.Program:
        pools = tuple(M.Pool(pm.name, pm.index, pm.cap, pm.block, pm.evict, pm.preempt, pm.queue,
                             pm.spill, pm.admit_via, pm.reserve_held, pm.loc, shared=pm.shared,
                             held=pm.held, free_fifo=pm.free_fifo, cache_at=pm.cache_at,
                             tree=pm.tree, ordered=pm.ordered, tail_when=pm.tail_when,
                             tail_shared=pm.tail_shared)
                      for pm in self.pools_meta)
        stages = []
        for sm in self.stages_meta:
            kind = sm.kind
            if kind is None:  # an engine whose clauses failed to link
                kind = M.KDelay()
            stages.append(M.Stage(sm.name, sm.index, kind, sm.loc))
        blocks = tuple(M.Block(tuple(x[0] for x in b), tuple(x[1] for x in b), tuple(x[2] for x in b))
                       for b in self.blocks)
        s = self.settings
        return M.Program(
            files=tuple(self.files), attrs=tuple(self.attrs),
            attr_types=tuple("Value" for _ in self.attrs), observes=tuple(self.observes),
            pools=pools, stages=tuple(stages), arrival=self.arrival, blocks=blocks,
            session=self.session_block, init=self.init_block, turn=self.turn_block,
            trace=self.trace, trace_ordered=self.trace_ordered, hidden=tuple(sorted(set(self.hidden))),
            share=self.share, gauges=tuple(self.gauges), claims=tuple(self.claims),
            registers=tuple(self.registers),
            horizon=float(s.get("horizon", 1.0)), warmup=float(s.get("warmup", 0.0)),
            seed=int(s.get("seed", 1)), arrivals=s.get("arrivals"))
