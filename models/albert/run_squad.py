"""Fine-tune ALBERT on SQuAD v1.1 / v2.0 and score it with the official rules.

    python -m albert.run_squad --train_file train-v2.0.json --predict_file dev-v2.0.json \\
        --load_from huggingface --checkpoint_path runs/pretraining/checkpoints/final \\
        --per_gpu_batch_size 24 --learning_rate 3e-5 --num_train_epochs 2
    horovodrun -np 8 python -m albert.run_squad ...    # same flags

Training features are sharded by rank; prediction is split across ranks and gathered on rank 0,
which writes predictions.json, nbest_predictions.json and (v2) null_odds.json to --output_dir and
logs exact/F1 (with HasAns/NoAns and the best no-answer threshold for v2) to stdout, the JSON-lines
log and TensorBoard. Features are cached under --cache_dir, keyed by file, vocabulary and settings.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys

from albert.flags import (
    FlagError,
    add_model_flags,
    add_training_flags,
    model_from_flags,
    resolve_batch_size,
    user_errors,
    xla_plan_from_flags,
)

logger = logging.getLogger("albert.run_squad")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("SQuAD")
    g.add_argument("--train_file", default=None, help="SQuAD JSON to fine-tune on")
    g.add_argument("--predict_file", default=None, help="SQuAD JSON to predict and score")
    g.add_argument("--squad_version", choices=("squadv1", "squadv2"), default=None,
                   help="default: read from the files' version field")
    g.add_argument("--max_seq_length", type=int, default=384)
    g.add_argument("--doc_stride", type=int, default=128)
    g.add_argument("--max_query_length", type=int, default=64)
    g.add_argument("--n_best_size", type=int, default=20)
    g.add_argument("--max_answer_length", type=int, default=30)
    g.add_argument("--null_score_diff_threshold", type=float, default=0.0)
    g.add_argument("--num_train_epochs", type=float, default=2.0,
                   help="used when --total_steps is not given")
    g.add_argument("--warmup_proportion", type=float, default=0.1,
                   help="warmup as a fraction of the steps when --warmup_steps is not given")
    g.add_argument("--eval_batch_size", type=int, default=64)
    g.add_argument("--output_dir", default=os.path.join("runs", "squad"))
    g.add_argument("--cache_dir", default=os.path.join("runs", "squad_cache"))
    add_model_flags(p)
    add_training_flags(p, learning_rate=3e-5, batch=24, optimizer="adamw", run_name="squad")
    p.set_defaults(warmup_steps=None, log_frequency=50)
    args = p.parse_args(argv)
    if not args.train_file and not args.predict_file:
        p.error("give --train_file, --predict_file or both")
    return args


def _tokenizer_path(args) -> str:
    if args.spm_model:
        return args.spm_model
    if args.load_from == "huggingface" and args.checkpoint_path:
        candidate = os.path.join(args.checkpoint_path, "spiece.model")
        if os.path.exists(candidate):
            return candidate
    raise FlagError("no vocabulary: pass --spm_model (or a --checkpoint_path Hugging Face "
                    "directory that holds spiece.model)")


def _features(path, tokenizer, spm_model, settings, training, args, dist):
    """Cached features for `path`: (examples, parsed json, cache prefix, meta or None)."""
    from albert.data import squad

    examples, data, stats = squad.read_squad(path)
    os.makedirs(args.cache_dir, exist_ok=True)
    key = squad.cache_key(path, settings, spm_model, training)
    prefix = os.path.join(args.cache_dir, f"{os.path.basename(path)}.{key}")
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
            squad.write_feature_cache(features, prefix)
    dist.barrier()
    return examples, data, prefix


def run(args) -> int:
    import keras

    from albert import distributed
    from albert.data import squad
    from albert.modeling import AlbertForQuestionAnswering
    from albert.squad_metrics import detect_version, evaluate
    from albert.tokenization import load_tokenizer
    from albert.training import MetricsLogger, set_precision

    dist = distributed.init()
    set_precision(args.precision)
    keras.utils.set_random_seed(args.seed + dist.rank)
    for name in ("train_file", "predict_file"):
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            raise FileNotFoundError(f"--{name} {path} does not exist")
    spm_model = _tokenizer_path(args)
    tokenizer = load_tokenizer(spm_model)
    settings = squad.FeatureSettings(args.max_seq_length, args.doc_stride, args.max_query_length)

    model = model_from_flags(AlbertForQuestionAnswering, args, args.max_seq_length)
    config = model.config
    if config.vocab_size != len(tokenizer):
        raise FlagError(f"the vocabulary {spm_model} has {len(tokenizer)} pieces but the "
                        f"model's vocab_size is {config.vocab_size}")
    metrics = MetricsLogger(args.log_dir, dist)
    xla = xla_plan_from_flags(args, dist)
    if dist.is_chief:
        logger.info("XLA gradient %s, update %s (%s)", "on" if xla.gradient else "off",
                    "on" if xla.update else "off", xla.reason)
    step = 0
    try:
        if args.train_file:
            step = _train(args, model, config, tokenizer, spm_model, settings, dist, metrics,
                          xla)
        if args.predict_file:
            examples, data, prefix = _features(args.predict_file, tokenizer, spm_model,
                                               settings, False, args, dist)
            version = {"squadv1": "v1.1", "squadv2": "v2.0"}.get(args.squad_version) \
                or detect_version(data)
            results = _predict(model, prefix, args, dist, xla.gradient)
            if dist.is_chief:
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
                scores = evaluate(data, predictions,
                                  null_odds if version == "v2.0" else None, version)
                metrics.log("eval", step, {k: float(v) for k, v in scores.items()})
                with open(os.path.join(args.output_dir, "eval_results.json"), "w") as f:
                    json.dump({"version": version, **scores}, f, indent=2)
                print(f"SQuAD {version} on {args.predict_file}: exact "
                      f"{scores.get('exact', scores.get('exact_match')):.2f} F1 "
                      f"{scores['f1']:.2f}; predictions in {args.output_dir}", flush=True)
    finally:
        metrics.close()
    dist.barrier()
    return 0


def _train(args, model, config, tokenizer, spm_model, settings, dist, metrics, xla) -> int:
    import tensorflow as tf

    from albert.data import squad
    from albert.losses import SQUAD_METRICS, squad_loss, squad_metrics
    from albert.optimization import learning_rate_at, make_optimizer
    from albert.training import CheckpointHandler, Trainer, fit, start_state

    _, _, prefix = _features(args.train_file, tokenizer, spm_model, settings, True, args, dist)
    records, parse = squad.feature_dataset(prefix, args.max_seq_length)
    n_features = sum(1 for _ in records)
    batch_size = resolve_batch_size(args, dist.size)
    global_batch = batch_size * dist.size * args.gradient_accumulation_steps
    if n_features < dist.size * batch_size:
        raise FlagError(f"{args.train_file} gives {n_features} features: too few for "
                        f"{dist.size} rank(s) x --per_gpu_batch_size {batch_size}")
    total_steps = args.total_steps or max(1, math.ceil(args.num_train_epochs * n_features
                                                       / global_batch))
    warmup = args.warmup_steps if args.warmup_steps is not None \
        else int(args.warmup_proportion * total_steps)
    optimizer = make_optimizer(args.optimizer, model.trainable_variables, args.weight_decay)
    schedule = lambda step: learning_rate_at(step, args.learning_rate, warmup, total_steps,
                                             args.end_learning_rate, args.decay_power)
    trainer = Trainer(model, squad_loss, optimizer, schedule, dist, metric_names=SQUAD_METRICS,
                      accum_steps=args.gradient_accumulation_steps, precision=args.precision,
                      xla=xla.update, xla_gradient=xla.gradient, eager=args.eager,
                      max_grad_norm=args.max_grad_norm,
                      fp16_allreduce=args.fp16_allreduce)
    checkpoints = CheckpointHandler(args.checkpoint_dir, trainer.trackables(), dist,
                                    keep=args.keep_checkpoints, config=config)
    # A pretraining checkpoint holds the same backbone (model/albert/...); the QA head keeps its
    # fresh initialisation.
    start_state(trainer, checkpoints, load_from=args.load_from,
                checkpoint_path=args.checkpoint_path)
    skip = int(trainer.iterations) * args.gradient_accumulation_steps * batch_size
    data = (records.shard(dist.size, dist.rank)
            .shuffle(10_000, seed=args.seed, reshuffle_each_iteration=True).repeat()
            .skip(skip).batch(batch_size, drop_remainder=True)
            .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(args.gradient_accumulation_steps, drop_remainder=True)
            .prefetch(tf.data.AUTOTUNE))
    if dist.is_chief:
        logger.info("fine-tuning: %d features, %d steps of %d sequences (%d rank(s)), warmup %d",
                    n_features, total_steps, global_batch, dist.size, warmup)
    status = fit(trainer, iter(data), total_steps=total_steps, checkpoints=checkpoints,
                 metrics=metrics, metrics_fn=squad_metrics, sequences_per_update=global_batch,
                 log_frequency=args.log_frequency, checkpoint_frequency=args.checkpoint_frequency,
                 progress=not args.no_progress)
    if status == "stopped":
        if dist.is_chief:
            print(f"stopped at step {int(trainer.step)}; run the same command to resume")
        sys.exit(0)
    if dist.is_chief:
        model.save_pretrained(os.path.join(args.checkpoint_dir, "final"), spm_model=spm_model)
    return int(trainer.step)


def _predict(model, prefix, args, dist, xla: bool) -> dict:
    """This rank's share of the features -> {feature_index: (start, end)}, gathered on rank 0."""
    import tensorflow as tf

    from albert.data import squad

    records, parse = squad.feature_dataset(prefix, args.max_seq_length)
    data = (records.shard(dist.size, dist.rank).batch(args.eval_batch_size)
            .map(parse).prefetch(tf.data.AUTOTUNE))

    @tf.function(jit_compile=xla, reduce_retracing=True)
    def logits(batch):
        out = model({k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")},
                    training=False)
        return out["start_logits"], out["end_logits"]

    local = {}
    for batch in data:
        start, end = logits(batch)
        n = int(tf.reduce_sum(batch["attention_mask"], axis=1).numpy().max())
        for i, fi in enumerate(batch["feature_index"].numpy()):
            # Keep only the non-padded prefix: smaller to gather, and padding is never an answer.
            local[int(fi)] = (start[i, :n].numpy(), end[i, :n].numpy())
    results = {}
    for part in dist.allgather_object(local):
        results.update(part)
    return results


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = parse_args(argv)
    with user_errors():
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
