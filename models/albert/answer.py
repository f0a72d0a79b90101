"""Ask a fine-tuned ALBERT question-answering model: one question, or a JSON-lines file of them.

    python -m albert.answer --checkpoint_path serving/1 --question "Who owns the zorvan module?" \\
        --context "... The owner of the zorvan module is mira castell. ..."
    python -m albert.answer --checkpoint_path runs/squad/checkpoints/final \\
        --input questions.jsonl --output answers.jsonl

--checkpoint_path is a SavedModel written by `albert.export --head squad` (or run_squad's export), a
trainer checkpoint (prefix or directory), or a Hugging Face / Google directory holding a QA head.
Contexts are split into windows and answers chosen exactly as run_squad does (albert.data.squad's
featurize and postprocess, the same flags and defaults), so on the same questions the answers
equal run_squad's predictions.json. Windows go through the model --batch_size at a time, batched
as run_squad batches its predictions (albert.data.squad's plan_batches): with --padding batch (the
default) windows of one length bucket together, each batch padded to its bucket (a multiple of 64
tokens, so a model compiles a handful of shapes); with --padding max every window padded to
--max_seq_length. The answers are the same either way: the model masks the padding, and answers
are read from each window's real tokens.

Each --input line is a JSON object with "question" and "context" (and optionally "id"); each
output line is that object plus "answer" (what predictions.json would hold: "" when the model
prefers no answer), "best_span" and its "score" (start + end logit), "no_answer" and, for SQuAD
v2 models, "null_score_diff" (the null score minus the best span's; above
--null_score_diff_threshold means no answer).
"""

from __future__ import annotations

import json
import logging
import os
import sys

import numpy as np
from tqdm import tqdm

from albert.cli.flags import (
    FlagError,
    Parser,
    Renamed,
    check_fits,
    run_main,
)
from albert.cli.serving import (
    check_output_file,
    check_vocabulary_content,
    read_card,
    settle,
    write_jsonl,
)
from albert.data import squad
from albert.data.tokenization import load_tokenizer
from albert.io.model_dir import vocabulary_file
from albert.io.weights import check_vocabulary
from albert.model import MODEL_INPUTS
from albert.tasks.squad_options import VERSIONS

logger = logging.getLogger("albert.answer")

WINDOW_DEFAULTS = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}


