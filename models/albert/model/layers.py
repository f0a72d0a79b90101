"""The layers of the ALBERT network: embeddings, the transformer layer, the encoder that applies
the shared layer groups, the backbone, the masked-LM head; their initialisers and helpers.

Shapes: B = batch, S = sequence length, P = predicted (masked) positions, E = embedding_size,
H = hidden_size, N = attention heads, D = H / N, V = vocab_size.

ALBERT = BERT with (1) factorized embeddings: tokens are embedded in E << H dimensions and projected
to H once; (2) cross-layer parameter sharing: `num_hidden_groups` groups of `inner_group_num`
transformer layers are reused to make `num_hidden_layers` layers; (3) a sentence-order prediction
head instead of next-sentence prediction (albert.model.modeling).

Mixed precision: under the `mixed_float16` / `mixed_bfloat16` Keras policies, matmuls run in the
low precision while LayerNorm, the softmax over attention scores and every returned logit are
float32 (LayerNorm layers are built with dtype float32; the softmax casts explicitly).
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from albert.model.config import AlbertConfig
from albert.model.dropout import (
    SITE_ATTENTION_OUTPUT,
    SITE_ATTENTION_PROBS,
    SITE_EMBEDDINGS,
    SITE_FFN_OUTPUT,
    StatelessDropout,
    layer_scope,
)
from albert.model.recompute import recomputed, weights_of


def get_activation(name: str):
    """Activation by HF name: gelu_new is the tanh approximation, gelu the exact erf form."""
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: tf.nn.gelu(x, approximate=True)
    if name == "gelu":
        return lambda x: tf.nn.gelu(x, approximate=False)
    if name == "relu":
        return tf.nn.relu
    raise ValueError(f"unsupported activation {name!r}")


def initializer(config: AlbertConfig):
    """Every weight matrix's initialiser, as BERT's: truncated normal, stddev initializer_range."""
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def layer_norm(config: AlbertConfig, name: str) -> keras.layers.LayerNormalization:
    """LayerNorm over the last axis, in float32 under every precision policy: inputs are cast up,
    so its statistics and output keep full precision."""
    return keras.layers.LayerNormalization(
        epsilon=config.layer_norm_eps, dtype="float32", name=name
    )


def dense(config: AlbertConfig, units: int, name: str) -> keras.layers.Dense:
    """A dense layer [.., in] -> [.., units] with the config's initialiser."""
    return keras.layers.Dense(units, kernel_initializer=initializer(config), name=name)


def attention_bias(attention_mask: tf.Tensor) -> tf.Tensor:
    """[B, S] mask of 1 (attend) / 0 (padding) -> [B, 1, 1, S] additive float32 bias."""
    mask = tf.cast(attention_mask, tf.float32)
    return (1.0 - mask[:, None, None, :]) * -1e9


class _Layer(keras.layers.Layer):
    """Base for our layers: no automatic input casting.

    Keras would cast every float argument to the compute dtype, turning the float32 attention bias
    into fp16 (-1e9 -> -inf) and the float32 residual stream into fp16; we cast where it matters.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False


class AlbertEmbeddings(_Layer):
    """Word + position + token-type embeddings in E dimensions, LayerNorm, dropout.

    (input_ids, token_type_ids, each int [B, S]) -> [B, S, E].
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.layer_norm = layer_norm(config, "LayerNorm")
        self.dropout = StatelessDropout(config.hidden_dropout_prob, SITE_EMBEDDINGS)

    def build(self, input_shape=None):
        c = self.config
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(c.vocab_size, c.embedding_size),
            initializer=initializer(c),
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(c.max_position_embeddings, c.embedding_size),
            initializer=initializer(c),
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings",
            shape=(c.type_vocab_size, c.embedding_size),
            initializer=initializer(c),
        )
        self.layer_norm.build((None, None, c.embedding_size))

    def call(self, input_ids, token_type_ids, training=False):
        seq_len = tf.shape(input_ids)[1]
        x = tf.gather(self.word_embeddings, input_ids)
        x += tf.gather(self.token_type_embeddings, token_type_ids)
        x += self.position_embeddings[None, :seq_len, :]
        x = self.layer_norm(x)
        return self.dropout(x, training=training)


