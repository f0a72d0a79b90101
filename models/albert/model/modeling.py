"""The ALBERT network in Keras 3 (TensorFlow backend), top to bottom in one file.

Shapes: B = batch, S = sequence length, P = predicted (masked) positions, E = embedding_size,
H = hidden_size, N = attention heads, D = H / N, V = vocab_size.

ALBERT = BERT with (1) factorized embeddings: tokens are embedded in E << H dimensions and projected
to H once; (2) cross-layer parameter sharing: `num_hidden_groups` groups of `inner_group_num`
transformer layers are reused to make `num_hidden_layers` layers; (3) a sentence-order prediction
head instead of next-sentence prediction.

Mixed precision: under the `mixed_float16` / `mixed_bfloat16` Keras policies, matmuls run in the
low precision while LayerNorm, the softmax over attention scores and every returned logit are
float32 (LayerNorm layers are built with dtype float32; the softmax casts explicitly).

Dropout is stateless: its masks are a function of a key, not of a random generator's state (see
`dropout_key`).
"""

from __future__ import annotations

import contextlib
import math

import keras
import tensorflow as tf

from albert.errors import CheckpointError, FlagError
from albert.model.config import RECOMPUTE_MODES, AlbertConfig


def get_activation(name: str):
    """Activation by HF name: gelu_new is the tanh approximation, gelu the exact erf form."""
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: tf.nn.gelu(x, approximate=True)
    if name == "gelu":
        return lambda x: tf.nn.gelu(x, approximate=False)
    if name == "relu":
        return tf.nn.relu
    raise ValueError(f"unsupported activation {name!r}")


def _init(config: AlbertConfig):
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def _layer_norm(config: AlbertConfig, name: str) -> keras.layers.LayerNormalization:
    # float32 dtype: inputs are cast up, statistics and output stay in full precision.
    return keras.layers.LayerNormalization(
        epsilon=config.layer_norm_eps, dtype="float32", name=name
    )


def _dense(config: AlbertConfig, units: int, name: str) -> keras.layers.Dense:
    return keras.layers.Dense(units, kernel_initializer=_init(config), name=name)


def attention_bias(attention_mask: tf.Tensor) -> tf.Tensor:
    """[B, S] mask of 1 (attend) / 0 (padding) -> [B, 1, 1, S] additive float32 bias."""
    mask = tf.cast(attention_mask, tf.float32)
    return (1.0 - mask[:, None, None, :]) * -1e9


# -- stateless dropout -------------------------------------------------------------------------
# The trainer opens `dropout_key(key)` around each micro-batch's forward pass, with a key made of
# (seed, rank, update, micro-batch). Each application of a transformer layer folds in its position
# in the network and each dropout site its own constant, so every mask is fixed by where and when
# it is drawn: a resumed run draws exactly the masks the straight run drew (nothing to
# checkpoint), each rank draws its own, and a forward pass recomputed during the backward pass
# draws the same masks.
_dropout_keys: list = []

# One constant per dropout site (stable across versions: a saved run's masks depend on them).
SITE_EMBEDDINGS, SITE_ATTENTION_PROBS, SITE_ATTENTION_OUTPUT, SITE_FFN_OUTPUT = 1, 2, 3, 4
SITE_SOP, SITE_CLASSIFIER = 5, 6
_LAYER_SCOPE = 1000  # layer application i folds in _LAYER_SCOPE + i


@contextlib.contextmanager
def dropout_key(key):
    """Inside the block, training-mode dropout draws its masks from `key` (int [2], a stateless
    seed as tf.random.stateless_uniform takes). Nested calls fold `key` into the outer key."""
    _dropout_keys.append(key)
    try:
        yield
    finally:
        _dropout_keys.pop()


@contextlib.contextmanager
def _dropout_scope(index: int):
    """Fold `index` (a layer application's position) into the active key, if there is one."""
    if not _dropout_keys:
        yield
        return
    with dropout_key(tf.random.experimental.stateless_fold_in(_dropout_keys[-1], index)):
        yield


