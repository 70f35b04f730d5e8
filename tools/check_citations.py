#!/usr/bin/env python3
"""Every citation of vLLM's source (`file.py:lines`) in examples/, docs/ and the
code, held to vLLM 0.33.0's files: the file exists, the lines exist, and an
identifier the citation names appears in them.

    tools/check_citations.py [--vllm DIR] [-v]

DIR is vLLM's package directory (the one holding `v1/`, `config/`, ...); by
default `.venv-vllm/lib/python3.*/site-packages/vllm`, else the `vllm/` of a
wheel unpacked with `--wheel WHEEL`, else with `--fetch` the pinned wheel
fetched without its dependencies (`pip download vllm==0.33.0 --no-deps`,
336 MB, into build/; it took 2-4 s here, and is given two minutes).  Without
any it says so and exits 0.  `make check` runs it on `.venv-vllm` when that
exists, and under CI (CI set) with `--fetch`.

A citation is `PATH.py:RANGES` (RANGES `N`, `N-M`, comma-separated), and a
bare `:RANGES` after it in the same paragraph cites the same file.  PATH is
matched against vLLM's files by its trailing components; a bare name several
files share resolves to the scheduler's own (v1/core/sched/, then v1/core/,
then v1/).  A PATH that is no vLLM file is another project's and is not
checked, and so are the files below written from another engine's source.
The identifiers a citation names are the code-like words (in backticks, or
with `_`, `.`, an inner capital, or a call or index) written beside it: in its paragraph, up
to 240 characters before it and up to the next citation after it (at most
160 characters); one of them must occur in the cited lines (one line either
side).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "0.33.0"

# files written from another engine's source: their `file.py:lines` are not
# vLLM's; and this checker's own test, whose citations are made up
OTHER_SOURCES = ("examples/engines/", "examples/single-turn/fastertransformer.sq", "tools/oracle/sglang/",
                 "tools/oracle/sglang_oracle.py", "examples/oracle/sglang_request.sq", "serq/oracle/sglang",
                 "tests/test_citations.py")
SCOPE = ("examples/**/*.sq", "docs/**/*.md", "serq/**/*.py", "serq/**/*.md", "tools/**/*.py",
         "tools/**/*.md", "tests/**/*.py", "README.md", "leangen/**/*.py")
PREFER = ("v1/core/sched/", "v1/core/", "v1/", "")

CITE = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*[\w-]+\.py):(\d+(?:-\d+)?(?:,\s*\d+(?:-\d+)?)*)")
CONT = re.compile(r"(?<![\w.)])`?:(\d+(?:-\d+)?(?:,\s*\d+(?:-\d+)?)*)")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
STOP = {"serq", "vllm", "vLLM", "the", "and", "e.g", "i.e"}


def find_vllm(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    for d in sorted(glob.glob(os.path.join(ROOT, ".venv-vllm", "lib", "python3*", "site-packages", "vllm"))):
        return d
    return None


def fetch_wheel(dest: str, timeout: float = 120.0) -> str | None:
    """The pinned wheel in ``dest`` (downloaded when absent), or None."""
    import subprocess
    os.makedirs(dest, exist_ok=True)
    have = glob.glob(os.path.join(dest, f"vllm-{VERSION}-*.whl"))
    if have:
        return have[0]
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", f"vllm=={VERSION}", "--no-deps",
                        "-d", dest], check=True, timeout=timeout, capture_output=True)
    except (subprocess.SubprocessError, OSError) as e:
        print(f"citations: could not fetch vllm=={VERSION} ({type(e).__name__}); not checked")
        return None
    have = glob.glob(os.path.join(dest, f"vllm-{VERSION}-*.whl"))
    return have[0] if have else None


def unpack_wheel(wheel: str, dest: str) -> str:
    with zipfile.ZipFile(wheel) as z:
        for n in z.namelist():
            if n.startswith("vllm/") and n.endswith(".py"):
                z.extract(n, dest)
    return os.path.join(dest, "vllm")


class Tree:
    def __init__(self, root: str):
        self.root = root
        self.files = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "**", "*.py"),
                                                                       recursive=True))
        self._lines: dict[str, list[str]] = {}

    def resolve(self, path: str) -> str | None:
        path = path.removeprefix("vllm/")
        cands = [f for f in self.files if f == path or f.endswith("/" + path)]
        if len(cands) <= 1:
            return cands[0] if cands else None
        for pre in PREFER:
            hit = [f for f in cands if f.startswith(pre) and f[len(pre):].count("/") == path.count("/")]
            if len(hit) == 1:
                return hit[0]
        return None

    def lines(self, f: str) -> list[str]:
        if f not in self._lines:
            with open(os.path.join(self.root, f), encoding="utf-8") as fh:
                self._lines[f] = fh.read().split("\n")
        return self._lines[f]


def ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        out.append((int(a), int(b or a)))
    return out


def identifiers(context: str) -> set[str]:
    """The code-like words of a citation's context, the citations themselves
    left out: a word in backticks, a word with `_`, an inner capital, a call
    `f(` or an index `x[`, or a dotted name (and its last part, the
    identifier in the source)."""
    context = CONT.sub(" ", CITE.sub(" ", context))
    words = {m.group(1) for m in re.finditer(r"`([A-Za-z_][A-Za-z0-9_]*)`", context)}
    for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(\(|\[)?", context):
        w = m.group(0).rstrip("([")
        if w.endswith((".py", ".sq", ".md", ".rs")) or w in STOP:
            continue
        if m.group(1) or "_" in w.strip("_") or "." in w or re.search(r"[a-z][A-Z]", w):
            words.add(w)
            if "." in w:
                words.add(w.rsplit(".", 1)[1])
    return {w for w in words if len(w) >= 3 and w not in STOP}


def citations(path: str):
    """(line number, cited path, ranges, context) of every citation in a file.
    A citation's context is the text of its paragraph up to 240 characters
    before it and up to the next citation after it (at most 160 characters):
    the words it is written beside."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    paragraphs, cur = [], []
    for i, line in enumerate(lines):
        if line.strip():
            cur.append(i)
        elif cur:
            paragraphs.append(cur)
            cur = []
    if cur:
        paragraphs.append(cur)
    for para in paragraphs:
        text, starts = "", []
        for i in para:
            starts.append(len(text))
            text += lines[i] + "\n"
        spans = [(m.start(), m.end(), m.group(1), m.group(2)) for m in CITE.finditer(text)]
        spans += [(m.start(), m.end(), None, m.group(1)) for m in CONT.finditer(text)
                  if not any(s <= m.start() < e for s, e, _, _ in spans)]
        spans.sort()
        last = None
        for k, (s, e, p, r) in enumerate(spans):
            if p is not None:
                last = p
            elif last is None:
                continue
            lo = max(0, s - 240)
            hi = min(spans[k + 1][0] if k + 1 < len(spans) else len(text), e + 160)
            lineno = para[max(j for j, st in enumerate(starts) if st <= s)] + 1
            yield lineno, p or last, ranges(r), text[lo:s] + " " + text[e:hi]


