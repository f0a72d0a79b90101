"""The run directory (albert.train.run_dir): its lock, its record, its leftovers, and the start
policy: resume the same run, refuse another naming each difference, start over when told."""

import fcntl
import json
import os

import pytest
from helpers import make_trainer

from albert.errors import CheckpointError
from albert.io.run_record import RunRecord
from albert.train.checkpoint_store import CheckpointStore
from albert.train.distributed import Distributed
from albert.train.optimization import make_optimizer
from albert.train.run_dir import (
    LOCK_FILE,
    describe_start,
    lock_run_directory,
    mark_finished,
    remove_interrupted_saves,
    start_state,
)


def test_a_directory_locked_elsewhere_is_refused_naming_the_holder(tmp_path):
    # Another open file description conflicts with flock as another process would.
    holder = os.open(tmp_path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    os.write(holder, b"pid 4242 on host elsewhere, since 2024-01-01 00:00:00\n")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(CheckpointError, match=r"--checkpoint_dir .* is in use by another run "
                                                  r"\(pid 4242 on host elsewhere"):
            lock_run_directory(str(tmp_path))
    finally:
        os.close(holder)  # as the holder's exit: its lock goes with it
    lock_run_directory(str(tmp_path))
    assert (tmp_path / LOCK_FILE).read_text().startswith(f"pid {os.getpid()} on host ")
    lock_run_directory(str(tmp_path))  # this process holds it already: no refusal of itself


def test_the_record_round_trips_and_a_garbled_one_is_an_error_not_a_new_run(tmp_path):
    assert RunRecord(str(tmp_path)).read() is None
    RunRecord(str(tmp_path / "run")).write({"step": 3, "started_from": {"load_from": "scratch"}})
    assert RunRecord(str(tmp_path / "run")).read() == {"step": 3,
                                                      "started_from": {"load_from": "scratch"}}
    assert os.listdir(tmp_path / "run") == ["run.json"]  # no temporary left beside it
    (tmp_path / "run" / "run.json").write_text('{"step": 3,')
    with pytest.raises(CheckpointError, match="run.json is unreadable .* new --checkpoint_dir"):
        RunRecord(str(tmp_path / "run")).read()


def test_mark_finished_keeps_the_record_and_only_rank_0_writes(tmp_path):
    class Rank1(Distributed):
        rank = 1

    xla = {"gradient": True, "update": True, "reason": "--xla on"}
    RunRecord(str(tmp_path)).write({"xla": xla, "finished": False})
    mark_finished(str(tmp_path), 9, Rank1())
    assert RunRecord(str(tmp_path)).read()["finished"] is False
    mark_finished(str(tmp_path), 9, Distributed())
    assert json.loads((tmp_path / "run.json").read_text()) == {
        "xla": xla, "finished": True, "step": 9}


def test_interrupted_saves_are_removed_and_completed_ones_kept(tmp_path):
    (tmp_path / "ckpt-4_temp").mkdir()
    (tmp_path / "ckpt-4_temp" / "part-0").write_bytes(b"x")
    (tmp_path / "ckpt-5.index_temp").write_bytes(b"x")
    (tmp_path / "ckpt-3.index").write_bytes(b"x")
    remove_interrupted_saves(str(tmp_path))
    assert os.listdir(tmp_path) == ["ckpt-3.index"]


def test_describe_start_names_what_a_refusal_compares():
    assert describe_start({"load_from": "scratch", "checkpoint_path": None}) == "scratch"
    assert describe_start({"load_from": "checkpoint", "checkpoint_path": "/runs/p1",
                           "load_optimizer_state": True}) == \
        "checkpoint /runs/p1 (with its optimizer state)"
    assert describe_start({}) == "?"


def test_load_from_checkpoint_with_nothing_to_load_is_refused(tmp_path):
    trainer = make_trainer()
    store = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    with pytest.raises(CheckpointError, match="--load_from checkpoint: no checkpoint in "
                                              "--checkpoint_dir .* and no --checkpoint_path"):
        start_state(trainer, store, load_from="checkpoint", checkpoint_path=None)
    assert RunRecord(str(tmp_path)).read() is None  # a refused start records nothing


def test_checkpoints_without_a_record_resume_as_this_commands_run(tmp_path, caplog):
    """Issue 34 item 3: as the flags say (bias-corrected here, not the legacy uncorrected
    form), with one line saying the record was missing, and a best model whose score was in the
    lost record is set aside, never replaced by a worse one."""
    first = make_trainer()
    store = CheckpointStore(str(tmp_path), first.trackables(), Distributed())
    first.step.assign(1)
    store.save(1)
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "config.json").write_text("{}")
    start = {"load_from": "scratch", "checkpoint_path": None}
    again = make_trainer()
    assert again.optimizer.bias_correction
    with caplog.at_level("WARNING"):
        assert start_state(again, CheckpointStore(str(tmp_path), again.trackables(),
                                                  Distributed()),
                           load_from="scratch", checkpoint_path=None,
                           record={"spec": {"bias_correction": True}}) == "resumed"
    assert int(again.step) == 1 and again.optimizer.bias_correction
    record = RunRecord(str(tmp_path)).read()
    assert record["started_from"] == start and record["spec"]["bias_correction"] is True
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w for w in warnings if "run.json" in w and "best" not in w] == [
        f"{tmp_path} has checkpoints but no run record (run.json): resuming them as this "
        "command's run, with its flags"]
    assert not any("uncorrected" in w or "before run specs" in w for w in warnings)
    aside = [p for p in os.listdir(tmp_path) if p.startswith("best.unscored-")]
    assert not (tmp_path / "best").exists() and len(aside) == 1
    assert (tmp_path / aside[0] / "config.json").read_text() == "{}"


