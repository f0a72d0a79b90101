"""SQuAD's feature cache as TFRecords (albert.data.squad makes the features) and the tf.data
batches read from it: the windows unpadded in the cache, each batch padded to its length bucket
or to max_seq_length (albert.data.squad's module docstring)."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from albert.data.reader import padded_inputs, padded_length, resumable_skip, without_autotuner
from albert.data.squad import BUCKET, Feature, check_padding, feature_meta


def write_feature_cache(features: list[Feature], prefix: str) -> None:
    """<prefix>.tfrecord (model inputs and labels) + <prefix>.meta.json (alignment), atomically.

    Each record holds its window unpadded (input_ids and token_type_ids of its real tokens) and
    its `length`: the readers pad each batch (feature_dataset, prediction_batches,
    training_batches)."""
    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    tmp = f"{prefix}.tfrecord.{os.getpid()}.tmp"  # per process: two runs may share a cache
    with tf.io.TFRecordWriter(tmp) as writer:
        for i, f in enumerate(features):
            n = f.length
            example = tf.train.Example(features=tf.train.Features(feature={
                "input_ids": ints(f.input_ids[:n]),
                "token_type_ids": ints(f.token_type_ids[:n]),
                "length": ints([n]),
                "start_positions": ints([f.start_position]),
                "end_positions": ints([f.end_position]),
                "feature_index": ints([i]),
            }))
            writer.write(example.SerializeToString())
    with open(f"{prefix}.meta.json.{os.getpid()}.tmp", "w", encoding="utf-8") as out:
        json.dump(feature_meta(features), out)
    os.replace(f"{prefix}.meta.json.{os.getpid()}.tmp", prefix + ".meta.json")
    os.replace(tmp, prefix + ".tfrecord")  # last: its presence means the cache is complete


def feature_dataset(prefix: str, max_seq_length: int, padding: str = "max",
                    bucket: int = BUCKET):
    """(records, parse): the cached windows (serialized), and a function that turns a vector of
    them into model inputs [B, S] (input_ids, attention_mask, token_type_ids), the labels
    start_positions and end_positions [B] and feature_index [B], int32. S is max_seq_length with
    padding="max", else the batch's longest window rounded up to a multiple of `bucket`
    (albert.data.squad.padded_length)."""
    return tf.data.TFRecordDataset(prefix + ".tfrecord"), _parser(max_seq_length, padding,
                                                                  bucket)


def _parser(max_seq_length: int, padding: str, bucket: int):
    check_padding(padding, bucket)
    spec = {
        "input_ids": tf.io.RaggedFeature(tf.int64),
        "token_type_ids": tf.io.RaggedFeature(tf.int64),
        "start_positions": tf.io.FixedLenFeature([], tf.int64),
        "end_positions": tf.io.FixedLenFeature([], tf.int64),
        "feature_index": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        out = padded_inputs(parsed["input_ids"], parsed["token_type_ids"], max_seq_length,
                            padding, bucket)
        for k in ("start_positions", "end_positions", "feature_index"):
            out[k] = tf.cast(parsed[k], tf.int32)
        return out

    return parse


def _record_length(record):
    return tf.io.parse_single_example(
        record, {"length": tf.io.FixedLenFeature([], tf.int64)})["length"]


def prediction_batches(prefix: str, batch_size: int, max_seq_length: int,
                       padding: str = "batch", bucket: int = BUCKET, rank: int = 0,
                       size: int = 1):
    """tf.data of this rank's share of the cached windows (records rank, rank + size, ...) in
    batches of feature_dataset's dicts; every window of the shard exactly once.

    padding="max": batch_size consecutive windows per batch, padded to max_seq_length (what
    run_squad always did). padding="batch": windows of the same length bucket (their length
    rounded up to a multiple of `bucket`, capped at max_seq_length) batched together and padded
    to that bucket, so a model compiles at most max_seq_length / bucket sequence lengths (and the
    smaller last batch of each). The batches are plan_batches'. Logits of real positions do not
    depend on the padding (the model masks it); keep each window's own (real_logits)."""
    records, parse = feature_dataset(prefix, max_seq_length, padding, bucket)
    shard = records.shard(size, rank)
    if padding == "max":
        batches = shard.batch(batch_size)
    else:
        def key(record):
            n = tf.cast(_record_length(record), tf.int32)
            return tf.cast(padded_length(n, max_seq_length, bucket), tf.int64)

        batches = shard.group_by_window(key, lambda _, group: group.batch(batch_size),
                                        window_size=batch_size)
    return without_autotuner(batches.map(parse).prefetch(tf.data.AUTOTUNE))


