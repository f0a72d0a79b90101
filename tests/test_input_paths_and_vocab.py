"""Issue 24, items 2, 6, 8, 12 and parts of 11 and 15, as a user hits them on the command line:
inputs reached by several paths or through link loops, paths that look like globs or comma lists,
records made with another vocabulary, and train_tokenizer's output directory. Each command runs
as its main in this process (helpers.run_in_process: the exit status it returns, what it prints
and logs); one real process checks a refusal's exit status as the shell sees it."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from helpers import bad_lines, base_args, run_in_process


def _docs(tag, n):
    """n documents (blank-line layout), each long enough for a sentence pair."""
    return "".join(
        f"The {tag} river number {i} runs through a quiet green valley today.\n"
        f"Farmers near the {tag} river grow apples and pears every summer.\n"
        f"Visitors to the {tag} valley walk along the water in the evening.\n\n"
        for i in range(n))


def _sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture()
def linked_corpus(tmp_path):
    """corpus/: a.txt (3 documents), real/b.txt (4), linked -> ../elsewhere holding c.txt (5),
    a second link to real/, and two link loops in one directory (self -> .., me -> .)."""
    corpus = tmp_path / "corpus"
    (corpus / "real").mkdir(parents=True)
    (corpus / "loops").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (corpus / "a.txt").write_text(_docs("alder", 3))
    (corpus / "real" / "b.txt").write_text(_docs("birch", 4))
    (tmp_path / "elsewhere" / "c.txt").write_text(_docs("cedar", 5))
    os.symlink("../elsewhere", corpus / "linked")
    os.symlink("real", corpus / "zz_again")
    os.symlink("..", corpus / "loops" / "self")
    os.symlink(".", corpus / "loops" / "me")
    return corpus


# -- item 2: each file once, linked directories followed once, no loop, skips reported ---------


def test_create_pretraining_data_reads_each_input_once_through_links_and_loops(
        linked_corpus, sample_vocab, tmp_path, monkeypatch):
    """A `**` glob through two link loops ends (glob itself lists 2**40 paths), a directory
    input follows its linked subdirectory (c.txt's 5 documents were lost), `a.txt ./a.txt` reads
    a.txt once, and the summary and the closing line count what was skipped."""
    out = tmp_path / "records"
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run_in_process(
        "create_pretraining_data", ["--input", "corpus/**/*.txt", "corpus", "corpus/a.txt",
                                    "./corpus/a.txt", "--spm_model", sample_vocab,
                                    "--output_dir", out, "--max_seq_length", "32",
                                    "--max_predictions_per_seq", "4", "--num_shards", "1",
                                    "--processes", "1", "--no_progress"])
    assert code == 0, stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["input_files"]) == ["corpus/a.txt", "corpus/linked/c.txt",
                                              "corpus/real/b.txt"]
    assert summary["documents"] == 3 + 4 + 5
    skipped = summary["skipped"]
    # The glob listed a, b, c; the directory input the same 3 again; then a.txt twice.
    assert skipped["duplicate_input_paths"] == 5
    # loops/me, loops/self and zz_again, once by the glob's walk and once by the directory's.
    assert skipped["repeated_input_directories"] == 6
    assert "skipped nothing" not in stdout
    assert "5 duplicate input paths, 6 repeated input directories" in stdout
    assert "inputs skipped: paths to a file already listed (read once): 5" in stderr
    assert any("inputs skipped" in w for w in summary["warnings"])


def test_train_tokenizer_follows_a_linked_directory_once(linked_corpus, tmp_path):
    """train_tokenizer lists inputs the same way: the linked subdirectory's documents count."""
    code, stdout, stderr = run_in_process(
        "train_tokenizer", ["--input", linked_corpus, linked_corpus / "a.txt", "--vocab_size",
                            "50", "--output_dir", tmp_path / "v", "--processes", "1"])
    assert code == 0, stderr[-3000:]
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())
    assert summary["documents"] == 3 + 4 + 5
    assert [os.path.relpath(f, linked_corpus) for f in summary["input_files"]] == [
        "a.txt", os.path.join("linked", "c.txt"), os.path.join("real", "b.txt")]
    assert summary["skipped"] == {"duplicate_input_paths": 1, "repeated_input_directories": 3}
    assert "skipped 1 duplicate input paths, 3 repeated input directories" in stdout


