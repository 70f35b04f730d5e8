"""The linker: a parsed program → the IR.

Passes, in order (each a method below):

1. ``imports``      read `use` libraries and `std/args`;
2. ``constants``    fold `let`s and the program's inputs (`args.number`, `--set`);
3. ``attributes``   every name a `set`/`choose`/binding assigns is an attribute;
4. ``declare``      pools, stages, devices, engines, pools on owners (names and collision rules);
5. ``engines``      each engine → its step stage(s) (budget, chunk, cost, serve, iteration);
6. ``workload``     init, turn and session blocks, each `turn;` followed by the server's statements;
7. ``gauges``/``claims``;
8. ``types``        attribute types (Size / Value / Cost);
9. validation of the IR (``serq.ir.validate``) with every problem mapped to its source span;
10. ``lints``       the three lints and the server's hidden-attribute rule.

Every error is collected and reported together, each at its source span.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Optional

from ..diag import Collector, Diagnostic, SerqError, Sources, Span, did_you_mean, read_text
from ..ir import model as M
from ..ir.expr import const_value, draws, is_constant, walk
from ..ir.validate import validate
from ..syntax import ast as A
from ..syntax.parser import parse, parse_expr, parse_library
from . import catalogue as C
from .env import Env
from . import queues
from .exprs import MAX_AGG_TERMS, ExprMixin, LinkAbort, fmt, head_name, names_read, ref_parts, text_of


def parse_once(parsed: Optional[dict], text: str, path: str, how):
    """``how(text, path)`` (a program's or a library's parse), kept in
    ``parsed`` when it is a dict."""
    if parsed is None:
        return how(text, path)
    key = (how, path, text)
    tree = parsed.get(key)
    if tree is None:
        tree = parsed[key] = how(text, path)
    else:
        Sources.add(path, text)     # a diagnostic shows this text, as a parse would have it
    return tree


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


class Linker(ExprMixin):
    def __init__(self, path: str, sets: Optional[dict] = None, settings: Optional[dict] = None,
                 strict_request_names: bool = True, parsed: Optional[dict] = None,
                 input_folds: Optional[list] = None):
        self.path = path
        self.parsed = parsed                    # syntax trees kept between links (compile_source)
        self.input_nums: set = set()            # ids of the numbers that are (made from) an input's value
        self.input_folds = [] if input_folds is None else input_folds   # where one was folded but by products
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

    # ================================================================ entry
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

    # ================================================================ imports and constants
    def top_item(self, item, file: str, in_main: bool = False):
        if isinstance(item, A.Use):
            self.use(item, file)
        elif isinstance(item, A.Def):
            self.define(item)
        elif isinstance(item, A.Let):
            self.let(item, in_main)
        else:  # pragma: no cover - the grammar allows nothing else at top level
            self.diag.add("E105", "only constants, definitions and imports precede main", item.span)

    def use(self, item: A.Use, file: str, in_main: bool = False, declared: Optional[list] = None):
        """A library's definitions; its queues and relations, when it is used
        inside main, are appended to ``declared``, to be declared where the
        `use` stands (``link``)."""
        if item.path == "std/args":
            self.uses_args = True
            return
        base = os.path.dirname(file)
        path = os.path.normpath(os.path.join(base, item.path))
        if path in self.used_libraries:
            return
        if not os.path.isfile(path):
            self.diag.add("E230", f"cannot read library `{item.path}`: no such file "
                          f"(looked for {path})", item.span,
                          help="a library is a file of definitions next to the program that uses it; "
                               "the standard one is `use \"std/args\";`")
            return
        try:
            text = read_text(path, "library ")
        except SerqError as e:
            self.diag.items.extend(e.diagnostics)
            return
        self.used_libraries.add(path)
        self.files.append(path)
        try:
            lib = parse_once(self.parsed, text, path, parse_library)
        except SerqError as e:
            self.diag.items.extend(e.diagnostics)
            return
        for sub in lib.top:
            if isinstance(sub, A.Let):
                self.diag.add("E231", "a library holds definitions and imports, not constants",
                              sub.span, help="declare the constant in the program that uses the library")
                continue
            if isinstance(sub, (A.QueueDecl, A.Relation)):
                if declared is None:
                    self.diag.add("E289", "a library's queues and relations are declared where the program "
                                  "uses it: `use` it inside main", item.span,
                                  notes=[f"the library declares one at {sub.span}"],
                                  help="a `use` above main brings only definitions")
                else:
                    declared.append(sub)
                continue
            try:
                if isinstance(sub, A.Use):
                    self.use(sub, path, in_main, declared)
                else:
                    self.top_item(sub, path)
            except LinkAbort:
                pass

    def define(self, d: A.Def):
        self.declare(d.name, "def", d.name_span)
        if d.name in C.FUNCTIONS or d.name in C.POOL_QUERIES or d.name in C.STAGE_QUERIES or \
                d.name in C.OTHER_FUNCTIONS or d.name in C.AGGREGATES or d.name in C.KEYWORDS:
            self.diag.add("E211", f"`{d.name}` is a function of the language; a definition takes "
                          "another name", d.name_span)
        for p in d.params:
            if p in C.SUPPLIED or p in C.FUNCTIONS or p in C.KEYWORDS:
                self.diag.add("E211", f"`{p}` is a name the language supplies; a parameter takes "
                              "another name", d.span)
        if len(set(d.params)) != len(d.params):
            self.diag.add("E210", f"definition `{d.name}` names a parameter twice", d.span)
        if d.body is not None:
            assigned = _assigned_names(d.body)
            for p in d.params:
                if p in assigned:
                    self.diag.add("E214", f"`{p}` is a parameter of `{d.name}` and its body assigns it",
                                  d.span, help="a definition's body assigns attributes of the program, "
                                               "not its parameters")
        self.defs[d.name] = d

    def let(self, item: A.Let, in_main: bool):
        try:
            self.let_value(item, in_main)
        except LinkAbort:
            # reported; the uses of the name are not reported again as unknown
            self.failed_lets.add(item.name)
            raise

    def let_value(self, item: A.Let, in_main: bool):
        env = Env(clause="const")
        e = item.expr
        input_name = None
        if isinstance(e, A.Call) and isinstance(e.fn, A.Dot) and isinstance(e.fn.obj, A.Name) \
                and e.fn.obj.name == "args" and e.fn.attr == "number":
            if not in_main:
                self.fail("E220", "an input (`args.number`) is declared by a `let` inside main", e.span)
            if not self.uses_args:
                self.fail("E220", "`args.number` needs `use \"std/args\";`", e.span,
                          help='add `use "std/args";` above fn main()')
            if len(e.args) != 2 or not isinstance(e.args[0], A.Str):
                self.fail("E220", '`args.number` takes the input\'s name and its default: '
                          '`args.number("name", default)`', e.span)
            input_name = e.args[0].value
            if not input_name.isidentifier():
                self.fail("E220", f"an input's name is an identifier, not `{input_name}`", e.args[0].span)
            if input_name in self.inputs:
                self.fail("E210", f"input `{input_name}` is declared twice", e.args[0].span,
                          help="read each input once and reuse that binding")
            self.inputs[input_name] = item.name
            if input_name in self.sets:
                text = self.sets[input_name]
                if isinstance(text, A.Node):
                    sexpr = text   # an instance file's value, with its own location
                else:
                    try:
                        sexpr = parse_expr(text, f"--set {input_name}")
                    except SerqError as err:
                        self.diag.items.extend(err.diagnostics)
                        raise LinkAbort()
                value, deps = self.const_expr(sexpr, env)
            else:
                value, deps = self.const_expr(e.args[1], env)
            deps = deps | {input_name}
        else:
            value, deps = self.const_expr(e, env)
        if math.isnan(value):
            self.fail("E401", f"constant `{item.name}` is NaN", item.expr.span,
                      help="a constant is a number or inf")
        self.declare(item.name, "let", item.name_span)
        self.consts[item.name] = ConstInfo(value, item.name_span, input_name, frozenset(deps))

    def const_expr(self, e: A.Expr, env: Env) -> tuple[float, frozenset]:
        v = self.expr(e, env)
        bad = [x for x in walk(v) if type(x) in (M.EAttr, M.ECtx, M.ESample, M.EReg, M.EQuery,
                                                  M.EPrice, M.EAgg)]
        if bad:
            what = {M.EAttr: "an attribute", M.ECtx: "a context variable", M.ESample: "a draw",
                    M.EReg: "a register", M.EQuery: "an observable", M.EPrice: "an observable",
                    M.EAgg: "an aggregate"}[type(bad[0])]
            self.fail("E403", f"a constant cannot read {what}", self.spans.get(id(bad[0]), e.span),
                      help="a constant reads numbers, `inf` and earlier constants")
        deps = set()
        for n, c in names_read(e).items():
            if n in self.consts:
                deps |= self.consts[n].inputs
        return const_value(v), frozenset(deps)

    def check_sets(self):
        for name in self.sets:
            if name in self.inputs:
                continue
            if name in self.consts:
                c = self.consts[name]
                self.diag.add("E250", f"`{name}` is a plain `let`: it cannot be set from outside",
                              c.span, help=f'declare it an input: `let {name} = args.number("{name}", '
                                           f'{fmt(c.value)});` (with `use "std/args";`)')
            else:
                hint = did_you_mean(name, self.inputs)
                value = self.sets[name]
                at = value.span if isinstance(value, A.Node) else None
                self.diag.add("E251", (f"`{name}`" if at is not None else f"--set {name}") +
                              f": the program declares no input `{name}`",
                              at, help=hint or ("its inputs are " + ", ".join(sorted(self.inputs))
                                                if self.inputs else "the program declares no inputs"))

    # ================================================================ names
    def declare(self, name: str, kind: str, span: Span):
        if name in C.SUPPLIED and kind != "register":
            self.diag.add("E211", f"`{name}` is a name the language supplies; {_a(kind)} takes another name",
                          span, help="context variables, `inf`, `running`, `waiting` and `batch` are "
                                     "kept apart from the program's names")
            return
        builtin = set(M.BUILTIN_ATTRS[:4]) | (set(M.TRACE_ATTRS) if self.has_trace() else set())
        if name in builtin and kind not in ("attribute",):
            self.diag.add("E211", f"`{name}` is a built-in attribute; {_a(kind)} takes another name", span)
            return
        prev = self.kinds.get(name)
        if prev is not None:
            pkind, pspan = prev
            if pkind == kind and kind in ("observe", "attribute"):
                return
            if pkind == kind:
                self.diag.add("E210", f"{kind} `{name}` is declared twice", span,
                              notes=[f"first declared at {pspan}"])
            else:
                self.diag.add("E210", f"`{name}` is already {_a(pkind)}; {_a(kind)} cannot take its name", span,
                              notes=[f"the {pkind} is declared at {pspan}"])
            return
        self.kinds[name] = (kind, span)

    def has_trace(self) -> bool:
        wl = self.find_workload()
        return wl is not None and any(isinstance(i, A.WTrace) for i in wl.items)

    def find_workload(self) -> Optional[A.Workload]:
        for item in self.prog.main.items:
            if isinstance(item, A.Workload):
                return item
        return None

    # ================================================================ attributes
    def collect_attributes(self, items):
        """Every name a set, choose, Size/Cost or read binding assigns."""
        found: list[tuple[str, Span]] = []

        def stmts(lst, acc=found):
            for s in lst:
                stmt(s, acc)

        def stmt(s, acc):
            if isinstance(s, (A.Set, A.SizeDecl, A.CostDecl)):
                acc.append((s.name, s.name_span))
            elif isinstance(s, A.CostRecord):
                for f in s.fields:
                    acc.append((f"{s.name}.{f.resource}", s.name_span))
            elif isinstance(s, A.Choose):
                acc.append((s.name, s.name_span))
            elif isinstance(s, A.Hold):
                read = names_read(s.body)
                for b in s.admission:
                    self.hold_binding_names.add(b.name)
                    if read.get(b.name):
                        acc.append((b.name, b.span))
                stmts(s.body.stmts, acc)
            elif isinstance(s, A.Branch):
                stmts(s.then.stmts, acc)
                if s.other:
                    stmts(s.other.stmts, acc)
            elif isinstance(s, (A.While, A.Loop, A.Fork)):
                stmts(s.body.stmts, acc)

        wl = None
        for item in items:
            if isinstance(item, A.Workload):
                wl = item
                for w in item.items:
                    if isinstance(w, A.WBlock):
                        stmts(w.block.stmts)
            elif isinstance(item, A.Server):
                stmts(item.block.stmts)
            elif isinstance(item, A.EngineDecl):
                for e in item.items:
                    if isinstance(e, A.ERequest):
                        self.request_attributes(item.name, e, found)
            elif isinstance(item, A.QueueDecl):
                queues.collect_attributes(self, item, found, stmts)
        for d in self.defs.values():
            if d.body is not None:
                stmts(d.body.stmts)
        for name, span in found:
            if name in self.attr_index:
                continue
            if name in self.consts:
                self.diag.add("E210", f"`{name}` is a constant; a set cannot make it an attribute", span,
                              notes=[f"the constant is declared at {self.consts[name].span}"])
                continue
            if name in C.SUPPLIED:
                self.diag.add("E211", f"`{name}` is a name the language supplies; an attribute takes "
                              "another name", span,
                              help="a stage's capacity or a claim reading it would read the attribute")
                continue
            if name in self.defs:
                self.diag.add("E210", f"`{name}` is already a def; an attribute cannot take its name", span)
                continue
            self.attr_index[name] = len(self.attrs)
            self.attrs.append(name)
            self.kinds.setdefault(name, ("attribute", span))

    def request_attributes(self, engine: str, req: A.ERequest, found: list):
        seen_adm = False
        rest_names = names_read(req.stmts)
        local: list[tuple[str, Span]] = []
        for s in req.stmts:
            if isinstance(s, A.RAdmission):
                seen_adm = True
                idx = req.stmts.index(s)
                after = names_read(req.stmts[idx + 1:])
                for b in s.bindings:
                    self.hold_binding_names.add(b.name)
                    if after.get(b.name):
                        local.append((b.name, b.span))
            elif isinstance(s, A.Mark):
                local.append((f"{engine}.{s.name}", s.span))
        sub: list = []

        def stmt(s):
            if isinstance(s, (A.Set, A.SizeDecl, A.CostDecl)):
                sub.append((s.name, s.name_span))
            elif isinstance(s, A.Choose):
                sub.append((s.name, s.name_span))
            elif isinstance(s, A.Hold):
                for x in s.body.stmts:
                    stmt(x)
            elif isinstance(s, A.Branch):
                for x in s.then.stmts:
                    stmt(x)
                for x in (s.other.stmts if s.other else []):
                    stmt(x)
            elif isinstance(s, (A.While, A.Loop, A.Fork)):
                for x in s.body.stmts:
                    stmt(x)

        for s in req.stmts:
            stmt(s)
        for name, span in sub + local:
            if "." not in name:
                self.request_names[name] = engine
            found.append((name, span))

    # ================================================================ declarations
    def loc(self, span: Optional[Span]) -> Optional[M.Loc]:
        if span is None:
            return None
        try:
            f = self.files.index(span.file)
        except ValueError:
            self.files.append(span.file)
            f = len(self.files) - 1
        return M.Loc(f, span.line, span.col)

    def count_of(self, e: Optional[A.Expr], what: str) -> tuple[int, bool]:
        if e is None:
            return 1, False
        value, deps = self.const_expr(e, Env(clause="const"))
        if not (value >= 1 and math.isfinite(value) and value == math.floor(value)):
            self.fail("E403", f"the size of {what} is a whole number ≥ 1, not {fmt(value)}", e.span)
        if value > MAX_AGG_TERMS:
            # a family is read by aggregates over its members, which write
            # out at most MAX_AGG_TERMS terms
            # (said, and linked on as a family of one, so that nothing else is said of it)
            self.diag.add("E403", f"the size of {what} is at most {MAX_AGG_TERMS} members, not {value:g}",
                          e.span, help=f"a family is read member by member (`max j in n (…)`, "
                                       f"`choose j in n by …`): at most {MAX_AGG_TERMS} terms")
            value = 1.0
        for dep in deps:
            if dep in self.sets:
                self.fail("E252", f"--set {dep} would change the size of {what}, which is fixed when "
                          "the program is parsed", e.span,
                          help=f"give `{dep}` in the program instead")
        return int(value), True

    def declare_item(self, item):
        if isinstance(item, (A.Let, A.Def, A.Use)):
            return
        if isinstance(item, A.PoolDecl):
            if item.owner is not None:
                self.declare(item.name, "pool", item.name_span)
                self.pending_pools_on.append((item, self.item_no))
                return
            n, array = self.count_of(item.count, f"pool `{item.name}`")
            self.declare_pool(item, n, array)
        elif isinstance(item, A.StageDecl):
            n, array = self.count_of(item.count, f"stage `{item.name}`")
            self.declare_stage(item.name, n, array, item.kind, item.span, name_span=item.name_span)
        elif isinstance(item, A.DeviceDecl):
            n, _ = self.count_of(item.count, f"device `{item.name}`")
            self.declare_device(item, n)
        elif isinstance(item, A.EngineDecl):
            self.engine_decl(item)
        elif isinstance(item, A.Workload):
            if self.workload is not None:
                self.diag.add("E240", "a program has one workload", item.span)
                return
            self.workload = item
            self.workload_item_no = self.item_no
        elif isinstance(item, A.Server):
            if self.server is not None:
                self.diag.add("E240", "a program has one server", item.span)
                return
            self.server = item
        elif isinstance(item, A.QueueDecl):
            queues.declare_queue(self, item)
        elif isinstance(item, A.Relation):
            queues.declare_relation(self, item)
        elif isinstance(item, A.ShareDecl):
            if self.share_decl is not None:
                self.diag.add("E210", "`share` is declared twice", item.span)
            self.share_decl = item.span
            self.share = {"maxmin": "MaxMin", "bottleneck": "Bottleneck"}[item.kind]
        elif isinstance(item, A.GaugeDecl):
            self.declare(item.name, "gauge", item.name_span)
            self.gauge_decls.append(item)
        elif isinstance(item, A.ClaimDecl):
            self.declare(item.name, "claim", item.name_span)
            self.claim_decls.append(item)
        elif isinstance(item, A.RunBlock):
            self.diag.add("E106", "`run { … }` is not part of a model: execution settings are given "
                          "when the program is run", item.span,
                          help="serq run FILE --horizon T [--warmup W] [--seed N] [--arrivals N]")
        elif isinstance(item, A.Main):
            self.diag.add("E107", "`fn main()` is declared once, at the top level", item.span)
        else:  # pragma: no cover
            self.diag.add("E199", f"unsupported item {type(item).__name__}", item.span)

    def declare_pool(self, item: A.PoolDecl, n: int, array: bool):
        """A family of `n` pools (one without `[…]`) under `item`'s name."""
        self.declare(item.name, "pool", item.name_span)
        base = len(self.pools_meta)
        for k in range(n):
            pm = PoolMeta(item.name, k if array else None, loc=self.loc(item.span), decl=item)
            self.pools_meta.append(pm)
        self.pool_fams[item.name] = Fam(base, n, array, item.span, self.item_no)
        for k in range(n):
            self.pool_options(base + k, item, allow_cap=True)

    def declare_stage(self, name: str, n: int, array: bool, kind_ast: A.Kind, span: Span,
                      name_span: Optional[Span] = None, declare: bool = True):
        """A family of `n` stages of one kind; `declare` False for the stages a
        queue names after itself (the queue's name is the queue's)."""
        if declare:
            self.declare(name, "stage", name_span or span)
        kind = self.stage_kind(kind_ast, name)
        base = len(self.stages_meta)
        for k in range(n):
            self.stages_meta.append(StageMeta(name, k if array else None, kind, self.loc(span), self.item_no))
        self.stage_fams[name] = Fam(base, n, array, span, self.item_no)

    def declare_device(self, item: A.DeviceDecl, n: int):
        self.declare(item.name, "device", item.name_span)
        dev = DeviceInfo(item.name, n, item)
        for r in item.resources:
            if isinstance(r, A.TimeResource):
                if r.name in dev.time or r.name in dev.caps:
                    self.diag.add("E210", f"device `{item.name}` declares `{r.name}` twice", r.span)
                dev.time[r.name] = r
                self.device_time_names.add(r.name)
                unread = [p for p in r.params if not names_read(r.expr).get(p)]
                if unread:
                    self.diag.add("E215", f"time resource `{r.name}` does not read its parameter "
                                  f"`{unread[0]}`", r.span)
            else:
                if r.name in dev.time or r.name in dev.caps:
                    self.diag.add("E210", f"device `{item.name}` declares `{r.name}` twice", r.span)
                dev.caps[r.name] = r
        self.devices[item.name] = dev

    def stage_kind(self, k: A.Kind, name: str):
        env = Env(clause="ps")
        if k.kind == "fifo":
            if k.expr is None:
                return M.KFifo(1)
            v, _ = self.const_expr(k.expr, Env(clause="const"))
            if not (v >= 1 and math.isfinite(v) and v == math.floor(v)):
                self.fail("E403", f"a fifo's servers are a whole number ≥ 1, not {fmt(v)}", k.expr.span)
            return M.KFifo(int(v))
        if k.kind == "ps":
            return M.KPs(self.expr(k.expr, env))
        if k.kind == "delay":
            return M.KDelay()
        self.fail("E108", f"`stage {name} : step {{ … }}` is the older spelling of an engine", k.span,
                  help="declare the engine on its device:\n"
                       "    device gpu { kv cap blocks * bs; }\n"
                       f"    engine {name if name != 'engine' else 'llm'} on gpu {{ reqs cap max_seqs; tokens cap B;\n"
                       "      schedule { advance running; admit waiting while (running.preempted == 0); }\n"
                       "      execute (…); }\n"
                       "    pool kv on gpu { block bs; evict lru; preempt lifo; }\n"
                       f"    pool reqs on {name if name != 'engine' else 'llm'} {{ queue fifo; }}")

    def pool_options(self, i: int, decl: A.PoolDecl, allow_cap: bool):
        pm = self.pools_meta[i]
        seen = set()
        for o in decl.opts:
            key = o.kind.split("_")[0]
            if key in seen:
                self.diag.add("E210", f"pool `{decl.name}` says `{key}` twice", o.span)
                continue
            seen.add(key)
            try:
                if o.kind == "cap":
                    if not allow_cap:
                        self.fail("E241", f"the capacity of pool `{decl.name}` is its owner's",
                                  o.span, help=f"declare `{decl.name} cap …;` in `{decl.owner}`")
                    v, _ = self.const_expr(o.exprs[0], Env(clause="const"))
                    if math.isnan(v) or v < 0:
                        self.fail("E403", f"a cap is a number ≥ 0, not {fmt(v)}", o.exprs[0].span)
                    pm.cap = v
                elif o.kind == "block":
                    v, _ = self.const_expr(o.exprs[0], Env(clause="const"))
                    if not (v > 0 and math.isfinite(v)):
                        self.fail("E403", f"a block is a positive number, not {fmt(v)}", o.exprs[0].span)
                    pm.block = v
                elif o.kind == "evict_lru":
                    pm.evict = M.EvictLru()
                elif o.kind == "evict_by":
                    pm.evict = M.EvictBy(tuple(self.expr(k, Env(clause="evict")) for k in o.exprs))
                elif o.kind == "preempt_none":
                    pm.preempt = M.PreemptNone()
                elif o.kind == "preempt_lifo":
                    neg = self.mk(M.EUnary("Neg", self.mk(M.ECtx("Admission"), o.span)), o.span)
                    pm.preempt = M.PreemptBy((neg,), False)
                elif o.kind == "preempt_by":
                    keys = tuple(self.expr(k, Env(clause="preempt_key")) for k in o.exprs)
                    pm.preempt = M.PreemptBy(keys, o.word == "tail")
                elif o.kind == "queue_fifo":
                    pm.queue = None
                elif o.kind == "queue_by":
                    pm.queue = tuple(self.expr(k, Env(clause="queue_key")) for k in o.exprs)
                elif o.kind == "reserve_held":
                    pm.reserve_held = True
                    if o.exprs:
                        pm.held = self.expr(o.exprs[0], Env(clause="held"))
                elif o.kind == "cache_shared":
                    pm.shared = True
                elif o.kind == "spill":
                    to = self.ref_of(o.refs[0], Env(clause="spill"), "pool")
                    via = self.ref_of(o.refs[1], Env(clause="spill"), "stage")
                    pm.spill = M.Spill(to, via, self.expr(o.exprs[0], Env(clause="spill")),
                                       self.expr(o.exprs[1], Env(clause="spill")))
                elif o.kind == "admit_via":
                    self.fail("E109", "`admit via` is the older spelling: who admits a pool is said "
                              "where the pool is", o.span,
                              help=f"declare it on its engine: `pool {decl.name} on {o.word} {{ … }}` "
                                   f"(a capacity `{decl.name} cap …;` in engine {o.word}), or "
                                   f"`pool {decl.name} on {o.word}.DEVICE {{ … }}`")
            except LinkAbort:
                pass

    # ---------------------------------------------------------------- engines
    def engine_decl(self, item: A.EngineDecl, count: Optional[tuple] = None, device: Optional[str] = None,
                    declare: bool = True):
        """An engine; a queue's (`engine on gpu` in queue P) passes its member
        count, its device's name (`P.gpu`) and declare False."""
        if declare:
            self.declare(item.name, "engine", item.name_span)
        if declare and item.name == "engine":
            self.diag.add("E211", "`engine` is a keyword: an engine is named for what it models "
                          "(`vllm`, `sglang`, `tgi`) or `llm`", item.name_span)
        dev = self.devices.get(device or item.device)
        if dev is None:
            kind = self.kind_of(item.device)
            msg = f"unknown device `{item.device}`" if kind is None else \
                f"`{item.device}` is a {kind}, not a device"
            self.fail("E201", msg, item.span, help=did_you_mean(item.device, self.devices) or
                      f"declare it above: `device {item.device} {{ … }}`")
        if dev.engine is not None:
            self.fail("E242", f"device `{dev.name}` already runs engine `{dev.engine.name}`; "
                      "one device runs one engine", item.name_span)
        n, array = count if count is not None else self.count_of(item.count, f"engine `{item.name}`")
        eng = EngineInfo(item.name, n, item, dev)
        dev.engine = eng
        if dev.count not in (1, n):
            self.fail("E243", f"engine `{item.name}[{n}]` on device `{dev.name}[{dev.count}]`: "
                      "families are joined member for member, or one for all", item.span)
        eng.base = len(self.stages_meta)
        for k in range(n):
            self.stages_meta.append(StageMeta(item.name, k if array else None, None,
                                              self.loc(item.span), self.item_no))
        self.stage_fams[item.name] = Fam(eng.base, n, array, item.span, self.item_no)
        for it in item.items:
            if isinstance(it, A.ECap):
                if it.name in eng.caps or (it.name == "tokens" and "tokens" in eng.caps):
                    self.diag.add("E210", f"engine `{item.name}` declares `{it.name} cap` twice", it.span)
                if it.name == "tokens" and it.count is not None:
                    self.diag.add("E403", "`tokens cap` is one number", it.span)
                cnt = 1
                if it.count is not None:
                    cnt, _ = self.count_of(it.count, f"`{it.name}`")
                    if n > 1:
                        self.diag.add("E244", f"an engine family holds no `{it.name}[{cnt}]`: "
                                      f"`{it.name} cap` already gives each member its own", it.span)
                eng.caps[it.name] = (cnt, it)
            elif isinstance(it, A.ERequest):
                if eng.request is not None:
                    self.diag.add("E210", f"engine `{item.name}` has one request", it.span)
                if n > 1:
                    self.diag.add("E244", "an engine family has no request", it.span)
                eng.request = it
            elif isinstance(it, A.ESchedule):
                if eng.schedule is not None:
                    self.diag.add("E210", f"engine `{item.name}` has one schedule", it.span)
                eng.schedule = it
            elif isinstance(it, A.EState):
                if it.name in self.register_index or it.name in self.kinds:
                    self.diag.add("E210", f"register `{it.name}` names something else", it.span)
                    continue
                if n > 1:
                    self.diag.add("E244", "an engine family declares no registers", it.span)
                    continue
                v, _ = self.const_expr(it.expr, Env(clause="const"))
                if not math.isfinite(v):
                    self.diag.add("E403", "a register starts at a finite number", it.expr.span)
                self.register_index[it.name] = len(self.registers)
                self.registers.append(M.Register(it.name, eng.base, v))
                self.kinds[it.name] = ("register", it.span)
        for what, ok in (("tokens cap", "tokens" in eng.caps),
                         ("schedule", eng.schedule is not None),
                         ("execute", any(isinstance(i, A.EExecute) for i in item.items))):
            if not ok:
                self.diag.add("E245", f"engine `{item.name}` needs `{what}`", item.name_span,
                              help={"tokens cap": "the tokens one iteration computes: `tokens cap B;` "
                                                  "(`inf` for none)",
                                    "schedule": "what each iteration does, e.g. `schedule { advance running; "
                                                "admit waiting while (running.preempted == 0); }`",
                                    "execute": "the batch's time: `execute (…);` (`execute (1);` is the "
                                               "step clock)"}[what])
        self.engines[item.name] = eng
        return eng

    def pool_on(self, item: A.PoolDecl, item_no: int):
        owner, device = item.owner, item.device
        local = item.name.rsplit(".", 1)[-1]   # a queue's pool `P.kv` is its owner's capacity `kv`
        admit_eng: Optional[EngineInfo] = None
        mem_eng: Optional[EngineInfo] = None
        if device is not None:
            eng = self.engines.get(owner)
            if eng is None:
                self.fail("E201", f"`pool {item.name} on {owner}.{device}`: unknown engine `{owner}`",
                          item.span, help=did_you_mean(owner, self.engines))
            if eng.device.name != device:
                self.fail("E246", f"engine `{owner}` runs on `{eng.device.name}`, not `{device}`",
                          item.span)
            dev, admit_eng, mem_eng = eng.device, eng, eng
            cap_decl = dev.caps.get(local)
            if cap_decl is None:
                self.fail("E247", f"device `{dev.name}` declares no capacity `{local}`", item.span,
                          help=f"add `{local} cap …;` to device `{dev.name}`")
            count = dev.count if dev.count > 1 else (eng.count if eng.count > 1 else 1)
            cap_expr = cap_decl.expr
        elif owner in self.devices:
            dev = self.devices[owner]
            cap_decl = dev.caps.get(local)
            if cap_decl is None:
                self.fail("E247", f"device `{dev.name}` declares no capacity `{local}`", item.span,
                          help=f"add `{local} cap …;` to device `{dev.name}`")
            mem_eng = dev.engine
            count = dev.count
            cap_expr = cap_decl.expr
        elif owner in self.engines:
            eng = self.engines[owner]
            if local not in eng.caps:
                self.fail("E247", f"engine `{owner}` holds no capacity `{local}`", item.span,
                          help=f"add `{local} cap …;` to engine `{owner}`")
            cnt, ecap = eng.caps[local]
            admit_eng = eng
            count = cnt if cnt > 1 else eng.count
            cap_expr = ecap.expr
        else:
            kind = self.kind_of(owner)
            self.fail("E201", f"`pool {item.name} on {owner}`: " +
                      (f"unknown owner `{owner}`" if kind is None else f"`{owner}` is a {kind}") +
                      " (a pool is on a device or an engine)", item.span,
                      help=did_you_mean(owner, list(self.devices) + list(self.engines)))
        cap, _ = self.const_expr(cap_expr, Env(clause="const"))
        if math.isnan(cap) or cap < 0:
            self.fail("E403", f"a cap is a number ≥ 0, not {fmt(cap)}", cap_expr.span)
        base = len(self.pools_meta)
        owner_q = self.queues.get(item.name.split(".", 1)[0]) if "." in item.name else None
        array = count > 1 or (owner_q is not None and owner_q.array)   # a family of one is a family
        for k in range(count):
            pm = PoolMeta(item.name, k if array else None, cap=cap, loc=self.loc(item.span), decl=item)
            self.pools_meta.append(pm)
        self.pool_fams[item.name] = Fam(base, count, array, item.span, item_no)
        for k in range(count):
            self.pool_options(base + k, item, allow_cap=False)
            if admit_eng is not None:
                member = k if admit_eng.count > 1 else 0
                self.pools_meta[base + k].admit_via = admit_eng.base + member
        if admit_eng is not None:
            admit_eng.admitted.append(base)
        if mem_eng is not None:
            if mem_eng.memory is not None:
                self.fail("E248", f"engine `{mem_eng.name}`'s device holds one memory pool; "
                          f"`{self.pools_meta[mem_eng.memory].name}` is it", item.span)
            if count != mem_eng.count:
                self.fail("E243", f"pool `{item.name}` has {count} member(s) and engine "
                          f"`{mem_eng.name}` {mem_eng.count}: the memory of each member is its own",
                          item.span)
            mem_eng.memory = base

    def engine_admits(self, eng: EngineInfo) -> list:
        return [(b, self.pool_fams[self.pools_meta[b].name].count) for b in eng.admitted]

    def engine(self, eng: EngineInfo):
        item = eng.decl
        sched = eng.schedule
        execute = next((i for i in item.items if isinstance(i, A.EExecute)), None)
        granule = next((i for i in item.items if isinstance(i, A.EGranule)), None)
        if sched is None or execute is None or "tokens" not in eng.caps:
            return
        for member in range(eng.count):
            base_env = Env(engine=eng, member=member, device=eng.device)
            if eng.name in self.queues:
                base_env = base_env.with_subst(queues.own_pools(self, self.queues[eng.name], member))
            budget = self.try_expr(eng.caps["tokens"][1].expr, base_env.at("tokens_cap"))
            cost = self.try_expr(execute.expr, base_env.at("execute"))
            gran = None
            if granule is not None:
                g, _ = self.const_expr(granule.expr, Env(clause="const"))
                if not g > 0:
                    self.diag.add("E403", f"a granule is positive, not {fmt(g)}", granule.expr.span)
                gran = g
            serve, iteration, chunk = self.schedule(eng, sched, base_env)
            if gran is not None and type(serve) is M.ServeExclusivePrefill:
                self.diag.add("E249", "a granule cannot be combined with exclusive prefill", granule.span)
            memory = None
            if eng.memory is not None:
                memory = eng.memory + (member if self.pool_fams[self.pools_meta[eng.memory].name].count > 1 else 0)
            kind = M.KStep(budget=budget, cost=cost, chunk=chunk, serve=serve, memory=memory,
                           granule=gran, iteration=iteration)
            self.stages_meta[eng.base + member].kind = kind

    def schedule(self, eng: EngineInfo, sched: A.ESchedule, env: Env):
        lets = {}
        for let in sched.lets:
            if let.name in self.defs or let.name in self.consts:
                self.diag.add("E210", f"a schedule's let `{let.name}` cannot share its name with a "
                              "def or a program's let", let.name_span)
            lets[let.name] = (let.expr, env.at("sched_budget"))
        stmts = sched.stmts
        # each at most: one cap for the whole iteration
        caps = [s.atmost for s in _sched_walk(stmts) if getattr(s, "atmost", None) is not None]
        chunk = self.num(0, sched.span)
        if caps:
            lowered = []
            for c in caps:
                try:
                    lowered.append((self.expr(c, env.at("sched_budget").with_subst(lets)), c))
                except LinkAbort:
                    pass
            if lowered:
                first, cspan = lowered[0]
                for other, ospan in lowered[1:]:
                    if other != first:
                        self.diag.add("E250", "every `each at most` of a schedule says the same cap: "
                                      "one cap per run for the whole iteration", ospan.span)
                chunk = self.chunk_of(first, cspan)
        takings = [s.taking for s in _sched_walk(stmts) if isinstance(s, A.SAdmit) and s.taking]
        if takings:
            eng.taking = takings[0]
            for t in takings[1:]:
                if _strip(t) != _strip(takings[0]):
                    self.diag.add("E250", "every `admit waiting` of an engine writes the same `taking`",
                                  t.span)
        # the recognised forms
        gate_ok = lambda g: g is not None and self.is_not_preempted(g, env)
        if len(stmts) == 2 and isinstance(stmts[0], A.SAdvance) and isinstance(stmts[1], A.SAdmit) \
                and gate_ok(stmts[1].guard):
            adv, adm = stmts
            keys = self.order_keys(adv.order, env)
            if adv.only is None and adm.only is None:
                return M.ServeBy(keys), None, chunk
            if adv.only is not None and adm.only is not None:
                p1 = self.try_expr(adv.only, env.at("sched_only"))
                p2 = self.try_expr(adm.only, env.at("sched_only"))
                if p1 == p2:
                    gate = self.mk(M.EUnary("Not", self.mk(M.ECtx("Preempted"), adm.guard.span)),
                                   adm.guard.span)
                    return M.ServeBy(keys), (M.IServe(only=p1), M.IAdmit(only=p1, gate=gate)), chunk
        if len(stmts) == 2 and isinstance(stmts[0], A.SExclusive) and isinstance(stmts[1], A.SAdmit) \
                and gate_ok(stmts[1].guard) and stmts[1].only is None:
            return M.ServeExclusivePrefill(), None, chunk
        body = tuple(self.iter_stmts(stmts, env))
        return M.ServeBy(()), body, chunk

    def is_not_preempted(self, g: A.Expr, env: Env) -> bool:
        try:
            v = self.expr(g, env.at("sched_plan"))
        except LinkAbort:
            return False
        pre = M.ECtx("Preempted")
        return v == M.EBinary("Eq", pre, M.ENum(0.0)) or v == M.EUnary("Not", pre)

    def order_keys(self, order: Optional[A.Order], env: Env) -> tuple:
        if order is None or order.kind == "admission":
            return ()
        if order.kind == "decode_first":
            sp = order.span
            return (self.mk(M.ECond(self.mk(M.ECtx("Decoding"), sp), self.num(0, sp), self.num(1, sp)), sp),)
        return tuple(self.try_expr(k, env.at("sched_serve")) for k in order.keys)

    def iter_stmts(self, stmts, env: Env):
        for s in stmts:
            try:
                if isinstance(s, A.SAdvance):
                    only = self.expr(s.only, env.at("sched_only")) if s.only is not None else None
                    by = self.order_keys(s.order, env) if s.order is not None else None
                    yield M.IServe(only=only, by=by)
                elif isinstance(s, A.SAdmit):
                    only = self.expr(s.only, env.at("sched_only")) if s.only is not None else None
                    gate = self.expr(s.guard, env.at("sched_plan")) if s.guard is not None else None
                    yield M.IAdmit(only=only, gate=gate)
                elif isinstance(s, A.SBranch):
                    g = self.expr(s.guard, env.at("sched_plan"))
                    yield M.IBranch(g, tuple(self.iter_stmts(s.then, env)),
                                    tuple(self.iter_stmts(s.other or [], env)))
                elif isinstance(s, A.SSet):
                    if s.name not in self.register_index:
                        self.fail("E201", f"`{s.name}` is not a register of this engine", s.span,
                                  help=f"declare it: `state {s.name} = 0;`")
                    r = self.register_index[s.name]
                    yield M.ISet(r, self.expr(s.expr, env.at("sched_plan")))
                elif isinstance(s, A.SExclusive):
                    self.fail("E251", "`exclusive prefill` appears only as "
                              "`exclusive prefill; admit waiting while (running.preempted == 0);`",
                              s.span)
            except LinkAbort:
                pass

    def chunk_of(self, e: M.Expr, src: A.Expr) -> M.Expr:
        """`each at most (e)` as the kernel's chunk, where 0 means no cap: a cap
        of inf is written 0, and Z3 shows that every value the cap can take,
        for every value of what its condition reads, is above 0 (the kernel
        would read 0 as no cap: the program would mean one thing and run
        another)."""
        from .. import smt

        def ref_name(ref, kind):
            decls = self.pools_meta if kind == "pool" else self.stages_meta
            return decls[ref.base].name if 0 <= ref.base < len(decls) else f"{kind}{ref.base}"

        cex = smt.cap_counterexample(e, name_of_ref=ref_name,
                                     reg_names=tuple(r.name for r in self.registers))
        if cex is not None:
            text = _source_text(src.span)
            named = []
            for x in walk(e):
                if type(x) is M.ENum and not x.value > 0:
                    sp = self.spans.get(id(x))
                    word = _source_text(sp) if sp else None
                    if word and word.isidentifier() and word in self.consts:
                        named.append(f"{word} = {fmt(x.value)}")
            state = ", ".join(f"{n} = {v}" for n, v in cex.assignment)
            if cex.value == "unknown":
                msg = f"each at most ({text}): Z3 cannot show that the cap is above 0"
            else:
                msg = (f"{'with ' + ', '.join(sorted(set(named))) + ', ' if named else ''}"
                       f"each at most ({text}) is {cex.value}" + (f" when {state}" if state else ""))
            self.diag.add("E407", msg, src.span,
                          help="a cap at or below 0 does not link (the kernel reads 0 as no cap): write "
                               "`inf` for no cap, a constant above 0, or `max(k, e)` with a constant k > 0")
            return self.num(0, src.span)

        def conv(x):
            if type(x) is M.ENum and math.isinf(x.value) and x.value > 0:
                return self.num(0, self.spans.get(id(x), src.span))
            if type(x) is M.ECond:
                return self.mk(M.ECond(x.cond, conv(x.then), conv(x.other)),
                               self.spans.get(id(x), src.span))
            return x
        return self.fold(conv(e))

    # ================================================================ workload and statements
    def workload_blocks(self):
        wl = self.workload
        self.blocks = []
        init = turn = session = None
        server_block = self.server.block if self.server else None
        if wl is None:
            if self.server is not None:
                self.diag.add("E252", "a server needs a workload: `workload { arrive …; }`",
                              self.server.span)
            session_stmts = None
            wl_span = self.prog.main.span
        else:
            wl_span = wl.span
            session_stmts = None
            seen = set()
            for w in wl.items:
                try:
                    if isinstance(w, A.WArrive):
                        if "arrive" in seen:
                            self.diag.add("E210", "the workload says `arrive` twice", w.span)
                        seen.add("arrive")
                        self.arrival = self.arrival_of(w)
                    elif isinstance(w, A.WTrace):
                        if "trace" in seen:
                            self.diag.add("E210", "the workload says `trace` twice", w.span)
                        seen.add("trace")
                        self.trace_of(w)
                    elif isinstance(w, A.WBlock):
                        if w.kind in seen:
                            self.diag.add("E210", f"the workload has one `{w.kind}` block", w.span)
                        seen.add(w.kind)
                        if w.kind == "session":
                            session_stmts = w.block
                        elif w.kind == "init":
                            init = self.new_block(w.block.stmts, Env(), "client", where="init")
                        else:
                            turn = self.new_block(w.block.stmts, Env(), "client", where="turn")
                    elif isinstance(w, A.WHidden):
                        for n in w.names:
                            if n in ("cached", "computed"):
                                self.diag.add("E253", f"`{n}` is set by the scheduler and cannot be hidden",
                                              w.span)
                            elif n not in self.attr_index:
                                self.diag.add("E201", f"hidden `{n}`: nothing sets it", w.span,
                                              help=did_you_mean(n, self.attr_index))
                            else:
                                self.hidden.append(self.attr_index[n])
                except LinkAbort:
                    pass
            if "trace" in seen and "turn" in seen:
                pass
        if self.settings.get("trace"):
            if "trace" not in (seen if wl is not None else ()):
                self.diag.add("E234", f"--trace {self.settings['trace']}: the program replays no trace, "
                              "so there is none to replace", wl_span,
                              help='a workload replays one with `trace "file.csv";`')
            self.trace = self.settings["trace"]
        if type(self.arrival) is M.ATrace and not (self.trace or "").endswith(".jsonl"):
            self.diag.add("E293", "`arrive trace(…)` reads its arrival times from a timestamped trace",
                          next(w.span for w in wl.items if isinstance(w, A.WArrive)),
                          help='name a Mooncake trace (`timestamp,input_length,output_length,hash_ids`, '
                               'one JSON object a line): `trace "FILE.jsonl";`')
        if type(self.arrival) is M.ATrace:
            self.trace_ordered = True     # row i is session i
        self.server_ast = server_block
        if session_stmts is None:
            stmts = [A.Turn(wl_span)] if wl is not None else []
            sess_span = wl_span
        else:
            stmts = session_stmts.stmts
            sess_span = session_stmts.span
            if not _has_turn(stmts) and self.server is not None:
                self.diag.add("E254", "the session never takes a turn, so the server never runs",
                              sess_span, help="`turn;` submits the turn to the server and waits for it")
        if self.server is not None and session_stmts is not None and not _has_turn(stmts):
            pass
        session = self.new_block(stmts, Env(), "client", where="session")
        self.init_block, self.turn_block, self.session_block = init, turn, session
        if self.tool_needed is not None and "tool" not in self.stage_fams:
            self.stages_meta.append(StageMeta("tool", None, M.KDelay(), self.loc(self.tool_needed),
                                              self.workload_item_no))
            self.stage_fams["tool"] = Fam(len(self.stages_meta) - 1, 1, False, self.tool_needed,
                                          self.workload_item_no)
            self.kinds.setdefault("tool", ("stage", self.tool_needed))
            # the supplied stage has no index yet in statements lowered before it:
            # they were given a placeholder which we now resolve
            self.resolve_tool_placeholders()

    def arrival_of(self, w: A.WArrive) -> M.Arrival:
        k = w.kind
        if k == "none":
            if w.expr is not None:
                self.fail("E221", "`arrive none;` takes no argument", w.span)
            return M.ANone()
        if w.expr is None:
            self.fail("E221", f"`arrive {k}(…)` takes an argument", w.span)
        if k == "renewal":
            return M.ARenewal(self.expr(w.expr, Env(clause="arrival")))
        v, _ = self.const_expr(w.expr, Env(clause="const"))
        if k == "trace":
            if not (v > 0 and math.isfinite(v)):
                self.fail("E293", f"`arrive trace(scale)`: the scale of the trace's timestamps is "
                          f"positive and finite, not {fmt(v)}", w.expr.span)
            return M.ATrace(v)
        if k == "poisson":
            if not (v > 0 and math.isfinite(v)):
                self.fail("E404", f"a poisson rate is positive and finite, not {fmt(v)}", w.expr.span)
            return M.APoisson(v)
        if not (1 <= v <= M.MAX_SESSIONS and v == math.floor(v)):
            self.fail("E404", f"a population is a whole number from 1 to {M.MAX_SESSIONS:,}, "
                      f"not {fmt(v)}", w.expr.span)
        return M.AClosed(int(v)) if k == "closed" else M.ABatch(int(v))

    def trace_of(self, w: A.WTrace):
        path = os.path.normpath(os.path.join(os.path.dirname(self.path), w.path))
        self.trace_ordered = w.ordered
        if self.settings.get("trace"):
            return
        if not os.path.exists(path):
            self.fail("E232", f"cannot read trace `{w.path}`: no such file (looked for {path})", w.span)
        self.trace = os.path.relpath(path)

    # ---------------------------------------------------------------- blocks
    def new_block(self, stmts, env: Env, side: str, where: str = "body", ctx=None) -> int:
        idx = len(self.blocks)
        self.blocks.append(None)
        out: list = []
        ctx = ctx or StmtCtx(where=where)
        self.stmts(stmts, env, side, out, ctx)
        self.blocks[idx] = out
        return idx

    def emit(self, out: list, stmt, span: Span, side: str):
        out.append((stmt, self.loc(span), side))
        self.spans[id(stmt)] = span
        self.keep.append(stmt)

    def stmts(self, stmts, env: Env, side: str, out: list, ctx: "StmtCtx"):
        for s in stmts:
            try:
                self.stmt(s, env, side, out, ctx)
            except LinkAbort:
                pass

    def stmt(self, s, env: Env, side: str, out: list, ctx: "StmtCtx"):
        S = env.at("session")
        t = type(s)
        if t is A.Turn:
            if ctx.where in ("init", "turn"):
                self.fail("E712", f"the workload's {ctx.where} block may only set and observe", s.span)
            if side == "server":
                self.fail("E716", "`turn;` belongs to the session; a server is done with a request when "
                          "its block is", s.span, env=env)
            if ctx.in_fork:
                self.fail("E715", "a leg (fork) may not take a turn", s.span)
            self.emit(out, M.STurn(), s.span, "client")
            if self.server_ast is not None:
                sctx = StmtCtx(where="server")
                self.stmts(self.server_ast.stmts, Env(), "server", out, sctx)
            return
        if t is A.RequestStmt:
            self.fail("E110", "`request;` is the older spelling: `turn;` draws the turn's attributes, "
                      "submits it to the server and waits for the answer", s.span,
                      help="write the session as `session { turn; while (more) { …; turn; } }`")
        if ctx.where in ("init", "turn") and t not in (A.Set, A.Observe, A.SizeDecl):
            self.fail("E712", f"the workload's {ctx.where} block may only set and observe", s.span)
        if t in (A.Set, A.SizeDecl, A.CostDecl):
            name = env.rename.get(s.name, s.name)
            if name not in self.attr_index:
                raise LinkAbort()  # its name was refused when the attributes were collected
            slot = self.attr_index[name]
            self.check_request_name(s.name, s.name_span, env)
            if t is A.SizeDecl:
                if side == "server":
                    self.fail("E311", "a `Size` is the workload's; the server computes values of its own",
                              s.span)
                self.declared_types[slot] = ("Size", s.span)
            elif t is A.CostDecl:
                self.declared_types[slot] = ("Cost", s.span)
            e = self.expr(s.expr, S)
            self.attr_side.setdefault(slot, set()).add(side)
            self.emit(out, M.SSet(slot, e), s.span, side)
            return
        if t is A.CostRecord:
            for f in s.fields:
                kind = self.kind_of(f.resource)
                if kind not in ("pool", "stage", "engine"):
                    self.fail("E302", f"`{f.resource}` is not a pool or a stage", f.span)
                fam = self.pool_fams.get(f.resource) if kind == "pool" else self.stage_fams.get(f.resource)
                slot = self.attr_index[f"{s.name}.{f.resource}"]
                inner = self.expr(f.expr, S)
                e = self.mk(M.ECost((M.Target("pool" if kind == "pool" else "stage", fam.base),), inner),
                            f.span)
                self.declared_types[slot] = ("Cost", f.span)
                self.attr_side.setdefault(slot, set()).add(side)
                self.emit(out, M.SSet(slot, e), f.span, side)
            return
        if t is A.Observe:
            self.declare(s.name, "observe", s.name_span)
            if s.name in self.attr_index:
                pass
            if s.name not in self.observe_index:
                self.observe_index[s.name] = len(self.observes)
                self.observes.append(s.name)
            self.emit(out, M.SObserve(self.observe_index[s.name], self.expr(s.expr, S)), s.span, side)
            return
        if t is A.Hold:
            self.hold(s, env, side, out, ctx)
            return
        if t in (A.Grow, A.Load):
            ref = self.ref_of(s.ref, S, "pool")
            queues.check_pool(self, ref, s.ref.span, env, "grow" if t is A.Grow else "load")
            stmt = (M.SGrow if t is A.Grow else M.SLoad)(ref, self.expr(s.expr, S))
            self.emit(out, stmt, s.span, side)
            return
        if t is A.Drop:
            ref = self.ref_of(s.ref, S, "pool")
            queues.check_pool(self, ref, s.ref.span, env, "drop")
            self.emit(out, M.SDrop(ref), s.span, side)
            return
        if t is A.Content:
            self.emit(out, M.SContent(self.expr(s.id, S), self.expr(s.n, S)), s.span, side)
            return
        if t is A.Release:
            ref = self.ref_of(s.ref, S, "pool")
            queues.check_pool(self, ref, s.ref.span, env, "release")
            self.emit(out, M.SRelease(ref), s.span, side)
            return
        if t is A.Run:
            self.run(s, env, side, out, ctx)
            return
        if t is A.Branch:
            if s.draw:
                p = self.expr(s.guard, S)
                g = self.mk(M.ESample("Bernoulli", (p,)), s.guard.span)
            else:
                g = self.expr(s.guard, S)
            then = self.new_block(s.then.stmts, env, side, ctx=ctx)
            other = self.new_block(s.other.stmts, env, side, ctx=ctx) if s.other is not None else None
            self.emit(out, M.SBranch(g, then, other), s.span, side)
            return
        if t is A.While:
            g = self.expr(s.guard, S)
            body = self.new_block(s.body.stmts, env, side, ctx=ctx.inner(loop=True))
            self.emit(out, M.SWhile(g, body), s.span, side)
            return
        if t is A.Loop:
            body = self.new_block(s.body.stmts, env, side, ctx=ctx.inner(loop=True))
            self.emit(out, M.SLoop(body), s.span, side)
            return
        if t is A.Fork:
            body = self.new_block(s.body.stmts, env, side, ctx=ctx.inner(fork=True))
            self.emit(out, M.SFork(body), s.span, side)
            return
        if t is A.Join:
            self.emit(out, M.SJoin(), s.span, side)
            return
        if t is A.Choose:
            name = env.rename.get(s.name, s.name)
            if name not in self.attr_index:
                raise LinkAbort()
            slot = self.attr_index[name]
            count = self.expr(s.count, S)
            keys = tuple(self.expr(k, S) for k in s.keys)
            self.attr_side.setdefault(slot, set()).add(side)
            self.emit(out, M.SChoose(slot, count, keys), s.span, side)
            return
        if t is A.End:
            if ctx.in_fork:
                self.fail("E715", "a leg (fork) may not end the session", s.span)
            self.emit(out, M.SEnd(), s.span, side)
            return
        if t is A.Mark:
            full = f"{env.in_request.name}.{s.name}" if env.in_request is not None else \
                queues.mark_name(env, s.name)
            if full is not None:
                slot = self.attr_index[full]
                self.emit(out, M.SSet(slot, self.mk(M.ECtx("Now"), s.span)), s.span, side)
                return
            self.fail("E255", "`mark` names a moment inside an engine's request or a queue's entry",
                      s.span)
        if t is A.Tool:
            self.tool(s, env, side, out, ctx)
            return
        if t is A.Transfer:
            self.transfer(s, env, side, out, ctx)
            return
        if t is A.CallStmt:
            self.call_stmt(s, env, side, out, ctx)
            return
        if t in (A.RPrefill, A.RDecode):
            mode = "prefill" if t is A.RPrefill else "decode"
            if env.in_request is None:
                self.mode_outside_request(mode, s.span, " growing kv" if s.growing is not None else "")
            eng = env.in_request
            work = self.expr(s.work, S)
            sref = self.mk(M.Ref(eng.base, 1, None), s.span)
            work = self.mk(M.ECost((M.Target("stage", eng.base),), work), s.work.span)
            growing = self.ref_of(s.growing, S, "pool") if s.growing is not None else None
            self.emit(out, M.SRun(sref, mode.capitalize(), work, growing), s.span, side)
            return
        if t is A.RAwait:
            if env.in_request is None:
                self.fail("E111", "`await;` is a statement of an engine's request", s.span,
                          help="it keeps the request on its engine for one more iteration")
            eng = env.in_request
            sref = self.mk(M.Ref(eng.base, 1, None), s.span)
            work = self.mk(M.ECost((M.Target("stage", eng.base),), self.num(0, s.span)), s.span)
            self.emit(out, M.SRun(sref, "Await", work), s.span, side)
            return
        if t is A.RAdmission:
            self.fail("E256", "`at admission { … }` stands once, at the top level of an engine's request",
                      s.span)
        if t is A.RCache:
            self.fail("E256", "`cache (…);` is the last item of an engine's request", s.span)
        raise AssertionError(t)  # pragma: no cover

    def mode_outside_request(self, mode: str, span: Span, growing: str = ""):
        """`prefill (…)` or `decode (…)` outside an engine's request: the run
        names its engine there (the program's, when it has one)."""
        e = next(iter(self.engines)) if len(self.engines) == 1 else "ENGINE"
        self.fail("E111", f"`{mode} (…)` is a statement of an engine's request", span,
                  help=f"in a server, the run names the engine: `run {e} {mode} (cost({e}, …)){growing};`")

    # ---------------------------------------------------------------- hold
    def hold(self, s: A.Hold, env: Env, side: str, out: list, ctx: "StmtCtx",
             body_env: Optional[Env] = None):
        header = env.at("header")
        if env.entry is not None:
            header = _replace(header, assigned=env.entry.assigned.get(id(s), frozenset()))
        bnames = set()
        for b in s.admission:
            if b.name in bnames:
                self.diag.add("E210", f"binding `{b.name}` is written twice", b.span)
            bnames.add(b.name)
            if b.name in self.consts or b.name in C.SUPPLIED or b.name in M.BUILTIN_ATTRS or \
                    (self.kind_of(b.name) not in (None, "attribute")):
                self.fail("E210", f"binding `{b.name}` takes a name the program already has", b.span,
                          help="a binding's name is its own")
            e = self.expr(b.expr, header)
            if draws(e):
                self.fail("E505", f"binding `{b.name}` draws: it is substituted, so each use would "
                          "draw again", b.expr.span, help="sample into an attribute first")
            header = header.with_subst({b.name: (b.expr, header)})
        pools = []
        for hp in s.pools:
            ref = self.ref_of(hp.ref, header, "pool")
            queues.check_pool(self, ref, hp.ref.span, env, "hold")
            units = self.expr(hp.units, header)
            reserve = self.expr(hp.reserve, header) if hp.reserve is not None else None
            for x in (units, reserve):
                if x is not None and draws(x):
                    self.fail("E505", "a hold's units and reserve are read at every admission attempt "
                              "and may not draw", self.spans.get(id(x), hp.span),
                              help="sample into an attribute first (`set x = ~…;`) and read it")
            pools.append(M.HoldPool(ref, units, reserve))
        reuse = self.expr(s.reuse, header) if s.reuse is not None else None
        if reuse is not None and draws(reuse):
            self.fail("E505", "a hold's reuse may not draw", s.reuse.span)
        cache_env = _replace(header.at("cache"), assigned=None)
        cache = self.expr(s.cache, cache_env) if s.cache is not None else None
        lease = None
        if s.lease is not None:
            lease = M.Lease(self.ref_of(s.lease.ref, cache_env, "pool"),
                            self.expr(s.lease.time, cache_env.at("lease")))
        # the body: a binding it reads is set at its top
        body_out: list = []
        benv = body_env or env
        read = names_read(s.body)
        prev = env.at("session")
        for b in s.admission:
            val = self.expr(b.expr, prev)
            prev = prev.with_subst({b.name: (b.expr, prev)})
            if read.get(b.name):
                live = [x for x in walk(val) if type(x) in (M.EQuery, M.EPrice, M.ECtx)
                        or (type(x) is M.EAttr and x.slot == M.SLOT["cached"])]
                if live:
                    self.fail("E257", f"the body reads `{b.name}`, a binding of live state: it has "
                              "another value after the admission", b.span,
                              help="the body reads `cached`, the units the admission consumed")
                slot = self.attr_index[env.rename.get(b.name, b.name)]
                self.emit(body_out, M.SSet(slot, val), b.span, side)
        idx = len(self.blocks)
        self.blocks.append(None)
        hctx = ctx.inner(hold=(tuple(pools), cache is not None))
        self.stmts(s.body.stmts, benv, side, body_out, hctx)
        self.blocks[idx] = body_out
        self.emit(out, M.SHold(tuple(pools), idx, reuse, cache, lease), s.span, side)

    # ---------------------------------------------------------------- run
    def run(self, s: A.Run, env: Env, side: str, out: list, ctx):
        S = env.at("session")
        if not s.refs:
            s = A.Run(s.span, [queues.run_own(self, s, env)], s.mode, s.work, s.growing)
        refs = [self.ref_of(r, S, "stage") for r in s.refs]
        work = self.expr(s.work, S)
        growing = self.ref_of(s.growing, S, "pool") if s.growing is not None else None
        if growing is not None:
            queues.check_pool(self, growing, s.growing.span, env, "grow")
        mode = {"prefill": "Prefill", "decode": "Decode", None: "Plain"}[s.mode]
        self.emit(out, M.SRun(refs[0], mode, work, growing, tuple(refs[1:])), s.span, side)

    def tool(self, s: A.Tool, env: Env, side: str, out: list, ctx):
        S = env.at("session")
        work = self.expr(s.work, S)
        if s.where.on:
            refs = [self.ref_of(r, S, "stage") for r in s.where.on]
            targets = tuple(M.Target("stage", r.base) for r in refs)
            w = self.mk(M.ECost(targets, work), s.work.span)
            self.emit(out, M.SRun(refs[0], "Plain", w, None, tuple(refs[1:])), s.span, side)
            return
        fam = self.stage_fams.get("tool")
        if fam is not None and fam.item_no < (self.workload_item_no if side == "client" else 10 ** 9):
            idx = None
            if s.where.index is not None:
                idx = self.expr(s.where.index, S)
            elif fam.count > 1:
                self.fail("E301", f"stage `tool` is an array of {fam.count}: name one member",
                          s.span, help="write `tool[j] …;`")
            ref = self.mk(M.Ref(fam.base, fam.count, idx), s.span)
            w = self.mk(M.ECost((M.Target("stage", fam.base),), work), s.work.span)
            self.emit(out, M.SRun(ref, "Plain", w), s.span, side)
            return
        if fam is not None and side == "client":
            self.fail("E258", "stage `tool` is declared below the workload's `tool`: the call found no "
                      "stage above it and the program would have two", s.span,
                      notes=[f"stage `tool` is declared at {fam.span}"],
                      help="declare `stage tool : …;` above the workload")
        if side == "server":
            self.fail("E259", "`tool` in the server runs on a declared stage `tool`, and none is declared "
                      "above it", s.span, help="declare one (`stage tool : delay;`) or name a stage: "
                                               "`tool on S (…);`")
        if s.where.index is not None:
            self.fail("E259", "`tool[j]` needs a declared stage array `tool`", s.span)
        # the workload's own: a delay stage supplied after the declared stages
        if self.tool_needed is None:
            self.tool_needed = s.span
        placeholder = _ToolRef()
        w = self.mk(M.ECost((placeholder,), work), s.work.span)
        stmt = M.SRun(placeholder, "Plain", w)
        self.emit(out, stmt, s.span, side)

    def resolve_tool_placeholders(self):
        base = self.stage_fams["tool"].base
        for b, block in enumerate(self.blocks):
            new = []
            for stmt, loc, side in block:
                if type(stmt) is M.SRun and isinstance(stmt.stage, _ToolRef):
                    ref = M.Ref(base, 1, None)
                    w = stmt.work
                    w2 = M.ECost((M.Target("stage", base),), w.expr)
                    self.spans[id(w2)] = self.spans.get(id(w))
                    self.keep.append(w2)
                    st2 = M.SRun(ref, "Plain", w2)
                    self.spans[id(st2)] = self.spans.get(id(stmt))
                    self.keep.append(st2)
                    stmt = st2
                new.append((stmt, loc, side))
            self.blocks[b] = new

    def transfer(self, s: A.Transfer, env: Env, side: str, out: list, ctx):
        S = env.at("session")
        if env.entry is not None and not env.entry.queue.gateway and not s.where.on and \
                s.where.index is None:
            queues.relation_transfer(self, s, env, side, out)
            return
        work = self.expr(s.work, S)
        if s.where.on:
            refs = [self.ref_of(r, S, "stage") for r in s.where.on]
            queues.link_waits(self, s.where.on, env, side, out, s.span)
        else:
            cands = [n for n in ("link", "transfer") if n in self.stage_fams]
            if len(cands) != 1:
                self.fail("E259", "`transfer` runs on the stage `link` (or `transfer`): " +
                          ("none is declared" if not cands else "both are declared"), s.span,
                          help="declare one, or name it: `transfer on S (…) from P to Q (n);`")
            fam = self.stage_fams[cands[0]]
            idx = self.expr(s.where.index, S) if s.where.index is not None else None
            refs = [self.mk(M.Ref(fam.base, fam.count, idx), s.span)]
        targets = tuple(M.Target("stage", r.base) for r in refs)
        w = self.mk(M.ECost(targets, work), s.work.span)
        self.emit(out, M.SRun(refs[0], "Plain", w, None, tuple(refs[1:])), s.span, side)
        dst = self.ref_of(s.dst, S, "pool")
        queues.check_pool(self, dst, s.dst.span, env, "load")
        n = self.mk(M.ECost((M.Target("pool", dst.base),), self.expr(s.tokens, S)), s.tokens.span)
        self.emit(out, M.SLoad(dst, n), s.span, side)
        src = self.ref_of(s.src, S, "pool")
        queues.check_pool(self, src, s.src.span, env, "release")
        self.emit(out, M.SRelease(src), s.span, side)

    # ---------------------------------------------------------------- calls
    def call_stmt(self, s: A.CallStmt, env: Env, side: str, out: list, ctx):
        tgt = s.target
        if not isinstance(tgt, A.Call):
            self.fail("E260", "a statement here is a call: `NAME(…);`", s.span,
                      help="an expression alone does nothing; `set x = …;` keeps its value")
        if isinstance(tgt.fn, A.Dot):
            qname = head_name(tgt.fn.obj)
            if qname is not None and self.kind_of(qname) == "queue":
                queues.call_entry(self, s, env, side, out, ctx)
                return
            self.fail("E201", f"`{text_of(tgt.fn)}(…)`: only a queue's entry is called with a dot, "
                      "`Q.VERB (…)`", tgt.fn.span, env=env,
                      help=did_you_mean(qname or "", self.queues) or None)
        if not isinstance(tgt.fn, A.Name):
            self.fail("E260", "a statement here is a call: `NAME(…);`", s.span, env=env)
        name = tgt.fn.name
        if s.src is not None or s.to is not None:
            self.fail("E282", f"`from`/`to` belong to a queue's entry call, `Q[j].VERB (…) from …`, "
                      f"not to `{name}(…)`", s.span, env=env)
        if name in self.defs:
            d = self.defs[name]
            if d.body is None:
                self.fail("E302", f"`{name}` is an expression definition; use it in an expression",
                          s.span)
            if len(tgt.args) != len(d.params):
                self.fail("E221", f"`{name}` takes {len(d.params)} argument(s), not {len(tgt.args)}",
                          s.span)
            if any(w == f"`{name}`" for w, _ in env.expansions):
                self.fail("E222", f"definition `{name}` reaches itself", s.span)
            self.check_def_args(d, tgt.args, env, statement=True)
            sub = {p: (a, env) for p, a in zip(d.params, tgt.args)}
            benv = env.fresh(in_request=env.in_request).with_subst(sub).expanding(f"`{name}`", s.span)
            self.stmts(d.body.stmts, benv, side, out, ctx)
            return
        if name in self.engines:
            self.request_call(self.engines[name], tgt, env, side, out, ctx)
            return
        kind = self.kind_of(name)
        if kind == "queue":
            q = self.queues[name]
            verbs = sorted({e.verb for e in q.entries.values()})
            self.fail("E281", f"queue `{name}` is entered by one of its entries, `{name}"
                      f"{'[j]' if q.array else ''}.{verbs[0] if verbs else 'VERB'} (…);`", tgt.fn.span,
                      env=env, help=("its entries: " + ", ".join(f"`{v}`" for v in verbs)) if verbs else None)
        if name in ("prefill", "decode"):
            self.mode_outside_request(name, s.span)
        self.fail("E201", f"unknown statement `{name}(…)`", tgt.fn.span,
                  help=did_you_mean(name, list(self.defs) + list(self.engines)))

    def request_call(self, eng: EngineInfo, call: A.Call, env: Env, side: str, out: list, ctx):
        req = eng.request
        if req is None:
            self.fail("E261", f"engine `{eng.name}` has no request", call.span,
                      help=f"declare `request (…) {{ … }}` in engine `{eng.name}`, or write the hold "
                           f"and `run {eng.name} prefill/decode` yourself")
        if side != "server":
            self.fail("E262", f"engine `{eng.name}`'s request is called in the server", call.span)
        if any(w == f"engine `{eng.name}`'s request" for w, _ in env.expansions):
            self.fail("E222", f"engine `{eng.name}`'s request reaches itself", call.span, env=env,
                      help="the server calls the request; the request runs the engine "
                           f"(`prefill (…)`, `decode (…)`), not `{eng.name} (…)`")
        if len(call.args) != len(req.params):
            self.fail("E221", f"`{eng.name}` takes {len(req.params)} argument(s), not {len(call.args)}",
                      call.span)
        sub = {}
        for p, a in zip(req.params, call.args):
            v = self.expr(a, env.at("session"))
            if draws(v):
                self.fail("E223", f"an argument of `{eng.name}` may not draw: it is substituted",
                          a.span, help="sample into an attribute first")
            sub[p] = (a, env)
        renv = Env(engine=None, in_request=eng, expansions=env.expansions).with_subst(sub).expanding(
            f"engine `{eng.name}`'s request", call.span)
        stmts = list(req.stmts)
        adm_i = next((i for i, x in enumerate(stmts) if isinstance(x, A.RAdmission)), None)
        cache_i = [i for i, x in enumerate(stmts) if isinstance(x, A.RCache)]
        if len(cache_i) > 1 or (cache_i and cache_i[0] != len(stmts) - 1):
            self.fail("E256", "`cache (…);` is the last item of an engine's request",
                      stmts[cache_i[0]].span)
        cache = stmts[cache_i[0]].expr if cache_i else None
        if cache_i:
            stmts = stmts[:-1]
        if eng.taking is None:
            if adm_i is not None or cache is not None:
                self.fail("E263", "a request without `taking` holds nothing, and has no `at admission` "
                          "and no cache", req.span,
                          help=f"write `admit waiting … taking POOL (…);` in engine `{eng.name}`'s schedule")
            self.stmts(stmts, renv, side, out, ctx)
            return
        before = stmts[:adm_i] if adm_i is not None else []
        after = stmts[adm_i + 1:] if adm_i is not None else stmts
        bindings = stmts[adm_i].bindings if adm_i is not None else []
        if any(isinstance(x, A.RAdmission) for x in after):
            self.fail("E256", "`at admission { … }` stands once in a request", req.span)
        self.stmts(before, renv, side, out, ctx)
        taking = eng.taking
        targets = []
        for tk in taking.takes:
            fam_name = head_name(tk.ref)
            if fam_name not in self.pool_fams:
                self.fail("E201", f"unknown pool `{tk.ref.text()}` in `taking`", tk.ref.span,
                          help=did_you_mean(fam_name or "", self.pool_fams))
            targets.append(fam_name)
        hold_pools = []
        for tk in taking.takes:
            pname = head_name(tk.ref)
            units = A.Call(tk.units.span, A.Name(tk.units.span, "cost"), [A.Name(tk.ref.span, pname), tk.units])
            reserve = None
            if tk.reserve is not None:
                reserve = A.Call(tk.reserve.span, A.Name(tk.reserve.span, "cost"),
                                 [A.Name(tk.ref.span, pname), tk.reserve])
            hold_pools.append(A.HoldPool(tk.span, tk.ref, units, reserve))
        joint = [A.Name(taking.span, n) for n in targets]
        reuse = None
        if taking.reuse is not None:
            reuse = A.Call(taking.reuse.span, A.Name(taking.reuse.span, "cost"), joint + [taking.reuse])
        cache_e = None
        if cache is not None:
            cache_e = A.Call(cache.span, A.Name(cache.span, "cost"), joint + [cache])
        hold = A.Hold(call.span, hold_pools, reuse, bindings, A.Block(call.span, after), cache_e, None)
        self.hold(hold, renv, side, out, ctx)

    # ================================================================ gauges, claims
    def gauge(self, g: A.GaugeDecl):
        if g.name in self.observe_index:
            self.fail("E210", f"`{g.name}` is already an observation; a gauge takes another name",
                      g.name_span)
        e = self.expr(g.expr, Env(clause="gauge"))
        self.gauges.append(M.Gauge(g.name, e, self.loc(g.span)))

    def claim(self, c: A.ClaimDecl):
        given = self.expr(c.given, Env(clause="given")) if c.given is not None else None
        if c.form == "end":
            e = self.expr(c.expr, Env(clause="claim_end"))
            kind = M.CAtEnd()
        else:
            ref = self.ref_of(c.stage, Env(clause="const"), "stage")
            st = self.stages_meta[ref.base]
            if type(st.kind) is not M.KStep:
                self.fail("E302", f"`{st.name}` is not an engine: a claim over iterations names an engine",
                          c.stage.span)
            idx = ref.base if ref.index is None else ref.base + int(const_value(ref.index))
            if ref.index is not None and const_value(ref.index) is None:
                self.fail("E403", "a claim names an engine's member by a constant index", c.stage.span)
            e = self.expr(c.expr, Env(clause="claim_iter"))
            kind = M.CEvery(idx) if c.form == "every" else M.CSome(idx)
        self.claims.append(M.Claim(c.name, kind, e, given, self.loc(c.span)))

    # ================================================================ types and build
    def attr_types(self, p: M.Program) -> tuple:
        from ..ir.validate import Checker
        types: list = ["Value"] * len(p.attrs)
        for name in M.TRACE_ATTRS:
            types[M.SLOT[name]] = "Size"
        for slot, sides in self.attr_side.items():
            if "client" in sides:
                types[slot] = "Size"
        sets: dict[int, list] = {}
        for b in p.blocks:
            for st in b.stmts:
                if type(st) is M.SSet:
                    sets.setdefault(st.slot, []).append(st.expr)
        checker = Checker(p)
        for _ in range(8):
            changed = False
            checker.p = _replace(p, attr_types=tuple(types))
            for slot, exprs in sets.items():
                got = [checker.type_of(e) for e in exprs]
                costs = [g for g in got if isinstance(g, tuple)]
                if costs:
                    t = costs[0]
                    if any(set(c) != set(t) for c in costs):
                        e0 = exprs[got.index(costs[-1])]
                        self.diag.add("E312", f"`{p.attrs[slot]}` is assigned costs of different resources",
                                      self.spans.get(id(e0)))
                    if types[slot] != t:
                        types[slot] = t
                        changed = True
            if not changed:
                break
        for slot, (decl, span) in self.declared_types.items():
            t = types[slot]
            if decl == "Cost" and not isinstance(t, tuple):
                self.diag.add("E312", f"`{p.attrs[slot]}` is declared a Cost but its value is a plain number",
                              span, help="interpret it: `cost(RESOURCE, …)`")
        for slot, sides in self.attr_side.items():
            if "client" in sides and "server" in sides and not isinstance(types[slot], tuple):
                # the validator reports the server's assignment of a Size
                pass
        return tuple(types)

    def build(self) -> M.Program:
        pools = tuple(M.Pool(pm.name, pm.index, pm.cap, pm.block, pm.evict, pm.preempt, pm.queue,
                             pm.spill, pm.admit_via, pm.reserve_held, pm.loc, shared=pm.shared,
                             held=pm.held)
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


class _ToolRef(M.Ref):
    """The workload's supplied `stage tool : delay`, before its index is known."""

    def __init__(self):
        object.__setattr__(self, "base", -1)
        object.__setattr__(self, "count", 1)
        object.__setattr__(self, "index", None)
        object.__setattr__(self, "kind", "stage")


@dataclass
class StmtCtx:
    where: str = "body"
    in_fork: bool = False
    in_loop: bool = False
    holds: tuple = ()

    def inner(self, loop=False, fork=False, hold=None) -> "StmtCtx":
        return StmtCtx(self.where if self.where not in ("init", "turn") else self.where,
                       self.in_fork or fork, self.in_loop or loop,
                       self.holds + ((hold,) if hold is not None else ()))


def _source_text(span: Optional[Span]) -> Optional[str]:
    if span is None or span.line != span.end_line:
        return None
    line = Sources.line(span.file, span.line)
    if line is None:
        return None
    return line[span.col - 1:span.end_col - 1]


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _replace(p, **kw):
    import dataclasses
    return dataclasses.replace(p, **kw)


def _sched_walk(stmts):
    for s in stmts:
        yield s
        if isinstance(s, A.SBranch):
            yield from _sched_walk(s.then)
            yield from _sched_walk(s.other or [])


def _strip(node):
    """An AST without spans, for structural comparison."""
    if isinstance(node, list):
        return [_strip(x) for x in node]
    if isinstance(node, A.Node):
        return (type(node).__name__,) + tuple(
            (k, _strip(v)) for k, v in sorted(vars(node).items()) if k not in ("span", "name_span"))
    return node


def _has_turn(stmts) -> bool:
    for s in stmts:
        if isinstance(s, A.Turn):
            return True
        for attr in ("then", "other", "body"):
            b = getattr(s, attr, None)
            if isinstance(b, A.Block) and _has_turn(b.stmts):
                return True
    return False


def _assigned_names(block) -> set:
    out = set()

    def visit(x):
        if isinstance(x, (A.Set, A.SizeDecl, A.CostDecl, A.Choose)):
            out.add(x.name)
        if isinstance(x, A.Hold):
            for b in x.admission:
                out.add(b.name)
        if isinstance(x, A.Node):
            for k, v in vars(x).items():
                if isinstance(v, (A.Node, list)):
                    visit(v)
        elif isinstance(x, list):
            for y in x:
                visit(y)

    visit(block)
    return out
