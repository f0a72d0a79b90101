"""tf.data readers for pretraining TFRecords (ours or google-research BERT/ALBERT's).

Files are sharded across Horovod ranks at the file level (rank r reads files r, r+size, ...), then
interleaved, shuffled, repeated, batched with drop_remainder and prefetched. GZIP files
(`.gz` suffix) and plain files may be mixed. Hidden (`.name`) and temporary (`name.tmp`) files are
never read: a killed generator leaves its unfinished shards under such names.

Checks before training (each reads little, so every rank can afford them):
- check_all_record_shapes: the first record of every file has the shapes the flags ask for;
- count_nonempty_files + check_ranks_have_records: every rank has at least one record to read;
- check_token_ids: the first records of every file (and the summary.json the generator wrote
  beside them) hold only ids of the model's vocabulary;
- scan_file (and `python -m albert.check_records`, with first_record_shapes and, for --stats,
  unpadded_records): every record of a file is intact.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import os
import re
import shlex
import struct
import zlib

import tensorflow as tf

from albert.data.tfrecord import FOOTER_BYTES, HEADER_BYTES, masked_crc
from albert.data.tokenization import vocab_checksum
from albert.errors import DataError  # the family's; importable from here too

logger = logging.getLogger(__name__)


def is_hidden_or_temporary(path: str) -> bool:
    name = os.path.basename(path.rstrip("/"))
    return name.startswith(".") or name.endswith(".tmp")


def resolve_files(patterns, filesystem_prefix: str = ".") -> list[str]:
    """Patterns (globs, directories or files; comma lists allowed) under the prefix -> files.

    A relative pattern is taken under `filesystem_prefix` (aws-samples: `/fsx` on the cloud);
    a directory means every non-hidden, non-JSON file in it. Hidden and temporary files
    (`.part-00000-of-00004.tfrecord.tmp`) are left out however they are matched. A path that
    exists is taken as it is, even when it holds glob characters (`[1]`) or commas; otherwise
    commas split it (logged).
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    prefix = filesystem_prefix or "."
    files: list[str] = []
    for pattern in patterns:
        if pattern.strip() and tf.io.gfile.exists(os.path.join(prefix, pattern)):
            parts = [pattern]
        else:
            parts = [p.strip() for p in pattern.split(",") if p.strip()]
            if "," in pattern:
                # A file name may hold a comma: say so when one was split, in case that was
                # not meant.
                logger.info("%r is no path under %r, so it was split at its commas into %s",
                            pattern, prefix, ", ".join(repr(p) for p in parts))
        for part in parts:
            full = os.path.join(prefix, part)
            if tf.io.gfile.isdir(full):
                matched = [
                    os.path.join(full, name) for name in tf.io.gfile.listdir(full)
                    if not name.endswith(".json")
                    and not tf.io.gfile.isdir(os.path.join(full, name))
                ]
            elif tf.io.gfile.exists(full):
                matched = [full]  # before glob: `part[1].tfrecord` names a file
            else:
                matched = tf.io.gfile.glob(full)
            kept = [f for f in matched if not is_hidden_or_temporary(f)]
            if not kept:
                ignored = len(matched) - len(kept)
                note = (f"; {ignored} hidden or temporary file(s) such as "
                        f"{os.path.basename(matched[0])!r} are never read" if ignored else "")
                raise DataError(f"no TFRecord files match {full!r} (pattern {part!r} under "
                                f"--filesystem_prefix {filesystem_prefix!r}){note}")
            files.extend(sorted(kept))
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