class _Layer(keras.layers.Layer):
    """Base for our layers: no automatic input casting.

    Keras would cast every float argument to the compute dtype, turning the float32 attention bias
    into fp16 (-1e9 -> -inf) and the float32 residual stream into fp16; we cast where it matters.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False


class StatelessDropout(_Layer):
    """Inverted dropout whose mask is drawn from the active `dropout_key` folded with `site`.

    Outside any `dropout_key` block (a user calling the model with training=True), each call draws
    a fresh random key, which is ordinary dropout.
    """

    def __init__(self, rate: float, site: int, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
        self.rate, self.site = float(rate), site

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        if _dropout_keys:
            seed = tf.random.experimental.stateless_fold_in(_dropout_keys[-1], self.site)
        else:
            seed = tf.random.uniform([2], maxval=2**31 - 1, dtype=tf.int32)
        keep = tf.random.stateless_uniform(tf.shape(x), seed=seed) >= self.rate
        return x * tf.cast(keep, x.dtype) * tf.cast(1.0 / (1.0 - self.rate), x.dtype)


class AlbertEmbeddings(_Layer):
    """Word + position + token-type embeddings in E dimensions, LayerNorm, dropout: [B, S, E]."""

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.layer_norm = _layer_norm(config, "LayerNorm")
        self.dropout = StatelessDropout(config.hidden_dropout_prob, SITE_EMBEDDINGS)

    def build(self, input_shape=None):
        c = self.config
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(c.vocab_size, c.embedding_size), initializer=_init(c)
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(c.max_position_embeddings, c.embedding_size),
            initializer=_init(c),
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings",
            shape=(c.type_vocab_size, c.embedding_size),
            initializer=_init(c),
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
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        h = config.hidden_size
        self.query = _dense(config, h, "query")
        self.key = _dense(config, h, "key")
        self.value = _dense(config, h, "value")
        self.attention_output = _dense(config, h, "attention_output")
        self.attention_norm = _layer_norm(config, "attention_norm")
        self.ffn = _dense(config, config.intermediate_size, "ffn")
        self.ffn_output = _dense(config, h, "ffn_output")
        self.ffn_norm = _layer_norm(config, "ffn_norm")
        self.activation = get_activation(config.hidden_act)
        self.attention_dropout = StatelessDropout(config.attention_probs_dropout_prob,
                                                  SITE_ATTENTION_PROBS)
        self.attention_output_dropout = StatelessDropout(config.hidden_dropout_prob,
                                                         SITE_ATTENTION_OUTPUT)
        self.ffn_dropout = StatelessDropout(config.hidden_dropout_prob, SITE_FFN_OUTPUT)

    def build(self, input_shape=None):
        c = self.config
        for dense in (self.query, self.key, self.value, self.attention_output, self.ffn):
            dense.build((None, None, c.hidden_size))
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


# -- shared weights and recomputation ------------------------------------------------------------


def _with_weights(layer: AlbertLayer, weights, x, bias, training):
    """layer(x, bias) computed with `weights` (tensors, in layer.trainable_variables order) in place
    of its variables, so their gradients arrive as gradients of these tensors."""
    mapping = list(zip(layer.trainable_variables, weights, strict=True))
    with keras.StatelessScope(mapping, initialize_variables=False):
        return layer(x, bias, training=training)


def _recomputed(layer: AlbertLayer, weights, x, bias, training):
    """One application of a shared layer keeping only its inputs for the backward pass, where it
    runs again: (y, the weights handed on to the next application).

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
    if _dropout_keys:
        key = _dropout_keys[-1]
    else:
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


