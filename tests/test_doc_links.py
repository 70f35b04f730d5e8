"""No doc points to a file a clone does not have: every Markdown link and
every repository path a doc names in backticks resolves inside the
repository, and none names the specification's folder outside it
(`../shared/…`, but the data read in place, `../shared/data/`, which every
mention says a clone may lack) or a machine's path (`/work/…`)."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = ("examples", "serq", "tools", "tests", "docs", "lean", "leangen", "bench", "editors")
MADE = {"tests/fuzz/found", "tools/oracle/found"}      # written by a command when it finds something
SKIP_DIRS = {".venv", ".venv-vllm", ".venv-sglang", ".git", "node_modules", ".lake", "__pycache__", "found"}


def _docs() -> list:
    out = []
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return out


DOCS = _docs()


def _exists(doc: str, target: str) -> bool:
    base = os.path.dirname(os.path.join(ROOT, doc))
    for cand in (os.path.join(base, target), os.path.join(ROOT, target)):
        if os.path.exists(os.path.normpath(cand)):
            return True
    return False


def _anchors(path: str) -> set:
    text = open(path, encoding="utf-8").read()
    out = set()
    for m in re.finditer(r"^#+ (.+)$", text, re.M):
        a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower().replace("`", "")).replace(" ", "-")
        out.add(a)
    return out


@pytest.mark.parametrize("doc", DOCS)
def test_every_link_and_path_resolves_in_the_repository(doc):
    text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
    bad = []
    for m in re.finditer(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)", text):
        target = m.group(1)
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        if path and not _exists(doc, path):
            bad.append(f"link {target}")
        elif anchor:
            page = os.path.normpath(os.path.join(os.path.dirname(os.path.join(ROOT, doc)), path)) if path \
                else os.path.join(ROOT, doc)
            if page.endswith(".md") and anchor not in _anchors(page):
                bad.append(f"link {target} (no such section)")
    for m in re.finditer(r"`([^`\s]+)`", text):
        token = m.group(1)
        path = token.split(":")[0].rstrip(".,;")
        if not re.fullmatch(r"(?:\.\./)*[\w.\-]+(?:/[\w.\-]+)+/?", path) or not path.split("/")[0] in TOP:
            continue
        if re.search(r"[A-Z]{3,}|\bNAME\b|\bN\b", path) or "…" in path:
            continue                       # a placeholder: examples/NAME.sq, tools/oracle/<name>.json
        if not _exists(doc, path) and path.rstrip("/") not in MADE:
            bad.append(f"path {token}")
    # the data set read where it lies (../shared/data/, which a clone may lack: every mention
    # says so, and what reads it skips without it) is the one place outside the repository
    # a doc may name; the specification and the guides outside it are not
    for pat in (r"\.\./shared(?!/data/)", r"/work/", r"shared/seeds"):
        for m in re.finditer(pat, text):
            line = text[:m.start()].count("\n") + 1
            bad.append(f"line {line}: `{pat}` is outside the repository")
    assert bad == [], f"{doc}: " + "; ".join(bad)