# -- item 12: a path that exists is taken literally; a comma split is said ----------------------


def test_bracket_and_comma_names_are_paths_to_the_data_and_tokenizer_commands(
        sample_vocab, tmp_path, monkeypatch):
    (tmp_path / "part[1].txt").write_text(_docs("maple", 3))
    (tmp_path / "part1.txt").write_text(_docs("willow", 4))  # what the glob `part[1]` means
    (tmp_path / "north,south.txt").write_text(_docs("poplar", 2))
    (tmp_path / "x.txt").write_text(_docs("hazel", 1))
    (tmp_path / "y.txt").write_text(_docs("rowan", 1))
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run_in_process(
        "create_pretraining_data", ["--input", "part[1].txt", "north,south.txt", "x.txt,y.txt",
                                    "--spm_model", sample_vocab, "--output_dir", "records",
                                    "--max_seq_length", "32", "--max_predictions_per_seq", "4",
                                    "--num_shards", "1", "--processes", "1", "--no_progress"])
    assert code == 0, stderr[-3000:]
    summary = json.loads((tmp_path / "records" / "summary.json").read_text())
    assert summary["input_files"] == ["part[1].txt", "north,south.txt", "x.txt", "y.txt"]
    assert summary["documents"] == 3 + 2 + 1 + 1
    assert "input 'x.txt,y.txt' is no path, so it was split at its commas into 'x.txt', " \
           "'y.txt'" in stderr
    assert "north,south" not in stderr  # an existing name is not split, nor logged

    code, _, stderr = run_in_process("train_tokenizer", ["--input", "part[1].txt", "--vocab_size",
                                                         "40", "--output_dir", "v",
                                                         "--processes", "1"])
    assert code == 0, stderr[-3000:]
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())
    assert summary["input_files"] == ["part[1].txt"] and summary["documents"] == 3

    code, _, stderr = run_in_process("train_tokenizer", ["--input", "x.txt,nothere.txt",
                                                         "--output_dir", "w"])
    assert code == 2
    assert stderr.strip().splitlines()[-1] == (
        "error: input 'nothere.txt' (from 'x.txt,nothere.txt', split at its commas) matches "
        "no file")


def test_bracket_and_comma_names_are_paths_to_the_reader_and_check_records(sample_records, tmp_path,
                                                                           caplog):
    from albert.data.reader import resolve_files

    shard = sorted((sample_records / "train").iterdir())[0]
    (tmp_path / "d[1]").mkdir()
    shutil.copy(shard, tmp_path / "d[1]" / "part[0].tfrecord")
    shutil.copy(shard, tmp_path / "a,b.tfrecord")
    shutil.copy(shard, tmp_path / "c.tfrecord")
    assert resolve_files("d[1]/part[0].tfrecord", str(tmp_path)) == [
        str(tmp_path / "d[1]" / "part[0].tfrecord")]
    assert resolve_files("d[1]", str(tmp_path)) == [str(tmp_path / "d[1]" / "part[0].tfrecord")]
    assert resolve_files("a,b.tfrecord", str(tmp_path)) == [str(tmp_path / "a,b.tfrecord")]
    with caplog.at_level("INFO", logger="albert.data.reader"):
        both = resolve_files("c.tfrecord,d[1]", str(tmp_path))
    assert both == [str(tmp_path / "c.tfrecord"), str(tmp_path / "d[1]" / "part[0].tfrecord")]
    assert "split at its commas into 'c.tfrecord', 'd[1]'" in caplog.text

    code, stdout, stderr = run_in_process(
        "check_records", ["d[1]/part[0].tfrecord", "a,b.tfrecord", "c.tfrecord,d[1]",
                          "--filesystem_prefix", tmp_path, "--no_progress"])
    assert code == 0, stderr[-3000:]
    assert "checked 3 files" in stdout
    assert "'c.tfrecord,d[1]' is no path under" in stderr
    assert "'a,b.tfrecord' is no path" not in stderr


