"""The model inputs the tasks feed it: a synthetic batch's (the trial steps of
--per_gpu_batch_size auto) and the traced inference function every evaluation calls."""

from __future__ import annotations

import tensorflow as tf

from albert.model import MODEL_INPUTS


def synthetic_inputs(micro_batch: int, seq_length: int, vocab_size: int) -> dict:
    """The model inputs of a synthetic batch: random token ids (none of the first five, the
    special pieces), every position attended to, one segment."""
    b, s = micro_batch, seq_length
    ids = tf.random.stateless_uniform([b, s], [0, 1], minval=5, maxval=max(vocab_size, 6),
                                      dtype=tf.int32)
    return {"input_ids": ids, "attention_mask": tf.ones([b, s], tf.int32),
            "token_type_ids": tf.zeros([b, s], tf.int32)}


def inference_fn(model, xla: bool, outputs: tuple):
    """inputs -> model(inputs, training=False)[each of outputs], traced once per model and XLA
    setting and kept on the model: --eval_frequency evaluates many times, and each new tf.function
    would trace (and under XLA compile) again. Kept on the model, not in a module-level memo, so
    that a model no longer used is freed with its functions."""
    # Set past Keras' attribute tracking: a dict of functions is no layer state to track or save.
    _cache = model.__dict__.get("_albert_inference_fns")
    if _cache is None:
        _cache = {}
        object.__setattr__(model, "_albert_inference_fns", _cache)
    key = (xla, outputs)
    if key not in _cache:
        signature = {k: tf.TensorSpec([None, None], tf.int32) for k in MODEL_INPUTS}

        @tf.function(jit_compile=xla, input_signature=[signature])
        def run(inputs):
            out = model(inputs, training=False)
            return tuple(out[name] for name in outputs)

        _cache[key] = run
    return _cache[key]
