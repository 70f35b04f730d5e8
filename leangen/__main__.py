"""`python -m leangen COMMAND`: the Lean back end's commands.

  oracle [--check]          write (or compare) lean/Serq/Gen/Oracle.lean
                            and Oracle.unproved.txt from tools/oracle/*/*.ir.json
  claims [--check] [IR...]  write (or compare) lean/Serq/Gen/Claims.lean and
                            Claims.unproved.txt (default: tests/golden/ir/*.ir.json);
                            a program outside the fragment stops it, and it does not
                            write over files written from other inputs
  check IR.json             exit 0 inside the Lean fragment, else the FAIL line, exit 1
  exec IR.json              run exec_ref (the Lean semantics in Python) and print
                            the outcome as the oracle harness prints vLLM's
  audit [--axioms OUTPUT | --no-sorry]
                            print the axiom-audit Lean script; with --axioms, check
                            Lean's output of it (and that no sorry is left); with
                            --no-sorry, only that no sorry is left

Exit status: 0 done, 1 a failure (a FAIL/STALE line says which), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys

from serq.diag import SerqError


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m leangen", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("oracle", help="the oracle theorems")
    o.add_argument("--check", action="store_true", help="compare instead of writing")
    o.add_argument("--oracle-dir", default=None, help="default: tools/oracle")
    o.add_argument("--lean-dir", default=None, help="default: lean")
    c = sub.add_parser("claims", help="the claims' statements")
    c.add_argument("--check", action="store_true", help="compare instead of writing")
    c.add_argument("--lean-dir", default=None, help="default: lean")
    c.add_argument("ir", nargs="*", help="IR files (default: tests/golden/ir/*.ir.json)")
    k = sub.add_parser("check", help="is the program in the Lean fragment")
    k.add_argument("ir")
    e = sub.add_parser("exec", help="run the Lean semantics (exec_ref) on an IR file")
    e.add_argument("ir")
    e.add_argument("--fuel", type=int, default=None, help="default: from the IR's horizon")
    a = sub.add_parser("audit", help="the axiom audit script / check")
    a.add_argument("--lean-dir", default=None, help="default: lean")
    a.add_argument("--axioms", default=None, metavar="OUTPUT",
                   help="Lean's output of the audit script: check it")
    a.add_argument("--no-sorry", action="store_true", help="only check that no sorry is left")
    args = ap.parse_args(argv)

    from . import generate as G
    lean_dir = getattr(args, "lean_dir", None) or os.path.join(G.ROOT, "lean")
    try:
        if args.cmd == "oracle":
            oracle_dir = args.oracle_dir or os.path.join(G.ROOT, "tools", "oracle")
            command = "python -m leangen oracle" + (f" --oracle-dir {G.rel(oracle_dir)}" if args.oracle_dir else "")
            return finish(G.oracle_outputs(oracle_dir, command), lean_dir, args.check, command)
        if args.cmd == "claims":
            paths = args.ir or G.claim_files()
            command = G.claims_command(args.ir)
            return finish(G.claims_outputs(paths, lean_dir, command), lean_dir, args.check, command)
        if args.cmd == "check":
            return check(args.ir)
        if args.cmd == "exec":
            return run_exec(args.ir, args.fuel)
        if args.cmd == "audit":
            return audit(lean_dir, args.axioms, args.no_sorry)
    except G.GenError as err:
        print(str(err), file=sys.stderr)
        return 1
    except SerqError as err:
        print(err.render(), file=sys.stderr)
        return 1
    return 2  # pragma: no cover


def finish(outs, lean_dir: str, check_only: bool, command: str) -> int:
    from . import generate as G
    if check_only:
        bad = G.stale(outs, lean_dir)
        for path in bad:
            print(f"STALE: {path} (run `{command}` and review the diff)", file=sys.stderr)
        if not bad:
            print(f"ok: {', '.join(G.rel(os.path.join(lean_dir, o.path)) for o in outs)} current")
        return 1 if bad else 0
    G.write(outs, lean_dir, command)
    print(f"wrote {', '.join(G.rel(os.path.join(lean_dir, o.path)) for o in outs)}")
    return 0


def check(path: str) -> int:
    from serq.ir import read
    from .fragment import Outside, check as check_fragment
    ir = read(path)
    try:
        check_fragment(ir, path)
    except Outside as e:
        print(e.line())
        return 1
    print(f"ok: {path} is inside the Lean fragment")
    return 0


def run_exec(path: str, fuel_arg) -> int:
    from serq.ir import read
    from . import exec_ref, outputs
    from .fragment import Outside, translate, workload
    from .generate import fuel, law_text
    ir = read(path)
    try:
        prog = translate(ir, path)
        w = workload(ir, path)
    except Outside as e:
        print(e.line(), file=sys.stderr)
        return 1
    if w[0] != "explicit":
        print(f"FAIL: {path}: its sessions arrive by a law ({law_text(w[1])}): exec runs explicit sessions",
              file=sys.stderr)
        return 1
    f = fuel_arg if fuel_arg is not None else fuel(ir)
    m = exec_ref.run(prog, f)
    if not exec_ref.complete(prog, m):
        print(f"FAIL: {path}: the run does not end within fuel {f} (time {m.now})", file=sys.stderr)
        return 1
    steps = m.now + 1 if prog.sessions else 0
    out = outputs.outcome(ir.observes, exec_ref.observations(prog, m), m.preempts, steps)
    sys.stdout.write(outputs.dumps(out))
    return 0


def audit(lean_dir: str, axioms_output, no_sorry: bool = False) -> int:
    from . import audit as A
    if no_sorry:
        bad = A.sorries(lean_dir)
        for p in bad:
            print(f"FAIL: sorry at {p}", file=sys.stderr)
        if not bad:
            print("no sorry")
        return 1 if bad else 0
    if axioms_output is None:
        sys.stdout.write(A.audit_script(lean_dir))
        return 0
    problems = [f"sorry at {p}" for p in A.sorries(lean_dir)]
    with open(axioms_output, encoding="utf-8") as f:
        text = f.read()
    expected = [ln.split(" ", 2)[2] for ln in A.audit_script(lean_dir).splitlines()
                if ln.startswith("#print axioms ")]
    problems += A.check_axioms(text, expected)
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    if not problems:
        print(f"axiom audit: {len(expected)} theorems, none beyond {', '.join(sorted(A.ALLOWED))}; no sorry")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
