"""Small helpers shared by the tests."""

import os
import subprocess
import sys

import pytest

from serq.link import compile_source

# vLLM's environment (`make vllm-env`); the tests that run vLLM are skipped without it
VLLM = os.path.join(".venv-vllm", "bin", "python")
needs_vllm = pytest.mark.skipif(not os.path.exists(VLLM), reason="needs .venv-vllm (make vllm-env)")

# Mooncake's conversation trace, read where it lies (../shared beside the
# repository, as CI has it); the tests that read it are skipped without it
MOONCAKE = os.path.join("..", "shared", "data", "mooncake", "conversation_trace.jsonl")
needs_mooncake = pytest.mark.skipif(
    not os.path.exists(MOONCAKE),
    reason=f"needs Mooncake's conversation trace at {MOONCAKE}, which is not part of the repository "
           "(a clone without ../shared has none)")

PRE = 'use "std/args";\nfn main() {\n'
POST = '\n}\n'


def link(body: str, **kw):
    """Link a main body (wrapped in `fn main() { … }`)."""
    return compile_source(PRE + body + POST, "t.sq", **kw)


def heard(cmd: list, ignore: tuple = ()) -> list:
    """``cmd`` started with SIGINT, SIGTERM and SIGHUP at their defaults, as
    a terminal starts a command, whatever this process ignores (the tests
    run under nohup, or in a script's background, ignore SIGHUP or SIGINT,
    and so would their children); those in ``ignore`` ignored (nohup)."""
    return [sys.executable, "-c",
            "import os, signal, sys\n"
            "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n"
            f"    signal.signal(s, signal.SIG_IGN if s in {tuple(int(s) for s in ignore)!r} else signal.SIG_DFL)\n"
            "os.execv(sys.argv[1], sys.argv[1:])\n"] + list(cmd)


def python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``code`` run by this Python in a process of its own (with the signals
    at their defaults, :func:`heard`), in the repository's root (its stdout
    and stderr captured, as text)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run(heard([sys.executable, "-c", code]), capture_output=True, text=True, cwd=root,
                          timeout=timeout)


def gated_batch(n: int, prompt: int, output: int, *, to_format: bool = False) -> str:
    """The end of a main body serving a batch of ``n`` requests of ``prompt``
    tokens and ``output`` outputs on engine `e` (its request pool `reqs`
    declared here): each session passes a delay stage `gate` for its
    attribute `arrive` (0, or what a test sets per session), then is one
    request; `done` observes when it ends.  ``to_format``: its braces
    doubled, for a program text a test will ``.format``."""
    text = ("  pool reqs on e { queue fifo; }\n"
            "  stage gate : delay;\n"
            "  workload {\n"
            f"    arrive batch({n});\n"
            f"    init {{ set prompt = {prompt}; set o = {output}; set arrive = 0; }}\n"
            "    session { run gate (cost(gate, arrive)); turn; }\n"
            "  }\n"
            "  server { e (prompt, o); observe done = now; }\n")
    return text.replace("{", "{{").replace("}", "}}") if to_format else text


def stmts(p, block=None):
    """The statements of a block (default: the session's), as class names."""
    b = p.blocks[p.session if block is None else block]
    return [type(s).__name__ for s in b.stmts]


# An engine that admits every waiting request while it has budget, each
# taking its cached prefix (`cached_tokens`: its hit) and caching its prompt
# and outputs at the end: the content-addressed pools' tests (`{cap}`: its KV)
CACHING = """
  device gpu {{ kv cap {cap}; }}
  engine e on gpu {{
    reqs cap 4;
    tokens cap 64;
    schedule {{ advance running; admit waiting taking reqs (1), kv (prompt)
                 reserve (prompt + o) reuse (cachedin(kv)); }}
    execute (1);
    request (prompt, output) {{
      set c = cached;
      observe cached_tokens = c;
      prefill (prompt - c) growing kv;
      decode (output - 1) growing kv;
      cache (prompt + output - 1);
    }}
  }}
"""

# The workload of the engine tests worked by hand on the step clock: requests
# of `prompt` tokens and `o` outputs, each handed to engine `e` after waiting
# `arrive` (a `gate` delay), its answer observed as `done`; `sessions` makes
# them explicit.  Doubled braces: the tests `.format` their programs.
EXPLICIT = gated_batch(1, 20, 3, to_format=True)


def sessions(p, reqs):
    """Program `p` (with EXPLICIT's workload) serving `reqs`, each (prompt,
    outputs, arrival, content): content a tuple of (id, tokens) segments."""
    import dataclasses

    from serq.ir import model as M
    slot = {n: p.attrs.index(n) for n in ("prompt", "o", "arrive")}
    specs = tuple(M.SessionSpec(attrs=((slot["prompt"], float(pr)), (slot["o"], float(o)), (slot["arrive"], float(a))),
                                content=tuple((float(i), float(n)) for i, n in content))
                  for pr, o, a, content in reqs)
    return dataclasses.replace(p, arrival=M.ASessions(specs))
