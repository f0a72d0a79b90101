"""The training machinery shared by run_pretraining and run_squad.

One update (`Trainer.train_step`) is:
  for each of `accum_steps` micro-batches: loss and gradients in one function
  -> average over micro-batches -> average over ranks (one grouped allreduce, optionally fp16)
  -> unscale (fp16) -> finite check -> clip by global norm -> optimizer update.
Horovod ops cannot run inside jit_compile, so the micro-batch gradient and the update are two
separately XLA-compiled functions around the allreduce (see `XlaPlan` for when the gradient is not).

fp16 uses a dynamic loss scale: an update with any inf/NaN gradient is skipped (counted; `step`,
which drives the learning-rate schedule, does not advance) and the scale halves; after
`growth_interval` finite updates in a row it doubles.

Loss functions return (loss, sums): `loss` is a mean over the micro-batch's examples, and `sums` are
additive counts (loss sums, correct predictions, ...) so metrics aggregate exactly over
micro-batches, steps and ranks.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import signal
import sys
import time
from typing import NamedTuple

import keras
import tensorflow as tf

from albert.distributed import Distributed

logger = logging.getLogger("albert.training")

PRECISIONS = ("fp32", "fp16", "bf16")
XLA_MODES = ("auto", "on", "off")
COMPUTE_DTYPES = {"fp32": tf.float32, "fp16": tf.float16, "bf16": tf.bfloat16}


@functools.cache
def _matmul_chain(dtype, jit: bool, n: int, chain: int):
    a = tf.cast(tf.random.normal((n, n)), dtype)
    scale = tf.cast(1.0 / n, dtype)

    @tf.function(jit_compile=jit)
    def chain_fn(x):
        for _ in range(chain):
            x = tf.matmul(x, a) * scale
        return x

    chain_fn(a).numpy()  # compile and warm up
    return chain_fn, a


def matmul_flops(dtype, jit: bool, n: int = 1024, chain: int = 10, repeats: int = 3) -> float:
    """Best-of-`repeats` FLOP/s of a chain of n x n matmuls, by TensorFlow's kernels (oneDNN on
    x86 CPUs, cuBLAS on GPUs) or, with jit, by XLA's."""
    chain_fn, a = _matmul_chain(dtype, jit, n, chain)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        chain_fn(a).numpy()
        best = max(best, chain * 2 * n ** 3 / (time.perf_counter() - start))
    return best


class XlaPlan(NamedTuple):
    """Which of the two step functions XLA compiles, and why (for the log line)."""
    gradient: bool
    update: bool
    reason: str


def choose_xla(mode: str, precision: str, dist: Distributed | None = None) -> XlaPlan:
    """--xla on/off compile both functions or neither. auto compiles the update always (it is
    elementwise work that XLA fuses) and the gradient wherever XLA's matmuls are the fast ones:
    on a GPU always; on a CPU only when XLA's matmul beats TensorFlow's oneDNN kernel in a ~3 s
    probe. The probe is what decides because the answer is per CPU: oneDNN won on an AVX-512
    Xeon (2.48 vs 2.18 seq/s ALBERT-base fp32; bf16 2x, as oneDNN's bf16 matmul ran at 450-540
    GFLOP/s and XLA's at 160-210), XLA's matmul won on an AMD EPYC. Rank 0's choice is used on
    every rank."""
    if mode not in XLA_MODES:
        raise ValueError(f"--xla must be one of {XLA_MODES}, got {mode!r}")
    if mode != "auto":
        on = mode == "on"
        return XlaPlan(on, on, f"--xla {mode}")
    if tf.config.list_physical_devices("GPU"):
        return XlaPlan(True, True, "auto: GPU")
    dtype = COMPUTE_DTYPES[precision]
    xla = onednn = 0.0
    for _ in range(4):  # interleaved, best of each: a shared host's speed drifts
        xla = max(xla, matmul_flops(dtype, True, repeats=2))
        onednn = max(onednn, matmul_flops(dtype, False, repeats=2))
    if dist is not None and dist.size > 1:
        xla, onednn = dist.allgather_object((xla, onednn))[0]
    return XlaPlan(xla > onednn, True,
                   f"auto: CPU {dtype.name} matmul {xla / 1e9:.0f} GFLOP/s under XLA, "
                   f"{onednn / 1e9:.0f} GFLOP/s by TensorFlow's kernels")


def set_precision(precision: str) -> None:
    """Set the Keras dtype policy; call before building the model."""
    policy = {"fp32": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}.get(precision)
    if policy is None:
        raise ValueError(f"--precision must be one of {PRECISIONS}, got {precision!r}")
    keras.mixed_precision.set_global_policy(policy)


