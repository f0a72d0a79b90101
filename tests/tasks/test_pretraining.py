"""The pretraining task (albert.tasks.pretraining): its files checked and shared out at setup, an
empty validation set refused, the unigram baseline's MLM accuracy, what its summary shows."""

import collections
import os

import pytest
import tensorflow as tf
from helpers import PREDS, SEQ

from albert.errors import DataError
from albert.tasks.pretraining import PretrainingTask, unigram_mlm_accuracy
from albert.tasks.pretraining_options import PretrainingOptions
from albert.train.distributed import Distributed
from albert.train.run_spec import Batching, Data, Optimization, Outputs, RunSpec


def task_of(records, val=None):
    return PretrainingTask(RunSpec(
        task="pretraining", total_steps=4, data=Data(train="train", val=val),
        # The rate and the run directory as the command's flags give them.
        optimization=Optimization(learning_rate=1e-3),
        outputs=Outputs(checkpoint_dir=os.path.join(str(records), "checkpoints")),
        options=PretrainingOptions(filesystem_prefix=str(records), max_seq_length=SEQ,
                                   max_predictions_per_seq=PREDS, validation_frequency=2),
        batching=Batching(per_gpu_batch_size=8)))


def write(path, examples, seq=8, preds=4):
    """Records whose masked positions hold `examples`: a list of (ids, weights)."""
    def ints(values, k):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values) + [0] * (k - len(
            values))))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for ids, weights in examples:
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "input_ids": ints([1] * seq, seq), "input_mask": ints([1] * seq, seq),
                "segment_ids": ints([], seq), "masked_lm_positions": ints([1] * preds, preds),
                "masked_lm_ids": ints(ids, preds),
                "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
                    value=list(weights))),
                "next_sentence_labels": ints([0], 1)})).SerializeToString())


def test_unigram_accuracy_is_the_share_of_the_most_frequent_real_masked_token(tmp_path):
    write(tmp_path / "a.tfrecord", [([5, 5, 7, 9], [1, 1, 1, 0]), ([7, 5, 9, 9], [1, 1, 0, 0])])
    write(tmp_path / "b.tfrecord", [([9, 9, 9, 9], [1, 0, 0, 0])])
    # Real (weighted) tokens: 5 5 7 7 5 9 -> 5 is answered right 3 times in 6; the padded 9s count
    # for nothing.
    files = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    assert unigram_mlm_accuracy(files, 8, 4) == pytest.approx(0.5)
    write(tmp_path / "empty.tfrecord", [])
    assert unigram_mlm_accuracy([str(tmp_path / "empty.tfrecord")], 8, 4) == 0.0


def test_setup_shares_the_files_out_and_reads_the_validation_set(sample_records):
    task = task_of(sample_records, val="validation")
    task.setup(Distributed(), None)
    assert len(task.train_files) == 4 and task.my_files == task.train_files
    assert task.val_files and all("validation" in f for f in task.val_files)
    assert [f.split(" (")[0] for f in task.data_files()] == task.train_files
    evaluations = task.evaluations(None, object(), Distributed())
    assert [(e.prefix, e.frequency) for e in evaluations] == [("val", 2)]
    # The baseline counted here another way, one record at a time through its proto: the share
    # of the real (weighted) masked tokens that are the most frequent one.
    counts = collections.Counter()
    for path in sorted((sample_records / "validation").iterdir()):
        for raw in tf.data.TFRecordDataset(str(path)):
            feature = tf.train.Example.FromString(raw.numpy()).features.feature
            ids, weights = (feature["masked_lm_ids"].int64_list.value,
                            feature["masked_lm_weights"].float_list.value)
            counts.update(i for i, w in zip(ids, weights, strict=True) if w)
    share = counts.most_common(1)[0][1] / sum(counts.values())
    assert sum(counts.values()) > 100 and 0.01 < share < 0.5  # a real set, not a degenerate one
    assert task.baseline({"val": {}}) == (
        f"unigram MLM accuracy {share:.4f} (always the most frequent masked token), "
        "SOP 0.5 (a coin)")
    assert task.baseline({}) is None


def test_an_empty_validation_set_is_refused_at_setup(sample_records, tmp_path):
    (tmp_path / "train").symlink_to(sample_records / "train", target_is_directory=True)
    (tmp_path / "val").mkdir()
    write(tmp_path / "val" / "empty.tfrecord", [], seq=SEQ, preds=PREDS)
    with pytest.raises(DataError, match="--val_dir 'val': all 1 file.s. are empty"):
        task_of(tmp_path, val="val").setup(Distributed(), None)


def test_the_summary_shows_mlm_and_sop_accuracy_and_squad_f1(sample_records):
    task = task_of(sample_records)
    assert task.headline("val", {"mlm_acc": 0.25, "sop_acc": 0.5, "loss": 3.0}) == \
        "MLM accuracy 0.2500 SOP accuracy 0.5000"
    assert task.headline("squad", {"f1": 12.345}) == "F1 12.35"
    assert task.headline("squad", {}) == "F1 nan"


def test_a_pretraining_no_better_than_the_most_frequent_token_learned_nothing(tmp_path):
    """What LAMB at 0.04 did to the demo's tiny model (scripts/demo.sh sweep): held-out MLM
    accuracy exactly the most frequent token's. The summary says so, with pretraining's rates,
    not a fine-tune's; a run clearly above the baseline is left alone."""
    from albert.tasks import runner

    # 800 real masked tokens, half of them 5: the baseline is 0.5, two standard errors 0.035.
    write(tmp_path / "val.tfrecord", [([5, 5, 7, 9], [1, 1, 1, 1] + [0] * (PREDS - 4))] * 200,
          seq=SEQ, preds=PREDS)
    task = task_of(tmp_path, val="validation")
    task.val_files = [str(tmp_path / "val.tfrecord")]
    for accuracy in (0.5, 0.53, 0.0):  # at the baseline, within noise, below it
        assert task.learned_nothing({"val": {"mlm_acc": accuracy, "sop_acc": 0.5}}), accuracy
    assert not task.learned_nothing({"val": {"mlm_acc": 0.54, "sop_acc": 0.5}})
    assert not task.learned_nothing({})
    flat = runner.summary(task, "done", 1000, 60, {"val": {"mlm_acc": 0.5, "sop_acc": 0.5}},
                          None)
    assert "baseline unigram MLM accuracy 0.5000 " in flat
    assert ("WARNING: the model learned nothing: its scores are the baseline's. Likely causes: "
            "too few updates (1000), or a --learning_rate ") in flat
    assert "LAMB pretrains a tiny model at about 0.01" in flat and "fine-tunes at" not in flat
    learned = runner.summary(task, "done", 1000, 60, {"val": {"mlm_acc": 0.8, "sop_acc": 0.9}},
                             None)
    assert "learned nothing" not in learned
