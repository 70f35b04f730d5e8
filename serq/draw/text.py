"""Words for the figures: IR expressions and declarations as short text, and
the size that text takes.

The layout engine is never asked to measure text (its answer would depend on
the fonts a machine has): every label's box is computed here, from a fixed
table of glyph widths, and handed to it as a fixed size.
"""

from __future__ import annotations

import math
from typing import Optional

from ..ir import model as M

# ---------------------------------------------------------------------------
# Expressions

# Context variables by their source spelling (docs/ir.md, "Context variables").
CTX_SPELLING = {
    "Now": "now", "Waited": "waited", "Size": "size", "Age": "age", "Last": "last",
    "Waiting": "waiting", "Present": "present", "Nres": "running.count",
    "Ndec": "running.decoding", "Kvb": "kv_decode", "Kvp": "kv_prefill",
    "Ntok": "batch.tokens", "Npre": "batch.prefilled", "Attn": "batch.attention",
    "Decoding": "decoding", "Admission": "admission", "Remaining": "remaining",
    "Position": "position", "Admitted": "waiting.admitted", "Preempted": "running.preempted",
    "Demand": "demand", "Served": "served", "Arrived": "arrived",
}

QUERY_SPELLING = {
    "Used": "used", "Free": "free", "CachedIn": "cachedin", "Holders": "holders",
    "Queued": "queued", "Queue": "queue", "Busy": "busy", "Work": "work",
    "EstLambda": "est_lambda", "EstRho": "est_rho", "EstWait": "est_wait",
    "BudgetLeft": "budget_left",
}

_BINOP = {
    "Add": ("+", 4), "Sub": ("-", 4), "Mul": ("*", 5), "Div": ("/", 5), "Pow": ("^", 7),
    "Lt": ("<", 3), "Le": ("<=", 3), "Gt": (">", 3), "Ge": (">=", 3), "Eq": ("==", 3),
    "Ne": ("!=", 3), "And": ("&&", 2), "Or": ("||", 1),
}


def num(v: float) -> str:
    """A number as the source would spell it: integers without a point,
    infinity as the sign."""
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


# How an engine's clauses spell the residents' and the batch's values
# (§Engines on devices): `running.…` where the batch is not formed yet,
# `batch.…` in `execute`.
ENGINE_SPELLING = {
    "budget": {"Ndec": "running.decoding", "Kvb": "running.kv_decode", "Kvp": "running.kv_prefill"},
    "execute": {"Ndec": "batch.decoding", "Kvb": "batch.kv_decode", "Kvp": "batch.kv_prefill"},
}


