#!/usr/bin/env bash
# Two-phase pretraining, as NVIDIA's BERT recipe: phase 1 at sequence length 128 for most of the
# updates, then phase 2 at 512 starting from phase 1's weights. Writes the data for both lengths,
# runs both phases, and hands phase 1's final checkpoint to phase 2 through --load_from
# checkpoint. Re-running the script resumes: finished data and phases are kept, an interrupted
# phase continues from its last checkpoint. A phase stopped by SIGTERM (to the script or to the
# trainer) ends the script with its exit status 143 and one line saying so; phase 2 does not start.
#   CORPUS=/fsx/text VOCAB=/fsx/vocab/spiece.model OUT=/fsx/runs/two-phase \
#       scripts/pretrain_two_phase.sh [flags for both phases]
# Knobs (environment, defaults in brackets): GPUS [nvidia-smi count, or 1], MODEL_SIZE [base],
# PHASE1_STEPS [112500], PHASE2_STEPS [12500], PHASE1_SEQ [128], PHASE2_SEQ [512],
# PHASE1_PREDS [20], PHASE2_PREDS [76], PHASE1_BATCH/PHASE2_BATCH per GPU [64/16],
# PHASE1_GLOBAL/PHASE2_GLOBAL sequences per update [4096/2048], PHASE1_LR/PHASE2_LR
# [0.00176/0.000275], CARRY_OPTIMIZER [0: phase 2 starts with fresh LAMB moments; 1: it carries
# phase 1's moments], DATA_FLAGS [extra create_pretraining_data flags], PLAN_ONLY [1: print the
# commands and the batch plans, run nothing].
# Relative CORPUS, VOCAB, OUT and paths in the extra flags are the caller's: the script does not
# change directory (OUT defaults to runs/two-phase in the checkout). CORPUS is one argument,
# never split on spaces: give several inputs as a directory, a glob or a comma list.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
source "$ROOT/scripts/lib.sh"  # abspath, quote, run_trainer, say_interrupted
CORPUS=${CORPUS:?set CORPUS to the text files, directory or glob}
VOCAB=$(abspath "${VOCAB:?set VOCAB to spiece.model}")
OUT=$(abspath "${OUT:-$ROOT/runs/two-phase}")
if [ -z "${GPUS:-}" ]; then
    GPUS=$( (nvidia-smi -L 2>/dev/null || true) | wc -l)
    [ "$GPUS" -ge 1 ] || GPUS=1
fi
PY=$ROOT/.venv/bin/python
launch=("$PY")
[ "$GPUS" -gt 1 ] && launch=("$ROOT/.venv/bin/horovodrun" -np "$GPUS" -H "localhost:$GPUS" "$PY")
shown() { echo "would run: $(quote "$@")"; }  # pasted into a shell, the same arguments

generate() {  # seq preds out
    if [ -f "$3/summary.json" ]; then
        echo "[two-phase] data for sequence length $1 already in $3"
        return
    fi
    local extra=()
    # DATA_FLAGS holds flags, not paths: split on spaces as written.
    read -r -a extra <<< "${DATA_FLAGS:-}"
    local cmd=("$PY" -m albert.create_pretraining_data --input "$CORPUS" --spm_model "$VOCAB"
               --output_dir "$3" --max_seq_length "$1" --max_predictions_per_seq "$2"
               --validation_fraction 0.01 "${extra[@]+"${extra[@]}"}")
    if [ -n "${PLAN_ONLY:-}" ]; then
        shown "${cmd[@]}"
        return
    fi
    "${cmd[@]}"
}

phase() {  # n seq preds batch global steps lr extra...
    local n=$1 seq=$2 preds=$3 batch=$4 global=$5 steps=$6 lr=$7
    shift 7
    local flags=(
        --filesystem_prefix "$OUT/data-$seq" --train_dir train --val_dir validation
        --model_size "${MODEL_SIZE:-base}" --spm_model "$VOCAB" --max_seq_length "$seq"
        --max_predictions_per_seq "$preds" --per_gpu_batch_size "$batch"
        --global_batch_size "$global" --total_steps "$steps" --learning_rate "$lr"
        --warmup_steps "$(( steps / 40 ))" --optimizer lamb
        --checkpoint_dir "$OUT/phase$n/checkpoints" --log_dir "$OUT/phase$n/logs" "$@"
    )
    echo "[two-phase] phase $n: sequence length $seq, $steps updates"
    if [ -n "${PLAN_ONLY:-}" ]; then
        shown "${launch[@]}" -m albert.run_pretraining "${flags[@]}"
        "$PY" -m albert.run_pretraining "${flags[@]}" --plan_only --plan_ranks "$GPUS"
        return
    fi
    local status=0
    run_trainer "${launch[@]}" -m albert.run_pretraining "${flags[@]}" || status=$?
    # Any failure stops the script (set -e): phase 2 never starts from an unfinished phase 1.
    [ "$status" -ne "$INTERRUPTED" ] || say_interrupted "[two-phase] phase $n was" \
        "$OUT/phase$n/checkpoints" "phase $n"
    return "$status"
}

S1=${PHASE1_SEQ:-128} S2=${PHASE2_SEQ:-512}
generate "$S1" "${PHASE1_PREDS:-20}" "$OUT/data-$S1"
generate "$S2" "${PHASE2_PREDS:-76}" "$OUT/data-$S2"
phase 1 "$S1" "${PHASE1_PREDS:-20}" "${PHASE1_BATCH:-64}" "${PHASE1_GLOBAL:-4096}" \
    "${PHASE1_STEPS:-112500}" "${PHASE1_LR:-0.00176}" "$@"
carry=()
[ "${CARRY_OPTIMIZER:-0}" = 1 ] && carry=(--load_optimizer_state)
phase 2 "$S2" "${PHASE2_PREDS:-76}" "${PHASE2_BATCH:-16}" "${PHASE2_GLOBAL:-2048}" \
    "${PHASE2_STEPS:-12500}" "${PHASE2_LR:-0.000275}" \
    --load_from checkpoint --checkpoint_path "$OUT/phase1/checkpoints" "${carry[@]}" "$@"
[ -n "${PLAN_ONLY:-}" ] || echo "[two-phase] done: phase 2's Hugging Face export is in" \
    "$(quote "$OUT/phase2/checkpoints/final")"
