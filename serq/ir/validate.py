"""The IR validator: an IR file checked on its own.

``validate(program)`` raises :class:`SerqError` listing every problem.  The
linker runs the same checks on the IR it produces, with a ``span_of`` that
maps an offending expression node back to its source span, so a text
program and an IR file meet one set of rules.

Checked here:

* structure: versions, indices, arities, the block arena is a tree, the
  statement tables are aligned, ``init``/``turn`` only set and observe;
* moments: every expression reads only what its moment supplies
  (``serq.ir.moments``), hidden attributes only where allowed, draws only
  where allowed, registers only where their engine allows;
* ownership: ``grow``/``load``/``release``/``growing`` inside a hold of the
  same reference, and ``grow``/``load``/``growing`` not after a ``release``
  of it that is sure to have run; a hold names each pool once and leases
  one of its own;
* legs: a fork body has no turn/end/fork/join; fork and join come together;
* progress: every path through a loop lets time pass;
* amounts: constant amounts are not negative or NaN; constant guards 0/1;
  constant indices in range;
* arrivals and run settings;
* stages and flows: run modes match stage kinds; multi-stage runs hold ps
  stages of constant capacity; ``share`` present exactly when needed;
* cost types: every resource primitive's amount is a cost of its resource.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Optional

from ..diag import Collector, Diagnostic, SerqError, Span, number_text as _fmt
from ..records import dataclass
from . import model as M
from .expr import children, const_value, dist_problem, is_constant, strip_cost, truth, walk
from .moments import CTX_SPELLING, MOMENTS, QUERY_SPELLING, Moment


@dataclass
class Where:
    """Where a problem is: an expression node, a statement, a declaration."""

    node: object = None
    loc: Optional[M.Loc] = None


class Checker:
    def __init__(self, p: M.Program, span_of: Optional[Callable[[object], Optional[Span]]] = None):
        self.p = p
        self.span_of = span_of
        self.out = Collector()
        self.cur_loc: Optional[M.Loc] = None
        self.cur_stmt: object = None
        self.first_fork: Optional[tuple] = None
        self.block_parent: dict[int, int] = {}
        self.cur_path = "$"     # the IR field being checked: where a problem without a span is
        # the pools a `release` above, in the blocks being walked, gave back from
        # the one hold on them: (reference, where the release is)
        self.released: tuple = ()

    # -- reporting ---------------------------------------------------------
    def problem(self, code: str, message: str, node: object = None, help: Optional[str] = None,
                loc: Optional[M.Loc] = None, field: Optional[str] = None, notes=()) -> None:
        """A problem at the source span of ``node`` (or of the statement or
        declaration being checked); where there is none, at the IR ``field``
        (or the path of what is being checked)."""
        span = None
        if node is not None and self.span_of is not None:
            span = self.span_of(node)
        if span is None and loc is None and self.cur_stmt is not None and self.span_of is not None:
            span = self.span_of(self.cur_stmt)
        if span is None and field is None:
            loc = loc or self.cur_loc
            if loc is not None and 0 <= loc.file < len(self.p.files) and loc.line >= 1 and loc.col >= 1:
                span = Span.point(self.p.files[loc.file], loc.line, loc.col)
        self.out.add(code, message, span, help, notes, field=None if span is not None else field or self.cur_path)

    # -- entry -------------------------------------------------------------
    def run(self) -> None:
        p = self.p
        if p.version != M.IR_VERSION:
            self.problem("E902", f"IR version {p.version} (this serq reads {M.IR_VERSION})", field="$.version")
            self.out.check()
        # the types and shape first (serq/ir/shape.py): the checks below read
        # every node as its kind
        from .shape import problems
        for path, message in problems(p):
            self.problem("E910", f"the field {message}", field=path)
        if self.out:
            self.out.check()
        self.check_tables()
        if self.out:
            self.out.check()
        self.check_declarations()
        self.check_blocks()
        self.check_run_settings()
        self.out.check()

    # -- structure ---------------------------------------------------------
    def check_tables(self) -> None:
        p = self.p
        if tuple(p.attrs[:len(M.BUILTIN_ATTRS)]) != M.BUILTIN_ATTRS:
            self.problem("E910", "the first attributes must be the built-in ones "
                         + ", ".join(M.BUILTIN_ATTRS), field="$.attrs")
        if len(set(p.attrs)) != len(p.attrs):
            self.problem("E910", "attribute names must be distinct", field="$.attrs")
        if len(p.attr_types) != len(p.attrs):
            self.problem("E910", f"attr_types must have one entry per attribute ({len(p.attr_types)} for "
                         f"{len(p.attrs)})", field="$.attr_types")
        for i, t in enumerate(p.attr_types):
            if isinstance(t, str):
                if t not in M.ATTR_TYPES:
                    self.problem("E910", f"attribute {p.attrs[i] if i < len(p.attrs) else i}: "
                                 f"unknown type {t!r}", field=f"$.attr_types[{i}]")
            else:
                for j, tg in enumerate(t):
                    self.check_target(tg, f"$.attr_types[{i}][{j}]")
        if len(set(p.observes)) != len(p.observes):
            self.problem("E910", "observation names must be distinct", field="$.observes")
        for i, f in enumerate(p.files):
            if not f:
                self.problem("E910", "a source file's name is not empty", field=f"$.files[{i}]")
        for b, block in enumerate(p.blocks):
            if not (len(block.stmts) == len(block.locs) == len(block.sides)):
                self.problem("E910", f"block {b}: stmts, locs and sides must have one entry each "
                             f"({len(block.stmts)}, {len(block.locs)}, {len(block.sides)})",
                             field=f"$.blocks[{b}]")
            for i, side in enumerate(block.sides):
                if side not in M.SIDES:
                    self.problem("E910", f"block {b}: unknown side {side!r} (one of client, server)",
                                 field=f"$.blocks[{b}].sides[{i}]")
            for i, loc in enumerate(block.locs):
                self.check_loc(loc, f"$.blocks[{b}].locs[{i}]")
        for kind, decls in (("pools", p.pools), ("stages", p.stages), ("gauges", p.gauges),
                            ("claims", p.claims)):
            for i, d in enumerate(decls):
                self.check_loc(d.loc, f"$.{kind}[{i}].loc")
        nb = len(p.blocks)
        for name, b in (("session", p.session), ("init", p.init), ("turn", p.turn)):
            if b is not None and not (0 <= b < nb):
                self.problem("E910", f"{name} block {b} out of range (the program has {nb} blocks)",
                             field=f"$.{name}")
        for i, h in enumerate(p.hidden):
            if not (0 <= h < len(p.attrs)):
                self.problem("E910", f"hidden slot {h} out of range", field=f"$.hidden[{i}]")
            elif p.attrs[h] in ("cached", "computed"):
                self.problem("E910", f"`{p.attrs[h]}` is set by the scheduler and cannot be hidden",
                             field=f"$.hidden[{i}]")
        # families: consecutive declarations with the same name and indices 0..n-1
        for kind, decls in (("pool", p.pools), ("stage", p.stages)):
            i = 0
            names = set()
            while i < len(decls):
                d = decls[i]
                if d.name in names:
                    self.problem("E910", f"{kind} `{d.name}` declared twice", field=f"$.{kind}s[{i}].name")
                names.add(d.name)
                if d.index is None:
                    i += 1
                    continue
                j = i
                while j < len(decls) and decls[j].name == d.name:
                    if decls[j].index != j - i:
                        self.problem("E910", f"{kind} family `{d.name}`: members out of order",
                                     field=f"$.{kind}s[{j}].index")
                    j += 1
                i = j
        for r, reg in enumerate(p.registers):
            if not (0 <= reg.stage < len(p.stages)) or type(p.stages[reg.stage].kind) is not M.KStep:
                self.problem("E910", f"register `{reg.name}`: stage {reg.stage} is not a step stage",
                             field=f"$.registers[{r}].stage")
            elif p.stages[reg.stage].kind.iteration is None:
                self.problem("E910", f"register `{reg.name}`: its stage has no iteration body",
                             field=f"$.registers[{r}].stage")
            if not math.isfinite(reg.init):
                self.problem("E910", f"register `{reg.name}`: initial value must be finite",
                             field=f"$.registers[{r}].init")
        # the block arena is a tree rooted at init, turn and session
        refs: dict[int, int] = {}
        for b, block in enumerate(p.blocks):
            for i, s in enumerate(block.stmts):
                for child in M.child_blocks(s):
                    if not (0 <= child < nb):
                        self.problem("E910", f"block {b}: refers to block {child}, out of range",
                                     field=f"$.blocks[{b}].stmts[{i}]")
                        continue
                    refs[child] = refs.get(child, 0) + 1
                    self.block_parent[child] = b
        roots = [x for x in (p.session, p.init, p.turn) if x is not None]
        for r in roots:
            if r in refs:
                self.problem("E910", f"root block {r} is also a statement's body", field=f"$.blocks[{r}]")
        for child, n in refs.items():
            if n > 1:
                self.problem("E910", f"block {child} is the body of {n} statements", field=f"$.blocks[{child}]")
        if len(set(roots)) != len(roots):
            self.problem("E910", "init, turn and session must be distinct blocks", field="$.session")
        # reachability / cycles
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            b = stack.pop()
            if b in seen or not (0 <= b < nb):
                continue
            seen.add(b)
            for s in p.blocks[b].stmts:
                stack.extend(M.child_blocks(s))
        for b in range(nb):
            if b not in seen:
                self.problem("E910", f"block {b} is not reachable from init, turn or session",
                             field=f"$.blocks[{b}]")

    def check_loc(self, loc: Optional[M.Loc], field: str) -> None:
        if loc is None:
            return
        if not (0 <= loc.file < len(self.p.files)):
            self.problem("E910", f"location file {loc.file} out of range (the program has "
                         f"{len(self.p.files)} files)", field=field)
        elif loc.line < 1 or loc.col < 1:
            self.problem("E910", f"a location's line and column count from 1, not {loc.line}:{loc.col}",
                         field=field)

    def check_target(self, tg: M.Target, field: Optional[str] = None) -> None:
        decls = self.p.pools if tg.kind == "pool" else self.p.stages if tg.kind == "stage" else None
        if decls is None:
            self.problem("E910", f"cost target kind {tg.kind!r} is neither pool nor stage", field=field)
        elif not (0 <= tg.base < len(decls)):
            self.problem("E910", f"cost target {tg.kind} {tg.base} out of range", field=field)
        elif decls[tg.base].index not in (None, 0):
            self.problem("E910", f"cost target {tg.kind} {tg.base} is not the first member of its family",
                         field=field)

    def check_ref(self, ref: M.Ref, kind: str, moment: Moment, node: object) -> bool:
        decls = self.p.pools if kind == "pool" else self.p.stages
        if not (0 <= ref.base < len(decls)) or ref.count < 1 or ref.base + ref.count > len(decls):
            self.problem("E910", f"{kind} reference {ref.base}+{ref.count} out of range", node)
            return False
        first = decls[ref.base]
        end = ref.base + ref.count
        if any(decls[ref.base + k].name != first.name for k in range(ref.count)) or \
                first.index not in (None, 0) or (end < len(decls) and decls[end].name == first.name) or \
                (ref.count > 1 and first.index is None):
            self.problem("E910", f"{kind} reference {ref.base}+{ref.count} is not one whole family", node)
            return False
        if ref.count > 1 and ref.index is None:
            self.problem("E301", f"{kind} family `{first.name}` needs an index", node,
                         help=f"name one member, `{first.name}[j]`")
            return False
        if ref.index is not None:
            self.check_expr(ref.index, moment, node)
            v = _const(ref.index)
            if v is not None:
                if not (0 <= v < ref.count and v == math.floor(v)):
                    self.problem("E402", f"index {_fmt(v)} out of range for `{first.name}`, "
                                 f"which has {ref.count} member{'s' if ref.count != 1 else ''}",
                                 ref.index, help=f"an index is a whole number from 0 to {ref.count - 1}")
            elif moment.index_num:
                self.problem("E503", f"the index of `{first.name}` must be a number in "
                             f"{moment.description}", ref.index,
                             help="write the member's number, or an aggregate over the family")
        return True

    # -- expressions ---------------------------------------------------------
    def check_expr(self, e: M.Expr, moment: Moment, owner: object = None, stage: Optional[int] = None,
                   regs_ok: frozenset = frozenset(), budget_self: Optional[int] = None) -> None:
        """Check ``e`` at ``moment``.  ``stage`` is the step stage the moment
        belongs to (for registers); ``budget_self`` a stage whose budget_left
        may not be read here.  A draw in the side of a conditional that a
        constant condition never takes is never drawn: its parameters are not
        held to its distribution's domain (``mg1.sq``'s ``cv2 == 0 ? ~det(S) :
        ~h2(S, cv2)`` at cv2 0)."""
        p = self.p
        stack = [(e, False)]
        while stack:
            x, dead = stack.pop()
            t = type(x)
            if t is M.ENum:
                if isinstance(x.value, float) and math.isnan(x.value):
                    self.problem("E401", "a constant is NaN", x)
                if x.input is not None and not x.input.isidentifier():
                    self.problem("E910", f"a number's input name {x.input!r} is not a name", x)
            elif t is M.EAttr:
                if not (0 <= x.slot < len(p.attrs)):
                    self.problem("E910", f"attribute slot {x.slot} out of range", x)
                elif not moment.attrs:
                    self.problem("E502", f"`{p.attrs[x.slot]}`: a session attribute cannot be read in "
                                 f"{moment.description}, which has no session", x)
                elif x.slot in p.hidden and not moment.hidden:
                    self.problem("E504", f"`{p.attrs[x.slot]}` is hidden: the scheduler may not read "
                                 f"it in {moment.description}", x,
                                 help="hidden attributes are read by session statements, run work, "
                                      "a hold's cache and a claim's given")
            elif t is M.ECtx:
                if x.var not in CTX_SPELLING:
                    self.problem("E910", f"unknown context variable {x.var!r}", x)
                elif x.var not in moment.ctx:
                    self.problem("E501", f"`{CTX_SPELLING[x.var]}` is not available in "
                                 f"{moment.description}", x)
            elif t is M.ESample:
                if x.dist not in M.DISTS:
                    self.problem("E910", f"unknown distribution {x.dist!r}", x)
                elif len(x.args) != M.DISTS[x.dist]:
                    self.problem("E910", f"~{x.dist.lower()} takes {M.DISTS[x.dist]} arguments", x)
                elif not dead:
                    self.const_draw(x)
                if not moment.draws:
                    self.problem("E505", f"a draw is not allowed in {moment.description}", x,
                                 help="sample into an attribute first (`set x = ~…;`) and read that")
            elif t is M.EReg:
                if not (0 <= x.index < len(p.registers)):
                    self.problem("E910", f"register {x.index} out of range", x)
                elif x.index not in regs_ok:
                    self.problem("E506", f"register `{p.registers[x.index].name}` cannot be read in "
                                 f"{moment.description}", x)
            elif t is M.EFn:
                if x.fn not in M.FNS:
                    self.problem("E910", f"unknown function {x.fn!r}", x)
                elif len(x.args) != M.FNS[x.fn]:
                    self.problem("E910", f"{x.fn.lower()} takes {M.FNS[x.fn]} arguments", x)
            elif t is M.EQuery or t is M.EPrice:
                q = "Price" if t is M.EPrice else x.query
                kind = "stage" if q in M.STAGE_QUERIES or q == "Price" else "pool"
                if t is M.EQuery and q not in M.POOL_QUERIES and q not in M.STAGE_QUERIES:
                    self.problem("E910", f"unknown query {q!r}", x)
                    continue
                if q not in moment.queries:
                    self.problem("E507", f"`{QUERY_SPELLING[q]}(…)` cannot be read in "
                                 f"{moment.description}", x)
                if self.check_ref(x.ref, kind, moment, x):
                    if q == "BudgetLeft":
                        for k in range(x.ref.count):
                            if type(p.stages[x.ref.base + k].kind) is not M.KStep:
                                self.problem("E302", "budget_left reads an engine (a step stage)", x)
                                break
                        if budget_self is not None and x.ref.base <= budget_self < x.ref.base + x.ref.count:
                            self.problem("E508", "budget_left of an engine cannot be read by that "
                                         "engine's own tokens cap, each at most or schedule", x)
                if t is M.EPrice:
                    stack.append((x.s_hit, dead))
                    stack.append((x.ds, dead))
                continue  # the index was checked by check_ref
            elif t is M.EUnary:
                if x.op not in M.UNOPS:
                    self.problem("E910", f"unknown operator {x.op!r}", x)
            elif t is M.EBinary:
                if x.op not in M.BINOPS:
                    self.problem("E910", f"unknown operator {x.op!r}", x)
            elif t is M.ERunSum:
                if not (0 <= x.stage < len(p.stages)) or type(p.stages[x.stage].kind) is not M.KStep:
                    self.problem("E910", f"a running sum names stage {x.stage}, which is no engine", x)
                elif "Nres" not in moment.ctx:
                    self.problem("E501", f"`sum … in running (…)` is not available in {moment.description}",
                                 x, help="an engine's running requests are read in its tokens cap, "
                                         "schedule, execute and keys")
                else:
                    self.check_expr(x.expr, MOMENTS["Running"], stage=x.stage, regs_ok=regs_ok)
            elif t is M.EAgg:
                if x.agg not in M.AGGS:
                    self.problem("E910", f"unknown aggregate {x.agg!r}", x)
                if not (0 <= x.observe < len(p.observes)):
                    self.problem("E910", f"observation {x.observe} out of range", x)
                elif not moment.aggs:
                    self.problem("E509", f"`{x.agg.lower()}({p.observes[x.observe]})` is read only by "
                                 "a claim at end", x)
            elif t is M.ECost:
                for tg in x.targets:
                    self.check_target(tg)
            if t is M.ECond and (c := const_value(x.cond)) is not None:
                taken = x.then if truth(c) else x.other
                stack.extend((y, dead or y is not taken and y is not x.cond) for y in children(x))
            else:
                stack.extend((y, dead) for y in children(x))

    # -- cost types ----------------------------------------------------------
    def type_of(self, e: M.Expr):
        """"Value", "Size" or a tuple of Targets (a cost)."""
        t = type(e)
        if t is M.ECost:
            return tuple(e.targets)
        if t is M.EAttr:
            if 0 <= e.slot < len(self.p.attr_types):
                return self.p.attr_types[e.slot]
            return "Value"
        if t is M.ENum:
            return "Value"
        if t is M.ECond:
            a, b = self.type_of(e.then), self.type_of(e.other)
            return _join_cost(a, b, e.then, e.other)
        if t is M.EFn and len(e.args) != M.FNS.get(e.fn):
            return "Value"   # (refused by check_expr)
        if t is M.EFn and e.fn in ("Min", "Max"):
            a, b = self.type_of(e.args[0]), self.type_of(e.args[1])
            return _join_cost(a, b, e.args[0], e.args[1])
        if t is M.EFn and e.fn in ("Floor", "Ceil", "Abs"):
            a = self.type_of(e.args[0])
            return a if isinstance(a, tuple) else "Value"
        if t is M.EBinary and e.op in ("Add", "Sub"):
            a, b = self.type_of(e.lhs), self.type_of(e.rhs)
            return _join_cost(a, b, e.lhs, e.rhs)
        if t is M.EBinary and e.op in ("Mul", "Div"):
            a, b = self.type_of(e.lhs), self.type_of(e.rhs)
            if isinstance(a, tuple) and not isinstance(b, tuple) and is_constant(e.rhs):
                return a
            if e.op == "Mul" and isinstance(b, tuple) and not isinstance(a, tuple) and is_constant(e.lhs):
                return b
            return "Value"
        return "Value"

    def want_cost(self, e: M.Expr, targets: tuple[M.Target, ...], what: str) -> None:
        got = self.type_of(e)
        want = tuple(sorted(targets, key=lambda tg: (tg.kind, tg.base)))
        if isinstance(got, tuple) and tuple(sorted(got, key=lambda tg: (tg.kind, tg.base))) == want:
            return
        names = ", ".join(self.target_name(tg) for tg in targets)
        if isinstance(got, tuple):
            gnames = ", ".join(self.target_name(tg) for tg in got)
            msg = f"{what} is a cost of {gnames}, not of {names}"
        else:
            msg = f"{what} must be a cost of {names}, not a plain number"
        self.problem("E310", msg, e, help=f"interpret the amount explicitly: `cost({names}, …)`")

    def target_name(self, tg: M.Target) -> str:
        decls = self.p.pools if tg.kind == "pool" else self.p.stages
        if 0 <= tg.base < len(decls):
            return decls[tg.base].name
        return "?"

    def ref_target(self, ref: M.Ref, kind: str) -> M.Target:
        return M.Target(kind, ref.base)

    # -- declarations --------------------------------------------------------
    def regs_of(self, stage: int) -> frozenset:
        return frozenset(r for r, reg in enumerate(self.p.registers) if reg.stage == stage)

    def check_declarations(self) -> None:
        p = self.p
        for i, pool in enumerate(p.pools):
            self.cur_loc = pool.loc
            self.cur_path = f"$.pools[{i}]"
            label = p.pool_label(i)
            if math.isnan(pool.cap) or pool.cap < 0:
                self.problem("E403", f"pool `{label}`: cap must be a number ≥ 0")
            if pool.block is not None and not (pool.block > 0 and math.isfinite(pool.block)):
                self.problem("E403", f"pool `{label}`: block must be positive and finite")
            if pool.shared:
                self.check_shared(pool, label)
            elif pool.free_fifo:
                self.problem("E910", f"pool `{label}`: free_fifo is the free order of a content-addressed "
                             "pool (`cache shared fifo;`), and the pool is not one")
            if pool.tree and (not pool.shared or pool.free_fifo):
                self.problem("E910", f"pool `{label}`: tree is the shape of a content-addressed pool's cache "
                             "(`cache shared tree;`), " + ("and the pool is not one" if not pool.shared else
                                                            "which has no free queue (free_fifo)"))
            if pool.spill is not None and 0 <= pool.spill.to.base < len(p.pools) and \
                    p.pools[pool.spill.to.base].shared:
                self.problem("E291", f"pool `{label}` spills into a content-addressed pool: a spilled prefix "
                             "is a session's entry, which a content-addressed pool does not keep")
            regs = frozenset()
            if pool.admit_via is not None:
                if not (0 <= pool.admit_via < len(p.stages)) or \
                        type(p.stages[pool.admit_via].kind) is not M.KStep:
                    self.problem("E910", f"pool `{label}`: admit_via must name a step stage")
                else:
                    regs = self.regs_of(pool.admit_via)
            if type(pool.evict) is M.EvictBy:
                for k in pool.evict.keys:
                    self.check_expr(k, MOMENTS["Evict"])
            if type(pool.preempt) is M.PreemptBy:
                for k in pool.preempt.keys:
                    self.check_expr(k, MOMENTS["Victim"])
                    if any(type(x) is M.EAttr and x.slot == M.SLOT["computed"] for x in walk(k)):
                        self.problem("E510", f"pool `{label}`: a preemption key cannot read `computed`, "
                                     "the position at the last preemption", k,
                                     help="read `position`, where the candidate is now")
                if pool.preempt.free is not None:
                    mem = [j for j, st in enumerate(p.stages) if type(st.kind) is M.KStep and st.kind.memory == i]
                    self.check_expr(pool.preempt.free, MOMENTS["ThenFree"],
                                    regs_ok=self.regs_of(mem[0]) if mem else frozenset())
            if pool.held is not None:
                if not pool.reserve_held:
                    self.problem("E910", f"pool `{label}`: a held expression on a pool without reserve held")
                # the registers of the engine that admits the pool or computes in it
                mem = [j for j, st in enumerate(p.stages) if type(st.kind) is M.KStep and st.kind.memory == i]
                held_regs = regs if pool.admit_via is not None else (self.regs_of(mem[0]) if mem else frozenset())
                self.check_expr(pool.held, MOMENTS["Held"], regs_ok=held_regs)
            if pool.cache_at is not None:
                mem = [j for j, st in enumerate(p.stages) if type(st.kind) is M.KStep and st.kind.memory == i]
                self.check_expr(pool.cache_at, MOMENTS["CacheAt"],
                                regs_ok=self.regs_of(mem[0]) if mem else frozenset())
            if pool.queue is not None:
                if not pool.queue:
                    self.problem("E910", f"pool `{label}`: queue keys must not be empty")
                for k in pool.queue:
                    self.check_expr(k, MOMENTS["Select"], regs_ok=regs)
            if pool.ordered and pool.queue is None:
                self.problem("E910", f"pool `{label}`: an ordered queue has keys (ordered)")
            if (pool.tail_when is None) != (pool.tail_shared is None) or \
                    (pool.tail_when is not None and not pool.ordered):
                self.problem("E910", f"pool `{label}`: tail_when and tail_shared go together, "
                                     "on an ordered queue")
            for x in (pool.tail_when, pool.tail_shared):
                if x is not None:
                    self.check_expr(x, MOMENTS["Select"], regs_ok=regs)
            if pool.spill is not None:
                self.check_ref(pool.spill.to, "pool", MOMENTS["Evict"], None)
                self.check_ref(pool.spill.via, "stage", MOMENTS["Evict"], None)
                self.check_expr(pool.spill.work, MOMENTS["Evict"])
                self.check_expr(pool.spill.when, MOMENTS["Evict"])
        memories: dict[int, int] = {}
        for i, st in enumerate(p.stages):
            self.cur_loc = st.loc
            self.cur_path = f"$.stages[{i}]"
            label = p.stage_label(i)
            k = st.kind
            if type(k) is M.KFifo:
                if k.servers < 1:
                    self.problem("E403", f"stage `{label}`: a fifo has at least one server")
            elif type(k) is M.KPs:
                self.check_expr(k.capacity, MOMENTS["Ps"])
                cap = _const(k.capacity)
                if cap is not None and cap < 0:
                    self.problem("E403", f"stage `{label}`: a ps capacity is a number ≥ 0, not {_fmt(cap)}")
            elif type(k) is M.KStep:
                regs = self.regs_of(i)
                self.check_expr(k.budget, MOMENTS["Budget"], stage=i, regs_ok=regs, budget_self=i)
                budget = _const(k.budget)
                if budget is not None and budget < 0:
                    self.problem("E403", f"engine `{label}`: a tokens cap is a number ≥ 0, not {_fmt(budget)}")
                self.check_expr(k.chunk, MOMENTS["Budget"], stage=i, regs_ok=regs, budget_self=i)
                self.check_expr(k.cost, MOMENTS["Step"], stage=i, regs_ok=regs)
                if type(k.serve) is M.ServeBy:
                    for key in k.serve.keys:
                        self.check_expr(key, MOMENTS["Serve"], stage=i, regs_ok=regs)
                if k.granule is not None and not (k.granule > 0):
                    self.problem("E403", f"engine `{label}`: granule must be positive")
                if k.memory is not None:
                    if not (0 <= k.memory < len(p.pools)):
                        self.problem("E910", f"engine `{label}`: memory pool out of range")
                    elif k.memory in memories:
                        self.problem("E910", f"pool `{p.pool_label(k.memory)}` is the memory of two stages")
                    else:
                        memories[k.memory] = i
                if k.iteration is not None:
                    if type(k.serve) is M.ServeExclusivePrefill:
                        self.problem("E910", f"engine `{label}`: exclusive prefill has no iteration body")
                    self.check_iter(k.iteration, i, regs)
                    if not _iter_reaches(k.iteration):
                        self.problem("E711", f"engine `{label}`: a path through the schedule neither "
                                     "advances nor admits")
        for i, g in enumerate(p.gauges):
            self.cur_loc = g.loc
            self.cur_path = f"$.gauges[{i}]"
            self.check_expr(g.expr, MOMENTS["Gauge"], regs_ok=frozenset(range(len(p.registers))))
        names = set()
        for i, c in enumerate(p.claims):
            self.cur_loc = c.loc
            self.cur_path = f"$.claims[{i}]"
            if c.name in names:
                self.problem("E910", f"claim `{c.name}` declared twice")
            names.add(c.name)
            if c.given is not None:
                self.check_expr(c.given, MOMENTS["Given"])
            if type(c.kind) in (M.CEvery, M.CSome):
                if not (0 <= c.kind.stage < len(p.stages)) or type(p.stages[c.kind.stage].kind) is not M.KStep:
                    self.problem("E302", f"claim `{c.name}`: iterations are an engine's (a step stage)")
                else:
                    self.check_expr(c.expr, MOMENTS["Iteration"], regs_ok=self.regs_of(c.kind.stage))
            else:
                self.check_expr(c.expr, MOMENTS["End"], regs_ok=frozenset(range(len(p.registers))))
        self.cur_loc = None
        # arrivals
        a = p.arrival
        self.cur_path = "$.arrival"
        if type(a) is M.APoisson:
            if not (a.rate > 0 and math.isfinite(a.rate)):
                self.problem("E404", f"poisson rate {_fmt(a.rate)} must be positive and finite")
        elif type(a) is M.ARenewal:
            self.check_expr(a.gap, MOMENTS["Arrival"])
            v = _const(a.gap)
            if v is not None and not (v > 0 and math.isfinite(v)):
                self.problem("E404", f"a constant renewal gap must be positive and finite, not {_fmt(v)}",
                             a.gap)
        elif type(a) in (M.AClosed, M.ABatch):
            if not (1 <= a.n <= M.MAX_SESSIONS):
                self.problem("E404", f"a population is a whole number from 1 to {M.MAX_SESSIONS:,}")
        elif type(a) is M.ASessions:
            for s in a.sessions:
                for slot, _v in s.attrs:
                    if not (0 <= slot < len(p.attrs)):
                        self.problem("E910", f"session attribute slot {slot} out of range")
                for turn in s.turns or ():
                    for slot, _v in turn:
                        if not (0 <= slot < len(p.attrs)):
                            self.problem("E910", f"session turn attribute slot {slot} out of range")
                if not (s.at >= 0 and math.isfinite(s.at)):
                    self.problem("E404", f"a session's arrival time is {_fmt(s.at)}: finite and ≥ 0")
                for cid, n in s.content:
                    if not (0 <= cid < M.CONTENT_IDS and 0 <= n < 2 ** 53):
                        self.problem("E292", f"a session's content segment [{_fmt(cid)}, {_fmt(n)}]: "
                                     "an id is a whole number from 0 to 2^64 - 1, a length from 0 to 2^53")
        elif type(a) is M.ATrace:
            if not (a.scale > 0 and math.isfinite(a.scale)):
                self.problem("E293", f"`arrive trace`: the scale {_fmt(a.scale)} must be positive and finite")
            if p.trace is None or not p.trace.endswith(".jsonl") or not p.trace_ordered:
                self.problem("E293", "`arrive trace` reads the rows of an ordered Mooncake trace "
                             "(`trace \"FILE.jsonl\" ordered;`)")
        if p.share not in (None, "MaxMin", "Bottleneck"):
            self.problem("E910", f"unknown share {p.share!r}", field="$.share")

    def check_shared(self, pool: M.Pool, label: str) -> None:
        """A content-addressed pool (`cache shared;`) names whole blocks of
        tokens and evicts in its free queue's order (serq/sim/pools/prefix.py)."""
        if pool.block is None or not math.isfinite(pool.block) or pool.block != math.floor(pool.block):
            self.problem("E290", f"pool `{label}` is content-addressed (`cache shared;`): it needs a "
                         "block of a whole number of tokens", help="say `block bs;` with bs whole")
        elif pool.block >= 2.0 ** 53:
            self.problem("E290", f"pool `{label}` is content-addressed (`cache shared;`): its block of "
                         f"{pool.block:g} tokens is beyond the 2^53 tokens a block's name counts",
                         help="a block size is a few to a few thousand tokens")
        if type(pool.evict) is not M.EvictLru or pool.spill is not None:
            self.problem("E291", f"pool `{label}` is content-addressed (`cache shared;`): it evicts the "
                         "least recently freed block first (`evict lru;`) and does not spill")

    def check_content(self, e: M.Expr, what: str) -> None:
        v = _const(e)
        if v is not None and not (v >= 0 and math.isfinite(v) and v == math.floor(v)):
            self.problem("E292", f"`content`: {what} is {_fmt(v)}: a whole number ≥ 0", e)

    def check_iter(self, body: tuple, stage: int, regs: frozenset) -> None:
        for it in body:
            t = type(it)
            if t is M.IServe:
                if it.only is not None:
                    self.check_expr(it.only, MOMENTS["Only"], stage=stage, regs_ok=regs)
                for k in it.by or ():
                    self.check_expr(k, MOMENTS["Serve"], stage=stage, regs_ok=regs)
            elif t is M.IAdmit:
                if it.only is not None:
                    self.check_expr(it.only, MOMENTS["Only"], stage=stage, regs_ok=regs)
                if it.gate is not None:
                    self.check_expr(it.gate, MOMENTS["Plan"], stage=stage, regs_ok=regs, budget_self=stage)
                    self.const_guard(it.gate, _SCHEDULE_GUARD)
            elif t is M.IBranch:
                self.check_expr(it.guard, MOMENTS["Plan"], stage=stage, regs_ok=regs, budget_self=stage)
                self.const_guard(it.guard, _SCHEDULE_GUARD)
                self.check_iter(it.then, stage, regs)
                self.check_iter(it.other, stage, regs)
            elif t is M.ISet:
                if it.register not in regs:
                    self.problem("E506", "an engine's schedule sets only its own registers")
                self.check_expr(it.expr, MOMENTS["Plan"], stage=stage, regs_ok=regs, budget_self=stage)

    # -- statements ----------------------------------------------------------
    def check_blocks(self) -> None:
        p = self.p
        for name, b in (("init", p.init), ("turn", p.turn)):
            if b is None:
                continue
            for i, (s, loc) in enumerate(zip(p.blocks[b].stmts, p.blocks[b].locs)):
                if type(s) not in (M.SSet, M.SObserve):
                    self.cur_loc = loc
                    self.problem("E712", f"the workload's {name} block may only set and observe",
                                 field=f"$.blocks[{b}].stmts[{i}]")
        self.has_fork = False
        self.has_join = False
        for root in (p.init, p.turn, p.session):
            if root is not None:
                self.walk_block(root, holds=(), in_fork=False, in_loop=False)
        if self.has_fork != self.has_join:
            node, loc, path = self.first_fork or (None, None, "$.blocks")
            self.cur_loc, self.cur_stmt, self.cur_path = loc, node, path
            self.problem("E713", "a program that forks joins somewhere, and a join needs a fork",
                         node, help="`join;` waits until every leg forked so far has ended")
            self.cur_stmt = None
        flow = self.first_flow()
        if flow is not None and p.share is None:
            (self.cur_stmt, self.cur_loc, self.cur_path) = flow
            self.problem("E714", "a run over several stages needs the program's share",
                         help="write `share maxmin;` or `share bottleneck;`")
            self.cur_stmt = None
        if flow is None and p.share is not None:
            self.cur_loc = None
            self.problem("E714", "`share` is only for runs over several stages", field="$.share")

    def first_flow(self):
        """The first run over several stages, as (statement, location, path)."""
        for b, block in enumerate(self.p.blocks):
            for i, (s, loc) in enumerate(zip(block.stmts, block.locs)):
                if type(s) is M.SRun and s.also:
                    return s, loc, f"$.blocks[{b}].stmts[{i}]"
        return None

    def leased_refs(self) -> list[M.Ref]:
        return [s.lease.pool for b in self.p.blocks for s in b.stmts
                if type(s) is M.SHold and s.lease is not None]

    def walk_block(self, b: int, holds: tuple, in_fork: bool, in_loop: bool) -> None:
        p = self.p
        block = p.blocks[b]
        released = self.released
        for i, (s, loc, side) in enumerate(zip(block.stmts, block.locs, block.sides)):
            self.cur_loc = loc
            self.cur_stmt = s
            self.cur_path = f"$.blocks[{b}].stmts[{i}]"
            self.check_stmt(s, holds, in_fork, in_loop, side)
            if type(s) is M.SRelease and sum(h == s.pool for h in holds) == 1:
                self.released += ((s.pool, self.here()),)
            self.cur_stmt = None
        self.released = released      # what a block released, the blocks around it still hold

    def here(self) -> str:
        """Where the statement being checked is, as a note names it."""
        span = self.span_of(self.cur_stmt) if self.span_of is not None else None
        if span is not None:
            return str(span)
        loc = self.cur_loc
        if loc is not None and 0 <= loc.file < len(self.p.files) and loc.line >= 1 and loc.col >= 1:
            return f"{self.p.files[loc.file]}:{loc.line}:{loc.col}"
        return self.cur_path

    def check_stmt(self, s: M.Stmt, holds: tuple, in_fork: bool, in_loop: bool, side: str) -> None:
        p = self.p
        S = MOMENTS["Session"]
        t = type(s)
        if t is M.STurn:
            if in_fork:
                self.problem("E715", "a leg (fork) may not take a turn")
            if side == "server":
                self.problem("E716", "`turn;` belongs to the session, not the server")
        elif t is M.SSet:
            if not (0 <= s.slot < len(p.attrs)):
                self.problem("E910", f"attribute slot {s.slot} out of range")
                return
            self.check_expr(s.expr, S)
            want = p.attr_types[s.slot]
            got = self.type_of(s.expr)
            if want == "Size" and side == "server":
                self.problem("E311", f"`{p.attrs[s.slot]}` is a workload size: the server reads it and "
                             "does not assign it", s.expr,
                             help="compute the server's value into an attribute of its own")
            if isinstance(want, tuple) and not isinstance(got, tuple) and type(strip_cost(s.expr)) is not M.ENum:
                self.problem("E312", f"`{p.attrs[s.slot]}` is a cost; this value is a plain number", s.expr)
            if isinstance(got, tuple) and not isinstance(want, tuple):
                self.problem("E312", f"`{p.attrs[s.slot]}` holds a cost but its type is {want}", s.expr)
        elif t is M.SObserve:
            if not (0 <= s.observe < len(p.observes)):
                self.problem("E910", f"observation {s.observe} out of range")
            self.check_expr(s.expr, S)
        elif t is M.SHold:
            self.check_hold(s, holds, in_fork, in_loop, side)
        elif t in (M.SGrow, M.SLoad):
            self.check_ref(s.pool, "pool", S, s)
            self.check_expr(s.expr, S)
            self.need_hold(s.pool, holds, "grow" if t is M.SGrow else "load")
            self.want_cost(s.expr, (M.Target("pool", s.pool.base),),
                           "the amount of `grow`" if t is M.SGrow else "the amount of `load`")
            self.const_amount(s.expr, "grow" if t is M.SGrow else "load")
        elif t is M.SDrop:
            self.check_ref(s.pool, "pool", S, s)
        elif t is M.SRelease:
            self.check_ref(s.pool, "pool", S, s)
            if not any(h == s.pool for h in holds) and not any(r == s.pool for r in self.leased_refs()):
                self.problem("E720", f"`release {self.ref_name(s.pool, 'pool')}` stands inside no hold "
                             "of that pool, and nothing leases it")
        elif t is M.SRun:
            self.check_run(s, holds)
        elif t is M.SBranch:
            self.check_expr(s.guard, S)
            self.const_guard(s.guard)
            self.walk_block(s.then, holds, in_fork, in_loop)
            if s.other is not None:
                self.walk_block(s.other, holds, in_fork, in_loop)
        elif t is M.SLoop or t is M.SWhile:
            if t is M.SWhile:
                self.check_expr(s.guard, S)
                self.const_guard(s.guard)
            if not self.block_passes_time(s.body):
                self.problem("E730", "this loop can run without letting time pass",
                             help="every path through a loop must reach a run with work, a hold whose "
                                  "body does, or `end`")
            self.walk_block(s.body, holds, in_fork, True)
        elif t is M.SChoose:
            if not (0 <= s.slot < len(p.attrs)):
                self.problem("E910", f"attribute slot {s.slot} out of range")
            self.check_expr(s.count, S)
            if not s.keys:
                self.problem("E910", "choose needs at least one key")
            for k in s.keys:
                self.check_expr(k, S)
        elif t is M.SEnd:
            if in_fork:
                self.problem("E715", "a leg (fork) may not end the session")
        elif t is M.SFork:
            self.has_fork = True
            if self.first_fork is None:
                self.first_fork = (s, self.cur_loc, self.cur_path)
            if in_fork:
                self.problem("E715", "a leg (fork) may not fork")
            for h in holds:
                pool = p.pools[h.base]
                if type(pool.preempt) is M.PreemptBy:
                    self.problem("E717", "a fork cannot stand inside a hold whose pool may preempt "
                                 f"(`{pool.name}`): the hold would run again and fork twice")
                    break
            self.walk_block(s.body, (), True, in_loop)
        elif t is M.SJoin:
            self.has_join = True
            if self.first_fork is None:
                self.first_fork = (s, self.cur_loc, self.cur_path)
            if in_fork:
                self.problem("E715", "a leg (fork) may not join")
        elif t is M.SContent:
            self.check_expr(s.id, S)
            self.check_expr(s.len, S)
            self.check_content(s.id, "the id")
            self.check_content(s.len, "the length")

    def ref_name(self, ref: M.Ref, kind: str) -> str:
        decls = self.p.pools if kind == "pool" else self.p.stages
        if 0 <= ref.base < len(decls):
            return decls[ref.base].name
        return "?"

    def need_hold(self, ref: M.Ref, holds: tuple, what: str) -> None:
        name = self.ref_name(ref, 'pool')
        if not any(h == ref for h in holds):
            self.problem("E720", f"`{what} {name}` stands inside no hold of that pool",
                         help="grow, growing, load and release act on an enclosing hold of the same pool "
                              "reference, index included")
            return
        where = next((at for r, at in self.released if r == ref), None)
        if where is not None:
            self.problem("E720", f"`{what} {name}` follows a `release {name}`: the hold holds `{name}` "
                         "no longer", notes=[f"released at {where}"],
                         help=f"put it before the release, or hold `{name}` again around it")

    def check_hold(self, s: M.SHold, holds: tuple, in_fork: bool, in_loop: bool, side: str) -> None:
        p = self.p
        A = MOMENTS["Admit"]
        if not s.pools:
            self.problem("E910", "a hold names at least one pool")
            return
        first = s.pools[0].pool
        regs = frozenset()
        if 0 <= first.base < len(p.pools) and p.pools[first.base].admit_via is not None:
            regs = self.regs_of(p.pools[first.base].admit_via)
            A = MOMENTS["AdmitEngine"]      # an engine's iteration admits it: its batch so far
        seen = []
        targets = []
        for hp in s.pools:
            ok = self.check_ref(hp.pool, "pool", A, s)
            if any(x == hp.pool for x in seen):
                self.problem("E721", f"the hold names `{self.ref_name(hp.pool, 'pool')}` twice")
            seen.append(hp.pool)
            self.check_expr(hp.units, A, regs_ok=regs)
            if ok:
                targets.append(M.Target("pool", hp.pool.base))
                self.want_cost(hp.units, (M.Target("pool", hp.pool.base),),
                               f"the units of `{self.ref_name(hp.pool, 'pool')}`")
            self.const_amount(hp.units, "units")
            self.const_fits(hp.units, hp.pool, "units")
            if hp.reserve is not None:
                self.check_expr(hp.reserve, A, regs_ok=regs)
                if ok:
                    self.want_cost(hp.reserve, (M.Target("pool", hp.pool.base),),
                                   f"the reserve of `{self.ref_name(hp.pool, 'pool')}`")
                self.const_amount(hp.reserve, "reserve")
                self.const_fits(hp.reserve, hp.pool, "reserve")
        if s.reuse is not None:
            self.check_expr(s.reuse, A, regs_ok=regs)
            if s.cache is None:
                self.problem("E602", "`reuse` on a hold without `cache`: the hold consumes no prefix",
                             s.reuse, help="add `cache (…)` to take part in the prefix cache, or drop reuse")
            self.want_cost(s.reuse, tuple(targets), "the reuse")
        if s.cache is not None:
            self.check_expr(s.cache, MOMENTS["Session"])
            self.want_cost(s.cache, tuple(targets), "the cache")
        if s.lease is not None:
            self.check_ref(s.lease.pool, "pool", MOMENTS["Lease"], s)
            if not any(x == s.lease.pool for x in seen):
                self.problem("E722", "a hold leases one of its own pools")
            self.check_expr(s.lease.time, MOMENTS["Lease"])
            if isinstance(self.type_of(s.lease.time), tuple):
                self.problem("E310", "a lease's duration is seconds, not a cost", s.lease.time)
        inner = holds + tuple(hp.pool for hp in s.pools)
        released = self.released
        self.released = tuple(r for r in released if not any(r[0] == hp.pool for hp in s.pools))
        self.walk_block(s.body, inner, in_fork, in_loop)
        self.released = released

    def check_run(self, s: M.SRun, holds: tuple) -> None:
        p = self.p
        S = MOMENTS["Session"]
        if not self.check_ref(s.stage, "stage", S, s):
            return
        kind = p.stages[s.stage.base].kind
        name = p.stages[s.stage.base].name
        self.check_expr(s.work, S)
        if s.mode not in M.RUN_MODES:
            self.problem("E910", f"unknown run mode {s.mode!r}")
        is_step = type(kind) is M.KStep
        if is_step and s.mode == "Plain":
            self.problem("E303", f"a run on engine `{name}` needs a mode",
                         help=f"write `run {name} prefill (…)` or `run {name} decode (…)`")
        if not is_step and s.mode != "Plain":
            self.problem("E303", f"`{name}` is not an engine: a run on it has no mode",
                         help=f"write `run {name} (…)`")
        if s.growing is not None:
            if not is_step:
                self.problem("E303", "`growing` is only for a run on an engine")
            self.check_ref(s.growing, "pool", S, s)
            self.need_hold(s.growing, holds, "growing")
        targets = [M.Target("stage", s.stage.base)]
        named = True        # every stage the run names is in the table
        for other in s.also:
            if self.check_ref(other, "stage", S, s):
                targets.append(M.Target("stage", other.base))
            else:
                named = False
        if s.also:
            fams = [s.stage.base] + [o.base for o in s.also]
            if len(set(fams)) != len(fams):
                self.problem("E723", "a run names each stage family once")
            for base in fams:
                if not 0 <= base < len(p.stages):
                    continue        # said by check_ref
                k = p.stages[base].kind
                if type(k) is not M.KPs or const_value(k.capacity) is None or not const_value(k.capacity) > 0:
                    self.problem("E724", f"a run over several stages holds ps stages of constant capacity "
                                 f"above 0; `{p.stages[base].name}` is not one")
        if named:           # (else the cost's targets would be said to differ from what is left)
            self.want_cost(s.work, tuple(targets), f"the work of `run {name}`")
        self.const_amount(s.work, "work")

    def const_amount(self, e: M.Expr, what: str) -> None:
        v = _const(e)
        if v is not None and (math.isnan(v) or v < 0):
            self.problem("E405", f"the {what} is {_fmt(v)}: an amount is not negative and not NaN", e)

    def const_fits(self, e: M.Expr, ref: M.Ref, what: str) -> None:
        v = const_value(e)
        if v is None or math.isnan(v):
            return
        best = None
        for k in range(ref.count):
            if not (0 <= ref.base + k < len(self.p.pools)):
                return
            pool = self.p.pools[ref.base + k]
            need = v
            if pool.block:
                need = math.ceil(v / pool.block) * pool.block
            if need <= pool.cap:
                return
            best = pool
        if best is not None:
            self.problem("E406", f"the {what} {_fmt(v)} are above the cap {_fmt(best.cap)} of "
                         f"`{best.name}`: the hold would be rejected whenever it is reached", e)

    def const_draw(self, x: M.ESample) -> None:
        """A draw whose parameters are constants: in its distribution's domain
        (``serq.ir.expr.dist_problem``), a constant probability from 0 to 1."""
        vals = [_const(a) for a in x.args]
        if None in vals:
            return
        why = dist_problem(x.dist, vals)
        if why is None and x.dist == "Bernoulli" and not (0 <= vals[0] <= 1):
            why = f"a constant probability is from 0 to 1, not {_fmt(vals[0])}"
        if why is not None:
            self.problem("E408", why, x, help=_DIST_HELP.get(x.dist))

    def const_guard(self, e: M.Expr, help: str = "a guard is a test; for a draw write `branch with (p)`") -> None:
        v = _const(e)
        if v is not None and v not in (0.0, 1.0):
            self.problem("E603", f"a constant guard is {_fmt(v)}, neither 0 nor 1", e, help=help)

    def block_passes_time(self, b: int) -> bool:
        """Every path through block ``b`` lets time pass (or ends)."""
        for s in self.p.blocks[b].stmts:
            if self.stmt_passes_time(s):
                return True
        return False

    def stmt_passes_time(self, s: M.Stmt) -> bool:
        t = type(s)
        if t is M.SRun:
            v = _const(s.work)
            return v is None or v > 0
        if t is M.SHold:
            return self.block_passes_time(s.body)
        if t is M.SEnd:
            return True
        if t is M.SBranch:
            return s.other is not None and self.block_passes_time(s.then) and \
                self.block_passes_time(s.other)
        if t is M.SLoop:
            return True  # an inner loop that never exits blocks the pass, it is checked itself
        if t is M.SJoin:
            return False
        return False

    def check_run_settings(self) -> None:
        p = self.p
        self.cur_loc, self.cur_stmt = None, None
        if not (p.horizon > 0 and math.isfinite(p.horizon)):
            self.problem("E740", f"horizon must be a finite positive number, not {_fmt(p.horizon)}",
                         field="$.horizon")
        if not (p.warmup >= 0 and math.isfinite(p.warmup)):
            self.problem("E740", f"warmup must be a finite number ≥ 0, not {_fmt(p.warmup)}", field="$.warmup")
        elif p.warmup >= p.horizon and p.horizon > 0:
            self.problem("E740", f"warmup {_fmt(p.warmup)} must be below the horizon {_fmt(p.horizon)}",
                         field="$.warmup")
        if not 0 <= p.seed < M.SEEDS:
            self.problem("E740", f"seed must be {M.SEEDS_TEXT}, not {p.seed}", field="$.seed")
        if p.arrivals is not None:
            if p.arrivals < 1:
                self.problem("E740", "arrivals must be a positive whole number", field="$.arrivals")
            if type(p.arrival) not in M.OPEN_ARRIVALS:
                self.problem("E740", "--arrivals needs an open workload (poisson or renewal)", field="$.arrivals")