# -- item 6: records whose ids exceed the vocabulary ----------------------------------------------


@pytest.fixture(scope="module")
def small_vocab(sample_corpus, tmp_path_factory):
    """A 300-piece vocabulary: the sample records (2000 pieces) hold ids it does not have."""
    from albert import train_tokenizer

    out = tmp_path_factory.mktemp("small_vocab")
    return train_tokenizer.train(train_tokenizer.parse_args([
        "--input", str(sample_corpus), "--vocab_size", "300", "--output_dir", str(out),
        "--processes", "1"]))


def test_records_with_ids_past_the_spm_model_are_one_error_before_training(sample_records,
                                                                           small_vocab, tmp_path):
    """Without a summary.json beside them (records from elsewhere) the first records show the
    ids; with the generator's summary.json, its recorded vocabulary size is enough."""
    bare = tmp_path / "bare" / "train"
    shutil.copytree(sample_records / "train", bare)
    code, stdout, stderr = run_in_process(
        "run_pretraining", base_args(tmp_path / "bare", small_vocab, tmp_path / "run"))
    assert code == 2, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: 4 of 4 TFRecord files hold token ids outside the model's "
                           "vocabulary of 300 pieces (--spm_model ")
    assert "input_ids holds token id" in last and "pass the --spm_model the data was made " \
           "with" in last
    assert "Traceback" not in stderr and "train step" not in stdout
    assert not (tmp_path / "run" / "ckpt").exists() or not any(
        (tmp_path / "run" / "ckpt").glob("ckpt-*"))

    code, _, stderr = run_in_process(
        "run_pretraining", base_args(sample_records, small_vocab, tmp_path / "run2"))
    assert code == 2, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: the records beside ")
    assert "were made with a vocabulary of 2000 pieces" in last
    assert "larger than the model's 300 (--spm_model " in last
    assert "Traceback" not in stderr


def test_check_records_names_ids_outside_the_vocabulary(sample_records, sample_vocab, small_vocab):
    def check_records(spm_model):
        return run_in_process("check_records", ["train", "--filesystem_prefix", sample_records,
                                                "--spm_model", spm_model, "--no_progress"])

    code, stdout, stderr = check_records(small_vocab)
    assert code == 1, stderr[-3000:]
    lines = bad_lines(stdout)
    assert len(lines) == 4
    assert all("outside the vocabulary of 300 pieces" in line and "token id" in line
               for line in lines)
    assert "4 bad (0 corrupt, 0 wrong shape, 0 unreadable, 4 outside the vocabulary)" \
        in stdout
    assert "pass the vocabulary the data was made with" in stdout

    code, stdout, stderr = check_records(sample_vocab)
    assert code == 0, stdout + stderr[-3000:]
    assert "token ids below 2000" in stdout
    assert stdout.rstrip().endswith("all good; 0 empty")

    code, _, stderr = check_records("missing.model")
    assert code == 2 and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("error: SentencePiece model not found")


@pytest.mark.e2e
def test_check_records_missing_vocabulary_exits_2_as_a_process(sample_records):
    """The one real process here: a refusal's exit status and last line as the shell sees them,
    through `sys.exit(main())` (check_records answers a missing --spm_model before TensorFlow
    loads, so this process is a cheap one)."""
    proc = subprocess.run([sys.executable, "-m", "albert.check_records", "train",
                           "--filesystem_prefix", str(sample_records), "--spm_model",
                           "missing.model", "--no_progress"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: SentencePiece model not found")


# -- item 8 (+ item 15, item 11): train_tokenizer's output directory ----------------------------