def check(tree: Tree, files: list[str], verbose: bool) -> tuple[int, int, list[str]]:
    checked = skipped = 0
    problems = []
    for path in files:
        rel = os.path.relpath(path, ROOT)
        if rel.startswith(OTHER_SOURCES):
            continue
        for lineno, cited, rs, context in citations(path):
            f = tree.resolve(cited)
            if f is None:
                skipped += 1
                continue
            checked += 1
            src = tree.lines(f)
            where = f"{rel}:{lineno}: {cited}:{','.join(f'{a}-{b}' if a != b else str(a) for a, b in rs)}"
            bad = [(a, b) for a, b in rs if not (1 <= a <= b <= len(src))]
            if bad:
                problems.append(f"{where}: vllm/{f} has {len(src)} lines")
                continue
            names = identifiers(context)
            body = "\n".join("\n".join(src[max(0, a - 2):b + 1]) for a, b in rs)
            found = sorted(n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", body))
            if not names:
                problems.append(f"{where}: names no identifier (say what the lines hold)")
            elif not found:
                problems.append(f"{where}: none of {sorted(names)} is in vllm/{f}:"
                                f"{','.join(f'{a}-{b}' for a, b in rs)}")
            elif verbose:
                print(f"ok  {where} ({', '.join(found[:3])})")
    return checked, skipped, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", help="vLLM's package directory")
    ap.add_argument("--wheel", help="a vllm-0.33.0 wheel to read instead (unpacked to a temp dir)")
    ap.add_argument("--fetch", action="store_true",
                    help="without .venv-vllm, fetch the pinned wheel (no dependencies) into build/")
    ap.add_argument("-v", action="store_true", help="list every citation checked")
    args = ap.parse_args(argv)
    root = find_vllm(args.vllm) if not args.wheel else None
    wheel = args.wheel
    if root is None and wheel is None and args.fetch:
        wheel = fetch_wheel(os.path.join(ROOT, "build", "vllm-wheel"))
        if wheel is None:
            return 0
    if wheel:
        import tempfile
        root = unpack_wheel(wheel, tempfile.mkdtemp(prefix="vllm-src-"))
    if root is None or not os.path.isdir(root):
        print("citations: no vLLM source here (.venv-vllm, --vllm DIR, --wheel WHEEL or --fetch); not checked")
        return 0
    init = os.path.join(root, "_version.py")
    if os.path.exists(init) and VERSION not in open(init, encoding="utf-8").read():
        print(f"citations: {root} is not vLLM {VERSION}", file=sys.stderr)
        return 1
    tree = Tree(root)
    files = sorted({p for pat in SCOPE for p in glob.glob(os.path.join(ROOT, pat), recursive=True)})
    checked, skipped, problems = check(tree, files, args.v)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"citations: {checked} of vLLM {VERSION} checked, {len(problems)} wrong "
          f"({skipped} of other projects' files not checked)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
