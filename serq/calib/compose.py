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
linearly in tokens and then in experts.

``at_batches`` composes the same step for the batches a replay made
(serq.sim's ``batch_log``): several prefill chunks are one chunk of their
total over their total KV, the decodes a uniform batch at their mean KV
(the profile's own convention: its attention grid has one KV length per
batch, and a skewed batch is looked up at the mean), and the attention time
of a batch between the profiled points is interpolated linearly on each of
the grid's four axes (``AttentionTable``).  The skew correction the
profile's tool applies on top (``skew_fit.csv``) is left out: on the
measured RTX PRO 6000 run it makes every decode step slower than the run
(docs/calibration.md, "What the runs say")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

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
    """Batch compositions and their whole-step times in seconds: one per
    profiled attention point kept (``grid``), or one per iteration of a
    replay (``at_batches``: then ``ctx`` holds the quantities the cost read
    there, ``chunks`` the prefill chunks of each, and the fit weighs every
    iteration alike)."""
    pc: np.ndarray
    kp: np.ndarray
    nd: np.ndarray
    kvd: np.ndarray
    seconds: np.ndarray
    limits: dict              # what was kept: budget, max_seqs, max_kv (a grid); run, iterations (a replay)
    ctx: Optional[dict] = None      # the cost's quantities by CTX name (a replay's), else computed
    chunks: Optional[np.ndarray] = None   # prefill chunks in each batch (a replay's), else pc > 0

    def __len__(self) -> int:
        return len(self.pc)

    @property
    def tokens(self) -> np.ndarray:
        return self.pc + self.nd

    @property
    def sequences(self) -> np.ndarray:
        return self.nd + (self.pc > 0 if self.chunks is None else self.chunks)

    @property
    def per_batch(self) -> bool:
        return self.ctx is not None

    def regime(self) -> np.ndarray:
        return np.where(self.pc == 0, "decode", np.where(self.nd == 0, "prefill", "mixed"))


def grid(prof: Profile, model: Model, *, layers: int, budget: int, max_seqs: int, max_kv: float) -> Grid:
    """The profile's batch compositions an engine with these limits can
    make (tokens ≤ budget, decodes ≤ max_seqs, every KV length ≤ max_kv),
    with their step times."""
    arch = _arch(prof, model)
    a = prof.attention
    pc, kp, nd, kvd, t_attn = a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4]
    keep = (pc + nd >= 1) & (pc + nd <= budget) & (nd <= max_seqs) & (kvd <= max_kv) & (kp + pc <= max_kv)
    if not keep.any():
        raise R.content(f"no profiled batch fits an engine of {budget} tokens, {max_seqs} sequences "
                        f"and {max_kv:g} tokens of KV", prof.path)
    g = Grid(pc[keep], kp[keep], nd[keep], kvd[keep], np.zeros(int(keep.sum())),
             {"budget": budget, "max_seqs": max_seqs, "max_kv": max_kv})
    g.seconds = _step(prof, model, arch, g, t_attn[keep], layers)
    return g


def _arch(prof: Profile, model: Model):
    arch = ARCHITECTURES.get(prof.architecture) or ARCHITECTURES.get(model.architecture)
    if arch is None:
        raise R.content(f"the profile's architecture `{prof.architecture}` is not one serq composes "
                        f"({', '.join(sorted(ARCHITECTURES))})", prof.meta_path)
    return arch


def _step(prof: Profile, model: Model, arch, g: Grid, t_attn: np.ndarray, layers: int) -> np.ndarray:
    """Seconds: layers × (the layer's operators + its attention) + the
    once-a-step operators + the LM head and sampler by sequences."""
    tokens = g.tokens
    per_layer = t_attn.copy()
    for op, times in arch.per_layer:
        per_layer += times * _op(prof, prof.dense, op, "dense", tokens)
    if arch.moe:
        per_layer += _moe(prof, model, tokens)
    once = sum((_op(prof, prof.dense, op, "dense", tokens) for op in arch.once), np.zeros_like(tokens))
    head = sum((_op(prof, prof.per_sequence, op, "per-sequence", g.sequences) for op in arch.per_sequence),
               np.zeros_like(tokens))
    return (layers * per_layer + once + head) * 1e-6


