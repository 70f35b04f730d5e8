"""A kernel-profile bundle (LLMServingSim's profiler output): read and
checked at the boundary.

    profiler/perf/<HARDWARE>/<org>/<model>/<variant>/
        meta.yaml                what was profiled, with which vLLM and engine
        tp<N>/attention.csv      prefill_chunk, kv_prefill, n_decode, kv_decode -> time_us (one layer)
        tp<N>/dense.csv          layer, tokens -> time_us (each operator of one layer, and the
                                 embedding and final norm)
        tp<N>/per_sequence.csv   layer, sequences -> time_us (the LM head, the sampler)
        tp<N>/moe.csv            tokens, activated_experts -> time_us (MoE models)

A profile is one ``tp<N>/`` folder; its ``meta.yaml`` is the folder's
parent's.  The format is documented in casys-kaist/LLMServingSim,
`docs/docs/profiler/output-bundle.md`.  ``skew_fit.csv`` (the correction for
decode batches whose KV lengths differ widely) is not read: serQ's batch
quantities are sums over the batch, which is what a uniform batch at the
mean KV measures."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import read as R

_TP = re.compile(r"tp([0-9]+)\Z")
HELP = ("a profile is a bundle's `…/<variant>/tp<N>/` folder (attention.csv, dense.csv, per_sequence.csv) "
        "with meta.yaml in its parent (LLMServingSim's profiler output)")


@dataclass
class Profile:
    path: str                 # the tp<N> folder
    meta_path: str
    model: str
    hardware: str
    gpu: str
    vllm_version: str
    architecture: str
    tp: int
    budget: Optional[int]     # the profiled max_num_batched_tokens
    max_seqs: Optional[int]
    block_size: Optional[int]
    dense: dict               # operator -> (tokens, us) sorted by tokens
    per_sequence: dict        # operator -> (sequences, us)
    attention: np.ndarray     # rows (prefill_chunk, kv_prefill, n_decode, kv_decode, us)
    moe: Optional[np.ndarray] = None   # rows (tokens, activated_experts, us)

    def label(self) -> str:
        return f"{self.hardware}/{self.model} tp{self.tp} (vLLM {self.vllm_version}, {self.gpu})"


def read(path: str) -> Profile:
    path = os.path.normpath(path)
    if not os.path.isdir(path):
        raise R.missing("the profile folder", path, HELP, folder=True)
    m = _TP.match(os.path.basename(path))
    if m is None:
        raise R.content(f"the profile folder {path} is not named tp<N> (its tensor-parallel degree)",
                        help=HELP)
    tp = int(m.group(1))
    meta_path = os.path.join(os.path.dirname(path), "meta.yaml")
    meta = _meta(meta_path, tp)
    dense = _by_operator(os.path.join(path, "dense.csv"), "dense profile", "tokens")
    per_seq = _by_operator(os.path.join(path, "per_sequence.csv"), "per-sequence profile", "sequences")
    attn = _attention(os.path.join(path, "attention.csv"))
    moe_path = os.path.join(path, "moe.csv")
    moe = _moe(moe_path) if os.path.isfile(moe_path) else None
    prof = Profile(path, meta_path, meta["model"], meta["hardware"], meta["gpu"], meta["vllm_version"],
                   meta["architecture"], tp, meta["budget"], meta["max_seqs"], meta["block_size"],
                   dense, per_seq, attn, moe)
    return prof


def _meta(path: str, tp: int) -> dict:
    R.need_file(path, "the profile's meta.yaml", HELP)
    data = R.yaml_file(path, "profile meta.yaml")
    if not isinstance(data, dict):
        raise R.bad(path, 1, "meta.yaml is a mapping (model:, hardware:, tp_degrees:, …)")
    out = {}
    for key in ("model", "hardware", "gpu", "vllm_version", "architecture"):
        v = data.get(key)
        if not isinstance(v, str) or not v:
            raise R.bad(path, _line_of(path, key), f"meta.yaml's `{key}` is {R.shown(v)}, not a name")
        out[key] = v
    tps = data.get("tp_degrees")
    if not isinstance(tps, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in tps):
        raise R.bad(path, _line_of(path, "tp_degrees"), "meta.yaml's `tp_degrees` is a list of whole numbers")
    if tp not in tps:
        raise R.content(f"the profile folder is tp{tp}, and meta.yaml profiled tp_degrees {R.shown(tps)}",
                        path, _line_of(path, "tp_degrees"))
    eng = data.get("engine_effective") or {}
    if not isinstance(eng, dict):
        raise R.bad(path, _line_of(path, "engine_effective"), "meta.yaml's `engine_effective` is a mapping")
    for key, name in (("max_num_batched_tokens", "budget"), ("max_num_seqs", "max_seqs"),
                      ("block_size", "block_size")):
        v = eng.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise R.bad(path, _line_of(path, key),
                        f"meta.yaml's `{key}` is {R.shown(v)}, not a whole number ≥ 1")
        out[name] = v
    return out


def _line_of(path: str, key: str) -> int:
    """The line of ``path`` where ``key:`` first appears (for a located error)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.lstrip().startswith(key + ":"):
                    return n
    except OSError:
        pass
    return 1


def _by_operator(path: str, what: str, key: str) -> dict:
    rows = R.table(path, what, ("layer", key, "time_us"),
                   {key: {"whole": True, "minimum": 1}, "time_us": {"minimum": 0}})
    seen: dict = {}
    out: dict = {}
    for r in rows:
        k = (r["layer"], int(r[key]))
        if k in seen:
            raise R.bad(path, r["_line"], f"`{r['layer']}` at {key} {int(r[key])} is given twice "
                                          f"(first at line {seen[k]})")
        seen[k] = r["_line"]
        out.setdefault(r["layer"], []).append((r[key], r["time_us"]))
    return {op: (np.array([x for x, _ in sorted(v)]), np.array([y for _, y in sorted(v)]))
            for op, v in out.items()}


def _attention(path: str) -> np.ndarray:
    cols = ("prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us")
    spec = {c: {"whole": True, "minimum": 0} for c in cols[:4]}
    spec["time_us"] = {"minimum": 0}
    rows = R.table(path, "attention profile", cols, spec)
    seen: dict = {}
    out = []
    for r in rows:
        k = tuple(int(r[c]) for c in cols[:4])
        if k in seen:
            raise R.bad(path, r["_line"], f"the batch {k} is given twice (first at line {seen[k]})")
        if k[0] == 0 and k[2] == 0:
            continue      # an empty batch: no attention to time
        seen[k] = r["_line"]
        out.append(k + (r["time_us"],))
    if not out:
        raise R.bad(path, 2, "the attention profile has no batch with a prefill chunk or a decode")
    return np.array(out, dtype=float)


def _moe(path: str) -> np.ndarray:
    cols = ("tokens", "activated_experts", "time_us")
    rows = R.table(path, "MoE profile", cols, {"tokens": {"whole": True, "minimum": 1},
                                               "activated_experts": {"whole": True, "minimum": 1},
                                               "time_us": {"minimum": 0}})
    return np.array([(r["tokens"], r["activated_experts"], r["time_us"]) for r in rows], dtype=float)