def test_start_policy_same_start_resumes_other_start_is_refused(batches, tmp_path):
    start = {"load_from": "scratch", "checkpoint_path": None, "load_optimizer_state": False}
    first = make_trainer()
    handler = CheckpointStore(str(tmp_path), first.trackables(), Distributed())
    assert start_state(first, handler, load_from="scratch", checkpoint_path=None,
                       record={"started_from": start}) == "new"
    first.train_step(batches[0])
    handler.save(1)
    again = make_trainer()
    handler = CheckpointStore(str(tmp_path), again.trackables(), Distributed())
    assert start_state(again, handler, load_from="scratch", checkpoint_path=None,
                       record={"started_from": start}) == "resumed"
    assert int(again.step) == 1
    other = {**start, "load_from": "pretrained", "checkpoint_path": "/models/x"}
    with pytest.raises(CheckpointError, match="holds a run started from scratch; this command "
                                              "starts from pretrained /models/x"):
        start_state(make_trainer(), handler, load_from="pretrained", checkpoint_path="/models/x",
                    record={"started_from": other})
    fresh = make_trainer()
    assert start_state(fresh, handler, load_from="pretrained", checkpoint_path="/models/x",
                       record={"started_from": other}, overwrite=True) == "new"
    assert int(fresh.step) == 0 and not handler.has_checkpoints()
    assert RunRecord(str(tmp_path)).read()["started_from"] == other


@pytest.mark.slow
def test_resume_under_another_spec_is_refused_naming_each_difference(batches, tmp_path, caplog):
    start = {"load_from": "scratch", "checkpoint_path": None, "load_optimizer_state": False}
    spec = {"learning_rate": 0.005, "bias_correction": False, "labels": ["no", "yes"],
            "features": {"max_seq_length": 64, "doc_stride": 32}, "total_steps": 10}
    first = make_trainer()
    handler = CheckpointStore(str(tmp_path), first.trackables(), Distributed())
    start_state(first, handler, load_from="scratch", checkpoint_path=None,
                record={"started_from": start, "spec": spec})
    first.train_step(batches[0])
    handler.save(1)
    changed = {**spec, "learning_rate": 0.05, "bias_correction": True, "labels": ["yes", "no"],
               "features": {"max_seq_length": 64, "doc_stride": 16}}
    with pytest.raises(CheckpointError) as e:
        again = make_trainer()
        start_state(again, CheckpointStore(str(tmp_path), again.trackables(), Distributed()),
                    load_from="scratch", checkpoint_path=None,
                    record={"started_from": start, "spec": changed})
    message = str(e.value)
    assert f"--checkpoint_dir {tmp_path} holds another run (step 1)" in message
    for part in ("bias_correction: recorded False, now True",
                 "features.doc_stride: recorded 32, now 16",
                 "labels: recorded ['no', 'yes'], now ['yes', 'no']",
                 "learning_rate: recorded 0.005, now 0.05", "--overwrite_checkpoint_dir"):
        assert part in message, part
    assert "max_seq_length" not in message
    # More steps is allowed, and says what it does to the schedule.
    same = make_trainer()
    with caplog.at_level("WARNING"):
        assert start_state(same, CheckpointStore(str(tmp_path), same.trackables(),
                                                 Distributed()),
                           load_from="scratch", checkpoint_path=None,
                           record={"started_from": start,
                                   "spec": {**spec, "total_steps": 20}}) == "resumed"
    assert "--total_steps 10 -> 20: the learning rate now decays" in caplog.text


