"""The model classes: the ALBERT backbone (albert.model.layers) with each task's heads.

Shapes: B = batch, S = sequence length, P = predicted (masked) positions, H = hidden_size,
V = vocab_size.

Each class declares its heads (`heads`: the attributes holding its task-head layers, whose weights
a checkpoint of another kind may lack) and its options (`head_options`: the constructor arguments
besides the config, settled against a checkpoint). Every class takes a dict of int [B, S] tensors:
input_ids, and optionally attention_mask (default all ones) and token_type_ids (default zeros).
Reading and writing checkpoints is albert.io.pretrained's (load_pretrained, save_pretrained); the
classes' `from_pretrained` and `save_pretrained` are transformers' spelling of the same two calls.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from albert.errors import CheckpointError
from albert.model.config import AlbertConfig
from albert.model.dropout import SITE_CLASSIFIER, SITE_SOP, StatelessDropout
from albert.model.layers import AlbertBackbone, AlbertMLMHead, dense, gather_positions


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
    """What every model class shares: `heads` (attribute names of its task-head layers),
    `head_options` (none unless a class overrides it) and build_for_config."""

    heads: tuple[str, ...] = ()

    @classmethod
    def head_options(cls, source: str, options: dict, stored_labels: int | None,
                     id2label: dict | None) -> dict:
        """The constructor arguments besides the config, for a model loaded from `source` (a
        checkpoint's name, for errors): `options` are the caller's (None: not given),
        `stored_labels` the checkpoint's classifier width (None: it has none), `id2label` its
        config's label names. This class takes none: any option given is a TypeError."""
        options = {k: v for k, v in options.items() if v is not None}
        if options:
            raise TypeError(f"{cls.__name__} takes no {', '.join(sorted(options))}")
        return {}

    @classmethod
    def from_pretrained(cls, path, config: AlbertConfig | None = None,
                        require_heads: bool = False, **options):
        """This class built from a Hugging Face or Google ALBERT directory:
        `albert.load_pretrained(cls, path, ...)`, the same arguments, behaviour and errors."""
        # albert.io sits a layer above the model: it is reached only when this is called, so
        # importing the model never imports the checkpoint readers (docs/architecture.md).
        from albert.io.pretrained import load_pretrained

        return load_pretrained(cls, path, config=config, require_heads=require_heads, **options)

    def save_pretrained(self, path, spm_model: str | None = None,
                        extra_json: dict | None = None) -> None:
        """Write this model's Hugging Face files into the directory `path`, leaving its other
        files (as transformers does): `albert.save_pretrained(self, path, ...)`, the same
        arguments, behaviour and errors."""
        # albert.io sits a layer above the model: see from_pretrained.
        from albert.io.pretrained import save_pretrained

        save_pretrained(self, path, spm_model=spm_model, extra_json=extra_json)

    def build_for_config(self):
        """Create all variables by running a 1x2 dummy batch."""
        dummy = tf.zeros([1, 2], tf.int32)
        self({"input_ids": dummy, "attention_mask": tf.ones_like(dummy),
              "token_type_ids": dummy})
        return self


class AlbertModel(_AlbertTaskModel):
    """The bare backbone: returns {"sequence_output": [B, S, H], "pooled_output": [B, H]}.

    Heads: none. Options: none.
    """

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

    Inputs may add masked_lm_positions, int [B, P]; without it P = S.
    Returns {"mlm_logits": [B, P, V], "sop_logits": [B, 2], "sequence_output": [B, S, H]}.

    Heads: `predictions` (the MLM head; its decoder is the word embedding table, so only its dense
    layer, LayerNorm and output bias are its own) and `sop_classifier` (dense H -> 2 on the pooled
    output). Options: none.
    """

    heads = ("predictions", "sop_classifier")

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.albert = AlbertBackbone(config, name="albert")
        self.predictions = AlbertMLMHead(config, self.albert.embeddings, name="predictions")
        self.sop_dropout = StatelessDropout(config.classifier_dropout_prob, SITE_SOP)
        self.sop_classifier = dense(config, 2, "sop_classifier")

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
    see docs/pretraining.md, "What differs from ALBERT".

    Heads: `qa_outputs` (dense H -> 2 at every position; the backbone has no pooler).
    Options: none.
    """

    heads = ("qa_outputs",)

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.albert = AlbertBackbone(config, add_pooler=False, name="albert")
        self.qa_outputs = dense(config, 2, "qa_outputs")

    def call(self, inputs, training=False):
        input_ids, token_type_ids, attention_mask = _unpack_inputs(inputs)
        seq, _ = self.albert(input_ids, token_type_ids, attention_mask, training=training)
        logits = tf.cast(self.qa_outputs(seq), tf.float32)  # [B, S, 2]
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}


class AlbertForSequenceClassification(_AlbertTaskModel):
    """Backbone + pooler + dropout + dense, as transformers' AlbertForSequenceClassification.

    Returns {"logits": [B, num_labels] float32}; num_labels=1 is a single regression output.
    label_names (optional, one per class) travel with Hugging Face exports as id2label.

    Heads: `classifier` (dense H -> num_labels on the pooled output).
    Options: num_labels and label_names (see head_options).
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
        self.classifier = dense(config, num_labels, "classifier")

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
