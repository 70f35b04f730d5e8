"""A program's inputs (``serq inputs``, ``prog.inputs``): each ``let NAME =
args.number("name", default);`` of its main, in the order declared, with
its default as written, the value the default folds to, the value the
program is linked with (``--set``, an instance file), the comment that
follows it on its line (its unit, as the examples write it: ``// sessions
per second``) and what it sizes (a family ``queue D[ND]``, ``pool kv[N]``).

The program is linked once, as ``serq check`` links it, so an input the
program refuses is said here as there; the defaults are folded by the same
linker with no value given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..diag import Span, source_lines
from ..syntax import ast as A


@dataclass(frozen=True)
class Input:
    name: str               # the input's name (`--set NAME=…`)
    let: str                # the constant it initialises
    default: str            # the default's text, as the program writes it
    default_value: float    # what it folds to
    value: float            # the value linked (the default's, or the one given)
    given: Optional[str]    # the value's text when one was given (`--set`, an instance file), else None
    comment: str            # the `// …` after it on its line, without the slashes ("" for none)
    line: int               # where it is declared (the program's file)
    section: str = ""       # the comment above the block of declarations it is in ("" for none)


def program_inputs(text: str, path: str, sets: Optional[dict] = None, given: Optional[dict] = None) -> list:
    """The inputs of the program ``text`` (at ``path``), linked with ``sets``
    (``--set`` texts, or an instance file's expressions); ``given``: the
    values' texts as given, by input name (default: ``sets``' texts)."""
    from . import _set_texts
    from .linker import Linker
    from ..syntax.parser import parse
    settings = {"horizon": 1.0, "warmup": 0.0, "seed": 1, "arrivals": None, "trace": None}
    prog = parse(text, path)
    sets = _set_texts(sets)
    linked = Linker(path, sets, settings)
    linked.link(prog)                       # its errors, as `serq check` says them
    defaults = Linker(path, {}, settings) if sets else linked
    if sets:
        defaults.link(prog)
    if given is None:
        given = {k: v for k, v in sets.items() if isinstance(v, str)}
    lines = source_lines(text)
    out = []
    for item in prog.main.items:
        if not (isinstance(item, A.Let) and _is_input(item.expr)):
            continue
        name = item.expr.args[0].value
        out.append(Input(name=name, let=item.name, default=_source(lines, item.expr.args[1].span),
                         default_value=defaults.consts[item.name].value, value=linked.consts[item.name].value,
                         given=given.get(name), comment=_comment(lines, item.span), line=item.span.line,
                         section=_section(lines, item.span.line)))
    return out


def _is_input(e: A.Expr) -> bool:
    return (isinstance(e, A.Call) and isinstance(e.fn, A.Dot) and isinstance(e.fn.obj, A.Name)
            and e.fn.obj.name == "args" and e.fn.attr == "number" and len(e.args) == 2
            and isinstance(e.args[0], A.Str))


def _source(lines: list, span: Span) -> str:
    part = lines[span.line - 1:span.end_line]
    if len(part) == 1:
        return part[0][span.col - 1:span.end_col - 1]
    return " ".join([part[0][span.col - 1:]] + [x.strip() for x in part[1:-1]] + [part[-1][:span.end_col - 1]])


def _comment(lines: list, span: Span) -> str:
    """The `// …` that follows the declaration on its last line."""
    rest = lines[span.end_line - 1][span.end_col - 1:]
    i = _comment_start(rest)
    return "" if i is None else rest[i + 2:].strip()


def _section(lines: list, line: int) -> str:
    """The comment lines right above the block of code lines (no blank line
    between) that line ``line`` is in, joined."""
    i = line - 2
    while i >= 0 and lines[i].strip() and not lines[i].strip().startswith("//"):
        i -= 1
    out = []
    while i >= 0 and lines[i].strip().startswith("//"):
        out.append(lines[i].strip()[2:].strip())
        i -= 1
    return " ".join(reversed(out))


def _comment_start(s: str) -> Optional[int]:
    quoted = False
    for i, ch in enumerate(s):
        if ch == '"':
            quoted = not quoted
        elif not quoted and s.startswith("//", i):
            return i
    return None


def text(path: str, inputs: list) -> str:
    """``serq inputs``: a table of the inputs under the comments that head
    their blocks; a `value` column when one was given another value."""
    from ..sim.report import _table
    if not inputs:
        return f"{path}: no inputs (a plain `let` is fixed; `let NAME = args.number(\"NAME\", default);` " \
               "with `use \"std/args\";` declares one)"
    given = any(i.given is not None for i in inputs)
    header = ["input", "default"] + (["value"] if given else []) + ["comment"]
    rows, heads = [], {}
    section = None
    for i in inputs:
        if i.section != section:
            section = i.section
            if section:
                heads[len(rows)] = section
        rows.append([i.name, i.default] + ([_g(i.value) if i.given is not None else ""] if given else [])
                    + [i.comment])
    lines = _table(header, rows, left=len(header))
    out = [f"{path}: {len(inputs)} input{'s' if len(inputs) != 1 else ''} "
           "(give one a value with --set NAME=VALUE, -- NAME=VALUE or an instance file)", ""]
    out += lines[:2]
    for k, line in enumerate(lines[2:]):
        if k in heads:
            out.append(f"// {heads[k]}")
        out.append(line)
    return "\n".join(out)


def _g(x: float) -> str:
    import math
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(x)


def as_json(inputs: list) -> list:
    """``serq inputs --json``: one object per input, its fields by name (an
    infinity as the string ``"inf"``, as the IR writes it)."""
    import dataclasses
    import math

    def num(x):
        return ("inf" if x > 0 else "-inf") if isinstance(x, float) and math.isinf(x) else x
    return [{k: num(v) for k, v in dataclasses.asdict(i).items()} for i in inputs]
