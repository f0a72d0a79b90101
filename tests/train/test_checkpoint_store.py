"""The checkpoint store (albert.train.checkpoint_store): fallback, config checks, partial
restores, a second phase's start from another run's checkpoint, input positions saved with each
checkpoint, discarding a run."""

import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import make_trainer

from albert.errors import CheckpointError
from albert.io.run_record import RunRecord
from albert.train.checkpoint_store import CheckpointStore
from albert.train.distributed import Distributed
from albert.train.optimization import make_optimizer
from albert.train.run_dir import start_state
from albert.train.trainer import Trainer


def test_truncated_latest_checkpoint_falls_back(batches, tmp_path):
    trainer = make_trainer()
    handler = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed(), keep=3)
    trainer.train_step(batches[0])
    handler.save(1)
    good = [v.numpy().copy() for v in trainer.model.trainable_variables]
    trainer.train_step(batches[1])
    latest = handler.save(2)
    data_file = [f for f in os.listdir(tmp_path) if f.startswith("ckpt-2.data")][0]
    with open(tmp_path / data_file, "r+b") as f:
        f.truncate(100)
    fresh = make_trainer()
    restored = CheckpointStore(str(tmp_path), fresh.trackables(), Distributed()).restore_latest()
    assert restored.endswith("ckpt-1") and latest.endswith("ckpt-2")
    assert int(fresh.step) == 1
    for g, v in zip(good, fresh.model.trainable_variables, strict=True):
        np.testing.assert_array_equal(g, v.numpy())


def test_checkpoint_from_different_config_is_refused(batches, tmp_path):
    trainer = make_trainer()
    handler = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed(),
                              config=trainer.model.config)
    handler.save(1)
    other = make_trainer(vocab=1000)
    with pytest.raises(ValueError, match="vocab_size: checkpoint 2000 vs this run 1000"):
        CheckpointStore(str(tmp_path), other.trackables(), Distributed(),
                        config=other.model.config).restore_latest()


def test_qa_model_starts_from_a_pretraining_checkpoint(batches, tmp_path):
    from albert import AlbertForQuestionAnswering

    pre = make_trainer()
    pre.train_step(batches[0])
    CheckpointStore(str(tmp_path / "pre"), pre.trackables(), Distributed(),
                    config=pre.model.config).save(1)
    qa_model = AlbertForQuestionAnswering(pre.model.config).build_for_config()
    qa_opt = make_optimizer("adamw", qa_model.trainable_variables)
    qa = Trainer(qa_model, None, qa_opt, lambda s: 0.0, Distributed(), metric_names=[])
    handler = CheckpointStore(str(tmp_path / "qa"), qa.trackables(), Distributed(),
                              config=qa_model.config)
    start_state(qa, handler, load_from="checkpoint", checkpoint_path=str(tmp_path / "pre"))
    np.testing.assert_array_equal(qa_model.albert.encoder.shared_layers[0].ffn.kernel.numpy(),
                                  pre.model.albert.encoder.shared_layers[0].ffn.kernel.numpy())
    assert int(qa.step) == 0  # weights only: the fine-tuning schedule starts at 0
    other = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "other" / "ckpt"))
    with pytest.raises(ValueError, match="holds no ALBERT model weights"):
        handler.restore(other, partial="weights")


def _trained_dir(batches, tmp_path, steps=(1, 2)):
    trainer = make_trainer()
    handler = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed(), keep=5)
    for step, b in zip(steps, batches, strict=False):
        trainer.train_step(b)
        handler.save(step)
    return trainer


@pytest.mark.parametrize("damage", ["missing", "garbled"])
def test_unusable_index_finds_checkpoints_by_their_files(damage, batches, tmp_path):
    trained = _trained_dir(batches, tmp_path)
    index = tmp_path / "checkpoint"
    if damage == "missing":
        index.unlink()
    else:
        index.write_bytes(b"\x00\xffnot a checkpoint state {{{")
    fresh = make_trainer()
    handler = CheckpointStore(str(tmp_path), fresh.trackables(), Distributed())
    restored = handler.restore_latest()
    assert restored.endswith("ckpt-2") and int(fresh.step) == 2
    np.testing.assert_array_equal(fresh.model.trainable_variables[0].numpy(),
                                  trained.model.trainable_variables[0].numpy())
    # A later save writes a fresh index and keeps the old checkpoints.
    handler.save(3)
    assert {"ckpt-2.index", "ckpt-3.index"} <= set(os.listdir(tmp_path))
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-3")


def test_full_disk_save_names_the_directory_and_keeps_the_previous(batches, tmp_path,
                                                                   monkeypatch):
    trainer = _trained_dir(batches, tmp_path, steps=(1,))
    handler = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())

    def full(*args, **kwargs):
        os.makedirs(tmp_path / "ckpt-2_temp", exist_ok=True)  # what a failed write leaves
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(handler.manager, "save", full)
    with pytest.raises(CheckpointError) as e:
        handler.save(2)
    assert f"saving the step 2 checkpoint in {tmp_path} failed (No space left on device)" in \
        str(e.value)
    assert "ckpt-1" in str(e.value) and "is the disk full" in str(e.value)
    assert not (tmp_path / "ckpt-2_temp").exists()
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-1")


