"""--per_gpu_batch_size auto in a run: rank 0 decides (albert.train.memory.resolve_auto_batch; on
a GPU without --memory_budget_gb by trial steps, compiled as the trainer compiles its gradient,
until one runs out of memory) and hands its choice to every rank."""

from __future__ import annotations

import math

import tensorflow as tf

from albert.errors import SettingError
from albert.train.batch_plan import BatchPlan
from albert.train.memory import memory_plan_of, resolve_auto_batch
from albert.train.memory_plan import GIB, SAFETY_MARGIN
from albert.train.run_spec import Batching, RunSpec


def choose_auto_batch(spec: RunSpec, model, dist, *, synthetic_batch, loss_fn, head: str,
                      num_labels: int = 2, xla_gradient: bool, on_gpu: bool,
                      recorded: dict | None = None) -> tuple[Batching, str | None]:
    """--per_gpu_batch_size auto in a run: rank 0 decides (resolve_auto_batch; on a GPU without
    --memory_budget_gb by trial steps of `loss_fn` on `model`, compiled with XLA when the gradient
    is), every rank uses its choice, and a choice that cannot be made stops every rank with rank
    0's reason. Returns the decided Batching and rank 0's log line (None elsewhere).

    `synthetic_batch(micro_batch, seq_length, vocab_size)`: a batch with every feature `loss_fn`
    reads, for the trial steps (the task's: albert.tasks.Task.synthetic_batch).

    `recorded`: the batch plan of the run this command resumes (run.json, read on rank 0). When
    it makes the same global batch over the same ranks it is kept, so a resumed run does not
    change its micro-batch (and with it its dropout keys and saved input positions) because the
    memory free this time differs."""
    batching = spec.batching
    line = choice = None
    if dist.is_chief and recorded and recorded.get("ranks") == dist.size \
            and recorded.get("global_batch") == batching.global_batch_size:
        choice = (recorded["micro_batch"], recorded["accumulation"])
        line = (f"--per_gpu_batch_size auto: micro-batch {choice[0]} x accumulation {choice[1]} "
                f"x {dist.size} rank(s) = {batching.global_batch_size}, kept from the run this "
                "command resumes (its run.json), so its trajectory goes on unchanged")
        if batching.memory_budget_gb is not None:
            need = memory_plan_of(spec, model.config, BatchPlan(dist.size, *choice),
                                  head=head, num_labels=num_labels,
                                  device="gpu" if on_gpu else "cpu").total
            budget = batching.memory_budget_gb * GIB * (1 - SAFETY_MARGIN)
            if need > budget:
                # Kept all the same: a new micro-batch would change the trajectory and the saved
                # input positions; the user decides whether that is worth it.
                line += (f"; but its memory plan ({need / GIB:.2f} GB) exceeds "
                         f"{1 - SAFETY_MARGIN:.0%} of --memory_budget_gb "
                         f"{batching.memory_budget_gb:g}: to choose again under this budget, use "
                         "a new --checkpoint_dir or --overwrite_checkpoint_dir")
    elif dist.is_chief:
        trial = None
        if on_gpu and batching.memory_budget_gb is None:
            # What the run holds beside a micro-batch's gradient and is not created yet: the
            # optimizer's slots, the accumulated gradients and the allreduce buffers.
            later = memory_plan_of(spec, model.config, BatchPlan(dist.size, 1, 2), head=head,
                                   num_labels=num_labels)
            reserve = later.optimizer + later.allreduce + later.gradients // 2
            seq, vocab = spec.options.max_seq_length, model.config.vocab_size
            trial = micro_batch_trial(
                model, loss_fn, lambda n: synthetic_batch(n, seq, vocab),
                jit=xla_gradient, reserve_bytes=reserve)
        try:
            decided, line = resolve_auto_batch(spec, dist.size, model.config, head=head,
                                               num_labels=num_labels,
                                               device="gpu" if on_gpu else "cpu", trial=trial,
                                               ranks_here=dist.local_size)
            choice = (decided.per_gpu_batch_size, decided.gradient_accumulation_steps)
        except SettingError as e:
            choice = e  # pickled to every rank with both its spellings (SettingError.__reduce__)
    choice = dist.allgather_object(choice)[0]
    if isinstance(choice, SettingError):
        raise choice
    return batching.chosen(*choice), line


def _out_of_memory(error: Exception) -> bool:
    if isinstance(error, tf.errors.ResourceExhaustedError):
        return True
    text = str(error).lower()  # XLA sometimes reports a failed allocation as an internal error
    return isinstance(error, tf.errors.InternalError) and (
        "resource_exhausted" in text or "out of memory" in text)


def micro_batch_trial(model, loss_fn, make_batch, jit: bool, reserve_bytes: int = 0):
    """fits(m) for batch_plan.largest_micro_batch, by trying: a forward + backward pass of
    ceil(m x (1 + SAFETY_MARGIN)) sequences (make_batch(n) -> a batch of n), compiled as the
    trainer compiles its gradient, while `reserve_bytes` more are held on the device (what the run
    holds beside it and has not created yet: optimizer slots, the accumulated gradients, the
    allreduce buffers). False when the device runs out of memory. make_batch is the task's
    (albert.tasks.Task.synthetic_batch): this module knows no task's features."""
    variables = model.trainable_variables

    def gradients(batch):
        with tf.GradientTape() as tape:
            loss, _ = loss_fn(model, batch, training=True)
        return tape.gradient(loss, variables)

    def fits(micro_batch: int) -> bool:
        trial = math.ceil(micro_batch * (1.0 + SAFETY_MARGIN))
        step = tf.function(gradients, jit_compile=jit)  # a fresh one: no earlier shapes kept
        chunk = 1 << 28
        held = [tf.zeros([min(chunk, reserve_bytes // 4 - i)], tf.float32)
                for i in range(0, reserve_bytes // 4, chunk)]
        try:
            grads = step(make_batch(trial))
            # Reading a result waits for the device, where an allocation failure surfaces.
            tf.add_n([tf.reduce_sum(tf.cast(tf.convert_to_tensor(g), tf.float32))
                      for g in grads if g is not None]).numpy()
            return True
        except (tf.errors.ResourceExhaustedError, tf.errors.InternalError) as e:
            if not _out_of_memory(e):
                raise
            return False
        finally:
            del held

    return fits
