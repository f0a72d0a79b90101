"""albert.io.pretrained: what a model directory holds, load_pretrained / load_model from each
source, save_pretrained whole or not at all. Fixtures (tiny, saved, the Google release writers):
conftest.py."""

import json

import numpy as np
import pytest
import torch
import transformers

from albert import AlbertForPreTraining, CheckpointError
from albert.io.pretrained import load_pretrained, save_pretrained


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="not found: .*nope"):
        load_pretrained(AlbertForPreTraining, tmp_path / "nope")


def test_save_replaces_existing_atomically(saved, tiny):
    model = AlbertForPreTraining(tiny()).build_for_config()
    save_pretrained(model, saved)
    back = load_pretrained(AlbertForPreTraining, saved)
    np.testing.assert_array_equal(back.predictions.bias.numpy(), model.predictions.bias.numpy())
    leftovers = [p.name for p in saved.parent.iterdir() if p.name != "ckpt"]
    assert leftovers == []


def test_pretrained_kind_and_vocabulary_file(saved, tmp_path):
    from albert.io.pretrained import pretrained_kind, vocabulary_file

    assert pretrained_kind(saved) == "huggingface"
    assert vocabulary_file(saved) is None
    (saved / "spiece.model").write_bytes(b"spm")
    assert vocabulary_file(saved) == str(saved / "spiece.model")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="neither a Hugging Face .* nor a Google"):
        pretrained_kind(empty)
    assert vocabulary_file(empty) is None
    with pytest.raises(CheckpointError, match="not found"):
        pretrained_kind(tmp_path / "nope")


def test_load_model_reads_every_source_strictly(tmp_path, tiny, hf_config, google_dir):
    """load_model (export, answer): trainer checkpoints by directory or prefix, Google prefixes;
    a checkpoint without the requested head is refused instead of served with random weights."""
    import tensorflow as tf

    from albert import AlbertForQuestionAnswering
    from albert.io.pretrained import load_model

    model = AlbertForQuestionAnswering(tiny()).build_for_config()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(tmp_path / "run"),
                                         max_to_keep=3)
    manager.save(checkpoint_number=3)
    first = model.qa_outputs.kernel.numpy().copy()
    model.qa_outputs.kernel.assign(first + 1.0)
    manager.save(checkpoint_number=9)
    tiny().to_json_file(tmp_path / "run" / "config.json")
    (tmp_path / "run" / "checkpoint").unlink()  # a lost index: the highest step is used
    np.testing.assert_array_equal(
        load_model(AlbertForQuestionAnswering, tmp_path / "run").qa_outputs.kernel.numpy(),
        first + 1.0)
    np.testing.assert_array_equal(
        load_model(AlbertForQuestionAnswering, tmp_path / "run" / "ckpt-3").qa_outputs.kernel
        .numpy(), first)
    with pytest.raises(CheckpointError, match="lacks weights the AlbertForPreTraining model "
                                              "needs .*predictions"):
        load_model(AlbertForPreTraining, tmp_path / "run")

    torch.manual_seed(3)
    hf = transformers.AlbertForPreTraining(hf_config()).eval()
    d = google_dir(tmp_path, hf, "v1")
    older = load_model(AlbertForPreTraining, d / "model.ckpt-500")  # an explicit step
    np.testing.assert_allclose(older.predictions.bias.numpy(),
                               hf.predictions.bias.detach().numpy() + 1.0)
    with pytest.raises(CheckpointError, match="missing cls/squad/output_weights"):
        load_model(AlbertForQuestionAnswering, d)


# -- sequence classifiers ---------------------------------------------------------------------


