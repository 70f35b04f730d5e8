"""`serq target PROGRAM --engine vllm`: the vLLM 0.33.0 engine arguments a
program's engine is, read from the IR alone, or the located reason it is no
vLLM configuration.

vLLM's scheduler has one procedure with a few knobs (the vLLM correspondence,
docs/target.md).  A program's engine is that procedure when its step stage
serves its running requests in admission order and then admits with the
budget left unless it preempted (`serve By []`, no iteration body), its chunk
is vLLM's long-prefill threshold (none, lifted while one request is running or
waiting, or the adaptive one), its memory is a block pool evicted LRU, and its
victim and waiting order are FCFS's (`preempt lifo`, `queue fifo`) or
PRIORITY's (`preempt by (-p, -t, -serial) requeue tail` beside `queue by
(p, t, serial)`: the victim among equal priorities the latest arrival, as a
server's distinct arrival times make it).  Its numbers are the knobs: `tokens cap` is
max_num_batched_tokens, the queue's cap max_num_seqs, the pool's block and cap
block_size and num_gpu_blocks_override (one more than the usable blocks:
vLLM's BlockPool keeps one as its null_block, v1/core/block_pool.py:189-192;
cache_config.num_gpu_blocks_override is applied at
v1/core/kv_cache_planning.py:243-247), and a cache
clause on the request's hold is enable_prefix_caching.  `execute` is the
device's time, not an engine argument.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from ..diag import Diagnostic, SerqError, Span, number_text
from ..ir import model as M

VLLM = "0.33.0"
ENGINES = ("vllm",)

# The arguments, in the order they are printed, with their command-line flags
# (vllm/engine/arg_utils.py: EngineArgs and add_cli_args).
ORDER = ("max_num_batched_tokens", "max_num_seqs", "block_size", "num_gpu_blocks_override",
         "long_prefill_token_threshold", "long_prefill_token_threshold_adaptive",
         "enable_prefix_caching", "scheduling_policy", "enable_chunked_prefill", "async_scheduling")


@dataclasses.dataclass(frozen=True)
class Target:
    """What `vllm` found: the engine's stage, its KV pool and its queue, the
    arguments, and under PRIORITY the attributes its keys read."""

    stage: int
    kv: int
    reqs: int
    args: dict
    priority_attr: Optional[int] = None
    t0_attr: Optional[int] = None

    @property
    def policy(self) -> str:
        return self.args["scheduling_policy"]


class _Refusal:
    def __init__(self, p: M.Program):
        self.p = p
        self.items: list[Diagnostic] = []

    def __call__(self, loc: Optional[M.Loc], msg: str, help: Optional[str] = None) -> None:
        span = None
        if loc is not None:
            span = Span.point(self.p.files[loc.file], loc.line, loc.col)
        self.items.append(Diagnostic("E970", f"not a vLLM {VLLM} engine: {msg}", span, help))


def _zero(e: Optional[M.Expr]) -> bool:
    """Identically zero, as the linker leaves `0 * x` and `cost(P, 0)`."""
    t = type(e)
    if t is M.ENum:
        return e.value == 0
    if t is M.ECost:
        return _zero(e.expr)
    if t is M.EBinary and e.op == "Mul":
        return _zero(e.lhs) or _zero(e.rhs)
    return False


def _terms(e: M.Expr) -> list:
    if type(e) is M.EBinary and e.op == "Add":
        return _terms(e.lhs) + _terms(e.rhs)
    return [e]


def _is_count(e: M.Expr, admitted: list[int]) -> bool:
    """`running.count + waiting.count`: the residents and every queue the
    engine admits (vLLM's num_running + num_waiting, scheduler.py:757-758)."""
    terms = _terms(e)
    want = sorted(["Nres"] + [f"Q{i}" for i in admitted])
    got = []
    for x in terms:
        if type(x) is M.ECtx and x.var == "Nres":
            got.append("Nres")
        elif type(x) is M.EQuery and x.query == "Queued" and x.ref.index is None and x.ref.count == 1:
            got.append(f"Q{x.ref.base}")
        else:
            return False
    return sorted(got) == want


def _num(e) -> Optional[float]:
    return e.value if type(e) is M.ENum else None


WHOLE = 2 ** 53     # an engine argument is a whole number below this (one JSON and the oracle's scenarios keep exactly)
RANGE = "a whole number from 1 below 2^53"


def _whole(x: Optional[float]) -> bool:
    return x is not None and math.isfinite(x) and x == int(x) and abs(x) < WHOLE


def _arg(x: Optional[float]) -> bool:
    """``x`` can be one of vLLM's sizes: a whole number from 1 below 2^53."""
    return _whole(x) and x >= 1


def _is(x: Optional[float]) -> str:
    return "is not a constant" if x is None else f"is {number_text(x) if abs(x) < 1e16 else format(x, 'g')}"


def _chunk(e: M.Expr, budget: float, admitted: list[int]) -> Optional[tuple]:
    """(threshold, adaptive) for vLLM's forms of the long-prefill cap
    (long_prefill_token_threshold, scheduler.py:754-770), None for any other."""
    v = _num(e)
    if v == 0:
        return (0, False)
    if type(e) is not M.ECond or _num(e.other) != 0:
        return None
    c = e.cond
    if not (type(c) is M.EBinary and c.op == "Gt" and _num(c.rhs) == 1 and _is_count(c.lhs, admitted)):
        return None
    then = e.then
    if _whole(_num(then)) and _num(then) >= 0:
        return (int(then.value), False)
    # n > 1 ? max(k, floor(B / n)) : inf  (long_prefill_token_threshold_adaptive)
    if type(then) is M.EFn and then.fn == "Max":
        for k, share in (then.args, then.args[::-1]):
            if (_whole(_num(k)) and k.value > 0 and type(share) is M.EFn and share.fn == "Floor"
                    and type(share.args[0]) is M.EBinary and share.args[0].op == "Div"
                    and _num(share.args[0].lhs) == budget and _is_count(share.args[0].rhs, admitted)):
                return (int(k.value), True)
    return None


def _neg_attr(e) -> Optional[int]:
    if type(e) is M.EUnary and e.op == "Neg" and type(e.arg) is M.EAttr:
        return e.arg.slot
    return None


def _holds(p: M.Program):
    for b in p.blocks:
        for s in b.stmts:
            if type(s) is M.SHold:
                yield s


def _awaits(p: M.Program, si: int) -> tuple:
    """Whether an `await;` on stage ``si`` stands before a hold (outside
    every hold's body) and inside one, leaving out the branches whose guard
    folded to 0: vLLM's asynchronous scheduling is both (docs/calibration.md)."""
    bodies = {s.body for b in p.blocks for s in b.stmts if type(s) is M.SHold}
    found = [False, False]

    def walk(bi: int, inside: bool, seen: set) -> None:
        if bi in seen:
            return
        seen.add(bi)
        inside = inside or bi in bodies
        for s in p.blocks[bi].stmts:
            t = type(s)
            if t is M.SRun and s.mode == "Await" and s.stage.base <= si < s.stage.base + s.stage.count:
                found[inside] = True
            elif t is M.SBranch:
                g = _num(s.guard)
                if g is None or g != 0:
                    walk(s.then, inside, seen)
                if s.other is not None and (g is None or g == 0):
                    walk(s.other, inside, seen)
            else:
                for f in ("body", "then", "other"):
                    b = getattr(s, f, None)
                    if isinstance(b, int):
                        walk(b, inside, seen)
    inner = {getattr(s, f) for b in p.blocks for s in b.stmts for f in ("body", "then", "other")
             if isinstance(getattr(s, f, None), int)}
    for bi in range(len(p.blocks)):
        if bi not in inner:     # a block no statement holds: the workload's and the server's
            walk(bi, False, set())
    return tuple(found)


def vllm(p: M.Program) -> Target:
    """The program's engine as vLLM's arguments, or every reason it is not."""
    refuse = _Refusal(p)
    steps = [i for i, s in enumerate(p.stages) if type(s.kind) is M.KStep]
    if len(steps) != 1 or p.stages[steps[0]].index is not None:
        what = "no engine" if not steps else f"{len(steps)} engine stages"
        refuse(None, f"the program has {what}; a vLLM instance is one engine",
               help="give `serq target` a program with one `engine` that is not a family")
        raise SerqError(refuse.items)
    si = steps[0]
    st = p.stages[si]
    k = st.kind
    name = f"engine `{st.name}`"
    if type(k.serve) is not M.ServeBy or k.serve.keys or k.iteration is not None:
        how = ("takes one prefill alone (`exclusive prefill`)" if type(k.serve) is M.ServeExclusivePrefill
               else "serves its running requests by keys" if k.serve.keys
               else "runs another schedule")
        refuse(st.loc, f"{name} {how}; vLLM does not",
               help="vLLM's schedule() is `advance running; admit waiting while (running.preempted == 0);`: "
                    "the running requests in admission order, then the waiting ones with the budget left "
                    "(self.running, then self.waiting, v1/core/sched/scheduler.py:793-1128)")
    if k.granule is not None:
        refuse(st.loc, f"{name} has a granule; vLLM chunks a prefill to any number of tokens")
    budget = _num(k.budget)
    if not _arg(budget):
        refuse(st.loc, f"the `tokens cap` of {name} {_is(budget)}: vLLM's max_num_batched_tokens is {RANGE}",
               help="vLLM's max_num_batched_tokens is one number")
        budget = None
    admitted = [i for i, q in enumerate(p.pools) if q.admit_via == si]
    args: dict = {}
    chunk = _chunk(k.chunk, budget, admitted) if budget is not None else (0, False)
    if chunk is None:
        if _whole(_num(k.chunk)):
            refuse(st.loc, f"{name} caps every prefill chunk at {int(k.chunk.value)}, always",
                   help="vLLM lifts long_prefill_token_threshold while one request is running or waiting "
                        "(scheduler.py:754-770): write `let threshold = running.count + waiting.count > 1 "
                        "? c : inf;` and `each at most (threshold)`")
        else:
            refuse(st.loc, f"the `each at most` of {name} is not vLLM's long-prefill threshold",
                   help="vLLM's forms: none, `n > 1 ? c : inf`, or the adaptive `n > 1 ? max(c, floor(B / n)) "
                        ": inf` with n = running.count + waiting.count and B the tokens cap "
                        "(long_prefill_token_threshold_adaptive, scheduler.py:754-770, "
                        "config/scheduler.py:86-90)")
        chunk = (0, False)
    if len(admitted) != 1:
        refuse(st.loc, f"{name} admits {len(admitted)} queues; vLLM admits its one waiting queue",
               help="declare `reqs cap max_seqs;` in the engine and `pool reqs on ENGINE { … }`")
        raise SerqError(refuse.items)
    ri = admitted[0]
    reqs = p.pools[ri]
    if k.memory is None:
        refuse(st.loc, f"{name} has no KV memory (`kv cap …` on its device, `pool kv on DEVICE`)")
        raise SerqError(refuse.items)
    kv = p.pools[k.memory]
    seqs = reqs.cap
    if not _arg(seqs):
        refuse(reqs.loc, f"the cap of the queue `{reqs.name}` of {name} {_is(seqs)}: vLLM's max_num_seqs is {RANGE}")
        seqs = None
    bs = kv.block
    if bs is None:
        refuse(kv.loc, f"the KV pool `{kv.name}` allocates no blocks: vLLM's block_size is one number",
               help="write `block bs;` in the pool")
    elif not _arg(bs):
        refuse(kv.loc, f"the block of the KV pool `{kv.name}` {_is(bs)}: vLLM's block_size is {RANGE}")
        bs = None
    elif math.isfinite(kv.cap) and not kv.cap // bs + 1 < WHOLE:
        refuse(kv.loc, f"the KV pool `{kv.name}` holds {kv.cap:g} tokens, {kv.cap // bs:g} blocks: vLLM's "
                       f"num_gpu_blocks_override is {RANGE}")
    elif not (_whole(kv.cap) and kv.cap % bs == 0):
        refuse(kv.loc, f"the KV pool `{kv.name}` holds {kv.cap:g} tokens, not a whole number of {bs:g}-token blocks")
    if type(kv.evict) is not M.EvictLru:
        refuse(kv.loc, f"the KV pool `{kv.name}` does not evict LRU",
               help="vLLM's free queue hands out the least recently freed block first (v1/core/block_pool.py)")
    if kv.spill is not None or kv.reserve_held:
        refuse(kv.loc, f"the KV pool `{kv.name}` spills or holds reservations; vLLM's block pool does neither")
    # the victim and the waiting order
    policy, pa, ta = None, None, None
    pre = kv.preempt
    lifo = (M.EUnary("Neg", M.ECtx("Admission")),)
    if type(pre) is M.PreemptBy and pre.keys == lifo and not pre.tail and reqs.queue is None:
        policy = "fcfs"
    elif (type(pre) is M.PreemptBy and pre.tail and len(pre.keys) == 3
          and _neg_attr(pre.keys[2]) == p.attrs.index("serial") and _neg_attr(pre.keys[0]) is not None
          and _neg_attr(pre.keys[1]) is not None and reqs.queue is not None
          and reqs.queue == (M.EAttr(_neg_attr(pre.keys[0])), M.EAttr(_neg_attr(pre.keys[1])),
                             M.EAttr(p.attrs.index("serial")))):
        policy, pa, ta = "priority", _neg_attr(pre.keys[0]), _neg_attr(pre.keys[1])
    else:
        refuse(kv.loc, f"the victim of `{kv.name}` and the order of `{reqs.name}` are not a vLLM policy's",
               help="FCFS: `preempt lifo;` (running[-1]) beside `queue fifo;`; PRIORITY: `preempt by (-priority, "
                    "-t0, -serial) requeue tail;` beside `queue by (priority, t0, serial);` "
                    "(SchedulingPolicy.PRIORITY, scheduler.py:932-938; PriorityRequestQueue, "
                    "request_queue.py:131-164; Request.__lt__, request.py:357-367)")
    # the request: what it caches, and the whole sequence reserved
    mine = [h for h in _holds(p) if h.pools and h.pools[0].pool.base == ri]
    if not mine:
        refuse(reqs.loc, f"no hold takes the queue `{reqs.name}` of {name}: it runs no request")
    prefix = set()
    for h in mine:
        kvp = [hp for hp in h.pools if hp.pool.base == k.memory]
        if not kvp or kvp[0].reserve is None:
            refuse(reqs.loc, f"a request of {name} is admitted without reserving its whole sequence on `{kv.name}`",
                   help="vLLM admits a request when every token it has fits (scheduler_reserve_full_isl, "
                        "config/scheduler.py:190; full_sequence_must_fit, kv_cache_manager.py:531-548): "
                        "`reserve (known)`")
        caches = h.cache is not None and not _zero(h.cache)
        if caches and h.reuse is not None and _zero(h.reuse):
            refuse(reqs.loc, f"a request of {name} caches its blocks and never reuses them; vLLM's prefix cache does")
        prefix.add(caches)
    if len(prefix) > 1:
        refuse(reqs.loc, f"the requests of {name} disagree on caching; vLLM's prefix cache is on or off")
    if refuse.items:
        raise SerqError(refuse.items)
    args = {
        "max_num_batched_tokens": int(budget),
        "max_num_seqs": int(seqs),
        "block_size": int(bs),
        "num_gpu_blocks_override": int(kv.cap // bs) + 1,
        "long_prefill_token_threshold": chunk[0],
        "long_prefill_token_threshold_adaptive": chunk[1],
        "enable_prefix_caching": prefix == {True},
        "scheduling_policy": policy,
        "enable_chunked_prefill": True,
        "async_scheduling": _awaits(p, si) == (True, True),
    }
    if args["max_num_batched_tokens"] < args["max_num_seqs"]:
        raise SerqError(Diagnostic(
            "E971", f"vLLM refuses this engine: max_num_batched_tokens ({args['max_num_batched_tokens']}) "
                    f"< max_num_seqs ({args['max_num_seqs']})",
            Span.point(p.files[st.loc.file], st.loc.line, st.loc.col) if st.loc else None,
            help="config/scheduler.py:331-336: max_num_batched_tokens must be at least max_num_seqs"))
    return Target(si, k.memory, ri, args, pa, ta)


def flags(args: dict) -> str:
    """The arguments as `vllm serve` flags (booleans as --x / --no-x)."""
    out = []
    for key in ORDER:
        v = args[key]
        flag = "--" + key.replace("_", "-")
        if isinstance(v, bool):
            out.append(flag if v else "--no-" + key.replace("_", "-"))
        else:
            out.append(f"{flag} {v}")
    return " ".join(out)


# ---------------------------------------------------------------- scenarios

def scenario_engine(args: dict) -> dict:
    """The harness's engine fields (tools/oracle/README.md) for the arguments."""
    return {"budget": args["max_num_batched_tokens"], "max_seqs": args["max_num_seqs"],
            "block_size": args["block_size"], "num_blocks": args["num_gpu_blocks_override"] - 1,
            "chunk": args["long_prefill_token_threshold"],
            "adaptive": args["long_prefill_token_threshold_adaptive"],
            "prefix_caching": args["enable_prefix_caching"], "policy": args["scheduling_policy"]}


def instantiate(p: M.Program, t: Target, s: dict) -> M.Program:
    """The program with its engine's numbers the scenario's (what linking it
    with those inputs gives) on the step clock (`execute (1)`).  The
    procedure stays the program's: a scenario that asks for another policy,
    prefix caching or adaptive threshold than it has is refused."""
    want = {"policy": s.get("policy", "fcfs"), "prefix_caching": s.get("prefix_caching", False),
            "adaptive": s.get("adaptive", False)}
    have = {"policy": t.policy, "prefix_caching": t.args["enable_prefix_caching"],
            "adaptive": t.args["long_prefill_token_threshold_adaptive"]}
    bad = [f"{k}: the scenario says {json_word(want[k])}, the program {json_word(have[k])}"
           for k in want if want[k] != have[k]]
    if bad:
        raise SerqError(Diagnostic("E972", "the scenario asks for another engine than the program's: "
                                   + "; ".join(bad),
                                   help="a program fixes the policy, prefix caching and the adaptive threshold; "
                                        "change the scenario, or the program's inputs with --set"))
    st = p.stages[t.stage]
    count = M.EBinary("Add", M.ECtx("Nres"), M.EQuery("Queued", M.Ref(t.reqs, 1, None)))
    c = s.get("chunk", 0)
    if c == 0:
        chunk = M.ENum(0.0)
    elif want["adaptive"]:
        chunk = M.ECond(M.EBinary("Gt", count, M.ENum(1.0)),
                        M.EFn("Max", (M.ENum(float(c)), M.EFn("Floor", (M.EBinary(
                            "Div", M.ENum(float(s["budget"])), count),)))), M.ENum(0.0))
    else:
        chunk = M.ECond(M.EBinary("Gt", count, M.ENum(1.0)), M.ENum(float(c)), M.ENum(0.0))
    kind = dataclasses.replace(st.kind, budget=M.ENum(float(s["budget"])), chunk=chunk, cost=M.ENum(1.0))
    stages = list(p.stages)
    stages[t.stage] = dataclasses.replace(st, kind=kind)
    pools = list(p.pools)
    bs = float(s["block_size"])
    pools[t.kv] = dataclasses.replace(pools[t.kv], block=bs, cap=bs * s["num_blocks"])
    pools[t.reqs] = dataclasses.replace(pools[t.reqs], cap=float(s["max_seqs"]))
    return dataclasses.replace(p, stages=tuple(stages), pools=tuple(pools))


def json_word(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else repr(v)
