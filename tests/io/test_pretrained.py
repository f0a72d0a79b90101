"""albert.io.pretrained: what a model directory holds, load_pretrained / load_model from each
source, save_pretrained into a directory as transformers does (each file whole or not at all,
the directory's other files left, a vocabulary that does not fit refused, files with the umask's
mode). Fixtures (tiny, saved, the Google release writers): conftest.py."""

import json
import os

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
    from albert.io.model_dir import pretrained_kind, vocabulary_file

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


# -- issue 50: save_pretrained writes into a directory, as transformers does --------------------


def fitting(cls=AlbertForPreTraining, **options):
    """A tiny model whose vocab_size fits the 2,000-piece sample vocabulary."""
    from albert import AlbertConfig

    config = AlbertConfig(vocab_size=2000, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=20, max_position_embeddings=16)
    return cls(config, **options).build_for_config()


def files(directory) -> dict:
    """{name: bytes} of the files directly in `directory`."""
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def same_weights(a, b):
    for x, y in zip(a.weights, b.weights, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_save_pretrained_into_a_project_folder_keeps_its_other_files(saved, tmp_path, monkeypatch):
    """`Model.from_pretrained(final).save_pretrained(".")` in a project folder replaced the
    folder: README.md and the calling script were gone."""
    from albert.errors import OutputError

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("precious\n")
    (project / "src" / "train.py").write_text("print('mine')\n")
    monkeypatch.chdir(project)
    model = AlbertForPreTraining.from_pretrained(saved)
    model.save_pretrained(".")
    assert (project / "README.md").read_text() == "precious\n"
    assert (project / "src" / "train.py").read_text() == "print('mine')\n"
    assert sorted(os.listdir(project)) == ["README.md", "config.json", "model.safetensors", "src"]
    same_weights(load_pretrained(AlbertForPreTraining, project), model)
    # A directory that does not exist yet is made; a file is not one.
    save_pretrained(model, project / "new" / "dir")
    assert sorted(os.listdir(project / "new" / "dir")) == ["config.json", "model.safetensors"]
    with pytest.raises(OutputError, match="README.md is a file, not a directory"):
        save_pretrained(model, project / "README.md")
    assert (project / "README.md").read_text() == "precious\n"


def test_a_model_saved_back_where_it_was_loaded_from_keeps_its_vocabulary_and_card(
        sample_vocab, tmp_path):
    """Saved back without spm_model into the directory it came from, a fine-tuned model lost
    spiece.model, tokenizer.json, tokenizer_config.json and albert_task.json."""
    from albert import AlbertForQuestionAnswering
    from albert.data.tokenization import vocab_checksum
    from albert.io.task_card import TASK_FILE

    directory = tmp_path / "squad"
    model = fitting(AlbertForQuestionAnswering)
    card = {"task": "squad", "features": {"max_seq_length": 16}, "labels": None,
            "vocabulary_sha256": vocab_checksum(sample_vocab)}
    save_pretrained(model, directory, spm_model=sample_vocab, extra_json={TASK_FILE: card})
    before = files(directory)
    assert sorted(before) == ["albert_task.json", "config.json", "model.safetensors",
                              "spiece.model", "tokenizer.json", "tokenizer_config.json"]
    AlbertForQuestionAnswering.from_pretrained(directory).save_pretrained(directory)
    assert files(directory) == before  # the same weights give the same bytes
    assert sorted(os.listdir(directory)) == sorted(before)
    same_weights(AlbertForQuestionAnswering.from_pretrained(directory), model)


def test_a_new_vocabulary_replaces_the_old_ones_files_and_a_stale_card_is_removed(
        sample_vocab, tmp_path, caplog):
    """A new spm_model replaces every file of the old vocabulary; a task card that no longer
    describes the model saved (another vocabulary's, another head's) is removed, said in a
    warning; the directory's own files stay."""
    from albert import AlbertForQuestionAnswering
    from albert.data.tokenization import vocab_checksum
    from albert.io.task_card import TASK_FILE

    directory = tmp_path / "m"
    old_card = {"task": "squad", "features": {}, "labels": None, "vocabulary_sha256": "0" * 64}
    save_pretrained(fitting(AlbertForQuestionAnswering), directory,
                    extra_json={TASK_FILE: old_card})
    for name, text in {"spiece.model": "old vocabulary", "tokenizer.json": "{}",
                       "spiece.vocab": "old\t0\n", "added_tokens.json": '{"x": 5000}',
                       "notes.txt": "mine"}.items():
        (directory / name).write_text(text)
    model = fitting(AlbertForQuestionAnswering)
    with caplog.at_level("WARNING", logger="albert.io.pretrained"):
        save_pretrained(model, directory, spm_model=sample_vocab)
    assert (directory / "spiece.model").read_bytes() == open(sample_vocab, "rb").read()
    assert len(json.loads((directory / "tokenizer.json").read_text())["model"]["vocab"]) == 2000
    assert sorted(os.listdir(directory)) == ["config.json", "model.safetensors", "notes.txt",
                                             "spiece.model", "tokenizer.json",
                                             "tokenizer_config.json"]
    assert f"removing albert_task.json from {directory}: it records another vocabulary" \
        in caplog.text
    # Another head's card goes too; a card of this model's head and vocabulary stays.
    card = {**old_card, "vocabulary_sha256": vocab_checksum(sample_vocab)}
    save_pretrained(model, directory, extra_json={TASK_FILE: card})
    save_pretrained(model, directory)
    assert json.loads((directory / TASK_FILE).read_text()) == card
    caplog.clear()
    with caplog.at_level("WARNING", logger="albert.io.pretrained"):
        fitting().save_pretrained(directory)
    assert not (directory / TASK_FILE).exists()
    assert "it is the card of a squad model, not of an AlbertForPreTraining" in caplog.text
    assert (directory / "notes.txt").read_text() == "mine"


def test_a_save_failing_part_way_leaves_the_previous_files_whole_and_no_new_dir(
        saved, tmp_path, monkeypatch):
    """The weights write failing part way (a full disk): every file of the model saved before
    is as it was, and nothing of the attempt is left; into a new directory, no directory."""
    import albert.io.huggingface

    (saved / "README.md").write_text("mine")
    before = files(saved)

    def half(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"\0" * 64)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(albert.io.huggingface, "save_file", half)
    model = AlbertForPreTraining.from_pretrained(saved)
    for var in model.weights:
        var.assign(var.numpy() + 1.0)
    with pytest.raises(OSError, match="No space left"):
        save_pretrained(model, saved)
    assert files(saved) == before
    assert sorted(os.listdir(saved)) == sorted(before)
    with pytest.raises(OSError, match="No space left"):
        model.save_pretrained(tmp_path / "new")
    assert not (tmp_path / "new").exists()
    monkeypatch.undo()
    same_weights(load_pretrained(AlbertForPreTraining, saved),
                 AlbertForPreTraining.from_pretrained(saved))


def test_a_vocabulary_that_does_not_fit_the_model_is_refused_before_any_write(
        sample_vocab, saved, tmp_path):
    """vocab_size 50 saved with the 2,000-piece vocabulary: transformers then failed with an
    IndexError. Refused as albert.export refuses the pair (one check), nothing written: the
    vocabulary given, or the one already in the directory that the model would be left with."""
    import shutil

    from albert import export
    from albert.errors import SettingError
    from albert.io import weights
    from albert.io.pretrained import replace_pretrained

    assert export.check_vocabulary is weights.check_vocabulary
    model = AlbertForPreTraining.from_pretrained(saved)
    message = ("the vocabulary {} has 2000 pieces but the model's vocab_size is 50: pass the "
               "spm_model it was trained with")
    for save in (lambda path, **kw: save_pretrained(model, path, **kw), model.save_pretrained,
                 lambda path, **kw: replace_pretrained(model, path, **kw)):
        with pytest.raises(SettingError) as error:
            save(tmp_path / "new", spm_model=sample_vocab)
        assert str(error.value) == message.format(sample_vocab)
        assert not (tmp_path / "new").exists()
    before = files(saved)
    with pytest.raises(SettingError, match="has 2000 pieces"):
        save_pretrained(model, saved, spm_model=sample_vocab)
    assert files(saved) == before
    shutil.copyfile(sample_vocab, saved / "spiece.model")
    before = files(saved)
    with pytest.raises(SettingError) as error:
        save_pretrained(model, saved)
    assert str(error.value) == message.format(saved / "spiece.model")
    assert files(saved) == before


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_every_saved_file_the_weights_included_takes_the_umask(umask, mode, sample_vocab, tmp_path):
    """model.safetensors came out 0600 (safetensors writes through a temporary file) beside
    0644 files: a model server or a teammate could not read the weights."""
    from albert.io.pretrained import replace_pretrained

    model = fitting()
    previous = os.umask(umask)
    try:
        save_pretrained(model, tmp_path / "saved", spm_model=sample_vocab)
        save_pretrained(model, tmp_path / "saved")  # over its own files
        replace_pretrained(model, tmp_path / "final", spm_model=sample_vocab)  # final/, best/
    finally:
        os.umask(previous)
    for directory in ("saved", "final"):
        modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / directory).iterdir()}
        assert "model.safetensors" in modes and set(modes.values()) == {mode}, modes