def test_a_run_recorded_before_specs_continues_with_uncorrected_moments(batches, tmp_path):
    # Issue 25: such a run trained with Google's form; switching mid-run would resize every
    # later update, and a later --bias_correction off would then be refused.
    first = make_trainer()
    handler = CheckpointStore(str(tmp_path), first.trackables(), Distributed())
    start = {"load_from": "scratch", "checkpoint_path": None, "load_optimizer_state": False}
    start_state(first, handler, load_from="scratch", checkpoint_path=None,
                record={"started_from": start})  # an old record: no spec
    first.train_step(batches[0])
    handler.save(1)
    again = make_trainer()
    assert again.optimizer.bias_correction
    start_state(again, CheckpointStore(str(tmp_path), again.trackables(), Distributed()),
                load_from="scratch", checkpoint_path=None,
                record={"started_from": start, "spec": {"bias_correction": True}})
    assert not again.optimizer.bias_correction
    assert RunRecord(str(tmp_path)).read()["spec"]["bias_correction"] is False


def test_a_best_model_of_an_attempt_without_checkpoints_is_dropped(tmp_path):
    RunRecord(str(tmp_path)).write({"best": {"metric": "f1", "value": 90.0, "step": 50}})
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "config.json").write_text("{}")
    trainer = make_trainer()
    start = {"load_from": "scratch", "checkpoint_path": None, "load_optimizer_state": False}
    assert start_state(trainer, CheckpointStore(str(tmp_path), trainer.trackables(),
                                                Distributed()),
                       load_from="scratch", checkpoint_path=None,
                       record={"started_from": start}) == "new"
    assert "best" not in RunRecord(str(tmp_path)).read() and not (tmp_path / "best").exists()


def _saved_run(directory, record):
    """A run directory at step 1 with `record` (the update itself is not what these test)."""
    first = make_trainer()
    store = CheckpointStore(str(directory), first.trackables(), Distributed())
    first.step.assign(1)
    store.save(1)
    RunRecord(str(directory)).write(record)


SCRATCH = {"load_from": "scratch", "checkpoint_path": None, "load_optimizer_state": False}


def test_a_run_recorded_before_specs_resumes_in_the_form_its_record_holds(tmp_path, caplog):
    """Issue 34 item 3: the version before run specs recorded a top-level "bias_correction";
    true resumes corrected (not the legacy uncorrected form, 6x larger updates), false under a
    command saying on is refused naming the way on. Only no entry at all is uncorrected."""
    _saved_run(tmp_path, {"started_from": SCRATCH, "bias_correction": True})
    again = make_trainer()
    with caplog.at_level("WARNING"):
        assert start_state(again, CheckpointStore(str(tmp_path), again.trackables(),
                                                  Distributed()),
                           load_from="scratch", checkpoint_path=None,
                           record={"started_from": SCRATCH,
                                   "spec": {"bias_correction": True}}) == "resumed"
    assert again.optimizer.bias_correction
    assert RunRecord(str(tmp_path)).read()["spec"]["bias_correction"] is True
    assert "uncorrected" not in caplog.text
    _saved_run(tmp_path / "off", {"started_from": SCRATCH, "bias_correction": False})
    other = make_trainer()
    with pytest.raises(CheckpointError, match=r"holds a run trained with --bias_correction off "
                                              r"\(step 1\); this command says on. Resume it "
                                              r"with --bias_correction off"):
        start_state(other, CheckpointStore(str(tmp_path / "off"), other.trackables(),
                                           Distributed()),
                    load_from="scratch", checkpoint_path=None,
                    record={"started_from": SCRATCH, "spec": {"bias_correction": True}})
    same = make_trainer(optimizer=lambda v: make_optimizer("lamb", v, bias_correction=False))
    assert start_state(same, CheckpointStore(str(tmp_path / "off"), same.trackables(),
                                             Distributed()),
                       load_from="scratch", checkpoint_path=None,
                       record={"started_from": SCRATCH,
                               "spec": {"bias_correction": False}}) == "resumed"
    assert not same.optimizer.bias_correction


