"""The `serq` command.  Exit status: 0 done (a run that finished, whatever
its notes say: stuck sessions and a growing queue are results, not
failures), 1 a program error (printed as `path:line:col: error[CODE]: …`)
or a run that did not finish, 2 a usage error, 3 a bug of serq (`internal
error: …`; `SERQ_DEBUG=1` shows its traceback), 130 interrupted (Ctrl-C),
143 and 129 stopped by SIGTERM and SIGHUP (serq/signals.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import sys
import traceback
from typing import Optional

import click

from .diag import SerqError
from .options import STDOUT, Out, Path, nonneg, positive, seed_value

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
DUMP = "serq run --dump"


class _Group(click.Group):
    # commands imported when first asked for (a command's start-up pays only
    # for what it runs): name -> (module, attribute)
    lazy: dict = {}

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name in self.lazy and name not in self.commands:
            import importlib
            module, attr = self.lazy[name]
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

    def main(self, *args, **kwargs):
        # click's own lines (outside make_context and invoke, below) catch a
        # signal's exception and say `Aborted!`: there a signal waits
        from .signals import outside
        with outside():
            return super().main(*args, **kwargs)

    def parse_args(self, ctx, args):
        ctx.meta["serq.argv"] = list(args)     # the command's words, for a rerun under SERQ_DEBUG=1
        return super().parse_args(ctx, args)

    def make_context(self, info_name, args, parent=None, **extra):
        # a signal while the arguments are read: as during the command (click
        # would say `Aborted!` and exit 1)
        from .signals import ending, stopping
        try:
            with stopping():
                return super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt as e:
            words, code = ending(e)
            click.echo(words, err=True)
            sys.exit(code)

    def invoke(self, ctx):
        from .signals import ending, interruption, stopping
        line = ctx.meta.get("serq.argv", sys.argv[1:])
        try:
            with stopping():
                return super().invoke(ctx)
        except SerqError as e:
            click.echo(e.render(), err=True)
            sys.exit(1)
        except BrokenPipeError:  # pragma: no cover - `serq ir … | head`
            sys.exit(0)
        except KeyboardInterrupt as e:
            words, code = ending(e)
            click.echo(words, err=True)
            sys.exit(code)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as e:    # a bug of serq: said as one, never a bare traceback
            stop = interruption(e)
            if stop is not None:  # (a signal's exception, wrapped on its way: the signal's)
                words, code = ending(stop)
                click.echo(words, err=True)
                sys.exit(code)
            internal_error(e, line)


def version() -> str:
    from .about import version as _version
    return _version()


def internal_error(e: Exception, line: list) -> None:
    """Report an unexpected exception (a bug of serq) and exit 3; with
    ``SERQ_DEBUG=1``, its traceback first.  ``line``: the command's words."""
    if os.environ.get("SERQ_DEBUG") == "1":
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    text = str(e).strip().split("\n")[0][:200]
    click.echo(f"internal error: {type(e).__name__}{': ' + text if text else ''} (serq {version()})", err=True)
    if os.environ.get("SERQ_DEBUG") != "1":
        again = shlex.join(["serq"] + list(line))
        click.echo(f"  this is a bug of serq, not of the program; to see where, run it again as\n"
                   f"    SERQ_DEBUG=1 {again}", err=True)
    sys.exit(EXIT_INTERNAL)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="serq")
def main():
    """serQ: a serving deployment is a program — simulate it, check it against
    vLLM's scheduler, state it in Lean."""


INPUTS_HINT = "the inputs after --"


def _sets(values: tuple[str, ...], inputs: tuple[str, ...] = ()) -> dict:
    """``--set NAME=EXPR`` and the inputs after ``--`` (``NAME=EXPR`` each), as
    name -> expression text; a malformed one is a usage error naming where it
    was given."""
    out = {}
    for hint, given in (("--set", values), (INPUTS_HINT, inputs)):
        for v in given:
            if "=" not in v:
                raise click.BadParameter(f"`{v}` is not name=expr", param_hint=hint)
            name, expr = v.split("=", 1)
            name = name.strip()
            if not name.isidentifier():
                raise click.BadParameter(f"`{name}` is not a name", param_hint=hint)
            if not expr.strip():
                raise click.BadParameter(f"`{name}=` has no value", param_hint=hint)
            if name in out:
                raise click.BadParameter(f"`{name}` is given twice ({name}={out[name]} and {name}={expr}); "
                                         "give each input once", param_hint=hint)
            out[name] = expr
    return out


def load_program(path: str, sets: tuple = (), **kw):
    """A program from `.sq` source (linked) or `.json` IR (validated), with the
    execution settings given on the command line, an instance file
    (`--instance`, or the program's default instance when no horizon is
    given) and the inputs after `--` (``load_run``'s keywords)."""
    return load_run(path, sets, **kw)[0]