class Namer:
    """Names of a program's attributes, observations, pools, stages and
    registers, for printing its expressions."""

    def __init__(self, program: M.Program):
        self.p = program
        self.ctx_spelling = CTX_SPELLING
        self.waiting: frozenset = frozenset()   # the pools whose queues an engine clause counts

    def engine_expr(self, e: M.Expr, clause: str, stage: int, chunk: bool = False) -> str:
        """An expression of engine `stage`'s clause as its source spells it:
        `running.…`/`batch.…` by the clause, the sum of the queues it admits as
        `waiting.count`, and in a chunk the kernel's 0 (no cap) as `inf`."""
        saved = self.ctx_spelling, self.waiting
        self.ctx_spelling = {**CTX_SPELLING, **ENGINE_SPELLING.get(clause, {})}
        self.waiting = frozenset(i for i, pl in enumerate(self.p.pools) if pl.admit_via == stage)
        try:
            if chunk:
                e = _no_cap_as_inf(e)
            return self.expr(e)
        finally:
            self.ctx_spelling, self.waiting = saved

    def _waiting_count(self, e: M.Expr) -> bool:
        """Is `e` the sum of `queued(P)` over exactly the pools an engine admits?"""
        if not self.waiting:
            return False
        terms = []
        stack = [e]
        while stack:
            x = stack.pop()
            if type(x) is M.EBinary and x.op == "Add":
                stack += [x.lhs, x.rhs]
            elif type(x) is M.EQuery and x.query == "Queued":
                idx = x.ref.index
                if idx is None:
                    terms.append(x.ref.base)
                elif type(idx) is M.ENum:
                    terms.append(x.ref.base + int(idx.value))
                else:
                    return False
            else:
                return False
        return sorted(terms) == sorted(self.waiting)

    def ref(self, ref: M.Ref, kind: str) -> str:
        decls = self.p.pools if kind == "pool" else self.p.stages
        if not (0 <= ref.base < len(decls)):
            return "?"
        d = decls[ref.base]
        if ref.index is None:
            if ref.count == 1:
                return d.name if d.index is None else f"{d.name}[{d.index}]"
            return d.name
        return f"{d.name}[{self.expr(ref.index)}]"

    def pool(self, ref: M.Ref) -> str:
        return self.ref(ref, "pool")

    def stage(self, ref: M.Ref) -> str:
        return self.ref(ref, "stage")

    def attr(self, slot: int) -> str:
        return self.p.attrs[slot] if 0 <= slot < len(self.p.attrs) else f"attr{slot}"

    def expr(self, e: M.Expr) -> str:
        return self._e(e)[0]

    def _e(self, e: M.Expr) -> tuple[str, int]:
        t = type(e)
        if (t is M.EBinary or t is M.EQuery) and self._waiting_count(e):
            return "waiting.count", 8
        if t is M.ENum:
            s = num(e.value)
            return s, (8 if not s.startswith("-") else 6)
        if t is M.EAttr:
            return self.attr(e.slot), 8
        if t is M.ECtx:
            return self.ctx_spelling.get(e.var, e.var.lower()), 8
        if t is M.ESample:
            return f"~{e.dist.lower()}({', '.join(self.expr(a) for a in e.args)})", 8
        if t is M.EReg:
            regs = self.p.registers
            return (regs[e.index].name if 0 <= e.index < len(regs) else f"reg{e.index}"), 8
        if t is M.EFn:
            return f"{e.fn.lower()}({', '.join(self.expr(a) for a in e.args)})", 8
        if t is M.EQuery:
            kind = "pool" if e.query in M.POOL_QUERIES else "stage"
            return f"{QUERY_SPELLING.get(e.query, e.query.lower())}({self.ref(e.ref, kind)})", 8
        if t is M.EPrice:
            return (f"price({self.stage(e.ref)}, {self.expr(e.s_hit)}, {self.expr(e.ds)})", 8)
        if t is M.EUnary:
            s, p = self._e(e.arg)
            if p < 6:
                s = f"({s})"
            return ("-" if e.op == "Neg" else "!") + s, 6
        if t is M.EBinary:
            op, prec = _BINOP[e.op]
            ls, lp = self._e(e.lhs)
            rs, rp = self._e(e.rhs)
            if lp < prec or (e.op == "Pow" and lp <= prec):
                ls = f"({ls})"
            if rp < prec or (rp == prec and e.op != "Pow" and e.op not in ("Add", "Mul", "And", "Or")):
                rs = f"({rs})"
            return f"{ls} {op} {rs}", prec
        if t is M.ECond:
            c, cp = self._e(e.cond)
            a, _ = self._e(e.then)
            b, _ = self._e(e.other)
            return f"{c if cp > 0 else '(' + c + ')'} ? {a} : {b}", 0
        if t is M.EAgg:
            obs = self.p.observes[e.observe] if 0 <= e.observe < len(self.p.observes) else "?"
            return f"{e.agg.lower()}({obs})", 8
        if t is M.ECost:
            return self._e(e.expr)
        if t is M.ERunSum:
            body, _ = self._e(e.expr)
            return f"sum r in running ({body})", 8
        return "?", 8  # pragma: no cover - a new node must be added here

    def negate(self, e: M.Expr) -> str:
        """`!guard`, parenthesised as needed."""
        s, p = self._e(e)
        return "!" + (s if p >= 6 else f"({s})")


def _no_cap_as_inf(e: M.Expr) -> M.Expr:
    """A chunk as the source writes it: the kernel's 0 (no cap) is `inf`."""
    if type(e) is M.ENum and e.value == 0:
        return M.ENum(math.inf)
    if type(e) is M.ECond:
        return M.ECond(e.cond, _no_cap_as_inf(e.then), _no_cap_as_inf(e.other))
    return e


def elide(s: str, n: int) -> str:
    """At most ``n`` characters; a cut string ends with an ellipsis (for an
    element's id-like short name only: a label is wrapped, never cut)."""
    return s if len(s) <= n else s[: max(1, n - 1)].rstrip() + "…"