def test_a_record_without_a_top_level_start_takes_its_specs(tmp_path):
    """Issue 34 item 12: not refused as "started from ?" when its spec says scratch."""
    _saved_run(tmp_path, {"spec": {"started_from": SCRATCH, "bias_correction": True}})
    again = make_trainer()
    assert start_state(again, CheckpointStore(str(tmp_path), again.trackables(), Distributed()),
                       load_from="scratch", checkpoint_path=None,
                       record={"started_from": SCRATCH,
                               "spec": {"started_from": SCRATCH,
                                        "bias_correction": True}}) == "resumed"
    other = {**SCRATCH, "load_from": "pretrained", "checkpoint_path": "/models/x"}
    with pytest.raises(CheckpointError, match="holds a run started from scratch; this command "
                                              "starts from pretrained /models/x"):
        start_state(make_trainer(), CheckpointStore(str(tmp_path), again.trackables(),
                                                    Distributed()),
                    load_from="pretrained", checkpoint_path="/models/x",
                    record={"started_from": other, "spec": {"started_from": other}})


@pytest.mark.parametrize("record, wrong", [
    ([1, 2], "it holds a list, expected an object"),
    ({"spec": "lr=1e-3"}, "its 'spec' is a string, expected an object"),
    ({"started_from": "scratch"}, "its 'started_from' is a string, expected an object"),
    ({"xla": "on"}, "its 'xla' is a string, expected an object"),
    ({"xla": {"gradient": "yes", "update": True, "reason": "r"}}, "its xla is "),
    ({"best": {"metric": "f1", "value": "high", "step": 4}}, "its best is "),
    ({"best": {"metric": "f1", "value": 0.5}},
     """its best is {"metric": "f1", "value": 0.5}, expected a metric's name, a numeric value"""),
    ({"step": "7"}, """its 'step' is a string ("7"), expected an integer"""),
    ({"finished": 1}, "its 'finished' is an integer (1), expected a boolean"),
    ({"bias_correction": "on"}, """its 'bias_correction' is a string ("on"), expected a boolean"""),
    ({"spec": {"started_from": "scratch"}}, "its spec.started_from is a string"),
])
def test_a_record_of_the_wrong_shape_is_one_error_naming_it(record, wrong, tmp_path):
    """Issue 34 item 8: valid JSON of the wrong shape is refused when read (before any
    training), never a traceback later; --overwrite_checkpoint_dir discards it as asked."""
    (tmp_path / "run.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointError) as e:
        RunRecord(str(tmp_path)).read()
    assert f"{tmp_path / 'run.json'} is not a run record: {wrong}" in str(e.value)
    assert "--overwrite_checkpoint_dir" in str(e.value)


def test_a_record_of_the_wrong_shape_stops_a_start_and_overwrite_discards_it(tmp_path):
    """Issue 34 item 8: refused at the start, not after training; the flag the message names
    (--overwrite_checkpoint_dir) then works instead of tripping over the same record."""
    (tmp_path / "run.json").write_text(json.dumps({"best": {"metric": "f1", "value": "high",
                                                            "step": 4}}))
    trainer = make_trainer()
    store = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    with pytest.raises(CheckpointError):
        start_state(trainer, store, load_from="scratch", checkpoint_path=None)
    assert start_state(trainer, store, load_from="scratch", checkpoint_path=None,
                       overwrite=True) == "new"
    assert RunRecord(str(tmp_path)).read()["started_from"]["load_from"] == "scratch"


def test_a_resume_of_a_finished_run_stays_finished_unless_it_has_more_to_train(tmp_path):
    """Issue 50: the same command after its run ended resumes a finished run (the runner then
    says so and trains nothing); raising --total_steps makes it unfinished again."""
    _saved_run(tmp_path, {"started_from": SCRATCH, "finished": True, "step": 1,
                          "total_steps": 1})
    for total_steps, finished in ((1, True), (3, False)):
        trainer = make_trainer()
        assert start_state(trainer, CheckpointStore(str(tmp_path), trainer.trackables(),
                                                    Distributed()),
                           load_from="scratch", checkpoint_path=None,
                           record={"started_from": SCRATCH, "total_steps": total_steps,
                                   "finished": False}) == "resumed"
        assert int(trainer.step) == 1
        assert RunRecord(str(tmp_path)).read()["finished"] is finished, total_steps