def test_keep_checkpoints_zero_names_the_flag(tmp_path):
    trainer = make_trainer()
    with pytest.raises(CheckpointError, match="--keep_checkpoints must be at least 1, got 0"):
        CheckpointStore(str(tmp_path), trainer.trackables(), Distributed(), keep=0)


def test_stale_temporaries_of_interrupted_saves_are_removed_at_start(batches, tmp_path):
    _trained_dir(batches, tmp_path, steps=(1,))
    (tmp_path / "ckpt-7_temp").mkdir()
    (tmp_path / "ckpt-7_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x" * 99)
    stale = tmp_path / "data" / "1x8x1" / "rank-0" / "ckpt-7_temp"
    stale.mkdir(parents=True)
    trainer = make_trainer()
    CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    assert not (tmp_path / "ckpt-7_temp").exists() and not stale.exists()
    assert (tmp_path / "ckpt-1.index").exists()


@pytest.mark.slow
def test_structural_mismatch_is_reported_not_skipped_as_unreadable(batches, tmp_path):
    from albert import AlbertForQuestionAnswering
    _trained_dir(batches, tmp_path)
    pre = make_trainer()
    qa_model = AlbertForQuestionAnswering(pre.model.config).build_for_config()
    qa = Trainer(qa_model, None, make_optimizer("adamw", qa_model.trainable_variables),
                 lambda s: 0.0, Distributed(), metric_names=[])
    handler = CheckpointStore(str(tmp_path), qa.trackables(), Distributed())
    with pytest.raises(CheckpointError, match="does not match this model and optimizer"):
        handler.restore_latest()


def test_input_position_is_saved_per_checkpoint_and_restored_exactly(sample_records, tmp_path):
    from helpers import PREDS, SEQ

    from albert.data.reader import pretraining_dataset
    from albert.train.batch_plan import BatchPlan

    def data():
        return iter(pretraining_dataset("train", 4, SEQ, PREDS,
                                        filesystem_prefix=str(sample_records), seed=3,
                                        shuffle_buffer=50))

    trainer = make_trainer()
    layout = BatchPlan(1, 4, 1)
    handler = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    straight = data()
    handler.positions.track(straight, layout)
    for _ in range(7):
        next(straight)
    handler.save(7)
    expected = [next(straight)["input_ids"].numpy() for _ in range(3)]
    resumed = data()
    # Input positions are files of their own beside the checkpoint: the model's state is no
    # part of them, so the stores opened again may hold the same trainer's.
    other = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    other.positions.track(resumed, layout)
    assert other.positions.restore(7)
    for want in expected:
        np.testing.assert_array_equal(next(resumed)["input_ids"].numpy(), want)
    # Another batch plan has no position of its own: the caller replays instead.
    again = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    again.positions.track(data(), BatchPlan(1, 8, 1))
    assert not again.positions.restore(7)


def test_second_phase_carries_weights_and_optimizer_moments_not_the_step(batches, tmp_path):
    phase1 = _trained_dir(batches, tmp_path / "p1")
    phase2 = make_trainer()
    handler = CheckpointStore(str(tmp_path / "p2"), phase2.trackables(), Distributed())
    start_state(phase2, handler, load_from="checkpoint", checkpoint_path=str(tmp_path / "p1"),
                load_optimizer_state=True)
    assert int(phase2.step) == 0 and int(phase2.iterations) == 0
    np.testing.assert_array_equal(phase2.optimizer.m[0].numpy(), phase1.optimizer.m[0].numpy())
    assert float(np.abs(phase2.optimizer.m[0].numpy()).sum()) > 0
    # The moments carry the count of updates they have seen: bias correction goes on from there.
    assert int(phase2.optimizer.updates) == int(phase1.optimizer.updates) == 2


