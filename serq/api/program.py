"""A program for Python: ``serq.load`` / ``serq.loads``, its runs and its
drawings.

A program is linked once, for inspection; a run gives it the run's
settings (horizon, warm-up, seed, arrivals, trace) the way ``serq run
prog.ir.json --horizon …`` does — the same IR as linking with those settings,
validated — so ``prog.run(horizon=300, seed=2)`` is ``serq run prog.sq
--horizon 300 --seed 2``, byte for byte."""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from typing import Optional

from ..diag import Diagnostic, SerqError, did_you_mean

VIEWS = ("deployment", "session")
FORMATS = ("svg", "tikz", "png")


def usage(message: str, help: Optional[str] = None) -> SerqError:
    """A SerqError for a call the API refuses (E970)."""
    return SerqError(Diagnostic("E970", message, help=help))


def set_text(name, value) -> str:
    """An input's value as ``--set`` text: a number (``0.6``, ``2048``) or an
    expression's text (``"2 * 0.3"``)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise usage(f"`{name}` is not the name of an input", help="set={\"Lambda\": 0.6}")
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
        raise usage(f"the input {name} is given {type(value).__name__} {value!r}; give a number or "
                    "an expression's text")
    if isinstance(value, str):
        if not value.strip():
            raise usage(f"the input {name} is given an empty text")
        return value
    if isinstance(value, numbers.Integral):
        return str(int(value))
    x = float(value)
    if x != x:
        raise usage(f"the input {name} is given NaN")
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def set_texts(values: Optional[dict]) -> dict:
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise usage(f"set= takes a dict of inputs, not {type(values).__name__}", help="set={\"Lambda\": 0.6}")
    return {name: set_text(name, v) for name, v in values.items()}


class Drawing(str):
    """A figure's text (SVG or TikZ); an SVG shows itself in Jupyter."""

    fmt = "svg"
    program: Optional[str] = None       # the program's path: never written over
    reads: tuple = ()                   # nor the files it reads (serq/files.py read_by)

    def _repr_svg_(self):
        return str(self) if self.fmt == "svg" else None

    def save(self, path, force: bool = False) -> None:
        """Write the figure at ``path``, as ``serq draw --out`` does: a file
        that is not a figure of serq draw's is replaced only with ``force``,
        the program never; a name whose extension says another format
        (``.svg``, ``.tex``, ``.png``) is refused."""
        _save(self, str(self), path, force)


class Picture(bytes):
    """A figure as PNG (bytes); it shows itself in Jupyter, and ``save(path)``
    writes it as :meth:`Drawing.save` does."""

    fmt = "png"
    program: Optional[str] = None
    reads: tuple = ()

    def _repr_png_(self):
        return bytes(self)

    def save(self, path, force: bool = False) -> None:
        """Write the PNG at ``path``, as ``serq draw --out FIGURE.png`` does."""
        _save(self, bytes(self), path, force)


def _save(figure, data, path, force) -> None:
    from .. import args, files
    from ..draw import EXTENSIONS
    where = f"{type(figure).__name__}.save"
    path = args.path(where, "path", path)
    force = args.flag(where, "force", force)
    says = EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if says is not None and says != figure.fmt:
        raise usage(f"{where}: {path} says {says}, and this figure is {figure.fmt}",
                    help=f"draw it with fmt=\"{says}\", or give a name ending "
                         f"{' or '.join(e for e, f in EXTENSIONS.items() if f == figure.fmt)}")
    files.write_file(path, data, what="", mark=files.DRAW, force=force, inputs=[figure.program, *figure.reads])


