"""Fine-tuning a model on cached features: the wiring every fine-tuning runner shares.

run_squad and run_classifier differ in their features, losses and scores; everything between
"here are the training batches" and "the model is trained" is here: the batch plan and the
number of updates, the optimizer and schedule, the XLA plan (recorded with the run), the Trainer,
checkpoints and the start/resume policy, the input position, the loop, the final export.
"""

from __future__ import annotations

import logging
import math
import os

from albert.flags import FlagError, batch_plan_from_flags, xla_plan_from_flags
from albert.run_spec import started_from

logger = logging.getLogger("albert.finetune")


def fine_tune(args, model, *, loss_fn, metric_names, metrics_fn, examples: int, make_data,
              spm_model: str, dist, metrics, task: str, features: dict, labels=None,
              evaluate=None, what: str = "features", record=None):
    """Fine-tune `model` (resuming the run in --checkpoint_dir when it started the same way).

    make_data(plan, skip_records) -> a tf.data.Dataset of dicts of [accumulation, micro-batch, ...]
    tensors, this rank's share, repeated, skipping `skip_records` of its records first.
    `examples`: training examples (features) in all, for --num_train_epochs. task, features
    (the feature settings) and labels (in id order) enter the run spec (albert.run_spec);
    `record`: extra fields for the run record. evaluate(xla, step) -> scores, when given, runs
    every --eval_frequency updates (the runner scores the final model itself). Returns (status
    "done"|"stopped"|"finished", step, XLA plan).
    """
    from albert.checkpoints import CheckpointHandler, mark_finished, read_run_record, start_state
    from albert.loop import fit
    from albert.optimization import learning_rate_at, make_optimizer
    from albert.run_spec import TASK_FILE, data_files, environment, run_spec, task_card
    from albert.trainer import Trainer

    plan = batch_plan_from_flags(args, dist.size)
    if examples < dist.size * plan.micro_batch:
        raise FlagError(f"{args.train_file} gives {examples} {what}: too few for "
                        f"{dist.size} rank(s) x --per_gpu_batch_size {plan.micro_batch}")
    total_steps = args.total_steps or max(1, math.ceil(args.num_train_epochs * examples
                                                       / plan.global_batch))
    warmup = args.warmup_steps if args.warmup_steps is not None \
        else int(args.warmup_proportion * total_steps)
    optimizer = make_optimizer(args.optimizer, model.trainable_variables, args.weight_decay,
                               bias_correction=args.bias_correction == "on")

    def schedule(step):
        return learning_rate_at(step, args.learning_rate, warmup, total_steps,
                                args.end_learning_rate, args.decay_power, args.lr_decay)

    previous = None
    if dist.is_chief and not args.overwrite_checkpoint_dir:
        previous = read_run_record(args.checkpoint_dir)
    xla = xla_plan_from_flags(args, dist, recorded=(previous or {}).get("xla"))
    if dist.is_chief:
        logger.info("%s", xla.describe())
    spec = run_spec(args, task=task, config=model.config, global_batch=plan.global_batch,
                    total_steps=total_steps, data=data_files([args.train_file]),
                    vocab=spm_model, features=features, labels=labels)
    trainer = Trainer(model, loss_fn, optimizer, schedule, dist, metric_names=metric_names,
                      accum_steps=plan.accumulation, precision=args.precision, xla=xla.update,
                      xla_gradient=xla.gradient, eager=args.eager,
                      max_grad_norm=args.max_grad_norm, fp16_allreduce=args.fp16_allreduce,
                      seed=args.seed)
    checkpoints = CheckpointHandler(args.checkpoint_dir, trainer.trackables(), dist,
                                    keep=args.keep_checkpoints, config=model.config)
    # A pretraining checkpoint holds the same backbone (model/albert/...); the task head keeps
    # its fresh initialisation.
    how = start_state(trainer, checkpoints, load_from=args.load_from,
                      checkpoint_path=args.checkpoint_path,
                      load_optimizer_state=args.load_optimizer_state,
                      overwrite=args.overwrite_checkpoint_dir,
                      record={"started_from": started_from(args), "xla": xla._asdict(),
                              "batch_plan": plan.as_dict(), "total_steps": total_steps,
                              "spec": spec, **environment(), **(record or {}),
                              "finished": False})
    step = int(trainer.step)
    if how == "resumed" and step >= total_steps:
        if dist.is_chief:
            print(f"fine-tuning already finished: {step} of {total_steps} updates in "
                  f"{args.checkpoint_dir}; nothing to train (use a new --checkpoint_dir or "
                  "--overwrite_checkpoint_dir to train again)", flush=True)
        return "finished", step, xla

    batches = checkpoints.open_input(lambda skip: make_data(plan, skip), plan,
                                     int(trainer.iterations) if how == "resumed" else 0, step)
    if dist.is_chief:
        logger.info("fine-tuning: %d %s, %d steps, warmup %d; %s", examples, what, total_steps,
                    warmup, plan.describe(args.max_seq_length, total_steps))
    evaluations = []
    if evaluate is not None and args.eval_frequency:
        def periodic():
            if int(trainer.step) >= total_steps:
                return None  # the runner scores the final model itself, once
            scores = evaluate(xla.gradient, int(trainer.step))
            keep_best(args, model, scores, int(trainer.step), spm_model, dist)
            return scores

        evaluations.append(("eval", args.eval_frequency, periodic))
    status = fit(trainer, batches, total_steps=total_steps, checkpoints=checkpoints,
                 evaluations=evaluations, evaluate_at_end=False,
                 metrics=metrics, metrics_fn=metrics_fn,
                 sequences_per_update=plan.global_batch, log_frequency=args.log_frequency,
                 checkpoint_frequency=args.checkpoint_frequency, progress=not args.no_progress)
    step = int(trainer.step)
    if status == "done":
        if dist.is_chief:
            # With the task card inside: the windows and labels it was tuned with, never a
            # final/ without them.
            model.save_pretrained(os.path.join(args.checkpoint_dir, "final"), spm_model=spm_model,
                                  extra_json={TASK_FILE: task_card(spec)})
        mark_finished(args.checkpoint_dir, step, dist)
    return status, step, xla