def load_run(path: str, sets: tuple = (), *, horizon: Optional[float] = None,
             warmup: Optional[float] = None, seed: Optional[int] = None,
             arrivals: Optional[int] = None, trace: Optional[str] = None,
             need_horizon: bool = True, instance: Optional[str] = None, inputs: tuple = (),
             default_instance: bool = True):
    """``(program, origin)``: ``load_program``'s program, and what the report
    says made it (``simulate(origin=…)``: the path, the instance file read,
    the inputs given)."""
    from . import ir
    if path.endswith(".json"):
        if sets or inputs:
            raise click.UsageError("--set is refused on an IR file: its constants are already folded; "
                                   "give --set to the .sq program")
        if instance:
            raise click.UsageError("--instance is refused on an IR file: it holds its settings; "
                                   "give --horizon, --warmup, --seed, --arrivals or --trace")
        program = ir.read(path)
        if trace is not None and program.trace is None:
            raise click.UsageError(f"--trace {trace}: the program replays no trace, so there is none to "
                                   "replace")
        changes = {k: v for k, v in (("horizon", horizon), ("warmup", warmup), ("seed", seed),
                                     ("arrivals", arrivals), ("trace", trace)) if v is not None}
        if changes:
            program = dataclasses.replace(program, **changes)
            ir.validate(program)
        return program, {"program": path, "instance": None, "inputs": None}
    from . import instance as inst
    flags = {"horizon": horizon, "warmup": warmup, "seed": seed, "arrivals": arrivals, "trace": trace}
    run = inst.resolve(path, instance, flags, _sets(sets, inputs), default=default_instance)
    if run.note is not None:
        click.echo(run.note, err=True)
    settings = run.settings
    if need_horizon and settings.get("horizon") is None:
        raise click.UsageError(
            "no horizon: a model says what the deployment is, the run says how long. Give "
            "--horizon T (and --warmup, --seed), or an instance file with --instance FILE "
            f"(`run {{ horizon T; warmup W; }}`); `{inst.default_path(path)}` would be this program's "
            "default instance")
    from .link import compile_file
    program = compile_file(path, sets=run.values, horizon=settings.get("horizon"),
                           warmup=settings.get("warmup") or 0.0,
                           seed=1 if settings.get("seed") is None else settings["seed"],
                           arrivals=settings.get("arrivals"), trace=settings.get("trace"))
    return program, {"program": path, "instance": run.instance, "inputs": run.given}


_file = click.argument("file", type=Path(dir_okay=False))
# what a command writes goes through serq/files.py: a file it did not make is
# not written over, nor a dump into a directory holding other files, but
# with --force; an input of the command never
_force = click.option("--force", is_flag=True,
                      help="write over an output file (or into a dump directory) this command did not make")
_inputs = click.argument("inputs", nargs=-1, metavar="[-- NAME=VALUE...]")
_set = click.option("--set", "sets", multiple=True, metavar="NAME=EXPR",
                    help="give an input (declared with args.number) a value")


def _run_options(f):
    f = click.option("--instance", type=Path(dir_okay=False),
                     help="an instance file: `run { horizon T; warmup W; seed N; NAME value; }`")(f)
    f = click.option("--trace", type=Path(dir_okay=False), help="replace the program's trace")(f)
    f = click.option("--arrivals", type=click.IntRange(min=1), help="run exactly N arrivals and drain")(f)
    f = click.option("--warmup", type=float, callback=nonneg, help="time discarded before recording")(f)
    f = click.option("--horizon", type=float, callback=positive, help="the run's length")(f)
    f = click.option("--seed", type=int, callback=seed_value, help="random seed (default 1)")(f)
    return f


@main.command()
@_file
@_set
@_inputs
def check(file, sets, inputs):
    """Parse, resolve every name, fold the constants, lint; print a summary."""
    program = load_program(file, sets, need_horizon=False, inputs=inputs, default_instance=False)
    click.echo(summary(file, program))


@main.command()
@_file
@_set
@click.option("--instance", type=Path(dir_okay=False),
              help="an instance file whose values to show (default: the program's, instances/NAME.sq)")
@click.option("--json", "as_json", is_flag=True, help="print the inputs as JSON")
@_inputs
def inputs(file, sets, instance, as_json, inputs):
    """The program's inputs: each `args.number`, its default, the value given
    it (--set, an instance file) and the comment after it (its unit)."""
    if file.endswith(".json"):
        raise click.UsageError("an IR file has no inputs: its constants are folded; give the .sq program")
    from . import instance as inst
    from .diag import read_text
    from .link import inputs as I
    run = inst.resolve(file, instance, {}, _sets(sets, inputs))
    found = I.program_inputs(read_text(file), file, run.values, run.given)
    if as_json:
        click.echo(json.dumps(I.as_json(found), indent=1, allow_nan=False))
    else:
        click.echo(I.text(file, found))


def summary(file: str, p) -> str:
    from .ir import model as M

    def kind(s):
        k = s.kind
        if type(k) is M.KFifo:
            return f"fifo({k.servers})"
        if type(k) is M.KPs:
            return "ps"
        if type(k) is M.KDelay:
            return "delay"
        return "engine"

    def fam(decls, label):
        seen, out = set(), []
        for d in decls:
            if d.name in seen:
                continue
            seen.add(d.name)
            n = sum(1 for x in decls if x.name == d.name)
            out.append(label(d) + (f"[{n}]" if d.index is not None else ""))
        return out

    pools = fam(p.pools, lambda d: d.name)
    stages = fam(p.stages, lambda d: f"{d.name}: {kind(d)}")
    lines = [f"{file}: ok",
             f"  pools    {len(pools)}: {', '.join(pools) or '-'}",
             f"  stages   {len(stages)}: {', '.join(stages) or '-'}",
             f"  observes {len(p.observes)}: {', '.join(p.observes) or '-'}",
             f"  gauges   {len(p.gauges)}: {', '.join(g.name for g in p.gauges) or '-'}",
             f"  claims   {len(p.claims)}: {', '.join(c.name for c in p.claims) or '-'}"]
    return "\n".join(lines)