class Program:
    """A linked program.  ``ir`` is its IR (``serq.ir.model.Program``),
    ``path`` where it came from, ``sets`` the inputs it was given,
    ``inputs`` the inputs it declares (defaults, comments), ``defaults`` the
    run settings of its instance file (``instance=``); ``run``, ``set``,
    ``draw``, ``json``; ``serq.sweep(prog, …)`` sweeps it."""

    def __init__(self, ir, *, path: str, text: Optional[str], sets: dict, from_ir: bool,
                 defaults: Optional[dict] = None, instance: Optional[str] = None,
                 given: Optional[dict] = None):
        self.ir = ir
        self.path = path
        self._text = text
        self.sets = dict(sets)
        self.from_ir = from_ir
        self.defaults = dict(defaults or {})   # the instance file's settings, under a run's arguments
        self.instance = instance               # the instance file read, if any
        # the inputs' values as given (an instance file's as it writes them), for the report
        self.given = dict(sets) if given is None else dict(given)

    def origin(self) -> dict:
        """What a run's report says made it (``simulate(origin=…)``)."""
        return {"program": self.path, "instance": self.instance,
                "inputs": None if self.from_ir else dict(self.given)}

    # -- what it is ---------------------------------------------------------------
    @property
    def observes(self) -> tuple:
        return tuple(self.ir.observes)

    @property
    def pools(self) -> tuple:
        return tuple(_labels(self.ir.pools))

    @property
    def stages(self) -> tuple:
        return tuple(_labels(self.ir.stages))

    @property
    def gauges(self) -> tuple:
        return tuple(g.name for g in self.ir.gauges)

    @property
    def claims(self) -> tuple:
        return tuple(c.name for c in self.ir.claims)

    @property
    def inputs(self):
        """The program's inputs (``serq inputs``), by name in the order
        declared: records of ``default`` (its text), ``default_value``,
        ``value`` (the one linked), ``given`` (the text given, or None),
        ``comment`` (the ``// …`` after it: its unit), ``section`` (the
        comment heading its block), ``let``, ``line``.  Empty for IR."""
        import dataclasses as dc
        from .report import Record, Section
        if self.from_ir:
            return Section("input", {})
        from ..link.inputs import program_inputs
        found = program_inputs(self._text, self.path, self.sets, self.given)
        return Section("input", {i.name: Record("input", i.name, {k: v for k, v in dc.asdict(i).items()
                                                                  if k != "name"}) for i in found})

    def __repr__(self):
        def names(xs):
            return ", ".join(xs) or "-"
        sets = "".join(f" {k}={v}" for k, v in self.sets.items())
        return (f"<serq.Program {self.path}{sets}: pools {names(self.pools)}; stages {names(self.stages)}; "
                f"observes {names(self.observes)}>")

    def json(self) -> str:
        """The IR as canonical JSON (what ``serq ir`` prints; ``serq.load`` reads it back)."""
        from .. import ir
        return ir.dumps(self.ir)

    # -- other inputs ---------------------------------------------------------------
    def set(self, **values) -> "Program":
        """The program linked again with these inputs changed (``prog.set(Lambda=0.9)``)."""
        if self.from_ir:
            raise usage(f"{self.path} is IR: its constants are already folded, so its inputs cannot be set",
                        help="load the .sq program to set its inputs")
        return self._relinked(set_texts(values), _compile)

    def linked(self, sets: dict, link=None) -> "Program":
        """The program with its inputs updated by ``sets`` (values as for ``set``);
        itself when there are none.  ``link(text, path, sets)``, where given,
        makes the IR (a sweep's: serq.sweeps.links), which must be the
        linker's for those inputs."""
        if not sets:
            return self
        if link is None or self.from_ir:
            return self.set(**sets)
        return self._relinked(set_texts(sets), link)

    def _relinked(self, texts: dict, link) -> "Program":
        sets = {**self.sets, **texts}
        return Program(link(self._text, self.path, sets), path=self.path, text=self._text, sets=sets,
                       from_ir=False, defaults=self.defaults, instance=self.instance,
                       given={**self.given, **texts})

    # -- runs ---------------------------------------------------------------
    def settings(self, *, horizon=None, warmup=None, seed=None, arrivals=None, trace=None):
        """The IR of a run with these settings (validated); a setting left None is
        the program's own (an IR file's; for source, its instance file's, or
        its default instance's, else warm-up 0 and seed 1): a horizon given
        alone keeps the instance's warm-up, as ``serq run --horizon`` does."""
        if self.instance is None and not self.from_ir:
            with_default = self._default_instance(horizon, warmup, seed)
            if with_default is not self:
                return with_default.settings(horizon=horizon, warmup=warmup, seed=seed, arrivals=arrivals,
                                             trace=trace)
        d = self.defaults
        if self.instance is not None:
            from ..instance import keep_warmup
            d = dict(d)
            note = keep_warmup({"horizon": horizon, "warmup": warmup}, d, self.instance)
            if note is not None:
                import warnings
                warnings.warn(note[len("note: "):], stacklevel=3)
        horizon = d.get("horizon") if horizon is None else horizon
        warmup = d.get("warmup") if warmup is None else warmup
        seed = d.get("seed") if seed is None else seed
        arrivals = d.get("arrivals") if arrivals is None else arrivals
        trace = d.get("trace") if trace is None else trace
        if horizon is None and not self.from_ir:
            raise usage("a run needs a horizon: a model says what the deployment is, the run says "
                        "how long", help="prog.run(horizon=300), or serq.load(path, instance=FILE)")
        changes = {}
        if horizon is not None:
            changes["horizon"] = _float("horizon", horizon)
        if warmup is not None:
            changes["warmup"] = _float("warmup", warmup)
        if seed is not None:
            changes["seed"] = _int("seed", seed)
        if arrivals is not None:
            changes["arrivals"] = _int("arrivals", arrivals)
        if trace is not None:
            from .. import args
            changes["trace"] = args.path("Program.run", "trace", trace)
        if not changes:
            return self.ir
        from .. import ir
        program = dataclasses.replace(self.ir, **changes)
        ir.validate(program)
        return program

    def _default_instance(self, horizon=None, warmup=None, seed=None) -> "Program":
        """Itself under its default instance (``instances/NAME.sq`` beside it), as
        ``serq run PROG.sq`` without ``--instance`` reads it; itself when it has none."""
        from ..instance import default_for, read, under
        path = default_for(self.path)
        if path is None:
            return self
        inst = read(path)
        values = {k: v for k, v in inst.inputs.items() if k not in self.sets}
        _, note, useful = under(inst, {"horizon": horizon, "warmup": warmup, "seed": seed}, self.sets)
        if not useful:
            if note is not None:
                import warnings
                warnings.warn(note[len("note: "):], stacklevel=4)
            return self       # it gives this run nothing its arguments do not: not read, as serq run
        given = {**{k: inst.texts[k] for k in values}, **self.given}
        if values:
            return _link(self._text, self.path, {**self.sets, **values}, inst.settings, instance=path,
                         given=given)
        return Program(self.ir, path=self.path, text=self._text, sets=self.sets, from_ir=False,
                       defaults=inst.settings, instance=path, given=given)

    def run(self, *, horizon=None, warmup=None, seed=None, arrivals=None, trace=None):
        """Simulate the program; its :class:`serq.api.report.Report`."""
        from ..sim import simulate
        from .report import Report
        target = self
        if self.instance is None and not self.from_ir:
            target = self._default_instance(horizon, warmup, seed)
        program = target.settings(horizon=horizon, warmup=warmup, seed=seed, arrivals=arrivals, trace=trace)
        return Report(simulate(program, origin=target.origin()))

    # -- drawings ---------------------------------------------------------------
    def draw(self, view: str = "deployment", fmt: str = "svg"):
        """The deployment or the session as SVG or TikZ (a :class:`Drawing`,
        text) or PNG (a :class:`Picture`, bytes; matplotlib, ``serq[plot]``),
        as ``serq draw``; ``.save(path)`` writes either."""
        _choice("view", view, VIEWS)
        _choice("fmt", fmt, FORMATS)
        from ..draw import render
        if fmt == "png":
            from .extras import extra
            extra("matplotlib", "plot")
            d = Picture(render(self.ir, view=view, fmt=fmt))
        else:
            d = Drawing(render(self.ir, view=view, fmt=fmt))
            d.fmt = fmt
        from .. import files
        d.program, d.reads = self.path, tuple(files.read_by(self.ir))
        return d

    def _repr_svg_(self):
        return self.draw()


