import logging
import shutil

import numpy as np
import pytest
import tensorflow as tf
from helpers import PREDS, SEQ, damage, write_records

from albert.data.reader import (
    DataError,
    check_all_record_shapes,
    check_ranks_have_records,
    count_nonempty_files,
    data_loss_message,
    pretraining_dataset,
    resolve_files,
    scan_file,
    shard_files,
)


def test_batches_have_model_names_and_shapes(sample_records):
    ds = pretraining_dataset("train", 8, SEQ, PREDS, filesystem_prefix=str(sample_records))
    batch = next(iter(ds))
    assert batch["input_ids"].shape == (8, SEQ) and batch["input_ids"].dtype == tf.int32
    assert batch["attention_mask"].shape == (8, SEQ)
    assert batch["token_type_ids"].shape == (8, SEQ)
    assert batch["masked_lm_positions"].shape == (8, PREDS)
    assert batch["masked_lm_weights"].dtype == tf.float32
    assert batch["sop_labels"].shape == (8,)


def test_pipelines_start_no_autotuning_thread(sample_records):
    """Deleting an iterator waits for tf.data's autotuning thread, which can sleep up to a
    minute (a fine-tune stalled that long as its training stream went): the training stream
    and the validation pass run without one, and batch as before."""
    for training in (True, False):
        ds = pretraining_dataset("train", 8, SEQ, PREDS, filesystem_prefix=str(sample_records),
                                 training=training)
        assert ds.options().autotune.enabled is False
        assert next(iter(ds))["input_ids"].shape == (8, SEQ)


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
        check_all_record_shapes([first], 128, PREDS)
    assert check_all_record_shapes([first], SEQ, PREDS) == []


# -- hostile input (issue 13) -----------------------------------------------------------------


def copy_shards(sample_records, tmp_path):
    """A private copy of the 4 training shards (tests damage them)."""
    out = tmp_path / "train"
    shutil.copytree(sample_records / "train", out)
    return sorted(str(p) for p in out.iterdir())


def test_reader_skips_hidden_tmp_files(sample_records, tmp_path):
    """Item 4: a killed generator's `.part-*.tmp` files are never read, through a glob too."""
    files = copy_shards(sample_records, tmp_path)
    train = tmp_path / "train"
    shutil.copy(files[0], train / ".part-00009-of-00010.tfrecord.tmp")
    shutil.copy(files[0], train / "part-00009-of-00010.tfrecord.tmp")
    shutil.copy(files[0], train / ".hidden.tfrecord")
    for pattern in ("train", "train/*", "train/*.tfrecord*"):
        assert resolve_files(pattern, str(tmp_path)) == files, pattern
    with pytest.raises(DataError, match=r"no TFRecord files match .*hidden or temporary"):
        resolve_files("train/*.tmp", str(tmp_path))


def test_all_files_shapes_checked_not_just_the_first(sample_records, tmp_path):
    """Items 3 and 9: a shard of another seq length anywhere in the list is named."""
    files = copy_shards(sample_records, tmp_path)
    assert check_all_record_shapes(files, SEQ, PREDS) == []
    stale = tmp_path / "train" / "part-00003-of-00002.tfrecord"  # sorts last
    write_records(stale, 3, 128, PREDS)
    with pytest.raises(DataError) as info:
        check_all_record_shapes(files + [str(stale)], SEQ, PREDS)
    message = str(info.value)
    assert f"{stale}: feature 'input_ids' has length 128, but --max_seq_length asks for 64" \
        in message and message.startswith("1 of 5 TFRecord files")
    assert files[0] not in message
    # A first record that cannot be read is named too (gzip or not), never a traceback.
    gz = tmp_path / "part-00000-of-00001.tfrecord.gz"
    write_records(gz, 2, SEQ, PREDS, gzip=True)
    assert check_all_record_shapes([str(gz)], SEQ, PREDS) == []
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(open(files[0], "rb").read()[:30])
    with pytest.raises(DataError, match=f"{cut} is truncated in its first record; find every "
                                        "damaged shard with: python -m albert.check_records"):
        check_all_record_shapes([str(cut)], SEQ, PREDS)


