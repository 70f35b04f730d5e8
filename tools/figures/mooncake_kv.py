#!/usr/bin/env python3
"""The figure Mooncake's paper argues from, for serQ's vLLM program: the
prefix-hit rate and the time to first token of the conversation trace's
first 1 500 requests against the size of the KV cache.

    .venv/bin/python tools/figures/mooncake_kv.py            # runs, writes the SVG and the table
    .venv/bin/python tools/figures/mooncake_kv.py --check    # the committed SVG is what the table draws

Each point is one run of examples/replay/mooncake.sq (`--arrivals 1500`, the
run ends when every request is answered) with `blocks` set; the hit rate is
the prompt tokens the requests found cached (vLLM's num_cached_tokens) over
their prompt tokens, the dashed line the rate of a cache that never evicts
(the trace's own bound, at most the prompt less its last token).  TTFT is the
client's (the first token less the request's arrival).  The runs' numbers are
kept in docs/figures/mooncake_kv.json beside the SVG, which is drawn from them
(`--check` redraws without running).  A script until `serq sweep` exists.

The trace is Mooncake's, read where it lies (``../shared/data/mooncake/``
beside the repository, which is not part of it): its first 1 500 lines are
written to a temporary file the runs replay, and removed.  Without it the
runs cannot be made (``--check`` needs only the committed table).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

PROGRAM = "examples/replay/mooncake.sq"
TRACE = "../shared/data/mooncake/conversation_trace.jsonl"     # from the repository's root
REQUESTS = 1500
BLOCKS = (8000, 16000, 32000, 64000, 128000, 256000, 512000, 1024000)
BS = 16
SVG = os.path.join(ROOT, "docs", "figures", "mooncake_kv.svg")
TABLE = os.path.join(ROOT, "docs", "figures", "mooncake_kv.json")


def ideal_hit_rate(rows, bs: int) -> float:
    """Cached prompt tokens over prompt tokens with a cache that never evicts
    and where every earlier request's prompt is in (whole blocks, never the
    last token)."""
    from serq.ir.trace import MOONCAKE_BLOCK
    seen = set()
    hit = total = 0
    for r in rows:
        k = 0
        for h in r.hash_ids:
            if h not in seen:
                break
            k += 1
        total += r.input_length
        hit += min(k * MOONCAKE_BLOCK, (r.input_length - 1) // bs * bs)
        seen.update(r.hash_ids)
    return hit / total


def run_point(blocks: int, trace: str) -> dict:
    from serq.link import compile_file
    from serq.sim import simulate
    p = compile_file(os.path.join(ROOT, PROGRAM), sets={"blocks": str(blocks), "bs": str(BS)},
                     horizon=20000.0, arrivals=REQUESTS, trace=trace)
    t0 = time.perf_counter()
    rep = simulate(p)
    dt = time.perf_counter() - t0
    d = rep.data()
    cached = sum(v for _, _, _, v in rep.samples("cached_tokens"))
    ttft = sorted(v for _, _, _, v in rep.samples("first"))
    kv = next(x for x in d["pools"] if x["name"] == "kv")
    return {"blocks": blocks, "cached_tokens": cached, "ttft_mean": d["client"]["ttft"]["mean"],
            "ttft_p99": d["client"]["ttft"]["p99"], "preemptions": kv["preemptions"],
            "evicted_tokens": kv["evicted"], "seconds": round(dt, 1), "n": len(ttft)}


def svg(table: dict) -> str:
    """Two panels over a log axis of the KV cache's size (tokens)."""
    pts = table["points"]
    W, H, L, R, T, G = 640, 470, 70, 20, 30, 60
    ph = (H - T - 2 * G) / 2
    xs = [p["blocks"] * BS for p in pts]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))

    def X(v):
        return L + (math.log10(v) - x0) / (x1 - x0) * (W - L - R)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="13">Mooncake conversation trace, '
           f'first {table["requests"]} requests: vLLM v1 (examples/replay/mooncake.sq)</text>']

    def panel(top, ys, y0, y1, log, label, series):
        def Y(v):
            if log:
                return top + ph - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * ph
            return top + ph - (v - y0) / (y1 - y0) * ph
        out.append(f'<rect x="{L}" y="{top}" width="{W - L - R}" height="{ph}" fill="none" stroke="#888"/>')
        for t in ys:
            out.append(f'<line x1="{L - 4}" y1="{Y(t):.1f}" x2="{L}" y2="{Y(t):.1f}" stroke="#888"/>')
            out.append(f'<text x="{L - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        out.append(f'<text transform="translate(16,{top + ph / 2}) rotate(-90)" text-anchor="middle">'
                   f'{label}</text>')
        for key, colour, dash, name, at in series:
            vals = [(X(x), Y(v)) for x, v in zip(xs, key)]
            path = " ".join(f"{'M' if i == 0 else 'L'}{a:.1f},{b:.1f}" for i, (a, b) in enumerate(vals))
            dashes = ' stroke-dasharray="5,4"' if dash else ""
            out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dashes}/>')
            if not dash:
                out.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in vals)
            i, dy, anchor = at
            a, b = vals[i]
            out.append(f'<text x="{a + (6 if anchor == "start" else -6):.1f}" y="{b + dy:.1f}" '
                       f'text-anchor="{anchor}" fill="{colour}">{name}</text>')

    hit = [100 * p["cached_tokens"] / table["prompt_tokens"] for p in pts]
    ideal = [100 * table["ideal_hit_rate"]] * len(pts)
    top1 = T + 10
    panel(top1, [0, 10, 20, 30], 0, 30, False, "prompt tokens cached (%)",
          [(hit, "#1f77b4", False, "hit rate", (4, -8, "end")),
           (ideal, "#1f77b4", True, "a cache that never evicts", (0, -6, "start"))])
    top2 = top1 + ph + G
    lo = 10 ** math.floor(math.log10(min(p["ttft_mean"] for p in pts)))
    hi = 10 ** math.ceil(math.log10(max(p["ttft_p99"] for p in pts)))
    ticks = [10 ** k for k in range(int(math.log10(lo)), int(math.log10(hi)) + 1)]
    panel(top2, ticks, lo, hi, True, "time to first token (s)",
          [([p["ttft_mean"] for p in pts], "#d62728", False, "mean", (-1, 16, "end")),
           ([p["ttft_p99"] for p in pts], "#ff7f0e", False, "p99", (-1, -8, "end"))])
    for x in xs:
        for top in (top1, top2):
            out.append(f'<line x1="{X(x):.1f}" y1="{top + ph}" x2="{X(x):.1f}" y2="{top + ph + 4}" stroke="#888"/>')
        name = f"{x / 1e3:.0f}k" if x < 1e6 else f"{x / 1e6:.3g}M"
        out.append(f'<text x="{X(x):.1f}" y="{top2 + ph + 16}" text-anchor="middle">{name}</text>')
    out.append(f'<text x="{L + (W - L - R) / 2}" y="{H - 12}" text-anchor="middle">KV cache size (tokens; '
               f'blocks of {BS})</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="redraw from the committed table and compare")
    args = ap.parse_args(argv)
    if args.check:
        with open(TABLE, encoding="utf-8") as f:
            table = json.load(f)
        with open(SVG, encoding="utf-8") as f:
            ok = f.read() == svg(table)
        print("ok: docs/figures/mooncake_kv.svg is drawn from its table" if ok else
              "STALE: docs/figures/mooncake_kv.svg (run tools/figures/mooncake_kv.py)")
        return 0 if ok else 1
    import tempfile
    from serq.ir.trace import read_mooncake
    source = os.path.join(ROOT, TRACE)
    if not os.path.exists(source):
        print(f"error: the runs replay Mooncake's conversation trace, read where it lies: {TRACE} from the "
              "repository's root, which is not there (it is not part of the repository; --check needs only "
              "the committed table)", file=sys.stderr)
        return 1
    rows = read_mooncake(source, 0, REQUESTS)
    with open(source, encoding="utf-8") as f:
        head = [next(f) for _ in range(REQUESTS)]
    table = {"program": PROGRAM, "trace": TRACE, "requests": len(rows),
             "prompt_tokens": sum(r.input_length for r in rows), "ideal_hit_rate": ideal_hit_rate(rows, BS),
             "points": []}
    with tempfile.TemporaryDirectory(prefix="mooncake_kv-") as tmp:
        trace = os.path.join(tmp, "first.jsonl")
        with open(trace, "w", encoding="utf-8") as f:
            f.writelines(head)
        for b in BLOCKS:
            pt = run_point(b, trace)
            print(f"blocks {b:>8}: hit {pt['cached_tokens'] / table['prompt_tokens']:.3f}, TTFT mean "
                  f"{pt['ttft_mean']:.2f} s p99 {pt['ttft_p99']:.2f} s, {pt['preemptions']} preemptions "
                  f"({pt['seconds']} s)", flush=True)
            table["points"].append(pt)
    os.makedirs(os.path.dirname(SVG), exist_ok=True)
    with open(TABLE, "w", encoding="utf-8") as f:
        f.write(json.dumps(table, indent=1, sort_keys=True) + "\n")
    with open(SVG, "w", encoding="utf-8") as f:
        f.write(svg(table))
    print(f"wrote {os.path.relpath(SVG, ROOT)} and {os.path.relpath(TABLE, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
