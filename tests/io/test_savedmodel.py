"""albert.io.savedmodel in this process: an export replaces an existing version whole, and a
mixed-precision model is served in float32. The export command as a user runs it:
tests/test_export.py."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import keras_outputs, serving_inputs, tiny_config

from albert import AlbertForQuestionAnswering


def test_export_replaces_an_existing_version(tmp_path):
    from albert.io.savedmodel import export_saved_model

    out = tmp_path / "serving" / "1"
    first = AlbertForQuestionAnswering(tiny_config(vocab_size=50)).build_for_config()
    export_saved_model(first, str(out), "qa")
    second = AlbertForQuestionAnswering(tiny_config(vocab_size=60)).build_for_config()
    export_saved_model(second, str(out), "qa")
    assert json.loads((out / "assets" / "config.json").read_text())["vocab_size"] == 60
    assert sorted(os.listdir(tmp_path / "serving")) == ["1"]  # no temporary leftovers
    with pytest.raises(ValueError, match="^task pretraining needs a model with a predictions"):
        export_saved_model(second, str(tmp_path / "x"), "pretraining")


def test_mixed_precision_model_is_exported_in_float32(tmp_path):
    """run_squad --precision bf16 hands export_saved_model a bfloat16-compute model: the
    SavedModel computes in float32 with the same weights."""
    import keras

    from albert.io.savedmodel import export_saved_model

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    mixed = AlbertForQuestionAnswering(tiny_config()).build_for_config()
    keras.mixed_precision.set_global_policy("float32")
    reference = AlbertForQuestionAnswering(tiny_config()).build_for_config()
    for target, source in zip(reference.weights, mixed.weights, strict=True):
        target.assign(source.numpy())
    out = export_saved_model(mixed, str(tmp_path / "serving" / "1"), "qa")
    serve = tf.saved_model.load(out).signatures["serving_default"]
    inputs = serving_inputs(seed=2)
    expected = keras_outputs(reference, inputs, ("start_logits", "end_logits"))
    bf16 = keras_outputs(mixed, inputs, ("start_logits", "end_logits"))
    assert max(np.abs(bf16[k] - expected[k]).max() for k in expected) > 1e-3  # bf16 differs
    for case in ("a", "b"):
        result = serve(**{name: tf.constant(inputs[f"{case}_{name}"])
                          for name in ("input_ids", "attention_mask", "token_type_ids")})
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(result[name].numpy(), expected[f"{case}_{name}"],
                                       atol=1e-5)


def test_a_mixed_precision_classifier_is_exported_with_its_labels(tmp_path):
    """run_classifier --precision bf16 --export_dir: the float32 twin has the classifier's
    width and labels (it was built with the class's default two, and the copy failed)."""
    import keras

    from albert import AlbertForSequenceClassification
    from albert.io.savedmodel import export_saved_model

    labels = ["pos", "neg", "neutral", "mixed"]
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    mixed = AlbertForSequenceClassification(tiny_config(), 4, labels).build_for_config()
    keras.mixed_precision.set_global_policy("float32")
    out = export_saved_model(mixed, str(tmp_path / "serving" / "1"), "classification")
    serve = tf.saved_model.load(out).signatures["serving_default"]
    assert serve.structured_outputs["logits"].shape[-1] == 4
    assert json.loads((tmp_path / "serving" / "1" / "assets" / "config.json").read_text())[
        "id2label"] == {str(i): name for i, name in enumerate(labels)}