def test_sequence_classifier_label_count_and_names(tmp_path, tiny):
    import tensorflow as tf

    from albert import AlbertForSequenceClassification
    from albert.io.pretrained import load_model

    pre = AlbertForPreTraining(tiny()).build_for_config()
    save_pretrained(pre, tmp_path / "pre")
    # From a pretraining export: the backbone is loaded, the head is new, sized as asked.
    fresh = load_pretrained(AlbertForSequenceClassification, tmp_path / "pre", num_labels=5)
    assert fresh.num_labels == 5 and fresh.label_names is None
    np.testing.assert_array_equal(fresh.albert.pooler.kernel.numpy(),
                                  pre.albert.pooler.kernel.numpy())
    assert load_pretrained(AlbertForSequenceClassification, tmp_path / "pre").num_labels == 2
    with pytest.raises(CheckpointError, match="lacks weights .* classifier.weight"):
        load_model(AlbertForSequenceClassification, tmp_path / "pre")  # no head to predict with

    # Label names travel as id2label; the count is read back from the classifier.
    model = AlbertForSequenceClassification(tiny(), num_labels=3,
                                            label_names=["neg", "neu", "pos"])
    model.build_for_config()
    save_pretrained(model, tmp_path / "cls")
    config = json.loads((tmp_path / "cls" / "config.json").read_text())
    assert config["id2label"] == {"0": "neg", "1": "neu", "2": "pos"}
    assert config["architectures"] == ["AlbertForSequenceClassification"]
    back = load_pretrained(AlbertForSequenceClassification, tmp_path / "cls")
    assert back.num_labels == 3 and back.label_names == ("neg", "neu", "pos")
    np.testing.assert_array_equal(back.classifier.kernel.numpy(), model.classifier.kernel.numpy())
    with pytest.raises(CheckpointError, match="holds a classifier for 3 label.*not the 4 asked"):
        load_pretrained(AlbertForSequenceClassification, tmp_path / "cls", num_labels=4)

    # A trainer checkpoint: the label count is read from the stored classifier.
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(tmp_path / "run"),
                                         max_to_keep=1)
    manager.save(checkpoint_number=7)
    tiny().to_json_file(tmp_path / "run" / "config.json")
    loaded = load_model(AlbertForSequenceClassification, tmp_path / "run")
    assert loaded.num_labels == 3
    np.testing.assert_array_equal(loaded.classifier.bias.numpy(), model.classifier.bias.numpy())
    with pytest.raises(CheckpointError, match="holds a classifier for 3 label"):
        load_model(AlbertForSequenceClassification, tmp_path / "run", num_labels=2)


def test_the_model_classes_load_and_save_the_transformers_way(saved, tiny, tmp_path):
    """`Model.from_pretrained(dir)` and `model.save_pretrained(dir)` are load_pretrained and
    save_pretrained: the same weights, options, files and errors."""
    from albert import AlbertForQuestionAnswering, AlbertForSequenceClassification

    by_method = AlbertForPreTraining.from_pretrained(saved)
    by_function = load_pretrained(AlbertForPreTraining, saved)
    assert type(by_method) is AlbertForPreTraining
    for a, b in zip(by_method.weights, by_function.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())

    classifier = AlbertForSequenceClassification.from_pretrained(
        saved, num_labels=3, label_names=["a", "b", "c"])
    assert (classifier.num_labels, list(classifier.label_names)) == (3, ["a", "b", "c"])
    with pytest.raises(CheckpointError, match="lacks") as by_method_error:
        AlbertForQuestionAnswering.from_pretrained(saved, require_heads=True)
    with pytest.raises(CheckpointError, match="lacks") as by_function_error:
        load_pretrained(AlbertForQuestionAnswering, saved, require_heads=True)
    assert str(by_method_error.value) == str(by_function_error.value)
    with pytest.raises(CheckpointError, match="not found: .*nope"):
        AlbertForPreTraining.from_pretrained(tmp_path / "nope")

    by_method.save_pretrained(tmp_path / "method", extra_json={"card.json": {"a": 1}})
    save_pretrained(by_method, tmp_path / "function", extra_json={"card.json": {"a": 1}})
    for name in ("config.json", "model.safetensors", "card.json"):
        assert (tmp_path / "method" / name).read_bytes() == \
            (tmp_path / "function" / name).read_bytes()
    assert sorted(p.name for p in (tmp_path / "method").iterdir()) == \
        sorted(p.name for p in (tmp_path / "function").iterdir())
