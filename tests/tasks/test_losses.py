"""Every task loss against numpy, on outputs chosen so that each term shows: padding slots with
large-loss labels, labels that disagree with confident logits, padded positions holding the
largest logit, sequences with different numbers of masked tokens."""

import numpy as np
import pytest
import tensorflow as tf

from albert.tasks.losses import (
    classification_loss,
    classification_metrics,
    pretraining_loss,
    pretraining_metrics,
    regression_loss,
    squad_loss,
    squad_metrics,
)


class FixedOutputs:
    """A stand-in model: returns the given outputs and records what it was called with."""

    def __init__(self, **outputs):
        self.outputs = {k: tf.constant(v, tf.float32) for k, v in outputs.items()}
        self.calls = []

    def __call__(self, inputs, training):
        self.calls.append((sorted(inputs), training))
        return self.outputs


def log_softmax(x):
    x = np.asarray(x, np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def ce(logits, labels):
    """Cross-entropy of each row of logits [..., C] against int labels [...]."""
    lp = log_softmax(logits)
    return -np.take_along_axis(lp, np.asarray(labels)[..., None], axis=-1)[..., 0]


def ids(shape):
    return tf.zeros(shape, tf.int32)


def test_pretraining_loss_is_per_sequence_mlm_mean_plus_sop():
    rng = np.random.default_rng(0)
    batch_size, slots, vocab = 3, 4, 6
    mlm_logits = rng.normal(0, 2, (batch_size, slots, vocab))
    labels = rng.integers(0, vocab, (batch_size, slots))
    # Masked counts 3, 1 and 0; each padding slot's label is the one its logits rule out, so
    # counting a padding slot changes the loss by ~50.
    weights = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], np.float32)
    for b, s in zip(*np.nonzero(weights == 0), strict=True):
        labels[b, s] = 0
        mlm_logits[b, s] = 50.0
        mlm_logits[b, s, 0] = -50.0
    # SOP: confident and right for sequence 0, confident and wrong for 1, unsure for 2.
    sop_logits = np.array([[8.0, -8.0], [9.0, -9.0], [0.1, 0.0]])
    sop_labels = np.array([0, 1, 1])
    model = FixedOutputs(mlm_logits=mlm_logits, sop_logits=sop_logits)
    batch = {"input_ids": ids((batch_size, 8)), "attention_mask": ids((batch_size, 8)),
             "token_type_ids": ids((batch_size, 8)),
             "masked_lm_positions": ids((batch_size, slots)),
             "masked_lm_ids": tf.constant(labels, tf.int32),
             "masked_lm_weights": tf.constant(weights),
             "sop_labels": tf.constant(sop_labels, tf.int32)}
    loss, sums = pretraining_loss(model, batch, training=True)
    assert model.calls == [(["attention_mask", "input_ids", "masked_lm_positions",
                             "token_type_ids"], True)]

    token_ce = ce(mlm_logits, labels)
    per_sequence = (token_ce * weights).sum(-1) / np.maximum(weights.sum(-1), 1.0)
    sop_ce = ce(sop_logits, sop_labels)
    expected = per_sequence.mean() + sop_ce.mean()
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    # Not the same number by another definition: a plain sum, a mean over all slots, or one
    # mean over the batch's masked tokens (Google's) would each be far off.
    assert abs(expected - ((token_ce * weights).sum() / weights.sum() + sop_ce.mean())) > 0.05
    assert abs(expected - (token_ce.mean() + sop_ce.mean())) > 1.0

    pred = mlm_logits.argmax(-1)
    assert float(sums["examples"]) == 3
    assert float(sums["mlm_loss_sum"]) == pytest.approx(per_sequence.sum(), rel=1e-5)
    assert float(sums["mlm_count"]) == 4
    assert float(sums["mlm_correct"]) == ((pred == labels) * weights).sum()
    assert float(sums["sop_loss_sum"]) == pytest.approx(sop_ce.sum(), rel=1e-5)
    assert float(sums["sop_correct"]) == 1  # only sequence 0: argmax 0 against label 1 in 1 and 2
    metrics = pretraining_metrics({k: float(v) for k, v in sums.items()})
    assert metrics["loss"] == pytest.approx(expected, rel=1e-5)
    assert metrics["mlm_acc"] == ((pred == labels) * weights).sum() / 4
    assert metrics["sop_acc"] == pytest.approx(1 / 3)


