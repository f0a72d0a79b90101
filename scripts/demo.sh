#!/usr/bin/env bash
# What pretraining buys, on bundled data, on a CPU:
#   English text (CPython's help topics, plus a generated registry of facts about software
#   projects, each fact said twice in two of three synonymous wordings) -> SentencePiece
#   vocabulary -> pretraining TFRecords -> pretrain a tiny ALBERT (MLM + sentence order) -> a SQuAD
#   v2.0-format question set in the registry's language over help-topic passages, whose dev
#   questions use wordings its training questions never do (albert.demo.facts) -> fine-tune from
#   the pretrained model and from scratch with the same flags, two seeds each -> albert.demo.report:
#   both starts' official dev scores per seed, the mean difference against the seeds' spread and a
#   verdict, both starts' answers to the same dev questions, and a picture
#   (demo_output/pretraining_pays.png).
#
#   scripts/demo.sh              the demo; re-running starts from scratch
#   scripts/demo.sh few_labels   afterwards, from the same pretrained model: both starts on a tenth
#                                of the training questions (as many updates), three seeds each, then
#                                the report again with both comparisons
#   scripts/demo.sh sweep        afterwards, from the same records: the pretraining again once per
#                                choice (learning rate, warmup, optimizer, batch, dropout, masking
#                                kind and rate, width, length), one change at a time, 1,000 steps
#                                each (SWEEP_STEPS), all scored on the demo's held-out records
#                                (albert.demo.sweep; SWEEP_VARIANTS="demo lr0.02" for some)
# Everything lands in demo_output/ (DEMO_DIR=... to change: a new or empty folder, or one the
# demo made, which it marks with .albert-demo; each run empties it of the names it writes).
#   DEMO_SEED=N     seed of the pretraining and of the first fine-tune of each start; the others
#                   use N+1 (and N+2) (default 1); the question set is the same for every seed
#   DEMO_QUICK=1    a few steps of everything: checks the pipeline, far too short for pretraining
#                   to help
#   PRETRAIN_STEPS, FINETUNE_EPOCHS override the budget.
# few_labels and sweep take the DEMO_DIR, DEMO_QUICK, DEMO_SEED and FINETUNE_EPOCHS the demo ran
# with.
# TensorBoard: tensorboard --logdir demo_output (pretraining curves against their baselines,
# the fine-tunes overlaid).
set -euo pipefail
# Every input is checked before setup and before anything is deleted: each refusal is one line
# and exit 2, and leaves the user's files as they were.
refuse() { echo "scripts/demo.sh: $*" >&2; exit 2; }
MODE=${1:-all}
case $MODE in
    all|few_labels|sweep) ;;
    *) refuse "unknown part '$MODE': expected nothing (the demo), few_labels or sweep" ;;