class AlbertEncoder(_Layer):
    """Projection E -> H, then num_hidden_layers applications of the shared layer groups.

    Layer i runs group i // (num_hidden_layers / num_hidden_groups); a group is `inner_group_num`
    distinct AlbertLayers run in order. With the defaults (1 group of 1 layer) all layers share one
    set of weights.

    `recompute` ("none" or "layers", see set_recompute): with "layers", training-mode calls keep
    only each layer application's input [B, S, H] for the backward pass and recompute the rest
    (see _recomputed).
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        # No autocasting in the encoder's own scope: with recompute, call() reads the shared
        # weights as float32 tensors (each layer still casts them to its compute dtype).
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.config = config
        self.recompute = "none"
        self.embedding_projection = _dense(config, config.hidden_size, "embedding_projection")
        # One attribute per layer: tf.train.Checkpoint follows layer attributes but not Keras 3's
        # tracked lists, which would silently leave the transformer layers out of checkpoints.
        self._layer_names = []
        for g in range(config.num_hidden_groups):
            for i in range(config.inner_group_num):
                name = f"group_{g}_layer_{i}"
                setattr(self, name, AlbertLayer(config, name=name))
                self._layer_names.append(name)
        self.final_norm = _layer_norm(config, "final_norm") if config.pre_layer_norm else None

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
            weights = {layer.name: [tf.convert_to_tensor(v.value)
                                    for v in layer.trainable_variables]
                       for layer in self.shared_layers}
        for i in range(c.num_hidden_layers):
            for j, layer in enumerate(groups[i // layers_per_group]):
                with _dropout_scope(_LAYER_SCOPE + i * c.inner_group_num + j):
                    if recompute:
                        x, weights[layer.name] = _recomputed(layer, weights[layer.name], x,
                                                             bias, training)
                    else:
                        x = layer(x, bias, training=training)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x


def set_recompute(model, mode: str) -> None:
    """Recompute each transformer layer's activations in the backward pass ("layers") or keep
    them ("none"), for any of the public models. Set before the training step is traced."""
    if mode not in RECOMPUTE_MODES:
        raise FlagError(f"--recompute must be one of {RECOMPUTE_MODES}, got {mode!r}")
    model.albert.encoder.recompute = mode


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
        self.pooler = _dense(config, config.hidden_size, "pooler") if add_pooler else None

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
        self.dense = _dense(config, config.embedding_size, "dense")
        self.layer_norm = _layer_norm(config, "LayerNorm")
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


def _unpack_inputs(inputs):
    """Accept a dict with input_ids and optional attention_mask / token_type_ids."""
    if not isinstance(inputs, dict) or "input_ids" not in inputs:
        raise ValueError("ALBERT models take a dict with at least 'input_ids' (int [batch, seq])")
    input_ids = tf.convert_to_tensor(inputs["input_ids"])
    if input_ids.dtype not in (tf.int32, tf.int64):
        raise ValueError(f"input_ids must be integer token ids, got dtype {input_ids.dtype.name}")
    input_ids = tf.cast(input_ids, tf.int32)
    attention_mask = inputs.get("attention_mask")
    if attention_mask is None:
        attention_mask = tf.ones_like(input_ids)
    token_type_ids = inputs.get("token_type_ids")
    if token_type_ids is None:
        token_type_ids = tf.zeros_like(input_ids)
    return input_ids, tf.cast(token_type_ids, tf.int32), tf.cast(attention_mask, tf.int32)


class _AlbertTaskModel(keras.Model):
    """What every model class shares: `heads`, the task-head layers it declares (their weights are
    what a checkpoint of another kind may lack), and `head_options`, the constructor arguments
    besides the config that a checkpoint settles. Reading and writing checkpoints is
    albert.io.convert's (load_pretrained, save_pretrained)."""

    heads: tuple[str, ...] = ()

    @classmethod
    def head_options(cls, source: str, options: dict, stored_labels: int | None,
                     id2label: dict | None) -> dict:
        """This class takes no options besides the config."""
        options = {k: v for k, v in options.items() if v is not None}
        if options:
            raise TypeError(f"{cls.__name__} takes no {', '.join(sorted(options))}")
        return {}

    def build_for_config(self):
        """Create all variables by running a 1x2 dummy batch."""
        dummy = tf.zeros([1, 2], tf.int32)
        self({"input_ids": dummy, "attention_mask": tf.ones_like(dummy),
              "token_type_ids": dummy})
        return self


class AlbertModel(_AlbertTaskModel):
    """The bare backbone: returns sequence_output [B, S, H] and pooled_output [B, H]."""

    heads = ()

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.albert = AlbertBackbone(config, name="albert")

    def call(self, inputs, training=False):
        input_ids, token_type_ids, attention_mask = _unpack_inputs(inputs)
        seq, pooled = self.albert(input_ids, token_type_ids, attention_mask, training=training)
        return {"sequence_output": seq, "pooled_output": pooled}


