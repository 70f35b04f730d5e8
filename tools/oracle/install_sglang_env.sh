#!/usr/bin/env bash
# Build .venv-sglang at the repo root: SGLang 0.5.23 (no deps) on the CPU build
# of torch 2.13.0, plus the pure-Python packages its scheduler's imports pull
# in (tools/oracle/sglang/README.md).  torchvision and sglang.srt.multimodal
# are not installed: the harness stubs them (tools/oracle/sglang/stubs.py).
#
# Idempotent: exits 0 at once if the venv exists and SGLang's Scheduler imports.
# Usage: tools/oracle/install_sglang_env.sh        (or: make sglang-env)
# Env:   SGLANG_VENV=path   to build elsewhere (default: <repo>/.venv-sglang)
#        PYTHON=python3.11 interpreter used to create the venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${SGLANG_VENV:-$ROOT/.venv-sglang}"
PY="${PYTHON:-python3}"

check() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" - "$ROOT/tools/oracle/sglang" <<'EOF2' >/dev/null 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import stubs
stubs.install(["sglang.srt.multimodal", "torchvision"])
import torch, sglang
assert sglang.__version__ == "0.5.23", sglang.__version__
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert "+cpu" in torch.__version__, torch.__version__
from sglang.srt.managers.scheduler import Scheduler
from sglang.srt.mem_cache.radix_cache import RadixCache
EOF2
}

if check; then
  echo "sglang env OK: $VENV"
  exit 0
fi

echo "building $VENV (about 1.5 GB, a few minutes)" >&2
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/pip" install --disable-pip-version-check)

# 1. The CPU build of torch 2.13.0 that lies on this machine's disk.
"${PIP[@]}" "torch==2.13.0"
# 2. SGLang without its dependency set (which names CUDA packages).
"${PIP[@]}" --no-deps "sglang==0.5.23"
# 3. What the scheduler's imports need, each without its own dependencies
#    (transformers at the version SGLang 0.5.23 pins: a newer one asks for a
#    huggingface_hub this list cannot take)
#    (their closure is this list; a CUDA torchvision would break transformers).
"${PIP[@]}" --no-deps numpy orjson psutil pybase64 requests urllib3 idna \
  certifi triton packaging pillow starlette anyio msgspec pydantic_core pyzmq tqdm IPython \
  traitlets pygments pydantic typing_inspection typing_extensions aiohttp multidict attrs yarl propcache \
  aiohappyeyeballs aiosignal frozenlist "transformers==5.19.0" regex "huggingface_hub<2" httpx2 pyyaml \
  httpcore2 truststore h11 httpx httpcore "safetensors>=0.8.0" "tokenizers==0.23.2" dill \
  "apache-tvm-ffi==0.1.11" sentencepiece compressed_tensors loguru annotated_types gguf openai \
  sniffio partial_json_parser setproctitle einops uvicorn click fastapi annotated_doc \
  opentelemetry-api importlib-metadata zipp filelock fsspec

if check; then
  echo "sglang env OK: $VENV"
else
  echo "sglang env built but SGLang's Scheduler does not import; run:" >&2
  echo "  $VENV/bin/python -c 'import sys; sys.path.insert(0, \"tools/oracle/sglang\"); import stubs; stubs.install([\"sglang.srt.multimodal\", \"torchvision\"]); from sglang.srt.managers.scheduler import Scheduler'" >&2
  exit 1
fi