def test_pretraining_sop_correct_counts_each_side():
    model = FixedOutputs(mlm_logits=np.zeros((4, 1, 3)),
                         sop_logits=[[3.0, 0.0], [0.0, 3.0], [3.0, 0.0], [0.0, 3.0]])
    batch = {"input_ids": ids((4, 4)), "attention_mask": ids((4, 4)),
             "token_type_ids": ids((4, 4)), "masked_lm_positions": ids((4, 1)),
             "masked_lm_ids": ids((4, 1)), "masked_lm_weights": tf.ones((4, 1)),
             "sop_labels": tf.constant([0, 1, 1, 1])}
    _, sums = pretraining_loss(model, batch, training=False)
    assert float(sums["sop_correct"]) == 3
    assert model.calls[0][1] is False


def test_squad_loss_ignores_padding_and_averages_start_and_end():
    seq = 6
    start_logits = np.array([[1.0, 2.0, 0.5, 0.0, 90.0, 90.0],
                             [0.0, 0.1, 3.0, -1.0, 2.0, 80.0]])
    end_logits = np.array([[0.5, 0.0, 3.0, 1.0, 70.0, 70.0],
                           [2.0, 0.0, 0.0, 4.0, 1.0, 60.0]])
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0]])
    starts, ends = np.array([1, 4]), np.array([3, 0])  # example 1: label disagrees with logits
    model = FixedOutputs(start_logits=start_logits, end_logits=end_logits)
    batch = {"input_ids": ids((2, seq)), "attention_mask": tf.constant(mask, tf.int32),
             "token_type_ids": ids((2, seq)), "start_positions": tf.constant(starts),
             "end_positions": tf.constant(ends)}
    loss, sums = squad_loss(model, batch, training=True)

    def masked_ce(logits, labels):
        return ce(np.where(mask == 1, logits, -np.inf), labels)

    per_example = (masked_ce(start_logits, starts) + masked_ce(end_logits, ends)) / 2
    assert float(loss) == pytest.approx(per_example.mean(), rel=1e-4)
    assert float(sums["loss_sum"]) == pytest.approx(per_example.sum(), rel=1e-4)
    # argmax over real positions only: example 0 starts at 1 (right), ends at 2 (label 3);
    # example 1 starts at 2 (label 4), ends at 3 (label 0).
    assert float(sums["start_correct"]) == 1 and float(sums["end_correct"]) == 0
    metrics = squad_metrics({k: float(v) for k, v in sums.items()})
    assert metrics["start_acc"] == 0.5 and metrics["loss"] == pytest.approx(per_example.mean(),
                                                                             rel=1e-4)


def test_classification_loss_is_mean_cross_entropy():
    logits = np.array([[4.0, 0.0, -1.0], [4.0, 0.0, -1.0], [0.0, 0.2, 0.1], [-3.0, 5.0, 0.0]])
    labels = np.array([0, 2, 1, 1])
    model = FixedOutputs(logits=logits)
    batch = {"input_ids": ids((4, 5)), "attention_mask": ids((4, 5)),
             "token_type_ids": ids((4, 5)), "labels": tf.constant(labels)}
    loss, sums = classification_loss(model, batch, training=True)
    expected = ce(logits, labels)
    assert float(loss) == pytest.approx(expected.mean(), rel=1e-5)
    assert float(sums["loss_sum"]) == pytest.approx(expected.sum(), rel=1e-5)
    assert float(sums["correct"]) == 3
    assert classification_metrics({k: float(v) for k, v in sums.items()})["accuracy"] == 0.75


def test_regression_loss_is_mean_squared_error():
    predictions = np.array([[0.5], [2.0], [-1.0]])
    labels = np.array([1.0, 2.0, 3.0])
    model = FixedOutputs(logits=predictions)
    batch = {"input_ids": ids((3, 5)), "attention_mask": ids((3, 5)),
             "token_type_ids": ids((3, 5)), "labels": tf.constant(labels, tf.float32)}
    loss, sums = regression_loss(model, batch, training=True)
    assert float(loss) == pytest.approx((0.25 + 0.0 + 16.0) / 3, rel=1e-6)
    assert float(sums["loss_sum"]) == pytest.approx(16.25, rel=1e-6)
    assert float(sums["examples"]) == 3
