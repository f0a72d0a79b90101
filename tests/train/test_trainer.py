"""The shared Trainer in-process: loss scaling, precision paths, accumulation, dropout keys."""

import numpy as np
import pytest
import tensorflow as tf
from helpers import make_trainer

from albert.tasks.losses import pretraining_metrics


@pytest.mark.slow
def test_fp16_overflow_skips_update_and_recovers(batches):
    # 2^24 overflows fp16 activations' gradients for this model; ~2^17 is where they fit.
    trainer = make_trainer("fp16", initial_loss_scale=2.0 ** 24)
    before = [v.numpy().copy() for v in trainer.model.trainable_variables]
    result = trainer.train_step(batches[0])
    assert not bool(result["applied"])
    assert int(trainer.skipped) == 1 and int(trainer.step) == 0  # schedule does not advance
    assert float(trainer.loss_scale) == 2.0 ** 23
    for b, v in zip(before, trainer.model.trainable_variables, strict=True):
        np.testing.assert_array_equal(b, v.numpy())
    applied = [bool(trainer.train_step(b)["applied"]) for b in batches[1:] * 8]
    assert any(applied), "loss scale never came down to a finite range"
    # Dynamic scaling may overflow once more at the boundary; after that updates go through.
    assert all(applied[-10:]), applied
    assert int(trainer.step) == sum(applied)
    assert int(trainer.skipped) == 1 + applied.count(False)
    assert float(trainer.loss_scale) < 2.0 ** 23
    assert np.isfinite(trainer.weight_norm())


def test_fp16_loss_scale_grows_after_interval(batches):
    trainer = make_trainer("fp16", initial_loss_scale=4.0, growth_interval=3)
    for b in batches[:3]:
        trainer.train_step(b)
    assert float(trainer.loss_scale) == 8.0


@pytest.mark.parametrize("precision, skips_before", [("fp32", 0), ("fp16", 2)])
def test_an_update_not_finite_at_loss_scale_1_is_reported_diverged(batches, precision,
                                                                    skips_before):
    # LAMB's step is the rate times the weights' norm: at 1e30 the first update lands the weights
    # near 1e30, and the next forward pass overflows. Without loss scaling that is divergence at
    # once; under fp16 only once the scale (here 4) has halved to 1 and the update still overflows.
    trainer = make_trainer(precision, lr=1e30, initial_loss_scale=4.0)
    first = trainer.train_step(batches[0])
    assert bool(first["applied"]) and not bool(first["diverged"])
    results = [trainer.train_step(b) for b in batches[1:2 + skips_before]]
    assert [bool(r["applied"]) for r in results] == [False] * (1 + skips_before)
    assert [bool(r["diverged"]) for r in results] == [False] * skips_before + [True]
    assert float(trainer.loss_scale) == 1.0 and int(trainer.step) == 1


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_xla_paths_train(batches, precision):
    trainer = make_trainer(precision, xla=True, lr=5e-3)
    losses = []
    for b in batches * 3:
        trainer.train_step(b)
        losses.append(pretraining_metrics(trainer.pop_sums())["loss"])
    assert all(np.isfinite(losses))
    assert np.mean(losses[-6:]) < np.mean(losses[:6])
    assert int(trainer.step) == 18


@pytest.mark.slow
def test_accumulation_averages_micro_batches(batches):
    two = make_trainer(accum_steps=2)
    one = make_trainer()
    stacked = {k: tf.concat([batches[0][k], batches[1][k]], axis=0) for k in batches[0]}
    merged = {k: tf.reshape(tf.concat([batches[0][k][0], batches[1][k][0]], 0),
                            [1, 16, *batches[0][k].shape[2:]]) for k in batches[0]}
    two.train_step(stacked)
    one.train_step(merged)
    for a, b in zip(two.model.trainable_variables, one.model.trainable_variables, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)


class RecordingOptimizer:
    """Stands in for LAMB: keeps the gradients that reach it and changes no weight, so a test sees
    what the trainer hands the optimizer (a uniform scale error barely moves an Adam update)."""

    def __init__(self, variables):
        self.seen = [tf.Variable(tf.zeros(v.shape), trainable=False) for v in variables]
        self.calls = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.slot_variables = []

    def apply(self, grads, variables, learning_rate):
        for seen, g in zip(self.seen, grads, strict=True):
            seen.assign(g)
        self.calls.assign_add(1)

    def gradients(self):
        return [s.numpy() for s in self.seen]


