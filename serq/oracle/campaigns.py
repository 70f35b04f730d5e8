"""Random inputs through serQ and vLLM's real scheduler, side by side: what
`serq oracle fuzz` and `serq oracle pd-fuzz` run, and, from Python,
``serq.oracle.campaign(harness, n=, seed=)``.

A harness is one of HARNESSES: ``scenario`` (requests, tools/oracle/vllm_oracle.py),
``replay`` (multi-turn sessions with shared system prompts), ``mooncake``
(Mooncake-format rows sharing hash ids), ``pd`` (prefill/decode, two
schedulers), ``sglang`` (SGLang 0.5.23's scheduler, tools/oracle/sglang_oracle.py).  Input i of a seed is drawn from its own stream, so a campaign
of n inputs is the first n of any longer one.  A disagreement is shrunk
greedily to a smaller input that still disagrees and, when ``out`` is given,
written there as ``NAME.json`` with ``NAME.divergence.txt`` (the first
step or tick where the two part, then the fields that differ).

A run-time error of serQ's on an input is an outcome with no requests (its
message kept), which disagrees with every answer of vLLM's."""

from __future__ import annotations

import dataclasses
import json
import random
import time
from typing import Callable, Optional

from ..diag import Diagnostic, SerqError

HARNESSES = ("scenario", "replay", "mooncake", "pd", "sglang")


@dataclasses.dataclass
class Disagreement:
    """Input ``index`` of the campaign disagreed: the input, its shrunk form,
    the fields that differ on the shrunk one (in words), its first divergence
    (text), and the file it was written to (or None)."""
    index: int
    scenario: dict
    shrunk: dict
    differences: list
    divergence: str
    path: Optional[str] = None


@dataclasses.dataclass
class Campaign:
    """What a campaign found: ``disagreements`` (empty: every input agreed) and
    the seconds spent: ``serq`` (link and run; ``link``, ``run`` apart),
    ``vllm`` (answers after the first), ``start`` (the harness's start and
    first answer) and ``wall``."""
    harness: str
    n: int
    seed: int
    disagreements: list
    seconds: dict

    @property
    def agree(self) -> bool:
        return not self.disagreements

    def summary(self) -> str:
        """The line `serq oracle fuzz/pd-fuzz` ends with."""
        s, n, found = self.seconds, self.n, len(self.disagreements)
        rate = n / s["wall"] if s["wall"] else float("inf")
        vllm = f"vLLM {1000 * s['vllm'] / max(1, n - 1):.1f} ms after a {s['start']:.1f} s start"
        if self.harness == "pd":
            return (f"pd-fuzz: {n} scenarios (seed {self.seed}), {found} disagreed; {rate:.1f} scenarios/s "
                    f"(serQ {1000 * s['serq'] / n:.1f} ms per scenario: link {1000 * s['link'] / n:.1f}, "
                    f"run {1000 * s['run'] / n:.1f}; {vllm})")
        if self.harness == "sglang":
            return (f"sglang-fuzz: {n} scenarios (seed {self.seed}), {found} disagreed; {rate:.1f} scenarios/s "
                    f"(serQ {1000 * s['serq'] / n:.1f} ms per scenario, "
                    f"SGLang {1000 * s['vllm'] / max(1, n - 1):.1f} ms after a {s['start']:.1f} s start)")
        if self.harness == "scenario":
            return (f"fuzz: {n} scenarios (seed {self.seed}), {found} disagreed; {rate:.1f} scenarios/s "
                    f"(serQ {1000 * s['serq'] / n:.1f} ms per scenario, {vllm})")
        return (f"fuzz: {n} {self.harness} inputs with shared content (seed {self.seed}), {found} disagreed; "
                f"{rate:.1f} inputs/s (serQ {1000 * s['serq'] / n:.1f} ms each, {vllm})")

    def __str__(self) -> str:
        lines = [self.summary()]
        for d in self.disagreements:
            lines.append(f"input {d.index}: {'; '.join(d.differences[:3])}"
                         + (f" (shrunk to {d.path})" if d.path else ""))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html
        return "<pre>" + html.escape(str(self)) + "</pre>"