@main.command(name="ir")
@_file
@_set
@_run_options
@click.option("--inline-trace", is_flag=True, help="write an ordered trace in as explicit sessions")
@_inputs
def ir_cmd(file, sets, seed, horizon, warmup, arrivals, trace, instance, inline_trace, inputs):
    """Print the program's IR as canonical JSON (without a horizon or an
    instance, for inspection: its horizon is a placeholder, 1)."""
    from . import ir
    program = load_program(file, sets, horizon=horizon, warmup=warmup, seed=seed, arrivals=arrivals,
                           trace=trace, instance=instance, inputs=inputs, need_horizon=False)
    if inline_trace:
        from .ir.trace import inline_trace as inline
        program = inline(program)
        ir.validate(program)
    click.echo(ir.dumps(program), nl=False)


@main.command()
@_file
@_set
@_run_options
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option("--dump", type=Out(file_okay=False, why=", not a directory"), help="write one CSV per observe to DIR")
@click.option("--claims-only", is_flag=True, help="print the claims' verdicts; exit 1 if one fails")
@click.option("--max-events", type=click.IntRange(min=1), help="stop the run after N events")
@click.option("--max-seconds", type=float, callback=positive, help="stop the run after S seconds")
@click.option("--no-strokes", is_flag=True,
              help="run every engine iteration step by step (the same report; slower)")
@_force
@_inputs
def run(file, sets, seed, horizon, warmup, arrivals, trace, instance, as_json, dump, claims_only, max_events,
        max_seconds, no_strokes, force, inputs):
    """Simulate the program and print its report.  The run's length comes from
    --horizon, an instance file (--instance), or the program's default
    instance (instances/NAME.sq beside it); inputs from --set or after --.
    A run that stops before its end (--max-events, --max-seconds, Ctrl-C)
    prints what it measured, marked partial, and writes no --json or --dump;
    it exits 1 (130 for Ctrl-C)."""
    from . import files
    written_from = [file, instance, trace]
    if dump:
        files.check_tree(dump, what="--dump ", command=DUMP, force=force, inputs=written_from)
    program, origin = load_run(file, sets, horizon=horizon, warmup=warmup, seed=seed, arrivals=arrivals,
                               trace=trace, instance=instance, inputs=inputs)
    from . import sim
    try:
        with _ctrl_c() as stop:
            report = sim.simulate(program, progress=True, samples=bool(dump), max_events=max_events,
                                  max_seconds=max_seconds, interrupt=stop, strokes=not no_strokes,
                                  origin=origin)
    except sim.RunStopped as stopped:
        if not (as_json or dump or claims_only) and stopped.report is not None:
            click.echo(stopped.report.text())
        click.echo(stopped.render(), err=True)
        if as_json or dump:
            click.echo("  nothing written: --json and --dump are written only by a run that finished",
                       err=True)
        sys.exit(EXIT_INTERRUPTED if stopped.reason == "interrupt" else 1)
    if stop.is_set():       # Ctrl-C as the run ended, after its last check: it stops as at a check
        raise KeyboardInterrupt
    if dump:
        from .signals import landing
        with landing():           # once the dump is in place, a signal no longer stops the run
            report.dump(dump, force=force, inputs=written_from + files.read_by(program))
    if claims_only:
        data = report.data()
        failed = False
        for c in data.get("claims", []):
            click.echo(f"{c['name']}: {c['verdict']}")
            failed |= c["verdict"] == "fails"
        sys.exit(1 if failed else 0)
    if as_json:
        click.echo(json.dumps(report.data(), sort_keys=True, indent=1, allow_nan=False))
    else:
        click.echo(report.text())



@main.command()
@_file
@_set
@click.option("--view", type=click.Choice(["deployment", "session"]), default="deployment",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(["svg", "tikz", "png"]),
              help="the figure's format (default: --out's extension, .svg, .tex or .png; else svg)")
@click.option("--out", type=Out(dir_okay=False, stdout=True), help="write to a file instead of stdout (-: stdout)")
@_force
def draw(file, sets, view, fmt, out, force):
    """Draw the deployment or the session as a figure: SVG, TikZ or PNG (PNG
    needs matplotlib, serq[plot]).  What the figure could not show is said on
    stderr."""
    from . import files
    from .draw import EXTENSIONS as ext
    stdout = out == STDOUT          # (`--out -`: as without --out, a PNG too)
    if stdout:
        out = None
    if out and fmt is None:
        fmt = ext.get(os.path.splitext(out)[1].lower())
        if fmt is None:
            raise click.BadParameter(f"{out}: a figure is .svg, .tex or .png (or say --format)",
                                     param_hint="--out")
    fmt = fmt or "svg"
    if out and os.path.splitext(out)[1].lower() in ext and ext[os.path.splitext(out)[1].lower()] != fmt:
        raise click.BadParameter(f"--format {fmt} into {out}: the extension says "
                                 f"{ext[os.path.splitext(out)[1].lower()]}", param_hint="--out")
    if fmt == "png" and not out and not stdout:
        raise click.UsageError("a PNG is written to a file: give --out FIGURE.png (or --out - for stdout)")
    program = load_program(file, sets, need_horizon=False)
    reads = [file] + files.read_by(program)     # (the trace the program names too)
    if out:
        files.check_file(out, what="--out ", mark=files.DRAW, force=force, inputs=reads)
    if fmt == "png":
        from .api.extras import extra
        extra("matplotlib", "plot")       # refused before anything is drawn or written
    from .draw import draw as draw_figure
    text, notes = draw_figure(program, view=view, fmt=fmt)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if out:
        files.write_file(out, text, what="--out ", mark=files.DRAW, force=force, inputs=reads)
    else:
        click.echo(text, nl=False)