def _dense(g):
    # The word-embedding gradient is IndexedSlices (from tf.gather); allreduce and clipping want
    # dense tensors, and the table is small in ALBERT (V x E).
    return tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g


def _rng_states(model) -> list:
    states = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        generator = getattr(layer, "seed_generator", None)
        if generator is not None:
            states.append(generator.state)
    return states


class Trainer:
    """Holds the model, optimizer, schedule and training-state variables; runs updates."""

    def __init__(self, model, loss_fn, optimizer, schedule, dist: Distributed, *,
                 metric_names, accum_steps: int = 1, precision: str = "fp32", xla: bool = True,
                 xla_gradient: bool | None = None, eager: bool = False,
                 max_grad_norm: float = 1.0, fp16_allreduce: bool = False,
                 initial_loss_scale: float = 2.0 ** 15, growth_interval: int = 2000):
        if accum_steps < 1:
            raise ValueError(f"--gradient_accumulation_steps must be >= 1, got {accum_steps}")
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.schedule, self.dist = schedule, dist
        self.accum_steps = accum_steps
        self.fp16 = precision == "fp16"
        self.max_grad_norm = max_grad_norm
        self.fp16_allreduce = fp16_allreduce
        self.growth_interval = growth_interval
        self.variables = list(model.trainable_variables)
        self.metric_names = tuple(metric_names)
        # Training state: all checkpointed.
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name="iterations")
        self.skipped = tf.Variable(0, dtype=tf.int64, trainable=False, name="skipped_updates")
        self.loss_scale = tf.Variable(initial_loss_scale if self.fp16 else 1.0, dtype=tf.float32,
                                      trainable=False, name="loss_scale")
        self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="good_steps")
        # Per-rank metric accumulators since the last log line (not checkpointed).
        self.sums = {k: tf.Variable(0.0, trainable=False) for k in self.metric_names}
        self.grad_norm = tf.Variable(0.0, trainable=False)
        if eager:
            self._grad_fn, self._step_fn = self._grads, self._train_step
            self._apply_fn, self._eval_fn = self._apply, self._eval
        else:
            # Two XLA clusters around the allreduce (which XLA cannot hold): the micro-batch
            # gradients, and everything after the allreduce (unscale, clip, LAMB, counters).
            forward_xla = xla if xla_gradient is None else xla_gradient
            self._grad_fn = tf.function(self._grads, jit_compile=forward_xla,
                                        reduce_retracing=True)
            self._apply_fn = tf.function(self._apply, jit_compile=xla, reduce_retracing=True)
            self._step_fn = tf.function(self._train_step, reduce_retracing=True)
            self._eval_fn = tf.function(self._eval, jit_compile=forward_xla,
                                        reduce_retracing=True)

    # -- state ------------------------------------------------------------------------------------

    def state_variables(self):
        """Everything rank 0 broadcasts before the first update."""
        return (list(self.model.weights) + list(self.optimizer.slot_variables)
                + [self.step, self.iterations, self.skipped, self.loss_scale, self.good_steps])

    def trackables(self) -> dict:
        # Dropout RNG states are Keras seed generators that tf.train.Checkpoint does not reach
        # through the model; saving them makes a resumed run draw the same dropout masks.
        rng = {f"rng_{i}": state.value for i, state in enumerate(_rng_states(self.model))}
        return dict(model=self.model, optimizer=self.optimizer, step=self.step,
                    iterations=self.iterations, skipped_updates=self.skipped,
                    loss_scale=self.loss_scale, good_steps=self.good_steps, **rng)

    def broadcast_state(self) -> None:
        self.dist.broadcast_variables(self.state_variables(), root_rank=0)

    # -- the update -------------------------------------------------------------------------------

    def _grads(self, batch):
        with tf.GradientTape() as tape:
            loss, sums = self.loss_fn(self.model, batch, training=True)
            scaled = loss * self.loss_scale
        grads = [_dense(g) for g in tape.gradient(scaled, self.variables)]
        grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, self.variables,
                                                                      strict=True)]
        return grads, sums

    def _train_step(self, batches):
        """batches: a dict of [accum_steps, batch, ...] tensors."""
        first = tf.nest.map_structure(lambda t: t[0], batches)
        grads, sums = self._grad_fn(first)
        for i in tf.range(1, self.accum_steps):
            micro = tf.nest.map_structure(lambda t, i=i: t[i], batches)
            g, s = self._grad_fn(micro)
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

        def apply():
            self.optimizer.apply(grads, self.variables, lr)
            self.step.assign_add(1)
            return tf.constant(True)

        def skip():
            self.skipped.assign_add(1)
            return tf.constant(False)

        applied = tf.cond(finite, apply, skip)
        if self.fp16:
            self._update_loss_scale(finite)
        self.iterations.assign_add(1)
        for k in self.metric_names:
            self.sums[k].assign_add(tf.cast(sums[k], tf.float32))
        self.grad_norm.assign(tf.where(finite, grad_norm, -1.0))
        return {"applied": applied, "learning_rate": lr}

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


