"""Fine-tune ALBERT on SQuAD v1.1 / v2.0 and score it with the official rules.

    python -m albert.run_squad --train_file train-v2.0.json --predict_file dev-v2.0.json \\
        --load_from pretrained --checkpoint_path runs/pretraining/checkpoints/final \\
        --per_gpu_batch_size 24 --learning_rate 3e-5 --num_train_epochs 2
    horovodrun -np 8 python -m albert.run_squad ...    # same flags

Training features are sharded by rank; prediction is split across ranks and gathered on rank 0,
which writes predictions.json, nbest_predictions.json and (v2) null_odds.json to --output_dir and
logs exact/F1 (with HasAns/NoAns and the best no-answer threshold for v2) to stdout, the JSON-lines
log and TensorBoard. Features are cached under --cache_dir, keyed by file, vocabulary and settings.

Without --train_file the run only predicts, with every weight (the QA head included) from
--checkpoint_path (--load_from checkpoint: a run_squad checkpoint directory or prefix; --load_from
pretrained: an exported QA model); a checkpoint without a QA head, or --load_from scratch, is
refused rather than scored.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys

from albert.finetune import check_keep_best, keep_best
from albert.flags import (
    FlagError,
    HelpFormatter,
    add_fine_tuning_flags,
    add_model_flags,
    add_training_flags,
    check_fits,
    check_training_flags,
    check_vocabulary,
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

logger = logging.getLogger("albert.run_squad")

_VERSIONS = {"squadv1": "v1.1", "squadv2": "v2.0"}  # --squad_version -> the files' version
WINDOWS = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=HelpFormatter)
    g = p.add_argument_group("SQuAD")
    g.add_argument("--train_file", default=None, help="SQuAD JSON to fine-tune on")
    g.add_argument("--predict_file", default=None, help="SQuAD JSON to predict and score")
    g.add_argument("--squad_version", choices=("squadv1", "squadv2"), default=None,
                   help="default: read from the files' version field")
    for name, default in WINDOWS.items():
        g.add_argument(f"--{name}", type=int, default=None,
                       help=f"default {default}; predicting with a fine-tuned model, the one it "
                            "was fine-tuned with (another value is refused)")
    g.add_argument("--n_best_size", type=int, default=20)
    g.add_argument("--max_answer_length", type=int, default=30)
    g.add_argument("--null_score_diff_threshold", type=float, default=0.0)
    add_fine_tuning_flags(g, run_name="squad", epochs=2.0, scored="--predict_file")
    from albert.export import add_export_flag

    add_export_flag(g, ask="python -m albert.answer")
    add_model_flags(p)
    add_training_flags(p, learning_rate=3e-5, batch=24, optimizer="adamw", run_name="squad",
                       under_output_dir=True)
    p.set_defaults(warmup_steps=None, log_frequency=50)
    args = p.parse_args(argv)
    resolve_paths(args)
    if not args.train_file and not args.predict_file:
        p.error("give --train_file, --predict_file or both")
    return args


def _features(path, tokenizer, spm_model, settings, training, args, dist):
    """Cached features for `path`: (examples, parsed json, cache prefix).

    Training features are shuffled (seeded by --seed) before they are cached, so the trainer's
    shuffle buffer does not read them in article order (the reference shuffles its examples)."""
    import random

    from albert.data import squad

    examples, data, stats = squad.read_squad(path)
    os.makedirs(args.cache_dir, exist_ok=True)
    key = squad.cache_key(path, settings, spm_model, training)
    name = f"{os.path.basename(path)}.{key}" + (f".seed{args.seed}" if training else "")
    prefix = os.path.join(args.cache_dir, name)
    if dist.is_chief:
        logger.info("%s: %d questions (%d unanswerable), %d answers re-aligned, %d answers not "
                    "in their context", path, stats.questions, stats.impossible,
                    stats.realigned_answers, stats.mismatched_answers)
        if os.path.exists(prefix + ".tfrecord"):
            logger.info("using cached features %s.tfrecord", prefix)
        else:
            features = squad.featurize(examples, tokenizer, settings, training)
            if training:
                rate = squad.answer_recovery_rate(examples, features)
                logger.info("%d features; %.2f%% of answers recoverable from their token span",
                            len(features), 100 * rate)
                random.Random(args.seed).shuffle(features)
            squad.write_feature_cache(features, prefix)
    dist.barrier()
    return examples, data, prefix


def run(args) -> int:
    """Train (with --train_file), then predict and score (with --predict_file): three steps that
    each return to here."""
    check_training_flags(args)
    settle_features(args, WINDOWS)
    import keras

    from albert import distributed
    from albert.data import squad
    from albert.export import check_export_dir, export_after_run
    from albert.modeling import AlbertForQuestionAnswering
    from albert.precision import set_precision
    from albert.run_logging import MetricsLogger
    from albert.tokenization import load_tokenizer

    if args.plan_only:
        for line in plan_only_lines(args, plan_ranks(args), head="squad",
                                    total_steps=args.total_steps):
            print(line, flush=True)
        return 0
    check_export_dir(args)
    for name in ("train_file", "predict_file"):
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            raise FileNotFoundError(f"--{name} {path} does not exist")
    if not args.train_file and args.load_from == "scratch":
        raise FlagError("prediction without --train_file needs a fine-tuned model: give "
                        "--load_from checkpoint --checkpoint_path <a run_squad checkpoint "
                        "directory> (or --load_from pretrained <a QA model directory>); "
                        "--load_from scratch would score random weights")
    if not args.train_file:
        fine_tuned_path(args)  # before reading any file: a missing model is the first error
    check_keep_best(args, args.predict_file, "--predict_file", "squad")
    dist = distributed.init()
    set_precision(args.precision)
    keras.utils.set_random_seed(args.seed)
    spm_model = tokenizer_path(args)
    tokenizer = load_tokenizer(spm_model)
    settings = squad.FeatureSettings(args.max_seq_length, args.doc_stride, args.max_query_length)

    if args.train_file:
        model = model_from_flags(AlbertForQuestionAnswering, args, args.max_seq_length)
    else:
        model = _fine_tuned_model(AlbertForQuestionAnswering, args)
    config = model.config
    check_vocabulary(config, len(tokenizer), spm_model)
    metrics = MetricsLogger(args.log_dir, dist)
    try:
        step = 0
        xla = None
        scored = None
        if args.predict_file:
            scored = _features(args.predict_file, tokenizer, spm_model, settings, False, args,
                               dist)

        def evaluate(xla_on: bool, at_step: int, log=None) -> dict:
            examples, data, prefix = scored
            results = predict(model, prefix, args, dist, xla_on)
            return score(args, examples, data, prefix, results, log, at_step) \
                if dist.is_chief else {}

        if args.train_file:
            status, step, xla = train(args, model, tokenizer, spm_model, settings, dist, metrics,
                                      evaluate if scored else None)
            if status == "stopped":
                if dist.is_chief:
                    print(f"stopped at step {step}; run the same command to resume", flush=True)
                return 0
        if scored is not None:
            if xla is None:
                xla = xla_plan_from_flags(args, dist)
            scores = evaluate(xla.gradient, step, metrics)
            if args.train_file:
                keep_best(args, model, scores, step, spm_model, dist)
        export_after_run(args, model, "qa", spm_model, dist)
    finally:
        metrics.close()
    dist.barrier()
    return 0


def _fine_tuned_model(cls, args):
    """The model prediction-only scores: every weight, the QA head included, from
    --checkpoint_path (default: the latest checkpoint in --checkpoint_dir). A checkpoint without
    a QA head is an error, never a randomly initialised head."""
    from albert.convert import load_model

    path = fine_tuned_path(args)
    model = load_model(cls, path)
    logger.info("predicting with the fine-tuned weights of %s", path)
    check_fits(model.config, args.max_seq_length)
    return model


def train(args, model, tokenizer, spm_model, settings, dist, metrics, evaluate=None):
    """Fine-tune `model` on --train_file (albert.finetune: resume, checkpoints, the loop).
    Returns (status "done"|"stopped"|"finished", step, the XLA plan used)."""
    import tensorflow as tf

    from albert.data import squad
    from albert.finetune import fine_tune
    from albert.losses import SQUAD_METRICS, squad_loss, squad_metrics
    from albert.squad_metrics import detect_version

    _, train_data, prefix = _features(args.train_file, tokenizer, spm_model, settings, True,
                                      args, dist)
    version = _VERSIONS.get(args.squad_version) or detect_version(train_data)
    records, parse = squad.feature_dataset(prefix, args.max_seq_length)
    prepare_memory(args, model, dist, loss="squad", loss_fn=squad_loss, head="squad")

    def make_data(plan, skip):
        from albert.data.reader import resumable_skip

        shuffled = (records.shard(dist.size, dist.rank)
                    .shuffle(10_000, seed=args.seed, reshuffle_each_iteration=True).repeat())
        return (resumable_skip(shuffled, skip).batch(plan.micro_batch, drop_remainder=True)
                .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
                .batch(plan.accumulation, drop_remainder=True)
                .prefetch(tf.data.AUTOTUNE))

    return fine_tune(args, model, loss_fn=squad_loss, metric_names=SQUAD_METRICS,
                     metrics_fn=squad_metrics, examples=sum(1 for _ in records),
                     make_data=make_data, spm_model=spm_model, dist=dist, metrics=metrics,
                     task="squad", evaluate=evaluate,
                     features={**dataclasses.asdict(settings), "squad_version": version})


def predict(model, prefix, args, dist, xla: bool) -> dict:
    """This rank's share of the features -> {feature_index: (start, end)}, gathered on rank 0."""
    import tensorflow as tf

    from albert.data import squad

    records, parse = squad.feature_dataset(prefix, args.max_seq_length)
    data = (records.shard(dist.size, dist.rank).batch(args.eval_batch_size)
            .map(parse).prefetch(tf.data.AUTOTUNE))

    from albert.finetune import MODEL_INPUTS, inference_fn

    logits = inference_fn(model, xla, ("start_logits", "end_logits"))
    local = {}
    for batch in data:
        start, end = logits({k: batch[k] for k in MODEL_INPUTS})
        n = int(tf.reduce_sum(batch["attention_mask"], axis=1).numpy().max())
        for i, fi in enumerate(batch["feature_index"].numpy()):
            # Keep only the non-padded prefix: smaller to gather, and padding is never an answer.
            local[int(fi)] = (start[i, :n].numpy(), end[i, :n].numpy())
    results = {}
    for part in dist.allgather_object(local):
        results.update(part)
    return results


