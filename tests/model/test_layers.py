"""The layers of the network (albert.model.layers): the attention bias masks padded keys, the
shared layer groups are applied in order, the masked-LM decoder is the word embeddings, rows are
gathered at their positions."""

import numpy as np
import pytest
import tensorflow as tf

from albert.model.config import AlbertConfig
from albert.model.layers import (
    AlbertEncoder,
    AlbertLayer,
    attention_bias,
    gather_positions,
    get_activation,
)


def tiny(**overrides):
    return AlbertConfig.from_preset("tiny", vocab_size=50, **overrides)


def test_attention_bias_is_zero_on_tokens_and_hugely_negative_on_padding():
    bias = attention_bias(tf.constant([[1, 1, 0], [1, 0, 0]])).numpy()
    assert bias.shape == (2, 1, 1, 3) and bias.dtype == np.float32
    np.testing.assert_array_equal(bias[:, 0, 0] == 0, [[True, True, False], [True, False, False]])
    assert bias.max() == 0 and bias.min() <= -1e9


def test_a_padded_key_gets_no_attention_whatever_it_holds():
    layer = AlbertLayer(tiny(), name="layer")
    layer.build()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 5, layer.config.hidden_size)).astype(np.float32)
    other = x.copy()
    other[0, 3:] = rng.normal(size=(2, layer.config.hidden_size)) * 100  # the padded keys
    bias = attention_bias(tf.constant([[1, 1, 1, 0, 0]]))
    a, b = layer(tf.constant(x), bias).numpy(), layer(tf.constant(other), bias).numpy()
    np.testing.assert_allclose(a[0, :3], b[0, :3], atol=1e-5)
    # Without the bias the padded keys do change the real tokens.
    unmasked = attention_bias(tf.ones((1, 5)))
    c, d = layer(tf.constant(x), unmasked).numpy(), layer(tf.constant(other), unmasked).numpy()
    assert np.abs(c[0, :3] - d[0, :3]).max() > 1e-3


@pytest.mark.parametrize("groups, inner", [(1, 1), (2, 1), (1, 2)])
def test_the_encoder_shares_its_groups_layers_across_the_depth(groups, inner):
    config = tiny(num_hidden_layers=4, num_hidden_groups=groups, inner_group_num=inner)
    encoder = AlbertEncoder(config, name="encoder")
    encoder.build()
    assert len(encoder.groups) == groups and all(len(g) == inner for g in encoder.groups)
    assert len(encoder.shared_layers) == groups * inner
    names = [w.path for w in encoder.weights]
    assert len(names) == len(set(names))
    # The encoder's output is its groups applied in order, each layers_per_group times.
    rng = np.random.default_rng(1)
    embeddings = tf.constant(rng.normal(size=(2, 6, config.embedding_size)), tf.float32)
    bias = attention_bias(tf.ones((2, 6)))
    x = encoder.embedding_projection(embeddings)
    for i in range(4):
        for layer in encoder.groups[i // (4 // groups)]:
            x = layer(x, bias)
    np.testing.assert_allclose(encoder(embeddings, bias).numpy(), x.numpy(), atol=1e-5)


def test_activations_by_their_hf_names():
    x = tf.constant([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(get_activation("relu")(x).numpy(), [0.0, 0.0, 2.0])
    exact, tanh = get_activation("gelu")(x).numpy(), get_activation("gelu_new")(x).numpy()
    np.testing.assert_allclose(exact, [-0.158655, 0.0, 1.954500], atol=1e-5)
    assert 0 < np.abs(exact - tanh).max() < 1e-3
    np.testing.assert_array_equal(get_activation("gelu_pytorch_tanh")(x).numpy(), tanh)
    with pytest.raises(ValueError, match="unsupported activation 'swish'"):
        get_activation("swish")


def test_gather_positions_picks_each_sequences_own_rows():
    seq = tf.reshape(tf.range(2 * 4 * 3, dtype=tf.float32), [2, 4, 3])
    out = gather_positions(seq, tf.constant([[3, 0, 3], [1, 2, 0]], tf.int64)).numpy()
    assert out.shape == (2, 3, 3)
    for b, positions in enumerate([[3, 0, 3], [1, 2, 0]]):
        np.testing.assert_array_equal(out[b], seq.numpy()[b, positions])


def test_gather_positions_shapes():
    seq = tf.reshape(tf.range(2 * 4 * 3, dtype=tf.float32), [2, 4, 3])
    out = gather_positions(seq, tf.constant([[3, 0], [1, 1]]))
    np.testing.assert_array_equal(out.numpy()[0, 0], seq.numpy()[0, 3])
    np.testing.assert_array_equal(out.numpy()[1, 1], seq.numpy()[1, 1])
