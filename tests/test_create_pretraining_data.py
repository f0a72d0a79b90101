"""Records decoded with a plain tf.io spec; masking/SOP statistics; determinism; bad input."""

import errno
import hashlib
import io
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest
import tensorflow as tf
from helpers import PREDS, SEQ, as_a_user_runs, last_reading_bar, run_in_process, start_up_noise

from albert import create_pretraining_data
from albert.data import shuffle

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
    # Two workers, and a sort buffer so small that every shard is split by key range first.
    _run(common + ["--output_dir", str(tmp_path / "p2"), "--processes", "2",
                   "--shuffle_buffer_mb", "0.01"])
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
    # A failed run leaves nothing behind: no output directory, no temporary beside it.
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"]

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


CLI_ERRORS = [
    (["--spm_model", "/nonexistent/spiece.model"], "SentencePiece model not found"),
    (["--input", "/nonexistent/*.txt"], "matches no file"),
    (["--num_shards", "0"], "--num_shards must be at least 1"),
    (["--output_dir", "/proc/forbidden"], "output_dir"),
]


def _error_argv(flags, sample_corpus, sample_vocab, tmp_path):
    base = {"--input": str(sample_corpus), "--spm_model": sample_vocab,
            "--output_dir": str(tmp_path / "o")}
    base.update(dict(zip(flags[::2], flags[1::2], strict=True)))
    return [x for kv in base.items() for x in kv] + ["--no_progress"]


@pytest.mark.parametrize("flags, message", CLI_ERRORS)
def test_cli_errors_name_the_problem(flags, message, sample_corpus, sample_vocab, tmp_path):
    code, _, err = run_in_process("create_pretraining_data",
                                  _error_argv(flags, sample_corpus, sample_vocab, tmp_path))
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.e2e
def test_cli_error_exits_2_as_a_process(sample_corpus, sample_vocab, tmp_path):
    """The one real process for an error: the exit status the shell sees (`sys.exit(main())`)
    and the message on the process's stderr, no traceback (the other errors run in-process)."""
    flags, message = CLI_ERRORS[0]
    proc = subprocess.run([sys.executable, "-m", "albert.create_pretraining_data",
                           *_error_argv(flags, sample_corpus, sample_vocab, tmp_path)],
                          capture_output=True, text=True, timeout=120)
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
    # VmHWM, not ru_maxrss: Linux carries the parent's peak (this test runner's) into a child at
    # exec, and both runs would then read the same number.
    code = (
        "import re, sys; from albert import create_pretraining_data as c; "
        "c.run(c.parse_args(sys.argv[1:])); "
        "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1]) / 1024)"
    )
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=300, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


@pytest.mark.e2e
def test_peak_memory_does_not_grow_with_corpus(sample_corpus, sample_vocab, tmp_path):
    """Real processes: the peak resident memory of a process (VmHWM) per corpus, which the test
    runner's own memory would hide."""
    text = sample_corpus.read_text()
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text(text)
    large.write_text(text * 8)  # 8x the instances: ~35 MB more if they were all held in memory
    # The shuffle included: with a 1 MB sort buffer the 8x run's shards (~3 MB each) are split
    # by key range before sorting, the path a corpus too large for memory takes.
    common = ["--spm_model", sample_vocab, "--max_seq_length", "128", "--num_shards", "2",
              "--processes", "1", "--no_progress", "--shuffle_buffer_mb", "1"]
    rss_small = _peak_rss_mb(["--input", str(small), "--output_dir", str(tmp_path / "s"), *common])
    rss_large = _peak_rss_mb(["--input", str(large), "--output_dir", str(tmp_path / "l"), *common])
    assert rss_large < rss_small + 10, (rss_small, rss_large)


# -- the shuffle (issue 17) ---------------------------------------------------------------------


def _framed_records(path):
    """The records of one TFRecord file, front to back (framing parsed without TensorFlow)."""
    data = open(path, "rb").read()
    out, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        out.append(data[offset + 12: offset + 12 + length])
        offset += length + 16
    return out


