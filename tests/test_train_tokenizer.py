"""python -m albert.train_tokenizer: the vocabulary it trains, its sample of the corpus, its
errors, its output directory and what a run shows."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
import sentencepiece as spm
from helpers import run_in_process

from albert import train_tokenizer
from albert.data.tokenization import SPECIAL_TOKENS


def _cli(module, *argv, timeout=300, cwd=None):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([sys.executable, "-m", f"albert.{module}", *argv], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


def _sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_trained_vocab_has_albert_special_ids(sample_vocab):
    sp = spm.SentencePieceProcessor(model_file=sample_vocab)
    assert [sp.IdToPiece(i) for i in range(5)] == list(SPECIAL_TOKENS)
    assert sp.GetPieceSize() == 2000


def test_vocab_too_large_for_corpus(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a small corpus with few words.\n" * 20)
    args = train_tokenizer.parse_args(["--input", str(corpus), "--vocab_size", "5000",
                                       "--output_dir", str(tmp_path / "v")])
    with pytest.raises(ValueError, match="--vocab_size 5000 is too large"):
        train_tokenizer.train(args)


def test_vocab_too_small_for_the_characters_says_too_small(tmp_path, capsys):
    """Issue 34 item 12: a --vocab_size below the characters the text needs was called "too
    large", with the advice to make it smaller."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("The quick brown fox jumps over the lazy dog. Pack my box with five dozen "
                      "liquor jugs!\n" * 20)
    argv = ["--input", str(corpus), "--output_dir", str(tmp_path / "v"), "--no_progress"]
    assert train_tokenizer.main(argv + ["--vocab_size", "20"]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if " albert.train_tokenizer " not in line]  # the log's "training a ..." line
    assert len(err) == 1, err
    needed = int(err[0].split(" need ")[1].split(".")[0])
    assert err[0] == (
        f"error: --vocab_size 20 is too small: the sample's characters at --character_coverage "
        f"0.99995 and the special pieces need {needed}. Use a --vocab_size of at least {needed}, "
        "or a lower --character_coverage.")
    assert train_tokenizer.main(argv + ["--vocab_size", str(needed)]) == 0  # the way on works


def test_missing_input_is_named(tmp_path):
    assert train_tokenizer.main(["--input", str(tmp_path / "none*.txt"), "--output_dir",
                                 str(tmp_path)]) == 2


def test_sampled_training_is_seeded_and_bounded(sample_corpus, tmp_path, capsys):
    """--max_sentences below the corpus: a seeded sample (the same vocabulary for the same seed,
    whatever --processes), and the output says how much of the corpus it saw."""
    def vocab(name, *flags):
        argv = ["--input", str(sample_corpus), "--vocab_size", "300", "--max_sentences", "500",
                "--output_dir", str(tmp_path / name), *flags]
        assert train_tokenizer.main(argv) == 0
        return (tmp_path / name / "spiece.vocab").read_text()

    first = vocab("a", "--processes", "1")
    assert "trained on 500 of 3747 sentences from 79 documents" in capsys.readouterr().out
    assert vocab("b", "--processes", "2") == first
    assert vocab("c", "--processes", "1", "--seed", "7") != first


def test_train_tokenizer_names_bad_input(tmp_path, capsys):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\u00e9 na\u00efve r\u00e9sum\u00e9.\n".encode("latin-1") * 20)
    assert train_tokenizer.main(["--input", str(latin1), "--output_dir", str(tmp_path / "v"),
                                 "--processes", "1"]) == 2
    err = capsys.readouterr().err
    assert "every line of the input (20 lines) was skipped as invalid UTF-8" in err