class _ctrl_c:
    """While a run runs, Ctrl-C asks it to stop at its next check (a partial
    report); a second Ctrl-C interrupts at once."""

    def __init__(self):
        self.flag = False

    def is_set(self) -> bool:
        return self.flag

    def _handler(self, signum, frame):
        if self.flag:
            from .signals import stop_now
            stop_now(signum, frame)
        self.flag = True

    def __enter__(self):
        self.old = signal.getsignal(signal.SIGINT)
        if self.old != signal.SIG_IGN:       # (a script's `serq run … &` ignores Ctrl-C)
            signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        signal.signal(signal.SIGINT, self.old)
        return False


# ---------------------------------------------------------------- the vLLM oracle

@main.group()
@click.option("--link-each", "link_each", is_flag=True,
              help="link the program in full for every scenario, not once per shape of its inputs "
                   "(the plain path, to the same IR: serq/link/shapes.py)")
@click.pass_context
def oracle(ctx, link_each):
    """vLLM's real scheduler as the oracle: scenarios, agreement, divergence."""
    if link_each:
        from .api.harness import linking
        ctx.with_resource(linking("each"))


# the programs the oracle commands run: one home, serq/oracle/programs.py
from .oracle.programs import (mooncake_program, pd_program, program_for_scenario,  # noqa: E402,F401
                              program_for_trace, scenario_program, trace_program)


def _oracle_json(out: dict) -> str:
    """The harness's layout: one top-level key per line."""
    keys = [k for k in ("first", "done", "preemptions", "steps", "requests") if k in out]
    if "requests" in out:
        rows = ",\n".join("  " + json.dumps(r) for r in out["requests"])
        more = "".join(f",\n{json.dumps(k)}: {json.dumps(out[k])}" for k in ("preemptions", "vllm") if k in out)
        return "{\"requests\": [\n" + rows + "\n],\n\"steps\": " + json.dumps(out["steps"]) + more + "}"
    return "{" + ",\n".join(json.dumps(k) + ": " + json.dumps(out[k]) for k in keys) + "}"


_program_opt = click.option("--program", "program", type=Path(dir_okay=False),
                            help="check this program's engine (one `serq target` accepts) instead of "
                                 "the oracle's own program")


class Checked:
    """A scenario compiled for the oracle: the program, how to read its
    outcome and how to run it."""

    def __init__(self, s: dict, p, kv: str = "kv", client: bool = False):
        self.s, self.p, self.kv, self.client = s, p, kv, client

    def run(self, step_log: bool = False):
        from .oracle import outcome as O
        from .sim import simulate
        rep = simulate(self.p, step_log=step_log, client_log=self.client)
        out = (O.client_outcome(rep, self.p, self.kv) if self.client
               else O.scenario_outcome(rep, self.p))
        return out, rep


def checked(scenario: str, program: Optional[str] = None, sets: tuple = ()) -> Checked:
    """SCENARIO.json for the oracle program of its policy, or with --program
    for PROG.sq's engine: its numbers the scenario's, its requests as
    explicit sessions (serq.link.requests)."""
    from .oracle import scenario as S
    s = S.load(scenario)
    if program is None:
        if sets:
            raise click.UsageError("--set is for --program: the oracle's own program takes the scenario's engine")
        return Checked(s, program_for_scenario(s))
    return Checked(s, *program_with_requests(program, s, sets), client=True)


def program_with_requests(program: str, s: dict, sets: tuple = ()):
    """(IR, KV pool name) of PROG.sq's engine under the scenario."""
    from .ir import validate
    from .link import compile_file
    from .link.requests import compile_requests
    from .oracle import scenario as S, target as T
    p0 = compile_file(program, sets=_sets(sets))
    t = T.vllm(p0)
    names = dict(prompt="oracle_prompt", out="oracle_out", arrive="oracle_arrive",
                 priority=p0.attrs[t.priority_attr] if t.priority_attr is not None else None)
    p = compile_requests(program, _sets(sets), horizon=S.horizon(s), priority=names["priority"],
                         t0=p0.attrs[t.t0_attr] if t.t0_attr is not None else None)
    t = T.vllm(p)
    p = S.with_sessions(T.instantiate(p, t, s), s, names)
    validate(p)
    return p, p.pools[t.kv].name


@oracle.command(name="run")
@click.argument("scenario", type=Path(dir_okay=False))
@_program_opt
@_set
def oracle_run(scenario, program, sets):
    """Run the oracle program on SCENARIO.json; print what the harness prints."""
    out, _ = checked(scenario, program, sets).run()
    click.echo(_oracle_json(out))


@oracle.command(name="diff")
@click.argument("scenario", type=Path(dir_okay=False))
@_program_opt
@_set
def oracle_diff(scenario, program, sets):
    """Run SCENARIO.json through serQ and vLLM's real scheduler; print the first
    step where they disagree (what each scheduled, admitted, preempted) or `agree`."""
    import time
    from .oracle import divergence as D, outcome as O
    from .oracle.vllm import run_once
    t0 = time.perf_counter()
    c = checked(scenario, program, sets)
    ours, rep = c.run(step_log=True)
    t_ours = time.perf_counter() - t0
    theirs, t_vllm = run_once(scenario, steps=True)
    text = D.report(D.ours_by_step(rep.step_log, c.s["block_size"]), D.theirs_by_step(theirs["log"]))
    fields = O.diff(ours, theirs)
    _verdict(text, fields, "steps", t_ours, t_vllm)


