"""One training update, shared by every runner.

One update (`Trainer.train_step`) is:
  for each of `accum_steps` micro-batches: loss and gradients in one function
  -> average over micro-batches -> average over ranks (one grouped allreduce, optionally fp16)
  -> unscale -> finite check -> clip by global norm -> optimizer update.
Horovod ops cannot run inside jit_compile, so the micro-batch gradient and the update are two
separately XLA-compiled functions around the allreduce (see albert.train.xla_plan for when the
gradient is not).

Dynamic loss scaling runs whenever gradients pass through fp16: under --precision fp16, and
under bf16/fp32 with --fp16_allreduce (Horovod has no bfloat16 allreduce, and unscaled gradients
below ~6e-5 lose precision in fp16 and below ~6e-8 vanish). An update with any inf/NaN gradient is
skipped (counted; `step`, which drives the learning-rate schedule, does not advance) and the scale
halves; after `growth_interval` finite updates in a row it doubles. A gradient that is not finite
at loss scale 1 (always the scale without loss scaling) cannot be rescued by a smaller scale: the
model has diverged, and the update says so (`diverged`) for the loop to stop the run.

Dropout masks are drawn from a key of (seed, rank, update attempt, micro-batch) (see
albert.model.dropout): a resumed run draws the same masks as the straight run, and with
`recompute="layers"` (albert.model.recompute.set_recompute) the forward pass recomputed during the
backward pass draws the masks the first one drew, so the gradients are those without it.

Loss functions return (loss, sums): `loss` is a mean over the micro-batch's examples, and `sums` are
additive counts (loss sums, correct predictions, ...) so metrics aggregate exactly over
micro-batches, steps and ranks.
"""

from __future__ import annotations

import tensorflow as tf

from albert.errors import SettingError
from albert.model.dropout import dropout_key
from albert.model.recompute import set_recompute
from albert.train.xla_plan import XLA_ON, XlaPlan


def _dense_gradient(g):
    # The word-embedding gradient is IndexedSlices (from tf.gather); allreduce and clipping want
    # dense tensors, and the table is small in ALBERT (V x E).
    return tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g


