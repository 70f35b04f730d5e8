"""The names the language supplies: functions, observables, distributions,
aggregates and context variables, with their IR spellings."""

from __future__ import annotations

FUNCTIONS = {  # source name -> (IR fn, arity)
    "min": ("Min", 2), "max": ("Max", 2), "abs": ("Abs", 1), "floor": ("Floor", 1),
    "ceil": ("Ceil", 1), "sqrt": ("Sqrt", 1), "exp": ("Exp", 1), "ln": ("Ln", 1), "pow": ("Pow", 2),
}
POOL_QUERIES = {"used": "Used", "free": "Free", "cachedin": "CachedIn", "holders": "Holders",
                "queued": "Queued", "prefilling": "Prefilling"}
STAGE_QUERIES = {"queue": "Queue", "busy": "Busy", "work": "Work", "est_lambda": "EstLambda",
                 "est_rho": "EstRho", "est_wait": "EstWait", "budget_left": "BudgetLeft"}
OTHER_FUNCTIONS = {"price", "blocksize", "cost"}
DISTS = {"exp": "Exp", "det": "Det", "uniform": "Uniform", "erlang": "Erlang", "h2": "H2",
         "bernoulli": "Bernoulli"}
DIST_ARITY = {"exp": 1, "det": 1, "uniform": 2, "erlang": 2, "h2": 2, "bernoulli": 1}
AGGREGATES = {"total": "Total", "count": "Count", "largest": "Largest", "smallest": "Smallest",
              "prefix_total": "PrefixTotal"}
AGG_KINDS = ("max", "min", "sum")

# Bare context variables and where each is read.
CTX_BARE = {
    "now": "Now", "waited": "Waited", "size": "Size", "age": "Age", "last": "Last",
    "waiting": "Waiting", "present": "Present", "decoding": "Decoding", "admission": "Admission",
    "remaining": "Remaining", "position": "Position", "demand": "Demand", "served": "Served",
    "arrived": "Arrived", "reserved": "Reserved",
    # the cost's variables, as a claim over iterations names them
    "tokens": "Ntok", "prefilled": "Npre", "decoders": "Ndec", "residents": "Nres",
    "kv_decode": "Kvb", "kv_prefill": "Kvp", "attention": "Attn",
}
CLAIM_ONLY = {"tokens", "prefilled", "decoders", "residents", "kv_decode", "kv_prefill", "attention"}
ENGINE_SPELLING = {  # a claim's bare name -> how an engine's clauses spell it
    "tokens": "batch.tokens", "prefilled": "batch.prefilled", "decoders": "running.decoding",
    "residents": "running.count", "kv_decode": "running.kv_decode", "kv_prefill": "running.kv_prefill",
    "attention": "batch.attention",
}

RUNNING = {"count": "Nres", "decoding": "Ndec", "kv_decode": "Kvb", "kv_prefill": "Kvp",
           "preempted": "Preempted"}
WAITING = {"count": None, "admitted": "Admitted", "blocked": "Blocked"}
BATCH = {"tokens": "Ntok", "prefilled": "Npre", "decoding": "Ndec", "kv_decode": "Kvb",
         "kv_prefill": "Kvp", "attention": "Attn"}

# Which engine values each engine clause reads (§Engines on devices).
ENGINE_CLAUSES = {
    "tokens_cap": {"running.count", "waiting.count", "running.decoding", "running.kv_decode",
                   "running.kv_prefill"},
    "sched_budget": {"running.count", "waiting.count", "running.decoding", "running.kv_decode",
                     "running.kv_prefill"},
    "sched_serve": {"running.count", "waiting.count", "running.decoding", "running.kv_decode",
                    "running.kv_prefill"},
    "sched_plan": {"running.count", "waiting.count", "running.decoding", "running.kv_decode",
                   "running.kv_prefill", "running.preempted", "waiting.admitted", "waiting.blocked", "batch.tokens",
                   "batch.prefilled"},
    "execute": {"running.count", "waiting.count", "batch.tokens", "batch.prefilled",
                "batch.decoding", "batch.kv_decode", "batch.kv_prefill", "batch.attention"},
}
CLAUSE_WORDS = {
    "tokens_cap": "`tokens cap`", "sched_budget": "`each at most` (and the schedule's lets)",
    "sched_serve": "an `only` or a key of the schedule", "sched_plan": "the schedule",
    "execute": "`execute`",
}

SUPPLIED = set(CTX_BARE) | {"inf", "running", "waiting", "batch"}
KEYWORDS = {
    "let", "def", "use", "fn", "pool", "stage", "device", "engine", "workload", "server", "queue",
    "share", "gauge", "claim", "hold", "grow", "drop", "release", "load", "run", "branch", "with",
    "while", "loop", "fork", "join", "choose", "end", "observe", "set", "turn", "mark", "transfer",
    "tool", "cap", "block", "evict", "preempt", "reserve", "reuse", "cache", "lease", "else", "await",
    "prefill", "decode", "growing", "schedule", "execute", "request", "tokens", "granule", "state",
}
BUILTIN_NAMES = set(FUNCTIONS) | set(POOL_QUERIES) | set(STAGE_QUERIES) | OTHER_FUNCTIONS | \
    set(AGGREGATES)
