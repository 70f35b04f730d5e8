#!/usr/bin/env bash
# Build .venv-vllm at the repo root: vLLM 0.33.0 (no deps) on the CPU build of
# torch 2.13.0, plus the pure-Python packages its scheduler, configs and
# request classes import.  Follows /work/shared/oracle-notes.md ("Install").
# With VLLM_VERSION=0.19.0 the same recipe with 0.19.0's pins builds
# .venv-vllm-0.19 (the version LLMServingSim's measured runs used; vLLM 0.19.0
# declares torch==2.10.0, and its scheduler runs with the CPU torch 2.13.0).
#
# Idempotent: exits 0 at once if the venv exists and vLLM's scheduler imports.
# Usage: tools/oracle/install_vllm_env.sh        (or: make vllm-env; make vllm-env-0.19)
# Env:   VLLM_VERSION=0.33.0 (default) or 0.19.0
#        VLLM_VENV=path   to build elsewhere (default: <repo>/.venv-vllm, <repo>/.venv-vllm-0.19)
#        PYTHON=python3.11 interpreter used to create the venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="${VLLM_VERSION:-0.33.0}"
case "$VERSION" in
  0.33.0) DEFAULT_VENV="$ROOT/.venv-vllm" ;;
  0.19.0) DEFAULT_VENV="$ROOT/.venv-vllm-0.19" ;;
  *) echo "VLLM_VERSION is 0.33.0 or 0.19.0, not $VERSION" >&2; exit 2 ;;
esac
VENV="${VLLM_VENV:-$DEFAULT_VENV}"
PY="${PYTHON:-python3}"

export VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_PLUGINS=
export VLLM_LOGGING_LEVEL=ERROR VLLM_VERSION="$VERSION"

check() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" - <<'EOF' >/dev/null 2>&1
import torch, vllm
import os
assert vllm.__version__ == os.environ["VLLM_VERSION"], vllm.__version__
assert torch.__version__.startswith("2.13.0"), torch.__version__
from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager
from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput
# the P/D oracle: the NIXL connector's scheduler side (pure Python)
if os.environ["VLLM_VERSION"] == "0.33.0":
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.pull_scheduler import NixlPullConnectorScheduler
else:   # asynchronous scheduling, as the measured runs had it
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
import transformers
EOF
}

if check; then
  echo "vllm env OK: $VENV"
  exit 0
fi

echo "building $VENV (about 2.2 GB, a few minutes)" >&2
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/pip" install --disable-pip-version-check)

# 1. The CPU build of torch 2.13.0 that lies on this machine's disk (vLLM
#    0.33.0 declares torch==2.14.0 and 0.19.0 torch==2.10.0, but their
#    schedulers run with this one).
"${PIP[@]}" "torch==2.13.0"
# 2. vLLM itself without its dependency set: a plain `pip install vllm` pulls
#    CUDA packages, and a CUDA torchvision breaks `import transformers`.
"${PIP[@]}" --no-deps "vllm==$VERSION"
# 3. The pure-Python packages its config / scheduler / request imports need,
#    within the version's own pins.
COMMON=(numpy regex cachetools psutil tqdm blake3 py-cpuinfo msgspec cloudpickle pyyaml
  "typing_extensions>=4.10" einops sentencepiece cbor2 pybase64 uvloop "prometheus_client>=0.18.0"
  partial-json-parser "protobuf>=5.29.6,!=6.30.*,!=6.31.*,!=6.32.*,!=6.33.0.*,!=6.33.1.*,!=6.33.2.*,!=6.33.3.*,!=6.33.4.*")
if [ "$VERSION" = 0.33.0 ]; then
  "${PIP[@]}" "${COMMON[@]}" "requests>=2.33.0" \
    "transformers<5.21.0,>=5.16.1" "huggingface_hub>=1.31.0" "tokenizers>=0.23.2" "pydantic>=2.12.0" \
    "pyzmq>=25.0.0" "filelock>=3.20.3" "safetensors>=0.6.2" "pillow>=13.0.0" "aiohttp>=3.14.4" \
    "openai>=2.25.0" "fastapi<0.137.0,>=0.133.0" "oss-harmony>=0.0.11"
  "${PIP[@]}" --no-deps "xgrammar==0.2.8" "apache-tvm-ffi==0.1.11" "llguidance<1.8.0,>=1.7.0"
else
  "${PIP[@]}" "${COMMON[@]}" "requests>=2.26.0" \
    "transformers<5,>=4.56.0" "tokenizers>=0.21.1" "pydantic>=2.12.0" "pyzmq>=25.0.0" \
    "filelock>=3.16.1" pillow "aiohttp>=3.13.3" "openai>=2.0.0" "fastapi>=0.115.0" \
    "openai-harmony>=0.0.3" "gguf>=0.17.0" "diskcache==5.6.3"
  "${PIP[@]}" --no-deps "xgrammar==0.1.32" "llguidance<1.4.0,>=1.3.0"
fi

if check; then
  echo "vllm env OK: $VENV"
else
  echo "vllm env built but vLLM's scheduler does not import; run:" >&2
  echo "  VLLM_TARGET_DEVICE=cpu $VENV/bin/python -c 'from vllm.v1.core.sched.scheduler import Scheduler'" >&2
  exit 1
fi