def _tape_gradients(trainer, batch):
    """The gradient of the trainer's loss on one [batch, ...] batch, by a plain GradientTape."""
    with tf.GradientTape() as tape:
        loss, _ = trainer.loss_fn(trainer.model, batch, training=True)
    grads = tape.gradient(loss, trainer.variables)
    return [tf.convert_to_tensor(g).numpy() for g in grads], float(loss)


def _global_norm(grads):
    return float(np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads)))


@pytest.mark.parametrize("xla", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["eager_graph", "xla"])
def test_accumulated_gradient_reaching_the_optimizer_is_the_large_batch_mean(batches, xla):
    # Two micro-batches of 8 must hand the optimizer the gradient of the 16-sequence batch (the
    # mean, not the sum), and grad_norm must be that gradient's norm before clipping.
    stacked = {k: tf.concat([batches[0][k], batches[1][k]], axis=0) for k in batches[0]}
    merged = {k: tf.concat([batches[0][k][0], batches[1][k][0]], 0) for k in batches[0]}
    two = make_trainer(accum_steps=2, xla=xla, optimizer=RecordingOptimizer, max_grad_norm=0.0)
    two.train_step(stacked)
    expected, _ = _tape_gradients(two, merged)
    assert int(two.optimizer.calls) == 1
    got = two.optimizer.gradients()
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=2e-4, atol=2e-7)
    assert float(two.grad_norm) == pytest.approx(_global_norm(expected), rel=1e-4)
    one = make_trainer(xla=xla, optimizer=RecordingOptimizer, max_grad_norm=0.0)
    one.train_step({k: v[None] for k, v in merged.items()})
    assert float(one.grad_norm) == pytest.approx(float(two.grad_norm), rel=1e-4)
    # The halves' gradients differ, so a sum or a single micro-batch could not pass the above.
    half, _ = _tape_gradients(two, {k: v[0] for k, v in batches[0].items()})
    assert abs(_global_norm(half) - _global_norm(expected)) > 0.01 * _global_norm(expected)


@pytest.mark.slow
def test_clipping_hands_the_optimizer_the_clipped_gradient(batches):
    batch = batches[2]
    probe = make_trainer(optimizer=RecordingOptimizer, max_grad_norm=0.0)
    expected, _ = _tape_gradients(probe, {k: v[0] for k, v in batch.items()})
    norm = _global_norm(expected)
    limit = 0.05 * norm
    clipped = make_trainer(optimizer=RecordingOptimizer, max_grad_norm=limit)
    clipped.train_step(batch)
    got = clipped.optimizer.gradients()
    assert _global_norm(got) == pytest.approx(limit, rel=1e-4)
    for g, e in zip(got, expected, strict=True):  # same direction: every tensor scaled alike
        np.testing.assert_allclose(g, e * (limit / norm), rtol=2e-4, atol=1e-8)
    assert float(clipped.grad_norm) == pytest.approx(norm, rel=1e-4)  # logged before clipping
    # A limit above the norm leaves the gradient as it is.
    loose = make_trainer(optimizer=RecordingOptimizer, max_grad_norm=10 * norm)
    loose.train_step(batch)
    assert _global_norm(loose.optimizer.gradients()) == pytest.approx(norm, rel=1e-4)


def test_exclusions_on_real_variable_paths():
    trainer = make_trainer()
    flags = dict(zip(trainer.optimizer.names, trainer.optimizer.decay, strict=True))
    assert flags
    for name, decay in flags.items():
        is_norm_or_bias = ("norm" in name.lower() or name.endswith("bias"))
        assert decay != is_norm_or_bias, name


DROPOUT = {"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
           "classifier_dropout_prob": 0.1}


def _weights(trainer):
    return [v.numpy().copy() for v in trainer.model.trainable_variables]


def _max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))


# Straight runs that several tests hold others against, traced once for the module: the weights
# after each of the updates on batches[0], batches[1], ... (the trainers are not shared, only
# what they left).


@pytest.fixture(scope="module")
def plain_run(batches):
    """fp32 on TensorFlow's kernels, dropout off (the tiny config's): weights after 4 updates."""
    trainer = make_trainer(xla=False)
    weights = []
    for b in batches[:4]:
        trainer.train_step(b)
        weights.append(_weights(trainer))
    assert int(trainer.step) == 4
    return weights


