"""A program's engine under the oracle's workload (`serq oracle run|diff
SCENARIO.json --program PROG.sq`): the program's declarations as written, its
workload and server replaced by one request per session.

The oracle's requests are explicit sessions: session i waits `oracle_arrive`
on a delay stage of its own, takes one turn, and the server calls the
program's engine with `(oracle_prompt, oracle_out)` -- the two parameters of
its `request (prompt, output)`, as vLLM's are the prompt and `max_tokens`.
The client's record of the turn (its first token and its answer) is what the
oracle compares.  Under a PRIORITY engine the server also sets the attribute
its queue's second key reads to `now` (vLLM's `arrival_time`, the moment the
request is handed over) and the preset sessions give the first key its
priority.  The program's claims and gauges, which may read the workload it
had, are left out; they do not act.
"""

from __future__ import annotations

import re
from typing import Optional

from ..diag import Diagnostic, SerqError
from ..ir.model import Program
from ..syntax import ast as A
from ..syntax.parser import parse
from .linker import Linker

NAMES = ("oracle_prompt", "oracle_out", "oracle_arrive", "oracle_gate")


def _snippet(engine: str, priority: Optional[str], t0: Optional[str]) -> str:
    init = "set oracle_prompt = 1; set oracle_out = 1; set oracle_arrive = 0;"
    if priority:
        init += f" set {priority} = 0;"
    server = (f"set {t0} = now; " if t0 else "") + f"{engine} (oracle_prompt, oracle_out);"
    return ("fn main() {\n"
            "  stage oracle_gate : delay;\n"
            "  workload {\n"
            "    arrive batch(1);\n"
            "    hidden oracle_out;\n"
            f"    init {{ {init} }}\n"
            "    session { run oracle_gate (cost(oracle_gate, oracle_arrive)); turn; }\n"
            "  }\n"
            f"  server {{ {server} }}\n"
            "}\n")


def compile_requests(path: str, sets: Optional[dict] = None, horizon: float = 1.0,
                     priority: Optional[str] = None, t0: Optional[str] = None) -> Program:
    """Link the program at ``path`` with the oracle's workload and server."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SerqError(Diagnostic("E001", f"cannot read {path}: {e.strerror}"))
    prog = parse(text, path)
    engines = [i for i in prog.main.items if type(i) is A.EngineDecl
               and any(type(x) is A.ERequest for x in i.items)]
    if len(engines) != 1:
        raise SerqError(Diagnostic(
            "E973", f"{path}: the oracle runs the requests of one engine; this program has "
                    f"{len(engines)} engines with a `request`",
            prog.main.span if engines == [] else engines[1].name_span,
            help="an engine says what it does with a request: `request (prompt, output) { … }`"))
    eng = engines[0]
    req = next(x for x in eng.items if type(x) is A.ERequest)
    if len(req.params) != 2:
        raise SerqError(Diagnostic(
            "E973", f"the request of engine `{eng.name}` takes {len(req.params)} parameters; the oracle "
                    "calls it with a request's prompt and output length", req.span,
            help="`request (prompt, output) { … }`"))
    taken = [n for n in NAMES if re.search(rf"\b{n}\b", text)]
    if taken:
        raise SerqError(Diagnostic("E973", f"{path} uses the name `{taken[0]}`, which the oracle's workload "
                                           "declares", help="rename it"))
    extra = parse(_snippet(eng.name, priority, t0), "<the oracle's workload>")
    keep = [i for i in prog.main.items
            if type(i) not in (A.Workload, A.Server, A.ClaimDecl, A.GaugeDecl)]
    prog.main.items = keep + list(extra.main.items)
    settings = {"horizon": horizon, "warmup": 0.0, "seed": 1, "arrivals": None, "trace": None}
    return Linker(path, sets, settings).link(prog)
