"""tf.data readers for pretraining TFRecords (ours or google-research BERT/ALBERT's).

Files are sharded across Horovod ranks at the file level (rank r reads files r, r+size, ...), then
interleaved, shuffled, repeated, batched with drop_remainder and prefetched. GZIP files
(`.gz` suffix) and plain files may be mixed.
"""

from __future__ import annotations

import os

import tensorflow as tf


class DataError(ValueError):
    """Input files that cannot be read as asked; the message names the pattern or file."""


def resolve_files(patterns, filesystem_prefix: str = ".") -> list[str]:
    """Patterns (globs, directories or files; comma lists allowed) under the prefix -> files.

    A relative pattern is taken under `filesystem_prefix` (aws-samples: `/fsx` on the cloud);
    a directory means every non-hidden, non-JSON file in it.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    files: list[str] = []
    for pattern in patterns:
        for part in filter(None, (p.strip() for p in pattern.split(","))):
            full = os.path.join(filesystem_prefix or ".", part)
            if tf.io.gfile.isdir(full):
                matched = [
                    os.path.join(full, name) for name in tf.io.gfile.listdir(full)
                    if not name.startswith(".") and not name.endswith(".json")
                    and not tf.io.gfile.isdir(os.path.join(full, name))
                ]
            else:
                matched = tf.io.gfile.glob(full)
            if not matched:
                raise DataError(f"no TFRecord files match {full!r} (pattern {part!r} under "
                                f"--filesystem_prefix {filesystem_prefix!r})")
            files.extend(sorted(matched))
    return sorted(set(files))


def pretraining_feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> dict:
    seq, preds = max_seq_length, max_predictions_per_seq
    return {
        "input_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([preds], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([preds], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([preds], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def _to_model_inputs(parsed: dict) -> dict:
    """Feature names on disk (BERT's) -> the names the models and train step use, int32."""
    i32 = lambda t: tf.cast(t, tf.int32)
    return {
        "input_ids": i32(parsed["input_ids"]),
        "attention_mask": i32(parsed["input_mask"]),
        "token_type_ids": i32(parsed["segment_ids"]),
        "masked_lm_positions": i32(parsed["masked_lm_positions"]),
        "masked_lm_ids": i32(parsed["masked_lm_ids"]),
        "masked_lm_weights": parsed["masked_lm_weights"],
        "sop_labels": i32(parsed["next_sentence_labels"][..., 0]),
    }


def shard_files(files: list[str], rank: int, size: int, what: str = "files") -> list[str]:
    if len(files) < size:
        raise DataError(
            f"{len(files)} {what} cannot be split over {size} ranks: each rank needs at least one "
            f"file (write more shards, e.g. create_pretraining_data --num_shards {size})"
        )
    return files[rank::size]


def _record_dataset(files, cycle_length, shuffle, seed, repeat):
    compression = ["GZIP" if f.endswith(".gz") else "" for f in files]
    ds = tf.data.Dataset.from_tensor_slices((files, compression))
    if shuffle:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    return ds.interleave(
        lambda f, c: tf.data.TFRecordDataset(f, compression_type=c),
        cycle_length=max(1, min(cycle_length, len(files))),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )


def pretraining_dataset(
    patterns,
    batch_size: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
    *,
    filesystem_prefix: str = ".",
    rank: int = 0,
    size: int = 1,
    training: bool = True,
    seed: int = 0,
    shuffle_buffer: int = 10_000,
    cycle_length: int = 8,
    skip_records: int = 0,
) -> tf.data.Dataset:
    """Batches of model inputs plus labels, each [batch, ...]:

    input_ids, attention_mask, token_type_ids [B, S] int32; masked_lm_positions, masked_lm_ids
    [B, P] int32; masked_lm_weights [B, P] float32; sop_labels [B] int32 (1 = segments swapped).
    training=True shuffles (unless shuffle_buffer is 0) and repeats forever, batches drop their
    remainder, and each rank needs at least one file. training=False reads this rank's part once,
    keeps the last partial batch, and splits by record when there are fewer files than ranks (so
    every rank takes part in validation).
    skip_records: records of this rank's stream to skip (resuming mid-run on the same trajectory:
    the pipeline is seeded and deterministic, so skipping what was consumed continues it exactly).
    """
    if batch_size < 1:
        raise DataError(f"batch size must be at least 1, got {batch_size}")
    all_files = resolve_files(patterns, filesystem_prefix)
    by_record = not training and len(all_files) < size
    files = all_files if by_record else shard_files(all_files, rank, size,
                                                     what=f"files matching {patterns!r}")
    shuffle = training and shuffle_buffer > 0
    # Without shuffling, records alternate between files one at a time, so a batch of k*B on one
    # process holds the same records as k ranks' batches of B (one file each): the losses are means,
    # so the update is the same, which is what makes multi-rank runs reproducible on one process.
    ds = _record_dataset(files, cycle_length, shuffle, seed, repeat=training)
    if by_record:
        ds = ds.shard(size, rank)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if skip_records:
        ds = ds.skip(skip_records)
    ds = ds.batch(batch_size, drop_remainder=training)
    spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    # Parse whole batches: one parse_example call per batch is much cheaper than one per record.
    ds = ds.map(lambda records: _to_model_inputs(tf.io.parse_example(records, spec)),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.prefetch(tf.data.AUTOTUNE)


def check_record_shapes(path: str, max_seq_length: int, max_predictions_per_seq: int) -> None:
    """Parse the first record of `path` with the expected shapes; DataError naming the mismatch."""
    compression = "GZIP" if path.endswith(".gz") else ""
    spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    for record in tf.data.TFRecordDataset(path, compression_type=compression).take(1):
        example = tf.train.Example.FromString(record.numpy())
        for name, feature_spec in spec.items():
            feature = example.features.feature.get(name)
            if feature is None:
                raise DataError(f"{path}: records have no feature {name!r}")
            kind = feature.WhichOneof("kind")
            length = len(getattr(feature, kind).value)
            if length != feature_spec.shape[0]:
                flag = ("--max_predictions_per_seq" if name.startswith("masked_lm")
                        else "--max_seq_length")
                raise DataError(
                    f"{path}: feature {name!r} has length {length}, but {flag} asks for "
                    f"{feature_spec.shape[0]}; pass the value the data was made with"
                )
        return
    raise DataError(f"{path} holds no records")
