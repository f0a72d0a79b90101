#!/usr/bin/env bash
# Pretrain across several GPU hosts that share /fsx and reach each other over passwordless SSH,
# with the repository set up at the same path on each (cloudformation/ec2.yaml does both).
# The recipe of docs/pretraining.md: 4096 sequences per update = 32 per GPU x 8 accumulation steps x 16 GPUs on two
# 8-GPU hosts (the accumulation is derived from the global and per-GPU batch sizes).
#   HOSTS="ip-10-0-0-1:8,ip-10-0-0-2:8" DATA=/fsx/albert_data VOCAB=/fsx/vocab/spiece.model \
#       scripts/pretrain_multi_host.sh [extra flags]
#   PLAN_ONLY=1 HOSTS=... DATA=... VOCAB=... scripts/pretrain_multi_host.sh   # command + plan only
# Checkpoints and logs go to /fsx so every host (and a restarted job) sees them. Gradients travel
# in fp16 (--fp16_allreduce; under bf16 that turns on dynamic loss scaling, so small gradients
# survive the cast).
# Relative DATA, VOCAB and RUN are the caller's, made absolute for every host; the script does
# not change directory.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"  # abspath, quote, run_trainer, say_interrupted
HOSTS=${HOSTS:?set HOSTS to host1:gpus,host2:gpus}
NP=$(echo "$HOSTS" | tr ',' '\n' | awk -F: '{n += $2} END {print n}')
DATA=$(abspath "${DATA:?set DATA}")
VOCAB=$(abspath "${VOCAB:?set VOCAB}")
RUN=$(abspath "${RUN:-/fsx/runs/albert-base}")
PY=$ROOT/.venv/bin/python
flags=(
    --filesystem_prefix "$DATA" --train_dir train --val_dir validation
    --model_size base --spm_model "$VOCAB" --max_seq_length 512 --max_predictions_per_seq 20
    --per_gpu_batch_size 32 --global_batch_size 4096 --total_steps 125000 --warmup_steps 3125
    --learning_rate 0.00176 --optimizer lamb --precision bf16 --fp16_allreduce
    --validation_frequency 5000 --checkpoint_frequency 2000
    --checkpoint_dir "$RUN/checkpoints" --log_dir "$RUN/logs"
)
cmd=("$ROOT/.venv/bin/horovodrun" -np "$NP" -H "$HOSTS" --network-interface "${NIC:-ens5}"
     "$PY" -m albert.run_pretraining "${flags[@]}" "$@")
if [ -n "${PLAN_ONLY:-}" ]; then
    echo "would run: $(quote "${cmd[@]}")"  # pasted into a shell, the same arguments
    exec "$PY" -m albert.run_pretraining "${flags[@]}" "$@" --plan_only --plan_ranks "$NP"
fi
status=0
run_trainer "${cmd[@]}" || status=$?
# Stopped by SIGTERM (passed on to horovodrun): exit 143 with one line, as the trainer does.
[ "$status" -ne "$INTERRUPTED" ] ||
    say_interrupted "[multi-host] the run was" "$RUN/checkpoints" "the run"
exit "$status"
