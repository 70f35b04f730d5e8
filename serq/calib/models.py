"""The small table of models and GPUs calibration and replay need: what a
profile bundle does not say about the model it measured (its layer count,
the bytes of KV one token takes, the weights' bytes) and, for a measured run
whose `meta.json` does not state its KV capacity, the GPU's memory.

The numbers are the models' published configurations (Hugging Face
`config.json`: `num_hidden_layers`, `num_key_value_heads`, `head_dim`,
`max_position_embeddings`; the parameter count of the model card) and the
GPUs' memory as the driver reports it.  A model that is not here is given on
the command line (`serq calibrate --layers N`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Architecture:
    """How one decoder layer and one step use the profiled operators.

    ``per_layer``: each dense operator of one decoder layer with the times it
    runs in it (the RMSNorm before attention and the one after it are both
    `layernorm`); ``once``: operators that run once per step (the embedding,
    the final norm); ``per_sequence``: the LM head and the sampler, by the
    step's sequences; ``moe``: the layer's MLP is the `moe.csv` block."""
    name: str
    per_layer: tuple          # ((operator, times), ...)
    once: tuple = ("embedding", "final_layernorm")
    per_sequence: tuple = ("lm_head", "sampler")
    moe: bool = False


_DENSE_MLP = (("gate_up_proj", 1), ("act_fn", 1), ("down_proj", 1))
ARCHITECTURES = {
    "llama": Architecture("llama", (("layernorm", 2), ("qkv_proj", 1), ("rotary_emb", 1), ("o_proj", 1))
                          + _DENSE_MLP),
    "qwen3": Architecture("qwen3", (("layernorm", 2), ("qkv_proj", 1), ("qk_norm", 1), ("rotary_emb", 1),
                                    ("o_proj", 1)) + _DENSE_MLP),
    "qwen3_moe": Architecture("qwen3_moe", (("layernorm", 2), ("qkv_proj", 1), ("qk_norm", 1),
                                            ("rotary_emb", 1), ("o_proj", 1)), moe=True),
}


@dataclass(frozen=True)
class Model:
    name: str                 # the Hugging Face id, as meta.yaml / meta.json name it
    architecture: str
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    params: float             # parameters (bf16: two bytes each)
    max_len: int              # max_position_embeddings
    experts: int = 0          # MoE: routed experts, and how many a token takes
    top_k: int = 0
    dtype_bytes: int = 2

    def kv_bytes_per_token(self) -> int:
        """K and V of every layer for one token (bf16)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    def weight_bytes(self) -> float:
        return self.params * self.dtype_bytes


MODELS = {m.name: m for m in (
    Model("meta-llama/Llama-3.1-8B", "llama", 32, 4096, 8, 128, 8.030e9, 131072),
    Model("Qwen/Qwen3-32B", "qwen3", 64, 5120, 8, 128, 32.762e9, 40960),
    Model("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3_moe", 48, 2048, 4, 128, 30.532e9, 262144, 128, 8),
)}


@dataclass(frozen=True)
class GPU:
    name: str                 # the driver's device name
    memory_bytes: int


GPUS = {g.name: g for g in (
    GPU("NVIDIA GeForce RTX 4090", 25_250_627_584),          # as the RTX 4090 run's meta.json states
    GPU("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97_887 * 2 ** 20),   # 97 887 MiB (nvidia-smi)
)}
# the bundles' folder names for their GPUs (LLMServingSim's `hardware` label)
HARDWARE = {"RTX4090": "NVIDIA GeForce RTX 4090",
            "RTXPRO6000": "NVIDIA RTX PRO 6000 Blackwell Server Edition"}


def model(name: str) -> Optional[Model]:
    return MODELS.get(name)


def gpu(name: str) -> Optional[GPU]:
    return GPUS.get(name) or GPUS.get(HARDWARE.get(name, ""))
