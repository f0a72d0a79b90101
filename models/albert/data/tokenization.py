"""The ALBERT SentencePiece vocabulary: loading it, and the files transformers needs beside it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import unicodedata

from albert.errors import DataError

# ALBERT's fixed special-token ids (google-research/albert and every published spiece.model).
PAD, UNK, CLS, SEP, MASK = "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
FAST_TOKENIZER_NAME = "tokenizer.json"

TOKENIZER_CONFIG = {
    "tokenizer_class": "AlbertTokenizer",
    "do_lower_case": True,
    "keep_accents": False,
    "remove_space": True,
    "bos_token": CLS,
    "eos_token": SEP,
    "unk_token": UNK,
    "sep_token": SEP,
    "pad_token": PAD,
    "cls_token": CLS,
    "mask_token": MASK,
    "model_max_length": 512,
}


def preprocess_text(text: str) -> str:
    """ALBERT's text normalisation before SentencePiece: collapse whitespace, `` and '' -> ",
    strip accents (NFKD, drop combining marks), lowercase. transformers' AlbertTokenizer applies the
    same steps, so TFRecords and SQuAD features see identical token ids."""
    text = " ".join(text.split())
    text = text.replace("``", '"').replace("''", '"')
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    return text.lower()


def load_spm(path: str):
    """Load a SentencePiece model, checking it has ALBERT's special tokens at ALBERT's ids."""
    # sentencepiece when a vocabulary is read: the tools that import this module for its
    # constants and checksums (--help, the data generator's parent) start without it.
    import sentencepiece as spm

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"SentencePiece model not found: {path}")
    sp = spm.SentencePieceProcessor()
    try:
        sp.Load(path)
    except (OSError, RuntimeError) as e:
        raise DataError(f"{path} is not a SentencePiece model: {e}") from None
    for expected_id, token in enumerate(SPECIAL_TOKENS):
        if sp.PieceToId(token) != expected_id:
            raise DataError(
                f"{path}: token {token!r} has id {sp.PieceToId(token)}, ALBERT expects "
                f"{expected_id} (train the vocabulary with `python -m albert.train_tokenizer`)"
            )
    return sp


def vocab_checksum(path: str) -> str:
    """The vocabulary's fingerprint: the sha256 of the spiece.model file, hex. Recorded beside
    what is made with a vocabulary (summary.json, run.json), so that records, checkpoints and the
    vocabulary they need can be matched later. train_tokenizer writes the same bytes for the same
    input and flags, so the same training gives the same checksum."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def write_tokenizer_files(spm_model: str, directory: str) -> None:
    """Write the vocabulary into `directory` as a Hugging Face tokenizer directory: spiece.model,
    the tokenizer_config.json transformers' AlbertTokenizer reads, and tokenizer.json.

    tokenizer.json is the fast tokenizer already converted, as published ALBERT directories carry
    it: a plain `pip install transformers` has no protobuf, without which transformers cannot
    convert spiece.model itself. The conversion runs here, where protobuf comes with TensorFlow.
    """
    load_spm(spm_model)
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _write_sentencepiece_files(spm_model, tmp)
        tokenizer = _albert_tokenizer(tmp)
        tokenizer.backend_tokenizer.save(os.path.join(tmp, FAST_TOKENIZER_NAME))
        for name in (FAST_TOKENIZER_NAME, "tokenizer_config.json"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(directory, name))
    target = os.path.join(directory, "spiece.model")
    if os.path.abspath(spm_model) != os.path.abspath(target):
        shutil.copyfile(spm_model, target)


def _write_sentencepiece_files(spm_model: str, directory: str) -> None:
    """spiece.model and tokenizer_config.json only: what transformers converts from."""
    shutil.copyfile(spm_model, os.path.join(directory, "spiece.model"))
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(TOKENIZER_CONFIG, f, indent=2)
        f.write("\n")


def _albert_tokenizer(directory: str):
    """transformers' AlbertTokenizer converted from `directory`'s spiece.model."""
    from transformers import AlbertTokenizer  # heavy (about a second); only training needs it

    return AlbertTokenizer.from_pretrained(directory, local_files_only=True)


def load_tokenizer(path: str):
    """transformers' AlbertTokenizer from a directory holding spiece.model, or a .model file.

    transformers v5 builds the fast tokenizer from a SentencePiece model only through
    from_pretrained(directory), so a bare file is staged in a temporary directory first.
    """
    path = os.fspath(path)
    spm_path = os.path.join(path, "spiece.model") if os.path.isdir(path) else path
    sp = load_spm(spm_path)
    with tempfile.TemporaryDirectory() as tmp:
        _write_sentencepiece_files(spm_path, tmp)
        tokenizer = _albert_tokenizer(tmp)
    if len(tokenizer) != sp.GetPieceSize():
        raise DataError(f"{spm_path}: transformers read {len(tokenizer)} pieces, SentencePiece "
                        f"{sp.GetPieceSize()}")
    return tokenizer