def _join_cost(a, b, ea, eb):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a if set(a) == set(b) else "Value"
    if isinstance(a, tuple) and is_constant(eb):
        return a
    if isinstance(b, tuple) and is_constant(ea):
        return b
    return "Value"


def _iter_reaches(body: tuple) -> bool:
    for it in body:
        if type(it) in (M.IServe, M.IAdmit):
            return True
        if type(it) is M.IBranch and _iter_reaches(it.then) and _iter_reaches(it.other):
            return True
    return False


_DIST_HELP = {
    "Exp": "`~exp(m)` draws an exponential of mean m",
    "Uniform": "`~uniform(lo, hi)` draws from lo to hi",
    "Erlang": "`~erlang(k, m)` is the sum of k exponentials of mean m / k",
    "H2": "`~h2(m, cv2)` is a balanced two-phase hyperexponential of mean m; cv2 1 is `~exp(m)`",
    "Bernoulli": "`~bernoulli(p)` is 1 with probability p",
}


_SCHEDULE_GUARD = "a guard is a test: 1 takes the branch (or admits on), 0 does not"


def _const(e: M.Expr) -> Optional[float]:
    """``e``'s value when it is a constant, for a check of what it may be;
    None when it is not one, and when it is NaN from a number that is
    (`~exp(0/0)`): E401 says that at the number, and the check would only
    say it again."""
    v = const_value(e)
    if v is not None and v != v and any(type(x) is M.ENum and x.value != x.value for x in walk(e)):
        return None
    return v


def validate(program: M.Program, span_of: Optional[Callable[[object], Optional[Span]]] = None) -> None:
    """Raise SerqError listing every rule ``program`` breaks."""
    try:
        Checker(program, span_of).run()
    except RecursionError:
        raise SerqError(Diagnostic("E910", "the IR nests too deeply for serq to check", field="$")) from None