def _source_documents(records, sample_vocab, seq, preds):
    """For each record, the index of the sample-corpus document it came from (-1: unknown).

    The masked tokens are put back from masked_lm_ids, then every 6-gram of each segment is
    looked up among the 6-grams of the tokenized documents; the most frequent document wins.
    """
    from albert.data.pretraining import InstanceMaker, InstanceOptions
    from albert.demo.sample import pydoc_documents

    maker = InstanceMaker(sample_vocab, InstanceOptions(seq, preds))
    owner = {}
    for index, doc in enumerate(pydoc_documents()):
        stream = [t for s in maker.tokenize_document(doc) for t in s]
        for i in range(len(stream) - 5):
            gram = tuple(stream[i:i + 6])
            owner[gram] = index if owner.get(gram, index) == index else -1
    spec = {"input_ids": tf.io.FixedLenFeature([seq], tf.int64),
            "input_mask": tf.io.FixedLenFeature([seq], tf.int64),
            "masked_lm_positions": tf.io.FixedLenFeature([preds], tf.int64),
            "masked_lm_ids": tf.io.FixedLenFeature([preds], tf.int64)}
    parsed = tf.io.parse_example(tf.constant(records), spec)
    ids, mask = parsed["input_ids"].numpy(), parsed["input_mask"].numpy()
    positions, originals = parsed["masked_lm_positions"].numpy(), parsed["masked_lm_ids"].numpy()
    docs = np.full(len(records), -1)
    for r in range(len(records)):
        tokens = ids[r].copy()
        keep = originals[r] > 0
        tokens[positions[r][keep]] = originals[r][keep]
        n = int(mask[r].sum())
        sep = int(np.flatnonzero(tokens[:n] == SEP)[0])
        votes = Counter()
        for segment in (tokens[1:sep], tokens[sep + 1:n - 1]):
            for i in range(len(segment) - 5):
                d = owner.get(tuple(int(t) for t in segment[i:i + 6]), -1)
                if d >= 0:
                    votes[d] += 1
        if votes:
            docs[r] = votes.most_common(1)[0][0]
    return docs


def _spearman(a, b):
    def ranks(x):
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
        return (np.bincount(inverse, weights=r) / counts)[inverse]  # ties share their mean rank

    return float(np.corrcoef(ranks(np.asarray(a)), ranks(np.asarray(b)))[0, 1])


def _same_document_distance(docs):
    """Median distance (as a fraction of the stream) from each record to a random other record
    of the same document."""
    rng = np.random.default_rng(0)
    distances = []
    for d in np.unique(docs):
        where = np.flatnonzero(docs == d)
        if len(where) > 1:
            partner = rng.permutation(where)
            distances.append(np.abs(where - partner)[where != partner])
    return float(np.median(np.concatenate(distances))) / len(docs)


def test_held_out_split_takes_whole_documents(sample_records, sample_vocab):
    """Issue 34 item 16: every record of a document lands in the same split, so no held-out
    text was trained on. A draw per instance at the records' --validation_fraction 0.1 puts
    some of nearly every held-out document's records in training (a fraction near 1 would not
    show it: almost every record would be held out either way)."""
    splits = {}
    for split in ("train", "validation"):
        records = [r for f in sorted((sample_records / split).glob("*.tfrecord"))
                   for r in _framed_records(f)]
        docs = _source_documents(records, sample_vocab, SEQ, PREDS)
        splits[split] = set(docs[docs >= 0].tolist())
    assert len(splits["validation"]) >= 5 and len(splits["train"]) > len(splits["validation"])
    assert splits["validation"].isdisjoint(splits["train"]), \
        sorted(splits["validation"] & splits["train"])


def test_records_are_globally_shuffled(sample_corpus, sample_vocab, tmp_path):
    """In the order the trainer reads them, records carry no trace of the corpus order."""
    seq, preds = 32, 5
    _run(["--input", str(sample_corpus), "--spm_model", sample_vocab, "--output_dir",
          str(tmp_path / "o"), "--max_seq_length", str(seq), "--max_predictions_per_seq",
          str(preds), "--num_shards", "4", "--dupe_factor", "8", "--docs_per_chunk", "8",
          "--processes", "2", "--no_progress"])
    files = sorted((tmp_path / "o" / "train").glob("*.tfrecord"))
    per_file = [_framed_records(f) for f in files]
    orders = {
        # One file after the other (a reader without interleaving or shuffle buffer).
        "sequential": [r for records in per_file for r in records],
        # The reader's interleave: one record from each file in turn.
        "interleaved": [r for group in itertools.zip_longest(*per_file) for r in group if r],
    }
    for name, records in orders.items():
        docs = _source_documents(records, sample_vocab, seq, preds)
        known = docs >= 0
        assert known.sum() >= 10_000, (name, known.sum(), len(docs))
        rho = _spearman(np.flatnonzero(known), docs[known])
        assert abs(rho) < 0.05, (name, rho)
        # Uniformly random positions give a median of 1 - 1/sqrt(2) = 0.29 of the stream.
        assert _same_document_distance(docs[known]) > 0.2, name