class AlbertForPreTraining(_AlbertTaskModel):
    """Backbone + MLM head (at masked_lm_positions, or every position) + sentence-order head.

    Returns {"mlm_logits": [B, P, V], "sop_logits": [B, 2], "sequence_output": [B, S, H]}.
    """

    heads = ("predictions", "sop_classifier")

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.albert = AlbertBackbone(config, name="albert")
        self.predictions = AlbertMLMHead(config, self.albert.embeddings, name="predictions")
        self.sop_dropout = StatelessDropout(config.classifier_dropout_prob, SITE_SOP)
        self.sop_classifier = _dense(config, 2, "sop_classifier")

    def call(self, inputs, training=False):
        input_ids, token_type_ids, attention_mask = _unpack_inputs(inputs)
        seq, pooled = self.albert(input_ids, token_type_ids, attention_mask, training=training)
        positions = inputs.get("masked_lm_positions")
        hidden = seq if positions is None else gather_positions(seq, positions)
        mlm_logits = self.predictions(hidden)
        sop_logits = self.sop_classifier(self.sop_dropout(pooled, training=training))
        return {
            "mlm_logits": mlm_logits,
            "sop_logits": tf.cast(sop_logits, tf.float32),
            "sequence_output": seq,
        }


class AlbertForQuestionAnswering(_AlbertTaskModel):
    """Backbone + span head: start/end logits [B, S] float32.

    SQuAD v2 needs no extra weights: as in BERT's SQuAD v2 recipe, the "no answer" score is
    start_logits[:, 0] + end_logits[:, 0] (the [CLS] position), compared against the best span.
    ALBERT's own v2 recipe differs (a start/end beam search and an answer-class head, as XLNet):
    see the README's "What differs from ALBERT" table.
    """

    heads = ("qa_outputs",)

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.albert = AlbertBackbone(config, add_pooler=False, name="albert")
        self.qa_outputs = _dense(config, 2, "qa_outputs")

    def call(self, inputs, training=False):
        input_ids, token_type_ids, attention_mask = _unpack_inputs(inputs)
        seq, _ = self.albert(input_ids, token_type_ids, attention_mask, training=training)
        logits = tf.cast(self.qa_outputs(seq), tf.float32)  # [B, S, 2]
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}


class AlbertForSequenceClassification(_AlbertTaskModel):
    """Backbone + pooler + dropout + dense, as transformers' AlbertForSequenceClassification.

    Returns {"logits": [B, num_labels] float32}; num_labels=1 is a single regression output.
    label_names (optional, one per class) travel with Hugging Face exports as id2label.
    """

    heads = ("classifier",)

    def __init__(self, config: AlbertConfig, num_labels: int = 2,
                 label_names: list[str] | None = None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 1:
            raise ValueError(f"num_labels must be a positive integer, got {num_labels!r}")
        if label_names is not None and len(label_names) != num_labels:
            raise ValueError(f"{len(label_names)} label names for {num_labels} labels")
        self.config = config
        self.num_labels = num_labels
        # A tuple: Keras would wrap a list in a tracked container.
        self.label_names = tuple(label_names) if label_names is not None else None
        self.albert = AlbertBackbone(config, name="albert")
        self.classifier_dropout = StatelessDropout(config.classifier_dropout_prob, SITE_CLASSIFIER)
        self.classifier = _dense(config, num_labels, "classifier")

    @classmethod
    def head_options(cls, source: str, options: dict, stored_labels: int | None,
                     id2label: dict | None) -> dict:
        """num_labels: the caller's, which must match the checkpoint's classifier when it has
        one; else the classifier's; else the number of id2label entries; else 2. label_names:
        the caller's, else the checkpoint's id2label."""
        num_labels, names = options.get("num_labels"), options.get("label_names")
        if stored_labels is not None:
            if num_labels is not None and num_labels != stored_labels:
                raise CheckpointError(f"{source} holds a classifier for {stored_labels} "
                                      f"label(s), not the {num_labels} asked for")
            num_labels = stored_labels
        if num_labels is None:
            num_labels = len(names) if names else len(id2label) if id2label else 2
        if names is None and id2label and len(id2label) == num_labels:
            try:
                names = [str(id2label[str(i)]) for i in range(num_labels)]
            except KeyError:
                names = None  # not 0..n-1: not names we can order
        return {"num_labels": num_labels, "label_names": names}

    def call(self, inputs, training=False):
        input_ids, token_type_ids, attention_mask = _unpack_inputs(inputs)
        _, pooled = self.albert(input_ids, token_type_ids, attention_mask, training=training)
        logits = self.classifier(self.classifier_dropout(pooled, training=training))
        return {"logits": tf.cast(logits, tf.float32)}
