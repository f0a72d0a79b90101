import json

import pytest

from albert.data.tokenization import load_spm, load_tokenizer, preprocess_text


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
    # train_tokenizer's directory carries the converted fast tokenizer, which transformers reads
    # as it is (tests/io/test_plain_transformers.py: where it cannot convert spiece.model).
    from transformers import AutoTokenizer

    assert os.path.isfile(os.path.join(directory, "tokenizer.json"))
    fast = AutoTokenizer.from_pretrained(directory)
    assert fast(text)["input_ids"] == ids


def test_preprocess_text():
    # Accents and other marks are kept (tests/data/test_text_rule.py: every path agrees).
    assert preprocess_text("  Héllo\tWORLD ``x''  ") == 'héllo world "x"'
    # The rule of a vocabulary trained with accents stripped (Google's): transformers' own.
    assert preprocess_text("  Héllo\tWORLD ``x''  ", keep_accents=False) == 'hello world "x"'


def test_wrong_spm_model(tmp_path):
    bogus = tmp_path / "x.model"
    bogus.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        load_spm(str(bogus))
    with pytest.raises(FileNotFoundError, match="not found"):
        load_spm(str(tmp_path / "missing.model"))
