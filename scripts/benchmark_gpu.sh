#!/usr/bin/env bash
# The GPU benchmark in one command (a few minutes): ALBERT-base, seq 512, bf16, XLA, on GPU 0,
# then the same with fp16 loss scaling; JSON in benchmark-gpu-*.json, the bf16 run's profile in
# benchmark-gpu-profile/ (its top op types are in the JSON). Target (issue): MFU >= 50%
# of the device's dense bf16 peak (about 1,300 seq/s on one H200).
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
