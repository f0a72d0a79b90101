"""Classification's feature cache as TFRecords (albert.data.classification makes the features)
and the tf.data batches read from it, each padded to its longest sequence rounded up, or to
max_seq_length."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from albert.data.classification import Feature


def write_feature_cache(features: list[Feature], stats: dict, prefix: str,
                        regression: bool) -> None:
    """<prefix>.tfrecord (unpadded features) + <prefix>.meta.json (statistics), atomically: the
    .tfrecord is renamed into place last, so its presence means the cache is complete."""
    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    tmp = f"{prefix}.tfrecord.{os.getpid()}.tmp"  # per process: two runs may share a cache
    with tf.io.TFRecordWriter(tmp) as writer:
        for f in features:
            label = (tf.train.Feature(float_list=tf.train.FloatList(value=[f.label]))
                     if regression else ints([f.label]))
            example = tf.train.Example(features=tf.train.Features(feature={
                "input_ids": ints(f.input_ids),
                "token_type_ids": ints(f.token_type_ids),
                "labels": label,
                "index": ints([f.index]),
            }))
            writer.write(example.SerializeToString())
    with open(f"{prefix}.meta.json.{os.getpid()}.tmp", "w", encoding="utf-8") as out:
        json.dump(stats, out)
    os.replace(f"{prefix}.meta.json.{os.getpid()}.tmp", prefix + ".meta.json")
    os.replace(tmp, prefix + ".tfrecord")


def padded_length(longest, max_seq_length: int, multiple: int):
    """The length a batch whose longest sequence is `longest` (an int32 scalar tensor) is padded
    to: rounded up to a multiple of `multiple` (fewer distinct shapes for XLA to compile, and
    tensor-core friendly), never past max_seq_length."""
    rounded = (longest + multiple - 1) // multiple * multiple
    return tf.minimum(rounded, max_seq_length)


def feature_dataset(prefix: str, regression: bool, max_seq_length: int,
                    padding: str = "batch", pad_to_multiple_of: int = 8):
    """(records, parse): the cached features, and a function that turns a batch of serialized
    records into model inputs [B, S] (S: the batch's longest, rounded up, or max_seq_length with
    padding="max"), `labels` [B] (int32 ids or float32) and `index` [B] (row in the file)."""
    if padding not in ("batch", "max"):
        raise ValueError(f"padding must be 'batch' or 'max', got {padding!r}")
    spec = {
        "input_ids": tf.io.RaggedFeature(tf.int64),
        "token_type_ids": tf.io.RaggedFeature(tf.int64),
        "labels": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64),
        "index": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        ids = tf.cast(parsed["input_ids"], tf.int32)
        if padding == "max":
            length = tf.constant(max_seq_length, tf.int32)
        else:
            length = padded_length(tf.cast(tf.reduce_max(ids.row_lengths()), tf.int32),
                                   max_seq_length, pad_to_multiple_of)

        def dense(ragged):
            """[B, None] ragged -> [B, length], zeros after each row's end."""
            x = ragged.to_tensor(0)
            return tf.pad(x, [[0, 0], [0, length - tf.shape(x)[1]]])

        labels = parsed["labels"] if regression else tf.cast(parsed["labels"], tf.int32)
        return {
            "input_ids": dense(ids),
            "attention_mask": dense(tf.ones_like(ids)),
            "token_type_ids": dense(tf.cast(parsed["token_type_ids"], tf.int32)),
            "labels": labels,
            "index": tf.cast(parsed["index"], tf.int32),
        }

    return tf.data.TFRecordDataset(prefix + ".tfrecord"), parse