@dataclasses.dataclass
class _Kind:
    """One harness: its inputs, serQ's side, the comparison and the shrinking."""
    script: str
    prefix: str                                    # a written input's name: PREFIX SEED _ INDEX
    label: str                                     # one input, in the progress lines
    unit: str                                      # what the progress counts
    generate: Callable[[int, int], dict]           # (seed, i) -> input
    program: Callable[[dict], object]              # input -> IR (checks it)
    outcome: Callable[[object, object, dict], dict]   # (report, IR, input) -> the harness's format
    diff: Callable[[dict, dict], list]
    shrink: Callable[[dict, Callable[[dict], bool]], dict]
    divergence: Optional[Callable[[object, dict, dict, dict], str]] = None   # (report, ours, theirs' log, input)


def _kind(name: str) -> _Kind:
    from . import divergence as D, fuzz as F, outcome as O, vllm as V
    from . import programs as A
    if name == "scenario":
        return _Kind(V.HARNESS, "s", "scenario", "scenarios", lambda seed, i: F.generate(random.Random(f"{seed}:{i}"), i),
                     A.program_for_scenario, lambda rep, p, s: O.scenario_outcome(rep, p), O.diff, F.shrink,
                     lambda rep, ours, log, s: D.report(D.ours_by_step(rep.step_log, s["block_size"]),
                                                        D.theirs_by_step(log)))
    if name == "pd":
        from . import pd as PD, pd_fuzz as G
        return _Kind(V.PD, "pd_s", "scenario", "scenarios", G.generate, A.pd_program,
                     lambda rep, p, s: PD.outcome(rep, p), PD.diff,
                     lambda s, bad: F.shrink_with(s, bad, F.pd_candidates, G.feasible),
                     lambda rep, ours, log, s: PD.report(PD.ours_by_tick(rep.step_log, ours),
                                                         PD.theirs_by_tick(log)))
    if name == "sglang":
        from . import sglang as SG, sglang_fuzz as G
        return _Kind(V.SGLANG, "sglang_s", "scenario", "scenarios", G.generate, A.sglang_program,
                     lambda rep, p, s: SG.outcome(rep, p, s.get("overlap", False)), SG.diff,
                     lambda s, bad: F.shrink_with(s, bad, F.sglang_candidates, G.feasible),
                     lambda rep, ours, log, s: SG.report(SG.ours_by_step(rep.step_log, ours),
                                                         SG.theirs_by_step(log)))
    if name == "mooncake":
        from . import mooncake as MC

        def program(s):
            return A.mooncake_program(MC.check(s, "fuzz"))

        def outcome(rep, p, s):
            return MC.outcome(rep, MC.check(s, "fuzz"))
        return _Kind(V.MOONCAKE, "mooncake_s", "mooncake", "mooncake inputs",
                     lambda seed, i: F.generate_mooncake(random.Random(f"{seed}:{i}"), i), program,
                     outcome, MC.diff,
                     lambda s, bad: F.shrink_with(s, bad, F.candidates_mooncake, F.feasible_mooncake))
    if name == "replay":
        from .replay import check

        def program(t):
            check(t, "fuzz")
            return A.program_for_trace(t)
        return _Kind(V.REPLAY, "replay_s", "replay", "replay inputs",
                     lambda seed, i: F.generate_replay(random.Random(f"{seed}:{i}"), i), program,
                     lambda rep, p, s: O.trace_outcome(rep, p), O.diff,
                     lambda s, bad: F.shrink_with(s, bad, F.candidates_replay, F.feasible_replay))
    raise SerqError(Diagnostic("E964", f"no oracle harness {name!r}",
                               help="a harness is one of " + ", ".join(HARNESSES)))


def _ours(kind: _Kind, s: dict, log: bool = False, clock: Optional[list] = None):
    """(serQ's outcome, the report or None)."""
    from ..sim import simulate
    try:
        a = time.perf_counter()
        p = kind.program(s)
        b = time.perf_counter()
        rep = simulate(p, step_log=log)
        out = kind.outcome(rep, p, s)
        if clock is not None:
            clock[0] += b - a
            clock[1] += time.perf_counter() - b
    except SerqError as e:
        return {"requests": [], "ticks": None, "error": e.render()}, None
    return out, rep