class AttentionTable:
    """One layer's attention time at any batch: the profile's points, linear
    on each axis between them (below an axis's first point its first value,
    above its last the line through its last two).  The two decode counts
    that bracket the batch's are each a column of the profile; in each, the
    two chunk lengths that bracket the batch's chunk (among those profiled
    beside that many decodes) are each a slice, interpolated bilinearly in
    (kv_prefill, kv_decode).  A batch of nothing takes no time."""

    def __init__(self, prof: Profile):
        rows: dict = {}
        for pc, kp, nd, kvd, us in prof.attention:
            rows.setdefault(nd, {}).setdefault(pc, {}).setdefault(kp, []).append((kvd, us))
        self.nds = np.array(sorted(rows))
        self.columns = []
        for nd in self.nds:
            pcs = np.array(sorted(rows[nd]))
            slices = []
            for pc in pcs:
                kps = np.array(sorted(rows[nd][pc]))
                lines = []
                for k in kps:
                    pts = sorted(rows[nd][pc][k])
                    lines.append((np.array([x for x, _ in pts]), np.array([y for _, y in pts])))
                slices.append((kps, lines))
            self.columns.append((pcs, slices))

    @staticmethod
    def _bracket(keys: np.ndarray, x: float) -> tuple:
        """``(lo, hi, t)``: x is keys[lo] + t (keys[hi] − keys[lo]); a
        profiled point is itself (lo = hi)."""
        if len(keys) == 1 or x <= keys[0]:
            return 0, 0, 0.0
        i = int(np.searchsorted(keys, x, side="left"))
        if i < len(keys) and keys[i] == x:
            return i, i, 0.0
        i = min(max(i, 1), len(keys) - 1)
        x0, x1 = keys[i - 1], keys[i]
        return i - 1, i, (x - x0) / (x1 - x0)

    @staticmethod
    def _between(lo: float, hi: float, t: float) -> float:
        return lo if t == 0.0 else lo + t * (hi - lo)

    def _line(self, line: tuple, x: float) -> float:
        keys, values = line
        lo, hi, t = self._bracket(keys, x)
        return self._between(float(values[lo]), float(values[hi]), t)

    def _slice(self, sl: tuple, kp: float, kvd: float) -> float:
        kps, lines = sl
        lo, hi, t = self._bracket(kps, kp)
        v = self._line(lines[lo], kvd)
        return v if lo == hi else self._between(v, self._line(lines[hi], kvd), t)

    def _column(self, j: int, pc: float, kp: float, kvd: float) -> float:
        pcs, slices = self.columns[j]
        if self.nds[j] == 0 and pc == 0:
            return 0.0      # no chunk and no decode: nothing to attend
        lo, hi, t = self._bracket(pcs, pc)
        v = self._slice(slices[lo], kp, kvd)
        return v if lo == hi else self._between(v, self._slice(slices[hi], kp, kvd), t)

    def at(self, pc: float, kp: float, nd: float, kvd: float) -> float:
        """Microseconds: one layer's attention for a chunk of ``pc`` over
        ``kp`` tokens of KV beside ``nd`` decodes of ``kvd`` tokens each."""
        if pc == 0 and nd == 0:
            return 0.0
        lo, hi, t = self._bracket(self.nds, nd)
        v = self._column(lo, pc, kp, kvd)
        return v if lo == hi else self._between(v, self._column(hi, pc, kp, kvd), t)


# the batch quantities a replay's batch log names, as the cost's CTX names
_CTX = {"tokens": "Ntok", "prefilled": "Npre", "decoding": "Ndec", "kv_decode": "Kvb", "kv_prefill": "Kvp",
        "attention": "Attn", "residents": "Nres"}


def at_batches(prof: Profile, model: Model, *, layers: int, batches: list, label: str) -> Grid:
    """The step times of the batches a replay made (records of serq.sim's
    ``batch_log`` that computed a token), composed as ``grid`` composes the
    profile's own; ``label`` names the run in the grid's limits."""
    arch = _arch(prof, model)
    n = len(batches)
    pc, kp, nd, kvd, chunks = (np.zeros(n) for _ in range(5))
    for i, b in enumerate(batches):
        kvs = b["decode"]
        if any(k is None for k in kvs) or any(k is None for _, k in b["prefill"]):
            raise R.content("the replay's engine holds no KV pool that grows with its requests, so its "
                            "batches' KV lengths are not known", prof.path)
        pc[i] = sum(c for c, _ in b["prefill"])
        kp[i] = sum(k for _, k in b["prefill"])
        nd[i] = len(kvs)
        kvd[i] = sum(kvs) / len(kvs) if kvs else 0.0
        chunks[i] = len(b["prefill"])
    table = AttentionTable(prof)
    t_attn = np.array([table.at(*x) for x in zip(pc, kp, nd, kvd)])
    ctx = {_CTX[k]: np.array([float(b["ctx"][k]) for b in batches]) for k in _CTX}
    g = Grid(pc, kp, nd, kvd, np.zeros(n), {"run": label, "iterations": n}, ctx, chunks)
    g.seconds = _step(prof, model, arch, g, t_attn, layers)
    return g


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
