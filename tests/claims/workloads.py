"""The same program under another workload: what a tool gives a program that
its text does not (explicit sessions, another arrival law, another init).

Each helper returns a new IR program, validated, with the deployment, the
server and the claims unchanged."""

from __future__ import annotations

import dataclasses

from serq.ir import model as M
from serq.ir import validate
from serq.link import compile_file, compile_source
from serq.sim import simulate

PRE = 'use "std/args";\nfn main() {\n'
POST = '\n}\n'


def link(body: str, **kw) -> M.Program:
    """A main body (wrapped in `fn main() { … }`), linked."""
    kw.setdefault("horizon", 100.0)
    return compile_source(PRE + body + POST, "t.sq", **kw)


def program(path: str, **kw) -> M.Program:
    kw.setdefault("horizon", 100.0)
    return compile_file(path, **kw)


def num(x: float) -> M.ENum:
    return M.ENum(float(x))


def attr(p: M.Program, name: str) -> M.EAttr:
    return M.EAttr(p.slot(name))


def with_workload(p: M.Program, *, arrival=None, init: dict | None = None, **settings) -> M.Program:
    """``arrival``: another arrival law (an ``M.Arrival``); ``init``: the init
    block's statements replaced by ``set NAME = EXPR`` for each item;
    ``settings``: horizon, warmup, seed, arrivals."""
    if arrival is not None:
        p = dataclasses.replace(p, arrival=arrival)
    if init is not None:
        assert p.init is not None, "the program has no init block to replace"
        stmts = tuple(M.SSet(p.slot(k), v) for k, v in init.items())
        blk = M.Block(stmts, (None,) * len(stmts), ("client",) * len(stmts))
        blocks = list(p.blocks)
        blocks[p.init] = blk
        p = dataclasses.replace(p, blocks=tuple(blocks))
    if settings:
        p = dataclasses.replace(p, **settings)
    validate(p)
    return p


def sessions(p: M.Program, rows: list[dict]) -> M.Program:
    """Explicit sessions, all at time 0, each with its attributes preset
    (written after its init has run)."""
    specs = tuple(M.SessionSpec(tuple((p.slot(k), float(v)) for k, v in r.items())) for r in rows)
    return with_workload(p, arrival=M.ASessions(specs))


def without_claims(p: M.Program) -> M.Program:
    return dataclasses.replace(p, claims=())


def with_claims(p: M.Program, claims) -> M.Program:
    p = dataclasses.replace(p, claims=tuple(claims))
    validate(p)
    return p


def claims(p: M.Program) -> dict:
    """Run ``p``; its claims' JSON records by name."""
    return {c["name"]: c for c in simulate(p).data()["claims"]}


def verdicts(p: M.Program) -> dict:
    return {name: c["verdict"] for name, c in claims(p).items()}
