#!/usr/bin/env bash
# The whole job on bundled data, on a 2-core CPU in about 4 minutes:
#   English text (CPython's help topics) -> SentencePiece vocabulary -> pretraining TFRecords
#   -> pretrain a tiny ALBERT -> fine-tune it on a SQuAD v2.0-format set -> official EM/F1.
# Everything lands in demo_output/ (DEMO_DIR=... to change). Re-running starts from scratch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin/python
OUT=${DEMO_DIR:-demo_output}
PRETRAIN_STEPS=${PRETRAIN_STEPS:-300}
export TF_CPP_MIN_LOG_LEVEL=2
rm -rf "$OUT"
mkdir -p "$OUT"
step() { echo; echo "=== $* ==="; }
started=$(date +%s)

step "1/6 corpus: CPython's help topics (no download)"
$PY -m albert.data.sample --output "$OUT/corpus.txt"

step "2/6 SentencePiece vocabulary"
$PY -m albert.train_tokenizer --input "$OUT/corpus.txt" --vocab_size 3000 --output_dir "$OUT/vocab"

step "3/6 pretraining TFRecords (sentence order + n-gram masking)"
$PY -m albert.create_pretraining_data --input "$OUT/corpus.txt" \
    --spm_model "$OUT/vocab/spiece.model" --output_dir "$OUT/pretraining_data" \
    --max_seq_length 128 --max_predictions_per_seq 20 --dupe_factor 5 --num_shards 4 \
    --validation_fraction 0.05

step "4/6 pretrain a tiny ALBERT ($PRETRAIN_STEPS steps)"
$PY -m albert.run_pretraining --model_size tiny --spm_model "$OUT/vocab/spiece.model" \
    --filesystem_prefix "$OUT/pretraining_data" --train_dir train --val_dir validation \
    --max_seq_length 128 --max_predictions_per_seq 20 --per_gpu_batch_size 32 \
    --total_steps "$PRETRAIN_STEPS" --warmup_steps 30 --learning_rate 0.005 \
    --log_frequency 50 --validation_frequency 150 --checkpoint_frequency 150 \
    --checkpoint_dir "$OUT/pretraining/checkpoints" --log_dir "$OUT/pretraining/logs"

step "5/6 a SQuAD v2.0-format question set over the corpus"
$PY -m albert.data.squad_sample --output_dir "$OUT/squad_data" --train_questions 1500

step "6/6 fine-tune on it and score with the official SQuAD v2.0 rules"
$PY -m albert.run_squad --load_from pretrained \
    --checkpoint_path "$OUT/pretraining/checkpoints/final" \
    --train_file "$OUT/squad_data/train-v2.0.json" --predict_file "$OUT/squad_data/dev-v2.0.json" \
    --max_seq_length 192 --per_gpu_batch_size 16 --learning_rate 5e-4 --num_train_epochs 2 \
    --log_frequency 50 --output_dir "$OUT/squad" --cache_dir "$OUT/squad/cache" \
    --checkpoint_dir "$OUT/squad/checkpoints" --log_dir "$OUT/squad/logs" \
    --export_dir "$OUT/squad/serving/1"

$PY -m albert.squad_eval "$OUT/squad_data/dev-v2.0.json" "$OUT/squad/predictions.json" \
    --na-prob-file "$OUT/squad/null_odds.json" > "$OUT/squad/official_eval.json"
echo
echo "=== done in $(( $(date +%s) - started ))s ==="
$PY - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
r = json.load(open(f"{out}/squad/official_eval.json"))
print(f"SQuAD v2.0 dev (synthetic): EM {r['exact']:.1f}  F1 {r['f1']:.1f}  "
      f"(HasAns F1 {r['HasAns_f1']:.1f}, NoAns {r['NoAns_f1']:.1f}; best F1 {r['best_f1']:.1f})")
print(f"all-empty baseline F1: {100 * r['NoAns_total'] / r['total']:.1f}")
PY
echo
echo "=== ask the fine-tuned model (a SavedModel) one dev question with albert.answer ==="
$PY - "$OUT" > "$OUT/one_question.jsonl" <<'PY'
import json, sys
data = json.load(open(f"{sys.argv[1]}/squad_data/dev-v2.0.json"))
paragraph = next(p for p in data["data"][0]["paragraphs"] if not p["qas"][0]["is_impossible"])
qa = paragraph["qas"][0]
print(json.dumps({"id": qa["id"], "question": qa["question"], "context": paragraph["context"],
                  "expected": qa["answers"][0]["text"]}))
PY
$PY -m albert.answer --model "$OUT/squad/serving/1" --max_seq_length 192 --no_progress \
    --input "$OUT/one_question.jsonl" --output "$OUT/one_answer.jsonl"
$PY - "$OUT" <<'PY'
import json, sys
a = json.loads(open(f"{sys.argv[1]}/one_answer.jsonl").readline())
print(f"question: {a['question']}\nanswer:   {a['answer'] or '(no answer)'}  "
      f"(score {a['score']:.2f}; expected: {a['expected']})")
PY
cat <<MSG
serving:      $OUT/squad/serving/1 (SavedModel; python -m albert.answer --model ... --question ... --context ...)
checkpoints:  $OUT/pretraining/checkpoints (Hugging Face export in .../final), $OUT/squad/checkpoints
predictions:  $OUT/squad/predictions.json, nbest_predictions.json, null_odds.json
TensorBoard:  .venv/bin/tensorboard --logdir $OUT   (pretraining/logs and squad/logs)
MSG
