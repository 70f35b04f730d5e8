#!/usr/bin/env python3
"""The size of the language a reader has to learn (development guide,
"Changing the language's size"): tools/metrics.json.

    tools/metrics.py            write tools/metrics.json; print the sizes and
                                the length of the docs and the programs
    tools/metrics.py --check    exit 1 when tools/metrics.json is not current

What it counts: the IR's variants (each union of serq/ir/model.py and each
enumeration it validates against), the keywords (the grammar's word
literals), the functions (the catalogue's functions, observables,
distributions and aggregates), the context variables (the bare names and the
engine's `running.`, `waiting.`, `batch.` values), and the code lines of
examples/ and examples/lib/ that three or more programs repeat: over 30
characters once `//` comments and surrounding space are stripped, a `let`
aside (a constant is a program's own), each counted once per program.  So a
change that adds a construct shows it in this file's diff, and a change that
deletes one shows that too; a line in many clones is a definition waiting to
be written.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import typing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUT = os.path.join(ROOT, "tools", "metrics.json")


def ir_variants() -> dict:
    from serq.ir import model as M
    unions = {"Expr": M.Expr, "Stmt": M.Stmt, "Iter": M.Iter, "StageKind": M.StageKind, "Arrival": M.Arrival}
    out = {name: sorted(t.__name__ for t in typing.get_args(u)) for name, u in unions.items()}
    out["Evict"] = ["EvictBy", "EvictLru"]
    out["Preempt"] = ["PreemptBy", "PreemptNone"]
    out["Serve"] = ["ServeBy", "ServeExclusivePrefill"]
    out["ClaimForm"] = sorted(c.__name__ for c in (M.CEvery, M.CSome, M.CAtEnd))
    out["BinOp"] = sorted(M.BINOPS)
    out["UnOp"] = sorted(M.UNOPS)
    out["Fn"] = sorted(M.FNS)
    out["Dist"] = sorted(M.DISTS)
    out["PoolQuery"] = sorted(M.POOL_QUERIES)
    out["StageQuery"] = sorted(M.STAGE_QUERIES)
    out["Agg"] = sorted(M.AGGS)
    out["Ctx"] = sorted(M.CTX_VARS)
    return out


def keywords() -> list[str]:
    with open(os.path.join(ROOT, "serq", "syntax", "grammar.lark"), encoding="utf-8") as f:
        return sorted(set(re.findall(r'"([a-z_]+)"', f.read())))


def functions() -> list[str]:
    from serq.link import catalogue as C
    names = set(C.FUNCTIONS) | set(C.POOL_QUERIES) | set(C.STAGE_QUERIES) | C.OTHER_FUNCTIONS
    names |= {f"~{d}" for d in C.DISTS} | set(C.AGGREGATES) | {f"{a} j in n" for a in C.AGG_KINDS}
    return sorted(names)


def context_variables() -> list[str]:
    from serq.link import catalogue as C
    names = set(C.CTX_BARE)
    names |= {f"running.{k}" for k in C.RUNNING} | {f"waiting.{k}" for k in C.WAITING}
    names |= {f"batch.{k}" for k in C.BATCH}
    return sorted(names)


def programs() -> list[str]:
    """The example programs and the libraries (instance files are settings, not programs)."""
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "examples", "**", "*.sq"),
                                                              recursive=True)
                  if "/instances/" not in p.replace(os.sep, "/"))


def code_lines(path: str) -> set[str]:
    out = set()
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for line in f:
            line = re.sub(r"//.*", "", line).strip()
            line = re.sub(r"\s+", " ", line)
            if len(line) > 30 and not line.startswith("let "):
                out.add(line)
    return out


def repeated_lines(progs: list[str]) -> list[dict]:
    where: dict[str, list[str]] = {}
    for p in progs:
        for line in code_lines(p):
            where.setdefault(line, []).append(p)
    rows = [{"line": line, "programs": len(ps)} for line, ps in where.items() if len(ps) >= 3]
    return sorted(rows, key=lambda r: (-r["programs"], r["line"]))


def metrics() -> dict:
    ir = ir_variants()
    progs = programs()
    rep = repeated_lines(progs)
    kw, fn, ctx = keywords(), functions(), context_variables()
    return {
        "counts": {"ir_variants": sum(len(v) for v in ir.values()), "keywords": len(kw), "functions": len(fn),
                   "context_variables": len(ctx), "programs": len(progs), "repeated_lines": len(rep)},
        "ir_variants": ir,
        "keywords": kw,
        "functions": fn,
        "context_variables": ctx,
        "repeated_lines": rep,
    }


def dumps(m: dict) -> str:
    return json.dumps(m, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def lengths() -> list[tuple[str, int, int]]:
    rows = []
    for label, pattern in (("docs (docs/*.md)", "docs/**/*.md"), ("programs (examples/**/*.sq)", "examples/**/*.sq")):
        files = glob.glob(os.path.join(ROOT, pattern), recursive=True)
        text = "".join(open(f, encoding="utf-8").read() for f in files)
        rows.append((label, text.count("\n"), len(text.split())))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when tools/metrics.json is not current")
    args = ap.parse_args(argv)
    text = dumps(metrics())
    if args.check:
        try:
            current = open(OUT, encoding="utf-8").read()
        except OSError:
            current = None
        if current != text:
            print("STALE: tools/metrics.json (run `make metrics` and say in the change why the language "
                  "grew or shrank)", file=sys.stderr)
            return 1
        print("ok: tools/metrics.json current")
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    c = json.loads(text)["counts"]
    print("wrote tools/metrics.json: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    for label, lines, words in lengths():
        print(f"  {label}: {lines} lines, {words} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
