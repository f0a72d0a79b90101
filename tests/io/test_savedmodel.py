"""albert.io.savedmodel in this process: an export replaces an existing version whole, and a
mixed-precision model is served in float32. The export command as a user runs it:
tests/test_export.py."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert import AlbertConfig, AlbertForQuestionAnswering


def tiny(vocab_size=2000):
    return AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_hidden_groups=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=64)


def batches(seed=0):
    """Two batches with different batch sizes and sequence lengths, padded rows included."""
    rng = np.random.default_rng(seed)
    out = {}
    for case, (batch, seq) in (("a", (3, 11)), ("b", (5, 37))):
        ids = rng.integers(5, 2000, size=(batch, seq), dtype=np.int32)
        lengths = rng.integers(seq // 2, seq + 1, size=batch)
        mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
        types = (np.arange(seq)[None, :] >= (lengths // 2)[:, None]).astype(np.int32) * mask
        out.update({f"{case}_input_ids": ids * mask, f"{case}_attention_mask": mask,
                    f"{case}_token_type_ids": types})
    return out


def keras_outputs(model, inputs, names):
    out = {}
    for case in ("a", "b"):
        result = model({k: inputs[f"{case}_{k}"] for k in ("input_ids", "attention_mask",
                                                            "token_type_ids")})
        for name in names:
            out[f"{case}_{name}"] = result[name].numpy()
    return out


def test_export_replaces_an_existing_version(tmp_path):
    from albert.io.savedmodel import export_saved_model

    out = tmp_path / "serving" / "1"
    first = AlbertForQuestionAnswering(tiny(vocab_size=50)).build_for_config()
    export_saved_model(first, str(out), "qa")
    second = AlbertForQuestionAnswering(tiny(vocab_size=60)).build_for_config()
    export_saved_model(second, str(out), "qa")
    assert json.loads((out / "assets" / "config.json").read_text())["vocab_size"] == 60
    assert sorted(os.listdir(tmp_path / "serving")) == ["1"]  # no temporary leftovers
    with pytest.raises(ValueError, match="--head pretraining needs a model with a predictions"):
        export_saved_model(second, str(tmp_path / "x"), "pretraining")


def test_mixed_precision_model_is_exported_in_float32(tmp_path):
    """run_squad --precision bf16 hands export_saved_model a bfloat16-compute model: the
    SavedModel computes in float32 with the same weights."""
    import keras

    from albert.io.savedmodel import export_saved_model

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    mixed = AlbertForQuestionAnswering(tiny()).build_for_config()
    keras.mixed_precision.set_global_policy("float32")
    reference = AlbertForQuestionAnswering(tiny()).build_for_config()
    for target, source in zip(reference.weights, mixed.weights, strict=True):
        target.assign(source.numpy())
    out = export_saved_model(mixed, str(tmp_path / "serving" / "1"), "qa")
    serve = tf.saved_model.load(out).signatures["serving_default"]
    inputs = batches(seed=2)
    expected = keras_outputs(reference, inputs, ("start_logits", "end_logits"))
    bf16 = keras_outputs(mixed, inputs, ("start_logits", "end_logits"))
    assert max(np.abs(bf16[k] - expected[k]).max() for k in expected) > 1e-3  # bf16 differs
    for case in ("a", "b"):
        result = serve(**{name: tf.constant(inputs[f"{case}_{name}"])
                          for name in ("input_ids", "attention_mask", "token_type_ids")})
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(result[name].numpy(), expected[f"{case}_{name}"],
                                       atol=1e-5)
