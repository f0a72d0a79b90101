import numpy as np
import pytest
import tensorflow as tf
from conftest import PREDS, SEQ

from albert.data.reader import DataError, check_record_shapes, pretraining_dataset, resolve_files


def test_batches_have_model_names_and_shapes(sample_records):
    ds = pretraining_dataset("train", 8, SEQ, PREDS, filesystem_prefix=str(sample_records))
    batch = next(iter(ds))
    assert batch["input_ids"].shape == (8, SEQ) and batch["input_ids"].dtype == tf.int32
    assert batch["attention_mask"].shape == (8, SEQ)
    assert batch["token_type_ids"].shape == (8, SEQ)
    assert batch["masked_lm_positions"].shape == (8, PREDS)
    assert batch["masked_lm_weights"].dtype == tf.float32
    assert batch["sop_labels"].shape == (8,)


def test_ranks_read_disjoint_files(sample_records):
    def ids(rank):
        ds = pretraining_dataset("train/*", 4, SEQ, PREDS, filesystem_prefix=str(sample_records),
                                 rank=rank, size=2, training=False)
        return {tuple(row) for b in ds for row in b["input_ids"].numpy()}

    r0, r1 = ids(0), ids(1)
    everything = pretraining_dataset("train", 4, SEQ, PREDS, training=False,
                                     filesystem_prefix=str(sample_records))
    total = {tuple(row) for b in everything for row in b["input_ids"].numpy()}
    assert r0 and r1 and not (r0 & r1)
    assert len(r0 | r1) >= len(total) - 8  # only drop_remainder tails differ


def test_training_dataset_repeats_and_is_seeded(sample_records):
    def first(seed):
        ds = pretraining_dataset("train", 16, SEQ, PREDS, filesystem_prefix=str(sample_records),
                                 seed=seed, shuffle_buffer=500)
        return [b["input_ids"].numpy() for b in ds.take(200)]  # > one epoch: repeats

    a, b = first(1), first(1)
    assert len(a) == 200
    np.testing.assert_array_equal(np.stack(a[:5]), np.stack(b[:5]))


def test_errors_name_the_pattern(sample_records, tmp_path):
    with pytest.raises(DataError, match="no TFRecord files match .*nothing-here"):
        resolve_files("nothing-here/*.tfrecord", str(tmp_path))
    with pytest.raises(DataError, match="cannot be split over 8 ranks"):
        pretraining_dataset("train", 4, SEQ, PREDS, filesystem_prefix=str(sample_records),
                            rank=0, size=8)
    first = resolve_files("train", str(sample_records))[0]
    with pytest.raises(DataError, match="--max_seq_length asks for 128"):
        check_record_shapes(first, 128, PREDS)
    check_record_shapes(first, SEQ, PREDS)