def training_batches(records, micro_batch: int, accumulation: int, max_seq_length: int,
                     seed: int, rank: int = 0, size: int = 1, skip_records: int = 0,
                     padding: str = "batch", bucket: int = BUCKET, shuffle_buffer: int = 10_000,
                     window: int = 32):
    """Fine-tuning updates, repeated: dicts of feature_dataset's tensors shaped [accumulation,
    micro_batch, ...] (inputs [accumulation, micro_batch, S]); all micro-batches of an update
    share S. `records`: a cache prefix, or a tf.data.Dataset of its serialized records.

    Each rank reads its shard (records rank, rank + size, ...), shuffled with `seed` (a
    `shuffle_buffer` of records, reshuffled each epoch) and repeated: the stream. It skips
    `skip_records` of it first, as a run that resumes without its saved input position does
    (the runner's fallback: updates done x micro_batch x accumulation).

    padding="max": the stream in updates of consecutive records, padded to max_seq_length;
    exactly the pipeline run_squad always built (shuffle, repeat, skip, batch(micro_batch),
    parse, batch(accumulation)).
    padding="batch": the stream is cut into windows of `window` updates' records; a window's
    records are sorted by length (stably) and cut into `window` updates of neighbouring lengths,
    each padded to its longest rounded up to a multiple of `bucket` (capped at max_seq_length),
    and the window's updates are put in an order drawn from (seed, the window's number). So
    every record of the stream is used once, updates of all lengths follow each other at random
    (never sorted by length), and the padding is what a length bucket leaves. A skip here skips
    whole updates (skip_records rounded up to one): the windows before the position, then the
    updates of its window that a straight run had already taken, so a replayed run continues
    exactly as the straight run, like a restored iterator.

    Deterministic for a seed (and tf's global seed, which tf.data's shuffle also reads); a
    tf.data iterator over it saves and restores (tf.train.Checkpoint) and continues exactly."""
    check_padding(padding, bucket)
    for name, value in (("micro_batch", micro_batch), ("accumulation", accumulation),
                        ("window", window)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if isinstance(records, str):
        records = tf.data.TFRecordDataset(records + ".tfrecord")
    parse = _parser(max_seq_length, padding, bucket)
    stream = (records.shard(size, rank)
              .shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True).repeat())
    if padding == "max":
        return without_autotuner(
            resumable_skip(stream, skip_records).batch(micro_batch, drop_remainder=True)
            .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(accumulation, drop_remainder=True)
            .prefetch(tf.data.AUTOTUNE))

    per_update = micro_batch * accumulation
    updates = -(-int(skip_records) // per_update)
    windows_done, updates_into_window = divmod(updates, window)

    def arrange(number, chunk):
        """A window's records [window * per_update] -> its updates [window, per_update]."""
        lengths = tf.io.parse_example(
            chunk, {"length": tf.io.FixedLenFeature([], tf.int64)})["length"]
        by_length = tf.gather(chunk, tf.argsort(lengths, stable=True))
        updates = tf.reshape(by_length, [window, per_update])
        order = tf.argsort(tf.random.stateless_uniform(
            [window], seed=tf.stack([tf.cast(seed, tf.int64), number])))
        return tf.gather(updates, order)

    def update(chunk):
        batch = parse(chunk)
        return {k: tf.reshape(v, tf.concat([[accumulation, micro_batch], tf.shape(v)[1:]], 0))
                for k, v in batch.items()}

    arranged = (resumable_skip(stream, windows_done * window * per_update)
                .batch(window * per_update, drop_remainder=True)
                .enumerate(start=windows_done)
                .map(arrange)
                .unbatch())
    return without_autotuner(resumable_skip(arranged, updates_into_window)
                             .map(update, num_parallel_calls=tf.data.AUTOTUNE)
                             .prefetch(tf.data.AUTOTUNE))
