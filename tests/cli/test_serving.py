"""albert.cli.serving: what albert.answer and albert.classify check before a fine-tuned model
runs: flags settled against its task card, its vocabulary by content, the --output file; and the
JSON lines they write."""

import json

import pytest

from albert.cli import serving
from albert.cli.flags import FlagError
from albert.io.task_card import TASK_FILE, write_task_card
from albert.train.run_spec import file_sha256


def test_settle_takes_the_cards_settings_and_refuses_one_that_differs():
    card = {"task": "squad", "features": {"max_seq_length": 128, "doc_stride": 64}}
    defaults = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64}
    flags = {"max_seq_length": None, "doc_stride": 64, "max_query_length": None}
    assert serving.settle(flags, card, defaults, "serving/1") == {
        "max_seq_length": 128, "doc_stride": 64, "max_query_length": 64}
    with pytest.raises(FlagError) as refused:
        serving.settle({**flags, "max_seq_length": 256}, card, defaults, "serving/1")
    assert str(refused.value) == ("--max_seq_length 256 differs from the 128 that "
                                  "--checkpoint_path serving/1 was fine-tuned with: drop "
                                  "--max_seq_length")
    # A model without a card: the flags, else the defaults.
    assert serving.settle(flags, None, defaults, "serving/1")["max_seq_length"] == 384


def test_a_damaged_card_is_a_flag_error_naming_the_model_and_the_file(tmp_path):
    (tmp_path / TASK_FILE).write_text("{not json")
    with pytest.raises(FlagError, match=f"--checkpoint_path {tmp_path}: .*{TASK_FILE}"):
        serving.read_card(str(tmp_path))
    (tmp_path / TASK_FILE).unlink()
    assert serving.read_card(str(tmp_path)) is None


def test_a_vocabulary_of_other_content_is_refused(tmp_path):
    (tmp_path / "a.model").write_bytes(b"one vocabulary")
    (tmp_path / "b.model").write_bytes(b"another vocabulary")
    write_task_card(str(tmp_path), {"vocabulary_sha256": file_sha256(str(tmp_path / "a.model"))})
    card = serving.read_card(str(tmp_path))
    serving.check_vocabulary_content(card, str(tmp_path / "a.model"), "m")
    serving.check_vocabulary_content(None, str(tmp_path / "b.model"), "m")  # nothing to check
    with pytest.raises(FlagError, match="b.model is not the one --checkpoint_path m was"):
        serving.check_vocabulary_content(card, str(tmp_path / "b.model"), "m")


def test_check_output_file_refuses_a_directory_and_a_path_under_a_file(tmp_path):
    serving.check_output_file(str(tmp_path / "new" / "deeper" / "out.jsonl"), "x.jsonl")
    with pytest.raises(FlagError) as directory:
        serving.check_output_file(str(tmp_path), "answers.jsonl")
    assert str(directory.value) == (f"--output {tmp_path} is a directory: give a file name for "
                                    f"the JSON lines, e.g. {tmp_path / 'answers.jsonl'}")
    (tmp_path / "file").write_text("")
    with pytest.raises(FlagError, match=f"lies under the file {tmp_path / 'file'}"):
        serving.check_output_file(str(tmp_path / "file" / "sub" / "out.jsonl"), "x.jsonl")


def test_write_jsonl_to_a_new_directory_or_stdout(tmp_path, capsys):
    rows = [{"id": "q1", "answer": "Paris – France"}, {"id": "q2", "answer": ""}]
    path = tmp_path / "new" / "out.jsonl"
    serving.write_jsonl(rows, str(path))
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == rows
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.jsonl"]  # no .tmp left
    serving.write_jsonl(rows, None)
    assert capsys.readouterr().out == path.read_text(encoding="utf-8")