def _labels(decls):
    return [d.name if d.index is None else f"{d.name}[{d.index}]" for d in decls]


def _choice(what: str, value, choices) -> None:
    if value not in choices:
        raise usage(f"{what}={value!r} is not one of {', '.join(choices)}",
                    help=did_you_mean(str(value), choices))


def _float(what: str, value) -> float:
    from .. import args
    return args.number("Program.run", what, value)


def _int(what: str, value) -> int:
    from .. import args
    return args.whole("Program.run", what, value)


def _compile(text: str, path: str, sets: dict):
    from ..link import compile_source
    return compile_source(text, path, sets=sets)


def _link(text: str, path: str, sets: dict, defaults: Optional[dict] = None, *,
          instance: Optional[str] = None, given: Optional[dict] = None) -> Program:
    return Program(_compile(text, path, sets), path=path, text=text, sets=sets, from_ir=False,
                   defaults=defaults, instance=instance, given=given)


def load(path: str, set: Optional[dict] = None, instance: Optional[str] = None) -> Program:
    """A program from a ``.sq`` file (linked with the inputs ``set``) or an IR
    file (``.json``, validated).  An instance file (``instance=``) gives its
    runs' settings and input values, under ``set`` and ``run``'s arguments; a
    run without a horizon reads the program's default instance
    (``instances/NAME.sq`` beside it), as ``serq run`` does."""
    from ..diag import read_text
    from .. import args
    path = args.path("serq.load", "path", path)
    instance = args.path("serq.load", "instance", instance, optional=True)
    if set is not None and not isinstance(set, dict):
        raise args.wrong("serq.load", "set", "a dict of inputs", set)
    if path.endswith(".json"):
        if set:
            raise usage("set= is refused on an IR file: its constants are already folded",
                        help="give set= to the .sq program")
        if instance is not None:
            raise usage("instance= is refused on an IR file: it holds its settings",
                        help="give prog.run(horizon=…, seed=…)")
        from .. import ir
        return Program(ir.read(path), path=path, text=None, sets={}, from_ir=True)
    text = read_text(path)
    if instance is None:
        return _link(text, path, set_texts(set))
    from ..instance import resolve
    run = resolve(path, instance, {}, set_texts(set), default=False)
    return _link(text, path, run.values, run.settings, instance=run.instance, given=run.given)


def loads(text: str, set: Optional[dict] = None, path: str = "<string>") -> Program:
    """A program from its source text; ``path`` names it in errors (and
    relative ``use`` and trace paths are read from its folder)."""
    from .. import args
    args.text("serq.loads", "text", text)
    args.text("serq.loads", "path", path)
    if set is not None and not isinstance(set, dict):
        raise args.wrong("serq.loads", "set", "a dict of inputs", set)
    if text.lstrip().startswith("{"):
        if set:
            raise usage("set= is refused on IR: its constants are already folded",
                        help="give set= to the program's source")
        from .. import ir
        program = ir.loads(text, path)
        ir.validate(program)
        return Program(program, path=path, text=None, sets={}, from_ir=True)
    return _link(text, path, set_texts(set))
