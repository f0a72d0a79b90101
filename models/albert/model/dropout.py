"""Stateless dropout: every mask is a function of a key, not of a random generator's state.

The trainer opens `dropout_key(key)` around each micro-batch's forward pass, with a key made of
(seed, rank, update, micro-batch). The encoder folds each transformer layer application's position
into it (`layer_scope`) and each dropout site folds in its own constant (`SITE_*`), so every mask
is fixed by where and when it is drawn: a resumed run draws exactly the masks the straight run drew
(nothing to checkpoint), each rank draws its own, and a forward pass recomputed during the backward
pass (albert.model.recompute) draws the same masks.
"""

from __future__ import annotations

import contextlib
import threading

import keras
import tensorflow as tf


class _OpenKeys(threading.local):
    """The keys of the open dropout_key blocks, innermost last (read while the step is traced).
    Per thread: a model traced in one thread must not draw from a block another thread opened."""

    def __init__(self):
        self.stack = []


_open = _OpenKeys()

# One constant per dropout site. Stable across versions: a saved run's masks depend on them.
SITE_EMBEDDINGS, SITE_ATTENTION_PROBS, SITE_ATTENTION_OUTPUT, SITE_FFN_OUTPUT = 1, 2, 3, 4
SITE_SOP, SITE_CLASSIFIER = 5, 6
# Layer application i folds in _LAYER_SCOPE + i: apart from the site constants, and as stable.
_LAYER_SCOPE = 1000


@contextlib.contextmanager
def dropout_key(key):
    """Inside the block, training-mode dropout draws its masks from `key` (int [2], a stateless
    seed as tf.random.stateless_uniform takes). Nested blocks use the innermost key."""
    _open.stack.append(key)
    try:
        yield
    finally:
        _open.stack.pop()


def active_key():
    """The innermost open dropout_key's key (int [2]), or None outside every block."""
    return _open.stack[-1] if _open.stack else None


@contextlib.contextmanager
def layer_scope(index: int):
    """Inside the block, masks are drawn from the active key folded with `index` (the position of
    a transformer layer application in the network). Outside every dropout_key block: no effect."""
    if not _open.stack:
        yield
        return
    key = tf.random.experimental.stateless_fold_in(_open.stack[-1], _LAYER_SCOPE + index)
    with dropout_key(key):
        yield


class StatelessDropout(keras.layers.Layer):
    """Inverted dropout whose mask is drawn from the active key folded with `site`.

    x [any shape] -> x with each element zeroed with probability `rate` and the rest scaled by
    1 / (1 - rate); x unchanged when not training or rate is 0. Outside any dropout_key block (a
    user calling the model with training=True) each call draws a fresh random key, which is
    ordinary dropout.
    """

    def __init__(self, rate: float, site: int, **kwargs):
        super().__init__(**kwargs)
        # Keras would cast x to the compute dtype: the float32 attention probabilities would be
        # rounded to fp16 before their mask, not after.
        self._convert_input_args = False
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
        self.rate, self.site = float(rate), site

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        if _open.stack:
            seed = tf.random.experimental.stateless_fold_in(_open.stack[-1], self.site)
        else:
            seed = tf.random.uniform([2], maxval=2**31 - 1, dtype=tf.int32)
        keep = tf.random.stateless_uniform(tf.shape(x), seed=seed) >= self.rate
        return x * tf.cast(keep, x.dtype) * tf.cast(1.0 / (1.0 - self.rate), x.dtype)