def test_rank_with_only_empty_shards_is_one_error_for_all_ranks(sample_records, tmp_path):
    """Item 2: every rank counts its non-empty files; the gathered counts give one error."""
    files = copy_shards(sample_records, tmp_path)
    for i in (1, 3):  # rank 1 of 2 reads files 1 and 3
        open(files[i], "wb").close()
    counts = [count_nonempty_files(shard_files(files, r, 2)) for r in range(2)]
    assert counts == [2, 0]
    with pytest.raises(DataError, match=r"1 of 2 ranks have no records to read: rank 1's 2 "
                                        r"file\(s\) \(part-00001-of-00004.tfrecord, "
                                        r"part-00003-of-00004.tfrecord\) are all empty"):
        check_ranks_have_records(counts, files, 2)
    check_ranks_have_records([count_nonempty_files(files)], files, 1)  # one rank: fine
    assert check_all_record_shapes(files, SEQ, PREDS) == [files[1], files[3]]


def all_ids(patterns, prefix, **kw):
    ds = pretraining_dataset(patterns, 16, SEQ, PREDS, filesystem_prefix=prefix,
                             training=False, **kw)
    return [tuple(row) for b in ds for row in b["input_ids"].numpy()]


def test_skip_corrupt_reads_good_records_with_counted_warning(sample_records, tmp_path, caplog):
    """Item 8b: with skip_corrupt, the good files and the intact start of damaged ones are read,
    and one warning counts what was skipped; without it, a DataLossError, which
    data_loss_message (item 8c) turns into a message naming both damaged files."""
    files = copy_shards(sample_records, tmp_path)
    originals = {f: all_ids(f, ".") for f in files}
    damage(files)
    intact = {f: scan_file(f).records for f in files}
    assert intact[files[0]] == len(originals[files[0]]) and intact[files[3]] == len(
        originals[files[3]])
    assert 0 < intact[files[1]] < len(originals[files[1]])
    assert intact[files[2]] < len(originals[files[2]])
    expected = sorted(r for f in files for r in originals[f][: intact[f]])

    with caplog.at_level(logging.WARNING, logger="albert.data.reader"):
        got = all_ids("train", str(tmp_path), skip_corrupt=True)
    assert sorted(got) == expected
    warning = [r.getMessage() for r in caplog.records if "skipping corrupt" in r.getMessage()]
    assert len(warning) == 1
    assert (f"2 of 4 files are damaged; {intact[files[1]] + intact[files[2]]} records before "
            "the damage are read") in warning[0]
    assert files[1] in warning[0] and files[2] in warning[0] and files[0] not in warning[0]
    # Training mode repeats over the damaged files without stopping.
    ds = pretraining_dataset("train", 16, SEQ, PREDS, filesystem_prefix=str(tmp_path),
                             skip_corrupt=True)
    assert len(list(ds.take(3 * len(expected) // 16))) == 3 * len(expected) // 16

    with pytest.raises(tf.errors.DataLossError) as info:
        all_ids("train", str(tmp_path))
    message = data_loss_message(info.value, files, "train/*", str(tmp_path))
    assert f"{files[1]} is corrupt at record {intact[files[1]]}" in message
    assert f"{files[2]} is corrupt at record {intact[files[2]]}" in message
    assert f"python -m albert.check_records 'train/*' --filesystem_prefix {tmp_path}" in message
    assert "--skip_corrupt_records" in message and files[0] not in message


def test_the_token_id_check_finds_an_id_too_large_past_the_first_record(tmp_path):
    """A file whose first record fits and whose third does not is still refused."""
    import tensorflow as tf

    from albert.data.reader import DataError, check_token_ids
    from albert.data.tfrecord import TFRecordWriter

    def record(top):
        ints = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))  # noqa: E731
        return tf.train.Example(features=tf.train.Features(feature={
            "input_ids": ints([2, 7, top, 3]), "masked_lm_ids": ints([7, 0])})).SerializeToString()

    path = tmp_path / "part-00000-of-00001.tfrecord"
    with TFRecordWriter(str(path)) as writer:
        for top in (9, 10, 500, 11):
            writer.write(record(top))
    check_token_ids([str(path)], 501)
    with pytest.raises(DataError, match=r"1 of 1 TFRecord files .* 500 pieces .*record 2: "
                                        r"input_ids holds token id 500"):
        check_token_ids([str(path)], 500)


def test_the_token_id_check_leaves_a_damaged_shard_to_skip_corrupt_records(tmp_path):
    # A shard damaged in its first records is --skip_corrupt_records' to read up to the damage
    # (and the shape check's to report): the id check must not stop the run over it.
    from albert.data.reader import check_token_ids

    damaged = tmp_path / "part-00000.tfrecord"
    damaged.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00garbage, not a record")
    check_token_ids([str(damaged)], vocab_size=100)
