"""The shared Trainer in-process: loss scaling, precision paths, checkpoint fallback."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import PREDS, SEQ

from albert import AlbertConfig, AlbertForPreTraining
from albert.data.reader import pretraining_dataset
from albert.distributed import Distributed
from albert.losses import PRETRAINING_METRICS, pretraining_loss, pretraining_metrics
from albert.optimization import make_optimizer
from albert.training import CheckpointHandler, Trainer, set_precision


def make_trainer(precision="fp32", xla=False, lr=1e-3, vocab=2000, **kwargs):
    set_precision(precision)
    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_preset("tiny", vocab_size=vocab, num_hidden_layers=2,
                                      classifier_dropout_prob=0.0)
    model = AlbertForPreTraining(config).build_for_config()
    opt = make_optimizer("lamb", model.trainable_variables)
    return Trainer(model, pretraining_loss, opt, lambda step: lr, Distributed(),
                   metric_names=PRETRAINING_METRICS, precision=precision, xla=xla, **kwargs)


@pytest.fixture(scope="module")
def batches(sample_records):
    ds = pretraining_dataset("train", 8, SEQ, PREDS, filesystem_prefix=str(sample_records),
                             shuffle_buffer=0).batch(1)
    return [b for b in ds.take(6)]


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


def test_exclusions_on_real_variable_paths():
    trainer = make_trainer()
    flags = dict(zip(trainer.optimizer.names, trainer.optimizer.decay, strict=True))
    assert flags
    for name, decay in flags.items():
        is_norm_or_bias = ("norm" in name.lower() or name.endswith("bias"))
        assert decay != is_norm_or_bias, name


def test_truncated_latest_checkpoint_falls_back(batches, tmp_path):
    trainer = make_trainer()
    handler = CheckpointHandler(str(tmp_path), trainer.trackables(), Distributed(), keep=3)
    trainer.train_step(batches[0])
    handler.save(1)
    good = [v.numpy().copy() for v in trainer.model.trainable_variables]
    trainer.train_step(batches[1])
    latest = handler.save(2)
    data_file = [f for f in os.listdir(tmp_path) if f.startswith("ckpt-2.data")][0]
    with open(tmp_path / data_file, "r+b") as f:
        f.truncate(100)
    fresh = make_trainer()
    restored = CheckpointHandler(str(tmp_path), fresh.trackables(), Distributed()).restore_latest()
    assert restored.endswith("ckpt-1") and latest.endswith("ckpt-2")
    assert int(fresh.step) == 1
    for g, v in zip(good, fresh.model.trainable_variables, strict=True):
        np.testing.assert_array_equal(g, v.numpy())


def test_checkpoint_from_different_config_is_refused(batches, tmp_path):
    trainer = make_trainer()
    handler = CheckpointHandler(str(tmp_path), trainer.trackables(), Distributed(),
                                config=trainer.model.config)
    handler.save(1)
    other = make_trainer(vocab=1000)
    with pytest.raises(ValueError, match="vocab_size: checkpoint 2000 vs this run 1000"):
        CheckpointHandler(str(tmp_path), other.trackables(), Distributed(),
                          config=other.model.config).restore_latest()


def test_qa_model_starts_from_a_pretraining_checkpoint(batches, tmp_path):
    from albert import AlbertForQuestionAnswering
    from albert.training import start_state

    pre = make_trainer()
    pre.train_step(batches[0])
    CheckpointHandler(str(tmp_path / "pre"), pre.trackables(), Distributed(),
                      config=pre.model.config).save(1)
    qa_model = AlbertForQuestionAnswering(pre.model.config).build_for_config()
    qa_opt = make_optimizer("adamw", qa_model.trainable_variables)
    qa = Trainer(qa_model, None, qa_opt, lambda s: 0.0, Distributed(), metric_names=[])
    handler = CheckpointHandler(str(tmp_path / "qa"), qa.trackables(), Distributed(),
                                config=qa_model.config)
    start_state(qa, handler, load_from="checkpoint", checkpoint_path=str(tmp_path / "pre"))
    np.testing.assert_array_equal(qa_model.albert.encoder.shared_layers[0].ffn.kernel.numpy(),
                                  pre.model.albert.encoder.shared_layers[0].ffn.kernel.numpy())
    assert int(qa.step) == 0  # weights only: the fine-tuning schedule starts at 0
    other = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "other" / "ckpt"))
    with pytest.raises(ValueError, match="holds no ALBERT model weights"):
        handler.restore(other, partial=True)


def test_onednn_gradient_with_xla_update_matches_plain_tf(batches):
    # The CPU plan choose_xla can pick: gradient on TensorFlow's kernels, update under XLA.
    mixed = make_trainer(xla=True, xla_gradient=False)
    plain = make_trainer(xla=False)
    for b in batches[:4]:
        mixed.train_step(b)
        plain.train_step(b)
    assert int(mixed.step) == int(plain.step) == 4
    for a, b in zip(mixed.model.trainable_variables, plain.model.trainable_variables,
                    strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)


@pytest.mark.parametrize("xla_rate, onednn_rate, gradient", [(2e11, 1e11, True),
                                                              (1e11, 2e11, False)])
def test_auto_xla_compiles_the_gradient_only_where_its_matmul_wins(monkeypatch, xla_rate,
                                                                    onednn_rate, gradient):
    from albert import training

    calls = []

    def fake_matmul_flops(dtype, jit, **kwargs):
        calls.append((dtype, jit))
        return xla_rate if jit else onednn_rate

    monkeypatch.setattr(training, "matmul_flops", fake_matmul_flops)
    plan = training.choose_xla("auto", "bf16", Distributed())
    assert plan.gradient is gradient and plan.update is True
    assert "200 GFLOP/s" in plan.reason and "100 GFLOP/s" in plan.reason
    assert calls and all(dtype == tf.bfloat16 for dtype, _ in calls)  # probed in the compute dtype
    assert training.choose_xla("off", "fp32") == (False, False, "--xla off")
    assert training.choose_xla("on", "fp32")[:2] == (True, True)
    with pytest.raises(ValueError, match="--xla must be one of"):
        training.choose_xla("yes", "fp32")


def test_matmul_probe_measures_a_rate():
    from albert.training import matmul_flops

    for jit in (False, True):
        rate = matmul_flops(tf.float32, jit, n=256, chain=2, repeats=1)
        assert 1e8 < rate < 1e14


def test_auto_xla_plan_is_rank_zeros_on_every_rank(tmp_path):
    # Each rank's probe can come out differently on a busy host; all must compile the same.
    import subprocess
    import sys

    script = tmp_path / "plan.py"
    script.write_text(
        "from albert import distributed, training\n"
        "dist = distributed.init()\n"
        "fast = (lambda jit: 2e11 if jit else 1e11) if dist.rank == 0 else "
        "(lambda jit: 1e11 if jit else 2e11)\n"
        "training.matmul_flops = lambda dtype, jit, **kw: fast(jit)\n"
        "print('PLAN', dist.rank, training.choose_xla('auto', 'fp32', dist).gradient)\n")
    horovodrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    proc = subprocess.run([horovodrun, "-np", "2", "--gloo", "-H", "localhost:2", sys.executable,
                           str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    plans = sorted(line.split("PLAN ", 1)[1] for line in proc.stdout.splitlines()
                   if "PLAN " in line)
    assert plans == ["0 True", "1 True"], proc.stdout[-3000:]