def test_a_config_json_that_is_not_utf8_is_a_config_error_naming_the_byte(saved):
    from albert.errors import ConfigError

    text = (saved / "config.json").read_text()
    (saved / "config.json").write_bytes(text.replace("{", '{"_name_or_path": "caf\xe9",', 1)
                                        .encode("latin-1"))
    offset = (saved / "config.json").read_bytes().index(b"\xe9")
    with pytest.raises(ConfigError) as error:
        AlbertForPreTraining.from_pretrained(saved)
    assert str(error.value) == (f"{saved / 'config.json'} is not UTF-8 JSON: byte 0xe9 at "
                                f"offset {offset} (invalid continuation byte)")


def test_a_save_that_would_not_be_what_loads_or_would_stop_half_way_is_refused_first(
        saved, tmp_path, hf_config, google_dir):
    """Three folders a save cannot finish in as the user means, each refused in one line before
    any file is replaced: a Google release folder (its albert_config.json and model.ckpt* load
    first, so the old weights would still be what from_pretrained reads), a folder whose
    config.json is a directory (the weights would be replaced, then the save would stop), and a
    link to nowhere."""
    import torch
    import transformers

    from albert.errors import OutputError

    model = AlbertForPreTraining.from_pretrained(saved)
    torch.manual_seed(3)
    release = google_dir(tmp_path, transformers.AlbertForPreTraining(hf_config()).eval(), "v1")
    before = sorted(os.listdir(release))
    with pytest.raises(OutputError, match="holds a Google ALBERT checkpoint .* save into another"):
        model.save_pretrained(release)
    assert sorted(os.listdir(release)) == before

    odd = tmp_path / "odd"
    (odd / "config.json").mkdir(parents=True)
    with pytest.raises(OutputError, match="config.json is a directory"):
        model.save_pretrained(odd)
    assert sorted(os.listdir(odd)) == ["config.json"]  # no weights beside a missing config

    (tmp_path / "nowhere").symlink_to(tmp_path / "gone")
    with pytest.raises(OutputError, match="nowhere is a link to .*gone, which does not exist"):
        model.save_pretrained(tmp_path / "nowhere")
