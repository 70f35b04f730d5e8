"""Compiled statements: each IR block once as a list of ``CS`` (its
expressions compiled, its references resolved where they are constant, the
client's answer points made explicit), which the interpreter
(serq.sim.interp) runs and serq.sim.codegen writes out as segments."""

from __future__ import annotations

from ..ir import model as M
from .compile import is_static
from .errors import FieldLoc
from .stages import MODES

OP_SET, OP_OBS, OP_RUN, OP_HOLD, OP_TURN, OP_ANSWER, OP_BRANCH, OP_LOOP, OP_WHILE = range(9)
OP_GROW, OP_DROP, OP_RELEASE, OP_LOAD, OP_CHOOSE, OP_END, OP_FORK, OP_JOIN = range(9, 17)
OP_SEG = 17   # straight statements compiled to one function (serq.sim.codegen)
OP_CONTENT = 18


# a thread that executes this many statements without blocking livelocks (R004)
MAX_STATEMENTS = 1_000_000


class CS:
    """A compiled statement."""

    __slots__ = ("op", "loc", "slot", "f", "obs", "stage_m", "stage_const", "mode", "grow_m", "also_m",
                 "what", "members", "f_units", "f_res", "st_units", "st_res", "f_reuse", "f_cache",
                 "lease_m", "f_lease", "body", "then", "other", "keys", "pool_m", "name", "nres",
                 "ir", "n", "stmts", "ends", "lines", "locs", "src", "f_len")

    def __init__(self, op, loc):
        self.op = op
        self.loc = loc
        self.ir = None


def block(sim, b: int) -> list:
    """Block ``b`` of the program compiled (each block once: ``sim.blocks``)."""
    if b in sim.blocks:
        return sim.blocks[b]
    p = sim.program
    blk = p.blocks[b]
    out = []
    n = len(blk.stmts)
    # answer points: after a Turn, before the next client statement, or
    # at the end of the block
    answer_before = set()
    answer_at_end = False
    for i, s in enumerate(blk.stmts):
        if type(s) is M.STurn:
            j = i + 1
            while j < n and blk.sides[j] != "client":
                j += 1
            if j < n:
                answer_before.add(j)
            else:
                answer_at_end = True
    for i, (s, loc) in enumerate(zip(blk.stmts, blk.locs)):
        if loc is None:     # (an IR file need not locate its statements: an error names the field)
            loc = FieldLoc(f"$.blocks[{b}].stmts[{i}]")
        if i in answer_before:
            out.append(CS(OP_ANSWER, loc))
        c = stmt(sim, s, loc)
        c.ir = s     # (serq.sim.codegen writes its expressions out)
        out.append(c)
    if answer_at_end:
        out.append(CS(OP_ANSWER, None))
    sim.blocks[b] = out
    return out


def stmt(sim, s, loc) -> CS:
    comp = sim.comp
    p = sim.program
    t = type(s)
    if t is M.SSet:
        c = CS(OP_SET, loc)
        c.slot = s.slot
        c.f = comp.expr(s.expr)
    elif t is M.SObserve:
        c = CS(OP_OBS, loc)
        c.obs = s.observe
        c.f = comp.expr(s.expr)
    elif t is M.STurn:
        c = CS(OP_TURN, loc)
    elif t is M.SRun:
        c = CS(OP_RUN, loc)
        c.stage_m = comp.member(s.stage, "stage")
        k = comp.const_member(s.stage)
        c.stage_const = None if k is None or s.also else sim.stages[k]
        c.mode = MODES[s.mode]
        c.f = comp.expr(s.work)
        c.grow_m = comp.member(s.growing, "pool") if s.growing is not None else None
        c.also_m = [comp.member(r, "stage") for r in s.also]
        c.name = p.stages[s.stage.base].name
        c.what = f"work of `run {c.name}`"
    elif t is M.SHold:
        c = CS(OP_HOLD, loc)
        c.members = [comp.member(hp.pool, "pool") for hp in s.pools]
        c.f_units = [comp.expr(hp.units) for hp in s.pools]
        c.f_res = [comp.expr(hp.reserve) if hp.reserve is not None else None for hp in s.pools]
        c.st_units = [is_static(hp.units) for hp in s.pools]
        c.st_res = [hp.reserve is not None and is_static(hp.reserve) for hp in s.pools]
        c.f_reuse = comp.expr(s.reuse) if s.reuse is not None else None
        c.f_cache = comp.expr(s.cache) if s.cache is not None else None
        if s.lease is not None:
            c.lease_m = comp.member(s.lease.pool, "pool")
            c.f_lease = comp.expr(s.lease.time)
        else:
            c.lease_m = None
            c.f_lease = None
        c.name = [p.pools[hp.pool.base].name for hp in s.pools]
        c.body = block(sim, s.body)
    elif t is M.SGrow or t is M.SLoad:
        c = CS(OP_GROW if t is M.SGrow else OP_LOAD, loc)
        c.pool_m = comp.member(s.pool, "pool")
        c.f = comp.expr(s.expr)
        c.name = p.pools[s.pool.base].name
    elif t is M.SDrop or t is M.SRelease:
        c = CS(OP_DROP if t is M.SDrop else OP_RELEASE, loc)
        c.pool_m = comp.member(s.pool, "pool")
        c.name = p.pools[s.pool.base].name
    elif t is M.SBranch:
        c = CS(OP_BRANCH, loc)
        c.f = comp.expr(s.guard)
        c.then = block(sim, s.then)
        c.other = block(sim, s.other) if s.other is not None else None
    elif t is M.SLoop:
        c = CS(OP_LOOP, loc)
        c.body = block(sim, s.body)
    elif t is M.SWhile:
        c = CS(OP_WHILE, loc)
        c.f = comp.expr(s.guard)
        c.body = block(sim, s.body)
    elif t is M.SChoose:
        c = CS(OP_CHOOSE, loc)
        c.slot = s.slot
        c.f = comp.expr(s.count)
        c.keys = [comp.expr(k) for k in s.keys]
    elif t is M.SEnd:
        c = CS(OP_END, loc)
    elif t is M.SFork:
        c = CS(OP_FORK, loc)
        c.body = block(sim, s.body)
    elif t is M.SJoin:
        c = CS(OP_JOIN, loc)
    elif t is M.SContent:
        c = CS(OP_CONTENT, loc)
        c.f = comp.expr(s.id)
        c.f_len = comp.expr(s.len)
    else:  # pragma: no cover
        raise TypeError(s)
    return c


def last_loc(program, b):
    """The location of the last located statement of block ``b``."""
    blk = program.blocks[b]
    for loc in reversed(blk.locs):
        if loc is not None:
            return loc
    return None