@pytest.fixture(scope="module")
def dropout_run(batches, tmp_path_factory):
    """Dropout on, fp32, rank 0, seed 0: weights after 4 updates, and the checkpoint directory
    it saved after its 2nd (ckpt-2)."""
    from albert.train.checkpoint_store import CheckpointStore
    from albert.train.distributed import Distributed

    directory = tmp_path_factory.mktemp("dropout_ckpt")
    trainer = make_trainer(config_overrides=DROPOUT)
    store = CheckpointStore(str(directory), trainer.trackables(), Distributed())
    weights = []
    for b in batches[:4]:
        trainer.train_step(b)
        weights.append(_weights(trainer))
        if int(trainer.step) == 2:
            store.save(2)
    return weights, directory


@pytest.mark.slow
def test_onednn_gradient_with_xla_update_matches_plain_tf(batches, plain_run):
    # The CPU plan choose_xla can pick: gradient on TensorFlow's kernels, update under XLA.
    mixed = make_trainer(xla=True, xla_gradient=False)
    for b in batches[:4]:
        mixed.train_step(b)
    assert int(mixed.step) == 4
    for a, b in zip(_weights(mixed), plain_run[3], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.slow
def test_dropout_masks_are_a_function_of_seed_rank_update_and_micro_batch(batches, dropout_run,
                                                                          plain_run):
    from albert.train.distributed import Distributed

    class Rank1(Distributed):
        rank = 1

    straight, _ = dropout_run  # saved a checkpoint on the way: that must change nothing either
    runs = {"a": straight[1], "off": plain_run[1]}
    for name, kwargs in {"again": {}, "seed": {"seed": 7}, "rank": {"dist": Rank1()}}.items():
        trainer = make_trainer(config_overrides=DROPOUT, **kwargs)
        for b in batches[:2]:
            trainer.train_step(b)
        runs[name] = _weights(trainer)
    assert _max_diff(runs["a"], runs["again"]) == 0.0  # nothing but the key decides the masks
    assert _max_diff(runs["a"], runs["seed"]) > 1e-5
    assert _max_diff(runs["a"], runs["rank"]) > 1e-5  # each rank draws its own masks
    assert _max_diff(runs["a"], runs["off"]) > 1e-5  # dropout is on
    # Micro-batches of one update draw different masks: the same batch twice in one update
    # gives another update than the same batch at accumulation 1 (the straight run's first).
    twice = make_trainer(config_overrides=DROPOUT, accum_steps=2)
    twice.train_step({k: tf.concat([v, v], 0) for k, v in batches[0].items()})
    assert _max_diff(_weights(twice), straight[0]) > 1e-6


@pytest.mark.slow
def test_dropout_resume_needs_no_rng_state(batches, dropout_run):
    from albert.train.checkpoint_store import CheckpointStore
    from albert.train.distributed import Distributed

    straight, directory = dropout_run  # 4 updates; its checkpoint after the 2nd
    assert not any("rng" in name for name, _ in tf.train.list_variables(str(directory / "ckpt-2")))
    resumed = make_trainer(config_overrides=DROPOUT)
    CheckpointStore(str(directory), resumed.trackables(), Distributed()).restore_latest()
    assert int(resumed.step) == 2
    for b in batches[2:4]:
        resumed.train_step(b)
    assert _max_diff(_weights(resumed), straight[3]) < 1e-6


def test_fp16_allreduce_keeps_small_gradients(batches):
    # Horovod's fp16 compression casts the averaged gradients to float16. Unscaled, gradients
    # below ~6e-8 vanish there and those below ~6e-5 lose precision; with --fp16_allreduce the
    # trainer scales the loss first (dynamic loss scaling under any precision), so they survive.
    from albert.tasks.losses import pretraining_loss
    from albert.train.distributed import Distributed

    class Fp16Wire(Distributed):
        """Records what reaches the allreduce and what leaves it after an fp16 cast."""

        def __init__(self):
            self.sent, self.received = [], []

        def allreduce_mean(self, tensors, fp16_compression=False):
            out = [tf.cast(tf.cast(t, tf.float16), t.dtype) if fp16_compression else t
                   for t in tensors]
            self.sent.append([t.numpy() for t in tensors])
            self.received.append([t.numpy() for t in out])
            return out

    def tiny_loss(model, batch, training):
        loss, sums = pretraining_loss(model, batch, training=training)
        return loss * 1e-6, sums  # gradients of order 1e-12 .. 1e-6

    def relative_error(trainer):
        wire = Fp16Wire()
        trainer.dist = wire
        trainer.loss_fn = tiny_loss
        trainer.train_step(batches[0])
        sent = np.concatenate([g.ravel() for g in wire.sent[0]]).astype(np.float64)
        received = np.concatenate([g.ravel() for g in wire.received[0]]).astype(np.float64)
        return float(np.abs(received - sent).sum() / np.abs(sent).sum())

    scaled = make_trainer(fp16_allreduce=True, eager=True)
    assert scaled.loss_scaling and float(scaled.loss_scale) == 2.0 ** 15
    assert relative_error(scaled) < 1e-3
    # Unscaled, the same cast loses much of the gradient (what --fp16_allreduce did under bf16).
    unscaled = make_trainer(fp16_allreduce=True, eager=True)
    unscaled.loss_scale.assign(1.0)
    assert relative_error(unscaled) > 1e-2


def _two_micro_batches(a, b):
    return {k: tf.concat([a[k], b[k]], 0) for k in a}


@pytest.mark.slow
def test_recompute_gives_the_same_updates_with_dropout_and_accumulation(batches):
    # fp32, XLA-compiled gradient, 2 micro-batches per update: the recomputed forward passes
    # draw the masks of the first ones, so the weights agree to float32 rounding.
    updates = [_two_micro_batches(batches[0], batches[1]),
               _two_micro_batches(batches[2], batches[3])]
    runs = {}
    for mode in ("none", "layers"):
        trainer = make_trainer(config_overrides=DROPOUT, xla=True, accum_steps=2, recompute=mode)
        for b in updates:
            trainer.train_step(b)
        assert int(trainer.step) == 2
        runs[mode] = _weights(trainer)
    assert _max_diff(runs["none"], runs["layers"]) < 1e-6
    assert _max_diff(runs["none"], _weights(make_trainer(config_overrides=DROPOUT))) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_recompute_trains_in_mixed_precision(batches, precision):
    # bf16, and fp16 with dynamic loss scaling (its first updates may overflow and be skipped).
    trainer = make_trainer(precision, xla=True, lr=5e-3, recompute="layers",
                           initial_loss_scale=2.0 ** 10)
    losses = []
    for _ in range(6):
        trainer.train_step(batches[0])
        losses.append(pretraining_metrics(trainer.pop_sums())["loss"])
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0] - 0.1, losses
    assert int(trainer.step) >= 5
    assert np.isfinite(trainer.weight_norm())


