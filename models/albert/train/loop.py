"""The training loop shared by every runner, and the stop signal it checks between updates."""

from __future__ import annotations

import logging
import signal
import sys
import time

import tensorflow as tf
from tqdm import tqdm

from albert.errors import DataError, SettingError

logger = logging.getLogger("albert.train.loop")


class DivergedError(SettingError):
    """The gradients stopped being finite (at loss scale 1): the learning rate is too high for
    the model and batch. Without this stop every later update is skipped and the run turns
    over its data forever without advancing."""


def diverged(trainer, step: int, learning_rate: float, last_saved: int) -> DivergedError:
    """The one line that ends a diverged run: where, the weights' size, what to change, and what
    was kept."""
    scale = " even at loss scale 1" if getattr(trainer, "loss_scaling", False) else ""
    kept = (f"the checkpoint at step {last_saved} holds the run before it" if last_saved
            else "no checkpoint was saved")
    return DivergedError(
        f"training diverged at update {step + 1}: its gradients are not finite (inf or NaN){scale}"
        f", and the weights' norm is {trainer.weight_norm():.3g}. The learning rate is most "
        f"likely too high for this model and batch (it was {learning_rate:.3g} at this update): "
        f"start again with a lower {{learning_rate}} (or a longer warmup), with "
        f"{{overwrite_checkpoint_dir}} or a new {{checkpoint_dir}}; {kept}.",
        "learning_rate", "overwrite_checkpoint_dir", "checkpoint_dir")


class StopSignal:
    """Turns SIGTERM (spot interruption, SageMaker stop) into a flag the loop checks between steps,
    so the run saves a checkpoint and exits cleanly instead of dying mid-update."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum, frame):
        self.requested = True
        print("SIGTERM received: saving a checkpoint and stopping", file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        signal.signal(signal.SIGTERM, self._previous or signal.SIG_DFL)


def fit(trainer, batches, *, total_steps: int, checkpoints, metrics, metrics_fn,
        sequences_per_update: int, log_frequency: int = 10, checkpoint_frequency: int = 1000,
        evaluations=(), xla: bool = False, on_scores=None, progress: bool = True,
        explain_data_error=None) -> str:
    """Run updates until `trainer.step` reaches total_steps. Returns "done" or "stopped".

    batches: an iterator of dicts of [accum, batch, ...] tensors. evaluations: the run's
    albert.train.evaluation.Evaluation list, each run (with `xla`: the gradient's plan) when due,
    before the last update (the caller scores the final model), its scores logged under its
    prefix and handed to on_scores(evaluation, scores, step). Checkpoints every
    checkpoint_frequency steps (0: only at the end), at the end, and on SIGTERM. A corrupt input
    record (DataLossError) saves the progress made so far, then raises explain_data_error(error).
    """
    if log_frequency < 1:
        raise SettingError(f"{{log_frequency}} must be at least 1, got {log_frequency}",
                           "log_frequency")
    dist = trainer.dist
    step = int(trainer.step)
    bar = tqdm(total=total_steps, initial=step, unit="step", mininterval=2.0, file=sys.stderr,
               disable=not (progress and dist.is_chief))
    last_saved = step
    # seq/s counts time spent fetching data and updating, not validating or checkpointing, nor
    # the first update of the process, which traces and compiles the step (seconds to minutes).
    window_time, window_updates = 0.0, 0
    first = True
    with StopSignal() as stop:
        while step < total_steps:
            started = time.time()
            try:
                batch = next(batches)
            except StopIteration:
                raise DataError("the training data ran out before --total_steps") from None
            except tf.errors.DataLossError as e:
                bar.close()
                if last_saved != step:
                    logger.warning("corrupt input at step %d: saving the progress first", step)
                    checkpoints.save(step)
                if explain_data_error is not None:
                    raise explain_data_error(e) from None
                raise
            result = trainer.train_step(batch)
            new_step = int(trainer.step)  # waits for the update to finish
            if first:
                first = False
                if dist.is_chief:
                    logger.info("first update (tracing and compiling the step): %.1f s",
                                time.time() - started)
            else:
                window_time += time.time() - started
                window_updates += 1
            advanced = new_step > step
            if not advanced and bool(result.get("diverged", False)):
                bar.close()
                raise diverged(trainer, step, float(result["learning_rate"]), last_saved)
            step = new_step
            bar.update(1 if advanced else 0)
            if advanced and step % log_frequency == 0:
                values = metrics_fn(trainer.pop_sums())
                values.update(
                    learning_rate=float(result["learning_rate"]),
                    loss_scale=float(trainer.loss_scale),
                    grad_norm=float(trainer.grad_norm),
                    weight_norm=trainer.weight_norm(),
                    skipped_updates=int(trainer.skipped),
                )
                if window_updates:  # none when the only update since the last line compiled
                    values["seq_per_sec"] = window_updates * sequences_per_update / window_time
                bar.clear()
                metrics.log("train", step, values)
                window_time, window_updates = 0.0, 0
            for evaluation in evaluations:
                if advanced and evaluation.due(step, total_steps):
                    scores = evaluation(xla, step)
                    if scores:  # None or {}: nothing to log (not this rank)
                        metrics.log(evaluation.prefix, step, scores)
                    if on_scores is not None:
                        on_scores(evaluation, scores, step)
            if advanced and checkpoint_frequency and step % checkpoint_frequency == 0:
                checkpoints.save(step)
                last_saved = step
            stop_now = stop.requested
            if dist.size > 1:  # every rank stops at the same update
                stop_now = dist.allreduce_sum([tf.constant(float(stop_now))])[0] > 0
            if stop_now:
                if last_saved != step:
                    checkpoints.save(step)
                bar.close()
                return "stopped"
    bar.close()
    if last_saved != step:
        checkpoints.save(step)
    return "done"
