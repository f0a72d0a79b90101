"""Records decoded with a plain tf.io spec; masking/SOP statistics; determinism; bad input."""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from conftest import PREDS, SEQ

from albert import create_pretraining_data

SPEC = {
    "input_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
    "input_mask": tf.io.FixedLenFeature([SEQ], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
    "token_boundary": tf.io.FixedLenFeature([SEQ], tf.int64),
    "masked_lm_positions": tf.io.FixedLenFeature([PREDS], tf.int64),
    "masked_lm_ids": tf.io.FixedLenFeature([PREDS], tf.int64),
    "masked_lm_weights": tf.io.FixedLenFeature([PREDS], tf.float32),
    "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
}
PAD, CLS, SEP, MASK = 0, 2, 3, 4


def decode_all(directory):
    files = sorted(tf.io.gfile.glob(os.path.join(directory, "*.tfrecord*")))
    out = []
    for f in files:
        comp = "GZIP" if f.endswith(".gz") else ""
        for rec in tf.data.TFRecordDataset(f, compression_type=comp):
            ex = tf.io.parse_single_example(rec, SPEC)
            out.append({k: v.numpy() for k, v in ex.items()})
    return out


@pytest.fixture(scope="module")
def examples(sample_records):
    return decode_all(sample_records / "train")


def test_summary_and_layout(sample_records, examples):
    summary = json.loads((sample_records / "summary.json").read_text())
    assert summary["train_instances"] == len(examples) > 500
    assert summary["validation_instances"] > 0
    assert len(decode_all(sample_records / "validation")) == summary["validation_instances"]
    assert sorted(os.listdir(sample_records / "train")) == [
        f"part-{i:05d}-of-00004.tfrecord" for i in range(4)
    ]
    assert summary["masked_tokens"] > 0 and summary["tokens"] > summary["masked_tokens"]


def test_sequence_structure(examples):
    for ex in examples:
        ids, mask, seg = ex["input_ids"], ex["input_mask"], ex["segment_ids"]
        n = int(mask.sum())
        assert (mask[:n] == 1).all() and (mask[n:] == 0).all()
        assert (ids[n:] == PAD).all() and (seg[n:] == 0).all()
        assert ids[0] == CLS and ids[n - 1] == SEP
        seps = np.flatnonzero(ids[:n] == SEP)
        assert len(seps) == 2
        first_sep = seps[0]
        assert (seg[: first_sep + 1] == 0).all() and (seg[first_sep + 1: n] == 1).all()
        assert first_sep >= 2 and n - first_sep >= 3  # both segments non-empty


def test_masking_statistics(examples):
    masked_total = tokens_total = as_mask = kept = 0
    for ex in examples:
        weights = ex["masked_lm_weights"]
        k = int(weights.sum())
        assert (weights[:k] == 1).all() and (weights[k:] == 0).all()
        positions = ex["masked_lm_positions"][:k]
        assert (np.diff(positions) > 0).all()  # sorted, unique
        ids = ex["input_ids"]
        n = int(ex["input_mask"].sum())
        assert (positions < n).all()
        # Never mask [CLS], [SEP] or padding.
        assert not np.isin(positions, np.flatnonzero(np.isin(ids[:n], [CLS, SEP]))).any()
        assert positions.min() > 0
        originals = ex["masked_lm_ids"][:k]
        assert not np.isin(originals, [PAD, CLS, SEP, MASK]).any()
        as_mask += int((ids[positions] == MASK).sum())
        kept += int((ids[positions] == originals).sum())
        masked_total += k
        tokens_total += n
    rate = masked_total / tokens_total
    assert 0.12 < rate < 0.16, rate  # 15%, capped by max_predictions_per_seq
    assert 0.76 < as_mask / masked_total < 0.84
    assert 0.07 < kept / masked_total < 0.13
    assert 0.07 < (masked_total - as_mask - kept) / masked_total < 0.13


def test_ngram_masking_masks_contiguous_spans(examples):
    runs = []
    for ex in examples:
        k = int(ex["masked_lm_weights"].sum())
        pos = ex["masked_lm_positions"][:k]
        run = 1
        for a, b in zip(pos[:-1], pos[1:], strict=True):
            if b == a + 1:
                run += 1
            else:
                runs.append(run)
                run = 1
        runs.append(run)
    # Whole words and n-grams make runs of 2+ masked tokens common (single-token BERT masking
    # would make them rare at a 15% rate).
    assert np.mean(np.array(runs) >= 2) > 0.3


def test_sop_labels_balanced(examples):
    labels = np.array([ex["next_sentence_labels"][0] for ex in examples])
    assert set(labels) == {0, 1}
    assert 0.42 < labels.mean() < 0.58


def _run(args):
    return create_pretraining_data.run(create_pretraining_data.parse_args(args))


def _digests(directory):
    return {p: hashlib.sha256(open(os.path.join(directory, p), "rb").read()).hexdigest()
            for p in sorted(os.listdir(directory))}


def test_deterministic_across_process_counts(sample_corpus, sample_vocab, tmp_path):
    common = ["--input", str(sample_corpus), "--spm_model", sample_vocab, "--max_seq_length", "64",
              "--max_predictions_per_seq", "10", "--num_shards", "3", "--docs_per_chunk", "8",
              "--validation_fraction", "0.05", "--seed", "7", "--no_progress"]
    _run(common + ["--output_dir", str(tmp_path / "p1"), "--processes", "1"])
    _run(common + ["--output_dir", str(tmp_path / "p2"), "--processes", "2"])
    for split in ("train", "validation"):
        assert _digests(tmp_path / "p1" / split) == _digests(tmp_path / "p2" / split)
    _run(common[:-3] + ["--seed", "8", "--no_progress", "--output_dir", str(tmp_path / "s8"),
                        "--processes", "1"])
    assert _digests(tmp_path / "p1" / "train") != _digests(tmp_path / "s8" / "train")


def test_one_document_per_line_and_gzip(sample_vocab, tmp_path):
    text = tmp_path / "docs.txt"
    sentence = "The interpreter reads the file and executes every statement in order. "
    text.write_text("\n".join(sentence * (5 + i % 4) for i in range(40)) + "\n")
    summary = _run(["--input", str(text), "--spm_model", sample_vocab, "--output_dir",
                    str(tmp_path / "o"), "--max_seq_length", "64", "--max_predictions_per_seq",
                    "10", "--num_shards", "2", "--gzip", "--no_progress", "--processes", "1"])
    assert summary["documents"] == 40
    assert len(decode_all(tmp_path / "o" / "train")) == summary["instances"] > 40
    # The trainer's reader takes .gz shards as they are.
    from albert.data.reader import pretraining_dataset

    ds = pretraining_dataset("train", 4, 64, 10, filesystem_prefix=str(tmp_path / "o"),
                             training=False)
    assert sum(int(b["input_ids"].shape[0]) for b in ds) == summary["instances"]


def test_bad_input_is_counted_or_named(sample_vocab, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="no instances"):
        _run(["--input", str(empty), "--spm_model", sample_vocab, "--output_dir",
              str(tmp_path / "o1"), "--no_progress"])
    # A failed run leaves no shard that looks complete.
    assert not [p for p in os.listdir(tmp_path / "o1" / "train") if p.endswith(".tfrecord")]

    mixed = tmp_path / "mixed.txt"
    good = b"Python reads the whole file first. Then it runs every statement in it.\n"
    mixed.write_bytes(good * 3 + b"\xff\xfe broken bytes \xc3\x28\n" + b"x\n" + good * 3)
    summary = _run(["--input", str(mixed), "--spm_model", sample_vocab, "--output_dir",
                    str(tmp_path / "o2"), "--input_format", "line", "--max_seq_length", "32",
                    "--max_predictions_per_seq", "5", "--num_shards", "1", "--no_progress",
                    "--processes", "1"])
    assert summary["invalid_utf8_lines_skipped"] == 1
    assert summary["short_documents_skipped"] == 1  # the one-token document "x"
    assert summary["instances"] >= 6


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--spm_model", "/nonexistent/spiece.model"], "SentencePiece model not found"),
        (["--input", "/nonexistent/*.txt"], "matches no file"),
        (["--num_shards", "0"], "--num_shards must be at least 1"),
        (["--output_dir", "/proc/forbidden"], "output_dir"),
    ],
)
def test_cli_errors_name_the_problem(flags, message, sample_corpus, sample_vocab, tmp_path):
    base = {"--input": str(sample_corpus), "--spm_model": sample_vocab,
            "--output_dir": str(tmp_path / "o")}
    base.update(dict(zip(flags[::2], flags[1::2], strict=True)))
    argv = [x for kv in base.items() for x in kv]
    proc = subprocess.run([sys.executable, "-m", "albert.create_pretraining_data", *argv,
                           "--no_progress"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_original_albert_reader_spec_reads_our_records(sample_records):
    # google-research/albert's run_pretraining input_fn parses exactly these features (BERT's
    # plus token_boundary); parse a batch the way it does.
    files = tf.io.gfile.glob(str(sample_records / "train" / "*"))
    ds = tf.data.TFRecordDataset(files).batch(8).map(lambda r: tf.io.parse_example(r, SPEC))
    batch = next(iter(ds))
    assert batch["input_ids"].shape == (8, SEQ)
    assert batch["masked_lm_positions"].shape == (8, PREDS)


def _peak_rss_mb(argv):
    code = (
        "import resource, sys; from albert import create_pretraining_data as c; "
        "c.run(c.parse_args(sys.argv[1:])); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=300, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def test_peak_memory_does_not_grow_with_corpus(sample_corpus, sample_vocab, tmp_path):
    text = sample_corpus.read_text()
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text(text)
    large.write_text(text * 8)  # 8x the instances: ~35 MB more if they were all held in memory
    common = ["--spm_model", sample_vocab, "--max_seq_length", "128", "--num_shards", "2",
              "--processes", "1", "--no_progress"]
    rss_small = _peak_rss_mb(["--input", str(small), "--output_dir", str(tmp_path / "s"), *common])
    rss_large = _peak_rss_mb(["--input", str(large), "--output_dir", str(tmp_path / "l"), *common])
    assert rss_large < rss_small + 10, (rss_small, rss_large)
