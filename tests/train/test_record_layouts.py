"""Issue 52: every run.json layout a released version wrote is read by the one reader
(albert.io.run_record.Record) and its run resumes: one test per layout, each a saved checkpoint
with that record, resumed by start_state under the command that began it."""

import pytest
from helpers import make_trainer

from albert.errors import CheckpointError
from albert.io.run_record import Record, RunRecord
from albert.model.config import AlbertConfig
from albert.tasks.classifier_options import ClassifierOptions
from albert.tasks.squad_options import SquadOptions
from albert.train.checkpoint_store import CheckpointStore
from albert.train.distributed import Distributed
from albert.train.run_dir import start_state
from albert.train.run_spec import Data, Optimization, RunSpec, identity

SCRATCH = {"load_from": "scratch", "checkpoint_path": None, "load_optimizer_state": False}
XLA = {"gradient": False, "update": False, "reason": "--xla off"}
PLAN = {"ranks": 1, "micro_batch": 8, "accumulation": 1, "global_batch": 8}


def _now(task, options, vocab):
    """The identity the same command records today."""
    spec = RunSpec(task=task, options=options, vocabulary=vocab, data=Data(train="t"),
                   optimization=Optimization(warmup_steps=2))
    return identity(spec, config=AlbertConfig.from_preset("tiny", vocab_size=2000),
                    global_batch=8, total_steps=10, data=["t (1 bytes)"])


def _resume(directory, record: dict, spec: dict | None):
    """Save a checkpoint under `record`, resume it as the command with `spec` would; returns
    (how, the trainer, the record as written after)."""
    first = make_trainer()
    store = CheckpointStore(str(directory), first.trackables(), Distributed())
    first.step.assign(1)
    store.save(1)
    RunRecord(str(directory)).write(record)
    again = make_trainer()
    new = Record(started_from=SCRATCH, xla={**XLA, "reason": "now"}, batch_plan=PLAN,
                 total_steps=10, spec=spec, finished=False)
    how = start_state(again, CheckpointStore(str(directory), again.trackables(), Distributed()),
                      load_from="scratch", checkpoint_path=None, record=new)
    return how, again, RunRecord(str(directory)).read()


def test_pre_spec_pretraining_record_resumes_uncorrected(tmp_path, caplog):
    """99449c8 (first run record): no spec, no bias_correction: Adam's moments uncorrected."""
    old = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
           "finished": False, "step": 1}
    assert Record.from_json(old).start == SCRATCH
    with caplog.at_level("WARNING"):
        how, trainer, after = _resume(tmp_path, old, {"bias_correction": True})
    assert how == "resumed" and trainer.optimizer.bias_correction is False
    assert "before run specs" in caplog.text and after["xla"] == XLA  # its first plan stays


def test_pre_spec_fine_tune_record_keeps_its_task_labels_and_train_file(tmp_path):
    """99449c8 finetune.py / run_classifier: train_file, task and labels at the top level."""
    old = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
           "train_file": "/data/train.tsv", "task": "classification", "labels": ["neg", "pos"],
           "finished": False}
    record = Record.from_json(old)
    assert (record.run_task, record.run_labels) == ("classification", ["neg", "pos"])
    how, _, after = _resume(tmp_path, old, {"bias_correction": False})
    assert how == "resumed"
    assert after["train_file"] == "/data/train.tsv"  # an entry it does not know, kept


def test_pre_spec_record_with_bias_correction_resumes_in_its_form(tmp_path):
    """c448635: the version before specs recorded a top-level bias_correction."""
    old = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
           "bias_correction": True, "finished": False}
    assert Record.from_json(old).bias_correction is True
    how, trainer, _ = _resume(tmp_path, old, {"bias_correction": True})
    assert how == "resumed" and trainer.optimizer.bias_correction is True