@pytest.mark.e2e
def test_train_tokenizer_shows_its_reading_and_no_start_up_lines(sample_corpus, tmp_path):
    """Issue 27: reading the corpus (a long wait on a large dump) shows a bar over the input's
    bytes, with its total and the documents found; --no_progress: none. No TensorFlow or absl
    start-up lines. Real processes: the start-up lines are TensorFlow's and absl's as a process
    starts, under the user's environment."""

    from helpers import as_a_user_runs, last_reading_bar, start_up_noise

    common = ["--input", sample_corpus, "--vocab_size", "300", "--max_sentences", "500",
              "--processes", "1", "--threads", "1"]
    proc = as_a_user_runs("train_tokenizer", *common, "--output_dir", tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    assert ", 79 documents (" in last_reading_bar(proc.stderr, sample_corpus)
    assert start_up_noise(proc.stderr) == []

    quiet = as_a_user_runs("train_tokenizer", *common, "--output_dir", tmp_path / "b",
                           "--no_progress")
    assert quiet.returncode == 0, quiet.stderr
    assert "reading" not in quiet.stderr and "%|" not in quiet.stderr
    assert (tmp_path / "a" / "spiece.model").read_bytes() == \
        (tmp_path / "b" / "spiece.model").read_bytes()


def test_an_existing_vocabulary_is_kept_without_overwrite_and_a_rerun_is_byte_identical(
        sample_corpus, sample_vocab, tmp_path):
    argv = ["--input", str(sample_corpus), "--vocab_size", "300", "--processes", "1",
            "--output_dir", str(tmp_path / "v")]
    code, _, err = run_in_process("train_tokenizer", argv)
    assert code == 0, err[-3000:]
    model = tmp_path / "v" / "spiece.model"
    digest = _sha256(model)
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())
    assert summary["sha256"] == digest and summary["vocab_size"] == 300

    code, _, err = run_in_process("train_tokenizer", argv)
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: --output_dir {tmp_path / 'v'} already holds spiece.model (sha256 "
        f"{digest[:12]}...); records and checkpoints made with it would not fit a new "
        "vocabulary: choose another --output_dir, or pass --overwrite to replace it"]
    assert _sha256(model) == digest

    # Item 15: the same command again (a new temporary directory) writes the same bytes.
    code, _, err = run_in_process("train_tokenizer", [*argv, "--overwrite"])
    assert code == 0, err[-3000:]
    assert _sha256(model) == digest
    assert not [n for n in os.listdir(tmp_path / "v") if n.startswith(".")]
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto.FromString(model.read_bytes())
    assert list(proto.trainer_spec.input) == [] and proto.trainer_spec.model_prefix == ""

    # The checksum travels with the records made with this vocabulary.
    from albert.data.tokenization import vocab_checksum

    assert vocab_checksum(str(model)) == digest
    out = tmp_path / "records"
    code, _, err = run_in_process(
        "create_pretraining_data", ["--input", sample_corpus, "--spm_model", model,
                                    "--output_dir", out, "--max_seq_length", "32",
                                    "--max_predictions_per_seq", "4", "--num_shards", "1",
                                    "--processes", "1", "--no_progress"])
    assert code == 0, err[-3000:]
    vocabulary = json.loads((out / "summary.json").read_text())["vocabulary"]
    # The records were made under the new vocabulary's text rule (accents kept), as it says.
    config = json.loads((tmp_path / "v" / "tokenizer_config.json").read_text())
    assert config["keep_accents"] is True
    assert vocabulary == {"spm_model": str(model), "sha256": digest, "vocab_size": 300,
                          "keep_accents": True}


@pytest.mark.e2e
def test_train_tokenizer_refuses_an_output_dir_that_is_a_file_and_keeps_it(sample_corpus, tmp_path):
    """A real process: the tool's one refusal checked as the shell sees it, exit status 2 from
    `sys.exit(main())` and the single line its stderr holds (the other refusals run in-process)."""
    target = tmp_path / "vocab"
    target.write_text("keep me\n")
    proc = _cli("train_tokenizer", "--input", str(sample_corpus), "--output_dir", str(target))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --output_dir {target} exists and is not a directory; choose a directory (it "
        "is created when missing)"]
    assert target.read_text() == "keep me\n"
