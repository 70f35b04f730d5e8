"""The deployment view: the program as a queueing network.

* a **station** per stage (a family member named by a constant index is its
  own station; a member chosen at run time stands for the whole family);
* a **queue** per pool that some hold waits on first (a hold joins its first
  pool's queue), drawn inside that pool's enclosure;
* an **enclosure** per pool around the stations its holds reach, labelled
  with its capacity and rules, and one per hold (one per source location: the
  server's statements are copied after every turn) around the stations its
  body reaches, transitively;
* **edges**: the successor relation on the places a request visits (the
  arrival, queues, stations, the end), threaded through branches (both arms,
  labelled with the guard), loops and whiles (the cycle back), forks (a
  dashed leg) and joins; two runs at the same station in a row are one visit;
* an engine's pools attached to it: its memory pool and the pools it admits
  (a dotted ``admits`` edge to the queue).

Enclosures must nest to be drawn as boxes.  One whose stations cross another's
(a pool held around {a, b} and {b, c} elsewhere) cannot; it is drawn as a note
linked to its stations, and the figure says so.
"""

from __future__ import annotations

from dataclasses import field
from typing import Optional

from ..ir import model as M
from ..ir.expr import const_value
from ..records import dataclass
from .scene import Cluster, Edge, Node, Scene
from .text import Namer, elide, loc_str, num, wrap_lines

_MISSING = object()


child_blocks = M.child_blocks


def station_key(p: M.Program, ref: M.Ref) -> str:
    """The station a stage reference runs at."""
    if ref.index is None:
        return f"st{ref.base}" if ref.count == 1 else f"st{ref.base}x{ref.count}"
    c = const_value(ref.index)
    if c is not None and c == int(c) and 0 <= int(c) < ref.count:
        return f"st{ref.base + int(c)}"
    return f"st{ref.base}x{ref.count}"


def run_stations(p: M.Program, s: M.SRun) -> list[str]:
    """The stations a run holds: its stage, then its `also` stages."""
    out = [station_key(p, s.stage)]
    for a in s.also:
        k = station_key(p, a)
        if k not in out:
            out.append(k)
    return out


def reach(p: M.Program, block: int) -> list[str]:
    """The stations the statements of ``block`` run, transitively, in the
    order first reached."""
    out: list[str] = []
    stack = [block]
    seen = set()

    def go(bi: int):
        if bi in seen:
            return
        seen.add(bi)
        for s in p.blocks[bi].stmts:
            if type(s) is M.SRun:
                for k in run_stations(p, s):
                    if k not in out:
                        out.append(k)
            for c in child_blocks(s):
                go(c)
    for b in stack:
        go(b)
    return out


def hold_key(p: M.Program, s: M.SHold, loc: Optional[M.Loc], where: tuple[int, int]) -> str:
    at = (loc.file, loc.line, loc.col) if loc is not None else where
    return f"{at}|{','.join(f'{h.pool.base}/{h.pool.count}' for h in s.pools)}"


def holds(p: M.Program) -> dict[str, dict]:
    """Every hold of the program reachable from init and the session, one per
    source location: its statement, location and stations."""
    out: dict[str, dict] = {}
    seen = set()

    def go(bi: int):
        if bi in seen:
            return
        seen.add(bi)
        b = p.blocks[bi]
        for i, (s, loc) in enumerate(zip(b.stmts, b.locs)):
            if type(s) is M.SHold:
                k = hold_key(p, s, loc, (bi, i))
                h = out.setdefault(k, {"stmt": s, "loc": loc, "stations": []})
                for st in reach(p, s.body):
                    if st not in h["stations"]:
                        h["stations"].append(st)
            for c in child_blocks(s):
                go(c)
    for root in ([p.init] if p.init is not None else []) + [p.session]:
        go(root)
    return out


def index_attrs(p: M.Program) -> set:
    """The attributes that name a family's member somewhere (`R[j]`)."""
    out: set = set()

    def go(x):
        if isinstance(x, M.Ref):
            if type(x.index) is M.EAttr:
                out.add(x.index.slot)
        if isinstance(x, (list, tuple)):
            for y in x:
                go(y)
        elif hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:
                go(getattr(x, f))
    for b in p.blocks:
        go(b.stmts)
    return out


def pool_key(p: M.Program, ref: M.Ref) -> str:
    """The enclosure a pool reference is drawn in: ``"i"`` for one pool (a
    member named by a constant index is its own), ``"bxc"`` for a family
    whose member is picked at run time, drawn once (``kv[0..c-1]``)."""
    if ref.index is None:
        return f"{ref.base}" if ref.count == 1 else f"{ref.base}x{ref.count}"
    c = const_value(ref.index)
    if c is not None and c == int(c) and 0 <= int(c) < ref.count:
        return f"{ref.base + int(c)}"
    return f"{ref.base}x{ref.count}"


def key_members(key: str) -> list[int]:
    """The declarations a station or pool key stands for."""
    head = key.lstrip("stq").removeprefix("pool")
    if "x" in head:
        base, count = (int(x) for x in head.split("x"))
        return list(range(base, base + count))
    return [int(head)]


def family_label(names: list, members: list[int]) -> str:
    """`P[0..1]` for a family drawn once, the member's own name otherwise."""
    d = names[members[0]]
    if len(members) == 1:
        return d.name if d.index is None else f"{d.name}[{d.index}]"
    return f"{d.name}[0..{len(members) - 1}]"


