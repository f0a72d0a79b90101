"""Keyed stateless dropout (albert.model.dropout): a mask is a function of key, layer and site."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert.model.dropout import (
    SITE_ATTENTION_OUTPUT,
    SITE_ATTENTION_PROBS,
    SITE_CLASSIFIER,
    SITE_EMBEDDINGS,
    SITE_FFN_OUTPUT,
    SITE_SOP,
    StatelessDropout,
    active_key,
    dropout_key,
    layer_scope,
)

X = tf.ones([8, 64])
KEY = tf.constant([7, 11], tf.int64)


def mask(rate=0.5, site=SITE_EMBEDDINGS, key=KEY, layer=None, training=True):
    """Where StatelessDropout keeps X (bool [8, 64]), under `key` and, if given, layer_scope."""
    drop = StatelessDropout(rate, site)
    with dropout_key(key):
        if layer is None:
            return drop(X, training=training).numpy() != 0
        with layer_scope(layer):
            return drop(X, training=training).numpy() != 0


def test_the_same_key_site_and_layer_draw_the_same_mask():
    np.testing.assert_array_equal(mask(), mask())
    np.testing.assert_array_equal(mask(layer=3), mask(layer=3))


@pytest.mark.parametrize("other", [
    dict(key=tf.constant([7, 12], tf.int64)),
    dict(site=SITE_FFN_OUTPUT),
    dict(layer=0),
], ids=["another key", "another site", "inside a layer"])
def test_another_key_site_or_layer_draws_another_mask(other):
    assert (mask() != mask(**other)).any()


def test_each_layer_application_draws_its_own_mask():
    masks = [mask(layer=i) for i in range(4)]
    for i in range(4):
        for j in range(i):
            assert (masks[i] != masks[j]).any(), (i, j)


def test_site_constants_are_distinct_and_stable():
    # A saved run's masks depend on these numbers: changing one changes a resumed run's masks.
    assert (SITE_EMBEDDINGS, SITE_ATTENTION_PROBS, SITE_ATTENTION_OUTPUT, SITE_FFN_OUTPUT,
            SITE_SOP, SITE_CLASSIFIER) == (1, 2, 3, 4, 5, 6)


def test_kept_elements_are_scaled_and_about_rate_are_dropped():
    drop = StatelessDropout(0.25, SITE_EMBEDDINGS)
    x = tf.ones([256, 256])
    with dropout_key(KEY):
        y = drop(x, training=True).numpy()
    assert set(np.unique(y)) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.01


@pytest.mark.parametrize("rate, training", [(0.0, True), (0.5, False)],
                         ids=["rate 0", "not training"])
def test_identity_at_rate_zero_or_outside_training(rate, training):
    x = tf.random.normal([4, 5])
    with dropout_key(KEY):
        y = StatelessDropout(rate, SITE_SOP)(x, training=training)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_without_a_key_each_call_draws_a_fresh_mask():
    drop = StatelessDropout(0.5, SITE_EMBEDDINGS)
    assert (drop(X, training=True).numpy() != drop(X, training=True).numpy()).any()


def test_nested_keys_use_the_innermost_and_restore_the_outer():
    assert active_key() is None
    inner = tf.constant([1, 2], tf.int64)
    drop = StatelessDropout(0.5, SITE_EMBEDDINGS)
    with dropout_key(KEY):
        with dropout_key(inner):
            assert active_key() is inner
            nested = drop(X, training=True).numpy() != 0
        assert active_key() is KEY
    assert active_key() is None
    np.testing.assert_array_equal(nested, mask(key=inner))
    with layer_scope(0):  # no key open: nothing to fold into
        assert active_key() is None


def test_rate_must_be_below_one():
    for rate in (-0.1, 1.0):
        with pytest.raises(ValueError, match="dropout rate"):
            StatelessDropout(rate, SITE_EMBEDDINGS)


def test_float32_inputs_stay_float32_under_mixed_precision():
    # The attention probabilities are float32 under mixed_float16: rounding them to fp16 before
    # the mask would change the numbers (Keras casts layer inputs unless told not to).
    keras.mixed_precision.set_global_policy("mixed_float16")
    x = tf.fill([4, 4], tf.constant(1 / 3, tf.float32))
    with dropout_key(KEY):
        y = StatelessDropout(0.5, SITE_ATTENTION_PROBS)(x, training=True)
    assert y.dtype == tf.float32
    kept = y.numpy()[y.numpy() != 0]
    np.testing.assert_array_equal(kept, np.float32(1 / 3) * np.float32(2.0))


def test_a_key_opened_in_one_thread_is_not_seen_in_another():
    """The open keys are per thread: a model called in another thread (a data or evaluation
    thread) while a training step holds a key draws from no key of that step."""
    import threading

    seen = []
    with dropout_key(tf.constant([1, 2])):
        thread = threading.Thread(target=lambda: seen.append(active_key()))
        thread.start()
        thread.join()
        assert active_key() is not None
    assert seen == [None]
