"""Declarations: main's items; pools, stages, devices and engines (families, options, pools on owners)."""

from __future__ import annotations

import math
from typing import Optional

from ..diag import Span, did_you_mean
from ..ir import model as M
from ..ir.expr import const_value
from ..syntax import ast as A
from . import queues
from .env import Env
from .nodes import LinkAbort, fmt, names_read
from .tables import DeviceInfo, EngineInfo, Fam, PoolMeta, StageMeta


class Declarations:
    """*Part of Linker*: each item of main declared in order; a pool's,
    stage's, device's and engine's family and options; pools on devices and
    engines once every engine is known."""

    def declare_item(self, item):
        if isinstance(item, (A.Let, A.Def, A.Use)):
            return
        if isinstance(item, A.PoolDecl):
            if item.owner is not None:
                self.declare(item.name, "pool", item.name_span)
                self.pending_pools_on.append((item, self.item_no))
                return
            n, array = self.count_of(item.count, f"pool `{item.name}`")
            self.declare_pool(item, n, array)
        elif isinstance(item, A.StageDecl):
            n, array = self.count_of(item.count, f"stage `{item.name}`")
            self.declare_stage(item.name, n, array, item.kind, item.span, name_span=item.name_span)
        elif isinstance(item, A.DeviceDecl):
            n, _ = self.count_of(item.count, f"device `{item.name}`")
            self.declare_device(item, n)
        elif isinstance(item, A.EngineDecl):
            self.engine_decl(item)
        elif isinstance(item, A.Workload):
            if self.workload is not None:
                self.diag.add("E240", "a program has one workload", item.span)
                return
            self.workload = item
            self.workload_item_no = self.item_no
        elif isinstance(item, A.Server):
            if self.server is not None:
                self.diag.add("E240", "a program has one server", item.span)
                return
            self.server = item
        elif isinstance(item, A.QueueDecl):
            queues.declare_queue(self, item)
        elif isinstance(item, A.Relation):
            queues.declare_relation(self, item)
        elif isinstance(item, A.ShareDecl):
            if self.share_decl is not None:
                self.diag.add("E210", "`share` is declared twice", item.span)
            self.share_decl = item.span
            self.share = {"maxmin": "MaxMin", "bottleneck": "Bottleneck"}[item.kind]
        elif isinstance(item, A.GaugeDecl):
            self.declare(item.name, "gauge", item.name_span)
            self.gauge_decls.append(item)
        elif isinstance(item, A.ClaimDecl):
            self.declare(item.name, "claim", item.name_span)
            self.claim_decls.append(item)
        elif isinstance(item, A.RunBlock):
            self.diag.add("E106", "`run { … }` is not part of a model: execution settings are given "
                          "when the program is run", item.span,
                          help="serq run FILE --horizon T [--warmup W] [--seed N] [--arrivals N]")
        elif isinstance(item, A.Main):
            self.diag.add("E107", "`fn main()` is declared once, at the top level", item.span)
        else:  # pragma: no cover
            self.diag.add("E199", f"unsupported item {type(item).__name__}", item.span)

    def declare_pool(self, item: A.PoolDecl, n: int, array: bool):
        """A family of `n` pools (one without `[…]`) under `item`'s name."""
        self.declare(item.name, "pool", item.name_span)
        base = len(self.pools_meta)
        for k in range(n):
            pm = PoolMeta(item.name, k if array else None, loc=self.loc(item.span), decl=item)
            self.pools_meta.append(pm)
        self.pool_fams[item.name] = Fam(base, n, array, item.span, self.item_no)
        for k in range(n):
            self.pool_options(base + k, item, allow_cap=True)

    def declare_stage(self, name: str, n: int, array: bool, kind_ast: A.Kind, span: Span,
                      name_span: Optional[Span] = None, declare: bool = True):
        """A family of `n` stages of one kind; `declare` False for the stages a
        queue names after itself (the queue's name is the queue's)."""
        if declare:
            self.declare(name, "stage", name_span or span)
        kind = self.stage_kind(kind_ast, name)
        base = len(self.stages_meta)
        for k in range(n):
            self.stages_meta.append(StageMeta(name, k if array else None, kind, self.loc(span), self.item_no))
        self.stage_fams[name] = Fam(base, n, array, span, self.item_no)

    def declare_device(self, item: A.DeviceDecl, n: int):
        self.declare(item.name, "device", item.name_span)
        dev = DeviceInfo(item.name, n, item)
        for r in item.resources:
            if isinstance(r, A.TimeResource):
                if r.name in dev.time or r.name in dev.caps:
                    self.diag.add("E210", f"device `{item.name}` declares `{r.name}` twice", r.span)
                dev.time[r.name] = r
                self.device_time_names.add(r.name)
                unread = [p for p in r.params if not names_read(r.expr).get(p)]
                if unread:
                    self.diag.add("E215", f"time resource `{r.name}` does not read its parameter "
                                  f"`{unread[0]}`", r.span)
            else:
                if r.name in dev.time or r.name in dev.caps:
                    self.diag.add("E210", f"device `{item.name}` declares `{r.name}` twice", r.span)
                dev.caps[r.name] = r
        self.devices[item.name] = dev

    def stage_kind(self, k: A.Kind, name: str):
        env = Env(clause="ps")
        if k.kind == "fifo":
            if k.expr is None:
                return M.KFifo(1)
            v, _ = self.const_expr(k.expr, Env(clause="const"))
            if not (v >= 1 and math.isfinite(v) and v == math.floor(v)):
                self.fail("E403", f"a fifo's servers are a whole number ≥ 1, not {fmt(v)}", k.expr.span)
            return M.KFifo(int(v))
        if k.kind == "ps":
            cap = self.expr(k.expr, env)
            v = const_value(cap)
            if v is not None and v < 0:
                self.fail("E403", f"a ps stage's capacity is a number ≥ 0, not {fmt(v)}", k.expr.span,
                          help="`ps(c)` shares a throughput of c among the jobs present; "
                               "a capacity that falls with them may read `present`")
            return M.KPs(cap)
        if k.kind == "delay":
            return M.KDelay()
        self.fail("E108", f"`stage {name} : step {{ … }}` is the older spelling of an engine", k.span,
                  help="declare the engine on its device:\n"
                       "    device gpu { kv cap blocks * bs; }\n"
                       f"    engine {name if name != 'engine' else 'llm'} on gpu {{ reqs cap max_seqs; tokens cap B;\n"
                       "      schedule { advance running; admit waiting while (running.preempted == 0); }\n"
                       "      execute (…); }\n"
                       "    pool kv on gpu { block bs; evict lru; preempt lifo; }\n"
                       f"    pool reqs on {name if name != 'engine' else 'llm'} {{ queue fifo; }}")

    def pool_options(self, i: int, decl: A.PoolDecl, allow_cap: bool):
        pm = self.pools_meta[i]
        seen = set()
        for o in decl.opts:
            # (`cache shared …;` and `cache at (e);` are two options)
            key = "cache at" if o.kind == "cache_at" else o.kind.split("_")[0]
            if key in seen:
                self.diag.add("E210", f"pool `{decl.name}` says `{key}` twice", o.span)
                continue
            seen.add(key)
            try:
                if o.kind == "cap":
                    if not allow_cap:
                        self.fail("E241", f"the capacity of pool `{decl.name}` is its owner's",
                                  o.span, help=f"declare `{decl.name} cap …;` in `{decl.owner}`")
                    v, _ = self.const_expr(o.exprs[0], Env(clause="const"))
                    if math.isnan(v) or v < 0:
                        self.fail("E403", f"a cap is a number ≥ 0, not {fmt(v)}", o.exprs[0].span)
                    pm.cap = v
                elif o.kind == "block":
                    v, _ = self.const_expr(o.exprs[0], Env(clause="const"))
                    if not (v > 0 and math.isfinite(v)):
                        self.fail("E403", f"a block is a positive number, not {fmt(v)}", o.exprs[0].span)
                    pm.block = v
                elif o.kind == "evict_lru":
                    pm.evict = M.EvictLru()
                elif o.kind == "evict_by":
                    pm.evict = M.EvictBy(tuple(self.expr(k, Env(clause="evict")) for k in o.exprs))
                elif o.kind == "preempt_none":
                    pm.preempt = M.PreemptNone()
                elif o.kind == "preempt_lifo":
                    neg = self.mk(M.EUnary("Neg", self.mk(M.ECtx("Admission"), o.span)), o.span)
                    pm.preempt = M.PreemptBy((neg,), False, self.then_free(o))
                elif o.kind == "preempt_by":
                    keys = tuple(self.expr(k, Env(clause="preempt_key")) for k in o.exprs)
                    pm.preempt = M.PreemptBy(keys, o.word == "tail", self.then_free(o))
                elif o.kind == "queue_fifo":
                    pm.queue = None
                elif o.kind in ("queue_by", "queue_ordered"):
                    pm.queue = tuple(self.expr(k, Env(clause="queue_key")) for k in o.exprs)
                    pm.ordered = o.kind == "queue_ordered"
                    if o.tail is not None:
                        pm.tail_when, pm.tail_shared = (self.expr(x, Env(clause="queue_key")) for x in o.tail)
                elif o.kind == "reserve_held":
                    pm.reserve_held = True
                    if o.exprs:
                        pm.held = self.expr(o.exprs[0], Env(clause="held"))
                elif o.kind == "cache_shared":
                    pm.shared = True
                elif o.kind == "cache_shared_fifo":
                    pm.shared = pm.free_fifo = True
                elif o.kind == "cache_shared_tree":
                    pm.shared = pm.tree = True
                elif o.kind == "cache_at":
                    pm.cache_at = self.expr(o.exprs[0], Env(clause="cache_at"))
                elif o.kind == "spill":
                    to = self.ref_of(o.refs[0], Env(clause="spill"), "pool")
                    via = self.ref_of(o.refs[1], Env(clause="spill"), "stage")
                    pm.spill = M.Spill(to, via, self.expr(o.exprs[0], Env(clause="spill")),
                                       self.expr(o.exprs[1], Env(clause="spill")))
                elif o.kind == "admit_via":
                    self.fail("E109", "`admit via` is the older spelling: who admits a pool is said "
                              "where the pool is", o.span,
                              help=f"declare it on its engine: `pool {decl.name} on {o.word} {{ … }}` "
                                   f"(a capacity `{decl.name} cap …;` in engine {o.word}), or "
                                   f"`pool {decl.name} on {o.word}.DEVICE {{ … }}`")
            except LinkAbort:
                pass

    def then_free(self, o: A.Opt):
        """A preemption rule's `then free (e)`, linked (None without)."""
        return None if o.then is None else self.expr(o.then, Env(clause="then_free"))

    def engine_decl(self, item: A.EngineDecl, count: Optional[tuple] = None, device: Optional[str] = None,
                    declare: bool = True):
        """An engine; a queue's (`engine on gpu` in queue P) passes its member
        count, its device's name (`P.gpu`) and declare False."""
        if declare:
            self.declare(item.name, "engine", item.name_span)
        if declare and item.name == "engine":
            self.diag.add("E211", "`engine` is a keyword: an engine is named for what it models "
                          "(`vllm`, `sglang`, `tgi`) or `llm`", item.name_span)
        dev = self.devices.get(device or item.device)
        if dev is None:
            kind = self.kind_of(item.device)
            msg = f"unknown device `{item.device}`" if kind is None else \
                f"`{item.device}` is a {kind}, not a device"
            self.fail("E201", msg, item.span, help=did_you_mean(item.device, self.devices) or
                      f"declare it above: `device {item.device} {{ … }}`")
        if dev.engine is not None:
            self.fail("E242", f"device `{dev.name}` already runs engine `{dev.engine.name}`; "
                      "one device runs one engine", item.name_span)
        n, array = count if count is not None else self.count_of(item.count, f"engine `{item.name}`")
        eng = EngineInfo(item.name, n, item, dev)
        dev.engine = eng
        if dev.count not in (1, n):
            self.fail("E243", f"engine `{item.name}[{n}]` on device `{dev.name}[{dev.count}]`: "
                      "families are joined member for member, or one for all", item.span)
        eng.base = len(self.stages_meta)
        for k in range(n):
            self.stages_meta.append(StageMeta(item.name, k if array else None, None,
                                              self.loc(item.span), self.item_no))
        self.stage_fams[item.name] = Fam(eng.base, n, array, item.span, self.item_no)
        for it in item.items:
            if isinstance(it, A.ECap):
                if it.name in eng.caps or (it.name == "tokens" and "tokens" in eng.caps):
                    self.diag.add("E210", f"engine `{item.name}` declares `{it.name} cap` twice", it.span)
                if it.name == "tokens" and it.count is not None:
                    self.diag.add("E403", "`tokens cap` is one number", it.span)
                cnt = 1
                if it.count is not None:
                    cnt, _ = self.count_of(it.count, f"`{it.name}`")
                    if n > 1:
                        self.diag.add("E244", f"an engine family holds no `{it.name}[{cnt}]`: "
                                      f"`{it.name} cap` already gives each member its own", it.span)
                eng.caps[it.name] = (cnt, it)
            elif isinstance(it, A.ERequest):
                if eng.request is not None:
                    self.diag.add("E210", f"engine `{item.name}` has one request", it.span)
                if n > 1:
                    self.diag.add("E244", "an engine family has no request", it.span)
                eng.request = it
            elif isinstance(it, A.ESchedule):
                if eng.schedule is not None:
                    self.diag.add("E210", f"engine `{item.name}` has one schedule", it.span)
                eng.schedule = it
            elif isinstance(it, A.EState):
                if it.name in self.register_index or it.name in self.kinds:
                    self.diag.add("E210", f"register `{it.name}` names something else", it.span)
                    continue
                if n > 1:
                    self.diag.add("E244", "an engine family declares no registers", it.span)
                    continue
                v, _ = self.const_expr(it.expr, Env(clause="const"))
                if not math.isfinite(v):
                    self.diag.add("E403", "a register starts at a finite number", it.expr.span)
                self.register_index[it.name] = len(self.registers)
                self.registers.append(M.Register(it.name, eng.base, v))
                self.kinds[it.name] = ("register", it.span)
        for what, ok in (("tokens cap", "tokens" in eng.caps),
                         ("schedule", eng.schedule is not None),
                         ("execute", any(isinstance(i, A.EExecute) for i in item.items))):
            if not ok:
                self.diag.add("E245", f"engine `{item.name}` needs `{what}`", item.name_span,
                              help={"tokens cap": "the tokens one iteration computes: `tokens cap B;` "
                                                  "(`inf` for none)",
                                    "schedule": "what each iteration does, e.g. `schedule { advance running; "
                                                "admit waiting while (running.preempted == 0); }`",
                                    "execute": "the batch's time: `execute (…);` (`execute (1);` is the "
                                               "step clock)"}[what])
        self.engines[item.name] = eng
        return eng

    def pool_on(self, item: A.PoolDecl, item_no: int):
        owner, device = item.owner, item.device
        local = item.name.rsplit(".", 1)[-1]   # a queue's pool `P.kv` is its owner's capacity `kv`
        admit_eng: Optional[EngineInfo] = None
        mem_eng: Optional[EngineInfo] = None
        if device is not None:
            eng = self.engines.get(owner)
            if eng is None:
                self.fail("E201", f"`pool {item.name} on {owner}.{device}`: unknown engine `{owner}`",
                          item.span, help=did_you_mean(owner, self.engines))
            if eng.device.name != device:
                self.fail("E246", f"engine `{owner}` runs on `{eng.device.name}`, not `{device}`",
                          item.span)
            dev, admit_eng, mem_eng = eng.device, eng, eng
            cap_decl = dev.caps.get(local)
            if cap_decl is None:
                self.fail("E247", f"device `{dev.name}` declares no capacity `{local}`", item.span,
                          help=f"add `{local} cap …;` to device `{dev.name}`")
            count = dev.count if dev.count > 1 else (eng.count if eng.count > 1 else 1)
            cap_expr = cap_decl.expr
        elif owner in self.devices:
            dev = self.devices[owner]
            cap_decl = dev.caps.get(local)
            if cap_decl is None:
                self.fail("E247", f"device `{dev.name}` declares no capacity `{local}`", item.span,
                          help=f"add `{local} cap …;` to device `{dev.name}`")
            mem_eng = dev.engine
            count = dev.count
            cap_expr = cap_decl.expr
        elif owner in self.engines:
            eng = self.engines[owner]
            if local not in eng.caps:
                self.fail("E247", f"engine `{owner}` holds no capacity `{local}`", item.span,
                          help=f"add `{local} cap …;` to engine `{owner}`")
            cnt, ecap = eng.caps[local]
            admit_eng = eng
            count = cnt if cnt > 1 else eng.count
            cap_expr = ecap.expr
        else:
            kind = self.kind_of(owner)
            self.fail("E201", f"`pool {item.name} on {owner}`: " +
                      (f"unknown owner `{owner}`" if kind is None else f"`{owner}` is a {kind}") +
                      " (a pool is on a device or an engine)", item.span,
                      help=did_you_mean(owner, list(self.devices) + list(self.engines)))
        cap, _ = self.const_expr(cap_expr, Env(clause="const"))
        if math.isnan(cap) or cap < 0:
            self.fail("E403", f"a cap is a number ≥ 0, not {fmt(cap)}", cap_expr.span)
        base = len(self.pools_meta)
        owner_q = self.queues.get(item.name.split(".", 1)[0]) if "." in item.name else None
        array = count > 1 or (owner_q is not None and owner_q.array)   # a family of one is a family
        for k in range(count):
            pm = PoolMeta(item.name, k if array else None, cap=cap, loc=self.loc(item.span), decl=item)
            self.pools_meta.append(pm)
        self.pool_fams[item.name] = Fam(base, count, array, item.span, item_no)
        for k in range(count):
            self.pool_options(base + k, item, allow_cap=False)
            if admit_eng is not None:
                member = k if admit_eng.count > 1 else 0
                self.pools_meta[base + k].admit_via = admit_eng.base + member
        if admit_eng is not None:
            admit_eng.admitted.append(base)
        if mem_eng is not None:
            if mem_eng.memory is not None:
                self.fail("E248", f"engine `{mem_eng.name}`'s device holds one memory pool; "
                          f"`{self.pools_meta[mem_eng.memory].name}` is it", item.span)
            if count != mem_eng.count:
                self.fail("E243", f"pool `{item.name}` has {count} member(s) and engine "
                          f"`{mem_eng.name}` {mem_eng.count}: the memory of each member is its own",
                          item.span)
            mem_eng.memory = base

    def engine_admits(self, eng: EngineInfo) -> list:
        return [(b, self.pool_fams[self.pools_meta[b].name].count) for b in eng.admitted]