def _legacy_checkpoint(trainer, directory):
    """A checkpoint in the layout written before the optimizer counted its updates."""
    parts = trainer.trackables()
    parts["optimizer"] = trainer.optimizer.moments_only()
    tf.train.Checkpoint(**parts).write(os.path.join(directory, "ckpt-2"))
    with open(os.path.join(directory, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')


@pytest.mark.slow
def test_checkpoint_from_before_the_update_count_resumes_with_its_step_as_the_count(batches,
                                                                                      tmp_path):
    old = make_trainer()
    for b in batches[:2]:
        old.train_step(b)
    _legacy_checkpoint(old, str(tmp_path / "run"))
    assert not any(n.startswith("optimizer/updates")
                   for n, _ in tf.train.list_variables(str(tmp_path / "run" / "ckpt-2")))
    resumed = make_trainer()
    handler = CheckpointStore(str(tmp_path / "run"), resumed.trackables(), Distributed())
    assert handler.restore_latest().endswith("ckpt-2")
    assert int(resumed.step) == 2 and int(resumed.optimizer.updates) == 2
    np.testing.assert_array_equal(resumed.optimizer.v[3].numpy(), old.optimizer.v[3].numpy())
    # The next update is the one the straight run makes.
    old.train_step(batches[2])
    resumed.train_step(batches[2])
    for a, b in zip(old.model.trainable_variables, resumed.model.trainable_variables,
                    strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)
    # As a second phase's source too.
    phase2 = make_trainer()
    start_state(phase2, CheckpointStore(str(tmp_path / "p2"), phase2.trackables(),
                                        Distributed()),
                load_from="checkpoint", checkpoint_path=str(tmp_path / "run"),
                load_optimizer_state=True)
    assert int(phase2.step) == 0 and int(phase2.optimizer.updates) == 2


@pytest.mark.slow
def test_a_legacy_second_phase_counts_the_updates_of_the_moments_it_began_with(tmp_path):
    """Issue 34 item 18: a phase-2 checkpoint from before the update count, whose run began with
    phase 1's moments (--load_optimizer_state, its step from 0), counts phase 1's updates too,
    resumed or carried on; with phase 1 gone the count is unknown, and it is refused naming the
    way on, not guessed short."""
    phase1, phase2 = tmp_path / "p1", tmp_path / "p2"
    old = make_trainer()
    old.step.assign(2)
    _legacy_checkpoint(old, str(phase1))
    old.step.assign(3)  # phase 2's own updates; its moments have seen 2 + 3
    _legacy_checkpoint(old, str(phase2))
    RunRecord(str(phase2)).write({"started_from": {
        "load_from": "checkpoint", "checkpoint_path": str(phase1), "load_optimizer_state": True}})
    resumed = make_trainer()
    assert CheckpointStore(str(phase2), resumed.trackables(),
                           Distributed()).restore_latest().endswith("ckpt-2")
    assert int(resumed.step) == 3 and int(resumed.optimizer.updates) == 5
    carried = make_trainer()
    CheckpointStore(str(tmp_path / "p3"), carried.trackables(), Distributed()).restore(
        str(phase2), partial="weights+optimizer")
    assert int(carried.step) == 0 and int(carried.optimizer.updates) == 5
    for name in os.listdir(phase1):
        os.remove(phase1 / name)
    with pytest.raises(CheckpointError) as e:
        CheckpointStore(str(phase2), make_trainer().trackables(), Distributed()).restore_latest()
    for part in (f"checkpoint {phase2 / 'ckpt-2'} predates the optimizer's update count and its "
                 f"run began with the optimizer moments of {phase1} (--load_optimizer_state), "
                 "which holds no checkpoint now",
                 "Put that checkpoint back and run the same command again, or start a new run "
                 f"from these weights alone (--load_from checkpoint --checkpoint_path "
                 f"{phase2 / 'ckpt-2'}, without --load_optimizer_state)"):
        assert part in str(e.value), str(e.value)


def _counting_dataset(skip):
    # Records 0, 1, 2, ... as batches of 2, skipping `skip` records first, as a runner's make_data.
    from albert.data.reader import resumable_skip

    return resumable_skip(tf.data.Dataset.range(1000), skip).batch(2)


def test_open_input_continues_at_the_saved_position_not_the_start(tmp_path):
    from albert.train.batch_plan import BatchPlan

    layout = BatchPlan(1, 2, 1)
    trainer = make_trainer()
    handler = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    first = handler.positions.open(_counting_dataset, layout, resumed_updates=0, step=0)
    assert [int(x) for x in next(first)] == [0, 1]
    for _ in range(4):
        next(first)
    handler.save(5)
    # The positions are files of their own: the stores opened again may hold the same trainer's.
    restarted = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    again = restarted.positions.open(_counting_dataset, layout, resumed_updates=5, step=5)
    assert [int(x) for x in next(again)] == [10, 11]
    # Under another batch plan the saved position is not this layout's: the stream is replayed
    # past the records the 5 updates consumed (5 x 4), not restarted at 0.
    other_plan = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed())
    replayed = other_plan.positions.open(_counting_dataset, BatchPlan(1, 4, 1),
                                         resumed_updates=5, step=5)
    assert [int(x) for x in next(replayed)] == [20, 21]


def test_discard_removes_the_run_and_nothing_else(batches, tmp_path):
    # --overwrite_checkpoint_dir: a run's files go, what else the user keeps there stays.
    trainer = make_trainer()
    store = CheckpointStore(str(tmp_path), trainer.trackables(), Distributed(),
                            config=trainer.model.config)
    RunRecord(str(tmp_path)).write({"step": 1})
    for name in ("final", "best", "data/1x4x1/rank-0", "logs"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("mine")
    store.save(1)
    store.discard()
    assert sorted(os.listdir(tmp_path)) == [".lock", "logs", "notes.txt"]
    assert not store.has_checkpoints()
    store.save(2)  # a fresh manager: no stale list of the removed checkpoints
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-2")
