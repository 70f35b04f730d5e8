#!/usr/bin/env bash
# Regenerate every committed vLLM oracle output (random scenario inputs too).
#   tools/oracle/regen.sh           rewrite in place
#   tools/oracle/regen.sh --check   regenerate elsewhere, compare byte for byte
# Needs .venv-vllm (tools/oracle/install_vllm_env.sh).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${VLLM_PYTHON:-$ROOT/.venv-vllm/bin/python}"
export VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_PLUGINS=
exec "$PY" "$HERE/regen.py" "$@"