# -- checkpoints ------------------------------------------------------------------------------


class CheckpointHandler:
    """tf.train.CheckpointManager with the config beside it and fallback on a corrupt latest.

    TensorFlow writes a checkpoint's files under temporary names and updates the `checkpoint`
    index last, so a crash mid-save leaves the previous checkpoint as the latest; a checkpoint that
    is nevertheless unreadable (truncated copy, full disk) is skipped for the one before it.
    """

    def __init__(self, directory: str, trackables: dict, dist: Distributed, keep: int = 5,
                 config=None):
        self.directory = directory
        self.dist = dist
        self.config = config
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)

    def save(self, step: int) -> str | None:
        if not self.dist.is_chief:
            return None
        os.makedirs(self.directory, exist_ok=True)
        if self.config is not None:
            path = os.path.join(self.directory, "config.json")
            if not os.path.exists(path):
                self.config.to_json_file(path + ".tmp")
                os.replace(path + ".tmp", path)
        saved = self.manager.save(checkpoint_number=step)
        logger.info("saved checkpoint %s", saved)
        return saved

    def check_config(self, directory: str) -> None:
        from albert.config import AlbertConfig

        path = os.path.join(directory, "config.json")
        if self.config is None or not os.path.exists(path):
            return
        saved = AlbertConfig.from_json_file(path)
        diffs = [f"{k}: checkpoint {getattr(saved, k)!r} vs this run {getattr(self.config, k)!r}"
                 for k in saved.__dataclass_fields__
                 if getattr(saved, k) != getattr(self.config, k) and not k.endswith("dropout_prob")]
        if diffs:
            raise ValueError(f"checkpoint in {directory} was trained with a different model "
                             f"config: " + "; ".join(diffs))

    def restore_latest(self, directory: str | None = None, partial: bool = False) -> str | None:
        """Restore the newest readable checkpoint in `directory` (default: ours). None if none."""
        directory = directory or self.directory
        if not tf.io.gfile.isdir(directory):
            return None
        self.check_config(directory)
        state = tf.train.get_checkpoint_state(directory)
        candidates = list(reversed(state.all_model_checkpoint_paths)) if state else []
        for path in candidates:
            try:
                self.restore(path, partial=partial)
                return path
            # A truncated data file surfaces as IndexError ("Read less bytes than requested").
            except (tf.errors.OpError, ValueError, AssertionError, IndexError, KeyError) as e:
                logger.warning("checkpoint %s is unreadable (%s); trying the previous one",
                               path, str(e).splitlines()[0][:200])
        if candidates:
            raise ValueError(f"no readable checkpoint in {directory} (tried {len(candidates)})")
        return None

    def restore(self, path: str, partial: bool = False) -> None:
        if tf.io.gfile.isdir(path):
            found = self.restore_latest(path, partial=partial)
            if found is None:
                raise ValueError(f"--checkpoint_path {path} holds no checkpoint")
            return
        self.check_config(os.path.dirname(path))
        if partial:
            # Weights only, and heads may differ (a pretraining checkpoint into a QA model), so
            # the match is partial, but the backbone must be there.
            names = {name for name, _ in tf.train.list_variables(path)}
            marker = "model/albert/embeddings/word_embeddings/.ATTRIBUTES/VARIABLE_VALUE"
            if marker not in names:
                raise ValueError(f"checkpoint {path} holds no ALBERT model weights")
            tf.train.Checkpoint(model=self.checkpoint.model).read(path).expect_partial()
            return
        status = self.checkpoint.read(path)
        status.assert_existing_objects_matched()


def start_state(trainer: Trainer, checkpoints: CheckpointHandler, *, load_from: str,
                checkpoint_path: str | None, load_optimizer_state: bool = False) -> None:
    """Where a run starts, then rank 0's state to every rank before the first update.

    A checkpoint in our own checkpoint_dir always wins (a restarted job resumes). Otherwise
    --load_from checkpoint takes the weights of --checkpoint_path (plus optimizer state and
    counters with --load_optimizer_state); scratch/huggingface keep the model as built.
    """
    if trainer.dist.is_chief:
        resumed = checkpoints.restore_latest()
        if resumed:
            logger.info("resuming from %s", resumed)
        elif load_from == "checkpoint":
            if not checkpoint_path:
                raise ValueError(f"--load_from checkpoint: no checkpoint in --checkpoint_dir "
                                 f"{checkpoints.directory} and no --checkpoint_path given")
            checkpoints.restore(checkpoint_path, partial=not load_optimizer_state)
            logger.info("initialised from %s", checkpoint_path)
    trainer.broadcast_state()