_INFERENCE: dict = {}
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def inference_fn(model, xla: bool, outputs: tuple):
    """inputs -> model(inputs, training=False)[each of outputs], traced once per model and XLA
    setting and kept: --eval_frequency evaluates many times, and each new tf.function would trace
    (and under XLA compile) again."""
    import tensorflow as tf

    key = (id(model), xla, outputs)
    if key not in _INFERENCE:
        signature = {k: tf.TensorSpec([None, None], tf.int32) for k in MODEL_INPUTS}

        @tf.function(jit_compile=xla, input_signature=[signature])
        def run(inputs):
            out = model(inputs, training=False)
            return tuple(out[name] for name in outputs)

        _INFERENCE[key] = run
    return _INFERENCE[key]


# The metrics each fine-tuner's evaluation reports (some only for some data: f1 of a
# classifier for two labels, exact_match for SQuAD v1.1, HasAns_/NoAns_/best_ for v2.0); for all
# of them but loss, higher is better.
REPORTED = {
    "classifier": ("accuracy", "mcc", "f1", "loss", "pearson", "spearman"),
    "squad": ("exact", "f1", "exact_match", "HasAns_exact", "HasAns_f1", "NoAns_exact",
              "NoAns_f1", "best_exact", "best_f1"),
}
LOWER_IS_BETTER = ("loss",)


def check_keep_best(args, evaluated_file: str | None, flag: str, runner: str) -> None:
    """--keep_best METRIC, checked before any training: a metric this runner's evaluation
    reports, and something to score."""
    metric = getattr(args, "keep_best", None)
    if not metric:
        return
    if metric not in REPORTED[runner]:
        raise FlagError(f"--keep_best {metric} is no metric this evaluation reports; one of "
                        f"{', '.join(REPORTED[runner])}")
    if not evaluated_file:
        raise FlagError(f"--keep_best {metric} needs {flag} to evaluate")


def keep_best(args, model, scores: dict | None, step: int, spm_model: str, dist) -> bool:
    """--keep_best METRIC: when `scores` beat every evaluation of this run so far (recorded in its
    run.json under "best"), the model goes to <checkpoint_dir>/best (a Hugging Face export with
    its task card). Returns whether it did (rank 0)."""
    from albert.checkpoints import read_run_record, write_run_record
    from albert.run_spec import TASK_FILE, read_task_card

    metric = getattr(args, "keep_best", None)
    if not metric or not dist.is_chief or not scores:
        return False
    if metric not in scores:
        logger.warning("--keep_best %s: this evaluation reports only %s; nothing kept", metric,
                       ", ".join(sorted(scores)))
        return False
    value = float(scores[metric])
    if not math.isfinite(value):
        return False  # a NaN correlation (one class predicted) is no model to keep
    record = read_run_record(args.checkpoint_dir) or {}
    best = record.get("best")
    if best and best.get("metric") == metric and math.isfinite(best.get("value", math.nan)):
        better = value < best["value"] if metric in LOWER_IS_BETTER else value > best["value"]
        if not better:
            return False
    target = os.path.join(args.checkpoint_dir, "best")
    card = read_task_card(args.checkpoint_dir)
    model.save_pretrained(target, spm_model=spm_model,
                          extra_json={TASK_FILE: card} if card else None)
    record["best"] = {"metric": metric, "value": value, "step": step}
    write_run_record(args.checkpoint_dir, record)
    logger.info("best %s so far: %.4f at step %d, kept in %s", metric, value, step, target)
    return True