def pool_indices(p: M.Program, ref: M.Ref) -> list[int]:
    """The pools a reference may name: one member when its index is a
    constant, else the whole family."""
    if ref.index is None:
        return [ref.base] if ref.count == 1 else list(range(ref.base, ref.base + ref.count))
    c = const_value(ref.index)
    if c is not None and c == int(c) and 0 <= int(c) < ref.count:
        return [ref.base + int(c)]
    return list(range(ref.base, ref.base + ref.count))


def pool_reach(p: M.Program) -> dict[str, list[str]]:
    """The stations run while each pool is held: inside a hold of it, or after
    a hold that leases it until a `release` takes it off; by pool key (a
    family whose member is picked at run time is one key)."""
    out: dict[str, list[str]] = {}
    leased: list[str] = []

    def go(bi: int, held: list[str]):
        for s in p.blocks[bi].stmts:
            t = type(s)
            if t is M.SRun:
                for k in held + [k for k in leased if k not in held]:
                    for st in run_stations(p, s):
                        if st not in out[k]:
                            out[k].append(st)
            elif t is M.SHold:
                keys = [pool_key(p, hp.pool) for hp in s.pools]
                for k in keys:
                    out.setdefault(k, [])
                go(s.body, held + keys)
                if s.lease is not None:
                    k = pool_key(p, s.lease.pool)
                    out.setdefault(k, [])
                    if k not in leased:
                        leased.append(k)
            elif t is M.SRelease:
                k = pool_key(p, s.pool)
                if k in leased:
                    leased.remove(k)
                else:
                    held = [h for h in held if h != k]
            else:
                for c in child_blocks(s):
                    go(c, held)
    for root in ([p.init] if p.init is not None else []) + [p.session]:
        go(root, [])
    # every pool is drawn: one no family key stands for is drawn on its own
    covered = {i for k in out if "x" in k for i in key_members(k)}
    for i in range(len(p.pools)):
        if i not in covered:
            out.setdefault(f"{i}", [])
    return out


@dataclass
class _Enc:
    id: str
    kind: str                  # pool | hold | queue
    order: int
    stations: list[str]
    lines: list
    title: str
    pool: Optional[str] = None
    placed: bool = False
    parent: Optional["_Enc"] = None
    depth: int = 0
    cluster: Optional[Cluster] = None
    extra_nodes: list[str] = field(default_factory=list)
    holds: list[str] = field(default_factory=list)   # the source lines of the holds it stands for


