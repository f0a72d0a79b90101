import json

import pytest
import sentencepiece as spm

from albert import train_tokenizer
from albert.data.tokenization import SPECIAL_TOKENS, load_spm, load_tokenizer, preprocess_text


def test_trained_vocab_has_albert_special_ids(sample_vocab):
    sp = spm.SentencePieceProcessor(model_file=sample_vocab)
    assert [sp.IdToPiece(i) for i in range(5)] == list(SPECIAL_TOKENS)
    assert sp.GetPieceSize() == 2000


def test_transformers_loads_the_directory_and_agrees_with_spm(sample_vocab):
    import os

    directory = os.path.dirname(sample_vocab)
    tok = load_tokenizer(directory)
    sp = load_spm(sample_vocab)
    text = "The  Élan of ``attribute access'' in Python: 12,000 objects!"
    ids = tok(text)["input_ids"]
    assert ids[0] == 2 and ids[-1] == 3  # [CLS] ... [SEP]
    assert ids[1:-1] == sp.EncodeAsIds(preprocess_text(text))
    pair = tok("a question", "some context")["input_ids"]
    assert pair.count(3) == 2
    config = json.loads(open(os.path.join(directory, "tokenizer_config.json")).read())
    assert config["tokenizer_class"] == "AlbertTokenizer"


def test_preprocess_text():
    assert preprocess_text("  Héllo\tWORLD ``x''  ") == 'hello world "x"'


def test_vocab_too_large_for_corpus(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a small corpus with few words.\n" * 20)
    args = train_tokenizer.parse_args(["--input", str(corpus), "--vocab_size", "5000",
                                       "--output_dir", str(tmp_path / "v")])
    with pytest.raises(ValueError, match="--vocab_size 5000 is too large"):
        train_tokenizer.train(args)


def test_missing_input_is_named(tmp_path):
    assert train_tokenizer.main(["--input", str(tmp_path / "none*.txt"), "--output_dir",
                                 str(tmp_path)]) == 2


def test_wrong_spm_model(tmp_path):
    bogus = tmp_path / "x.model"
    bogus.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        load_spm(str(bogus))
    with pytest.raises(FileNotFoundError, match="not found"):
        load_spm(str(tmp_path / "missing.model"))


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


def test_train_tokenizer_shows_its_reading_and_no_start_up_lines(sample_corpus, tmp_path):
    """Issue 27: reading the corpus (a long wait on a large dump) shows a bar over the input's
    bytes, with its total and the documents found; --no_progress: none. No TensorFlow or absl
    start-up lines."""

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