def test_first_spec_record_resumes(tmp_path, sample_vocab):
    """19f56ad: the first spec: no warmup_proportion, a SQuAD run's features without padding,
    versions under "albert", task and labels also beside the spec."""
    now = _now("squad", SquadOptions(padding="max"), sample_vocab)
    spec = {k: v for k, v in now.items() if k != "warmup_proportion"}
    spec["features"] = {k: v for k, v in now["features"].items() if k != "padding"}
    old = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
           "spec": spec, "command": ["python", "-m", "albert.run_squad"],
           "versions": {"albert": "0.1.0", "python": "3.11"}, "task": "squad", "labels": None,
           "finished": False}
    assert Record.from_json(old).run_task == "squad"
    how, _, after = _resume(tmp_path, old, now)
    assert how == "resumed" and after["spec"] == now
    assert "task" not in after and "labels" not in after  # stored once now, in the spec


@pytest.mark.parametrize("proportion, resumes", [(0.2, True), (0.5, False)])
def test_first_spec_record_of_a_warmup_proportion_resumes_under_that_proportion(
        tmp_path, sample_vocab, proportion, resumes):
    """19f56ad recorded a fine-tuner's --warmup_proportion as the number of updates it gave
    (0.2 of 10: 2) and no proportion: the same command resumes it, another proportion is
    another run."""
    spec = RunSpec(task="squad", options=SquadOptions(), vocabulary=sample_vocab,
                   data=Data(train="t"),
                   optimization=Optimization(warmup_steps=None, warmup_proportion=proportion))
    now = identity(spec, config=AlbertConfig.from_preset("tiny", vocab_size=2000),
                   global_batch=8, total_steps=10, data=["t (1 bytes)"])
    assert now["warmup_steps"] is None and now["warmup_proportion"] == proportion
    first = {k: v for k, v in now.items() if k != "warmup_proportion"}
    first["warmup_steps"] = 2
    old = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
           "spec": first, "finished": False}
    if resumes:
        how, _, after = _resume(tmp_path, old, now)
        assert how == "resumed" and after["spec"] == now
    else:
        with pytest.raises(CheckpointError, match="warmup"):
            _resume(tmp_path, old, now)


def test_spec_record_without_a_top_level_start_resumes(tmp_path, sample_vocab):
    """228dc79: a record whose top-level started_from is gone (cut short, or by hand)."""
    now = _now("squad", SquadOptions(), sample_vocab)
    old = {"spec": now, "total_steps": 10, "finished": False}
    assert Record.from_json(old).start == SCRATCH
    how, _, after = _resume(tmp_path, old, now)
    assert how == "resumed" and after["started_from"] == SCRATCH


def test_spec_record_with_duplicates_versions_and_best_resumes(tmp_path, sample_vocab):
    """228dc79..this version: albert-tf's version, task and labels beside the spec, a best
    with its evaluation file."""
    now = _now("classification", ClassifierOptions(labels=("neg", "pos"),
                                                   kind="classification"), sample_vocab)
    best = {"metric": "accuracy", "value": 0.75, "step": 1, "eval_file": "/d/dev.tsv",
            "eval_sha256": "0" * 64}
    old = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
           "spec": now, "command": ["python", "-m", "albert.run_classifier"],
           "versions": {"albert-tf": "0.0.1"}, "task": "classification",
           "labels": ["neg", "pos"], "finished": False, "step": 1, "best": best}
    record = Record.from_json(old)
    assert (record.run_task, record.run_labels) == ("classification", ["neg", "pos"])
    (tmp_path / "best").mkdir()
    how, _, after = _resume(tmp_path, old, now)
    assert how == "resumed" and after["best"] == best and (tmp_path / "best").is_dir()
    assert after["versions"] == {"albert-tf": "0.0.1"} and "labels" not in after


@pytest.mark.parametrize("layout", ["current"])
def test_the_current_layout_goes_through_record_unchanged(layout, sample_vocab, tmp_path):
    now = _now("squad", SquadOptions(), sample_vocab)
    current = {"started_from": SCRATCH, "xla": XLA, "batch_plan": PLAN, "total_steps": 10,
               "spec": now, "command": ["python"], "versions": {"albert-tf": "0.1.0"},
               "finished": False}
    assert Record.from_json(current).to_json() == current
    how, _, after = _resume(tmp_path, current, now)
    assert how == "resumed" and after == current