def _verdict(text: str, fields: list, what: str, t_ours: float, t_vllm: float, engine: str = "vLLM") -> None:
    """The first divergence (or `agree`), the fields that differ, both times;
    exit 0 only when both agree."""
    if text == "agree" and fields:
        text = f"the {what} agree but the outcomes differ"
    click.echo(text)
    for f in fields:
        click.echo(f"  {f}")
    click.echo(f"time: serQ {t_ours:.3f} s (link and run), {engine} harness {t_vllm:.2f} s "
               f"(process, {engine} import included): {t_vllm / t_ours:.0f}x")
    sys.exit(0 if text == "agree" and not fields else 1)


def _fuzz_options(what: str):
    def wrap(f):
        f = click.option("--out", "out_dir", type=Out(file_okay=False, why=", not a directory"), default="tools/oracle/found",
                         show_default=True, help="where a shrunk disagreement is written")(f)
        f = click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True, callback=seed_value,
                         help="the seed of the random inputs")(f)
        f = click.option("--force", is_flag=True, help="write over a file in --out this command did not make")(f)
        return click.option("--n", "n", type=click.IntRange(min=1), default=200, show_default=True,
                            help=f"random {what} to run")(f)
    return wrap


@oracle.command(name="fuzz")
@_fuzz_options("scenarios")
@click.option("--harness", "kind", type=click.Choice(["scenario", "replay", "mooncake"]), default="scenario",
              show_default=True, help="requests (scenario), or traffic whose requests share content: "
                                      "multi-turn sessions with shared system prompts (replay), "
                                      "Mooncake-format rows sharing hash ids (mooncake)")
def oracle_fuzz(n, seed, force, out_dir, kind):
    """Random scenarios through serQ and vLLM's real scheduler; a disagreement is
    shrunk to a minimal scenario and written with its first divergence."""
    _campaign(kind, n, seed, out_dir, force)


def _campaign(kind: str, n: int, seed: int, out_dir: str, force: bool, shrink: bool = True):
    """A campaign (serq/oracle/campaigns.py) with its progress on stderr."""
    from .oracle.campaigns import campaign
    c = campaign(kind, n=n, seed=seed, out=out_dir, force=force,
                 progress=lambda line: click.echo(line, err=True), shrink=shrink)
    click.echo(c.summary())
    sys.exit(0 if c.agree else 1)


@oracle.command(name="ir")
@click.argument("scenario", type=Path(dir_okay=False))
def oracle_ir(scenario):
    """Print the IR of the oracle program compiled for SCENARIO.json."""
    from .ir import dumps
    _, p = scenario_program(scenario)
    click.echo(dumps(p), nl=False)


@oracle.command(name="replay")
@click.argument("trace", type=Path(dir_okay=False))
def oracle_replay(trace):
    """Replay a prefix-cache TRACE.json with examples/replay/vllm_replay.sq on the step
    clock; print what tools/oracle/vllm_replay_oracle.py prints."""
    from .oracle import outcome as O
    from .sim import simulate
    _, p = trace_program(trace)
    click.echo(_oracle_json(O.trace_outcome(simulate(p), p)))


@oracle.command(name="replay-ir")
@click.argument("trace", type=Path(dir_okay=False))
def oracle_replay_ir(trace):
    """Print the IR of the replay program compiled for a prefix-cache TRACE.json."""
    from .ir import dumps
    _, p = trace_program(trace)
    click.echo(dumps(p), nl=False)


@main.command()
@click.argument("profile_dir", type=Path(file_okay=False))
@click.option("--program", type=Path(dir_okay=False),
              help="the program whose cost to fit (default examples/replay/vllm_measured.sq)")
@click.option("--out", type=Out(dir_okay=False, why=", where serq calibrate prints its report"), required=True,
              help="the instance file to write: the program's run settings and the fitted constants")
@click.option("--instance", type=Path(dir_okay=False),
              help="link the program with this instance file (default: its own)")
@_set
@click.option("--hold", multiple=True, metavar="NAME", help="keep this constant at its value (repeatable)")
@click.option("--fit", "free_too", multiple=True, metavar="NAME",
              help="fit a constant a profile does not measure (gap, ar_lat, ar_tok) all the same")
@click.option("--layers", type=click.IntRange(min=1), help="the model's layer count (default: the model table's)")
@click.option("--stage", multiple=True, metavar="NAME", help="fit this engine's cost only (repeatable)")
@click.option("--budget", type=click.IntRange(min=1),
              help="fit batches of at most N tokens (default: the profile's max_num_batched_tokens)")
@click.option("--max-seqs", type=click.IntRange(min=1),
              help="fit batches of at most N decodes (default: the profile's max_num_seqs)")
@click.option("--max-kv", type=float, callback=positive,
              help="fit batches whose KV lengths are at most N tokens (default: the profile's largest)")
@click.option("--link-bw", type=float, callback=positive,
              help="the interconnect's bandwidth, GB/s (a TP > 1 profile; sets ar_lat and ar_tok)")
@click.option("--link-latency", type=float, callback=nonneg, help="the interconnect's latency, µs")
@click.option("--comment", multiple=True, metavar="TEXT",
              help="a line for the instance file's header, e.g. where a held constant's value comes from")
