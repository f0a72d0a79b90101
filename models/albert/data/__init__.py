"""Data: text -> pretraining TFRecords, the tf.data readers, SQuAD and classification features.

Reading text (no TensorFlow): `corpus` (files, globs, text/JSONL/Parquet/Wikipedia dumps,
compressed -> documents), `text` (sentences, line layouts), `wikitext` (an article's prose),
`progress` (the data tools' bar over the input's bytes).

Making pretraining data (create_pretraining_data's steps, no TensorFlow): `pretraining`
(documents -> SOP + n-gram MLM instances), `chunks` (a chunk of documents -> keyed records by
shard), `workers` (reader and maker processes; records into buckets, then buckets into shards),
`shuffle` (one bucket per shard, each written as a shard in key order), `tfrecord` (TFRecord
files without TensorFlow), `output_dir` (the output directory replaced as a whole), `report`
(totals, warnings, summary.json).

Reading for training: `reader` (tf.data over pretraining TFRecords), `squad` (SQuAD features,
batches, answers), `classification` (labelled files -> features -> batches), `tokenization` (the
SentencePiece vocabulary and the files transformers needs beside it).

The bundled demo data is albert.demo's.
"""