esac
[ $# -le 1 ] || refuse "unexpected '${*:2}' after '$1': expected one part at most: nothing" \
                       "(the demo), few_labels or sweep"
# A relative DEMO_DIR is the caller's; the default, demo_output/, is in the checkout.
case ${DEMO_DIR:-} in ""|/*) ;; *) DEMO_DIR=$PWD/$DEMO_DIR ;; esac
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=${DEMO_DIR:-demo_output}
SEED=${DEMO_SEED:-1}
# Each start is fine-tuned with two seeds (DEMO_SEED and the next): the verdict weighs the
# difference against how far one start's seeds land apart.
SEEDS=("$SEED" "$((SEED + 1))")
# With a tenth of the labels the seeds land further apart: three each (two in the quick run).
FEW_SEEDS=("$SEED" "$((SEED + 1))" "$((SEED + 2))")
# Pretraining on 64-token sequences: twice the steps of 128 in the same time, and more steps is
# what moved MLM and SOP accuracy.
SEQ=64
PREDICTIONS=10
# LAMB at 0.01. At 0.02 a 1,000-step run did better (held-out MLM 0.1700 against 0.1547,
# `scripts/demo.sh sweep`), the demo's 3,000 steps worse (0.2420 against 0.2927).
PRETRAIN_LR=0.01
QA_SEQ=192
# One rate for both starts, the demo's rate before the starts were compared (not tuned on the
# comparison). At 2e-4 instead (seed 1): pretrained 41.77, scratch 35.95 F1; at 5e-4 42.74 and
# 34.60.
FINETUNE_LR=5e-4
if [ "${DEMO_QUICK:-0}" = 1 ]; then
    PRETRAIN_STEPS=${PRETRAIN_STEPS:-30}; WARMUP=3; VALIDATE=15; LOG=10; DUPES=2
    TRAIN_QUESTIONS=160; DEV_QUESTIONS=40; FINETUNE_EPOCHS=${FINETUNE_EPOCHS:-1}; EVAL_EVERY=5
    # The pipeline only: compiling the pretraining step would be most of its minute.
    PRETRAIN_XLA=off; FEW_SEEDS=("${SEEDS[@]}")
else
    # 3,000 steps: on all the training questions, over five fine-tune seeds of 3 epochs, the
    # pretrained start won by +6.00 F1 on average (worst seed +3.96) after 1,000 steps and by
    # +10.76 (worst +8.26) after 3,000 (AMD EPYC; docs/demo.md). XLA-compiled, the steps ran about 1.5x as fast on a 2-core
    # CPU (3.70 against 2.53 steps/s, alternated runs).
    # Held-out validation every 1,000 steps and dev scores every 100 updates: the curves need no
    # more points, and the seconds saved pay for the fourth fine-tune epoch.
    PRETRAIN_STEPS=${PRETRAIN_STEPS:-3000}; WARMUP=100; VALIDATE=1000; LOG=50; DUPES=5
    PRETRAIN_XLA=on
    # 1,000 questions, not 3,000: where labels are fewer a pretrained start matters more, and
    # four fine-tunes fit the demo's minutes. Four epochs, not three: both starts were still
    # rising at the third's end; over five seeds of the Xeon-pretrained model the gain went from
    # +8.50 (worst +4.66) to +11.05 (worst +7.62) F1 (docs/demo.md).
    TRAIN_QUESTIONS=1000; DEV_QUESTIONS=300; FINETUNE_EPOCHS=${FINETUNE_EPOCHS:-4}; EVAL_EVERY=100
fi
# The fine-tunes run uncompiled: their batches come in three lengths (buckets of 64 up to 192)
# and XLA compiles the step once for each, about 10 s apiece. Uncompiled a fine-tune took 60 s
# against 63-71 s compiled, with the same dev F1 (47.40, seed 1).
FINETUNE_XLA=off
export TF_CPP_MIN_LOG_LEVEL=2
step() { echo; echo "=== $* ==="; }
# What few_labels must share with the demo it builds on: its budget, its seeds and its epochs
# (the tenth runs ten times as many, to match the demo's updates).
SETTINGS="DEMO_QUICK=${DEMO_QUICK:-0} DEMO_SEED=$SEED FINETUNE_EPOCHS=$FINETUNE_EPOCHS"

# The demo empties its folder on every run, so it takes only a folder that it made (it writes
# $MARK into it) or finds empty, and deletes there only the names it writes: a user's folder,
# and whatever a link inside it points to, stay as they are.
MARK=.albert-demo
OUTPUTS=(corpus.txt vocab pretraining_data pretraining squad_data finetune demo_settings
         one_question.jsonl one_answer.jsonl pretraining_pays.png squad_tenth finetune_tenth sweep)
# A trailing slash would let the link test below look through a link.
while [ "$OUT" != / ] && [ "${OUT%/}" != "$OUT" ]; do OUT=${OUT%/}; done
is_output() {
    local name
    for name in "${OUTPUTS[@]}"; do [ "$name" = "$1" ] && return 0; done
    return 1
}
marked() { [ -f "$OUT/$MARK" ] && [ ! -L "$OUT/$MARK" ]; }
# The first entry in $OUT that the demo does not write, if any.
stranger() {
    local entry
    for entry in "$OUT"/* "$OUT"/.[!.]* "$OUT"/..?*; do
        [ -e "$entry" ] || [ -L "$entry" ] || continue  # a pattern that matched nothing
        [ "${entry##*/}" = "$MARK" ] && marked && continue
        is_output "${entry##*/}" || { printf '%s' "${entry##*/}"; return; }
    done
}
# A finished demo's folder from before the marker: the names a demo writes and nothing else,
# with the settings line that a finished demo writes last.
old_demo() {
    [ -z "$(stranger)" ] && [ -f "$OUT/demo_settings" ] && [ ! -L "$OUT/demo_settings" ] &&
        grep -Eqx 'DEMO_QUICK=[^ ]* DEMO_SEED=[^ ]* FINETUNE_EPOCHS=[^ ]*' "$OUT/demo_settings"
}
ANOTHER="name a new or empty folder (the demo empties its folder on every run, so it takes"
ANOTHER+=" only one it made)"
if [ -L "$OUT" ]; then
    refuse "DEMO_DIR $OUT is a symbolic link (to $(readlink -- "$OUT")): name the folder" \
           "itself, or a new one; the demo does not empty a folder through a link"