class Trainer:
    """Holds the model, optimizer, schedule and training-state variables; runs updates."""

    def __init__(self, model, loss_fn, optimizer, schedule, dist, *,
                 metric_names, accum_steps: int = 1, precision: str = "fp32", xla: XlaPlan = XLA_ON,
                 max_grad_norm: float = 1.0, fp16_allreduce: bool = False, seed: int = 0,
                 initial_loss_scale: float = 2.0 ** 15, growth_interval: int = 2000,
                 recompute: str | None = None):
        if accum_steps < 1:
            raise SettingError(f"{{accum_steps}} must be >= 1, got {accum_steps}",
                               ("accum_steps", "gradient_accumulation_steps"))
        if recompute is not None:  # None: as the model was set (set_recompute)
            set_recompute(model, recompute)  # before the gradient function is traced
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.schedule, self.dist = schedule, dist
        self.accum_steps = accum_steps
        self.loss_scaling = precision == "fp16" or fp16_allreduce
        self.max_grad_norm = max_grad_norm
        self.fp16_allreduce = fp16_allreduce
        self.growth_interval = growth_interval
        self.seed = int(seed)
        self.variables = list(model.trainable_variables)
        self.metric_names = tuple(metric_names)
        # Training state: all checkpointed.
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name="iterations")
        self.skipped = tf.Variable(0, dtype=tf.int64, trainable=False, name="skipped_updates")
        self.loss_scale = tf.Variable(initial_loss_scale if self.loss_scaling else 1.0,
                                      dtype=tf.float32, trainable=False, name="loss_scale")
        self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="good_steps")
        # Per-rank metric accumulators since the last log line (not checkpointed).
        self.sums = {k: tf.Variable(0.0, trainable=False) for k in self.metric_names}
        self.grad_norm = tf.Variable(0.0, trainable=False)
        if xla.eager:
            self._grad_fn, self._step_fn = self._grads, self._train_step
            self._apply_fn, self._eval_fn = self._apply, self._eval
        else:
            # Two XLA clusters around the allreduce (which XLA cannot hold): the micro-batch
            # gradients, and everything after the allreduce (unscale, clip, LAMB, counters).
            self._grad_fn = tf.function(self._grads, jit_compile=xla.gradient,
                                        reduce_retracing=True)
            self._apply_fn = tf.function(self._apply, jit_compile=xla.update,
                                         reduce_retracing=True)
            self._step_fn = tf.function(self._train_step, reduce_retracing=True)
            self._eval_fn = tf.function(self._eval, jit_compile=xla.gradient,
                                        reduce_retracing=True)

    # -- state ------------------------------------------------------------------------------------

    def state_variables(self):
        """Everything rank 0 broadcasts before the first update."""
        return (list(self.model.weights) + list(self.optimizer.slot_variables)
                + [self.step, self.iterations, self.skipped, self.loss_scale, self.good_steps])

    def trackables(self) -> dict:
        """What a checkpoint holds (dropout needs no state: its masks are keyed)."""
        return dict(model=self.model, optimizer=self.optimizer, step=self.step,
                    iterations=self.iterations, skipped_updates=self.skipped,
                    loss_scale=self.loss_scale, good_steps=self.good_steps)

    def broadcast_state(self) -> None:
        self.dist.broadcast_variables(self.state_variables(), root_rank=0)

    # -- the update -------------------------------------------------------------------------------

    def dropout_key(self, micro_batch):
        """The stateless seed of this rank's micro-batch in the current update attempt."""
        key = tf.constant([self.seed, 0], tf.int64)
        for part in (tf.constant(self.dist.rank, tf.int64), self.iterations,
                     tf.cast(micro_batch, tf.int64)):
            key = tf.random.experimental.stateless_fold_in(key, part)
        return key

    def _grads(self, batch, key):
        with tf.GradientTape() as tape, dropout_key(key):
            loss, sums = self.loss_fn(self.model, batch, training=True)
            scaled = loss * self.loss_scale
        grads = [_dense_gradient(g) for g in tape.gradient(scaled, self.variables)]
        grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, self.variables,
                                                                      strict=True)]
        return grads, sums

    def _train_step(self, batches):
        """batches: a dict of [accum_steps, batch, ...] tensors."""
        first = tf.nest.map_structure(lambda t: t[0], batches)
        grads, sums = self._grad_fn(first, self.dropout_key(0))
        for i in tf.range(1, self.accum_steps):
            micro = tf.nest.map_structure(lambda t, i=i: t[i], batches)
            g, s = self._grad_fn(micro, self.dropout_key(i))
            grads = [a + b for a, b in zip(grads, g, strict=True)]
            sums = {k: sums[k] + s[k] for k in sums}
        if self.accum_steps > 1:
            grads = [g / self.accum_steps for g in grads]
        grads = self.dist.allreduce_mean(grads, fp16_compression=self.fp16_allreduce)
        return self._apply_fn(grads, sums)

    def _apply(self, grads, sums):
        """Averaged (still loss-scaled) gradients -> one optimizer update, or a skip."""
        grads = [tf.cast(g, tf.float32) / self.loss_scale for g in grads]
        grad_norm = tf.linalg.global_norm(grads)
        finite = tf.math.is_finite(grad_norm)
        if self.max_grad_norm > 0:
            grads, _ = tf.clip_by_global_norm(grads, self.max_grad_norm, use_norm=grad_norm)
        lr = self.schedule(self.step)
        diverged = tf.logical_and(tf.logical_not(finite), self.loss_scale <= 1.0)

        def apply():
            self.optimizer.apply(grads, self.variables, lr)
            self.step.assign_add(1)
            return tf.constant(True)

        def skip():
            self.skipped.assign_add(1)
            return tf.constant(False)

        applied = tf.cond(finite, apply, skip)
        if self.loss_scaling:
            self._update_loss_scale(finite)
        self.iterations.assign_add(1)
        for k in self.metric_names:
            self.sums[k].assign_add(tf.cast(sums[k], tf.float32))
        self.grad_norm.assign(tf.where(finite, grad_norm, -1.0))
        return {"applied": applied, "learning_rate": lr, "diverged": diverged}

    def _update_loss_scale(self, finite):
        def grow():
            good = self.good_steps.assign_add(1)
            return tf.cond(
                good >= self.growth_interval,
                lambda: tf.group(self.loss_scale.assign(self.loss_scale * 2.0),
                                 self.good_steps.assign(0)),
                tf.no_op,
            )

        def shrink():
            return tf.group(self.loss_scale.assign(tf.maximum(self.loss_scale / 2.0, 1.0)),
                            self.good_steps.assign(0))

        tf.cond(finite, grow, shrink)

    def train_step(self, batches):
        return self._step_fn(batches)

    # -- metrics ----------------------------------------------------------------------------------

    def pop_sums(self) -> dict:
        """Metric sums since the last call, summed over ranks; resets the accumulators."""
        values = self.dist.allreduce_sum([self.sums[k].read_value() for k in self.metric_names])
        out = {k: float(v) for k, v in zip(self.metric_names, values, strict=True)}
        for var in self.sums.values():
            var.assign(0.0)
        return out

    def weight_norm(self) -> float:
        return float(tf.linalg.global_norm([tf.convert_to_tensor(v) for v in self.variables]))

    def _eval(self, batch):
        _, sums = self.loss_fn(self.model, batch, training=False)
        return sums

    def evaluate(self, dataset) -> dict:
        """Metric sums over this rank's part of `dataset`, then summed over all ranks."""
        totals = {k: 0.0 for k in self.metric_names}
        for batch in dataset:
            sums = self._eval_fn(batch)
            for k in self.metric_names:
                totals[k] += float(sums[k])
        values = self.dist.allreduce_sum([tf.constant(totals[k]) for k in self.metric_names])
        return {k: float(v) for k, v in zip(self.metric_names, values, strict=True)}
