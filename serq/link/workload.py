"""The workload: its arrival, its trace, its init, turn and session blocks, the supplied `tool` stage."""

from __future__ import annotations

import math
import os

from ..diag import did_you_mean
from ..ir import model as M
from ..syntax import ast as A
from .env import Env
from .nodes import LinkAbort, fmt
from .tables import Fam, StageMeta


class Workload:
    """*Part of Linker*: the workload's items in order (once every
    declaration and engine is known), the session's block last."""

    def workload_blocks(self):
        wl = self.workload
        self.blocks = []
        init = turn = session = None
        server_block = self.server.block if self.server else None
        if wl is None:
            if self.server is not None:
                self.diag.add("E252", "a server needs a workload: `workload { arrive …; }`",
                              self.server.span)
            session_stmts = None
            wl_span = self.prog.main.span
        else:
            wl_span = wl.span
            session_stmts = None
            seen = set()
            hidden_at: dict = {}      # a hidden name -> where it is first named
            for w in wl.items:
                try:
                    if isinstance(w, A.WArrive):
                        if "arrive" in seen:
                            self.diag.add("E210", "the workload says `arrive` twice", w.span)
                        seen.add("arrive")
                        self.arrival = self.arrival_of(w)
                    elif isinstance(w, A.WTrace):
                        if "trace" in seen:
                            self.diag.add("E210", "the workload says `trace` twice", w.span)
                        seen.add("trace")
                        self.trace_of(w)
                    elif isinstance(w, A.WBlock):
                        if w.kind in seen:
                            self.diag.add("E210", f"the workload has one `{w.kind}` block", w.span)
                        seen.add(w.kind)
                        if w.kind == "session":
                            session_stmts = w.block
                        elif w.kind == "init":
                            init = self.new_block(w.block.stmts, Env(), "client", where="init")
                        else:
                            turn = self.new_block(w.block.stmts, Env(), "client", where="turn")
                    elif isinstance(w, A.WHidden):
                        for n, at in zip(w.names, w.name_spans):
                            if n in hidden_at:
                                self.diag.add("E210", f"`{n}` is hidden twice", at,
                                              notes=[f"first hidden at {hidden_at[n]}"])
                                continue
                            hidden_at[n] = at
                            if n in ("cached", "computed"):
                                self.diag.add("E253", f"`{n}` is set by the scheduler and cannot be hidden",
                                              w.span)
                            elif n not in self.attr_index:
                                self.diag.add("E201", f"hidden `{n}`: nothing sets it", w.span,
                                              help=did_you_mean(n, self.attr_index))
                            else:
                                self.hidden.append(self.attr_index[n])
                except LinkAbort:
                    pass
            if "trace" in seen and "turn" in seen:
                pass
        if self.settings.get("trace"):
            if "trace" not in (seen if wl is not None else ()):
                self.diag.add("E234", f"--trace {self.settings['trace']}: the program replays no trace, "
                              "so there is none to replace", wl_span,
                              help='a workload replays one with `trace "file.csv";`')
            self.trace = self.settings["trace"]
        if type(self.arrival) is M.ATrace and not (self.trace or "").endswith(".jsonl"):
            self.diag.add("E293", "`arrive trace(…)` reads its arrival times from a timestamped trace",
                          next(w.span for w in wl.items if isinstance(w, A.WArrive)),
                          help='name a Mooncake trace (`timestamp,input_length,output_length,hash_ids`, '
                               'one JSON object a line): `trace "FILE.jsonl";`')
        if type(self.arrival) is M.ATrace:
            self.trace_ordered = True     # row i is session i
        self.server_ast = server_block
        if session_stmts is None:
            stmts = [A.Turn(wl_span)] if wl is not None else []
            sess_span = wl_span
        else:
            stmts = session_stmts.stmts
            sess_span = session_stmts.span
            if not _has_turn(stmts) and self.server is not None:
                self.diag.add("E254", "the session never takes a turn, so the server never runs",
                              sess_span, help="`turn;` submits the turn to the server and waits for it")
        if self.server is not None and session_stmts is not None and not _has_turn(stmts):
            pass
        session = self.new_block(stmts, Env(), "client", where="session")
        self.init_block, self.turn_block, self.session_block = init, turn, session
        if self.tool_needed is not None and "tool" not in self.stage_fams:
            self.stages_meta.append(StageMeta("tool", None, M.KDelay(), self.loc(self.tool_needed),
                                              self.workload_item_no))
            self.stage_fams["tool"] = Fam(len(self.stages_meta) - 1, 1, False, self.tool_needed,
                                          self.workload_item_no)
            self.kinds.setdefault("tool", ("stage", self.tool_needed))
            # the supplied stage has no index yet in statements lowered before it:
            # they were given a placeholder which we now resolve
            self.resolve_tool_placeholders()

    def arrival_of(self, w: A.WArrive) -> M.Arrival:
        k = w.kind
        if k == "none":
            if w.expr is not None:
                self.fail("E221", "`arrive none;` takes no argument", w.span)
            return M.ANone()
        if w.expr is None:
            self.fail("E221", f"`arrive {k}(…)` takes an argument", w.span)
        if k == "renewal":
            return M.ARenewal(self.expr(w.expr, Env(clause="arrival")))
        v, _ = self.const_expr(w.expr, Env(clause="const"))
        if k == "trace":
            if not (v > 0 and math.isfinite(v)):
                self.fail("E293", f"`arrive trace(scale)`: the scale of the trace's timestamps is "
                          f"positive and finite, not {fmt(v)}", w.expr.span)
            return M.ATrace(v)
        if k == "poisson":
            if not (v > 0 and math.isfinite(v)):
                self.fail("E404", f"a poisson rate is positive and finite, not {fmt(v)}", w.expr.span)
            return M.APoisson(v)
        if not (1 <= v <= M.MAX_SESSIONS and v == math.floor(v)):
            self.fail("E404", f"a population is a whole number from 1 to {M.MAX_SESSIONS:,}, "
                      f"not {fmt(v)}", w.expr.span)
        return M.AClosed(int(v)) if k == "closed" else M.ABatch(int(v))

    def trace_of(self, w: A.WTrace):
        path = os.path.normpath(os.path.join(os.path.dirname(self.path), w.path))
        self.trace_ordered = w.ordered
        if self.settings.get("trace"):
            return
        if not os.path.exists(path):
            self.fail("E232", f"cannot read trace `{w.path}`: no such file (looked for {path})", w.span)
        self.trace = os.path.relpath(path)


def _has_turn(stmts) -> bool:
    for s in stmts:
        if isinstance(s, A.Turn):
            return True
        for attr in ("then", "other", "body"):
            b = getattr(s, attr, None)
            if isinstance(b, A.Block) and _has_turn(b.stmts):
                return True
    return False