def build_parser() -> Parser:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint_path", action=Renamed, old=("--model",), required=True,
                   help="QA SavedModel, trainer checkpoint, Hugging Face or Google directory")
    p.add_argument("--question", default=None, help="one question (with --context)")
    p.add_argument("--context", default=None, help="the passage to answer --question from")
    p.add_argument("--input", default=None,
                   help="JSON lines, one {\"question\", \"context\"[, \"id\"]} object per line")
    p.add_argument("--output", default=None,
                   help="write JSON lines here (default: stdout for --input)")
    p.add_argument("--spm_model", default=None,
                   help="SentencePiece vocabulary (default: the one that comes with "
                        "--checkpoint_path)")
    p.add_argument("--squad_version", action=Renamed,
                   old_values={v: k for k, v in VERSIONS.items()}, choices=tuple(VERSIONS),
                   default=None,
                   help="squadv2: the model may prefer no answer; squadv1: always answer "
                        "(v2.0 and v1.1 are read as those; default: the model's fine-tuning "
                        "data's, else squadv2)")
    p.add_argument("--null_score_diff_threshold", type=float, default=0.0)
    g = p.add_argument_group(
        "windows", "the model's own settings by default: those it was fine-tuned with (the task "
        "card its export carries); a value that differs is refused. A model without a card "
        f"(from elsewhere, or older) uses run_squad's defaults {WINDOW_DEFAULTS}")
    g.add_argument("--max_seq_length", type=int, default=None,
                   help="default: the model's (see above)")
    g.add_argument("--doc_stride", type=int, default=None, help="default: the model's")
    g.add_argument("--max_query_length", type=int, default=None, help="default: the model's")
    p.add_argument("--n_best_size", type=int, default=20)
    p.add_argument("--max_answer_length", type=int, default=30)
    p.add_argument("--batch_size", type=int, default=64,
                   help="windows per model call (run_squad's --eval_batch_size)")
    p.add_argument("--padding", choices=("batch", "max"), default="batch",
                   help="batch: windows of similar length batched together, each batch padded "
                        "to its length bucket (a multiple of 64); max: every window to "
                        "--max_seq_length. The same answers either way")
    p.add_argument("--no_progress", action="store_true", help="no progress bar")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def check_args(args) -> None:
    """Flag errors a user can fix, found before TensorFlow is imported."""
    model = args.checkpoint_path
    if not os.path.exists(model) and not os.path.isfile(model + ".index"):
        raise FlagError(f"--checkpoint_path {model} does not exist")
    if (args.question is None) == (args.input is None):
        raise FlagError("give either --question (with --context) or --input")
    if args.question is not None:
        if not args.question.strip():
            raise FlagError("--question is empty")
        if args.context is None or not args.context.strip():
            raise FlagError("--question needs a non-empty --context")
    elif args.context is not None:
        raise FlagError("--context goes with --question; --input lines carry their own")
    if args.spm_model and not os.path.isfile(args.spm_model):
        raise FlagError(f"--spm_model {args.spm_model} does not exist")
    if args.output:
        check_output_file(args.output, "answers.jsonl")
    for name in ("max_seq_length", "doc_stride", "max_query_length", "n_best_size",
                 "max_answer_length", "batch_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise FlagError(f"--{name} must be >= 1, got {getattr(args, name)}")


def read_questions(path: str) -> list[dict]:
    """The JSON objects of a JSON-lines file, each checked for non-empty question and context
    strings; blank lines are skipped. Errors name the file and line."""
    if not os.path.isfile(path):
        raise FlagError(f"--input {path} "
                        + ("is a directory: give a JSON-lines file" if os.path.isdir(path)
                           else "does not exist"))
    records = []
    # utf-8-sig: a byte-order mark (what some editors write first) is not part of line 1.
    with open(path, encoding="utf-8-sig") as f:
        try:
            lines = list(f)
        except UnicodeDecodeError as e:
            raise FlagError(f"--input {path} is not UTF-8: {e}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise FlagError(f"{path} line {number} is not valid JSON: {e}") from None
        if not isinstance(record, dict):
            raise FlagError(f"{path} line {number}: expected a JSON object with "
                            f"\"question\" and \"context\"")
        for key in ("question", "context"):
            value = record.get(key)
            if not isinstance(value, str) or not value.strip():
                raise FlagError(f"{path} line {number}: \"{key}\" must be a non-empty string")
        records.append(record)
    if not records:
        raise FlagError(f"--input {path} holds no questions")
    return records


def apply_task_card(args) -> str:
    """Windows, SQuAD version and vocabulary as the model was fine-tuned (its task card): a flag
    left out takes the model's setting, a flag that differs is an error (other windows than
    training's give other answers). Inference knobs (batch size, n-best, thresholds) are free.
    Returns the vocabulary: --spm_model, else the one that comes with the model."""
    model = args.checkpoint_path
    card = read_card(model) or {}
    if card.get("task") not in (None, "squad"):
        raise FlagError(f"--checkpoint_path {model} was fine-tuned for {card['task']}, not "
                        "question answering")
    features = card.get("features") or {}
    windows = settle({name: getattr(args, name) for name in WINDOW_DEFAULTS}, card,
                     WINDOW_DEFAULTS, model)
    for name, value in windows.items():
        setattr(args, name, value)
    trained_version = {v: k for k, v in VERSIONS.items()}.get(features.get("squad_version"))
    if args.squad_version and trained_version and args.squad_version != trained_version:
        raise FlagError(f"--squad_version {args.squad_version} differs from the {trained_version}"
                        f" data --checkpoint_path {model} was fine-tuned on: drop "
                        "--squad_version")
    args.squad_version = args.squad_version or trained_version or "squadv2"
    spm_model = args.spm_model or vocabulary_file(model)
    if not spm_model:
        raise FlagError(f"no vocabulary comes with --checkpoint_path {model} (spiece.model or "
                        "30k-clean.model); pass --spm_model")
    check_vocabulary_content(card, spm_model, model)
    if card:
        logger.info("windows as fine-tuned: --max_seq_length %d --doc_stride %d "
                    "--max_query_length %d, %s", args.max_seq_length, args.doc_stride,
                    args.max_query_length, args.squad_version)
    return spm_model


# -- answering ----------------------------------------------------------------------------------


def answer_all(records: list[dict], logits_fn, tokenizer, args) -> list[dict]:
    """Each record plus answer, best_span, score, no_answer (and null_score_diff for v2).

    Windowing, batching and answer selection are albert.data.squad's featurize, plan_batches
    and postprocess, called as run_squad calls them (its prediction_batches are plan_batches'
    batches); each window's logits are kept over its real tokens (real_logits).
    """
    # Our own ids: the records' ids may repeat or be absent.
    examples = [squad.Example(str(i), r["question"], r["context"], [], False)
                for i, r in enumerate(records)]
    settings = squad.FeatureSettings(args.max_seq_length, args.doc_stride, args.max_query_length)
    features = squad.featurize(examples, tokenizer, settings, training=False)
    meta = squad.feature_meta(features)
    plan = squad.plan_batches([f.length for f in features], args.batch_size,
                              args.max_seq_length, args.padding)
    results = {}
    quiet = args.no_progress or args.input is None  # no bar for a single question
    with tqdm(total=len(features), unit="window", disable=quiet, file=sys.stderr) as bar:
        for indices, length in plan:
            arrays = {name: np.array([getattr(features[i], name)[:length] for i in indices],
                                     np.int32)
                      for name in MODEL_INPUTS}
            start, end = logits_fn(**arrays)
            results.update(squad.real_logits(indices, arrays["attention_mask"], start, end))
            bar.update(len(indices))
    version_2 = args.squad_version == "squadv2"
    predictions, nbest, null_odds = squad.postprocess(
        examples, meta, results, n_best=args.n_best_size,
        max_answer_length=args.max_answer_length, version_2=version_2,
        null_score_diff_threshold=args.null_score_diff_threshold)
    out = []
    for example, record in zip(examples, records, strict=True):
        best = next((c for c in nbest[example.qid] if c["text"]), None)
        answer = predictions[example.qid]
        row = {**record, "answer": answer, "best_span": best["text"] if best else "",
               "score": best["score"] if best else None, "no_answer": answer == ""}
        if version_2:
            row["null_score_diff"] = null_odds[example.qid]
        out.append(row)
    return out


def prepare(args) -> tuple[list[dict], str]:
    """(the questions to answer, the vocabulary) after every check that needs no TensorFlow:
    the flags, the model's task card (a classifier is refused in a second, not after the model
    has loaded), the questions."""
    check_args(args)
    records = ([{"question": args.question, "context": args.context}] if args.input is None
               else read_questions(args.input))
    return records, apply_task_card(args)


def run(args, records: list[dict], spm_model: str) -> int:
    # TensorFlow and the model only once the flags and the questions are checked (prepare):
    # a bad flag or input is answered in a second.
    from albert.cli.serving_model import load_qa_model

    logits_fn, config, _ = load_qa_model(args.checkpoint_path)
    check_fits(config, args.max_seq_length)
    tokenizer = load_tokenizer(spm_model)
    check_vocabulary(config, len(tokenizer), spm_model)
    rows = answer_all(records, logits_fn, tokenizer, args)
    if args.input is None:
        row = rows[0]
        if not row["no_answer"]:
            print(f"answer: {row['answer']}")
        elif row["best_span"]:
            print(f"answer: (none: the model prefers no answer to its best span "
                  f"{row['best_span']!r})")
        else:
            print("answer: (none: no span qualifies)")
        score = "none" if row["score"] is None else f"{row['score']:.4f}"
        print(f"score: {score}")
        print(f"no_answer: {str(row['no_answer']).lower()}")
        if "null_score_diff" in row:
            print(f"null_score_diff: {row['null_score_diff']:.4f} "
                  f"(no answer above --null_score_diff_threshold "
                  f"{args.null_score_diff_threshold})")
        if args.output:
            write_jsonl(rows, args.output)
    else:
        write_jsonl(rows, args.output)
        if args.output:
            unanswered = sum(r["no_answer"] for r in rows)
            print(f"answered {len(rows) - unanswered} of {len(rows)} questions "
                  f"({unanswered} with no answer); wrote {args.output}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    return run_main(parse_args, lambda args, prepared: run(args, *prepared), argv,
                    prepare=prepare)


if __name__ == "__main__":
    sys.exit(main())
