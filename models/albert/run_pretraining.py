"""Pretrain ALBERT (MLM + sentence-order prediction) on TFRecords; one process or many.

    python -m albert.run_pretraining --train_dir data/train --model_size base \\
        --spm_model vocab/spiece.model --max_seq_length 512 --per_gpu_batch_size 32 \\
        --total_steps 125000 --warmup_steps 3125 --learning_rate 0.00176 --precision bf16
    horovodrun -np 8 python -m albert.run_pretraining ...       # same flags, 8 processes

Resumes from the latest checkpoint in --checkpoint_dir when the run there was started the same way
(a restarted spot job continues where it stopped, reading on from each rank's saved input
position); a different start is refused. At the end the model is exported in Hugging Face format to
<checkpoint_dir>/final (with the vocabulary), ready for run_squad --load_from pretrained.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys

from albert.flags import (
    HelpFormatter,
    add_model_flags,
    add_training_flags,
    batch_plan_from_flags,
    check_training_flags,
    model_from_flags,
    plan_ranks,
    run_main,
    xla_plan_from_flags,
)
from albert.memory import choose_auto_batch, memory_plan_from_flags, plan_only_lines

logger = logging.getLogger("albert.run_pretraining")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=HelpFormatter)
    g = p.add_argument_group("data")
    g.add_argument("--train_dir", default="data/train",
                   help="TFRecord directory, glob or comma list, under --filesystem_prefix")
    g.add_argument("--val_dir", default=None, help="validation TFRecords (optional)")
    g.add_argument("--max_seq_length", type=int, default=512)
    g.add_argument("--max_predictions_per_seq", type=int, default=20)
    g.add_argument("--shuffle_buffer", type=int, default=10_000, help="0: no shuffling")
    g.add_argument("--skip_corrupt_records", action="store_true",
                   help="read each damaged TFRecord file up to its first bad record (counted in "
                        "a warning at start) instead of stopping; `python -m albert.check_records` "
                        "lists damaged files")
    g.add_argument("--validation_frequency", "--eval_frequency", type=int, default=0,
                   help="validate every N steps (and at the end) when --val_dir is set")
    g = p.add_argument_group("SQuAD during pretraining (as aws-samples' --squad_frequency)")
    g.add_argument("--squad_frequency", type=int, default=0,
                   help="every N steps (and at the end), fine-tune a copy briefly on "
                        "--squad_train_file and log dev EM/F1 under squad/ (0: off)")
    g.add_argument("--squad_train_file", default=None)
    g.add_argument("--squad_predict_file", default=None)
    g.add_argument("--squad_steps", type=int, default=300)
    g.add_argument("--squad_max_seq_length", type=int, default=384)
    g.add_argument("--squad_batch_size", type=int, default=16)
    g.add_argument("--squad_learning_rate", type=float, default=5e-5)
    add_model_flags(p)
    add_training_flags(p, learning_rate=0.00176, batch=32, optimizer="lamb",
                       run_name="pretraining")
    args = p.parse_args(argv)
    if args.total_steps is None:
        p.error("--total_steps is required")
    if args.squad_frequency and not (args.squad_train_file and args.squad_predict_file
                                     and args.spm_model):
        p.error("--squad_frequency needs --squad_train_file, --squad_predict_file and "
                "--spm_model")
    return args


def plan_only(args) -> int:
    """--plan_only: the batch plan for --plan_ranks ranks and the memory plan per GPU, printed;
    nothing else runs."""
    for line in plan_only_lines(args, plan_ranks(args), head="pretraining",
                                total_steps=args.total_steps):
        print(line, flush=True)
    return 0


def run(args) -> int:
    check_training_flags(args)
    if args.plan_only:
        return plan_only(args)

    import keras
    import tensorflow as tf

    from albert import distributed
    from albert.checkpoints import (
        CheckpointHandler,
        mark_finished,
        read_run_record,
        start_state,
    )
    from albert.data.reader import (
        DataError,
        check_all_record_shapes,
        check_ranks_have_records,
        count_nonempty_files,
        data_loss_message,
        pretraining_dataset,
        resolve_files,
        shard_files,
    )
    from albert.loop import fit
    from albert.losses import PRETRAINING_METRICS, pretraining_loss, pretraining_metrics
    from albert.modeling import AlbertForPreTraining, set_recompute
    from albert.optimization import learning_rate_at, make_optimizer
    from albert.precision import set_precision
    from albert.run_logging import MetricsLogger
    from albert.run_spec import data_files, environment, run_spec, started_from
    from albert.trainer import Trainer

    dist = distributed.init()
    set_precision(args.precision)
    # Rank 0's initial weights are broadcast to every rank; dropout masks are keyed by rank.
    keras.utils.set_random_seed(args.seed)
    if args.per_gpu_batch_size != "auto":
        batch_plan_from_flags(args, dist.size)  # batch flags that cannot work stop here
    # Checked on every rank before anything is built, so a bad file is one error, not a crash
    # at the first validation or a rank that hangs the others with nothing to read.
    train_files = resolve_files(args.train_dir, args.filesystem_prefix)
    check_all_record_shapes(train_files, args.max_seq_length, args.max_predictions_per_seq)
    my_files = shard_files(train_files, dist.rank, dist.size,
                           what=f"files matching {args.train_dir!r}")
    check_ranks_have_records(dist.allgather_object(count_nonempty_files(my_files)), train_files,
                             dist.size)
    if args.val_dir:
        val_files = resolve_files(args.val_dir, args.filesystem_prefix)
        empty = check_all_record_shapes(val_files, args.max_seq_length,
                                        args.max_predictions_per_seq)
        if len(empty) == len(val_files):
            raise DataError(f"--val_dir {args.val_dir!r}: all {len(val_files)} file(s) are "
                            "empty, so validation would report nothing (write a validation "
                            "set with create_pretraining_data --validation_fraction, or drop "
                            "--val_dir)")

    model = model_from_flags(AlbertForPreTraining, args, args.max_seq_length)
    config = model.config
    from albert.data.reader import check_token_ids  # ids past the embedding table: stop here

    check_token_ids([*train_files, *(val_files if args.val_dir else [])], config.vocab_size,
                    args.spm_model)
    set_recompute(model, args.recompute)

    def schedule(step):
        return learning_rate_at(step, args.learning_rate, args.warmup_steps, args.total_steps,
                                args.end_learning_rate, args.decay_power, args.lr_decay)

    previous = None
    if dist.is_chief and not args.overwrite_checkpoint_dir:
        previous = read_run_record(args.checkpoint_dir)
    xla = xla_plan_from_flags(args, dist, recorded=(previous or {}).get("xla"))
    on_gpu = bool(tf.config.list_physical_devices("GPU"))
    auto_line = None
    if args.per_gpu_batch_size == "auto":
        auto_line = choose_auto_batch(args, model, dist, loss="pretraining",
                                      loss_fn=pretraining_loss, head="pretraining",
                                      xla_gradient=xla.gradient, on_gpu=on_gpu,
                                      recorded=(previous or {}).get("batch_plan"))
    plan = batch_plan_from_flags(args, dist.size)
    batch_size, accum = plan.micro_batch, plan.accumulation
    memory = memory_plan_from_flags(args, config, plan, head="pretraining",
                                    device="gpu" if on_gpu else "cpu")
    optimizer = make_optimizer(args.optimizer, model.trainable_variables, args.weight_decay,
                               bias_correction=args.bias_correction == "on")
    trainer = Trainer(
        model, pretraining_loss, optimizer, schedule, dist,
        metric_names=PRETRAINING_METRICS, accum_steps=accum, precision=args.precision,
        xla=xla.update, xla_gradient=xla.gradient, eager=args.eager,
        max_grad_norm=args.max_grad_norm, fp16_allreduce=args.fp16_allreduce, seed=args.seed,
    )
    checkpoints = CheckpointHandler(args.checkpoint_dir, trainer.trackables(), dist,
                                    keep=args.keep_checkpoints, config=config)
    how = start_state(trainer, checkpoints, load_from=args.load_from,
                      checkpoint_path=args.checkpoint_path,
                      load_optimizer_state=args.load_optimizer_state,
                      overwrite=args.overwrite_checkpoint_dir,
                      record={"started_from": started_from(args), "xla": xla._asdict(),
                              "batch_plan": plan.as_dict(), "total_steps": args.total_steps,
                              "spec": run_spec(
                                  args, task="pretraining", config=config,
                                  global_batch=plan.global_batch, total_steps=args.total_steps,
                                  data=data_files(train_files),
                                  vocab=args.spm_model,
                                  features={"max_seq_length": args.max_seq_length,
                                            "max_predictions_per_seq":
                                                args.max_predictions_per_seq,
                                            "shuffle_buffer": args.shuffle_buffer}),
                              **environment(), "finished": False})
    step = int(trainer.step)
    if dist.is_chief:
        params = sum(int(tf.size(v)) for v in model.weights)
        logger.info("ALBERT %s: %.2fM parameters, precision %s, %s",
                    args.model_config or args.model_size, params / 1e6, args.precision,
                    xla.describe())
        if auto_line:
            logger.info("%s", auto_line)
        logger.info("%s", plan.describe(args.max_seq_length, args.total_steps))
        logger.info("%s", memory.describe())
    if how == "resumed" and step >= args.total_steps:
        export = _export_final(model, args, dist)
        if dist.is_chief:
            print(f"this run already finished: {step} of --total_steps {args.total_steps} "
                  f"updates in {args.checkpoint_dir}; nothing to train (Hugging Face export in "
                  f"{export}). Raise --total_steps to train on, or use a new --checkpoint_dir "
                  "or --overwrite_checkpoint_dir to train again.", flush=True)
        return 0

    def training_data(skip_records=0):
        return pretraining_dataset(
            args.train_dir, batch_size, args.max_seq_length, args.max_predictions_per_seq,
            filesystem_prefix=args.filesystem_prefix, rank=dist.rank, size=dist.size,
            training=True, seed=args.seed, shuffle_buffer=args.shuffle_buffer,
            skip_records=skip_records, skip_corrupt=args.skip_corrupt_records,
        ).batch(accum, drop_remainder=True)

    batches = checkpoints.open_input(training_data, plan,
                                     int(trainer.iterations) if how == "resumed" else 0, step)

    evaluations = []
    if args.val_dir:
        val_data = pretraining_dataset(
            args.val_dir, batch_size, args.max_seq_length, args.max_predictions_per_seq,
            filesystem_prefix=args.filesystem_prefix, rank=dist.rank, size=dist.size,
            training=False,
        )
        evaluations.append(("val", args.validation_frequency,
                            lambda: pretraining_metrics(trainer.evaluate(val_data))))
    if args.squad_frequency:
        evaluations.append(("squad", args.squad_frequency,
                            lambda: squad_during_pretraining(model, args, dist)))

    metrics = MetricsLogger(args.log_dir, dist)
    try:
        status = fit(
            trainer, batches, total_steps=args.total_steps, checkpoints=checkpoints,
            metrics=metrics, metrics_fn=pretraining_metrics,
            sequences_per_update=plan.global_batch,
            log_frequency=args.log_frequency, checkpoint_frequency=args.checkpoint_frequency,
            evaluations=evaluations, progress=not args.no_progress,
            explain_data_error=lambda e: DataError(data_loss_message(
                e, my_files, args.train_dir, args.filesystem_prefix)),
        )
    finally:
        metrics.close()
    if status == "stopped":
        if dist.is_chief:
            print(f"stopped at step {int(trainer.step)}; checkpoint in {args.checkpoint_dir}; "
                  "run the same command to resume", flush=True)
        return 0
    export = _export_final(model, args, dist)
    mark_finished(args.checkpoint_dir, int(trainer.step), dist)
    if dist.is_chief:
        print(f"done: {int(trainer.step)} steps; Hugging Face export in {export}; "
              f"TensorBoard: tensorboard --logdir {shlex.quote(args.log_dir)}", flush=True)
    dist.barrier()
    return 0


def _export_final(model, args, dist) -> str:
    export = os.path.join(args.checkpoint_dir, "final")
    if dist.is_chief:
        model.save_pretrained(export, spm_model=args.spm_model)
    return export


def squad_during_pretraining(model, args, dist) -> dict:
    """Rank 0 exports the current weights and fine-tunes a copy on SQuAD in a child process
    (one process, the same device), returning its dev scores; other ranks return at once and
    wait for rank 0 at the next allreduce."""
    import json
    import subprocess
    import tempfile

    if not dist.is_chief:
        return {}
    with tempfile.TemporaryDirectory(prefix="squad-eval-") as tmp:
        model.save_pretrained(os.path.join(tmp, "model"), spm_model=args.spm_model)
        cmd = [
            sys.executable, "-m", "albert.run_squad", "--load_from", "huggingface",
            "--checkpoint_path", os.path.join(tmp, "model"),
            "--train_file", args.squad_train_file, "--predict_file", args.squad_predict_file,
            "--total_steps", str(args.squad_steps), "--per_gpu_batch_size",
            str(args.squad_batch_size), "--learning_rate", str(args.squad_learning_rate),
            "--max_seq_length", str(args.squad_max_seq_length), "--precision", args.precision,
            "--output_dir", os.path.join(tmp, "out"), "--checkpoint_dir",
            os.path.join(tmp, "ckpt"), "--log_dir", os.path.join(tmp, "logs"),
            "--cache_dir", os.path.join(args.checkpoint_dir, "squad_cache"), "--no_progress",
            "--log_frequency", str(max(args.squad_steps, 1)),
            "--xla", "off" if args.skip_xla or args.eager else args.xla,
            "--recompute", args.recompute,
        ]
        # The child is a single process: hide the launcher's rank variables from it.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("HOROVOD_", "OMPI_", "PMI_", "PMIX_"))}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            logger.warning("SQuAD evaluation failed (exit %d): %s", proc.returncode,
                           proc.stderr.strip().splitlines()[-1:] or "")
            return {}
        with open(os.path.join(tmp, "out", "eval_results.json")) as f:
            scores = json.load(f)
    return {k: float(v) for k, v in scores.items() if isinstance(v, int | float)}


def main(argv=None) -> int:
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
