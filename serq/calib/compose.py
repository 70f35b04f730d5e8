"""Whole-step times from a kernel profile, as the profile's own tool
composes them (casys-kaist/LLMServingSim, `docs/docs/profiler/output-bundle.md`
and `docs/docs/simulator/trace-generation.md`): a step of a model of L layers
whose batch has a prefill chunk of ``pc`` tokens over ``kp`` tokens of KV
history and ``nd`` decodes over ``kvd`` tokens each takes

    L × (Σ per-layer operators(tokens) + attention(pc, kp, nd, kvd) [+ moe(tokens, experts)])
      + Σ once-per-step operators(tokens) + lm_head(sequences) + sampler(sequences)

with tokens = pc + nd and sequences = nd + (1 if pc > 0).  A dense or
per-sequence operator is interpolated linearly in its tokens (sequences)
between the profiled points (below the first, the first; above the last, the
line through the last two); the attention times are the profile's own grid
points, so they are not interpolated at all.  A MoE layer's experts: the
expected number a batch of t tokens touches when each takes top_k of E
uniformly, E·(1 − (1 − top_k/E)^t), with the block's time interpolated
linearly in tokens and then in experts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import read as R
from .models import ARCHITECTURES, Model
from .profile import Profile

REGIMES = ("decode", "prefill", "mixed")


def interp1(keys: np.ndarray, values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Linear in ``x`` between the profiled ``keys``; the first value below
    them, the line through the last two above them."""
    x = np.asarray(x, dtype=float)
    if len(keys) == 1:
        return np.full_like(x, values[0])
    i = np.clip(np.searchsorted(keys, x, side="right"), 1, len(keys) - 1)
    x0, x1, y0, y1 = keys[i - 1], keys[i], values[i - 1], values[i]
    out = y0 + (x - x0) / (x1 - x0) * (y1 - y0)
    return np.where(x <= keys[0], values[0], out)


@dataclass
class Grid:
    """Batch compositions (one per profiled attention point kept) and their
    whole-step times in seconds."""
    pc: np.ndarray
    kp: np.ndarray
    nd: np.ndarray
    kvd: np.ndarray
    seconds: np.ndarray
    limits: dict              # what was kept: budget, max_seqs, max_kv

    def __len__(self) -> int:
        return len(self.pc)

    @property
    def tokens(self) -> np.ndarray:
        return self.pc + self.nd

    @property
    def sequences(self) -> np.ndarray:
        return self.nd + (self.pc > 0)

    def regime(self) -> np.ndarray:
        return np.where(self.pc == 0, "decode", np.where(self.nd == 0, "prefill", "mixed"))


def grid(prof: Profile, model: Model, *, layers: int, budget: int, max_seqs: int, max_kv: float) -> Grid:
    """The profile's batch compositions an engine with these limits can
    make (tokens ≤ budget, decodes ≤ max_seqs, every KV length ≤ max_kv),
    with their step times."""
    arch = ARCHITECTURES.get(prof.architecture) or ARCHITECTURES.get(model.architecture)
    if arch is None:
        raise R.content(f"the profile's architecture `{prof.architecture}` is not one serq composes "
                        f"({', '.join(sorted(ARCHITECTURES))})", prof.meta_path)
    a = prof.attention
    pc, kp, nd, kvd, t_attn = a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4]
    keep = (pc + nd >= 1) & (pc + nd <= budget) & (nd <= max_seqs) & (kvd <= max_kv) & (kp + pc <= max_kv)
    if not keep.any():
        raise R.content(f"no profiled batch fits an engine of {budget} tokens, {max_seqs} sequences "
                        f"and {max_kv:g} tokens of KV", prof.path)
    pc, kp, nd, kvd, t_attn = pc[keep], kp[keep], nd[keep], kvd[keep], t_attn[keep]
    tokens = pc + nd
    seqs = nd + (pc > 0)
    per_layer = t_attn.copy()
    for op, times in arch.per_layer:
        per_layer += times * _op(prof, prof.dense, op, "dense", tokens)
    if arch.moe:
        per_layer += _moe(prof, model, tokens)
    once = sum((_op(prof, prof.dense, op, "dense", tokens) for op in arch.once), np.zeros_like(tokens))
    head = sum((_op(prof, prof.per_sequence, op, "per-sequence", seqs) for op in arch.per_sequence),
               np.zeros_like(tokens))
    us = layers * per_layer + once + head
    return Grid(pc, kp, nd, kvd, us * 1e-6, {"budget": budget, "max_seqs": max_seqs, "max_kv": max_kv})


def _op(prof: Profile, table: dict, op: str, what: str, x: np.ndarray) -> np.ndarray:
    if op not in table:
        name = "dense.csv" if what == "dense" else "per_sequence.csv"
        raise R.content(f"the {what} profile has no `{op}`, which a `{prof.architecture}` layer runs "
                        f"(it has {', '.join(sorted(table))})", f"{prof.path}/{name}")
    keys, values = table[op]
    return interp1(keys, values, x)


def _moe(prof: Profile, model: Model, tokens: np.ndarray) -> np.ndarray:
    if prof.moe is None:
        raise R.content("a MoE model's profile has a moe.csv", prof.path)
    if not (model.experts and model.top_k):
        raise R.content(f"the model table gives {model.name} no experts", prof.path)
    e = model.experts * (1 - (1 - model.top_k / model.experts) ** tokens)
    rows = prof.moe
    levels = np.unique(rows[:, 1])
    by = {lv: (rows[rows[:, 1] == lv, 0], rows[rows[:, 1] == lv, 2]) for lv in levels}
    for lv in levels:
        order = np.argsort(by[lv][0])
        by[lv] = (by[lv][0][order], by[lv][1][order])
    at = np.stack([interp1(by[lv][0], by[lv][1], tokens) for lv in levels])   # levels × n
    out = np.empty_like(tokens, dtype=float)
    for j in range(len(tokens)):
        out[j] = interp1(levels, at[:, j], np.array([e[j]]))[0]
    return out
