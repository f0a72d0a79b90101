"""Pretrain ALBERT (MLM + sentence-order prediction) on TFRecords; one process or many.

    python -m albert.run_pretraining --train_dir data/train --model_size base \\
        --spm_model vocab/spiece.model --max_seq_length 512 --per_gpu_batch_size 32 \\
        --total_steps 125000 --warmup_steps 3125 --learning_rate 0.00176 --precision bf16
    horovodrun -np 8 python -m albert.run_pretraining ...       # same flags, 8 processes

Resumes from the latest checkpoint in --checkpoint_dir when there is one (a restarted spot job
continues where it stopped). At the end the model is exported in Hugging Face format to
<checkpoint_dir>/final (with the vocabulary), ready for run_squad --load_from huggingface.
"""

from __future__ import annotations

import argparse
import logging
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

logger = logging.getLogger("albert.run_pretraining")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("data")
    g.add_argument("--train_dir", default="data/train",
                   help="TFRecord directory, glob or comma list, under --filesystem_prefix")
    g.add_argument("--val_dir", default=None, help="validation TFRecords (optional)")
    g.add_argument("--max_seq_length", type=int, default=512)
    g.add_argument("--max_predictions_per_seq", type=int, default=20)
    g.add_argument("--shuffle_buffer", type=int, default=10_000, help="0: no shuffling")
    g.add_argument("--validation_frequency", type=int, default=0,
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


def run(args) -> int:
    import keras
    import tensorflow as tf

    from albert import distributed
    from albert.data.reader import check_record_shapes, pretraining_dataset, resolve_files
    from albert.losses import PRETRAINING_METRICS, pretraining_loss, pretraining_metrics
    from albert.modeling import AlbertForPreTraining
    from albert.optimization import learning_rate_at, make_optimizer
    from albert.training import (
        CheckpointHandler,
        MetricsLogger,
        Trainer,
        fit,
        set_precision,
        start_state,
    )

    dist = distributed.init()
    set_precision(args.precision)
    # Per-rank seeds give each rank its own dropout masks; rank 0's initial weights are
    # broadcast to all ranks below, so initialisation still agrees.
    keras.utils.set_random_seed(args.seed + dist.rank)
    batch_size = resolve_batch_size(args, dist.size)
    if args.total_steps < 1:
        raise FlagError(f"--total_steps must be >= 1, got {args.total_steps}")
    if args.warmup_steps > args.total_steps:
        raise FlagError(f"--warmup_steps ({args.warmup_steps}) exceeds --total_steps "
                        f"({args.total_steps})")
    train_files = resolve_files(args.train_dir, args.filesystem_prefix)
    check_record_shapes(train_files[0], args.max_seq_length, args.max_predictions_per_seq)

    model = model_from_flags(AlbertForPreTraining, args, args.max_seq_length)
    config = model.config
    optimizer = make_optimizer(args.optimizer, model.trainable_variables, args.weight_decay)

    def schedule(step):
        return learning_rate_at(step, args.learning_rate, args.warmup_steps, args.total_steps,
                                args.end_learning_rate, args.decay_power)

    xla = xla_plan_from_flags(args, dist)
    trainer = Trainer(
        model, pretraining_loss, optimizer, schedule, dist,
        metric_names=PRETRAINING_METRICS, accum_steps=args.gradient_accumulation_steps,
        precision=args.precision, xla=xla.update, xla_gradient=xla.gradient, eager=args.eager,
        max_grad_norm=args.max_grad_norm, fp16_allreduce=args.fp16_allreduce,
    )
    checkpoints = CheckpointHandler(args.checkpoint_dir, trainer.trackables(), dist,
                                    keep=args.keep_checkpoints, config=config)
    start_state(trainer, checkpoints, load_from=args.load_from,
                checkpoint_path=args.checkpoint_path,
                load_optimizer_state=args.load_optimizer_state)

    records_done = int(trainer.iterations) * args.gradient_accumulation_steps * batch_size
    dataset = pretraining_dataset(
        args.train_dir, batch_size, args.max_seq_length, args.max_predictions_per_seq,
        filesystem_prefix=args.filesystem_prefix, rank=dist.rank, size=dist.size,
        training=True, seed=args.seed, shuffle_buffer=args.shuffle_buffer,
        skip_records=records_done,
    ).batch(args.gradient_accumulation_steps, drop_remainder=True)

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
    if dist.is_chief:
        params = sum(int(tf.size(v)) for v in model.weights)
        logger.info("ALBERT %s: %.2fM parameters, %d rank(s) x %d sequences x %d accumulation, "
                    "precision %s, XLA gradient %s, update %s (%s)",
                    args.model_config or args.model_size, params / 1e6, dist.size, batch_size,
                    args.gradient_accumulation_steps, args.precision,
                    "on" if xla.gradient else "off", "on" if xla.update else "off", xla.reason)
    try:
        status = fit(
            trainer, iter(dataset), total_steps=args.total_steps, checkpoints=checkpoints,
            metrics=metrics, metrics_fn=pretraining_metrics,
            sequences_per_update=batch_size * args.gradient_accumulation_steps * dist.size,
            log_frequency=args.log_frequency, checkpoint_frequency=args.checkpoint_frequency,
            evaluations=evaluations,
            progress=not args.no_progress,
        )
    finally:
        metrics.close()
    if status == "stopped":
        if dist.is_chief:
            print(f"stopped at step {int(trainer.step)}; checkpoint in {args.checkpoint_dir}; "
                  "run the same command to resume", flush=True)
        return 0
    if dist.is_chief:
        export = os.path.join(args.checkpoint_dir, "final")
        model.save_pretrained(export, spm_model=args.spm_model)
        print(f"done: {int(trainer.step)} steps; Hugging Face export in {export}; "
              f"TensorBoard: tensorboard --logdir {args.log_dir}", flush=True)
    dist.barrier()
    return 0


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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = parse_args(argv)
    with user_errors():
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