elif [ -e "$OUT" ] && [ ! -d "$OUT" ]; then
    refuse "DEMO_DIR $OUT is a file, not a folder: $ANOTHER"
elif [ -d "$OUT" ] && { [ ! -r "$OUT" ] || [ ! -x "$OUT" ]; }; then
    refuse "DEMO_DIR $OUT cannot be read: name a folder you can read and write"
elif [ "$MODE" = all ]; then
    # In a folder it made, other files (a user's notes, Finder's .DS_Store) stay where they are:
    # the demo deletes only its own names.
    if [ -d "$OUT" ] && ! marked; then
        other=$(stranger)
        [ -z "$other" ] || refuse "DEMO_DIR $OUT holds '$other', which the demo does not write: $ANOTHER"
        [ -z "$(ls -A -- "$OUT")" ] || old_demo ||
            refuse "DEMO_DIR $OUT was not made by the demo (no $MARK in it) and is not empty:" \
                   "name a new or empty folder, or remove this one yourself"
    elif [ ! -d "$OUT" ]; then
        why=$(mkdir -p -- "$OUT" 2>&1) ||
            refuse "DEMO_DIR $OUT cannot be made (${why##*: }): name a folder you can write to"
    fi
    why=$({ : > "$OUT/$MARK"; } 2>&1) ||
        refuse "DEMO_DIR $OUT cannot be written (${why##*: }): name a folder you can write to"
else
    if [ ! -f "$OUT/pretraining/checkpoints/final/config.json" ] || [ ! -f "$OUT/demo_settings" ]; then
        echo "scripts/demo.sh $MODE: no finished demo in $OUT (its pretrained model is" \
             "missing): run scripts/demo.sh first, with the same DEMO_DIR" >&2
        exit 2
    fi
    # few_labels and sweep replace folders of their own in it: only in the demo's folder.
    other=$(stranger)
    marked || old_demo ||
        refuse "DEMO_DIR $OUT was not made by the demo (no $MARK in it${other:+, and it holds" \
               "'$other', which the demo does not write}): run scripts/demo.sh in a new or" \
               "empty folder first"
    if [ "$(cat "$OUT/demo_settings")" != "$SETTINGS" ]; then
        echo "scripts/demo.sh $MODE: the demo in $OUT ran with $(cat "$OUT/demo_settings")," \
             "this with $SETTINGS: use the same settings" >&2
        exit 2
    fi
fi

bash scripts/setup.sh
started=$(date +%s)

# Every fine-tune runs with exactly these flags; only the starting weights, the seed and (for the
# tenth) the training file and its epochs differ, and each pair of starts shares those.
finetune() {
    local dir=$1 start=$2 seed=$3 train=$4 epochs=$5; shift 5
    local from=(--load_from scratch --model_config "$OUT/pretraining/checkpoints/final/config.json"
                --spm_model "$OUT/vocab/spiece.model")
    [ "$start" = pretrained ] && from=(--load_from pretrained
                                       --checkpoint_path "$OUT/pretraining/checkpoints/final")
    local run="$OUT/$dir/$start-seed$seed"
    $PY -m albert.run_squad "${from[@]}" "$@" \
        --train_file "$train" --predict_file "$OUT/squad_data/dev-v2.0.json" \
        --max_seq_length "$QA_SEQ" --per_gpu_batch_size 16 --learning_rate "$FINETUNE_LR" \
        --num_train_epochs "$epochs" --eval_frequency "$EVAL_EVERY" --seed "$seed" \
        --log_frequency "$LOG" --no_progress --xla "$FINETUNE_XLA" \
        --output_dir "$run" --cache_dir "$run/cache" \
        --checkpoint_dir "$run/checkpoints" --log_dir "$run/logs" > "$run.log" 2>&1
}

