#!/usr/bin/env bash
# `make lean`: the Lean package is current, builds, has no sorry, and its
# theorems depend on no axiom beyond propext, Classical.choice and Quot.sound.
#
#   1. the generated files are what the generator writes now
#      (python -m leangen oracle --check, python -m leangen claims --check);
#   2. lake build in lean/ (every oracle theorem is checked there, by
#      evaluation in the kernel);
#   3. no sorry (or admit) in lean/Serq;
#   4. the axiom audit: a Lean script printing each theorem's axioms
#      (python -m leangen audit), run with `lake env lean`, and its output
#      checked (python -m leangen audit --axioms OUTPUT);
#   5. the statements left unproved are printed (lean/Serq/Gen/*.unproved.txt).
#
# Where `lake` is not on PATH it stops after step 1 with a message saying so,
# and exits non-zero: the Lean side was not checked.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi

status=0
echo "lean: 1/5 the generated files are current"
"$PY" -m leangen oracle --check || status=1
"$PY" -m leangen claims --check || status=1
if [ "$status" -ne 0 ]; then
  echo "lean: FAIL: a generated file is stale (run python -m leangen oracle / claims)" >&2
  exit 1
fi

if ! command -v lake >/dev/null 2>&1; then
  echo "lake not found: the Lean toolchain is not installed here; the generated files were checked for staleness only" >&2
  exit 1
fi

echo "lean: 2/5 lake build"
(cd lean && lake build) || { echo "lean: FAIL: lake build" >&2; exit 1; }

echo "lean: 3/5 no sorry"
"$PY" -m leangen audit --no-sorry || exit 1

echo "lean: 4/5 axiom audit"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$PY" -m leangen audit > "$tmp/AxiomAudit.lean" || exit 1
(cd lean && lake env lean "$tmp/AxiomAudit.lean") > "$tmp/axioms.txt" 2>&1 || {
  cat "$tmp/axioms.txt" >&2
  echo "lean: FAIL: the axiom audit script did not run" >&2
  exit 1
}
"$PY" -m leangen audit --axioms "$tmp/axioms.txt" || exit 1

echo "lean: 5/5 statements without a proof"
for f in lean/Serq/Gen/Oracle.unproved.txt lean/Serq/Gen/Claims.unproved.txt; do
  if grep -qv '^#' "$f" 2>/dev/null; then
    echo "  $f:"
    grep -v '^#' "$f" | sed 's/^/    /'
  fi
done
echo "lean: ok"