def padded_length(longest, max_seq_length: int, multiple: int):
    """The length a batch whose longest sequence is `longest` (an int32 scalar tensor) is padded
    to: rounded up to a multiple of `multiple` (fewer distinct shapes to trace or compile, and
    tensor-core friendly), never past max_seq_length (albert.data.squad.padded_length in
    Python)."""
    return tf.minimum((longest + multiple - 1) // multiple * multiple, max_seq_length)


def padded_inputs(ids, token_type_ids, max_seq_length: int, padding: str, multiple: int) -> dict:
    """A fine-tuning batch's model inputs, each [B, S] int32 with zeros after a row's end, from
    its ragged token ids and token types [B, None] (as tf.io.parse_example reads a
    RaggedFeature): S is the batch's longest rounded up (padded_length), or max_seq_length with
    padding="max" (then also the static shape)."""
    ids = tf.cast(ids, tf.int32)
    if padding == "max":
        length = tf.constant(max_seq_length, tf.int32)
    else:
        length = padded_length(tf.cast(tf.reduce_max(ids.row_lengths()), tf.int32),
                               max_seq_length, multiple)

    def dense(ragged):
        x = ragged.to_tensor(0)
        x = tf.pad(x, [[0, 0], [0, length - tf.shape(x)[1]]])
        return tf.ensure_shape(x, [None, max_seq_length if padding == "max" else None])

    return {"input_ids": dense(ids), "attention_mask": dense(tf.ones_like(ids)),
            "token_type_ids": dense(tf.cast(token_type_ids, tf.int32))}

def shard_files(files: list[str], rank: int, size: int, what: str = "files") -> list[str]:
    if len(files) < size:
        raise DataError(
            f"{len(files)} {what} cannot be split over {size} ranks: each rank needs at least one "
            f"file (write more shards, e.g. create_pretraining_data --num_shards {size})"
        )
    return files[rank::size]


def _compression(path: str) -> str:
    return "GZIP" if path.endswith(".gz") else ""


def _record_dataset(files, cycle_length, shuffle, seed, repeat, skip_corrupt=False):
    compression = [_compression(f) for f in files]
    ds = tf.data.Dataset.from_tensor_slices((files, compression))
    if shuffle:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()

    def read(f, c):
        records = tf.data.TFRecordDataset(f, compression_type=c)
        # A file's stream ends at its first damaged record (TFRecord framing cannot be
        # resynchronised after a bad length); the other files go on.
        return records.ignore_errors() if skip_corrupt else records

    return ds.interleave(
        read,
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
    skip_corrupt: bool = False,
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
    skip_corrupt: scan this rank's files first (every record: one extra read of the rank's data),
    log a warning counting the damaged files and the records kept, and read each damaged file up
    to its first bad record instead of failing with a DataLossError mid-run.
    """
    if batch_size < 1:
        raise DataError(f"batch size must be at least 1, got {batch_size}")
    all_files = resolve_files(patterns, filesystem_prefix)
    by_record = not training and len(all_files) < size
    files = all_files if by_record else shard_files(all_files, rank, size,
                                                     what=f"files matching {patterns!r}")
    if skip_corrupt:
        warn_about_corrupt_files(files, rank)
    shuffle = training and shuffle_buffer > 0
    # Without shuffling, records alternate between files one at a time, so a batch of k*B on one
    # process holds the same records as k ranks' batches of B (one file each): the losses are means,
    # so the update is the same, which is what makes multi-rank runs reproducible on one process.
    ds = _record_dataset(files, cycle_length, shuffle, seed, repeat=training,
                         skip_corrupt=skip_corrupt)
    if by_record:
        ds = ds.shard(size, rank)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    ds = resumable_skip(ds, skip_records)
    ds = ds.batch(batch_size, drop_remainder=training)
    spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    # Parse whole batches: one parse_example call per batch is much cheaper than one per record.
    ds = ds.map(lambda records: _to_model_inputs(tf.io.parse_example(records, spec)),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return without_autotuner(ds.prefetch(tf.data.AUTOTUNE))


def without_autotuner(ds: tf.data.Dataset) -> tf.data.Dataset:
    """ds with tf.data's autotuning thread off: AUTOTUNE parallelism is then the number of cores
    and a prefetch buffer sizes itself. Deleting an iterator waits for that thread, which sleeps
    up to a minute between passes (TF 2.21) and can miss its wake-up: a fine-tune stalled for up
    to 60 s as its training stream was deleted, in 5 of 20 runs. Every pipeline of a run ends
    here."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.with_options(options)


def resumable_skip(ds: tf.data.Dataset, count) -> tf.data.Dataset:
    """ds.skip(count) that stays in the pipeline when count is 0. A saved iterator restores only
    into a pipeline of the same structure, and tf.data drops a skip of 0 by default: a run that
    replayed its input once (skip > 0) could then never restore its saved position again."""
    options = tf.data.Options()
    options.experimental_optimization.noop_elimination = False
    return ds.skip(count).with_options(options)


# -- checks before training -------------------------------------------------------------------


def _tf_message(error: Exception) -> str:
    """TensorFlow's error text without its op/function decorations."""
    text = getattr(error, "message", None) or str(error)
    text = re.sub(r"\{\{[^}]*\}\}", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\].*", "", text, flags=re.S)
    return " ".join(text.split())


def _open_binary(path: str):
    """A local path with open(); anything else (s3://, gs://, hdfs://) with tf.io.gfile."""
    raw = open(path, "rb") if "://" not in path else tf.io.gfile.GFile(path, "rb")
    return gzip.GzipFile(fileobj=raw, mode="rb") if path.endswith(".gz") else raw


def first_record(path: str) -> bytes | None:
    """The first record of `path`, None when it holds none; DataError when it cannot be read.

    Read in Python (header, CRCs, payload: the TFRecord framing), because building a tf.data
    pipeline per file costs ~20 ms, which is minutes on every rank for thousands of shards."""
    records = leading_records(path, 1)
    return records[0] if records else None


def leading_records(path: str, limit: int) -> list[bytes]:
    """The first `limit` records of `path` (fewer when it holds fewer), read as first_record
    reads; DataError when one of them cannot be read."""
    damaged = f"; find every damaged shard with: python -m albert.check_records {shlex.quote(path)}"
    records: list[bytes] = []
    try:
        with _open_binary(path) as f:
            while len(records) < limit:
                which = "its first record" if not records else f"record {len(records)}"
                header = f.read(HEADER_BYTES)
                if not header:
                    break
                if len(header) < HEADER_BYTES:
                    raise DataError(f"{path} is truncated in {which}{damaged}")
                length, length_crc = struct.unpack("<QI", header)
                if masked_crc(header[:8]) != length_crc:
                    raise DataError(f"{path} is corrupt in {which}'s header (not a TFRecord "
                                    f"file?){damaged}")
                body = f.read(length + FOOTER_BYTES)
                if len(body) < length + FOOTER_BYTES:
                    raise DataError(f"{path} is truncated in {which}{damaged}")
                record, (crc,) = body[:length], struct.unpack("<I", body[length:])
                if masked_crc(record) != crc:
                    raise DataError(f"{path} is corrupt in {which}{damaged}")
                records.append(record)
    except (OSError, EOFError, zlib.error, tf.errors.OpError) as e:
        raise DataError(f"{path} cannot be read ({_tf_message(e)}){damaged}") from None
    return records


def first_record_shapes(files: list[str]) -> tuple[int, int, str] | None:
    """(max_seq_length, max_predictions_per_seq, file) from the first record found in `files`
    (files that cannot be read are passed over: the scan reports them), else None."""
    for path in files:
        try:
            record = first_record(path)
        except DataError:
            continue  # the scan reports it
        if record is None:
            continue
        feature = tf.train.Example.FromString(record).features.feature
        if "input_ids" not in feature or "masked_lm_positions" not in feature:
            raise DataError(f"{path}: the first record is not a pretraining example (no "
                            "input_ids / masked_lm_positions); pass --max_seq_length and "
                            "--max_predictions_per_seq to check against them")
        return (len(feature["input_ids"].int64_list.value),
                len(feature["masked_lm_positions"].int64_list.value), path)
    return None


def record_shape_problem(record: bytes, spec: dict) -> str | None:
    """What is wrong with one serialized record against `spec` (None when it fits): a missing
    feature, or a feature length that differs from the flag that sets it."""
    try:
        example = tf.train.Example.FromString(record)
    except Exception:  # protobuf's DecodeError lives in a module that moves between versions
        return "not a tf.train.Example"
    for name, feature_spec in spec.items():
        feature = example.features.feature.get(name)
        if feature is None:
            return f"no feature {name!r}"
        kind = feature.WhichOneof("kind")
        length = len(getattr(feature, kind).value) if kind else 0
        expected = feature_spec.shape[0]
        if length != expected:
            flag = ("--max_predictions_per_seq" if name.startswith("masked_lm")
                    else "--max_seq_length")
            return f"feature {name!r} has length {length}, but {flag} asks for {expected}"
    return None


def check_all_record_shapes(files: list[str], max_seq_length: int,
                            max_predictions_per_seq: int) -> list[str]:
    """Check the first record of every file in `files` against the flags (training and
    validation files alike). Raises one DataError naming the bad files (up to 3), the shape
    found and the shape expected; returns the files that hold no records (not an error here:
    see check_ranks_have_records)."""
    spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    bad, empty = [], []
    for path in files:
        record = first_record(path)
        if record is None:
            empty.append(path)
            continue
        problem = record_shape_problem(record, spec)
        if problem:
            bad.append(f"{path}: {problem}")
    if bad:
        listed = "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise DataError(
            f"{len(bad)} of {len(files)} TFRecord files do not have the shapes of "
            f"--max_seq_length {max_seq_length} --max_predictions_per_seq "
            f"{max_predictions_per_seq}: {listed}. Pass the values the data was made with, or "
            "remove files left from another run of the generator"
        )
    return empty


