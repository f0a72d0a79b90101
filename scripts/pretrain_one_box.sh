#!/usr/bin/env bash
# Pretrain ALBERT-base on one GPU box, one Horovod process per GPU (the recipe of docs/pretraining.md):
# 4096 sequences per update = 32 per GPU x 16 accumulation steps x 8 GPUs (the accumulation is
# derived from --global_batch_size and --per_gpu_batch_size, so other GPU counts keep 4096).
#   DATA=/fsx/albert_data VOCAB=/fsx/vocab/spiece.model scripts/pretrain_one_box.sh [extra flags]
#   PLAN_ONLY=1 GPUS=8 DATA=... VOCAB=... scripts/pretrain_one_box.sh   # print the command and
#                                                                          # the batch plan only
# Relative DATA, VOCAB, RUN and paths in the extra flags are the caller's: the script does not
# change directory (RUN defaults to runs/albert-base in the checkout).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"  # abspath, quote, run_trainer, say_interrupted
GPUS=${GPUS:-$(nvidia-smi -L | wc -l)}
DATA=$(abspath "${DATA:?set DATA to the directory holding train/ and validation/}")
VOCAB=$(abspath "${VOCAB:?set VOCAB to spiece.model}")
RUN=$(abspath "${RUN:-$ROOT/runs/albert-base}")
PY=$ROOT/.venv/bin/python
flags=(
    --filesystem_prefix "$DATA" --train_dir train --val_dir validation
    --model_size base --spm_model "$VOCAB" --max_seq_length 512 --max_predictions_per_seq 20
    --per_gpu_batch_size 32 --global_batch_size 4096 --total_steps 125000 --warmup_steps 3125
    --learning_rate 0.00176 --optimizer lamb --precision bf16 --validation_frequency 5000
    --checkpoint_frequency 2000 --checkpoint_dir "$RUN/checkpoints" --log_dir "$RUN/logs"
)
cmd=("$ROOT/.venv/bin/horovodrun" -np "$GPUS" -H "localhost:$GPUS"
     "$PY" -m albert.run_pretraining "${flags[@]}" "$@")
if [ -n "${PLAN_ONLY:-}" ]; then
    echo "would run: $(quote "${cmd[@]}")"  # pasted into a shell, the same arguments
    exec "$PY" -m albert.run_pretraining "${flags[@]}" "$@" --plan_only --plan_ranks "$GPUS"
fi
status=0
run_trainer "${cmd[@]}" || status=$?
# Stopped by SIGTERM (passed on to horovodrun): exit 143 with one line, as the trainer does.
[ "$status" -ne "$INTERRUPTED" ] ||
    say_interrupted "[one-box] the run was" "$RUN/checkpoints" "the run"
exit "$status"
