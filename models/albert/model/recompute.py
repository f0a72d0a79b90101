"""Recomputing a transformer layer's activations in the backward pass (`--recompute layers`).

The encoder (albert.model.layers.AlbertEncoder) calls `recomputed` once per layer application
instead of the layer itself; `set_recompute` switches a model's encoder between the two. Any layer
object called as layer(x, bias, training=...) works here: this module knows nothing of its inside.

Shapes: B = batch, S = sequence length, H = hidden_size.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert.errors import SettingError
from albert.model.config import RECOMPUTE_MODES
from albert.model.dropout import active_key, dropout_key


def set_recompute(model, mode: str) -> None:
    """Recompute each transformer layer's activations in the backward pass ("layers") or keep
    them ("none"), for any of the public models. Set before the training step is traced."""
    if mode not in RECOMPUTE_MODES:
        raise SettingError(f"{{mode}} must be one of {RECOMPUTE_MODES}, got {mode!r}",
                           ("mode", "recompute"))
    model.albert.encoder.recompute = mode


def weights_of(layer) -> list[tf.Tensor]:
    """The layer's trainable variables read as tensors, in the order `recomputed` takes them."""
    return [tf.convert_to_tensor(v.value) for v in layer.trainable_variables]


def recomputed(layer, weights, x, bias, training):
    """One application of a shared layer keeping only its inputs for the backward pass, where it
    runs again: (y [B, S, H], the weights handed on to the next application).

    `weights`: weights_of(layer) for the first application, else what the previous application
    handed on. x [B, S, H]; bias [B, 1, 1, S] (albert.model.layers.attention_bias).

    The recomputation draws the forward pass's dropout masks (same key). Its inputs are made to
    depend on the incoming gradient (`_after`): otherwise XLA sees the same ops on the same
    operands twice, merges them (CSE) or schedules the recomputation inside the forward pass, and
    the activations stay alive until the backward pass anyway.

    The weights come in as tensors and are handed on from application to application, so the
    backward pass adds each application's weight gradient to the running sum that comes back
    through them (`_accumulate`) instead of leaving the tape to sum every application's partial at
    the end: each partial is a full copy of the layer's weights (0.8 GB for xxlarge) and would
    outweigh the activations recomputation saves.
    """
    key = active_key()
    if key is None:
        # Plain dropout outside a dropout_key block: fix this application's key so the
        # recomputation draws the masks the forward pass drew.
        key = tf.random.uniform([2], maxval=2**31 - 1, dtype=tf.int64)

    @tf.custom_gradient
    def run(x, bias, key, *weights):
        with dropout_key(key):
            y = _with_weights(layer, weights, x, bias, training)
        handed = [tf.identity(w) for w in weights]

        def grad(dy, *running):
            x_, key_ = _after(dy, x, key)
            with tf.GradientTape() as tape:
                tape.watch([x_, *weights])
                with dropout_key(key_):
                    y_ = _with_weights(layer, weights, x_, bias, training)
            grads = tape.gradient(y_, [x_, *weights], output_gradients=dy,
                                  unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return (grads[0], None, None, *_accumulate(grads[1:], running, dy))

        return (y, *handed), grad

    y, *handed = run(x, bias, key, *weights)
    return y, handed


def _with_weights(layer, weights, x, bias, training):
    """layer(x, bias) computed with `weights` (tensors, in layer.trainable_variables order) in place
    of its variables, so their gradients arrive as gradients of these tensors."""
    mapping = list(zip(layer.trainable_variables, weights, strict=True))
    with keras.StatelessScope(mapping, initialize_variables=False):
        return layer(x, bias, training=training)


def _accumulate(gradients, running_sums, dy):
    """gradients + running_sums (None where nothing came back yet).

    The additions run in a loop XLA cannot see the trip count of (once, unless `dy` is NaN, when
    the update is skipped anyway): XLA fuses chains of elementwise additions, even through
    conditionals and optimization barriers, into one that reads every operand at the end, which
    would keep the partial gradient of every application alive; a loop is not fused, so each
    application's partials are added and freed in turn."""
    pairs = [(g, tf.cast(r, g.dtype)) for g, r in zip(gradients, running_sums, strict=True)
             if r is not None]
    if not pairs:
        return list(gradients)
    first = tf.cast(tf.reshape(dy, [-1])[:1], tf.float32)
    trips = tf.cast(tf.reduce_all(tf.equal(first, first)), tf.int32)
    partials = [g for g, _ in pairs]

    def body(i, *sums):
        return (i + 1, *[a + b for a, b in zip(sums, partials, strict=True)])

    _, *summed = tf.while_loop(lambda i, *_: i < trips, body,
                               (tf.constant(0), *[r for _, r in pairs]))
    summed = iter(summed)
    return [g if r is None else next(summed) for g, r in zip(gradients, running_sums,
                                                             strict=True)]


def _after(dy, *tensors):
    """`tensors` with their values unchanged, computed from one element of `dy`.

    A data dependency is the one ordering XLA keeps: it drops control dependencies, and its CPU
    pipeline removes optimization barriers before scheduling. Comparing a float with itself is
    false only for NaN, which XLA cannot fold away; a NaN gradient makes the update skip anyway.
    """
    first = tf.cast(tf.reshape(dy, [-1])[:1], tf.float32)
    finite = tf.reduce_all(tf.equal(first, first))
    return [t + tf.where(finite, tf.zeros([], t.dtype), tf.ones([], t.dtype)) for t in tensors]
