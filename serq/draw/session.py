"""The session view: the session's statements as a flow chart, top to bottom.

One box per statement of the IR (the server's statements are copied after
every `turn`, so they appear once per turn); a branch or a while is a diamond
with `yes`/`no` arms, a loop a small circle its body comes back to, a fork a
bar with a dashed leg, a join a bar the legs come back to, a hold an
enclosure around its body.  The server's statements are shaded, and each run
of them after a turn is enclosed as the server's.
"""

from __future__ import annotations

from typing import Optional

from ..ir import model as M
from .scene import Cluster, Edge, Node, Scene
from .text import Namer, elide, loc_str

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
        self.sc.add_node(Node(nid, shape, lines, f"{self.L(loc)} {what}", role, data), parent)
        return nid

    def cluster(self, kind: str, lines: list, loc, what: str, parent: Optional[Cluster]) -> Cluster:
        c = Cluster(f"c{self.n_clusters}", kind, lines, f"{self.L(loc)} {what}", "enclosure " + kind)
        self.n_clusters += 1
        (parent.children if parent is not None else self.sc.roots).append(c)
        return c

    def edge(self, src: str, dst: str, loc, label: Optional[str] = None, role: str = "flow"):
        title = f"{self.L(loc)} " + {"flow": "next", "back": "back to the loop's head",
                                     "fork": "a forked leg"}.get(role, role)
        if label:
            title += f" ({label})"
        self.sc.edges.append(Edge(f"e{self.n_edges}", src, dst, title, role,
                                  [(label, "s")] if label else [], reverse=role == "back"))
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
                    lines.append((elide(f"{self.nm.attr(s.slot)} = {self.nm.expr(s.expr)}", W), "s"))
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
            return "rect", [(elide(text, W), "n")], text
        if t is M.SObserve:
            obs = self.p.observes[s.observe] if 0 <= s.observe < len(self.p.observes) else "?"
            text = f"observe {obs} = {nm.expr(s.expr)}"
            return "rect", [(elide(text, W), "n")], text
        if t is M.SRun:
            head = f"run {nm.stage(s.stage)}" + ("" if s.mode == "Plain" else f" {s.mode.lower()}")
            lines = [(head, "h"), (elide(f"work {nm.expr(s.work)}", W), "s")]
            if s.growing is not None:
                lines.append((f"growing {nm.pool(s.growing)}", "s"))
            if s.also:
                lines.append((f"also {', '.join(nm.stage(a) for a in s.also)}", "s"))
            return "rrect", lines, f"{head} (work {nm.expr(s.work)})"
        if t is M.SGrow:
            text = f"grow {nm.pool(s.pool)} by {nm.expr(s.expr)}"
            return "rect", [(elide(text, W), "n")], text
        if t is M.SDrop:
            return "rect", [(f"drop {nm.pool(s.pool)}", "n")], f"drop {nm.pool(s.pool)}"
        if t is M.SRelease:
            return "rect", [(f"release {nm.pool(s.pool)}", "n")], f"release {nm.pool(s.pool)}"
        if t is M.SLoad:
            text = f"load {nm.pool(s.pool)} {nm.expr(s.expr)}"
            return "rect", [(elide(text, W), "n")], text
        if t is M.SChoose:
            text = (f"choose {nm.attr(s.slot)} = {nm.expr(s.count)}"
                    + (f" by {', '.join(nm.expr(k) for k in s.keys)}" if s.keys else ""))
            return "rect", [(elide(text, W), "n")], text
        return "rect", [(t.__name__, "n")], t.__name__  # pragma: no cover

    def walk(self, bi: int, preds: list, parent: Optional[Cluster], in_server: bool) -> list:
        b = self.p.blocks[bi]
        server: Optional[Cluster] = None
        legs: list = []
        outer = self.block
        for s, loc, side in zip(b.stmts, b.locs, b.sides):
            self.block = bi
            here = parent
            if side == "server" and not in_server:
                if server is None:
                    server = self.cluster("server", [("server · answers the turn", "s")], loc,
                                          "the server's statements for this turn", parent)
                here = server
            elif side != "server":
                server = None
            srv = in_server or side == "server"
            role = "stmt " + ("server" if srv else "client")
            preds = self.stmt(s, loc, role, preds, here, srv, legs)
        self.block = outer
        return preds

    def stmt(self, s: M.Stmt, loc, role: str, preds: list, here: Optional[Cluster], srv: bool,
             legs: list) -> list:
        t, nm = type(s), self.nm
        if t is M.SHold:
            head = "hold " + ", ".join(f"{nm.pool(h.pool)} ({elide(nm.expr(h.units), 24)})" for h in s.pools)
            full = "hold " + ", ".join(f"{nm.pool(h.pool)} ({nm.expr(h.units)})" for h in s.pools)
            lines = [(elide(head, 2 * W), "n")]
            extra = []
            for h in s.pools:
                if h.reserve is not None:
                    extra.append(f"reserve {nm.pool(h.pool)} {elide(nm.expr(h.reserve), 16)}")
            if s.reuse is not None:
                extra.append(f"reuse {elide(nm.expr(s.reuse), 16)}")
            if s.cache is not None:
                extra.append(f"cache {elide(nm.expr(s.cache), 20)}")
            if s.lease is not None:
                extra.append(f"lease {nm.pool(s.lease.pool)} for {elide(nm.expr(s.lease.time), 12)}")
            if extra:
                lines.append((elide(" · ".join(extra), 2 * W), "s"))
            c = self.cluster("hold", lines, loc, full, here)
            c.data["body"] = str(s.body)
            if not self.p.blocks[s.body].stmts:
                nid = self.node("rect", [("(nothing)", "s")], loc, "an empty hold", role, c,
                                {"block": str(s.body)})
                self.connect(preds, nid, loc)
                return [(nid, None, "flow")]
            return self.walk(s.body, preds, c, srv)
        if t is M.SBranch:
            g = nm.expr(s.guard)
            d = self.node("diamond", [(elide(g, 28) + " ?", "n")], loc, f"branch ({g})",
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
            d = self.node("diamond", [(elide(f"while {g}", 28), "n")], loc, f"while ({g})",
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