def test_auto_micro_batch_trials_bisect_and_keep_a_margin():
    # The GPU path of --per_gpu_batch_size auto, with the out-of-memory error a GPU would raise
    # for more than 6 sequences.
    from albert.tasks.losses import pretraining_loss
    from albert.tasks.pretraining import PretrainingTask
    from albert.tasks.pretraining_options import PretrainingOptions
    from albert.train.auto_batch import micro_batch_trial
    from albert.train.batch_plan import largest_micro_batch
    from albert.train.run_spec import RunSpec

    task = PretrainingTask(RunSpec(task="pretraining",
                                   options=PretrainingOptions(max_predictions_per_seq=5)))

    trainer = make_trainer()
    tried = []

    def loss_fn(model, batch, training):
        n = int(batch["input_ids"].shape[0])
        tried.append(n)
        if n > 6:
            raise tf.errors.ResourceExhaustedError(None, None, f"OOM allocating {n} sequences")
        return pretraining_loss(model, batch, training)

    fits = micro_batch_trial(trainer.model, loss_fn,
                             lambda n: task.synthetic_batch(n, 32, 2000), jit=False,
                             reserve_bytes=1 << 20)
    plan = largest_micro_batch(fits, global_batch=64, ranks=1, why="this GPU")
    # 4 is chosen because a trial of ceil(4 x 1.1) = 5 sequences ran; 8 (a trial of 9) did not.
    assert (plan.micro_batch, plan.accumulation) == (4, 16)
    assert 5 in tried and 9 in tried and max(tried) <= 36
    # Each task's synthetic batch against its loss: tests/tasks/test_declarations.py.