_ID_FEATURES = ("input_ids", "masked_lm_ids")
_RECORDS_CHECKED_FOR_IDS = 4  # per file: a record from a larger vocabulary shows it at once


def token_id_problem(record: bytes, vocab_size: int) -> str | None:
    """The first token id of a serialized pretraining record outside [0, vocab_size), in words;
    None when every id fits."""
    try:
        feature = tf.train.Example.FromString(record).features.feature
    except Exception:  # protobuf's DecodeError lives in a module that moves between versions
        return None  # the shape checks name it
    for name in _ID_FEATURES:
        ids = feature[name].int64_list.value if name in feature else ()
        if ids and (max(ids) >= vocab_size or min(ids) < 0):
            value = max(ids) if max(ids) >= vocab_size else min(ids)
            return f"{name} holds token id {value}"
    return None


def check_token_ids(files: list[str], vocab_size: int, spm_model: str | None = None) -> None:
    """Refuse records whose token ids fall outside the model's vocabulary, before training: on a
    CPU the embedding lookup stops the run with a traceback, and on a GPU it returns zeros for
    such ids, which trains on garbage without a word.

    Reads the first few records of every file, and the summary.json that create_pretraining_data
    writes beside train/ and validation/ (it names the vocabulary the ids are of: its size is
    compared, and its checksum against `spm_model`'s). Raises one DataError naming the files
    and the ways on; logs a warning when the data says it was made with another vocabulary of
    a size that fits.
    """
    vocabulary = (f"--spm_model {spm_model}" if spm_model else "the model's vocab_size")
    made_with = _vocabulary_of(files)
    way_on = ("pass the --spm_model the data was made with (its summary.json names it), or "
              "regenerate the data with this vocabulary")
    for summary, recorded in made_with.items():
        size = recorded.get("vocab_size")
        if isinstance(size, int) and size > vocab_size:
            raise DataError(
                f"the records beside {summary} were made with a vocabulary of {size} pieces "
                f"({recorded.get('spm_model')}), larger than the model's {vocab_size} "
                f"({vocabulary}): its ids above {vocab_size - 1} have no embedding; {way_on}")
        if size != vocab_size or (spm_model and recorded.get("sha256")
                                  and recorded["sha256"] != _checksum(spm_model)):
            logger.warning(
                "the records beside %s were made with another vocabulary (%s, %s pieces) than "
                "the model's (%s, %d pieces): their ids mean other pieces", summary,
                recorded.get("spm_model"), size, vocabulary, vocab_size)
    bad = []
    for path in files:
        try:
            leading = leading_records(path, _RECORDS_CHECKED_FOR_IDS)
        except DataError:
            continue  # damage is the shape check's and --skip_corrupt_records' to report
        for i, record in enumerate(leading):
            problem = token_id_problem(record, vocab_size)
            if problem:
                bad.append(f"{path} (record {i}: {problem})")
                break
    if bad:
        listed = "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise DataError(
            f"{len(bad)} of {len(files)} TFRecord files hold token ids outside the model's "
            f"vocabulary of {vocab_size} pieces ({vocabulary}): {listed}. The records were made "
            f"with a larger vocabulary: {way_on}")


