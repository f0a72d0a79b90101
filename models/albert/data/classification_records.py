"""Classification's feature cache as TFRecords (albert.data.classification makes the features)
and the tf.data batches read from it, each padded to its longest sequence rounded up, or to
max_seq_length."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from albert.data.classification import Feature
from albert.data.reader import padded_inputs


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
        labels = parsed["labels"] if regression else tf.cast(parsed["labels"], tf.int32)
        return {
            **padded_inputs(parsed["input_ids"], parsed["token_type_ids"], max_seq_length,
                            padding, pad_to_multiple_of),
            "labels": labels,
            "index": tf.cast(parsed["index"], tf.int32),
        }

    return tf.data.TFRecordDataset(prefix + ".tfrecord"), parse
