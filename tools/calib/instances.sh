#!/usr/bin/env bash
# The calibrated instance files of the examples, from LLMServingSim's kernel
# profiles in ../shared/data (docs/calibration.md, "The examples' instances").
# Each is what one `serq calibrate` writes; `gap`, the one constant tuned on a
# measured run (RTXPRO6000/Llama-3.1-8B's, by the largest row of its summary
# table: 1.0 to 2.0 ms, 1.7 ms the least), is given, not fitted.  The three
# replay instances are fitted at the batches of their own run's workload
# (`--run`: its requests and engine settings; no measured time is read); the
# multi-turn and P/D ones, whose workloads no run measured, on the grid.
#   tools/calib/instances.sh            rewrite them
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SERQ="${SERQ:-.venv/bin/serq}"
PERF="${PERF:-../shared/data/llmservingsim/profiler/perf}"
BENCH="${BENCH:-../shared/data/llmservingsim/bench/examples}"
GAP=0.0017
NOTE="gap: 1.7 ms, the one constant tuned on a measured run (RTXPRO6000/Llama-3.1-8B's, docs/calibration.md)."
PRO="$PERF/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16/tp1"
R4090="$PERF/RTX4090/meta-llama/Llama-3.1-8B/bf16/tp1"
QWEN="$PERF/RTXPRO6000/Qwen/Qwen3-32B/bf16/tp2"
cal() { rm -f "$2"; "$SERQ" calibrate "$1" --out "$2" --max-kv 5832 --set gap=$GAP "${@:3}" > /dev/null; echo "wrote $2"; }

cal "$PRO" examples/replay/instances/rtxpro6000_llama8b.sq --max-seqs 128 --comment "$NOTE" \
    --run "$BENCH/RTXPRO6000/Llama-3.1-8B"
cal "$R4090" examples/replay/instances/rtx4090_llama8b.sq --max-seqs 256 --comment "$NOTE" \
    --run "$BENCH/RTX4090/Llama-3.1-8B"
cal "$QWEN" examples/replay/instances/rtxpro6000_qwen32b_tp2.sq --max-seqs 128 --link-bw 16 --link-latency 20 \
    --run "$BENCH/RTXPRO6000/Qwen3-32B" --comment "$NOTE" --comment "The link: 16 GB/s and 20 µs, the bundle's cluster configuration (bench/examples/RTXPRO6000/Qwen3-32B/config.json)."
cal "$R4090" examples/multi-turn/instances/vllm_rtx4090_llama8b.sq --program examples/multi-turn/vllm.sq --max-seqs 256 \
    --set blocks=2588 --comment "$NOTE" \
    --comment "blocks: 2 588 blocks of 16 tokens, the KV capacity vLLM 0.19.0 found on the RTX 4090 (its run's meta.json)."
for p in vllm_nixl_push llmd_nixl_pull; do
  cal "$PRO" "examples/pd-disaggregation/instances/${p}_rtxpro6000_llama8b.sq" --program "examples/pd-disaggregation/$p.sq" \
      --max-seqs 128 --budget 2048 --comment "$NOTE"
done
rm -f examples/pd-disaggregation/instances/vllm_nixl_pull_rtxpro6000_llama8b.sq
"$SERQ" calibrate "$PRO" --program examples/pd-disaggregation/vllm_nixl_pull.sq \
    --out examples/pd-disaggregation/instances/vllm_nixl_pull_rtxpro6000_llama8b.sq --max-kv 5832 --max-seqs 128 --budget 2048 \
    --comment "The program's linear form, c + a × tokens + b × KV (the P/D oracle's library's), fitted: the kernel form of examples/replay/vllm_measured.sq is within 1.0-3.1 % of the same profile (docs/calibration.md)." > /dev/null
echo "wrote examples/pd-disaggregation/instances/vllm_nixl_pull_rtxpro6000_llama8b.sq"