def _vocabulary_of(files: list[str]) -> dict:
    """summary.json path -> the "vocabulary" it records, for the generator outputs that hold
    `files` (summary.json sits in the output directory, the files in its train/ or
    validation/, or beside it)."""
    found = {}
    for directory in sorted({os.path.dirname(f) for f in files}):
        for candidate in (directory, os.path.dirname(directory)):
            summary = os.path.join(candidate, "summary.json")
            if summary in found:
                break
            if not tf.io.gfile.exists(summary):
                continue
            try:
                with tf.io.gfile.GFile(summary) as f:
                    recorded = json.load(f).get("vocabulary")
            except (ValueError, AttributeError, tf.errors.OpError):
                continue  # not the generator's summary: nothing to compare
            if isinstance(recorded, dict):
                found[summary] = recorded
            break
    return found


def _checksum(spm_model: str) -> str | None:
    try:
        return vocab_checksum(spm_model)
    except OSError:
        return None


def count_nonempty_files(files: list[str]) -> int:
    """How many of `files` hold at least one record (reads at most one record per file).
    Call it on each rank with that rank's files and allgather the counts."""
    return sum(first_record(path) is not None for path in files)


def check_ranks_have_records(nonempty_per_rank: list[int], files: list[str], size: int) -> None:
    """nonempty_per_rank[r]: count_nonempty_files(files[r::size]) from rank r (allgathered).
    Raises the same DataError on every rank when some rank would have nothing to read (it
    would otherwise wait forever for the others at the first allreduce)."""
    empty = [r for r, n in enumerate(nonempty_per_rank) if n == 0]
    if not empty:
        return
    r = empty[0]
    mine = files[r::size]
    example = ", ".join(os.path.basename(f) for f in mine[:3]) + (" ..." if len(mine) > 3 else "")
    with_data = sum(nonempty_per_rank)
    raise DataError(
        f"{len(empty)} of {size} ranks have no records to read: rank {r}'s "
        f"{len(mine)} file(s) ({example}) are all empty. Only {with_data} of {len(files)} files "
        "hold records (the generator writes empty shards when --num_shards exceeds the "
        "instances): regenerate with fewer --num_shards, remove the empty files, or run on "
        "fewer ranks"
    )