def test_shards_have_no_empty_file(sample_vocab, tmp_path):
    """--num_shards above what the corpus fills: fewer shards, all non-empty, and a warning."""
    text = tmp_path / "tiny.txt"
    text.write_text("The parser reads a line. Then it runs the line it read.\n" * 6)
    code, _, err = _main(["--input", text, "--spm_model", sample_vocab, "--output_dir",
                          tmp_path / "o", "--input_format", "line", "--max_seq_length", "32",
                          "--max_predictions_per_seq", "5", "--num_shards", "64",
                          "--processes", "1"])
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    files = sorted(os.listdir(tmp_path / "o" / "train"))
    assert 0 < len(files) < 64
    assert files[-1].endswith(f"-of-{len(files):05d}.tfrecord")
    assert all(n > 0 for n in summary["records_per_train_file"])
    assert sum(summary["records_per_train_file"]) == summary["train_instances"]
    assert "instead of 64 (--num_shards)" in err


# -- hostile input and faults (issue 13) --------------------------------------------------------


def _cli(argv, **kwargs):
    return subprocess.run([sys.executable, "-m", "albert.create_pretraining_data", *argv,
                           "--no_progress"], capture_output=True, text=True, timeout=300,
                          **kwargs)


def _main(argv):
    """(exit status, stdout, stderr) of the command as its main in this process."""
    return run_in_process("create_pretraining_data", [*argv, "--no_progress"])


def _leftovers(directory):
    return [p for p in os.listdir(directory) if ".partial-" in p or ".old-" in p]


def test_non_empty_output_dir_needs_overwrite(sample_corpus, sample_vocab, tmp_path):
    out = tmp_path / "data"
    common = ["--input", str(sample_corpus), "--spm_model", sample_vocab, "--output_dir",
              str(out), "--max_seq_length", "32", "--max_predictions_per_seq", "5",
              "--processes", "1"]
    assert _main([*common, "--num_shards", "4"])[0] == 0
    before = _digests(out / "train")
    code, _, err = _main([*common, "--num_shards", "2"])
    assert code == 2
    assert "--output_dir" in err and "not empty" in err
    assert "--overwrite" in err and "Traceback" not in err
    assert _digests(out / "train") == before  # untouched
    code, _, err = _main([*common, "--num_shards", "2", "--overwrite"])
    assert code == 0, err
    # Replaced as a whole: no old -of-00004 shard is left beside the new ones.
    assert sorted(os.listdir(out / "train")) == [
        "part-00000-of-00002.tfrecord", "part-00001-of-00002.tfrecord"]
    assert _leftovers(tmp_path) == []
    # Replacing a directory that holds the input would delete the input: refused.
    inside = out / "corpus.txt"
    inside.write_text(sample_corpus.read_text())
    code, _, err = _main([*common[2:], "--input", str(inside), "--overwrite"])
    assert code == 2 and f"holds the input {inside}" in err
    assert inside.exists()


@pytest.mark.parametrize("failing", ["bucket", "shard"])
def test_full_disk_removes_temporaries(failing, sample_corpus, sample_vocab, tmp_path,
                                       monkeypatch, capsys):
    """ENOSPC while appending to a bucket or writing a shard: one error line, nothing left."""
    out = tmp_path / "data"
    common = ["--input", str(sample_corpus), "--spm_model", sample_vocab, "--output_dir",
              str(out), "--max_seq_length", "32", "--max_predictions_per_seq", "5",
              "--num_shards", "2", "--processes", "1", "--no_progress"]
    assert create_pretraining_data.main(common) == 0
    before = _digests(out / "train")

    class FullDisk(io.BufferedWriter):
        """A file that accepts 1000 bytes, then reports a full disk (also when closed)."""

        def __init__(self, path):
            super().__init__(io.FileIO(path, "wb"))
            self.path, self.room = path, 1000

        def write(self, data):
            self.room -= len(data)
            if self.room < 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.path)
            return super().write(data)

    real_open = open
    if failing == "bucket":
        monkeypatch.setattr(shuffle, "open", lambda path, mode="r", *a, **k:
                            FullDisk(path) if "w" in mode else real_open(path, mode, *a, **k),
                            raising=False)
    else:
        monkeypatch.setattr(shuffle, "open_output", lambda path, gz: FullDisk(path))
    assert create_pretraining_data.main([*common, "--overwrite", "--seed", "9"]) == 2
    err = capsys.readouterr().err
    assert "error: no space left on device writing" in err and "Traceback" not in err
    assert _digests(out / "train") == before  # the previous data is intact
    assert _leftovers(tmp_path) == []