def campaign(harness: str = "scenario", n: int = 200, seed: int = 1, out: Optional[str] = None,
             progress: Optional[Callable[[str], None]] = None, force: bool = False,
             shrink: bool = True) -> Campaign:
    """Run ``n`` random inputs of ``harness`` through serQ and vLLM (needs
    ``.venv-vllm``: `make vllm-env`; ``sglang``: ``.venv-sglang``); with
    ``shrink`` (the default) shrink each disagreement and, with ``out``, write
    it there (a directory of found inputs: a file of that name the campaign
    did not make is refused, unless ``force``; serq/files.py).  ``progress``
    receives a line every 100 inputs and one per disagreement."""
    from .. import args, files
    from .vllm import Harness
    if not isinstance(harness, str):
        raise args.wrong("serq.oracle.campaign", "harness", "a str", harness)
    if progress is not None and not callable(progress):
        raise args.wrong("serq.oracle.campaign", "progress", "a function of a line", progress)
    shrink = args.flag("serq.oracle.campaign", "shrink", shrink)
    if out is not None:
        out = files.Collection(args.path("serq.oracle.campaign", "out", out), what="--out ",
                               command="serq oracle fuzz", force=args.flag("serq.oracle.campaign", "force", force))
        out.check()
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SerqError(Diagnostic("E964", f"a campaign runs n ≥ 1 inputs, not {n!r}"))
    from ..ir.model import SEEDS, SEEDS_TEXT
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < SEEDS:
        raise SerqError(Diagnostic("E964", f"a campaign's seed is {SEEDS_TEXT}, not {seed!r}"))
    kind = _kind(harness)
    say = progress or (lambda line: None)
    found: list = []
    clock = [0.0, 0.0]
    t_vllm = 0.0
    t0 = time.perf_counter()
    with Harness(script=kind.script) as h:
        def disagrees(c):
            return bool(kind.diff(_ours(kind, c)[0], h.ask(c)))
        for i in range(n):
            s = kind.generate(seed, i)
            mine = _ours(kind, s, clock=clock)[0]
            b = time.perf_counter()
            theirs = h.ask(s)
            t_vllm += time.perf_counter() - b if i else 0.0
            d = kind.diff(mine, theirs)
            if d:
                if shrink:
                    found.append(_record(kind, h, s, i, d, disagrees, seed, out, say))
                else:
                    found.append(Disagreement(i, s, s, d, "", None))
                    say(f"{kind.label} {i}: DISAGREE ({'; '.join(d[:3])})")
            if (i + 1) % 100 == 0:
                say(f"  {i + 1}/{n} {kind.unit}, {len(found)} disagreeing")
        start = h.startup
    wall = time.perf_counter() - t0
    return Campaign(harness, n, seed, found, {"serq": clock[0] + clock[1], "link": clock[0], "run": clock[1],
                                              "vllm": t_vllm, "start": start, "wall": wall})


def _record(kind: _Kind, h, s: dict, i: int, d: list, disagrees, seed: int, out, say) -> Disagreement:
    """Shrink a disagreeing input, find its first divergence, write both."""
    from .vllm import Harness
    small = kind.shrink(s, disagrees)
    theirs = h.ask(small)
    ours, rep = _ours(kind, small, log=kind.divergence is not None)
    text = ""
    if kind.divergence is not None:
        with Harness(steps=True, script=kind.script) as hs:
            log = hs.ask(small)["log"]
        text = kind.divergence(rep, ours, log, small) if rep is not None else ours["error"]
    diffs = kind.diff(ours, theirs)
    path = None
    if out is not None:
        name = f"{kind.prefix}{seed}_{i:05d}"
        path = out.add(name + ".json", json.dumps(small, sort_keys=True) + "\n")
        out.add(name + ".divergence.txt", (text + "\n" if text else "") + "\n".join(diffs) + "\n")
    say(f"{kind.label} {i}: DISAGREE "
        f"({'; '.join(d[:3])})" + (f"; shrunk to {path}" if path else ""))
    return Disagreement(i, s, small, diffs, text, path)
