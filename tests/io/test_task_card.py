"""albert.io.task_card: the card an export carries, read back from each place it lives (a
directory, a SavedModel's assets, a trainer run's run.json); a damaged one named; none is None."""

import json

import pytest

from albert.errors import CheckpointError
from albert.io.task_card import TASK_FILE, read_task_card, task_card, write_task_card

CARD = {"task": "classification", "features": {"max_seq_length": 128},
        "labels": ["neg", "pos"], "vocabulary_sha256": "ab12"}


def test_written_card_reads_back_from_the_directory_and_a_file_in_it(tmp_path):
    path = write_task_card(str(tmp_path), CARD)
    assert path == str(tmp_path / TASK_FILE)
    assert read_task_card(str(tmp_path)) == CARD
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert read_task_card(str(tmp_path / "model.safetensors")) == CARD  # its directory's card


def test_a_saved_models_card_is_read_from_its_assets_first(tmp_path):
    (tmp_path / "assets").mkdir()
    write_task_card(str(tmp_path / "assets"), CARD)
    write_task_card(str(tmp_path), {**CARD, "task": "squad"})
    assert read_task_card(str(tmp_path)) == CARD


def test_a_trainer_run_gives_the_card_of_its_recorded_spec(tmp_path):
    spec = {"task": "squad", "features": {"doc_stride": 64}, "vocabulary_sha256": "cd34",
            "total_steps": 100, "model": {"load_from": "pretrained"}}
    (tmp_path / "run.json").write_text(json.dumps({"spec": spec, "finished": True}))
    expected = {"task": "squad", "features": {"doc_stride": 64}, "labels": None,
                "vocabulary_sha256": "cd34"}
    assert read_task_card(str(tmp_path)) == expected == task_card(spec)
    assert read_task_card(str(tmp_path / "ckpt-7")) == expected  # a checkpoint prefix
    (tmp_path / "run.json").write_text(json.dumps({"finished": False}))  # recorded no spec
    assert read_task_card(str(tmp_path)) is None


def test_a_model_without_a_card_has_none(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert read_task_card(str(tmp_path)) is None


@pytest.mark.parametrize("content, message", [
    ("{not json", "is unreadable"),
    (b"\xff\xfe\x00", "is not UTF-8 JSON: byte 0xff at offset 0 (invalid start byte)"),
    ("[1, 2]", "does not hold a JSON object"),
])
def test_a_damaged_card_is_a_checkpoint_error_naming_the_file(content, message, tmp_path):
    card = tmp_path / TASK_FILE
    card.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CheckpointError) as damaged:
        read_task_card(str(tmp_path))
    assert str(damaged.value).startswith(f"{card} (of the model {tmp_path}) {message}")


def test_the_card_keeps_the_labels_in_id_order_not_sorted(tmp_path):
    """Issue 34 item 17: labels in the id order --labels gave (not sorted: "pos" is id 0),
    from a run's recorded spec and from a written card alike."""
    labels = ["pos", "neg", "neutral"]
    spec = {"task": "classification", "features": {"max_seq_length": 32}, "labels": labels,
            "vocabulary_sha256": None}
    assert task_card(spec)["labels"] == labels
    (tmp_path / "run.json").write_text(json.dumps({"spec": spec}))
    assert read_task_card(str(tmp_path))["labels"] == labels
    write_task_card(str(tmp_path), task_card(spec))
    assert read_task_card(str(tmp_path))["labels"] == labels


@pytest.mark.parametrize("card, message", [
    ({"labels": "abcd"}, '"labels" must be a list of label names in id order, got the string '
                         '"abcd"'),
    ({"features": ["max_seq_length"]}, '"features" must be a JSON object of feature settings, '
                                       'got a list'),
    ({"features": {"doc_stride": True}}, '"features" "doc_stride" must be a positive whole '
                                         'number, got the boolean true'),
    ({"features": {"max_seq_length": "384"}}, '"features" "max_seq_length" must be a positive '
                                              'whole number, got the string "384"'),
])
def test_a_card_of_the_wrong_shape_is_a_checkpoint_error_naming_the_entry(card, message, tmp_path):
    write_task_card(str(tmp_path), card)
    with pytest.raises(CheckpointError) as wrong:
        read_task_card(str(tmp_path))
    assert str(wrong.value) == f"{tmp_path / TASK_FILE} (of the model {tmp_path}): {message}"


def test_a_run_record_whose_spec_is_not_an_object_is_a_checkpoint_error(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"spec": "squad"}))
    with pytest.raises(CheckpointError, match="its 'spec' is a string, expected an object; it is "
                                              "the run record of the model"):
        read_task_card(str(tmp_path))


def test_the_card_names_the_model_class_that_the_export_head_of_its_task_needs():
    """What save_pretrained checks a card left in a directory against (card_misfit) and the
    SavedModel export's model class are one table's (albert.model.heads), read by each card's
    task: the names, and "regression", the task a regression run's card records."""
    from albert.io.savedmodel import model_class
    from albert.io.task_card import card_misfit

    for task in ("squad", "classification", "regression", "pretraining"):
        cls = model_class(task)
        model = object.__new__(cls)
        model.num_labels = 1 if task == "regression" else 2
        assert card_misfit({"task": task}, model) is None, task
        others = {model_class(t) for t in ("squad", "classification", "pretraining")} - {cls}
        for other in others:
            stranger = object.__new__(other)
            stranger.num_labels = model.num_labels
            assert "it is the card of a" in card_misfit({"task": task}, stranger), (task, other)
