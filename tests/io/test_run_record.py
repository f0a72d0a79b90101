"""albert.io.run_record: run.json is replaced whole or not at all (a write that fails part way
leaves the previous record readable), made with the umask's mode, and every entry a record holds
is checked for its type when read, in one line naming the file, the entry, its value and what it
must be (issue 50)."""

import errno
import json
import os
import stat

import pytest

from albert.errors import CheckpointError
from albert.io import run_record
from albert.io.run_record import RECORD_ENTRIES, RunRecord, shape_error

# A record with every entry a run writes, each of the right type.
FULL = {
    "spec": {"task": "classification", "started_from": {"load_from": "scratch"}},
    "started_from": {"load_from": "scratch", "checkpoint_path": None},
    "xla": {"gradient": False, "update": False, "reason": "--xla off"},
    "batch_plan": {"ranks": 1, "micro_batch": 8, "accumulation": 1, "global_batch": 8},
    "best": {"metric": "accuracy", "value": 0.75, "step": 4},
    "versions": {"python": "3.11.9", "tensorflow": "2.21.0"},
    "bias_correction": True,
    "finished": False,
    "step": 4,
    "total_steps": 8,
    "labels": ["neg", "pos"],
    "task": "classification",
    "command": ["python", "-m", "albert.run_classifier", "--total_steps", "8"],
}

# For each entry: a hand edit of the wrong type, and the words that must name it.
WRONG = {
    "spec": ("lr=1e-3", "its 'spec' is a string, expected an object"),
    "started_from": ("scratch", "its 'started_from' is a string, expected an object"),
    "xla": ("off", "its 'xla' is a string, expected an object"),
    "batch_plan": ([8, 1], "its 'batch_plan' is a list, expected an object"),
    "best": (0.75, "its 'best' is a number, expected an object"),
    "versions": ("2.21", "its 'versions' is a string, expected an object"),
    "bias_correction": ("on", """its 'bias_correction' is a string ("on"), expected a boolean"""),
    "finished": (1, "its 'finished' is an integer (1), expected a boolean"),
    "step": (4.5, "its 'step' is a number (4.5), expected an integer"),
    "total_steps": ("8", """its 'total_steps' is a string ("8"), expected an integer"""),
    "labels": ([0, 1], "its 'labels' is a list ([0, 1]), expected a list of strings or null"),
    "task": (3, "its 'task' is an integer (3), expected a string"),
    "command": ("python run.py",
                """its 'command' is a string ("python run.py"), expected a list of strings"""),
}


def test_the_full_record_is_a_record_and_every_entry_is_covered():
    assert shape_error(FULL) is None
    assert set(FULL) == set(RECORD_ENTRIES) == set(WRONG)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_every_entry_of_the_wrong_type_is_one_line_naming_file_entry_value_and_type(name,
                                                                                    tmp_path):
    value, words = WRONG[name]
    (tmp_path / "run.json").write_text(json.dumps({**FULL, name: value}, indent=2))
    with pytest.raises(CheckpointError) as e:
        RunRecord(str(tmp_path)).read()
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'run.json'} is not a run record: {words}; "), message
    assert message.endswith("use a new --checkpoint_dir or --overwrite_checkpoint_dir")


def test_a_hand_edited_total_steps_string_is_refused(tmp_path):
    """The case the issue names: "total_steps": "8" in an otherwise whole record."""
    (tmp_path / "run.json").write_text(json.dumps({**FULL, "total_steps": "8"}))
    with pytest.raises(CheckpointError, match="run.json is not a run record: its 'total_steps' "
                                              "is a string"):
        RunRecord(str(tmp_path)).read()
    for fine in (8, 1):
        (tmp_path / "run.json").write_text(json.dumps({**FULL, "total_steps": fine}))
        assert RunRecord(str(tmp_path)).read()["total_steps"] == fine


def test_the_batch_plans_numbers_are_integers(tmp_path):
    plan = {**FULL["batch_plan"], "micro_batch": "8"}
    assert shape_error({**FULL, "batch_plan": plan}) == (
        """its batch_plan.micro_batch is a string ("8"), expected an integer""")


def test_every_entry_a_record_holds_is_one_the_check_knows():
    """Issue 52: Record owns run.json's entries; one added there without a type here would go
    unchecked (and one checked here but not held would be dropped on the next write)."""
    import dataclasses

    from albert.io.run_record import Record
    from albert.tasks.runner import environment

    held = {f.name for f in dataclasses.fields(Record)} - {"extra"}
    assert held == set(RECORD_ENTRIES)
    assert set(environment()) <= held  # the command line and versions a run records


def test_a_write_that_fails_part_way_leaves_the_previous_record_whole(tmp_path, monkeypatch):
    """A full disk (or a crash) in the middle of writing run.json must not leave half of one:
    the next start would refuse the directory as unreadable and its run would be lost."""
    record = RunRecord(str(tmp_path))
    record.write(FULL)
    real_dump = json.dump

    def dump_half_then_fail(obj, f, **kwargs):
        text = json.dumps(obj, **kwargs)
        f.write(text[:len(text) // 2])
        f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_record.json, "dump", dump_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        record.write({**FULL, "step": 8, "finished": True})
    monkeypatch.setattr(run_record.json, "dump", real_dump)
    assert record.read() == FULL
    assert sorted(os.listdir(tmp_path)) == ["run.json"]  # no half-written file left beside it
    record.update(step=8, finished=True)
    # The top-level task, a copy of the spec's, is written once now: in the spec.
    assert record.read() == {**{k: v for k, v in FULL.items() if k != "task"}, "step": 8,
                             "finished": True}


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_the_record_is_made_with_the_umasks_mode(umask, mode, tmp_path):
    before = os.umask(umask)
    try:
        RunRecord(str(tmp_path)).write(FULL)
        RunRecord(str(tmp_path)).update(step=5)  # a replaced record too
    finally:
        os.umask(before)
    assert stat.S_IMODE(os.stat(tmp_path / "run.json").st_mode) == mode
