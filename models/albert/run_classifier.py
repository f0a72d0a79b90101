"""Fine-tune ALBERT to classify sentences or sentence pairs (or score them: regression), GLUE-style.

    python -m albert.run_classifier --train_file train.tsv --eval_file dev.tsv \\
        --predict_file test.tsv --load_from pretrained --checkpoint_path albert_base \\
        --text_a sentence1 --text_b sentence2 --label label --per_gpu_batch_size 32
    python -m albert.run_classifier --glue_task mnli --train_file MNLI/train.tsv \\
        --eval_file MNLI/dev_matched.tsv ...        # GLUE's columns, labels and metric
    horovodrun -np 8 python -m albert.run_classifier ...    # same flags

Inputs are TSV, CSV (with a header naming the columns, or --no_header and 0-based positions) or
JSON lines (see albert.data.classification). The labels are --labels, the --glue_task's, or those
of the training file, sorted; --task regression fits one number per example instead.

Training features are sharded by rank and padded per batch to the batch's longest sequence.
Evaluation and prediction are split across ranks and gathered on rank 0, which scores every
prediction at once (accuracy, MCC and for two classes F1; Pearson / Spearman for regression),
logs the scores to stdout, the JSON-lines log and TensorBoard (`eval/`), and writes
eval_results.json, eval_predictions.tsv and (--predict_file) predictions.tsv to --output_dir.

Without --train_file the run only evaluates and predicts, with every weight (the classifier
included) from --checkpoint_path (--load_from checkpoint: a run_classifier checkpoint directory
or prefix; --load_from pretrained: an exported classifier); a checkpoint without a classifier, or
--load_from scratch, is refused rather than scored.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import sys

from albert.data.classification import GLUE_TASKS, TASKS, Columns
from albert.finetune import MODEL_INPUTS, check_keep_best, keep_best
from albert.flags import (
    FlagError,
    HelpFormatter,
    add_fine_tuning_flags,
    add_model_flags,
    add_training_flags,
    check_fits,
    check_training_flags,
    check_vocabulary,
    column_flag,
    fine_tuned_path,
    model_from_flags,
    plan_ranks,
    resolve_paths,
    run_main,
    settle_features,
    tokenizer_path,
    xla_plan_from_flags,
)
from albert.memory import plan_only_lines, prepare_memory

logger = logging.getLogger("albert.run_classifier")

FEATURES = {"max_seq_length": 128}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=HelpFormatter)
    g = p.add_argument_group("classification")
    g.add_argument("--train_file", default=None, help="labelled TSV / CSV / JSONL to fine-tune on")
    g.add_argument("--eval_file", default=None, help="labelled file to score")
    g.add_argument("--predict_file", default=None,
                   help="file to predict (labels not needed): predictions.tsv in --output_dir")
    g.add_argument("--glue_task", choices=sorted(GLUE_TASKS), default=None,
                   help="the GLUE files' columns, labels, task and metric (the column flags "
                        "still override)")
    g.add_argument("--task", choices=TASKS, default=None,
                   help="default: the --glue_task's, else classification (regression for a "
                        "fine-tuned model with one output)")
    g.add_argument("--text_a", default=None, help="column of the (first) text (default sentence)")
    g.add_argument("--text_b", default=None, help="column of the second text of a pair")
    g.add_argument("--label", default=None, help="column of the label (default label)")
    g.add_argument("--no_header", action="store_true",
                   help="TSV/CSV files without a header row: columns are 0-based positions")
    g.add_argument("--labels", default=None,
                   help="comma-separated label set, in id order (default: the --glue_task's, "
                        "else the training file's labels sorted, else the fine-tuned model's)")
    g.add_argument("--max_seq_length", type=int, default=None,
                   help=f"default {FEATURES['max_seq_length']}; evaluating a fine-tuned model, "
                        "the one it was fine-tuned with (another value is refused)")
    g.add_argument("--padding", choices=("batch", "max"), default="batch",
                   help="batch: pad each batch to its longest sequence (rounded up to "
                        "--pad_to_multiple_of); max: always to --max_seq_length")
    g.add_argument("--pad_to_multiple_of", type=int, default=8,
                   help="round a batch's padded length up to a multiple of this (1: exactly its "
                        "longest): fewer shapes for XLA to compile")
    add_fine_tuning_flags(g, run_name="classifier", epochs=3.0, scored="--eval_file")
    from albert.export import add_export_flag

    add_export_flag(g, ask="python -m albert.classify")
    add_model_flags(p)
    add_training_flags(p, learning_rate=2e-5, batch=32, optimizer="adamw", run_name="classifier",
                       under_output_dir=True)
    p.set_defaults(warmup_steps=None, log_frequency=50)
    args = p.parse_args(argv)
    resolve_paths(args)
    if not (args.train_file or args.eval_file or args.predict_file):
        p.error("give --train_file, --eval_file, --predict_file, or several")
    return args


# -- what the files hold ----------------------------------------------------------------------


class Spec:
    """The task as the flags describe it: columns of the labelled files and of the file to
    predict, classification or regression (None: not said), labels (None: not known yet), and
    the metric reported first."""

    def __init__(self, columns: Columns, predict_columns: Columns, task: str | None,
                 labels: tuple[str, ...] | None, metric: str | None):
        self.columns, self.predict_columns = columns, predict_columns
        self.task, self.labels, self.metric = task, labels, metric


def task_spec(args) -> Spec:
    """--glue_task, then the column, --task and --labels flags over it."""
    preset = GLUE_TASKS.get(args.glue_task)
    if preset and args.task and args.task != preset.task:
        raise FlagError(f"--task {args.task} contradicts --glue_task {args.glue_task} "
                        f"({preset.task})")
    base = preset.columns if preset else Columns("sentence", None, "label")
    header = base.header and not args.no_header
    own_columns = any(v is not None for v in (args.text_a, args.text_b, args.label))
    columns = Columns(
        column_flag(args.text_a if args.text_a is not None else base.text_a, header, "--text_a"),
        column_flag(args.text_b if args.text_b is not None else base.text_b, header, "--text_b"),
        column_flag(args.label if args.label is not None else base.label, header, "--label"),
        header)
    predict_columns = columns
    if preset and preset.predict_columns and not own_columns and not args.no_header:
        predict_columns = preset.predict_columns
    task = args.task or (preset.task if preset else None)
    labels = preset.labels if preset else None
    if args.labels is not None:
        labels = tuple(x.strip() for x in args.labels.split(",") if x.strip())
        if len(set(labels)) != len(labels) or len(labels) < 2:
            raise FlagError(f"--labels needs two or more distinct labels, got {args.labels!r}")
        if task == "regression":
            raise FlagError("--labels is for classification, not --task regression")
    return Spec(columns, predict_columns, task, labels,
                preset.metric if preset else None)


def _recorded(path: str | None) -> dict:
    """The run record beside a run_classifier checkpoint (directory or prefix), or {}."""
    from albert.checkpoints import read_run_record

    if not path:
        return {}
    directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
    return read_run_record(directory) or {}


class ClassifierFactory:
    """What flags.model_from_flags asks of a model class (a constructor taking the config, and
    from_pretrained), with the label count and names bound."""

    def __init__(self, num_labels: int, label_names):
        self.num_labels, self.label_names = num_labels, label_names

    def __call__(self, config):
        from albert.modeling import AlbertForSequenceClassification

        return AlbertForSequenceClassification(config, self.num_labels, self.label_names)

    def from_pretrained(self, path):
        from albert.modeling import AlbertForSequenceClassification

        return AlbertForSequenceClassification.from_pretrained(
            path, num_labels=self.num_labels, label_names=self.label_names)


# -- the run ----------------------------------------------------------------------------------


def run(args) -> int:
    """Train (with --train_file), then evaluate (--eval_file) and predict (--predict_file)."""
    check_training_flags(args)
    settle_features(args, FEATURES)
    if args.pad_to_multiple_of < 1:
        raise FlagError(f"--pad_to_multiple_of must be at least 1, got {args.pad_to_multiple_of}")
    import keras

    from albert import distributed
    from albert.data import classification as data
    from albert.precision import set_precision
    from albert.run_logging import MetricsLogger
    from albert.tokenization import load_tokenizer

    if args.plan_only:
        for line in plan_only_lines(args, plan_ranks(args), head="classifier",
                                    total_steps=args.total_steps):
            print(line, flush=True)
        return 0
    from albert.export import check_export_dir, export_after_run

    check_export_dir(args)
    for name in ("train_file", "eval_file", "predict_file"):
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            raise FileNotFoundError(f"--{name} {path} does not exist")
    if not args.train_file and args.load_from == "scratch":
        raise FlagError("evaluation or prediction without --train_file needs a fine-tuned model: "
                        "give --load_from checkpoint --checkpoint_path <a run_classifier "
                        "checkpoint directory> (or --load_from pretrained <a classifier "
                        "directory>); --load_from scratch would score random weights")
    if not args.train_file:
        fine_tuned_path(args)  # before reading any file: a missing model is the first error
    check_keep_best(args, args.eval_file, "--eval_file", "classifier")
    spec = task_spec(args)
    # Every rank reads and checks the files, so a bad row stops them all alike (before any
    # collective operation, where the others would wait for a rank that has stopped).
    train_examples = eval_examples = predict_examples = None
    if args.train_file:
        train_examples = data.read_examples(args.train_file, spec.columns)
    if args.eval_file:
        eval_examples = data.read_examples(args.eval_file, spec.columns)
    if args.predict_file:
        predict_examples = data.read_examples(args.predict_file, spec.predict_columns,
                                              labelled=False)

    dist = distributed.init()
    set_precision(args.precision)
    keras.utils.set_random_seed(args.seed)
    spm_model = tokenizer_path(args)
    tokenizer = load_tokenizer(spm_model)
    if train_examples is not None:
        spec.task = spec.task or "classification"
        if spec.task == "classification" and spec.labels is None:
            spec.labels = data.label_set(train_examples)
            if len(spec.labels) < 2:
                raise FlagError(f"{args.train_file} has a single label ({spec.labels[0]!r}): "
                                "nothing to classify (give --labels, or --task regression)")
        regression = spec.task == "regression"
        train_values = data.label_values(train_examples, args.train_file, spec.task, spec.labels)
        model = model_from_flags(ClassifierFactory(1 if regression else len(spec.labels),
                                                   spec.labels), args, args.max_seq_length)
    else:
        model = _fine_tuned_model(args, spec)
        regression = spec.task == "regression"
    config = model.config
    check_vocabulary(config, len(tokenizer), spm_model)
    eval_values = None
    if eval_examples is not None:
        eval_values = data.label_values(eval_examples, args.eval_file, spec.task, spec.labels)
    if dist.is_chief:
        logger.info("%s: %s", spec.task, "one output" if regression else
                    f"{len(spec.labels)} labels ({', '.join(spec.labels[:10])}"
                    f"{', ...' if len(spec.labels) > 10 else ''})")

    metrics = MetricsLogger(args.log_dir, dist)
    try:
        step, xla = 0, None
        eval_prefix = None
        if eval_examples is not None:
            eval_prefix = _features(args.eval_file, eval_examples, eval_values, spec.columns,
                                    spec, tokenizer, spm_model, False, args, dist)

        def evaluate(xla_on: bool, at_step: int, log=None) -> dict:
            index, logits, labels = predict(model, eval_prefix, args, dist, xla_on, regression)
            return score(args, spec, index, logits, labels, log, at_step) if dist.is_chief \
                else {}

        if train_examples is not None:
            prefix = _features(args.train_file, train_examples, train_values, spec.columns, spec,
                               tokenizer, spm_model, True, args, dist)
            status, step, xla = train(args, model, prefix, spec, spm_model, dist, metrics,
                                      evaluate if eval_prefix else None)
            if status == "stopped":
                if dist.is_chief:
                    print(f"stopped at step {step}; run the same command to resume", flush=True)
                return 0
        if xla is None and (eval_examples is not None or predict_examples is not None):
            xla = xla_plan_from_flags(args, dist)
        if eval_prefix is not None:
            scores = evaluate(xla.gradient, step, metrics)
            if train_examples is not None:
                keep_best(args, model, scores, step, spm_model, dist)
        if predict_examples is not None:
            prefix = _features(args.predict_file, predict_examples, None, spec.predict_columns,
                               spec, tokenizer, spm_model, False, args, dist)
            index, logits, _ = predict(model, prefix, args, dist, xla.gradient, regression)
            if dist.is_chief:
                path = write_predictions(os.path.join(args.output_dir, "predictions.tsv"), spec,
                                         index, logits)
                print(f"predicted {len(index)} examples of {args.predict_file}: {path}",
                      flush=True)
        export_after_run(args, model, "classification", spm_model, dist)
    finally:
        metrics.close()
    dist.barrier()
    return 0


def _fine_tuned_model(args, spec: Spec):
    """The model evaluation-only runs score: every weight, the classifier included, from
    --checkpoint_path (default: the latest checkpoint in --checkpoint_dir). Fills in the spec's
    task and labels from the model (its id2label) or its run record when the flags did not."""
    from albert.convert import load_model
    from albert.modeling import AlbertForSequenceClassification

    path = fine_tuned_path(args)
    record = _recorded(path) if args.load_from == "checkpoint" else {}
    trained = tuple(record["labels"]) if record.get("labels") else None
    asked = spec.labels
    names = trained or asked
    num_labels = 1 if spec.task == "regression" else (len(names) if names else None)
    # The labels the model was trained with (its run record, else its id2label) decide what its
    # output ids mean; flags may only repeat them: in another order they would swap its answers.
    model = load_model(AlbertForSequenceClassification, path, num_labels=num_labels,
                       label_names=list(trained) if trained else None)
    trained = trained or (tuple(model.label_names) if model.label_names else None)
    if asked is not None and trained is not None and tuple(asked) != trained:
        given = f"--labels {args.labels}" if args.labels is not None else \
            f"--glue_task {args.glue_task}'s labels {','.join(asked)}"
        raise FlagError(f"{given}: the model in {path} was trained with the labels "
                        f"{','.join(trained)} (in id order); drop --labels (the model's are used) "
                        "or give them in that order")
    spec.labels = trained or asked
    if spec.labels and model.label_names is None:
        model.label_names = tuple(spec.labels)
    logger.info("evaluating with the fine-tuned weights of %s", path)
    if spec.task is None:
        spec.task = record.get("task") or ("regression" if model.num_labels == 1
                                           else "classification")
    if spec.task == "regression":
        if model.num_labels != 1:
            raise FlagError(f"--task regression needs a model with one output; {path} has "
                            f"{model.num_labels}")
    else:
        if model.num_labels == 1:
            raise FlagError(f"{path} has one output (a regression model): add --task regression")
        spec.labels = spec.labels or (tuple(model.label_names) if model.label_names else None)
        if spec.labels is None:
            raise FlagError(f"{path} does not name its {model.num_labels} labels: give them, in "
                            "id order, with --labels")
    check_fits(model.config, args.max_seq_length)
    return model


def _features(path, examples, values, columns, spec, tokenizer, spm_model, training, args,
              dist) -> str:
    """The cache prefix of `path`'s features, written by rank 0 when not cached yet.

    Training features are shuffled (seeded by --seed) before they are cached, so the trainer's
    shuffle buffer does not read them in file order (files are often sorted by label)."""
    import random

    from albert.data import classification as data

    settings = data.FeatureSettings(args.max_seq_length, spec.task, spec.labels, columns,
                                    labelled=values is not None)
    key = data.cache_key(path, settings, spm_model, training)
    name = f"{os.path.basename(path)}.{key}" + (f".seed{args.seed}" if training else "")
    prefix = os.path.join(args.cache_dir, name)
    if dist.is_chief:
        os.makedirs(args.cache_dir, exist_ok=True)
        if os.path.exists(prefix + ".tfrecord"):
            logger.info("using cached features %s.tfrecord", prefix)
        else:
            features, stats = data.featurize(examples, values, tokenizer, args.max_seq_length)
            logger.info("%s: %d examples, %d cut to --max_seq_length %d; %.1f tokens on average, "
                        "%d at most", path, stats["examples"], stats["truncated"],
                        args.max_seq_length, stats["mean_length"], stats["max_length"])
            if training:
                random.Random(args.seed).shuffle(features)
            data.write_feature_cache(features, stats, prefix, spec.task == "regression")
    dist.barrier()
    return prefix


def train(args, model, prefix, spec, spm_model, dist, metrics, evaluate=None):
    """Fine-tune `model` on the cached features at `prefix` (albert.finetune: resume,
    checkpoints, the loop). Returns (status "done"|"stopped"|"finished", step, XLA plan)."""
    import tensorflow as tf

    from albert.data import classification as data
    from albert.data.reader import resumable_skip
    from albert.finetune import fine_tune
    from albert.losses import (
        CLASSIFICATION_METRICS,
        REGRESSION_METRICS,
        classification_loss,
        classification_metrics,
        regression_loss,
        regression_metrics,
    )

    regression = spec.task == "regression"
    records, parse = data.feature_dataset(prefix, regression, args.max_seq_length, args.padding,
                                          args.pad_to_multiple_of)

    def make_data(plan, skip):
        accum, batch_size = plan.accumulation, plan.micro_batch

        def micro_batches(records_batch):
            """[accum x batch] serialized records -> [accum, batch, S] tensors, S the longest of
            the whole update (the micro-batches of one update are stacked, so they share it)."""
            batch = parse(records_batch)
            batch.pop("index")
            return {k: tf.reshape(v, tf.concat([[accum, batch_size], tf.shape(v)[1:]], 0))
                    for k, v in batch.items()}

        shuffled = (records.shard(dist.size, dist.rank)
                    .shuffle(10_000, seed=args.seed, reshuffle_each_iteration=True).repeat())
        return (resumable_skip(shuffled, skip).batch(accum * batch_size, drop_remainder=True)
                .map(micro_batches, num_parallel_calls=tf.data.AUTOTUNE)
                .prefetch(tf.data.AUTOTUNE))

    loss_fn, names, metrics_fn = ((regression_loss, REGRESSION_METRICS, regression_metrics)
                                  if regression else
                                  (classification_loss, CLASSIFICATION_METRICS,
                                   classification_metrics))
    prepare_memory(args, model, dist, loss=spec.task, loss_fn=loss_fn, head="classifier",
                   num_labels=model.num_labels)
    return fine_tune(args, model, loss_fn=loss_fn, metric_names=names, metrics_fn=metrics_fn,
                     examples=data.read_feature_meta(prefix)["examples"], make_data=make_data,
                     spm_model=spm_model, dist=dist, metrics=metrics, what="examples",
                     task=spec.task, labels=spec.labels, evaluate=evaluate,
                     features={"max_seq_length": args.max_seq_length,
                               "columns": list(dataclasses.astuple(spec.columns))},
                     record={"task": spec.task,
                             "labels": list(spec.labels) if spec.labels else None})


def predict(model, prefix, args, dist, xla: bool, regression: bool):
    """Every example's (index [N], logits [N, C], labels [N]), in file order, on every rank:
    each rank runs its share of the features, then all shares are gathered."""
    import numpy as np
    import tensorflow as tf

    from albert.data import classification as data

    records, parse = data.feature_dataset(prefix, regression, args.max_seq_length, args.padding,
                                          args.pad_to_multiple_of)
    batches = (records.shard(dist.size, dist.rank).batch(args.eval_batch_size).map(parse)
               .prefetch(tf.data.AUTOTUNE))

    from albert.finetune import inference_fn

    # One trace for every batch shape (XLA still compiles each shape it meets once), kept for
    # the next evaluation.
    logits_of = inference_fn(model, xla, ("logits",))

    index, logits, labels = [], [], []
    for batch in batches:
        logits.append(logits_of({k: batch[k] for k in MODEL_INPUTS})[0].numpy())
        index.append(batch["index"].numpy())
        labels.append(batch["labels"].numpy())
    local = (np.concatenate(index) if index else np.zeros([0], np.int32),
             np.concatenate(logits) if logits else np.zeros([0, model.num_labels], np.float32),
             np.concatenate(labels) if labels else np.zeros([0]))
    parts = dist.allgather_object(local)
    index = np.concatenate([p[0] for p in parts])
    order = np.argsort(index, kind="stable")
    return (index[order], np.concatenate([p[1] for p in parts])[order],
            np.concatenate([p[2] for p in parts])[order])


def _finite(value):
    return value if not isinstance(value, float) or math.isfinite(value) else None


def _prediction_texts(spec, logits) -> list[str]:
    import numpy as np

    if spec.task == "regression":
        # Every digit (repr): rounded, close predictions tie, and Pearson and Spearman computed
        # from the file differ from the ones reported.
        return [repr(float(v)) for v in logits[:, 0]]
    return [spec.labels[i] for i in np.argmax(logits, axis=1)]


def score(args, spec, index, logits, labels, metrics, step) -> dict:
    """Score every evaluation prediction at once, log the scores (to `metrics`, unless None: the
    training loop logs its periodic evaluations), write eval_results.json and
    eval_predictions.tsv (rank 0)."""
    from albert.classification_metrics import classification_scores, regression_scores

    if spec.task == "regression":
        scores = regression_scores(logits[:, 0], labels)
        default = "pearson"
    else:
        scores = classification_scores(logits, labels.astype("int64"), len(spec.labels))
        default = "accuracy"
    headline = spec.metric if spec.metric in scores else default
    if metrics is not None:
        metrics.log("eval", step, scores)
    os.makedirs(args.output_dir, exist_ok=True)
    result = {"eval_file": args.eval_file, "examples": len(index), "task": spec.task,
              "labels": list(spec.labels) if spec.task == "classification" else None,
              "metric": headline, "step": step, **{k: _finite(v) for k, v in scores.items()}}
    with open(os.path.join(args.output_dir, "eval_results.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    gold = ([repr(float(v)) for v in labels] if spec.task == "regression"
            else [spec.labels[int(i)] for i in labels])
    path = os.path.join(args.output_dir, "eval_predictions.tsv")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("index\tlabel\tprediction\n")
        for i, g, p in zip(index, gold, _prediction_texts(spec, logits), strict=True):
            f.write(f"{i}\t{g}\t{p}\n")
    others = " ".join(f"{k} {v:.4f}" for k, v in scores.items() if k != headline)
    print(f"eval on {args.eval_file} ({len(index)} examples): {headline} "
          f"{scores[headline]:.4f} ({others}); predictions in {args.output_dir}", flush=True)
    return scores


def write_predictions(path: str, spec, index, logits) -> str:
    """GLUE's submission layout: index, prediction (a label, or a number for regression)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("index\tprediction\n")
        for i, p in zip(index, _prediction_texts(spec, logits), strict=True):
            f.write(f"{i}\t{p}\n")
    return path


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