@dataclasses.dataclass
class FileCheck:
    """One file's scan: `records` read intact before `problem` (None: the whole file is good)."""

    path: str
    records: int
    problem: str | None = None
    kind: str | None = None  # "corrupt", "shape", "unreadable" or "vocabulary" (a problem's)


def scan_file(path: str, spec: dict | None = None, batch_size: int = 4096,
              on_records=None, vocab_size: int | None = None) -> FileCheck:
    """Read every record of `path`, checking the framing (lengths and CRCs, GZIP stream) and,
    with `spec`, every record's feature lengths, and with `vocab_size` too, that every token id
    is in [0, vocab_size). on_records(n) is called as records are read (progress). Stops at the
    first problem; TensorFlow reading stops there too."""
    ds = tf.data.TFRecordDataset(path, compression_type=_compression(path),
                                 buffer_size=8 << 20).batch(batch_size)
    records = 0
    try:
        for batch in ds:
            if spec is not None:
                try:
                    parsed = tf.io.parse_example(batch, spec)
                except tf.errors.InvalidArgumentError:
                    for i, record in enumerate(batch.numpy()):
                        problem = record_shape_problem(record, spec)
                        if problem:
                            return FileCheck(path, records + i,
                                             f"wrong shape at record {records + i}: {problem}",
                                             "shape")
                    # parse_example refused what the proto check accepts (e.g. a dtype).
                    return FileCheck(path, records, f"records from {records} on do not parse "
                                     "as pretraining features", "shape")
                if vocab_size is not None:
                    problem = _ids_outside(parsed, vocab_size)
                    if problem:
                        row, text = problem
                        return FileCheck(path, records + row,
                                         f"record {records + row}: {text}, outside the "
                                         f"vocabulary of {vocab_size} pieces", "vocabulary")
            records += int(batch.shape[0])
            if on_records:
                on_records(int(batch.shape[0]))
    except tf.errors.DataLossError as e:
        # The failed batch's good records were lost with it: count the intact prefix exactly.
        intact = tf.data.TFRecordDataset(path, compression_type=_compression(path)) \
            .ignore_errors().reduce(tf.constant(0, tf.int64), lambda n, _: n + 1)
        intact = int(intact)
        if on_records and intact > records:
            on_records(intact - records)
        return FileCheck(path, intact, f"corrupt at record {intact} ({_tf_message(e)})",
                         "corrupt")
    except tf.errors.OpError as e:
        return FileCheck(path, records, f"unreadable ({_tf_message(e)})", "unreadable")
    return FileCheck(path, records)