def test_empty_validation_set_warns(sample_corpus, sample_vocab, tmp_path):
    code, _, err = _main(["--input", sample_corpus, "--spm_model", sample_vocab, "--output_dir",
                          tmp_path / "o", "--max_seq_length", "32", "--max_predictions_per_seq",
                          "5", "--validation_fraction", "0.001", "--processes", "1"])
    assert code == 0, err
    assert "warning: --validation_fraction 0.001 put none of the 79 documents" in err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["validation_instances"] == 0 and summary["validation_files"] == []
    assert any("validation" in w for w in summary["warnings"])
    assert not (tmp_path / "o" / "validation").exists()


def test_all_invalid_utf8_input_is_named(sample_vocab, tmp_path):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\u00e9 cr\u00e8me na\u00efve r\u00e9sum\u00e9 d\u00e9j\u00e0 vu. "
                       "Une autre phrase \u00e9crite.\n".encode("latin-1") * 30)
    code, _, err = _main(["--input", latin1, "--spm_model", sample_vocab, "--output_dir",
                          tmp_path / "o", "--processes", "1"])
    assert code == 2
    assert "every line of the input (30 lines) was skipped as invalid UTF-8" in err
    assert "Traceback" not in err


def _children(pid):
    out = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.e2e
def test_kill_9_leaves_no_orphan_workers(sample_corpus, sample_vocab, tmp_path):
    """A real process, killed with SIGKILL: its worker processes must not outlive it, and the
    next run (another process) removes what it left."""
    text = sample_corpus.read_text()
    big = tmp_path / "big.txt"
    big.write_text(text * 20)  # far more work than the few seconds this test waits
    out = tmp_path / "o"
    argv = [sys.executable, "-m", "albert.create_pretraining_data", "--input", str(big),
            "--spm_model", sample_vocab, "--output_dir", str(out), "--max_seq_length", "64",
            "--dupe_factor", "5", "--processes", "2", "--no_progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        # multiprocessing's resource tracker, then a reader and two makers.
        while len(_children(proc.pid)) < 4 and proc.poll() is None:
            assert time.monotonic() < deadline, "workers never started"
            time.sleep(0.1)
        workers = _children(proc.pid)
        assert proc.poll() is None, "finished before it could be killed"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 30
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [w for w in workers if _running(w)]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    assert alive == [], "worker processes outlived the killed generator"
    assert not out.exists()
    assert _leftovers(tmp_path)  # the killed run's temporary directory...
    small = tmp_path / "small.txt"
    small.write_text(text)
    rerun = _cli(["--input", str(small), "--spm_model", sample_vocab, "--output_dir", str(out),
                  "--max_seq_length", "32", "--max_predictions_per_seq", "5", "--processes", "1"])
    assert rerun.returncode == 0, rerun.stderr
    assert _leftovers(tmp_path) == []  # ...is removed by the next run


# -- what a run shows (issue 27) ----------------------------------------------------------------


@pytest.mark.e2e
def test_progress_shows_the_input_read_of_its_total(sample_corpus, sample_vocab, tmp_path):
    """A bar on stderr over the input's bytes (so a total and the time left), with the instances
    made and their rate; --no_progress: none. No TensorFlow start-up lines either. Real processes
    in the user's environment: start-up lines are printed as a process starts, and --processes 2
    spawns its workers from the command's own process."""
    common = ["--input", sample_corpus, "--spm_model", sample_vocab, "--max_seq_length", "32",
              "--max_predictions_per_seq", "5", "--num_shards", "2", "--processes", "2"]
    proc = as_a_user_runs("create_pretraining_data", *common, "--output_dir", tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    bar = last_reading_bar(proc.stderr, sample_corpus)
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert f", {summary['instances']} instances (" in bar
    assert start_up_noise(proc.stderr) == []

    quiet = as_a_user_runs("create_pretraining_data", *common, "--output_dir", tmp_path / "b",
                           "--no_progress")
    assert quiet.returncode == 0, quiet.stderr
    assert "reading" not in quiet.stderr and "%|" not in quiet.stderr
    assert _digests(tmp_path / "a" / "train") == _digests(tmp_path / "b" / "train")
