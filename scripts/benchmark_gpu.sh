#!/usr/bin/env bash
# The GPU benchmark in one command (a few minutes): ALBERT-base, seq 512, bf16, XLA, on GPU 0,
# then the same with fp16 loss scaling; JSON in benchmark-gpu-*.json, the bf16 run's profile in
# benchmark-gpu-profile/ (its top op types are in the JSON). Target (issue): MFU >= 50%
# of the device's dense bf16 peak (about 1,300 seq/s on one H200).
# Then memory: ALBERT-xxlarge, seq 512, bf16, the same micro-batch without and with
# --recompute layers (peak_memory_bytes: the allocator's peak; planned_memory_bytes: the memory
# plan's estimate of it; planned_largest_micro_batch for this GPU's memory), and the largest
# micro-batch that --per_gpu_batch_size auto finds by trial steps with recomputation.
set -euo pipefail
cd "$(dirname "$0")/.."
ALBERT_DEVICE=gpu bash scripts/setup.sh
PY=.venv/bin/python
BATCH=${BATCH:-32}
$PY scripts/benchmark.py --model_size base --max_seq_length 512 --max_predictions_per_seq 20 \
    --per_gpu_batch_size "$BATCH" --precision bf16 --steps 20 --repeats 3 \
    --profile benchmark-gpu-profile --output benchmark-gpu-bf16.json
$PY scripts/benchmark.py --model_size base --max_seq_length 512 --max_predictions_per_seq 20 \
    --per_gpu_batch_size "$BATCH" --precision fp16 --steps 20 --repeats 3 \
    --output benchmark-gpu-fp16.json
XXL_BATCH=${XXL_BATCH:-16}
GPU_GB=$($PY -c "import subprocess; print(int(subprocess.check_output(['nvidia-smi', \
    '--query-gpu=memory.total', '--format=csv,noheader,nounits']).split()[0]) // 1024)")
for RECOMPUTE in none layers; do
    $PY scripts/benchmark.py --model_size xxlarge --max_seq_length 512 --max_predictions_per_seq 20 \
        --per_gpu_batch_size "$XXL_BATCH" --precision bf16 --steps 5 --repeats 2 \
        --recompute "$RECOMPUTE" --memory --memory_budget_gb "$GPU_GB" \
        --auto_global_batch 512 --output "benchmark-gpu-xxlarge-$RECOMPUTE.json"
done
