"""Recomputing a layer in the backward pass (albert.model.recompute) on a toy shared layer: the
same values and gradients as calling it, dropout masks included; set_recompute's modes."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert.errors import SettingError
from albert.model.dropout import SITE_FFN_OUTPUT, StatelessDropout, dropout_key, layer_scope
from albert.model.recompute import recomputed, set_recompute, weights_of


class ToyLayer(keras.layers.Layer):
    """y = dropout(tanh(x @ w + b)) + x * bias_scale: the call signature recomputed expects."""

    def __init__(self, rate=0.0):
        super().__init__()
        self.dropout = StatelessDropout(rate, SITE_FFN_OUTPUT)

    def build(self, input_shape=None):
        self.w = self.add_weight(shape=(6, 6), initializer="glorot_uniform", name="w")
        self.b = self.add_weight(shape=(6,), initializer="ones", name="b")

    def call(self, x, bias, training=False):
        return self.dropout(tf.tanh(x @ self.w + self.b), training=training) + x * bias


def run(layer, x, applications, recompute):
    """The output of `applications` chained applications of `layer`, and the gradients of its sum
    with respect to x and the layer's weights."""
    bias = tf.constant(0.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        weights = weights_of(layer)
        for i in range(applications):
            with layer_scope(i):
                if recompute:
                    y, weights = recomputed(layer, weights, y, bias, training=True)
                else:
                    y = layer(y, bias, training=True)
        loss = tf.reduce_sum(y * y)
    return y, tape.gradient(loss, [x, *layer.trainable_variables])


@pytest.fixture
def x():
    return tf.constant(np.random.default_rng(0).normal(size=(3, 6)), tf.float32)


@pytest.mark.parametrize("rate", [0.0, 0.3], ids=["no dropout", "keyed dropout"])
def test_recomputed_applications_give_the_same_values_and_gradients(x, rate):
    layer = ToyLayer(rate)
    layer.build()
    with dropout_key(tf.constant([4, 2], tf.int64)):
        y, grads = run(layer, x, 3, recompute=False)
        y_r, grads_r = run(layer, x, 3, recompute=True)
    np.testing.assert_array_equal(y_r.numpy(), y.numpy())
    for name, a, b in zip(["x", "w", "b"], grads, grads_r, strict=True):
        # Every application's weight gradient reaches the running sum.
        np.testing.assert_allclose(tf.convert_to_tensor(b).numpy(),
                                   tf.convert_to_tensor(a).numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_without_a_key_the_recomputation_draws_the_forward_pass_masks():
    # y = dropout(ones) * w: dL/dw for L = sum(y) is the number of kept elements (times the
    # scale) of the mask the backward pass draws; it matches y only if that mask is the forward
    # pass's.
    class Scale(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dropout = StatelessDropout(0.5, SITE_FFN_OUTPUT)

        def build(self, input_shape=None):
            self.w = self.add_weight(shape=(), initializer="ones", name="w")

        def call(self, x, bias, training=False):
            return self.dropout(x, training=training) * self.w

    layer = Scale()
    layer.build()
    x = tf.ones([64, 64])
    with tf.GradientTape() as tape:
        y, _ = recomputed(layer, weights_of(layer), x, tf.constant(0.0), training=True)
        loss = tf.reduce_sum(y)
    (grad,) = tape.gradient(loss, layer.trainable_variables)
    assert float(grad) == pytest.approx(float(loss))
    assert 0 < float(loss) < 2 * 64 * 64  # dropout did drop something


def test_set_recompute_sets_the_encoder_mode_and_rejects_others():
    from albert import AlbertConfig, AlbertModel

    model = AlbertModel(AlbertConfig.from_preset("tiny", vocab_size=50))
    assert model.albert.encoder.recompute == "none"
    set_recompute(model, "layers")
    assert model.albert.encoder.recompute == "layers"
    with pytest.raises(SettingError, match="^mode must be one of"):
        set_recompute(model, "attention")
    assert model.albert.encoder.recompute == "layers"