class Deployment:
    def __init__(self, p: M.Program):
        self.p = p
        self.nm = Namer(p)
        self.file = p.files[0] if p.files else "<program>"
        self.station_order: list[str] = []
        self.station_sides: dict[str, set] = {}
        self.station_loc: dict[str, Optional[M.Loc]] = {}
        self.queue_pools: list[str] = []
        self.edges: dict[tuple[str, str, str], dict] = {}
        self.sink_used = False
        self.max_label = 30
        self.family_index: dict[str, str] = {}
        self.copies: dict[tuple[str, str], dict] = {}   # (source queue, reader queue) -> mode, latency
        self.index_attrs = index_attrs(p)               # the attributes that pick a family's member
        self.routers: dict[int, dict] = {}              # attribute -> {"ways": [...], "loc": …}

    # ----------------------------------------------------------------- flow
    def _edge(self, src: str, dst: str, label: Optional[str], loc, role: str = "flow"):
        key = (src, dst, role)
        e = self.edges.get(key)
        if e is None:
            self.edges[key] = {"labels": [label] if label else [], "loc": loc, "unlabelled": label is None}
        else:
            if label is None:
                e["unlabelled"] = True
            elif label not in e["labels"]:
                e["labels"].append(label)

    def _go(self, F: dict, dst: str, loc, skip_self: bool = False) -> dict:
        for src, (lab, role) in F.items():
            if skip_self and src == dst and lab is None:
                continue  # two runs in a row at one station: one visit
            self._edge(src, dst, lab, loc, role)
        return {dst: (None, "flow")}

    @staticmethod
    def _label(F: dict, g: str) -> dict:
        return {n: ((g if lab is None else f"{lab} && {g}"), role) for n, (lab, role) in F.items()}

    @staticmethod
    def _merge(*Fs: dict) -> dict:
        out: dict = {}
        for F in Fs:
            for n, (lab, role) in F.items():
                if n not in out:
                    out[n] = (lab, role)
                else:
                    ol, orole = out[n]
                    out[n] = (ol if ol == lab else None, orole if orole == role else "flow")
        return out

    def _station_seen(self, k: str, side: str, loc):
        if k not in self.station_sides:
            self.station_order.append(k)
            self.station_sides[k] = set()
            self.station_loc[k] = loc
        self.station_sides[k].add(side)

    def walk_block(self, bi: int, F: dict) -> dict:
        b = self.p.blocks[bi]
        legs: list[dict] = []
        fork_base: dict = {}
        for s, loc, side in zip(b.stmts, b.locs, b.sides):
            t = type(s)
            ways = self.routing(s)
            if ways is not None:
                slot = ways[0][0]
                r = self.routers.setdefault(slot, {"ways": [], "full": [], "loc": loc})
                for _, (way, full) in ways:
                    if way not in r["ways"]:
                        r["ways"].append(way)
                        r["full"].append(full)
                F = self._go(F, f"route{slot}", loc, skip_self=True)
                continue
            if t is M.SRun:
                self.note_copy(b, s, loc)
                keys = run_stations(self.p, s)
                for ref in (s.stage,) + tuple(s.also):
                    k = station_key(self.p, ref)
                    if "x" in k and ref.index is not None and k not in self.family_index:
                        self.family_index[k] = elide(self.nm.expr(ref.index), 12)
                for k in keys:
                    self._station_seen(k, side, loc)
                F = self._go(F, keys[0], loc, skip_self=True)
                for k in keys[1:]:
                    self._edge(keys[0], k, None, loc, "also")
            elif t is M.SHold:
                first = pool_key(self.p, s.pools[0].pool) if s.pools else None
                if first is not None:
                    q = f"q{first}"
                    if first not in self.queue_pools:
                        self.queue_pools.append(first)
                    F = self._go(F, q, loc)
                F = self.walk_block(s.body, F)
            elif t is M.SBranch and type(s.guard) is M.ENum:
                # a guard the linker folded to a number: only its side runs
                side = s.then if s.guard.value != 0 else s.other
                if side is not None:
                    F = self.walk_block(side, F)
            elif t is M.SBranch:
                g = self.nm.expr(s.guard)
                ng = self.nm.negate(s.guard)
                Ft = self.walk_block(s.then, self._label(F, g))
                Fo = self.walk_block(s.other, self._label(F, ng)) if s.other is not None else self._label(F, ng)
                R: dict = {}
                for n in list(Ft) + [n for n in Fo if n not in Ft]:
                    a, b2 = Ft.get(n, _MISSING), Fo.get(n, _MISSING)
                    if a is _MISSING or b2 is _MISSING:
                        R[n] = a if b2 is _MISSING else b2
                    elif a == b2:
                        R[n] = a
                    elif n in F and a == self._label({n: F[n]}, g)[n] and b2 == self._label({n: F[n]}, ng)[n]:
                        R[n] = F[n]  # a guard that moves nobody
                    else:
                        R[n] = (None, "flow")
                F = R
            elif t is M.SWhile:
                g = self.nm.expr(s.guard)
                ng = self.nm.negate(s.guard)
                cur = self._label(F, g)
                end: dict = {}
                for _ in range(16):
                    end = self.walk_block(s.body, cur)
                    nxt = self._merge(self._label(F, g), self._label(end, g))
                    if nxt == cur:
                        break
                    cur = nxt
                F = self._merge(self._label(F, ng), self._label(end, ng))
            elif t is M.SLoop:
                cur = dict(F)
                for _ in range(16):
                    end = self.walk_block(s.body, cur)
                    nxt = self._merge(F, end)
                    if nxt == cur:
                        break
                    cur = nxt
                F = {}  # a loop is left only by `end`
            elif t is M.SFork:
                if not legs:
                    fork_base = F
                legs.append(self.walk_block(s.body, {n: (lab, "fork") for n, (lab, _) in F.items()}))
            elif t is M.SJoin:
                # the request goes on from where its legs ended (and from
                # wherever it went itself meanwhile)
                main = {} if F == fork_base and any(legs) else F
                F = {n: (None, "flow") for n in self._merge(main, *legs)}
                legs = []
            elif t is M.SEnd:
                for src, (lab, role) in F.items():
                    self._edge(src, "sink", lab, loc, role)
                self.sink_used = self.sink_used or bool(F)
                F = {}
        return F

    def routing(self, s, guard: Optional[str] = None, on: Optional[bool] = None) -> Optional[list]:
        """A router's decision: a `choose`, a `set` of an attribute that picks
        a family's member (`R[j]`), or a branch whose arms make only such
        decisions of one attribute (a routing policy per arm): ``[(slot, (how,
        how in full))]`` (the label elides a long key; the tooltip has it
        whole), else None.  An arm under a guard the linker folded (an
        input's value: `policy == 0`) says whether it is the one this program
        runs."""
        t = type(s)
        if t is M.SChoose or (t is M.SSet and s.slot in self.index_attrs):
            name = self.p.attrs[s.slot]
            how = (f"choose {name} in {self.nm.expr(s.count)} by "
                   f"({', '.join(elide(self.nm.expr(k), 34) for k in s.keys)})"
                   if t is M.SChoose else f"{name} = {elide(self.nm.expr(s.expr), 48)}")
            full = (f"choose {name} in {self.nm.expr(s.count)} by ({', '.join(self.nm.expr(k) for k in s.keys)})"
                    if t is M.SChoose else f"{name} = {self.nm.expr(s.expr)}")
            tag = {True: "this program: ", False: "off: "}.get(on, f"{guard}: " if guard else "")
            return [(s.slot, (tag + how, tag + full))]
        if t is not M.SBranch or s.other is None:
            return None
        c = const_value(s.guard)
        g = None if c is not None else self.nm.expr(s.guard)
        arms = ((s.then, g if g is not None else None, on if c is None else (on is not False and c == 1)),
                (s.other, "else" if g is not None else None, on if c is None else (on is not False and c == 0)))
        out = []
        for bi, arm_guard, arm_on in arms:
            stmts = self.p.blocks[bi].stmts
            if not stmts:
                return None
            for x in stmts:
                got = self.routing(x, arm_guard if type(x) is not M.SBranch else None, arm_on)
                if got is None:
                    return None
                out.extend(got)
        return out if len({slot for slot, _ in out}) == 1 else None

    def note_copy(self, b: M.Block, s: M.SRun, loc) -> None:
        """A run holding `X.nic` and `Y.nic` is a KV copy from queue X to Y; a
        run on `Z.nic.latency` before it says who posts it (Z = Y: a pull,
        Z = X: a push) and its wait."""
        if len(s.also) != 1:
            return
        names = [self.p.stages[s.stage.base].name, self.p.stages[s.also[0].base].name]
        if not all(n.endswith(".nic") and n.count(".") == 1 for n in names):
            return
        src_q, dst_q = (n[:-4] for n in names)
        mode, lat = None, None
        i = b.stmts.index(s)
        prev = b.stmts[i - 1] if i > 0 else None
        if type(prev) is M.SRun and not prev.also:
            pn = self.p.stages[prev.stage.base].name
            if pn == f"{dst_q}.nic.latency":
                mode = "pull"
            elif pn == f"{src_q}.nic.latency":
                mode = "push"
            if mode is not None:
                lat = self.nm.expr(prev.work)
        info = self.copies.setdefault((src_q, dst_q), {"mode": mode or "copy", "latency": lat, "loc": loc})
        if mode is not None:
            info["mode"], info["latency"] = mode, lat

    def queues(self, stations: list[str]) -> dict[str, list[str]]:
        """The stations of each queue: a stage `Q` and the stages named `Q.…`
        (the IR's spelling of a queue's stage, NIC and waits)."""
        p = self.p
        heads = {st.name for st in p.stages if "." not in st.name}
        out: dict[str, list[str]] = {}
        for k in stations:
            name = p.stages[key_members(k)[0]].name
            head = name.split(".", 1)[0]
            if head in heads and any(st.name.startswith(head + ".") for st in p.stages) or \
                    any(pl.name.startswith(name + ".") for pl in p.pools):
                out.setdefault(head, []).append(k)
        return out

    def queue_station(self, q: str, stations: list[str]) -> Optional[str]:
        for k in stations:
            if self.p.stages[key_members(k)[0]].name == q:
                return k
        return None

    def queue_lines(self, q: str, qst: list[str]) -> list:
        p = self.p
        first = p.stages[key_members(qst[0])[0]]
        count = sum(1 for st in p.stages if st.name == first.name)
        head = f"queue {q}" + (f"[0..{count - 1}]" if first.index is not None and count > 1 else
                               "[0]" if first.index is not None else "")
        own: dict = {}
        for i, pl in enumerate(p.pools):
            if pl.name.startswith(q + "."):
                own.setdefault(pl.name[len(q) + 1:], []).append(i)
        lines = [(head, "h")]
        for short, members in own.items():
            key = f"{members[0]}x{len(members)}" if len(members) > 1 else f"{members[0]}"
            text = " · ".join(t.strip() for t, _ in self.pool_lines(key)[1:])
            rules = [x for x in text.split(" · ") if not x.startswith(("memory of", "admitted by"))]
            lines.append((f"pool {self.pool_label(key)} · " + " · ".join(rules), "s"))
        nic = [st for st in p.stages if st.name == f"{q}.nic"]
        if nic:
            lines.append((f"nic {self.stage_kind(nic[0])}", "s"))
        return wrap_lines(lines, 44)

    # ---------------------------------------------------------------- labels
    def stage_kind(self, st: M.Stage) -> str:
        k = st.kind
        if type(k) is M.KFifo:
            return "fifo" if k.servers == 1 else f"fifo({k.servers})"
        if type(k) is M.KPs:
            c = self.nm.expr(k.capacity)
            return "ps" if c == "1" else f"ps({c})"
        if type(k) is M.KDelay:
            return "delay · ∞ servers"
        base = self.p.stages.index(st)
        return f"engine · budget {self.nm.engine_expr(k.budget, 'budget', base)}"

    def station_lines(self, key: str) -> tuple[list, str, str, Optional[M.Loc]]:
        """Lines, shape, role and location of a station."""
        p = self.p
        if "x" in key:
            base, count = (int(x) for x in key[2:].split("x"))
        else:
            base, count = int(key[2:]), 1
        st = p.stages[base]
        if count == 1:
            name, kind = p.stage_label(base), self.stage_kind(st)
            lines = [(name, "h"), (kind, "n")]
        else:
            name = family_label(p.stages, list(range(base, base + count)))
            lines = [(name, "h"), (self.stage_kind(st), "n"),
                     (f"member {self.family_index.get(key, '·')}, one of {count}", "s")]
        k = st.kind
        role = "station"
        shape = "rrect"
        if type(k) in (M.KFifo, M.KPs):
            shape = "circle"
            role += " fifo" if type(k) is M.KFifo else " ps"
        elif type(k) is M.KDelay:
            role += " delay"
        else:
            role += " step"
            c = const_value(k.chunk)
            if c is None:
                lines.append((f"chunk {self.nm.engine_expr(k.chunk, 'budget', base, chunk=True)}", "s"))
            elif c != 0:
                lines.append((f"chunk ≤ {num(c)}", "s"))
            if type(k.serve) is M.ServeExclusivePrefill:
                lines.append(("serve: exclusive prefill", "s"))
            elif k.serve.keys:
                lines.append((f"serve by {', '.join(self.nm.engine_expr(x, 'budget', base) for x in k.serve.keys)}",
                              "s"))
            else:
                lines.append(("serve in admission order", "s"))
            if k.iteration is not None:
                lines.append((f"iteration: {len(k.iteration)} steps", "s"))
            lines.append((f"iteration {self.nm.engine_expr(k.cost, 'execute', base)}", "s"))
            stage_ids = range(base, base + count)
            mem = [p.stages[j].kind.memory for j in stage_ids if p.stages[j].kind.memory is not None]
            if mem:
                lines.append((f"memory {self.group_label(mem)}", "s"))
            admits: list[str] = []
            for i, pl in enumerate(p.pools):
                if pl.admit_via in stage_ids:
                    name = pl.name if count > 1 else p.pool_label(i)
                    if name not in admits:
                        admits.append(name)
            if admits:
                lines.append((f"admits {', '.join(admits)}", "s"))
        sides = self.station_sides.get(key)
        if sides is None:
            lines.append(("never run", "s"))
            role += " unreached"
        elif sides == {"client"}:
            lines.append(("workload", "s"))
            role += " workload"
        loc = self.station_loc.get(key) if st.loc is None else st.loc
        return wrap_lines(lines), shape, role, loc

    def stage_detail(self, key: str) -> str:
        """The whole of a station's kind, for its tooltip."""
        base = int(key[2:].split("x")[0])
        k = self.p.stages[base].kind
        if type(k) is not M.KStep:
            return self.stage_kind(self.p.stages[base])
        nm = self.nm
        out = [f"engine, budget {nm.engine_expr(k.budget, 'budget', base)}",
               f"iteration time {nm.engine_expr(k.cost, 'execute', base)}",
               f"chunk {nm.engine_expr(k.chunk, 'budget', base, chunk=True)}"]
        if type(k.serve) is M.ServeExclusivePrefill:
            out.append("serve exclusive prefill")
        else:
            out.append("serve by " + (", ".join(nm.expr(x) for x in k.serve.keys) or "admission order"))
        if k.memory is not None:
            out.append(f"memory {self.p.pool_label(k.memory)}")
        if k.granule is not None:
            out.append(f"granule {num(k.granule)}")
        return "; ".join(out)

    def pool_label(self, key: str) -> str:
        return family_label(self.p.pools, key_members(key))

    def group_label(self, pools: list[int]) -> str:
        """Pools one station names (a family station's members' memories)."""
        names = sorted({self.p.pools[i].name for i in pools})
        if len(pools) > 1 and len(names) == 1:
            return family_label(self.p.pools, sorted(pools))
        return ", ".join(self.p.pool_label(i) for i in pools)

    def stage_family_label(self, j: int) -> str:
        """A stage as drawn: the family `P[0..1]` when its station stands for one."""
        st = self.p.stages[j]
        if st.index is None:
            return st.name
        members = [k for k, s in enumerate(self.p.stages) if s.name == st.name]
        fam = f"st{members[0]}x{len(members)}"
        return family_label(self.p.stages, members) if fam in self.station_sides else self.p.stage_label(j)

    def pool_lines(self, key: str) -> list:
        p = self.p
        members = key_members(key)
        i = members[0]
        pl = p.pools[i]
        lines = [(f"pool {self.pool_label(key)}", "h")]
        cap = ["cap " + num(pl.cap)]
        if pl.block is not None:
            cap.append(f"block {num(pl.block)}")
        rules: list[str] = []
        rules.append("evict lru" if type(pl.evict) is M.EvictLru else
                     f"evict by {', '.join(self.nm.expr(x) for x in pl.evict.keys)}")
        if type(pl.preempt) is M.PreemptNone:
            rules.append("no preemption")
        else:
            keys = pl.preempt.keys
            if len(keys) == 1 and keys[0] == M.EUnary("Neg", M.ECtx("Admission")) and not pl.preempt.tail:
                rules.append("preempt lifo")
            else:
                rules.append(f"preempt by {', '.join(self.nm.expr(x) for x in keys)}"
                             + (" (tail)" if pl.preempt.tail else ""))
        lines.append((" · ".join(cap), "s"))
        lines.append((" · ".join(rules), "s"))
        queue = []
        if key in self.queue_pools or pl.queue is not None or pl.admit_via is not None:
            queue.append("queue fifo" if pl.queue is None else
                         f"queue {'ordered ' if pl.ordered else ''}by {', '.join(self.nm.expr(x) for x in pl.queue)}"
                         + (f" (tail when {self.nm.expr(pl.tail_when)} shared {self.nm.expr(pl.tail_shared)})"
                            if pl.tail_when is not None else ""))
        if pl.admit_via is not None:
            queue.append(f"admitted by {self.stage_family_label(pl.admit_via)}")
        if queue:
            lines.append((" · ".join(queue), "s"))
        mem = []
        for j, st in enumerate(p.stages):
            if type(st.kind) is M.KStep and st.kind.memory in members:
                label = self.stage_family_label(j)
                if label not in mem:
                    mem.append(label)
        if mem:
            lines.append((f"memory of {', '.join(mem)}", "s"))
        if pl.spill is not None:
            lines.append((f"spills to {self.nm.pool(pl.spill.to)} via {self.nm.stage(pl.spill.via)}", "s"))
        if pl.reserve_held:
            lines.append(("reserve held", "s"))
        return wrap_lines(lines)

    def hold_text(self, s: M.SHold) -> tuple[list, str]:
        parts = [f"{self.nm.pool(h.pool)} ({self.nm.expr(h.units)})" for h in s.pools]
        full = "hold " + ", ".join(parts)
        lines = [("hold " + ", ".join(self.nm.pool(h.pool) for h in s.pools), "n")]
        detail = []
        for h in s.pools:
            detail.append(f"{self.nm.pool(h.pool)} {self.nm.expr(h.units)}")
        lines.append((" · ".join(detail), "s"))
        flags = []
        if any(h.reserve is not None for h in s.pools):
            flags.append("reserve")
        if s.reuse is not None:
            flags.append("reuse")
        if s.cache is not None:
            flags.append("cache")
        if s.lease is not None:
            flags.append(f"lease {self.nm.pool(s.lease.pool)} {self.nm.expr(s.lease.time)}")
        if flags:
            lines.append((" · ".join(flags), "s"))
        for h in s.pools:
            if h.reserve is not None:
                full += f"; reserve {self.nm.pool(h.pool)} ({self.nm.expr(h.reserve)})"
        if s.reuse is not None:
            full += f"; reuse ({self.nm.expr(s.reuse)})"
        if s.cache is not None:
            full += f"; cache ({self.nm.expr(s.cache)})"
        return wrap_lines(lines, 48), full

    def arrival_lines(self) -> list:
        a = self.p.arrival
        t = type(a)
        if t is M.APoisson:
            what = f"poisson {num(a.rate)}/s"
        elif t is M.ARenewal:
            what = f"renewal, gap {self.nm.expr(a.gap)}"
        elif t is M.AClosed:
            what = f"closed, {a.n} sessions"
        elif t is M.ABatch:
            what = f"batch of {a.n}"
        elif t is M.ASessions:
            what = f"{len(a.sessions)} given sessions"
        else:
            what = "no arrivals"
        lines = [("arrivals", "h"), (what, "s")]
        if self.p.trace:
            name = self.p.trace.replace("\\", "/").rsplit("/", 1)[-1]
            lines.append((f"trace {name}" + (" (ordered)" if self.p.trace_ordered else ""), "s"))
        return wrap_lines(lines)

    # ----------------------------------------------------------------- scene
    def scene(self) -> Scene:
        p = self.p
        L = lambda loc: loc_str(p, loc)  # noqa: E731
        sess = p.blocks[p.session]
        first_loc = next((l for l in sess.locs if l is not None), None)
        last_loc = next((l for l in reversed(sess.locs) if l is not None), None)

        F = {"src": (None, "flow")}
        if p.init is not None:
            F = self.walk_block(p.init, F)
        F = self.walk_block(p.session, F)
        for src, (lab, role) in F.items():
            self._edge(src, "sink", lab, last_loc, role)
        self.sink_used = self.sink_used or bool(F)

        # every declared stage is drawn; one run at run time stands for its family
        covered = set()
        for k in self.station_order:
            if "x" in k:
                base, count = (int(x) for x in k[2:].split("x"))
                covered.update(range(base, base + count))
            else:
                covered.add(int(k[2:]))
        stations = list(self.station_order) + [f"st{i}" for i in range(len(p.stages)) if i not in covered]

        def members(k: str) -> set:
            if "x" in k:
                base, count = (int(x) for x in k[2:].split("x"))
                return set(range(base, base + count))
            return {int(k[2:])}

        # enclosures: pools (around their holds' stations) and holds
        hs = holds(p)
        encs: list[_Enc] = []
        # stations: a queue's (the stages named after it, `P`, `P.nic`, …), drawn
        # around its stations first; its own pools (`P.kv`) are drawn inside
        # it (their rules in its label, their waits as queues in it), not as
        # enclosures around what their holds reach, which would cross queues
        qmap = self.queues(stations)
        self.queue_of_pool = {i: pl.name.split(".", 1)[0] for i, pl in enumerate(p.pools)
                              if "." in pl.name and pl.name.split(".", 1)[0] in qmap}
        for qname, qst in qmap.items():
            encs.append(_Enc(f"queue_{qname}", "queue", len(encs), qst, self.queue_lines(qname, qst),
                             f"{L(p.stages[key_members(qst[0])[0]].loc)} queue {qname}"))
        pool_stations = pool_reach(p)
        for key in sorted(pool_stations, key=lambda k: key_members(k)[0]):
            if key_members(key)[0] in self.queue_of_pool:
                continue
            pl = p.pools[key_members(key)[0]]
            encs.append(_Enc(f"pool{key}", "pool", len(encs), pool_stations[key], self.pool_lines(key),
                             f"{L(pl.loc)} pool {self.pool_label(key)}", pool=key))
        # holds that run the same stations share one enclosure (two boxes
        # around the same stations could only nest, which would say one hold
        # is inside the other); a hold of a queue's own pools is the queue's
        groups: dict[tuple, list] = {}
        for h in hs.values():
            if h["stmt"].pools and all(x.pool.base in self.queue_of_pool for x in h["stmt"].pools):
                continue
            groups.setdefault(tuple(sorted(h["stations"])), []).append(h)
        for n, group in enumerate(groups.values()):
            if len(group) == 1:
                lines, full = self.hold_text(group[0]["stmt"])
                title = f"{L(group[0]['loc'])} {full}"
            else:
                lines = [(f"{len(group)} holds", "n")]
                fulls = []
                for h in group:
                    hl, full = self.hold_text(h["stmt"])
                    at = h["loc"]
                    lines.extend(wrap_lines([(f"{hl[0][0]} (line {at.line})" if at is not None else hl[0][0], "s")], 48))
                    fulls.append(f"{L(at)} {full}")
                title = " | ".join(fulls)
            encs.append(_Enc(f"hold{n}", "hold", len(encs), list(group[0]["stations"]), lines, title))
            encs[-1].holds = [L(h["loc"]) for h in group]

        # bigger first; for equal sets pools outside holds, and a pool requests
        # wait on outside the pools they take once admitted
        order = sorted(encs, key=lambda e: (0 if e.kind == "queue" else 1, -len(e.stations),
                                            0 if e.kind == "pool" else 1,
                                            0 if e.pool in self.queue_pools else 1, e.order))
        placed: list[_Enc] = []
        crossing: list[_Enc] = []
        for e in order:
            S = set(e.stations)
            ok = True
            parent = None
            for q in placed:
                Q = set(q.stations)
                if not (S & Q):
                    continue
                if S <= Q:
                    if parent is None or q.depth > parent.depth:
                        parent = q
                else:
                    ok = False
                    break
            if not ok:
                crossing.append(e)
                continue
            if not S:
                parent = None
            e.placed, e.parent = True, parent
            e.depth = 0 if parent is None else parent.depth + 1
            placed.append(e)

        sc = Scene("deployment", "LR", [(f"deployment · {self.file}", "h")], f"{self.file}:1:1")
        for e in sorted(placed, key=lambda e: (e.depth, e.order)):
            role = "enclosure " + e.kind
            data = {"stations": " ".join(e.stations)}
            if e.kind == "hold":
                data["holds"] = " ".join(e.holds)
            elif e.kind == "pool":
                data["pool"] = " ".join(str(i) for i in key_members(e.pool))
            c = Cluster(e.id, e.kind, e.lines, e.title, role, data=data)
            e.cluster = c
            (e.parent.cluster.children if e.parent is not None else sc.roots).append(c)

        def home(station: str) -> Optional[Cluster]:
            best = None
            for e in placed:
                if station in e.stations and (best is None or e.depth > best.depth):
                    best = e
            return best.cluster if best is not None else None

        # the arrival
        sc.add_node(Node("src", "ellipse", self.arrival_lines(), f"{L(first_loc)} arrivals: "
                         f"{self.arrival_lines()[1][0]}", "source"), None)
        # stations
        for k in stations:
            lines, shape, role, loc = self.station_lines(k)
            data = {"station": k, "stages": " ".join(str(i) for i in sorted(members(k)))}
            title = f"{L(loc)} stage {lines[0][0]}: {self.stage_detail(k)}"
            sc.add_node(Node(k, shape, lines, title, role, data), home(k))
        # routers: where the request's path picks a family's member
        for slot, r in self.routers.items():
            name = p.attrs[slot]
            lines = [(f"router · picks {name}", "h")] + wrap_lines([(w, "s") for w in r["ways"][:8]], 48)
            if len(r["ways"]) > 8:
                lines.append((f"… {len(r['ways']) - 8} more", "s"))
            sc.add_node(Node(f"route{slot}", "rrect", lines, f"{L(r['loc'])} the router: it picks {name} "
                             f"({'; '.join(r['full'])})", "router", {"attr": name}), None)
        # queues, in their pool's enclosure (a queue's own pool: in the queue's)
        enc_of_pool = {e.pool: e for e in encs if e.kind == "pool"}
        enc_of_queue = {e.id[len("queue_"):]: e for e in placed if e.kind == "queue"}
        for key in self.queue_pools:
            pl = p.pools[key_members(key)[0]]
            rule = "fifo" if pl.queue is None else f"by {', '.join(self.nm.expr(x) for x in pl.queue)}"
            label = self.pool_label(key)
            lines = wrap_lines([(f"{label} queue", "n"), (rule, "s")], 24)
            q = self.queue_of_pool.get(key_members(key)[0])
            pe = enc_of_pool[key] if q is None else enc_of_queue.get(q)
            parent = pe.cluster if pe is not None and pe.placed else None
            sc.add_node(Node(f"q{key}", "queue", lines, f"{L(pl.loc)} the queue of pool {label} ({rule})",
                             "queue", {"pool": " ".join(str(i) for i in key_members(key))}), parent)
            if pe is not None:
                pe.extra_nodes.append(f"q{key}")
        # enclosures with nothing in them get a placeholder
        for e in placed:
            if not e.stations and not e.extra_nodes:
                nid = f"{e.id}_empty"
                what = {"pool": "held by no statement", "queue": "no station"}.get(e.kind, "runs no station")
                sc.add_node(Node(nid, "rect", [(what, "s")], e.title, "placeholder"), e.cluster)
                e.extra_nodes.append(nid)
        # enclosures that cross another: a note linked to their stations
        for e in crossing:
            nid = f"{e.id}_note"
            data = {"stations": " ".join(e.stations)}
            if e.kind == "pool":
                data["pool"] = " ".join(str(i) for i in key_members(e.pool))
            sc.add_node(Node(nid, "note", e.lines, e.title, f"note {e.kind}", data), None)
            e.extra_nodes.append(nid)
            sc.notes.append(f"{e.title.split(' ')[0]}: {e.lines[0][0]} crosses another enclosure; "
                            f"drawn as a note linked to its stations")
        if self.sink_used:
            sc.add_node(Node("sink", "dcircle", [("done", "n")], f"{L(last_loc)} the session ends", "sink"), None)

        # edges: the path
        names = {"src": "arrivals", "sink": "done"}
        for k in stations:
            names[k] = sc.nodes[k].lines[0][0]
        for slot in self.routers:
            names[f"route{slot}"] = f"the router ({p.attrs[slot]})"
        for key in self.queue_pools:
            names[f"q{key}"] = f"{self.pool_label(key)} queue"
        n = 0
        for (src, dst, role), info in self.edges.items():
            labels = info["labels"]
            text = "" if info["unlabelled"] or not labels else " || ".join(labels)
            if role == "also":
                title = f"{L(info['loc'])} a run holding {names[src]} also holds {names[dst]}"
                sc.edges.append(Edge(f"e{n}", src, dst, title, "also", [], False, False))
            else:
                what = "a forked leg" if role == "fork" else "the path"
                title = f"{L(info['loc'])} {what}: {names[src]} → {names[dst]}" + (f" when {text}" if text else "")
                sc.edges.append(Edge(f"e{n}", src, dst, title, role,
                                     wrap_lines([(text, "s")], self.max_label) if text else []))
            n += 1

        # an engine's pools: the pools it admits (to their queue) and its memory
        def first_node(e: _Enc) -> Optional[str]:
            c = e.cluster
            while c is not None:
                if c.nodes:
                    return c.nodes[0]
                c = c.children[0] if c.children else None
            return None

        def pool_enc(i: int) -> _Enc:
            """The enclosure pool `i` is drawn in: its family's, else its own;
            a queue's own pool, the queue's."""
            if i in self.queue_of_pool:
                return enc_of_queue[self.queue_of_pool[i]]
            for key, e in enc_of_pool.items():
                if i in key_members(key) and "x" in key:
                    return e
            return enc_of_pool[f"{i}"]

        drawn_edges = set()
        for j, st in enumerate(p.stages):
            if type(st.kind) is not M.KStep:
                continue
            sk = f"st{j}" if f"st{j}" in sc.nodes else next((k for k in stations if j in members(k)), None)
            if sk is None:
                continue
            for i, pl in enumerate(p.pools):
                if pl.admit_via != j:
                    continue
                pe = pool_enc(i)
                if pe.kind == "queue" and sk in pe.stations:
                    continue  # an engine admits its own queue's pool: its label says so
                qk = next((k for k in self.queue_pools if i in key_members(k)), None) if pe.kind == "queue" \
                    else pe.pool
                if f"q{qk}" in sc.nodes:
                    dst, lhead = f"q{qk}", None
                elif not pe.placed:
                    dst, lhead = f"{pe.id}_note", None
                elif sk in pe.stations:
                    continue
                else:
                    dst, lhead = first_node(pe), pe.id
                if (sk, dst, "admit") in drawn_edges:
                    continue
                drawn_edges.add((sk, dst, "admit"))
                sc.edges.append(Edge(f"e{n}", sk, dst, f"{L(st.loc)} {names[sk]} admits the queue of pool "
                                     f"{p.pool_label(i) if pe.kind == 'queue' else self.pool_label(pe.pool)}",
                                     "admit", [("admits", "s")], False, True, lhead))
                n += 1
            m = st.kind.memory
            if m is not None:
                pe = pool_enc(m)
                if pe.placed and sk in pe.stations:
                    continue  # the engine is inside its memory's enclosure (or queue); its label says so
                dst = f"{pe.id}_note" if not pe.placed else first_node(pe)
                if dst is None or (sk, dst, "memory") in drawn_edges:
                    continue
                drawn_edges.add((sk, dst, "memory"))
                lhead = pe.id if pe.placed else None
                sc.edges.append(Edge(f"e{n}", sk, dst, f"{L(st.loc)} {names[sk]} keeps its KV in pool "
                                     f"{self.pool_label(pe.pool)}", "memory", [("memory", "s")], False, True, lhead))
                n += 1
        # a KV copy between two queues' NICs: the relation, from the queue that
        # posts the copy (the reader of a pull, the source of a push)
        for (src_q, dst_q), info in self.copies.items():
            a, b = self.queue_station(src_q, stations), self.queue_station(dst_q, stations)
            if a is None or b is None:
                continue
            mode, lat = info["mode"], info["latency"]
            text = " · ".join(x for x in (mode, f"latency {lat}" if lat else None,
                                          {"MaxMin": "maxmin", "Bottleneck": "bottleneck"}.get(p.share or "", None))
                              if x)
            # drawn the way the KV goes, source to reader, whoever posts the copy
            text = text.replace("pull", f"pull: {dst_q} reads", 1) if mode == "pull" else \
                text.replace("push", f"push: {src_q} writes", 1) if mode == "push" else text
            what = (f"{dst_q} reads the KV from {src_q}" if mode == "pull" else
                    f"{src_q} writes the KV to {dst_q}" if mode == "push" else f"the KV moves from {src_q} to {dst_q}")
            sc.edges.append(Edge(f"e{n}", a, b, f"{L(info['loc'])} {what} ({text})", "relation",
                                 wrap_lines([(text, "s")], 30), True, True))
            n += 1
        for e in crossing:
            for k in e.stations:
                sc.edges.append(Edge(f"e{n}", f"{e.id}_note", k, f"{e.title.split(' ')[0]} "
                                     f"{e.lines[0][0]} reaches {names[k]}", "note", [], False, False))
                n += 1

        if self.routers:
            sc.legend.append(("router", "router: where the path picks a family's member"))
        roles = {e.role for e in sc.edges}
        legend = [("flow", "a request's path"), ("fork", "a forked leg"), ("admit", "an engine admits a queue"),
                  ("memory", "an engine's memory"), ("also", "held together"),
                  ("relation", "a KV copy between two queues (pull or push)")]
        sc.legend = [(r, t) for r, t in legend if r in roles] + sc.legend
        if any(e.kind == "pool" for e in placed):
            sc.legend.append(("pool", "pool: the stations its holds reach"))
        if any(e.kind == "hold" for e in placed):
            sc.legend.append(("hold", "hold: the stations its body runs"))
        if any(e.kind == "queue" for e in placed):
            sc.legend.append(("queue", "queue: a station declared whole"))
        return sc


def scene(program: M.Program) -> Scene:
    return Deployment(program).scene()
