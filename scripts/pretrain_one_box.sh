#!/usr/bin/env bash
# Pretrain ALBERT-base on one GPU box, one Horovod process per GPU, with the README recipe:
# 4096 sequences per update = 32 per GPU x 16 accumulation steps x 8 GPUs (the accumulation is
# derived from --global_batch_size and --per_gpu_batch_size, so other GPU counts keep 4096).
#   DATA=/fsx/albert_data VOCAB=/fsx/vocab/spiece.model scripts/pretrain_one_box.sh [extra flags]
#   PLAN_ONLY=1 GPUS=8 DATA=... VOCAB=... scripts/pretrain_one_box.sh   # print the command and
#                                                                          # the batch plan only
set -euo pipefail
cd "$(dirname "$0")/.."
GPUS=${GPUS:-$(nvidia-smi -L | wc -l)}
DATA=${DATA:?set DATA to the directory holding train/ and validation/}
VOCAB=${VOCAB:?set VOCAB to spiece.model}
RUN=${RUN:-runs/albert-base}
flags=(
    --filesystem_prefix "$DATA" --train_dir train --val_dir validation
    --model_size base --spm_model "$VOCAB" --max_seq_length 512 --max_predictions_per_seq 20
    --per_gpu_batch_size 32 --global_batch_size 4096 --total_steps 125000 --warmup_steps 3125
    --learning_rate 0.00176 --optimizer lamb --precision bf16 --validation_frequency 5000
    --checkpoint_frequency 2000 --checkpoint_dir "$RUN/checkpoints" --log_dir "$RUN/logs"
)
cmd=(.venv/bin/horovodrun -np "$GPUS" -H "localhost:$GPUS"
     .venv/bin/python -m albert.run_pretraining "${flags[@]}" "$@")
if [ -n "${PLAN_ONLY:-}" ]; then
    echo "would run: ${cmd[*]}"
    exec .venv/bin/python -m albert.run_pretraining "${flags[@]}" "$@" --plan_only \
        --plan_ranks "$GPUS"
fi
exec "${cmd[@]}"