def unpadded_records(files: list[str], seq: int, preds: int):
    """Every record of `files` as (ids, token_boundary or None, positions, labels, SOP label),
    unpadded (check_records --stats reads them so)."""
    spec = pretraining_feature_spec(seq, preds)
    # -1: a record without token_boundary (BERT's); its words are the vocabulary's then.
    spec["token_boundary"] = tf.io.FixedLenFeature([seq], tf.int64, default_value=[-1] * seq)
    for path in files:
        ds = tf.data.TFRecordDataset(path, compression_type="GZIP" if path.endswith(".gz")
                                     else "").batch(4096)
        for batch in ds:
            parsed = {k: v.numpy().tolist() for k, v in tf.io.parse_example(batch, spec).items()}
            for i, mask in enumerate(parsed["input_mask"]):
                used = sum(mask)
                k = sum(w > 0 for w in parsed["masked_lm_weights"][i])
                boundary = parsed["token_boundary"][i][:used]
                yield (parsed["input_ids"][i][:used], None if boundary[0] < 0 else boundary,
                       parsed["masked_lm_positions"][i][:k], parsed["masked_lm_ids"][i][:k],
                       parsed["next_sentence_labels"][i][0])


def _ids_outside(parsed: dict, vocab_size: int) -> tuple[int, str] | None:
    """(row, what) of the first record of a parsed batch with a token id outside
    [0, vocab_size); None when all fit."""
    ids = {name: parsed[name].numpy() for name in _ID_FEATURES}
    outside = {name: (v >= vocab_size) | (v < 0) for name, v in ids.items()}
    rows = [i for i in range(len(ids["input_ids"]))
            if any(o[i].any() for o in outside.values())]
    if not rows:
        return None
    row = rows[0]
    name = next(n for n in _ID_FEATURES if outside[n][row].any())
    return row, f"{name} holds token id {int(ids[name][row][outside[name][row]][0])}"


def warn_about_corrupt_files(files: list[str], rank: int = 0) -> list[FileCheck]:
    """Scan `files` for damage (skip_corrupt's count) and log one warning naming what is
    skipped; returns the damaged files' checks."""
    checks = [scan_file(path) for path in files]
    bad = [c for c in checks if c.problem]
    if bad:
        kept = sum(c.records for c in bad)
        named = "; ".join(f"{c.path}: {c.problem}" for c in bad[:5])
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        logger.warning(
            "rank %d: skipping corrupt records: %d of %d files are damaged; %d records before "
            "the damage are read, the rest of each damaged file is skipped: %s%s",
            rank, len(bad), len(files), kept, named, more)
    return bad


def data_loss_message(error: Exception, files: list[str], patterns=None,
                      filesystem_prefix: str = ".") -> str:
    """A DataLossError from the input pipeline (which names no file) -> a message naming the
    damaged file(s) among `files` (found by scanning them) and the ways on."""
    target = patterns if patterns is not None else files
    if isinstance(target, str):
        target = [target]
    command = "python -m albert.check_records " + " ".join(shlex.quote(t) for t in target)
    if filesystem_prefix not in (None, "", "."):
        command += f" --filesystem_prefix {shlex.quote(filesystem_prefix)}"
    bad = [c for c in (scan_file(path) for path in files) if c.problem]
    if not bad:
        return (f"a TFRecord read failed ({_tf_message(error)}), but none of the {len(files)} "
                f"files reads as damaged now (a storage fault?); check them with: {command}")
    named = "; ".join(f"{c.path} is {c.problem}" for c in bad[:3])
    more = f"; and {len(bad) - 3} more" if len(bad) > 3 else ""
    return (f"damaged TFRecord data: {named}{more}. List every bad shard with: {command}; "
            "then regenerate or remove them, or pass --skip_corrupt_records to read each damaged "
            "file only up to its first bad record")
