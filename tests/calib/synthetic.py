"""A kernel-profile bundle made from known constants of a program's cost, for
the calibration tests.  For a cost of the form  gap + f(sequences) +
layers × g(batch)  (examples/replay/vllm_measured.sq's), the bundle's
attention.csv is g at each of its batches, per_sequence.csv's lm_head is f,
every dense operator 0: so the composition of its files
(serq.calib.compose) is the cost at those constants (with gap 0, which no
kernel profile sees), times a lognormal noise."""

from __future__ import annotations

import os

import numpy as np

from serq.calib import evaluate as EV
from serq.calib import fit as F
from serq.calib.compose import Grid
from serq.ir.expr import strip_cost

LLAMA_DENSE = ("layernorm", "qkv_proj", "rotary_emb", "o_proj", "gate_up_proj", "act_fn", "down_proj",
               "embedding", "final_layernorm")
META = """profiler_version: 1.0.0
vllm_version: 0.19.0
gpu: Synthetic GPU
hardware: SYNTH
architecture: llama
model: meta-llama/Llama-3.1-8B
variant: bf16
tp_degrees: [1]
engine_effective:
  block_size: 16
  max_num_batched_tokens: 2048
  max_num_seqs: 128
"""
KV = [0] + [16 * 2 ** i for i in range(9)]          # 0, 16 … 4096
CHUNKS = [0] + [16 * 2 ** i for i in range(8)]      # 0, 16 … 2048
DECODES = [0] + [2 ** i for i in range(8)]          # 0, 1 … 128


def batches() -> np.ndarray:
    rows = [(pc, kp, nd, kvd) for pc in CHUNKS for kp in KV for nd in DECODES for kvd in KV
            if (pc > 0 or kp == 0) and ((nd > 0) == (kvd > 0)) and pc + nd > 0]
    return np.array(rows, dtype=float)


def write_bundle(root: str, p, truth: dict, *, noise: float = 0.01, seed: int = 1, layers: int = 32) -> str:
    """``root/bf16/tp1`` (meta.yaml in ``root/bf16``) for the program ``p``'s
    engine `vllm` at the constants ``truth``."""
    rng = np.random.default_rng(seed)
    tp = os.path.join(root, "bf16", "tp1")
    os.makedirs(tp, exist_ok=True)
    with open(os.path.join(root, "bf16", "meta.yaml"), "w") as f:
        f.write(META)
    st = next(s for s in p.stages if s.name == "vllm")
    cost, block = strip_cost(st.kind.cost), p.pools[st.kind.memory].block
    vals = dict(truth, gap=0.0, layers=float(layers))

    def at(g, **over):
        return EV.evaluate(cost, F.batch_quantities(g, block), dict(vals, **over))

    a = batches()
    g = Grid(a[:, 0], a[:, 1], a[:, 2], a[:, 3], np.zeros(len(a)), {})
    per_layer = (at(g) - at(g, layers=0.0)) / layers
    s = np.arange(1, 257, dtype=float)
    z = np.zeros(len(s))
    head = at(Grid(z, z, s, z + 16, z, {}), layers=0.0)        # the per-step part: by sequences
    noisy = lambda x: x * np.exp(rng.normal(0.0, noise, np.shape(x)))   # noqa: E731
    with open(os.path.join(tp, "attention.csv"), "w") as f:
        f.write("prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n")
        for (pc, kp, nd, kvd), t in zip(a.astype(int), noisy(per_layer * 1e6)):
            f.write(f"{pc},{kp},{nd},{kvd},{t:.7g}\n")
    with open(os.path.join(tp, "dense.csv"), "w") as f:
        f.write("layer,tokens,time_us\n")
        for op in LLAMA_DENSE:
            for t in (1, 2048):
                f.write(f"{op},{t},0\n")
    with open(os.path.join(tp, "per_sequence.csv"), "w") as f:
        f.write("layer,sequences,time_us\n")
        for op in ("lm_head", "sampler"):
            for n, v in zip(s.astype(int), noisy(head * 1e6) if op == "lm_head" else z):
                f.write(f"{op},{n},{v:.7g}\n")
    return tp
