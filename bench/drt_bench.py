"""serQ's side of an oracle DRT batch: one link per shape against one link per
scenario, measured in one run (issue 14, benchmark d).

Two batches, the ones `serq oracle fuzz` and `serq oracle pd-fuzz` draw:
``--n`` random scenarios of the main vLLM family (serq.oracle.fuzz.generate,
examples/oracle/vllm_request.sq and, none drawn, its PRIORITY twin) and
``--pd`` random P/D scenarios (serq.oracle.pd_fuzz.generate,
examples/oracle/vllm_pd.sq).  After one untimed pass (linked each time, so
that every way meets the simulator's compiled sources warm), each batch is
run three ways, ``--runs`` times each, in this process:

* ``each``  — linked in full for every scenario (``serq oracle --link-each``,
  the plain path);
* ``shape`` — from an empty shape cache (serq/link/shapes.py): the batch's
  own first links, probes and checks are counted in;
* ``warm``  — the same batch again once every shape of it has its template
  (after an untimed pass): what a scenario costs once its shape is known,
  which a long DRT tends to.

Each scenario is timed in three parts: *link* (its program: a link or an
instance, its sessions, the IR validator), *setup* (the machine, ``Sim``)
and *run* (the run, the report, the outcome).  Printed: the median over the
repeats of each part's mean in ms a scenario, scenarios/s of serQ's whole
side, and the ratios against ``each`` (the outcomes must be the same all
three ways).  Where vLLM's environment is built (.venv-vllm, or SERQ_VLLM_VENV),
vLLM's side is timed too, unless ``--no-vllm``: the harness's answer to each
scenario (``--serve``, after one warm-up answer; its import and start are
outside), and the scenarios where serQ and vLLM disagree are counted (0
expected).

    .venv/bin/python bench/drt_bench.py [--n 500] [--pd 300] [--runs 3] [--quick] [--no-vllm]

``--quick`` (bench/bench.py's part (d) passes it on): 100 and 60 scenarios.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

PARTS = ("link", "setup", "run")


def batches(n: int, n_pd: int) -> dict:
    from serq.oracle import fuzz as F, outcome as O, pd as PD, pd_fuzz as G, scenario as S
    from serq.oracle.vllm import HARNESS, PD as PD_HARNESS
    return {
        "vLLM scenarios": (S, [F.generate(random.Random(f"1:{i}"), i) for i in range(n)],
                           lambda rep, p: O.scenario_outcome(rep, p), O.diff, HARNESS),
        "P/D scenarios": (PD, [G.generate(1, i) for i in range(n_pd)],
                          lambda rep, p: PD.outcome(rep, p), PD.diff, PD_HARNESS),
    }


def one_run(harness, cases, outcome) -> tuple[dict, list]:
    """Seconds spent in each part over the batch, and the outcomes."""
    from serq.api.harness import harness_program
    from serq.sim.machine import Sim
    from serq.sim.report import Report
    spent = dict.fromkeys(PARTS, 0.0)
    outs = []
    for s in cases:
        a = time.perf_counter()
        p = harness_program(harness, s)
        b = time.perf_counter()
        sim = Sim(p)
        c = time.perf_counter()
        sim.run()
        outs.append(outcome(Report(sim), p))
        d = time.perf_counter()
        spent["link"] += b - a
        spent["setup"] += c - b
        spent["run"] += d - c
    return spent, outs


def serq_side(harness, cases, outcome, repeat: int) -> tuple[dict, dict, list]:
    """{way: [seconds by part, one a repeat]}, the shape caches' counts after
    a batch from an empty cache, and the outcomes."""
    from serq.api import harness as A
    runs = {"each": [], "shape": [], "warm": []}
    outs = {}
    counts = {}
    with A.linking("each"):
        one_run(harness, cases, outcome)      # untimed: the simulator's sources compiled once for all
    for _ in range(repeat):
        with A.linking("each"):
            spent, outs["each"] = one_run(harness, cases, outcome)
        runs["each"].append(spent)
        A.shape_caches(forget=True)
        spent, outs["shape"] = one_run(harness, cases, outcome)
        runs["shape"].append(spent)
        counts = {os.path.basename(k): dict(v.counts) for k, v in A.shape_caches().items()}
        one_run(harness, cases, outcome)      # a shape met once so far has its template made here
        spent, outs["warm"] = one_run(harness, cases, outcome)
        runs["warm"].append(spent)
    assert outs["each"] == outs["shape"] == outs["warm"], "the ways of linking gave other outcomes"
    return runs, counts, outs["each"]


def vllm_side(script, cases, repeat: int) -> tuple[list, list]:
    from serq.oracle.vllm import Harness
    times = []
    with Harness(script=script) as h:
        h.ask(cases[0])
        for _ in range(repeat):
            t = time.perf_counter()
            answers = [h.ask(s) for s in cases]
            times.append(time.perf_counter() - t)
    return times, answers


def vllm_built() -> bool:
    from serq.diag import SerqError
    from serq.oracle.vllm import python
    try:
        python()
    except SerqError as e:
        print(f"(vLLM's side not timed: {e.diagnostics[0].message}; `make vllm-env` builds it)")
        return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help="random scenarios of the main vLLM family (500)")
    ap.add_argument("--pd", type=int, default=None, help="random P/D scenarios (300)")
    ap.add_argument("--runs", "--repeat", dest="runs", type=int, default=3, help="timed runs of each way")
    ap.add_argument("--quick", action="store_true", help="100 and 60 scenarios")
    ap.add_argument("--no-vllm", action="store_true", help="do not time vLLM's scheduler on the batches")
    args = ap.parse_args(argv)
    vllm = not args.no_vllm and vllm_built()
    n_main = args.n if args.n is not None else 100 if args.quick else 500
    n_pd = args.pd if args.pd is not None else 60 if args.quick else 300
    if args.runs < 1 or n_main < 0 or n_pd < 0:
        ap.error("--runs is at least 1, --n and --pd at least 0")
    for name, (harness, cases, outcome, diff, script) in batches(n_main, n_pd).items():
        if not cases:
            continue
        n = len(cases)
        runs, counts, ours = serq_side(harness, cases, outcome, args.runs)
        print(f"{name}: {n} (medians of {args.runs} run{'s' if args.runs > 1 else ''}, ms a scenario)")
        med = {}
        for way in ("each", "shape", "warm"):
            parts = {k: 1000 * statistics.median(r[k] for r in runs[way]) / n for k in PARTS}
            total = 1000 * statistics.median(sum(r.values()) for r in runs[way]) / n
            med[way] = (parts, total)
            print(f"  {way:<5}  link {parts['link']:7.3f}  setup {parts['setup']:6.3f}  run {parts['run']:6.3f}"
                  f"  = {total:7.3f} ms   {1000 / total:7.1f} scenarios/s")
        for way in ("shape", "warm"):
            (pe, te), (pw, tw) = med["each"], med[way]
            print(f"  each / {way}: link {pe['link'] / pw['link']:6.1f}x, setup and run "
                  f"{(pe['setup'] + pe['run']) / (pw['setup'] + pw['run']):4.2f}x, serQ's side {te / tw:5.2f}x")
        for prog, c in sorted(counts.items()):
            print(f"  {prog}: {c['calls']} scenarios, {c['shapes']} shapes, {c['links']} links "
                  f"(first links, probes and checks), {c['instances']} instances, "
                  f"{c['untemplated']} shapes linked every time")
        if vllm:
            times, theirs = vllm_side(script, cases, args.runs)
            tv = 1000 * statistics.median(times) / n
            bad = sum(1 for a, b in zip(ours, theirs) if diff(a, b))
            te, tw = med["each"][1], med["warm"][1]
            print(f"  vLLM 0.33.0's scheduler (harness): {tv:7.3f} ms a scenario, {1000 / tv:7.1f} scenarios/s; "
                  f"serQ / vLLM: {te / tv:.2f} linking each, {tw / tv:.2f} once per shape; "
                  f"{bad} scenarios disagree")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
