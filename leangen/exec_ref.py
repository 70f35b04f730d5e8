"""`lean/Serq/Spec/Exec.lean` and `Claims.lean`, transcribed into Python.

Every `def` of those two files has a function of the same name here, with
the same arguments in the same order, the same cases in the same order and
the same fuel, over Python integers used as naturals (`_sub` is ℕ's
truncated subtraction, `_div` its division).  The structures are the frozen
dataclasses of `leangen.lterms` (same names, same fields); a value of an
inductive type is a tuple whose first item names the constructor
(`("some", x)`, `("none",)`, `("wake", s)`), a nullary one of an
enumeration a string (`"ready"`).  Helpers that exist only because Python is
not Lean start with `_` and are not compared.

Nothing here is clever: it is the Lean read aloud, so running it on the
oracle scenarios tests the algorithm the theorems are about
(`tests/leangen/test_exec_ref.py`), and `tests/leangen/test_exec_names.py`
keeps the two lists of definitions equal.  The Lean recursions are Python
recursions; `run` raises the interpreter's recursion limit for them.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from .lterms import Alloc, Entry, Event, Frame, HoldSt, Iter, Job, Machine, Plan, Pool, PoolSt, Sess, Session

NONE = ("none",)


def _some(x):
    return ("some", x)


def _sub(a: int, b: int) -> int:
    """ℕ subtraction."""
    return a - b if a > b else 0


def _div(a: int, b: int) -> int:
    """ℕ division (x / 0 = 0)."""
    return 0 if b == 0 else a // b


# ---------------------------------------------------------------- lists and naturals


def lget(l, n, d):
    if not l:
        return d
    if n == 0:
        return l[0]
    return lget(l[1:], n - 1, d)


def lmod(l, n, f):
    if not l:
        return []
    if n == 0:
        return [f(l[0])] + l[1:]
    return [l[0]] + lmod(l[1:], n - 1, f)


def lsum(l):
    if not l:
        return 0
    return l[0] + lsum(l[1:])


def roundUp(b, n):
    return n if b == 0 else _div(n + b - 1, b) * b


def roundDown(b, n):
    return n if b == 0 else _div(n, b) * b


def boolN(c):
    return 1 if c else 0


def nonzero(n):
    return not (n == 0)


def binOp(op, a, b):
    if op == "add":
        return a + b
    if op == "sub":
        return _sub(a, b)
    if op == "mul":
        return a * b
    if op == "lt":
        return boolN(a < b)
    if op == "le":
        return boolN(a <= b)
    if op == "gt":
        return boolN(b < a)
    if op == "ge":
        return boolN(b <= a)
    if op == "eq":
        return boolN(a == b)
    if op == "ne":
        return boolN(not (a == b))
    if op == "and":
        return boolN(nonzero(a) and nonzero(b))
    return boolN(nonzero(a) or nonzero(b))  # or


def insertSorted(x, l):
    if not l:
        return [x]
    if x <= l[0]:
        return [x] + l
    return [l[0]] + insertSorted(x, l[1:])


def sortN(l):
    if not l:
        return []
    return insertSorted(l[0], sortN(l[1:]))


def prefixSums(acc, l):
    if not l:
        return 0
    return acc + l[0] + prefixSums(acc + l[0], l[1:])


def filterS(s, l):
    if not l:
        return []
    if l[0][0] == s:
        return [l[0]] + filterS(s, l[1:])
    return filterS(s, l[1:])


# ---------------------------------------------------------------- pools


def cachedTotal(es):
    if not es:
        return 0
    return es[0].units + cachedTotal(es[1:])


def evictable(es):
    return cachedTotal(es) + len(es)


def ownedBy(o, s):
    if o[0] == "some":
        return o[1] == s
    return False


def ownUnits(es, s):
    if not es:
        return 0
    e = es[0]
    return e.units if ownedBy(e.owner, s) else ownUnits(es[1:], s)


def killOwn(es, s, keep):
    if not es:
        return []
    e = es[0]
    if ownedBy(e.owner, s):
        if _sub(e.units, keep) == 0:
            return es[1:]
        return [replace(e, owner=NONE, units=_sub(e.units, keep))] + es[1:]
    return [e] + killOwn(es[1:], s, keep)


def evictOne(b, es):
    if not es:
        return []
    e = es[0]
    if b == 0 or e.units <= b:
        return es[1:]
    return [replace(e, units=_sub(e.units, b))] + es[1:]


def makeRoom(fuel, cap, b, need, ps):
    if fuel == 0:
        return ps
    if ps.used + cachedTotal(ps.cache) + need <= cap or not ps.cache:
        return ps
    return makeRoom(fuel - 1, cap, b, need, replace(ps, cache=evictOne(b, ps.cache)))


def poolAlloc(cap, b, need, ps):
    ps1 = makeRoom(evictable(ps.cache) + 1, cap, b, need, ps)
    return replace(ps1, used=ps1.used + need)


def appendEntry(xs, e):
    if not xs:
        return [e]
    return [xs[0]] + appendEntry(xs[1:], e)


def poolRelease(units, keep, s, t, o, ps):
    return replace(ps, used=_sub(ps.used, units),
                   cache=ps.cache if keep == 0 else appendEntry(killOwn(ps.cache, s, 0), Entry(_some(s), keep, t, o)))


defaultPool = Pool(0, 0, False, [])

emptyPool = PoolSt(0, [], [])


def poolOf(p, i):
    return lget(p.pools, i, defaultPool)


def pstOf(m, i):
    return lget(m.pools, i, emptyPool)


# ---------------------------------------------------------------- holds, sessions, expressions


def allocIn(al, q):
    if not al:
        return NONE
    a = al[0]
    return _some(a) if a.pool == q else allocIn(al[1:], q)


def allocOn(hs, q):
    if not hs:
        return NONE
    r = allocIn(hs[0].allocs, q)
    if r[0] == "some":
        return r
    return allocOn(hs[1:], q)


def heldIn(al, q):
    if not al:
        return 0
    return (al[0].units if al[0].pool == q else 0) + heldIn(al[1:], q)


def heldOn(hs, q):
    if not hs:
        return 0
    return heldIn(hs[0].allocs, q) + heldOn(hs[1:], q)


def holdersOf(xs, q):
    if not xs:
        return 0
    return boolN(0 < heldOn(xs[0].holds, q)) + holdersOf(xs[1:], q)


def ceilDivN(a, b):
    return 0 if b == 0 else _div(a + b - 1, b)


def decodersOf(js):
    if not js:
        return 0
    return boolN(js[0].decode) + decodersOf(js[1:])


def evalE(m, a, s, bl, e):
    t = e[0]
    if t == "num":
        return e[1]
    if t == "attr":
        return lget(a, e[1], 0)
    if t == "now":
        return m.now
    if t == "cachedIn":
        return ownUnits(pstOf(m, e[1]).cache, s)
    if t == "budgetLeft":
        return bl
    if t == "running":
        return len(m.residents)
    if t == "waiting":
        return len(pstOf(m, e[1]).queue)
    if t == "min":
        return min(evalE(m, a, s, bl, e[1]), evalE(m, a, s, bl, e[2]))
    if t == "max":
        return max(evalE(m, a, s, bl, e[1]), evalE(m, a, s, bl, e[2]))
    if t == "bin":
        return binOp(e[1], evalE(m, a, s, bl, e[2]), evalE(m, a, s, bl, e[3]))
    if t == "floorDiv":
        return _div(evalE(m, a, s, bl, e[1]), evalE(m, a, s, bl, e[2]))
    if t == "ceilDiv":
        return ceilDivN(evalE(m, a, s, bl, e[1]), evalE(m, a, s, bl, e[2]))
    if t == "cond":
        return evalE(m, a, s, bl, e[2]) if nonzero(evalE(m, a, s, bl, e[1])) else evalE(m, a, s, bl, e[3])
    if t == "lnot":
        return boolN(evalE(m, a, s, bl, e[1]) == 0)
    if t == "used":
        return pstOf(m, e[1]).used
    if t == "holders":
        return holdersOf(m.sess, e[1])
    if t == "runDecoding":
        return decodersOf(m.residents)
    return 0  # iter, agg, decoding, admission, remaining, runKv


def isStatic(e):
    t = e[0]
    if t in ("num", "attr"):
        return True
    if t in ("min", "max", "floorDiv", "ceilDiv"):
        return isStatic(e[1]) and isStatic(e[2])
    if t == "bin":
        return isStatic(e[2]) and isStatic(e[3])
    if t == "cond":
        return isStatic(e[1]) and isStatic(e[2]) and isStatic(e[3])
    if t == "lnot":
        return isStatic(e[1])
    return False


defaultSess = Sess([], [], [], "ended", 0, 0, False)


def sessOf(m, s):
    return lget(m.sess, s, defaultSess)


def setSess(m, s, f):
    return replace(m, sess=lmod(m.sess, s, f))


def setPool(m, i, f):
    return replace(m, pools=lmod(m.pools, i, f))


def evalS(m, s, bl, e):
    return evalE(m, sessOf(m, s).attrs, s, bl, e)


def setAttr(m, s, i, v):
    return setSess(m, s, lambda x: replace(x, attrs=lmod(x.attrs, i, lambda _: v)))


def isReady(st):
    return st == "ready"


# ---------------------------------------------------------------- queues


def lexLt(xs, ys):
    if xs and ys:
        return xs[0] < ys[0] or (xs[0] == ys[0] and lexLt(xs[1:], ys[1:]))
    return False


def keysOf(m, s, es):
    if not es:
        return []
    return [evalS(m, s, 0, es[0])] + keysOf(m, s, es[1:])


def leastKey(m, ks, best, ss):
    if not ss:
        return best
    s = ss[0]
    if lexLt(keysOf(m, s, ks), keysOf(m, best, ks)):
        return leastKey(m, ks, s, ss[1:])
    return leastKey(m, ks, best, ss[1:])


def queueHead(p, m, i, ss):
    if not ss:
        return NONE
    s = ss[0]
    if sessOf(m, s).front or not poolOf(p, i).keys:
        return _some(s)
    return _some(leastKey(m, poolOf(p, i).keys, s, ss[1:]))


# ---------------------------------------------------------------- events and residents


def insertEv(ev, es):
    if not es:
        return [ev]
    if ev.time < es[0].time:
        return [ev] + es
    return [es[0]] + insertEv(ev, es[1:])


def insertJob(j, ks):
    if not ks:
        return [j]
    if j.key < ks[0].key:
        return [j] + ks
    return [ks[0]] + insertJob(j, ks[1:])


def removeJob(s, js):
    if not js:
        return []
    if js[0].sess == s:
        return js[1:]
    return [js[0]] + removeJob(s, js[1:])


def jobOf(js, s):
    if not js:
        return NONE
    if js[0].sess == s:
        return _some(js[0])
    return jobOf(js[1:], s)


def removeQ(s, xs):
    if not xs:
        return []
    if xs[0] == s:
        return xs[1:]
    return [xs[0]] + removeQ(s, xs[1:])


# ---------------------------------------------------------------- releasing holds

slotTurnNo = 1
slotCached = 2
slotComputed = 3
slotMore = 7


def releaseAllocs(p, m, s, keepL, pos, al):
    if not al:
        return m
    a = al[0]
    b = poolOf(p, a.pool).block
    keep = min(a.units, roundDown(b, min(keepL[1], a.pos if pos else a.units))) if keepL[0] == "some" else 0
    m1 = setPool(m, a.pool, lambda ps: poolRelease(a.units, keep, s, m.now, m.ord, ps))
    m2 = m1 if keep == 0 else replace(m1, ord=m1.ord + 1)
    return releaseAllocs(p, m2, s, keepL, pos, al[1:])


def releaseHold(p, m, s, h, preempted):
    keepL = _some(evalS(m, s, 0, h.cache[1])) if h.cache[0] == "some" else NONE
    return releaseAllocs(p, m, s, keepL, preempted or h.grown, h.allocs)


def releaseAll(fuel, p, m, s):
    if fuel == 0:
        return m
    hs = sessOf(m, s).holds
    if not hs:
        return m
    h = hs[0]
    m1 = setSess(m, s, lambda x: replace(x, holds=x.holds[1:]))
    return releaseAll(fuel - 1, p, releaseHold(p, m1, s, h, False), s)


def endSess(p, m, s):
    m1 = releaseAll(len(sessOf(m, s).holds), p, m, s)
    m2 = replace(m1, residents=removeJob(s, m1.residents))
    return setSess(m2, s, lambda x: replace(x, status="ended", frames=[], holds=[]))


# ---------------------------------------------------------------- admission


def headerVals(m, s, bl, hps):
    if not hps:
        return []
    hp = hps[0]
    u = evalS(m, s, bl, hp.units)
    r = evalS(m, s, bl, hp.reserve[1]) if hp.reserve[0] == "some" else u
    return [(hp.pool, u, max(u, r))] + headerVals(m, s, bl, hps[1:])


def fits(p, m, vs):
    if not vs:
        return True
    q, _, r = vs[0]
    return pstOf(m, q).used + roundUp(poolOf(p, q).block, r) <= poolOf(p, q).cap and fits(p, m, vs[1:])


def rejects(p, m, s, hps):
    if not hps:
        return False
    hp = hps[0]
    cap = poolOf(p, hp.pool).cap
    b = poolOf(p, hp.pool).block
    badU = isStatic(hp.units) and cap < roundUp(b, evalS(m, s, 0, hp.units))
    if hp.reserve[0] == "some":
        badR = isStatic(hp.reserve[1]) and cap < roundUp(b, evalS(m, s, 0, hp.reserve[1]))
    else:
        badR = False
    return badU or badR or rejects(p, m, s, hps[1:])


def takeAllocs(p, m, s, rho, caching, vs):
    if not vs:
        return (m, [], 0)
    q, u, _ = vs[0]
    b = poolOf(p, q).block
    ps = pstOf(m, q)
    took = roundDown(b, min(rho, ownUnits(ps.cache, s))) if caching else 0
    units = max(roundUp(b, u), took)
    ps1 = replace(ps, cache=killOwn(ps.cache, s, took)) if caching else ps
    m1 = setPool(m, q, lambda _: poolAlloc(poolOf(p, q).cap, b, units, ps1))
    m2, al, c = takeAllocs(p, m1, s, rho, caching, vs[1:])
    return (m2, [Alloc(q, units, took)] + al, max(took, c))


def admitHold(p, m, s, bl, reuse, cache, body, vs):
    caching = cache[0] == "some"
    rho = evalS(m, s, bl, reuse[1]) if reuse[0] == "some" else 0
    m1, al, took = takeAllocs(p, m, s, rho, caching, vs)
    x = sessOf(m1, s)
    first = vs[0][0] if vs else 0
    h = HoldSt(al, cache, False, len(x.frames), first)
    bodyFrame = Frame(body, 0, "body")
    if x.frames:
        frames = [bodyFrame, replace(x.frames[0], pc=x.frames[0].pc + 1)] + x.frames[1:]
    else:
        frames = [bodyFrame]
    x1 = replace(x, attrs=lmod(x.attrs, slotCached, lambda _: took if caching else 0), frames=frames,
                 holds=[h] + x.holds, status="ready", adm=m1.admc, front=False)
    m2 = setSess(m1, s, lambda _: x1)
    return replace(m2, admc=m1.admc + 1)


def holdAt(p, m, s):
    fr = sessOf(m, s).frames
    if not fr:
        return NONE
    f = fr[0]
    st = lget(lget(p.blocks, f.blk, []), f.pc, ("stop",))
    if st[0] == "hold":
        _, hps, body, reuse, cache = st
        return _some((hps, body, reuse, cache))
    return NONE


# ---------------------------------------------------------------- preemption and growth


def dropHolds(fuel, p, m, s, q):
    if fuel == 0:
        return (m, NONE)
    hs = sessOf(m, s).holds
    if not hs:
        return (m, NONE)
    h = hs[0]
    m1 = setSess(m, s, lambda x: replace(x, holds=x.holds[1:]))
    m2 = releaseHold(p, m1, s, h, True)
    if allocIn(h.allocs, q)[0] == "some":
        return (m2, _some(h))
    return dropHolds(fuel - 1, p, m2, s, q)


def preempt(p, m, v, q):
    x = sessOf(m, v)
    r = allocOn(x.holds, q)
    pos = r[1].pos if r[0] == "some" else 0
    m1, hh = dropHolds(len(x.holds), p, m, v, q)
    if hh[0] == "none":
        return m1
    h = hh[1]
    y = sessOf(m1, v)
    keep = y.frames[_sub(len(y.frames), h.depth):]
    frames = [replace(keep[0], pc=_sub(keep[0].pc, 1))] + keep[1:] if keep else []
    m2 = setSess(m1, v, lambda z: replace(z, attrs=lmod(z.attrs, slotComputed, lambda _: pos), frames=frames,
                                          status="queued", front=True))
    m3 = setPool(m2, h.first, lambda ps: replace(ps, queue=[v] + ps.queue))
    return replace(m3, residents=removeJob(v, m3.residents), preempts=m3.preempts + 1)


def lastHolder(m, q, js):
    if not js:
        return NONE
    r = lastHolder(m, q, js[1:])
    if r[0] == "some":
        return r
    return _some(js[0].sess) if 0 < heldOn(sessOf(m, js[0].sess).holds, q) else NONE


def batchOf(xs, v):
    if not xs:
        return 0
    return (xs[0][1] if xs[0][0] == v else 0) + batchOf(xs[1:], v)


def dropBatch(xs, v):
    if not xs:
        return []
    if xs[0][0] == v:
        return dropBatch(xs[1:], v)
    return [xs[0]] + dropBatch(xs[1:], v)


def unbatch(v, pl):
    return replace(pl, left=pl.left + batchOf(pl.batch, v), batch=dropBatch(pl.batch, v))


def growAlloc(al, q, need):
    if not al:
        return []
    a = al[0]
    if a.pool == q:
        return [replace(a, units=a.units + need)] + al[1:]
    return [a] + growAlloc(al[1:], q, need)


def growIn(hs, q, need):
    if not hs:
        return []
    h = hs[0]
    if allocIn(h.allocs, q)[0] == "some":
        return [replace(h, allocs=growAlloc(h.allocs, q, need))] + hs[1:]
    return [h] + growIn(hs[1:], q, need)


def advanceAlloc(al, q, n):
    if not al:
        return []
    a = al[0]
    if a.pool == q:
        return [replace(a, pos=a.pos + n)] + al[1:]
    return [a] + advanceAlloc(al[1:], q, n)


def advanceIn(hs, q, n):
    if not hs:
        return []
    h = hs[0]
    if allocIn(h.allocs, q)[0] == "some":
        return [replace(h, allocs=advanceAlloc(h.allocs, q, n), grown=True)] + hs[1:]
    return [h] + advanceIn(hs[1:], q, n)


def growTo(fuel, p, m, pl, s, q, need):
    if fuel == 0:
        return (m, pl, True)
    pd = poolOf(p, q)
    ps = pstOf(m, q)
    if ps.used + need <= pd.cap:
        m1 = setPool(m, q, lambda x: poolAlloc(pd.cap, pd.block, need, x))
        return (setSess(m1, s, lambda x: replace(x, holds=growIn(x.holds, q, need))), pl, False)
    v = lastHolder(m, q, m.residents)
    if v[0] == "none":
        return (m, pl, True)
    m1 = preempt(p, m, v[1], q)
    pl1 = unbatch(v[1], pl)
    if v[1] == s:
        return (m1, pl1, True)
    return growTo(fuel - 1, p, m1, pl1, s, q, need)


# ---------------------------------------------------------------- running a session


def setMany(a, kvs):
    if not kvs:
        return a
    i, v = kvs[0]
    return setMany(lmod(a, i, lambda _: v), kvs[1:])


noSession = Session(0, [], [], False)


def doTurn(p, m, s):
    x = sessOf(m, s)
    a = lmod(x.attrs, slotTurnNo, lambda v: v + 1)
    spec = lget(p.sessions, s, noSession)
    if spec.preset:
        if x.turnIx < len(spec.turns):
            a1 = setMany(a, lget(spec.turns, x.turnIx, []))
            a2 = lmod(a1, slotMore, lambda _: boolN(x.turnIx + 1 < len(spec.turns)))
            return setSess(m, s, lambda y: replace(y, attrs=a2, turnIx=x.turnIx + 1))
        return setSess(m, s, lambda y: replace(y, attrs=lmod(a, slotMore, lambda _: 0)))
    return setSess(m, s, lambda y: replace(y, attrs=a))


def bumpPc(fs):
    if not fs:
        return []
    return [replace(fs[0], pc=fs[0].pc + 1)] + fs[1:]


def advance(m, s):
    return setSess(m, s, lambda x: replace(x, frames=bumpPc(x.frames)))


def push(m, s, f):
    return setSess(m, s, lambda x: replace(x, frames=[f] + x.frames))


def setStatus(m, s, st):
    return setSess(m, s, lambda x: replace(x, status=st))


def isDecode(mode):
    return mode == "decode"


def execStmt(p, m, s, st):
    t = st[0]
    if t == "turn":
        return (advance(doTurn(p, m, s), s), True)
    if t == "set":
        _, i, e = st
        return (advance(setAttr(m, s, i, evalS(m, s, 0, e)), s), True)
    if t == "observe":
        _, o, e = st
        return (advance(replace(m, obs=[(o, s, evalS(m, s, 0, e))] + m.obs), s), True)
    if t == "hold":
        hps = st[1]
        if rejects(p, m, s, hps):
            return (endSess(p, m, s), False)
        q = hps[0].pool if hps else 0
        m1 = setPool(m, q, lambda ps: replace(ps, queue=ps.queue + [s]))
        return (setStatus(m1, s, "queued"), False)
    if t == "run":
        _, stage, mode, work, grow = st
        w = evalS(m, s, 0, work)
        m1 = advance(m, s)
        if w == 0:
            return (m1, True)
        if stage == 0:
            j = Job(s, isDecode(mode), w, grow, sessOf(m1, s).adm, w)
            return (setStatus(replace(m1, residents=insertJob(j, m1.residents)), s, "busy"), False)
        ev = Event(m1.now + w, ("wake", s))
        return (setStatus(replace(m1, events=insertEv(ev, m1.events)), s, "busy"), False)
    if t == "branch":
        _, g, thn, els = st
        m1 = advance(m, s)
        if nonzero(evalS(m, s, 0, g)):
            return (push(m1, s, Frame(thn, 0, "seq")), True)
        if els[0] == "some":
            return (push(m1, s, Frame(els[1], 0, "seq")), True)
        return (m1, True)
    if t == "loop":
        return (push(advance(m, s), s, Frame(st[1], 0, "loop")), True)
    return (endSess(p, m, s), False)  # stop


def blockEnd(p, m, s, f):
    if f.kind == "loop":
        return setSess(m, s, lambda x: replace(x, frames=[replace(f, pc=0)] + x.frames[1:]))
    if f.kind == "body":
        x = sessOf(m, s)
        m1 = setSess(m, s, lambda y: replace(y, frames=y.frames[1:], holds=y.holds[1:]))
        if x.holds:
            return setAttr(releaseHold(p, m1, s, x.holds[0], False), s, slotComputed, 0)
        return m1
    return setSess(m, s, lambda x: replace(x, frames=x.frames[1:]))  # seq


def runSess(fuel, p, m, s):
    if fuel == 0:
        return m
    x = sessOf(m, s)
    if not isReady(x.status):
        return m
    if not x.frames:
        return setStatus(m, s, "ended")
    f = x.frames[0]
    stmts = lget(p.blocks, f.blk, [])
    if len(stmts) <= f.pc:
        return runSess(fuel - 1, p, blockEnd(p, m, s, f), s)
    m1, go = execStmt(p, m, s, lget(stmts, f.pc, ("stop",)))
    return runSess(fuel - 1, p, m1, s) if go else m1


# ---------------------------------------------------------------- the iteration


def memAlloc(p, m, s):
    if p.engine.memory[0] == "some":
        return heldOn(sessOf(m, s).holds, p.engine.memory[1])
    return 0


def kvOf(p, m, d, js):
    if not js:
        return 0
    j = js[0]
    return (memAlloc(p, m, j.sess) if j.decode == d else 0) + kvOf(p, m, d, js[1:])


def evalJ(p, m, j, e):
    t = e[0]
    if t == "num":
        return e[1]
    if t == "attr":
        return lget(sessOf(m, j.sess).attrs, e[1], 0)
    if t == "decoding":
        return boolN(j.decode)
    if t == "admission":
        return j.key
    if t == "remaining":
        return j.rem
    if t == "running":
        return len(m.residents)
    if t == "runDecoding":
        return decodersOf(m.residents)
    if t == "runKv":
        return kvOf(p, m, e[1], m.residents)
    if t == "min":
        return min(evalJ(p, m, j, e[1]), evalJ(p, m, j, e[2]))
    if t == "max":
        return max(evalJ(p, m, j, e[1]), evalJ(p, m, j, e[2]))
    if t == "bin":
        return binOp(e[1], evalJ(p, m, j, e[2]), evalJ(p, m, j, e[3]))
    if t == "floorDiv":
        return _div(evalJ(p, m, j, e[1]), evalJ(p, m, j, e[2]))
    if t == "ceilDiv":
        return ceilDivN(evalJ(p, m, j, e[1]), evalJ(p, m, j, e[2]))
    if t == "cond":
        return evalJ(p, m, j, e[2]) if nonzero(evalJ(p, m, j, e[1])) else evalJ(p, m, j, e[3])
    if t == "lnot":
        return boolN(evalJ(p, m, j, e[1]) == 0)
    return 0


def onlyOk(p, m, j, o):
    if o[0] == "none":
        return True
    return nonzero(evalJ(p, m, j, o[1]))


def jobKeys(p, m, j, es):
    if not es:
        return []
    return [evalJ(p, m, j, es[0])] + jobKeys(p, m, j, es[1:])


def insertKeyed(x, ys):
    if not ys:
        return [x]
    if lexLt(x[0], ys[0][0]):
        return [x] + ys
    return [ys[0]] + insertKeyed(x, ys[1:])


def sortKeyed(acc, xs):
    if not xs:
        return acc
    return sortKeyed(insertKeyed(xs[0], acc), xs[1:])


def keyedJobs(p, m, js):
    if not js:
        return []
    return [(jobKeys(p, m, js[0], p.engine.keys), js[0].sess)] + keyedJobs(p, m, js[1:])


def seconds(xs):
    if not xs:
        return []
    return [xs[0][1]] + seconds(xs[1:])


def serveOrder(p, m):
    return seconds(sortKeyed([], keyedJobs(p, m, m.residents)))


def want(pl, j):
    w = 1 if j.decode else (min(j.rem, pl.chunk) if nonzero(pl.chunk) else j.rem)
    return min(min(w, j.rem), pl.left)


def addBatch(pl, s, n):
    return replace(pl, left=_sub(pl.left, n), batch=pl.batch + [(s, n)])


def serveJob(k, p, m, pl, j):
    n = want(pl, j)
    if n == 0:
        return (m, pl)
    if j.grow[0] == "none":
        return (m, addBatch(pl, j.sess, n))
    q = j.grow[1]
    r = allocOn(sessOf(m, j.sess).holds, q)
    if r[0] == "none":
        return (m, addBatch(pl, j.sess, n))
    a = r[1]
    if a.pos + n <= a.units:
        return (m, addBatch(pl, j.sess, n))
    m1, pl1, out = growTo(k, p, m, pl, j.sess, q, _sub(roundUp(poolOf(p, q).block, a.pos + n), a.units))
    return (m1, replace(pl1, stop=True)) if out else (m1, addBatch(pl1, j.sess, n))


def serveAll(k, p, m, pl, ss):
    if not ss:
        return (m, pl)
    s = ss[0]
    if pl.stop or pl.left == 0:
        return (m, pl)
    r = jobOf(m.residents, s)
    if r[0] == "some":
        if batchOf(pl.batch, s) == 0 and onlyOk(p, m, r[1], p.engine.serveOnly):
            m1, pl1 = serveJob(k, p, m, pl, r[1])
            return serveAll(k, p, m1, pl1, ss[1:])
        return serveAll(k, p, m, pl, ss[1:])
    return serveAll(k, p, m, pl, ss[1:])


def engineHead(p, m, i, pss):
    if not pss:
        return NONE
    ps = pss[0]
    h = queueHead(p, m, i, ps.queue)
    if h[0] == "some":
        return _some((i, h[1])) if poolOf(p, i).viaEngine else engineHead(p, m, i + 1, pss[1:])
    return engineHead(p, m, i + 1, pss[1:])


def admitBudget(pl):
    return min(pl.left, pl.chunk) if nonzero(pl.chunk) else pl.left


def admitLoop(fuel, k, p, m, pl):
    if fuel == 0:
        return (m, pl)
    if pl.noAdmit or not (m.preempts == pl.pre0) or pl.left == 0:
        return (m, pl)
    h = engineHead(p, m, 0, m.pools)
    if h[0] == "none":
        return (m, pl)
    q, s = h[1]
    st = holdAt(p, m, s)
    if st[0] == "none":
        return (m, replace(pl, noAdmit=True))
    hps, body, reuse, cache = st[1]
    bl = admitBudget(pl)
    vs = headerVals(m, s, bl, hps)
    if fits(p, m, vs):
        m1 = setPool(m, q, lambda x: replace(x, queue=removeQ(s, x.queue)))
        m2 = runSess(k, p, admitHold(p, m1, s, bl, reuse, cache, body, vs), s)
        r = jobOf(m2.residents, s)
        if r[0] == "some":
            if batchOf(pl.batch, s) == 0 and onlyOk(p, m2, r[1], p.engine.admitOnly):
                m3, pl1 = serveJob(k, p, m2, pl, r[1])
                return admitLoop(fuel - 1, k, p, m3, pl1)
            return admitLoop(fuel - 1, k, p, m2, pl)
        return admitLoop(fuel - 1, k, p, m2, pl)
    return (m, replace(pl, noAdmit=True))


def batchSum(xs):
    if not xs:
        return 0
    return xs[0][1] + batchSum(xs[1:])


def jobDecode(m, s):
    r = jobOf(m.residents, s)
    return r[1].decode if r[0] == "some" else False


def statBatch(p, m, bt):
    if not bt:
        return (0, 0, 0, 0)
    s, n = bt[0]
    pre, dec, kvd, kvp = statBatch(p, m, bt[1:])
    if jobDecode(m, s):
        return (pre, dec + 1, kvd + memAlloc(p, m, s), kvp)
    return (pre + n, dec, kvd, kvp + memAlloc(p, m, s))


def demandOf(pl, js):
    if not js:
        return 0
    j = js[0]
    d = min(1, j.rem) if j.decode else (min(j.rem, pl.chunk) if nonzero(pl.chunk) else j.rem)
    return d + demandOf(pl, js[1:])


def jobPos(m, j):
    if j.grow[0] == "some":
        r = allocOn(sessOf(m, j.sess).holds, j.grow[1])
        if r[0] == "some":
            return r[1].pos
        return _sub(j.work, j.rem)
    return _sub(j.work, j.rem)


def attention2Of(m, bt):
    if not bt:
        return 0
    s, n = bt[0]
    r = jobOf(m.residents, s)
    if r[0] == "some":
        v = 0 if r[1].decode else n * (2 * jobPos(m, r[1]) + n)
    else:
        v = 0
    return v + attention2Of(m, bt[1:])


def arrivedOf(xs):
    if not xs:
        return 0
    return (0 if xs[0].status == "absent" else 1) + arrivedOf(xs[1:])


def poolStats(m, i, pss):
    if not pss:
        return ([], [], [])
    ps = pss[0]
    u, h, q = poolStats(m, i + 1, pss[1:])
    return ([ps.used] + u, [holdersOf(m.sess, i)] + h, [len(ps.queue)] + q)


def iterRec(p, m, pl):
    pre, dec, kvd, kvp = statBatch(p, m, pl.batch)
    u, h, q = poolStats(m, 0, m.pools)
    return Iter(m.now, batchSum(pl.batch), pre, dec, len(m.residents), kvd, kvp, demandOf(pl, m.residents),
                m.served, arrivedOf(m.sess), attention2Of(m, pl.batch), u, h, q)


def iterVar(r, v):
    return getattr(r, v)


def evalI(r, e):
    t = e[0]
    if t == "num":
        return e[1]
    if t == "now":
        return r.now
    if t == "iter":
        return iterVar(r, e[1])
    if t == "used":
        return lget(r.used, e[1], 0)
    if t == "holders":
        return lget(r.holders, e[1], 0)
    if t == "waiting":
        return lget(r.queued, e[1], 0)
    if t == "min":
        return min(evalI(r, e[1]), evalI(r, e[2]))
    if t == "max":
        return max(evalI(r, e[1]), evalI(r, e[2]))
    if t == "bin":
        return binOp(e[1], evalI(r, e[2]), evalI(r, e[3]))
    if t == "floorDiv":
        return _div(evalI(r, e[1]), evalI(r, e[2]))
    if t == "ceilDiv":
        return ceilDivN(evalI(r, e[1]), evalI(r, e[2]))
    if t == "cond":
        return evalI(r, e[2]) if nonzero(evalI(r, e[1])) else evalI(r, e[3])
    if t == "lnot":
        return boolN(evalI(r, e[1]) == 0)
    return 0


def admitIf(k, p, m, pl):
    if p.engine.admits:
        return admitLoop(k, k, p, m, pl)
    return (m, pl)


def attempt(k, p, m):
    budget = evalE(m, [], 0, 0, p.engine.budget)
    chunk = evalE(m, [], 0, 0, p.engine.chunk)
    pl0 = Plan(budget, chunk, [], False, False, m.preempts)
    m1, pl1 = serveAll(k, p, m, pl0, serveOrder(p, m))
    m2, pl2 = admitIf(k, p, m1, pl1)
    if not pl2.batch and m2.preempts == pl2.pre0:
        return replace(m2, stalled=True)
    r = iterRec(p, m2, pl2)
    ev = Event(m2.now + evalI(r, p.engine.cost), ("iterEnd", pl2.batch))
    return replace(m2, busy=True, events=insertEv(ev, m2.events), served=m2.served + batchSum(pl2.batch),
                   iters=[r] + m2.iters)


def updJob(js, s, rem):
    if not js:
        return []
    if js[0].sess == s:
        return [replace(js[0], rem=rem)] + js[1:]
    return [js[0]] + updJob(js[1:], s, rem)


def finishJobs(m, bt):
    if not bt:
        return m
    s, n = bt[0]
    r = jobOf(m.residents, s)
    if r[0] == "none":
        return finishJobs(m, bt[1:])
    j = r[1]
    m1 = setSess(m, s, lambda x: replace(x, holds=advanceIn(x.holds, j.grow[1], n))) \
        if j.grow[0] == "some" else m
    return finishJobs(replace(m1, residents=updJob(m1.residents, s, _sub(j.rem, n))), bt[1:])


def doneJobs(m, js):
    if not js:
        return m
    j = js[0]
    if j.rem == 0:
        return doneJobs(setStatus(replace(m, residents=removeJob(j.sess, m.residents), ready=m.ready + [j.sess]),
                                  j.sess, "ready"), js[1:])
    return doneJobs(m, js[1:])


def endIteration(m, bt):
    m1 = finishJobs(replace(m, busy=False), bt)
    return doneJobs(m1, m1.residents)


# ---------------------------------------------------------------- settling, events, the run


def freeHead(p, m, i, pss):
    if not pss:
        return NONE
    ps = pss[0]
    hq = queueHead(p, m, i, ps.queue)
    if hq[0] == "some":
        s = hq[1]
        if poolOf(p, i).viaEngine:
            return freeHead(p, m, i + 1, pss[1:])
        h = holdAt(p, m, s)
        if h[0] == "some":
            if fits(p, m, headerVals(m, s, 0, h[1][0])):
                return _some((i, s, h[1]))
            return freeHead(p, m, i + 1, pss[1:])
        return freeHead(p, m, i + 1, pss[1:])
    return freeHead(p, m, i + 1, pss[1:])


def settle(fuel, k, p, m):
    if fuel == 0:
        return m
    if m.ready:
        s = m.ready[0]
        return settle(fuel - 1, k, p, runSess(k, p, replace(m, ready=m.ready[1:]), s))
    h = freeHead(p, m, 0, m.pools)
    if h[0] == "none":
        return m
    q, s, (hps, body, reuse, cache) = h[1]
    vs = headerVals(m, s, 0, hps)
    m1 = setPool(m, q, lambda x: replace(x, queue=removeQ(s, x.queue)))
    m2 = admitHold(p, m1, s, 0, reuse, cache, body, vs)
    return settle(fuel - 1, k, p, replace(m2, ready=m2.ready + [s]))


def engineWaiting(p, i, pss):
    if not pss:
        return False
    return (poolOf(p, i).viaEngine and bool(pss[0].queue)) or engineWaiting(p, i + 1, pss[1:])


def pendingNow(m):
    if m.events:
        return m.events[0].time == m.now
    return False


def canStart(p, m):
    return (not m.busy) and (not m.stalled) and (not pendingNow(m)) and \
        (bool(m.residents) or engineWaiting(p, 0, m.pools))


def arrival(p, m, s):
    if s < len(p.sessions):
        ev = Event(max(m.now, lget(p.sessions, s, noSession).arrive), ("arrive", s))
        return replace(m, events=insertEv(ev, m.events))
    return m


def handle(p, m, ev):
    if ev[0] == "wake":
        s = ev[1]
        return setStatus(replace(m, ready=m.ready + [s]), s, "ready")
    if ev[0] == "iterEnd":
        return endIteration(m, ev[1])
    s = ev[1]  # arrive
    return setStatus(replace(arrival(p, m, s + 1), ready=m.ready + [s]), s, "ready")


def drive(fuel, k, p, m):
    if fuel == 0:
        return m
    m1 = settle(k, k, p, m)
    m2 = attempt(k, p, m1) if canStart(p, m1) else m1
    if not m2.events:
        return m2
    e = m2.events[0]
    return drive(fuel - 1, k, p, handle(p, replace(m2, events=m2.events[1:], now=e.time, stalled=False), e.ev))


def initBlock(m0, s, a, sts):
    if not sts:
        return a
    st = sts[0]
    if st[0] == "set":
        _, i, e = st
        return initBlock(m0, s, lmod(a, i, lambda _: evalE(m0, a, s, 0, e)), sts[1:])
    return initBlock(m0, s, a, sts[1:])


def zeros(n):
    if n == 0:
        return []
    return [0] + zeros(n - 1)


def initSess(p, m0, s, spec):
    a0 = lmod(zeros(p.nattrs), 0, lambda _: s)
    a1 = initBlock(replace(m0, now=spec.arrive), s, a0, lget(p.blocks, p.init[1], [])) \
        if p.init[0] == "some" else a0
    return Sess(setMany(a1, spec.attrs), [Frame(p.main, 0, "seq")], [], "absent", 0, 0, False)


def initSessions(p, m0, s, xs):
    if not xs:
        return []
    return [initSess(p, m0, s, xs[0])] + initSessions(p, m0, s + 1, xs[1:])


def emptyPools(ps):
    if not ps:
        return []
    return [emptyPool] + emptyPools(ps[1:])


def start(p):
    m0 = Machine(0, [], emptyPools(p.pools), [], False, False, [], 0, 1, [], [], 0, 0, [])
    return arrival(p, replace(m0, sess=initSessions(p, m0, 0, p.sessions)), 0)


def run(p, fuel):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 1_000_000))
    try:
        return drive(fuel, fuel, p, start(p))
    finally:
        sys.setrecursionlimit(old)


def complete(p, m):
    return (not m.events) and (not m.ready) and freeHead(p, m, 0, m.pools)[0] == "none" and not canStart(p, m)


# ---------------------------------------------------------------- what a run observed


def obsOf(o, xs):
    if not xs:
        return []
    o1, s, v = xs[0]
    if o1 == o:
        return [(s, v)] + obsOf(o, xs[1:])
    return obsOf(o, xs[1:])


def bySession(l, s, n):
    if n == 0:
        return []
    return filterS(s, l) + bySession(l, s + 1, n - 1)


def obsLists(obs, ns, o, n):
    if n == 0:
        return []
    return [bySession(obsOf(o, obs), 0, ns)] + obsLists(obs, ns, o + 1, n - 1)


def observations(p, m):
    return obsLists(list(reversed(m.obs)), len(p.sessions), 0, p.nobs)


def runW(p, fuel):
    m = run(p, fuel)
    return (observations(p, m), m.preempts)


def steps(p, fuel):
    return 0 if not p.sessions else run(p, fuel).now + 1


# ---------------------------------------------------------------- Claims.lean


def valuesOf(o, xs):
    if not xs:
        return []
    o1, _, v = xs[0]
    if o1 == o:
        return [v] + valuesOf(o, xs[1:])
    return valuesOf(o, xs[1:])


def lmax(xs):
    if not xs:
        return 0
    return max(xs[0], lmax(xs[1:]))


def lmin(xs):
    if not xs:
        return 0
    if not xs[1:]:
        return xs[0]
    return min(xs[0], lmin(xs[1:]))


def aggOf(a, vs):
    if a == "total":
        return lsum(vs)
    if a == "count":
        return len(vs)
    if a == "largest":
        return lmax(vs)
    if a == "smallest":
        return lmin(vs)
    return prefixSums(0, sortN(vs))  # prefixTotal


def evalEnd(m, e):
    t = e[0]
    if t == "num":
        return e[1]
    if t == "now":
        return m.now
    if t == "agg":
        return aggOf(e[1], valuesOf(e[2], m.obs))
    if t == "min":
        return min(evalEnd(m, e[1]), evalEnd(m, e[2]))
    if t == "max":
        return max(evalEnd(m, e[1]), evalEnd(m, e[2]))
    if t == "bin":
        return binOp(e[1], evalEnd(m, e[2]), evalEnd(m, e[3]))
    if t == "floorDiv":
        return _div(evalEnd(m, e[1]), evalEnd(m, e[2]))
    if t == "ceilDiv":
        return ceilDivN(evalEnd(m, e[1]), evalEnd(m, e[2]))
    if t == "cond":
        return evalEnd(m, e[2]) if nonzero(evalEnd(m, e[1])) else evalEnd(m, e[3])
    if t == "lnot":
        return boolN(evalEnd(m, e[1]) == 0)
    return 0


def allGiven(m0, g, xs):
    if not xs:
        return True
    return nonzero(evalE(m0, xs[0].attrs, 0, 0, g)) and allGiven(m0, g, xs[1:])


def givenOk(p, g):
    if g[0] == "none":
        return True
    return allGiven(start(p), g[1], start(p).sess)


def allEnded(xs):
    if not xs:
        return True
    return xs[0].status == "ended" and allEnded(xs[1:])


def everyIter(e, rs):
    if not rs:
        return True
    return nonzero(evalI(rs[0], e)) and everyIter(e, rs[1:])


def someIter(e, rs):
    if not rs:
        return False
    return nonzero(evalI(rs[0], e)) or someIter(e, rs[1:])


def check(p, fuel, c):
    return _deep(_check, p, fuel, c)


def _check(p, fuel, c):
    if givenOk(p, c.given):
        m = run(p, fuel)
        if c.kind == "everyIter":
            return complete(p, m) and everyIter(c.expr, m.iters)
        if c.kind == "someIter":
            return someIter(c.expr, m.iters)
        return complete(p, m) and ((not allEnded(m.sess)) or nonzero(evalEnd(m, c.expr)))
    return True


# ---------------------------------------------------------------- Claims.lean: a family of workloads
# A Law is ("batch",), ("renewal", gap) or ("poisson",).


def arrivalsOk(law, i, prev, ws):
    if not ws:
        return True
    w = ws[0]
    if law[0] == "batch":
        return w.arrive == 0 and arrivalsOk(law, i + 1, prev, ws[1:])
    if law[0] == "renewal":
        return w.arrive == (i + 1) * law[1] and arrivalsOk(law, i + 1, prev, ws[1:])
    return prev <= w.arrive and arrivalsOk(law, i + 1, w.arrive, ws[1:])  # poisson


def slotsOf(xs):
    if not xs:
        return []
    return [xs[0][0]] + slotsOf(xs[1:])


def natsEq(xs, ys):
    if not xs and not ys:
        return True
    if xs and ys:
        return xs[0] == ys[0] and natsEq(xs[1:], ys[1:])
    return False


def shapeOk(slots, w):
    return (not w.preset) and (not w.turns) and natsEq(slotsOf(w.attrs), slots)


def allShaped(slots, ws):
    if not ws:
        return True
    return shapeOk(slots, ws[0]) and allShaped(slots, ws[1:])


def inFamily(law, slots, bound, ws):
    return len(ws) <= bound and allShaped(slots, ws) and arrivalsOk(law, 0, 0, ws)


def stmtCount(bs):
    if not bs:
        return 0
    return len(bs[0]) + stmtCount(bs[1:])


def innerFuel(p):
    return (len(p.sessions) + 2) * (2 * stmtCount(p.blocks) + 4)


def _deep(f, *args):
    """f(*args) with room for the Lean recursions (a list of iterations is
    walked by recursion)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 1_000_000))
    try:
        return f(*args)
    finally:
        sys.setrecursionlimit(old)


def runN(p, n):
    return _deep(drive, n, innerFuel(p), p, start(p))


def holdsAt(p, c, n):
    m = runN(p, n)
    if c.kind == "everyIter":
        return _deep(everyIter, c.expr, m.iters)
    if c.kind == "someIter":
        return _deep(someIter, c.expr, m.iters)
    return (not allEnded(m.sess)) or nonzero(evalEnd(m, c.expr))
