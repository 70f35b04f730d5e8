"""Constants and their checks: `let`s, the inputs (`args.number`, `--set`), family sizes, folds."""

from __future__ import annotations

import math
from typing import Optional

from ..diag import SerqError, did_you_mean
from ..ir import model as M
from ..ir.expr import const_value, is_constant, walk
from ..syntax import ast as A
from ..syntax.parser import parse_expr
from .env import Env
from .exprs import MAX_AGG_TERMS
from .nodes import LinkAbort, fmt, names_read
from .tables import ConstInfo


class Constants:
    """*Part of Linker*: a `let`'s value and the inputs it depends on, the
    `--set` values checked against the inputs, a family's size, and the
    folding every lowered expression goes through (noting where an input's
    value was folded by more than products, for serq.link.shapes)."""

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
            if name in self.consts and self.consts[name].input is not None:
                c = self.consts[name]
                given = "" if isinstance(self.sets[name], A.Node) else f"--set {name}: "
                self.diag.add("E251", f"{given}`{name}` is the input `{c.input}`, given a value by that name",
                              c.span, help=f"give `{c.input}` the value (or name the input as the `let`: "
                                           f"`let {name} = args.number(\"{name}\", …);`)")
            elif name in self.consts:
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

    def count_of(self, e: Optional[A.Expr], what: str) -> tuple[int, bool]:
        if e is None:
            return 1, False
        value, deps = self.const_expr(e, Env(clause="const"))
        if not (value >= 1 and math.isfinite(value) and value == math.floor(value)):
            # (said, and linked on as a family of one, as below: a size from
            # an input, --set N=0, leaves every reader of the family linked)
            self.diag.add("E403", f"the size of {what} is a whole number ≥ 1, not {fmt(value)}", e.span)
            value = 1.0
        elif value > MAX_AGG_TERMS:
            # a family is read by aggregates over its members, which write
            # out at most MAX_AGG_TERMS terms
            # (said, and linked on as a family of one, so that nothing else is said of it)
            self.diag.add("E403", f"the size of {what} is at most {MAX_AGG_TERMS} members, not {value:g}",
                          e.span, help=f"a family is read member by member (`max j in n (…)`, "
                                       f"`choose j in n by …`): at most {MAX_AGG_TERMS} terms")
            value = 1.0
        if self.size_inputs is not None:
            self.size_inputs.update(deps)     # the inputs that size a family: part of a shape (serq/link/shapes.py)
        return int(value), True

    def fold(self, e: M.Expr) -> M.Expr:
        """Fold constant subtrees into numbers (as the interpreter computes)."""
        t = type(e)
        if t in (M.ENum, M.EAttr, M.ECtx, M.EReg, M.EAgg):
            return e
        span = self.spans.get(id(e))
        if t is not M.ECost and is_constant(e):
            v = const_value(e)
            out = self.mk(M.ENum(v), span) if span else M.ENum(v)
            if self.input_nums:
                self.note_input_fold(e, out, span)
            return out
        return e

    def note_input_fold(self, e: M.Expr, out: M.ENum, span) -> None:
        """``out``, folded from ``e``, is an input's value (or made from one)
        when ``e`` reads one; one made by anything but products is noted in
        ``input_folds`` (serq.link.shapes links such a program in full for
        every value of its inputs)."""
        reads = False
        product = True
        for x in walk(e):
            tx = type(x)
            if tx is M.ENum:
                reads = reads or id(x) in self.input_nums
            elif not ((tx is M.EBinary and x.op == "Mul") or (tx is M.EUnary and x.op == "Neg")
                      or tx is M.ECost):
                product = False
        if reads:
            self.keep.append(out)
            self.input_nums.add(id(out))
            if not product:
                self.input_folds.append(span)