class AlbertLayer(_Layer):
    """One transformer block: self-attention then feed-forward, each with residual + LayerNorm.

    Post-LN (ALBERT/BERT): x = LN(x + Attn(x)); x = LN(x + FFN(x)).
    Pre-LN (config.pre_layer_norm): x = x + Attn(LN(x)); x = x + FFN(LN(x)); the encoder then
    applies one final LayerNorm.

    (x [B, S, H], bias [B, 1, 1, S] from attention_bias) -> [B, S, H].
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        h = config.hidden_size
        self.query = dense(config, h, "query")
        self.key = dense(config, h, "key")
        self.value = dense(config, h, "value")
        self.attention_output = dense(config, h, "attention_output")
        self.attention_norm = layer_norm(config, "attention_norm")
        self.ffn = dense(config, config.intermediate_size, "ffn")
        self.ffn_output = dense(config, h, "ffn_output")
        self.ffn_norm = layer_norm(config, "ffn_norm")
        self.activation = get_activation(config.hidden_act)
        self.attention_dropout = StatelessDropout(config.attention_probs_dropout_prob,
                                                  SITE_ATTENTION_PROBS)
        self.attention_output_dropout = StatelessDropout(config.hidden_dropout_prob,
                                                         SITE_ATTENTION_OUTPUT)
        self.ffn_dropout = StatelessDropout(config.hidden_dropout_prob, SITE_FFN_OUTPUT)

    def build(self, input_shape=None):
        c = self.config
        for projection in (self.query, self.key, self.value, self.attention_output, self.ffn):
            projection.build((None, None, c.hidden_size))
        self.ffn_output.build((None, None, c.intermediate_size))
        self.attention_norm.build((None, None, c.hidden_size))
        self.ffn_norm.build((None, None, c.hidden_size))

    def _split_heads(self, x, batch, seq_len):
        """[B, S, H] -> [B, N, S, D]."""
        c = self.config
        x = tf.reshape(x, [batch, seq_len, c.num_attention_heads, c.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def _attention(self, x, bias, training):
        """Multi-head self-attention on [B, S, H] -> [B, S, H] (before the residual)."""
        batch, seq_len = tf.shape(x)[0], tf.shape(x)[1]
        q = self._split_heads(self.query(x), batch, seq_len)
        k = self._split_heads(self.key(x), batch, seq_len)
        v = self._split_heads(self.value(x), batch, seq_len)
        q = q * tf.cast(1.0 / math.sqrt(self.config.head_size), q.dtype)
        scores = tf.matmul(q, k, transpose_b=True)  # [B, N, S, S]
        # Softmax in float32: fp16 scores overflow and bf16 loses the small probabilities.
        probs = tf.nn.softmax(tf.cast(scores, tf.float32) + bias, axis=-1)
        probs = self.attention_dropout(probs, training=training)
        context = tf.matmul(tf.cast(probs, v.dtype), v)  # [B, N, S, D]
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]),
                             [batch, seq_len, self.config.hidden_size])
        return self.attention_output_dropout(self.attention_output(context), training=training)

    def _feed_forward(self, x, training):
        h = self.ffn_output(self.activation(self.ffn(x)))
        return self.ffn_dropout(h, training=training)

    def call(self, x, bias, training=False):
        if self.config.pre_layer_norm:
            x = x + tf.cast(self._attention(self.attention_norm(x), bias, training), x.dtype)
            return x + tf.cast(self._feed_forward(self.ffn_norm(x), training), x.dtype)
        x = self.attention_norm(tf.cast(x, self.compute_dtype) + self._attention(x, bias, training))
        return self.ffn_norm(tf.cast(x, self.compute_dtype) + self._feed_forward(x, training))


class AlbertEncoder(_Layer):
    """Projection E -> H, then num_hidden_layers applications of the shared layer groups.

    Layer i runs group i // (num_hidden_layers / num_hidden_groups); a group is `inner_group_num`
    distinct AlbertLayers run in order. With the defaults (1 group of 1 layer) all layers share one
    set of weights.

    Layer application k (counted over groups and inner layers) draws its dropout masks in
    layer_scope(k), so two applications of one shared layer draw different masks.

    `recompute` ("none" or "layers", set by albert.model.recompute.set_recompute): with "layers",
    training-mode calls keep only each layer application's input [B, S, H] for the backward pass
    and recompute the rest.

    (embeddings [B, S, E], bias [B, 1, 1, S]) -> [B, S, H] float32.
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        # No autocasting in the encoder's own scope: with recompute, call() reads the shared
        # weights as float32 tensors (each layer still casts them to its compute dtype).
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.config = config
        self.recompute = "none"
        self.embedding_projection = dense(config, config.hidden_size, "embedding_projection")
        # One attribute per layer: tf.train.Checkpoint follows layer attributes but not Keras 3's
        # tracked lists, which would silently leave the transformer layers out of checkpoints.
        self._layer_names = []
        for g in range(config.num_hidden_groups):
            for i in range(config.inner_group_num):
                name = f"group_{g}_layer_{i}"
                setattr(self, name, AlbertLayer(config, name=name))
                self._layer_names.append(name)
        self.final_norm = layer_norm(config, "final_norm") if config.pre_layer_norm else None

    @property
    def shared_layers(self) -> list[AlbertLayer]:
        """The distinct transformer layers, group-major."""
        return [getattr(self, name) for name in self._layer_names]

    @property
    def groups(self) -> list[list[AlbertLayer]]:
        """The layer groups: groups[g][i] is layer i of group g."""
        n = self.config.inner_group_num
        return [self.shared_layers[g * n:(g + 1) * n] for g in range(self.config.num_hidden_groups)]

    def build(self, input_shape=None):
        self.embedding_projection.build((None, None, self.config.embedding_size))
        for layer in self.shared_layers:
            layer.build()
        if self.final_norm is not None:
            self.final_norm.build((None, None, self.config.hidden_size))

    def call(self, embeddings, bias, training=False):
        c = self.config
        # float32 residual stream between blocks (post-LN blocks end in a float32 LayerNorm anyway).
        x = tf.cast(self.embedding_projection(embeddings), tf.float32)
        layers_per_group = c.num_hidden_layers // c.num_hidden_groups
        groups = self.groups
        recompute = training and self.recompute == "layers"
        weights = {}
        if recompute:
            weights = {layer.name: weights_of(layer) for layer in self.shared_layers}
        for i in range(c.num_hidden_layers):
            for j, layer in enumerate(groups[i // layers_per_group]):
                with layer_scope(i * c.inner_group_num + j):
                    if recompute:
                        x, weights[layer.name] = recomputed(layer, weights[layer.name], x,
                                                            bias, training)
                    else:
                        x = layer(x, bias, training=training)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x


class AlbertBackbone(_Layer):
    """Embeddings + encoder + pooler.

    Inputs: input_ids, token_type_ids, attention_mask, each int [B, S].
    Returns (sequence_output [B, S, H] float32, pooled_output [B, H] float32).
    """

    def __init__(self, config: AlbertConfig, add_pooler: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.embeddings = AlbertEmbeddings(config, name="embeddings")
        self.encoder = AlbertEncoder(config, name="encoder")
        self.pooler = dense(config, config.hidden_size, "pooler") if add_pooler else None

    def build(self, input_shape=None):
        self.embeddings.build()
        self.encoder.build()
        if self.pooler is not None:
            self.pooler.build((None, self.config.hidden_size))

    def call(self, input_ids, token_type_ids, attention_mask, training=False):
        x = self.embeddings(input_ids, token_type_ids, training=training)
        x = self.encoder(x, attention_bias(attention_mask), training=training)
        sequence_output = tf.cast(x, tf.float32)
        pooled = None
        if self.pooler is not None:
            pooled = tf.cast(tf.tanh(self.pooler(x[:, 0])), tf.float32)
        return sequence_output, pooled


class AlbertMLMHead(_Layer):
    """Masked-LM head: dense H -> E, activation, LayerNorm, decoder tied to the word embeddings.

    Runs only on the gathered positions, so the [.., V] projection costs P, not S, rows.
    [B, P, H] -> [B, P, V] float32 logits.
    """

    def __init__(self, config: AlbertConfig, embeddings: AlbertEmbeddings, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.embeddings = embeddings
        self.dense = dense(config, config.embedding_size, "dense")
        self.layer_norm = layer_norm(config, "LayerNorm")
        self.activation = get_activation(config.hidden_act)

    def build(self, input_shape=None):
        self.dense.build((None, None, self.config.hidden_size))
        self.layer_norm.build((None, None, self.config.embedding_size))
        self.bias = self.add_weight(name="bias", shape=(self.config.vocab_size,),
                                    initializer="zeros")

    def call(self, hidden):
        x = self.layer_norm(self.activation(self.dense(hidden)))
        x = tf.cast(x, self.compute_dtype)
        table = tf.cast(self.embeddings.word_embeddings, self.compute_dtype)
        logits = tf.matmul(x, table, transpose_b=True)
        return tf.cast(logits, tf.float32) + tf.cast(self.bias, tf.float32)


def gather_positions(sequence: tf.Tensor, positions: tf.Tensor) -> tf.Tensor:
    """Pick rows of [B, S, H] at int positions [B, P] -> [B, P, H]."""
    return tf.gather(sequence, tf.cast(positions, tf.int32), batch_dims=1)