@click.option("--run", "run_dir", type=Path(file_okay=False),
              help="fit again at the batches the program makes replaying this measured run's workload at its "
                   "engine settings (a bundle's bench/examples/<GPU>/<model>/; no measured time is read)")
@click.option("--workload", type=Path(dir_okay=False),
              help="with --run: the workload the run replayed (default: meta.json's dataset_path)")
@click.option("--json", "as_json", is_flag=True, help="print the calibration as JSON")
@_force
def calibrate(profile_dir, program, out, instance, sets, hold, free_too, layers, stage, budget, max_seqs, max_kv,
              link_bw, link_latency, comment, run_dir, workload, as_json, force):
    """Fit a program's iteration cost to a kernel profile (a bundle's
    `…/<variant>/tp<N>/` folder) and write an instance file with the
    constants."""
    from .api import calibration as C
    from .calib import report as R
    from . import files
    files.check_file(out, what="--out ", mark=files.CALIBRATE, force=force, inputs=[program, instance])
    res = C.calibrate(profile_dir, program, _sets(sets), hold=hold, free_too=free_too, layers=layers,
                      stages=stage, budget=budget, max_seqs=max_seqs, max_kv=max_kv, link_bw=link_bw,
                      link_latency=link_latency, instance=instance, comments=comment, run=run_dir,
                      workload=workload)
    files.write_file(out, res.instance_text, what="--out ", mark=files.CALIBRATE, force=force,
                     inputs=[program, instance, *res.reads])
    click.echo(R.dumps(R.calibrate_data(res, out)) if as_json else R.calibrate_text(res, out), nl=False)


@main.command()
@click.argument("bundle_dir", type=Path(file_okay=False))
@click.option("--program", type=Path(dir_okay=False),
              help="the program to replay the run through (default examples/replay/vllm_measured.sq)")
@click.option("--instance", type=Path(dir_okay=False),
              help="an instance file with the program's constants (e.g. one `serq calibrate` wrote)")
@_set
@click.option("--arrivals", "arrivals_from", type=click.Choice(["workload", "queued"]), default="workload",
              show_default=True, help="arrive at the workload's times, or when the run queued each request")
@click.option("--workload", type=Path(dir_okay=False),
              help="the workload the run replayed (default: meta.json's dataset_path in the bundle's repository)")
@click.option("--figure", type=Out(dir_okay=False, why=", where serq measured prints its report"),
              help="write predicted against measured per request, and the CDFs (.png or .svg)")
@click.option("--tune", "tune_spec", metavar="NAME=V1,V2,…",
              help="replay the run at each of these values of one constant (the host's `gap`, which no kernel "
                   "profile measures) and keep the one whose largest summary difference is least")
@click.option("--summary-only", is_flag=True, help="leave out the per-request table")
@click.option("--json", "as_json", is_flag=True, help="print everything as JSON (seconds)")
def measured(bundle_dir, program, instance, sets, arrivals_from, workload, figure, tune_spec, summary_only, as_json):
    """Replay a measured vLLM run (a bundle's `bench/examples/<GPU>/<model>/`
    folder) through a program at the run's engine settings; print each
    request's predicted and measured TTFT, TPOT and latency and the summary
    beside LLMServingSim's."""
    from .api import calibration as C
    from .calib import report as R
    given = _sets(sets)
    if tune_spec is not None:
        from .calib import tune as T
        name, values = T.parse(tune_spec)
        tuned = T.tune(bundle_dir, program, instance, given, name, values, arrivals=arrivals_from,
                       workload=workload, linker=C.link, declares=C.declares)
        res = tuned.chosen.result
    else:
        tuned, res = None, C.measured(bundle_dir, program, instance, given, arrivals=arrivals_from, workload=workload)
    if figure:
        from .plot.measured import figure as draw
        draw(res, figure)
    if tuned is not None:
        click.echo(R.dumps(R.tune_data(tuned)) if as_json else R.tune_text(tuned, not summary_only), nl=False)
    else:
        click.echo(R.dumps(R.measured_data(res)) if as_json else R.measured_text(res, not summary_only), nl=False)


@main.command()
@_file
@click.option("--engine", type=click.Choice(["vllm"]), required=True,
              help="the engine whose arguments to print")
@click.option("--json", "as_json", is_flag=True, help="print the arguments as JSON")
@_set
def target(file, engine, as_json, sets):
    """The engine arguments (vLLM 0.33.0) that PROGRAM's engine corresponds to,
    or why it corresponds to none."""
    from .oracle import target as T
    t = T.vllm(load_program(file, sets, need_horizon=False))
    if as_json:
        click.echo(json.dumps({k: t.args[k] for k in T.ORDER}, indent=1))
    else:
        click.echo(T.flags(t.args))


def _finite(ctx, param, value):
    import math
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


@main.command(name="mooncake-trace")
@click.option("--requests", type=click.IntRange(1, 1_000_000), default=1000, show_default=True,
              help="the trace's requests (its lines)")
@click.option("--rate", type=click.FloatRange(0, 1e6, min_open=True), default=3.0, show_default=True,
              callback=_finite, help="requests a second (Poisson arrivals)")
@click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True, callback=seed_value,
              help="the seed of the draws")
@click.option("--system", type=click.IntRange(0, 10_000_000), default=1024, show_default=True,
              help="the system prompt's tokens, the start of every conversation")