def score(args, examples, data, prefix, results, metrics, step) -> dict:
    """Post-process logits into answers, write the prediction files, score them with the
    official rules, log them (to `metrics`, unless None: the training loop logs its periodic
    evaluations) and return the scores (rank 0)."""
    from albert.data import squad
    from albert.squad_metrics import detect_version, evaluate

    version = _VERSIONS.get(args.squad_version) or detect_version(data)
    meta = squad.read_feature_meta(prefix)
    predictions, nbest, null_odds = squad.postprocess(
        examples, meta, results, n_best=args.n_best_size,
        max_answer_length=args.max_answer_length, version_2=version == "v2.0",
        null_score_diff_threshold=args.null_score_diff_threshold)
    os.makedirs(args.output_dir, exist_ok=True)
    files = {"predictions.json": predictions, "nbest_predictions.json": nbest}
    if version == "v2.0":
        files["null_odds.json"] = null_odds
    for name, obj in files.items():
        with open(os.path.join(args.output_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1 if name != "nbest_predictions.json" else None)
    scores = evaluate(data, predictions, null_odds if version == "v2.0" else None, version)
    if metrics is not None:
        metrics.log("eval", step, {k: float(v) for k, v in scores.items()})
    with open(os.path.join(args.output_dir, "eval_results.json"), "w") as f:
        json.dump({"version": version, **scores}, f, indent=2)
    print(f"SQuAD {version} on {args.predict_file}: exact "
          f"{scores.get('exact', scores.get('exact_match')):.2f} F1 "
          f"{scores['f1']:.2f}; predictions in {args.output_dir}", flush=True)
    return scores


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
