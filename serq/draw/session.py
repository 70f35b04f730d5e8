"""The session view: the session's statements as a flow chart, top to bottom.

One box per statement of the IR; a branch or a while is a diamond with
`yes`/`no` arms, a loop a small circle its body comes back to, a fork a bar
with a dashed leg, a join a bar the legs come back to, a hold an enclosure
around its body.  The server's statements are shaded and enclosed as the
server's.  The IR copies them after every `turn`; they are drawn once, where
the first turn reaches them, and a later turn's edge goes to that drawing
(`answered by the server`) and comes back from its end (`the answer`).
"""

from __future__ import annotations

from typing import Optional

from ..ir import model as M
from .scene import Cluster, Edge, Node, Scene
from .text import Namer, loc_str, wrap_lines

W = 40  # characters of an expression in a box


class Session:
    def __init__(self, p: M.Program):
        self.p = p
        self.nm = Namer(p)
        self.file = p.files[0] if p.files else "<program>"
        self.sc = Scene("session", "TB", [(f"session · {self.file}", "h")], f"{self.file}:1:1")
        self.n_nodes = 0
        self.n_clusters = 0
        self.n_edges = 0
        self.block: Optional[int] = None  # the block of the statement being drawn
        self.servers: dict = {}           # the locations of a server's copy -> (first node, its ends)

    def L(self, loc) -> str:
        return loc_str(self.p, loc)

    # ------------------------------------------------------------- building
    def node(self, shape: str, lines: list, loc, what: str, role: str, parent: Optional[Cluster],
             data: Optional[dict] = None) -> str:
        nid = f"n{self.n_nodes}"
        self.n_nodes += 1
        data = dict(data or {})
        if self.block is not None and "block" not in data:
            data["block"] = str(self.block)
        self.sc.add_node(Node(nid, shape, wrap_lines(lines, W), f"{self.L(loc)} {what}", role, data), parent)
        return nid

    def cluster(self, kind: str, lines: list, loc, what: str, parent: Optional[Cluster]) -> Cluster:
        c = Cluster(f"c{self.n_clusters}", kind, wrap_lines(lines, 2 * W), f"{self.L(loc)} {what}",
                    "enclosure " + kind)
        self.n_clusters += 1
        (parent.children if parent is not None else self.sc.roots).append(c)
        return c

    def edge(self, src: str, dst: str, loc, label: Optional[str] = None, role: str = "flow"):
        title = f"{self.L(loc)} " + {"flow": "next", "back": "back to the loop's head",
                                     "fork": "a forked leg"}.get(role, role)
        if label:
            title += f" ({label})"
        self.sc.edges.append(Edge(f"e{self.n_edges}", src, dst, title, role,
                                  wrap_lines([(label, "s")], 28) if label else [], reverse=role == "back"))
        self.n_edges += 1

    def connect(self, preds: list, dst: str, loc):
        for src, label, role in preds:
            self.edge(src, dst, loc, label, role)

    # ------------------------------------------------------------ statements
    def turn_lines(self) -> list:
        p = self.p
        lines = [("turn", "h")]
        if p.turn is not None:
            for s in p.blocks[p.turn].stmts:
                if type(s) is M.SSet:
                    lines.append((f"{self.nm.attr(s.slot)} = {self.nm.expr(s.expr)}", "s"))
        elif p.trace:
            lines.append(("the trace's next row", "s"))
        elif type(p.arrival) is M.ASessions:
            lines.append(("the session's next turn", "s"))
        return lines

    def simple(self, s: M.Stmt) -> tuple[str, list, str]:
        """shape, lines, description of a statement drawn as one box."""
        nm, t = self.nm, type(s)
        if t is M.STurn:
            return "hexagon", self.turn_lines(), "turn: a new turn's attributes, then the server"
        if t is M.SSet:
            text = f"set {nm.attr(s.slot)} = {nm.expr(s.expr)}"
            return "rect", [(text, "n")], text
        if t is M.SObserve:
            obs = self.p.observes[s.observe] if 0 <= s.observe < len(self.p.observes) else "?"
            text = f"observe {obs} = {nm.expr(s.expr)}"
            return "rect", [(text, "n")], text
        if t is M.SRun:
            head = f"run {nm.stage(s.stage)}" + ("" if s.mode == "Plain" else f" {s.mode.lower()}")
            lines = [(head, "h"), (f"work {nm.expr(s.work)}", "s")]
            if s.growing is not None:
                lines.append((f"growing {nm.pool(s.growing)}", "s"))
            if s.also:
                lines.append((f"also {', '.join(nm.stage(a) for a in s.also)}", "s"))
            return "rrect", lines, f"{head} (work {nm.expr(s.work)})"
        if t is M.SGrow:
            text = f"grow {nm.pool(s.pool)} by {nm.expr(s.expr)}"
            return "rect", [(text, "n")], text
        if t is M.SDrop:
            return "rect", [(f"drop {nm.pool(s.pool)}", "n")], f"drop {nm.pool(s.pool)}"
        if t is M.SRelease:
            return "rect", [(f"release {nm.pool(s.pool)}", "n")], f"release {nm.pool(s.pool)}"
        if t is M.SLoad:
            text = f"load {nm.pool(s.pool)} {nm.expr(s.expr)}"
            return "rect", [(text, "n")], text
        if t is M.SChoose:
            text = (f"choose {nm.attr(s.slot)} = {nm.expr(s.count)}"
                    + (f" by {', '.join(nm.expr(k) for k in s.keys)}" if s.keys else ""))
            return "rect", [(text, "n")], text
        return "rect", [(t.__name__, "n")], t.__name__  # pragma: no cover

    def walk(self, bi: int, preds: list, parent: Optional[Cluster], in_server: bool) -> list:
        b = self.p.blocks[bi]
        legs: list = []
        outer = self.block
        stmts = list(zip(b.stmts, b.locs, b.sides))
        i = 0
        while i < len(stmts):
            s, loc, side = stmts[i]
            self.block = bi
            if side == "server" and not in_server:
                j = i
                while j < len(stmts) and stmts[j][2] == "server":
                    j += 1
                preds = self.server_run(bi, stmts[i:j], preds, parent, legs)
                i = j
                continue
            role = "stmt " + ("server" if in_server else "client")
            preds = self.stmt(s, loc, role, preds, parent, in_server, legs)
            i += 1
        self.block = outer
        return preds

    def server_run(self, bi: int, run: list, preds: list, parent: Optional[Cluster], legs: list) -> list:
        """The server's statements after a turn: drawn the first time, an edge
        to that drawing and back the next times."""
        key = tuple((loc.file, loc.line, loc.col) if loc is not None else None for _, loc, _ in run)
        loc0 = run[0][1]
        seen = self.servers.get(key)
        if seen is not None:
            first, ends = seen
            for src, label, role in preds:
                self.edge(src, first, loc0, "answered by the server", role)
            return [(src, "the answer", role) for src, _, role in ends]
        server = self.cluster("server", [("server · answers every turn", "s")], loc0,
                              "the server's statements, for every turn", parent)
        before = self.n_nodes
        for s, loc, side in run:
            self.block = bi
            preds = self.stmt(s, loc, "stmt server", preds, server, True, legs)
        self.servers[key] = (f"n{before}", list(preds))
        return preds

    def stmt(self, s: M.Stmt, loc, role: str, preds: list, here: Optional[Cluster], srv: bool,
             legs: list) -> list:
        t, nm = type(s), self.nm
        if t is M.SHold:
            head = "hold " + ", ".join(f"{nm.pool(h.pool)} ({nm.expr(h.units)})" for h in s.pools)
            full = "hold " + ", ".join(f"{nm.pool(h.pool)} ({nm.expr(h.units)})" for h in s.pools)
            lines = [(head, "n")]
            extra = []
            for h in s.pools:
                if h.reserve is not None:
                    extra.append(f"reserve {nm.pool(h.pool)} {nm.expr(h.reserve)}")
            if s.reuse is not None:
                extra.append(f"reuse {nm.expr(s.reuse)}")
            if s.cache is not None:
                extra.append(f"cache {nm.expr(s.cache)}")
            if s.lease is not None:
                extra.append(f"lease {nm.pool(s.lease.pool)} for {nm.expr(s.lease.time)}")
            if extra:
                lines.append((" · ".join(extra), "s"))
            c = self.cluster("hold", lines, loc, full, here)
            c.data["body"] = str(s.body)
            if not self.p.blocks[s.body].stmts:
                nid = self.node("rect", [("(nothing)", "s")], loc, "an empty hold", role, c,
                                {"block": str(s.body)})
                self.connect(preds, nid, loc)
                return [(nid, None, "flow")]
            return self.walk(s.body, preds, c, srv)
        if t is M.SBranch and type(s.guard) is M.ENum:
            # a guard the linker folded to a number: only its side runs
            side = s.then if s.guard.value != 0 else s.other
            return preds if side is None else self.walk(side, preds, here, srv)
        if t is M.SBranch:
            g = nm.expr(s.guard)
            d = self.node("diamond", [(g + " ?", "n")], loc, f"branch ({g})",
                          role + " branch", here)
            self.connect(preds, d, loc)
            out = self.walk(s.then, [(d, "yes", "flow")], here, srv)
            if s.other is not None:
                out += self.walk(s.other, [(d, "no", "flow")], here, srv)
            else:
                out.append((d, "no", "flow"))
            return out
        if t is M.SWhile:
            g = nm.expr(s.guard)
            d = self.node("diamond", [(f"while {g}", "n")], loc, f"while ({g})",
                          role + " while", here)
            self.connect(preds, d, loc)
            ends = self.walk(s.body, [(d, "yes", "flow")], here, srv)
            for src, label, r in ends:
                self.edge(src, d, loc, label, "back")
            return [(d, "no", "flow")]
        if t is M.SLoop:
            d = self.node("circle", [("loop", "n")], loc, "loop (left by end)", role + " loop", here)
            self.connect(preds, d, loc)
            ends = self.walk(s.body, [(d, None, "flow")], here, srv)
            for src, label, r in ends:
                self.edge(src, d, loc, label, "back")
            return []
        if t is M.SFork:
            f = self.node("bar", [("fork", "s")], loc, "fork: the body runs as a leg beside the request",
                          role + " fork", here)
            self.connect(preds, f, loc)
            legs.extend(self.walk(s.body, [(f, None, "fork")], here, srv))
            return [(f, None, "flow")]
        if t is M.SJoin:
            j = self.node("bar", [("join", "s")], loc, "join: wait for the legs", role + " join", here)
            self.connect(preds, j, loc)
            for src, label, r in legs:
                self.edge(src, j, loc, label, "fork")
            legs.clear()
            return [(j, None, "flow")]
        if t is M.SEnd:
            e = self.node("rrect", [("end", "h")], loc, "end: the session ends here"
                          + (" (the request is refused)" if srv else ""), role + " end", here)
            self.connect(preds, e, loc)
            return []
        shape, lines, what = self.simple(s)
        kind = {M.STurn: " turn", M.SRun: " run"}.get(t, "")
        nid = self.node(shape, lines, loc, what, role + kind, here)
        self.connect(preds, nid, loc)
        return [(nid, None, "flow")]

    # ----------------------------------------------------------------- scene
    def scene(self) -> Scene:
        p = self.p
        sess = p.blocks[p.session]
        first = next((l for l in sess.locs if l is not None), None)
        last = next((l for l in reversed(sess.locs) if l is not None), None)
        a = p.arrival
        arrive = {M.APoisson: "arrives (poisson)", M.ARenewal: "arrives (renewal)",
                  M.AClosed: "arrives (closed)", M.ABatch: "arrives (batch)",
                  M.ASessions: "arrives (given)"}.get(type(a), "session")
        start = self.node("ellipse", [("session", "h"), (arrive, "s")], first, "a session starts",
                          "source", None)
        preds = [(start, None, "flow")]
        if p.init is not None and p.blocks[p.init].stmts:
            iloc = next((l for l in p.blocks[p.init].locs if l is not None), None)
            c = self.cluster("init", [("init · once per session", "s")], iloc, "init: once per session", None)
            preds = self.walk(p.init, preds, c, False)
        preds = self.walk(p.session, preds, None, False)
        if preds:
            end = self.node("dcircle", [("done", "n")], last, "the session ends", "sink", None)
            self.connect(preds, end, last)
        roles = {e.role for e in self.sc.edges}
        legend = [("flow", "next statement"), ("back", "back to the loop"), ("fork", "a forked leg")]
        self.sc.legend = [(r, t) for r, t in legend if r in roles]
        kinds = {c.kind for c in self.sc.clusters()}
        if "server" in kinds:
            self.sc.legend.append(("server", "the server's statements"))
        if "hold" in kinds:
            self.sc.legend.append(("hold", "hold: its body"))
        return self.sc


def scene(program: M.Program) -> Scene:
    return Session(program).scene()