@click.option("--input", "input_", type=click.FloatRange(0, 1e7), default=2000.0, show_default=True,
              callback=_finite, help="a new message's mean tokens")
@click.option("--output", type=click.FloatRange(1, 1e7), default=300.0, show_default=True, callback=_finite,
              help="an answer's mean tokens")
@click.option("--follow", type=click.FloatRange(0, 1), default=0.5, show_default=True, callback=_finite,
              help="the chance that a request continues a conversation")
@click.option("--context", type=click.IntRange(1, 10_000_000), default=32768, show_default=True,
              help="a prompt's tokens at most")
@click.option("--out", type=Out(dir_okay=False, stdout=True), help="write to a file instead of stdout (-: stdout)")
@click.option("--force", is_flag=True, help="write over a --out file that is there")
def mooncake_trace(requests, rate, seed, system, input_, output, follow, context, out, force):
    """Write a trace in Mooncake's format made from a seed: Poisson arrivals,
    conversations sharing their prompts' 512-token blocks (docs/cli.md)."""
    from . import mooncake as MT
    if context <= system:
        raise click.BadParameter(f"a prompt of at most {context} tokens leaves no room after the system "
                                 f"prompt's {system}", param_hint="'--context'")
    try:
        rows = MT.generate(requests=requests, rate=rate, seed=seed, system=system, input=input_,
                           output=output, follow=follow, context=context)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--rate'") from None
    text = MT.text(rows)
    if out is None or out == STDOUT:
        click.echo(text, nl=False)
        return
    from . import files
    files.write_file(out, text, what="--out ", mark=files.MOONCAKE_TRACE, force=force)


@oracle.command(name="mooncake")
@click.argument("spec", type=Path(dir_okay=False))
@click.option("--vllm", "use_vllm", is_flag=True, help="replay it through vLLM's real scheduler instead")
@click.option("--diff", "use_diff", is_flag=True,
              help="both, and the first step where they part (or `agree`), with both times")
def oracle_mooncake(spec, use_vllm, use_diff):
    """Replay a Mooncake trace slice (SPEC.json) with examples/replay/mooncake.sq on the
    step clock; print what tools/oracle/vllm_mooncake_oracle.py prints."""
    import time
    from .oracle import mooncake as MC
    from .oracle.vllm import MOONCAKE, run_once
    from .sim import simulate
    if use_vllm and not use_diff:
        out, _ = run_once(spec, script=MOONCAKE)
        click.echo(_oracle_json(out))
        return
    t0 = time.perf_counter()
    s = MC.load(spec)
    p = mooncake_program(s)
    rep = simulate(p, step_log=use_diff)
    ours = MC.outcome(rep, s)
    t_ours = time.perf_counter() - t0
    if not use_diff:
        click.echo(_oracle_json(ours))
        return
    theirs, t_vllm = run_once(spec, steps=True, script=MOONCAKE)
    _replay_diff(rep, s, ours, theirs, MC.diff(ours, theirs),
                 f"{len(ours['requests'])} requests, {ours['preemptions']} preemptions, token hit rate "
                 f"{MC.token_hit_rate(s, ours):.4f} (vLLM {MC.token_hit_rate(s, theirs):.4f})", t_ours, t_vllm)


def _replay_diff(rep, s: dict, ours: dict, theirs: dict, fields: list, summary: str, t_ours: float,
                 t_vllm: float) -> None:
    """A replay harness's `--diff`: the first step where serQ's run and
    vLLM's log part (or `agree`), the outcome fields that differ, a summary
    and both times; exit 1 unless they agree."""
    from .oracle import divergence as D
    first = s["first"]
    mine = {k: {**r, "tokens": {str(int(i) + first): n for i, n in r["tokens"].items()},
                "admitted": [x + first for x in r["admitted"]], "preempted": [x + first for x in r["preempted"]]}
            for k, r in D.ours_by_step(rep.step_log, s["engine"]["block_size"]).items()}
    text = D.report(mine, D.theirs_by_step(theirs["log"]))
    if text == "agree" and fields:
        text = "the steps agree but the outcomes differ"
    click.echo(text)
    for f in fields[:20]:
        click.echo(f"  {f}")
    click.echo(summary)
    click.echo(f"time: serQ {t_ours:.3f} s (link and run), vLLM harness {t_vllm:.2f} s "
               f"(process, vLLM import included)")
    sys.exit(0 if text == "agree" and not fields else 1)


@oracle.command(name="measured")
@click.argument("spec", type=Path(dir_okay=False))
@click.option("--vllm", "use_vllm", is_flag=True, help="replay it through vLLM's real scheduler instead")
@click.option("--diff", "use_diff", is_flag=True,
              help="both, and the first step where they part (or `agree`), with both times")
@click.option("--vllm-version", type=click.Choice(sorted(("0.33.0", "0.19.0"))), default="0.33.0",
              show_default=True, help="the vLLM whose scheduler to run (0.19.0: make vllm-env-0.19)")