def wrap(s: str, n: int) -> list[str]:
    """``s`` in lines of at most ``n`` characters, broken at spaces (a word
    longer than ``n`` stands alone on its line): nothing is cut off."""
    words = s.split(" ")
    out: list[str] = []
    cur = ""
    for w in words:
        if not cur:
            cur = w
        elif len(cur) + 1 + len(w) <= n:
            cur += " " + w
        else:
            out.append(cur)
            cur = "  " + w
    out.append(cur)
    return out


def wrap_lines(lines: list, n: int = 36) -> list:
    """Every ``(text, style)`` line longer than ``n`` characters wrapped into
    several of that style, continuations indented."""
    out = []
    for text, style in lines:
        if len(text) <= n:
            out.append((text, style))
        else:
            out.extend((t, style) for t in wrap(text, n))
    return out


# ---------------------------------------------------------------------------
# Metrics.  Advance widths of a Helvetica-like sans serif in 1/1000 em for
# ASCII 32..126 (the widths Arial, Helvetica, Liberation Sans and TeX's
# sans serifs nearly share); anything else counts as 600.  A margin covers a
# wider fallback font (DejaVu Sans).

_W = [278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,  # ' '..'/'
      556, 556, 556, 556, 556, 556, 556, 556, 556, 556,  # 0-9
      278, 278, 584, 584, 584, 556, 1015,  # : ; < = > ? @
      667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722,
      667, 611, 722, 667, 944, 667, 667, 611,  # A-Z
      278, 278, 278, 469, 556, 333,  # [ \ ] ^ _ `
      556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333,
      500, 278, 556, 500, 722, 500, 500, 500,  # a-z
      334, 260, 334, 584]  # { | } ~
_WIDE = {"∞": 713, "…": 1000, "·": 278, "≤": 584, "≥": 584, "≠": 584, "¬": 584, "→": 1000,
         "←": 1000, "×": 584, "λ": 556, "−": 584}

MARGIN = 1.12  # a fallback font's extra width
BOLD = 1.08

# Text styles: (font size in pt, bold, line height in pt).
STYLES = {
    "h": (10.0, True, 13.0),   # a heading: a station's or a pool's name
    "n": (9.0, False, 11.5),   # body text
    "s": (8.0, False, 10.0),   # small text: rules, source lines
}


def text_width(s: str, style: str = "n") -> float:
    size, bold, _ = STYLES[style]
    units = 0
    for ch in s:
        o = ord(ch)
        units += _W[o - 32] if 32 <= o <= 126 else _WIDE.get(ch, 600)
    return units / 1000.0 * size * MARGIN * (BOLD if bold else 1.0)


def block_size(lines: list[tuple[str, str]]) -> tuple[float, float]:
    """Width and height of stacked text lines ``(text, style)``."""
    if not lines:
        return 0.0, 0.0
    w = max(text_width(t, st) for t, st in lines)
    h = sum(STYLES[st][2] for _, st in lines)
    return w, h


# ---------------------------------------------------------------------------
# Escaping

def xml(s: str) -> str:
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


_TEX = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "%": r"\%", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': r"\textquotedbl{}",
    "∞": r"$\infty$", "…": r"\ldots{}", "·": r"$\cdot$", "≤": r"$\le$", "≥": r"$\ge$",
    "≠": r"$\ne$", "¬": r"$\neg$", "→": r"$\to$", "←": r"$\leftarrow$", "×": r"$\times$",
    "λ": r"$\lambda$", "−": r"$-$",
}


def tex(s: str) -> str:
    """Text for a TikZ node in a pdfLaTeX document: every special character
    escaped, every non-ASCII character mapped or replaced."""
    out = []
    for ch in s:
        if ch in _TEX:
            out.append(_TEX[ch])
        elif 32 <= ord(ch) <= 126:
            out.append(ch)
        else:
            out.append("?")
    return "".join(out)


def loc_str(program: M.Program, loc: Optional[M.Loc]) -> str:
    """``path:line:col`` of a location; the program's file at 1:1 when the
    IR has none."""
    if loc is None or not (0 <= loc.file < len(program.files)):
        return f"{program.files[0] if program.files else '<program>'}:1:1"
    return f"{program.files[loc.file]}:{loc.line}:{loc.col}"