# -- logging ----------------------------------------------------------------------------------


class MetricsLogger:
    """One line per log step on stdout, a JSON-lines file and TensorBoard scalars (rank 0)."""

    def __init__(self, log_dir: str | None, dist: Distributed):
        self.enabled = dist.is_chief
        self.writer = None
        self.jsonl = None
        if self.enabled and log_dir:
            os.makedirs(log_dir, exist_ok=True)
            self.writer = tf.summary.create_file_writer(log_dir)
            self.jsonl = open(os.path.join(log_dir, "metrics.jsonl"), "a", encoding="utf-8")

    def log(self, prefix: str, step: int, values: dict) -> None:
        if not self.enabled:
            return
        parts = " ".join(_fmt(k, v) for k, v in values.items())
        print(f"{prefix} step {step} {parts}", flush=True)
        if self.jsonl is not None:
            record = {"split": prefix, "step": step, "time": time.time(), **values}
            self.jsonl.write(json.dumps(record) + "\n")
            self.jsonl.flush()
        if self.writer is not None:
            with self.writer.as_default(step=step):
                for k, v in values.items():
                    if isinstance(v, int | float) and math.isfinite(v):
                        tf.summary.scalar(f"{prefix}/{k}", v)
            self.writer.flush()

    def close(self):
        if self.writer is not None:
            self.writer.close()
        if self.jsonl is not None:
            self.jsonl.close()


def _fmt(key, value):
    if isinstance(value, float):
        return f"{key} {value:.4g}" if abs(value) < 1e4 else f"{key} {value:.1f}"
    return f"{key} {value}"


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


# -- the loop ---------------------------------------------------------------------------------


def fit(trainer: Trainer, batches, *, total_steps: int, checkpoints: CheckpointHandler,
        metrics: MetricsLogger, metrics_fn, sequences_per_update: int, log_frequency: int = 10,
        checkpoint_frequency: int = 1000, evaluations=(),
        progress: bool = True) -> str:
    """Run updates until `trainer.step` reaches total_steps. Returns "done" or "stopped".

    batches: an iterator of dicts of [accum, batch, ...] tensors. evaluations: (prefix,
    frequency, fn) triples; fn() returns metrics logged under the prefix every `frequency` steps
    and at the end (e.g. ("val", 1000, validate)). Checkpoints every checkpoint_frequency
    steps, at the end, and on SIGTERM.
    """
    from tqdm import tqdm

    dist = trainer.dist
    step = int(trainer.step)
    bar = tqdm(total=total_steps, initial=step, unit="step", mininterval=2.0, file=sys.stderr,
               disable=not (progress and dist.is_chief))
    last_saved = step
    last_evaluated = {prefix: step for prefix, _, _ in evaluations}
    # seq/s counts time spent fetching data and updating, not validating or checkpointing.
    window_time, window_updates = 0.0, 0
    with StopSignal() as stop:
        while step < total_steps:
            started = time.time()
            try:
                batch = next(batches)
            except StopIteration:
                raise ValueError("the training data ran out before --total_steps") from None
            result = trainer.train_step(batch)
            new_step = int(trainer.step)  # waits for the update to finish
            window_time += time.time() - started
            window_updates += 1
            advanced = new_step > step
            step = new_step
            bar.update(1 if advanced else 0)
            if advanced and step % log_frequency == 0:
                values = metrics_fn(trainer.pop_sums())
                values.update(
                    learning_rate=float(result["learning_rate"]),
                    loss_scale=float(trainer.loss_scale),
                    grad_norm=float(trainer.grad_norm),
                    weight_norm=trainer.weight_norm(),
                    seq_per_sec=window_updates * sequences_per_update / max(window_time, 1e-9),
                    skipped_updates=int(trainer.skipped),
                )
                bar.clear()
                metrics.log("train", step, values)
                window_time, window_updates = 0.0, 0
            for prefix, frequency, evaluate in evaluations:
                if advanced and frequency and step % frequency == 0:
                    metrics.log(prefix, step, evaluate())
                    last_evaluated[prefix] = step
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
    for prefix, _, evaluate in evaluations:
        if last_evaluated[prefix] != step:
            metrics.log(prefix, step, evaluate())
    if last_saved != step:
        checkpoints.save(step)
    return "done"