def oracle_measured(spec, use_vllm, use_diff, vllm_version):
    """Replay a measured run's workload (SPEC.json: its exact prompts and
    output lengths) with examples/replay/vllm_measured.sq on the step clock;
    print what tools/oracle/vllm_measured_oracle.py prints."""
    import time
    from .api.harness import harness_program
    from .oracle import measured as MS
    from .oracle.vllm import MEASURED, run_once
    from .sim import simulate
    if use_vllm and not use_diff:
        out, _ = run_once(spec, script=MEASURED, version=vllm_version)
        click.echo(_oracle_json(out))
        return
    t0 = time.perf_counter()
    s = MS.load(spec)
    s["free_fifo"] = vllm_version == "0.19.0"
    # (an "async" spec: the program's async_sched 1, whose last tokens the step log dates)
    rep = simulate(harness_program(MS, s), step_log=use_diff or bool(s.get("async")), client_log=True)
    ours = MS.outcome(rep, s)
    t_ours = time.perf_counter() - t0
    if not use_diff:
        click.echo(_oracle_json(ours))
        return
    theirs, t_vllm = run_once(spec, steps=True, script=MEASURED, version=vllm_version)
    _replay_diff(rep, s, ours, theirs, MS.diff(ours, theirs),
                 f"{len(ours['requests'])} requests, {ours['preemptions']} preemptions (vLLM {theirs['vllm']})",
                 t_ours, t_vllm)


# sweeps and plots: their commands live with them
main.lazy = {"sweep": ("serq.sweeps.command", "sweep"), "plot": ("serq.plot.command", "plot")}


# ---------------------------------------------------------------- the P/D oracle

@oracle.command(name="pd")
@click.argument("scenario", type=Path(dir_okay=False))
@click.option("--vllm", "use_vllm", is_flag=True,
              help="print what two of vLLM's real schedulers give (tools/oracle/vllm_pd_oracle.py)")
@click.option("--diff", "diff", is_flag=True,
              help="run both; print the first tick where they part (what each instance scheduled, "
                   "loaded, freed) or `agree`")
def oracle_pd(scenario, use_vllm, diff):
    """A prefill/decode SCENARIO.json through examples/oracle/vllm_pd.sq on the step
    clock; print serQ's answer in the harness's format."""
    import time
    from .oracle import pd as PD
    from .oracle.vllm import PD as HARNESS, run_once
    if use_vllm and not diff:
        theirs, _ = run_once(scenario, script=HARNESS)
        from .oracle.pd import dumps
        click.echo(dumps(theirs))
        return
    s = PD.load(scenario)
    t0 = time.perf_counter()
    p = pd_program(s)
    from .sim import simulate
    rep = simulate(p, step_log=diff)
    ours = PD.outcome(rep, p)
    t_ours = time.perf_counter() - t0
    if not diff:
        click.echo(PD.dumps(ours))
        return
    theirs, t_vllm = run_once(scenario, steps=True, script=HARNESS)
    text = PD.report(PD.ours_by_tick(rep.step_log, ours), PD.theirs_by_tick(theirs["log"]))
    fields = PD.diff(ours, theirs)
    _verdict(text, fields, "ticks", t_ours, t_vllm)


@oracle.command(name="pd-fuzz")
@_fuzz_options("P/D scenarios")
def oracle_pd_fuzz(n, seed, force, out_dir):
    """Random P/D scenarios through serQ and two of vLLM's real schedulers; a
    disagreement is shrunk to a minimal scenario and written with its first
    divergence."""
    _campaign("pd", n, seed, out_dir, force)


# ---------------------------------------------------------------- the SGLang oracle

@oracle.command(name="sglang")
@click.argument("scenario", type=Path(dir_okay=False))
@click.option("--sglang", "use_sglang", is_flag=True,
              help="print what SGLang 0.5.23's real scheduler gives (tools/oracle/sglang_oracle.py)")
@click.option("--diff", "diff", is_flag=True,
              help="run both; print the first step where they part (what each prefilled, decoded, "
                   "retracted) or `agree`")
def oracle_sglang(scenario, use_sglang, diff):
    """An SGLang SCENARIO.json through examples/oracle/sglang_request.sq on the step
    clock; print serQ's answer in the SGLang harness's format."""
    import time
    from .oracle.programs import sglang_program
    from .oracle import sglang as SG
    from .oracle.vllm import SGLANG, run_once
    s = SG.load(scenario)           # (checked before SGLang is asked)
    if use_sglang and not diff:
        theirs, _ = run_once(scenario, script=SGLANG)
        click.echo(SG.dumps(SG.check_output(theirs, "SGLang's output")))
        return
    t0 = time.perf_counter()
    p = sglang_program(s)
    from .sim import simulate
    rep = simulate(p, step_log=diff)
    ours = SG.outcome(rep, p, s.get("overlap", False))
    t_ours = time.perf_counter() - t0
    if not diff:
        click.echo(SG.dumps(ours))
        return
    theirs, t_sg = run_once(scenario, steps=True, script=SGLANG)
    SG.check_output(theirs, "SGLang's output")
    text = SG.report(SG.ours_by_step(rep.step_log, ours), SG.theirs_by_step(theirs["log"]))
    fields = SG.diff(ours, theirs)
    _verdict(text, fields, "steps", t_ours, t_sg, engine="SGLang")


@oracle.command(name="sglang-fuzz")
@_fuzz_options("SGLang scenarios")
@click.option("--no-shrink", "no_shrink", is_flag=True,
              help="count the disagreements without shrinking them (nothing is written)")
def oracle_sglang_fuzz(n, seed, force, out_dir, no_shrink):
    """Random SGLang scenarios through serQ and SGLang's real scheduler; a
    disagreement is shrunk to a minimal scenario and written with its first
    divergence."""
    _campaign("sglang", n, seed, out_dir, force, shrink=not no_shrink)


if __name__ == "__main__":  # pragma: no cover - `python -m serq.cli`, as the `serq` command
    from .signals import entry
    entry(main)