# Both starts of one seed at once, each on half the cores: a tiny model's small matrices keep
# two cores only partly busy, and one run's start-up and evaluations overlap the other's
# updates. On a 2-core CPU a pair took 83 s against 2 x 60 s one after the other, with the same
# dev F1 (47.40 and 34.60, seed 1). Extra flags go to the pretrained start (the export).
pair() {
    local dir=$1 seed=$2 train=$3 epochs=$4; shift 4
    local pids=() failed=()
    mkdir -p "$OUT/$dir"
    if [ "$CORES" -ge 2 ]; then
        TF_NUM_INTRAOP_THREADS=$(( CORES / 2 )) finetune "$dir" pretrained "$seed" "$train" \
            "$epochs" "$@" & pids+=($!)
        TF_NUM_INTRAOP_THREADS=$(( CORES / 2 )) finetune "$dir" scratch "$seed" "$train" \
            "$epochs" & pids+=($!)
        wait "${pids[0]}" || failed+=(pretrained)
        wait "${pids[1]}" || failed+=(scratch)
    else
        finetune "$dir" pretrained "$seed" "$train" "$epochs" "$@" || failed+=(pretrained)
        finetune "$dir" scratch "$seed" "$train" "$epochs" || failed+=(scratch)
    fi
    for start in pretrained scratch; do
        echo "--- from $start, seed $seed ($dir)"
        grep '^summary:' "$OUT/$dir/$start-seed$seed.log" || true
    done
    for start in ${failed[@]+"${failed[@]}"}; do
        echo "the fine-tune from $start (seed $seed) failed: $OUT/$dir/$start-seed$seed.log ends"
        tail -20 "$OUT/$dir/$start-seed$seed.log"
    done
    [ ${#failed[@]} -eq 0 ] || exit 1
}
CORES=$(nproc)
# Two TensorFlow processes at once on a GPU: each takes the memory it needs, not all of it.
export TF_FORCE_GPU_ALLOW_GROWTH=true

if [ "$MODE" = sweep ]; then
    # The quick run sweeps as many steps as its demo pretrained, so that its first row is the
    # demo's own pretraining again.
    SWEEP_STEPS=${SWEEP_STEPS:-$([ "${DEMO_QUICK:-0}" = 1 ] && echo "$PRETRAIN_STEPS" || echo 1000)}
    step "what each pretraining choice buys: one change at a time, $SWEEP_STEPS steps each, scored on the demo's held-out records"
    sweep_started=$(date +%s)
    variants=()
    # The quick run checks the machinery: one change of each kind (a flag; records of its own,
    # longer, so scored on the demo's held-out records padded to their shape).
    [ "${DEMO_QUICK:-0}" = 1 ] && variants=(--variants demo lr0.02 seq2x)
    # shellcheck disable=SC2206  # a list of names, split on spaces
    [ -n "${SWEEP_VARIANTS:-}" ] && variants=(--variants $SWEEP_VARIANTS)
    $PY -m albert.demo.sweep --demo_dir "$OUT" --steps "$SWEEP_STEPS" --seed "$SEED" \
        --learning_rate "$PRETRAIN_LR" --warmup_steps "$WARMUP" \
        --max_seq_length "$SEQ" --max_predictions_per_seq "$PREDICTIONS" --dupe_factor "$DUPES" \
        --xla "$PRETRAIN_XLA" --fresh ${variants[@]+"${variants[@]}"}
    echo "($(( $(date +%s) - sweep_started ))s; the table is in $OUT/sweep/table.md)"
    exit 0
fi

if [ "$MODE" = few_labels ]; then
    rm -rf "$OUT/squad_tenth" "$OUT/finetune_tenth"
    step "a tenth of the labels: the first $(( TRAIN_QUESTIONS / 10 )) training questions, as many updates (seeds ${FEW_SEEDS[*]})"
    # The generator draws the same questions first, so these are the first ones of the demo's
    # training set, asked the same dev questions.
    $PY -m albert.demo.squad_sample --output_dir "$OUT/squad_tenth" --style paraphrase \
        --train_questions "$(( TRAIN_QUESTIONS / 10 ))" --dev_questions "$DEV_QUESTIONS"
    for seed in "${FEW_SEEDS[@]}"; do
        pair finetune_tenth "$seed" "$OUT/squad_tenth/train-v2.0.json" "$(( FINETUNE_EPOCHS * 10 ))"
    done
    echo
    echo "=== pretrained vs from scratch, with the few-labels runs ($(( $(date +%s) - started ))s for these, setup excluded) ==="
    $PY -m albert.demo.report --demo_dir "$OUT" --seeds "${SEEDS[@]}"
    exit 0
fi

# A folder the demo made (checked above): its own names only; a link among them goes, not what
# it points to.
for name in "${OUTPUTS[@]}"; do rm -rf -- "${OUT:?}/$name"; done

step "1/6 corpus: CPython's help topics and a registry of project facts (no download)"
$PY -m albert.demo.sample --output "$OUT/corpus.txt" --source pydoc+facts

step "2/6 SentencePiece vocabulary"
$PY -m albert.train_tokenizer --input "$OUT/corpus.txt" --vocab_size 3000 --output_dir "$OUT/vocab"

step "3/6 pretraining TFRecords (sentence order + n-gram masking; 5% of the documents held out)"
# A few differently masked copies of the corpus, each seen several times: with 20 copies (each
# pair in both orders, seen about once) the sentence-order loss stayed at ln 2 for 1,500 steps;
# with 5 it leaves chance after about 600 steps.
$PY -m albert.create_pretraining_data --input "$OUT/corpus.txt" \
    --spm_model "$OUT/vocab/spiece.model" --output_dir "$OUT/pretraining_data" \
    --max_seq_length "$SEQ" --max_predictions_per_seq "$PREDICTIONS" --dupe_factor "$DUPES" \
    --num_shards 4 --validation_fraction 0.05

step "4/6 pretrain a tiny ALBERT ($PRETRAIN_STEPS steps)"
pretrain_started=$(date +%s)
$PY -m albert.run_pretraining --model_size tiny --spm_model "$OUT/vocab/spiece.model" \
    --filesystem_prefix "$OUT/pretraining_data" --train_dir train --val_dir validation \
    --max_seq_length "$SEQ" --max_predictions_per_seq "$PREDICTIONS" --per_gpu_batch_size 32 \
    --total_steps "$PRETRAIN_STEPS" --warmup_steps "$WARMUP" --learning_rate "$PRETRAIN_LR" \
    --seed "$SEED" --log_frequency "$LOG" --validation_frequency "$VALIDATE" \
    --checkpoint_frequency 0 --no_progress --xla "$PRETRAIN_XLA" \
    --checkpoint_dir "$OUT/pretraining/checkpoints" --log_dir "$OUT/pretraining/logs"
echo "$(( $(date +%s) - pretrain_started ))" > "$OUT/pretraining/seconds"

# What the accuracies are worth: always guessing the most frequent masked token (MLM) and a coin
# (SOP). Written as a run of its own so TensorBoard draws them as flat lines on the same charts.
$PY - "$OUT" "$PRETRAIN_STEPS" "$SEQ" "$PREDICTIONS" <<'PY'
import glob, json, sys
from albert.cli.quiet_start import import_tensorflow, start_environment
start_environment(False)  # as every command: TensorFlow's start-up lines only if its import fails
tf = import_tensorflow(False)
from albert.tasks.pretraining import unigram_mlm_accuracy
out, steps, seq, predictions = sys.argv[1], *map(int, sys.argv[2:])
with open(f"{out}/pretraining_data/summary.json") as f:
    written = json.load(f)
baselines = {"shapes": {"max_seq_length": seq, "max_predictions_per_seq": predictions}}
for split in ("train", "validation"):
    files = sorted(glob.glob(f"{out}/pretraining_data/{split}/*.tfrecord"))
    baselines[split] = {"mlm_unigram_acc": unigram_mlm_accuracy(files, seq, predictions),
                        "sop_chance_acc": 0.5, "pairs": written[f"{split}_instances"]}
with open(f"{out}/pretraining/baselines.json", "w") as f:
    json.dump(baselines, f, indent=1)
writer = tf.summary.create_file_writer(f"{out}/pretraining/baselines")
with writer.as_default():
    for prefix, split in (("train", "train"), ("val", "validation")):
        for step in (0, steps):
            tf.summary.scalar(f"{prefix}/mlm_acc", baselines[split]["mlm_unigram_acc"], step=step)
            tf.summary.scalar(f"{prefix}/sop_acc", 0.5, step=step)
writer.close()
PY

step "5/6 a SQuAD v2.0-format question set: paraphrased questions, distractors, a third unanswerable"
# Fine-tuning questions and passages use two of each relation's three wordings. Each dev question
# uses the third and its passage the other two, or the other way round: only the pretraining text
# says the third wording means what the others do.
$PY -m albert.demo.squad_sample --output_dir "$OUT/squad_data" --style paraphrase \
    --train_questions "$TRAIN_QUESTIONS" --dev_questions "$DEV_QUESTIONS"

step "6/6 fine-tune on all $TRAIN_QUESTIONS training questions, from the pretrained model and from scratch (seeds ${SEEDS[*]})"
for seed in "${SEEDS[@]}"; do
    export_flag=()
    [ "$seed" = "${SEEDS[0]}" ] && export_flag=(--export_dir "$OUT/finetune/pretrained-seed$seed/serving/1")
    pair finetune "$seed" "$OUT/squad_data/train-v2.0.json" "$FINETUNE_EPOCHS" \
        ${export_flag[@]+"${export_flag[@]}"}
done

echo "$SETTINGS" > "$OUT/demo_settings"  # what `scripts/demo.sh few_labels` builds on

echo
echo "=== pretrained vs from scratch ($(( $(date +%s) - started ))s, setup excluded) ==="
$PY -m albert.demo.report --demo_dir "$OUT" --seeds "${SEEDS[@]}"

echo
echo "=== ask the fine-tuned model (a SavedModel) one dev question with albert.answer ==="
SERVING="$OUT/finetune/pretrained-seed${SEEDS[0]}/serving/1"
$PY - "$OUT" > "$OUT/one_question.jsonl" <<'PY'
import json, sys
data = json.load(open(f"{sys.argv[1]}/squad_data/dev-v2.0.json"))
paragraph = next(p for p in data["data"][0]["paragraphs"] if not p["qas"][0]["is_impossible"])
qa = paragraph["qas"][0]
print(json.dumps({"id": qa["id"], "question": qa["question"], "context": paragraph["context"],
                  "expected": " / ".join(a["text"] for a in qa["answers"])}))
PY
$PY -m albert.answer --checkpoint_path "$SERVING" --max_seq_length "$QA_SEQ" \
    --no_progress \
    --input "$OUT/one_question.jsonl" --output "$OUT/one_answer.jsonl"
$PY - "$OUT" <<'PY'
import json, sys
a = json.loads(open(f"{sys.argv[1]}/one_answer.jsonl").readline())
print(f"passage:  {a['context']}\nquestion: {a['question']}\n"
      f"answer:   {a['answer'] or '(no answer)'}  (score {a['score']:.2f}; expected one of: "
      f"{a['expected']})")
PY
cat <<MSG
serving:      $SERVING (SavedModel; python -m albert.answer --checkpoint_path ... --question ... --context ...)
checkpoints:  $OUT/pretraining/checkpoints (Hugging Face export in .../final), $OUT/finetune/<start>-seed<N>/checkpoints
predictions:  $OUT/finetune/<start>-seed<N>/predictions.json
few labels:   scripts/demo.sh few_labels   (this pretrained model, both starts on a tenth of the training questions)
sweep:        scripts/demo.sh sweep        (the pretraining again once per choice, one change at a time, on these records)
picture:      $OUT/pretraining_pays.png
TensorBoard:  .venv/bin/tensorboard --logdir $(printf '%q' "$OUT")   (pretraining/logs against pretraining/baselines; the fine-tunes overlaid)
MSG
