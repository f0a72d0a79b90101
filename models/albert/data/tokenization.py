"""The ALBERT SentencePiece vocabulary: loading it, and the files transformers needs beside it."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile

from albert.errors import DataError

# ALBERT's fixed special-token ids (google-research/albert and every published spiece.model).
PAD, UNK, CLS, SEP, MASK = "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
FAST_TOKENIZER_NAME = "tokenizer.json"

# The text rule is the vocabulary's: text is made into pieces as the vocabulary was trained on it,
# in every path (pretraining records, fine-tune features, the exported tokenizer). Its one setting,
# keep_accents, is recorded beside spiece.model in tokenizer_config.json, which is where
# transformers' AlbertTokenizer reads it too (text_rule). This is a NEW vocabulary's config
# (train_tokenizer): keep_accents true, because accent stripping (NFKD, then every mark dropped)
# also drops Thai and Devanagari vowel signs and tone marks, kana's voicing marks and emoji
# variation selectors, which spell words in those scripts. A vocabulary without the record (Google's
# published spiece.model, an earlier version's export, which say false or nothing) was trained with
# accents stripped and keeps that rule. split_special_tokens, for both rules: "[MASK]" typed in
# text is text, as in published ALBERT's pretraining data, not the mask id.
TOKENIZER_CONFIG = {
    "tokenizer_class": "AlbertTokenizer",
    "do_lower_case": True,
    "keep_accents": True,
    "split_special_tokens": True,
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
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
VOCAB_NAME = "spiece.model"


def tokenizer_config(keep_accents: bool) -> dict:
    """The tokenizer_config.json of a vocabulary under its text rule."""
    return {**TOKENIZER_CONFIG, "keep_accents": keep_accents}


def text_rule(path: str) -> bool:
    """keep_accents of the vocabulary at `path` (a directory holding spiece.model, or a .model
    file): what the tokenizer_config.json beside spiece.model says, as transformers reads that
    directory (a config without the key: false, transformers' default). With none (a bare
    spiece.model, Google's 30k-clean.model, any other .model file): false, the rule published
    ALBERT was pretrained under. Only spiece.model's own directory speaks for it: a config there
    is that file's, not another .model's."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, VOCAB_NAME)
    config_path = os.path.join(os.path.dirname(path), TOKENIZER_CONFIG_NAME)
    if os.path.basename(path) != VOCAB_NAME or not os.path.isfile(config_path):
        return False
    try:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{config_path} (the text rule of {path}) is not readable JSON: "
                        f"{e}") from None
    keep = config.get("keep_accents", False) if isinstance(config, dict) else None
    if not isinstance(keep, bool):
        raise DataError(f"{config_path}: expected a JSON object whose keep_accents is true or "
                        f"false (the text rule of {path}), got "
                        + (f"keep_accents {keep!r}" if isinstance(config, dict)
                           else type(config).__name__))
    return keep


# Where the fast tokenizer splits words: Unicode's White_Space, less \v, which SentencePiece's
# normaliser (transformers' too) drops as a control character before any split. Python's
# str.split also splits at \v and \x1c-\x1f: with it the two paths split "a\x1cb" differently.
_WHITESPACE = re.compile("[\t\n\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


def preprocess_text(text: str, keep_accents: bool = True) -> str:
    """The text rule before SentencePiece, transformers' AlbertTokenizer's under
    tokenizer_config(keep_accents): whitespace collapsed, `` and '' -> ", with keep_accents false
    accents stripped, lowercased one character at a time; SentencePiece's own NFKC comes after.
    Typed special tokens ("[MASK]") stay text. Pretraining records (this + SentencePiece),
    fine-tune features and the exported tokenizer give the same ids (tests/data/test_text_rule.py).
    Pass the vocabulary's rule (text_rule)."""
    text = _WHITESPACE.sub(" ", text).strip(" ")
    text = text.replace("``", '"').replace("''", '"')
    if text.isascii():
        return text.lower()
    text = _normalizer(keep_accents).normalize_str(text)
    if not keep_accents:
        # NFKD writes a spacing accent as a space and a mark (U+00A8 -> " \u0308"): the space
        # stays, and splits words as it does in the fast tokenizer.
        text = _WHITESPACE.sub(" ", text).strip(" ")
    return text


@functools.cache
def _normalizer(keep_accents: bool):
    """The fast tokenizer's own accent stripping (NFKD, then every mark dropped) and lowercasing,
    from the tokenizers package it runs in. Python's str.lower() and unicodedata differ from it:
    other Unicode tables (Python's decomposes about 70 more characters, knows about 390 more
    marks and fewer case pairs) and a final sigma where it writes σ."""
    from tokenizers import normalizers  # as sentencepiece in load_spm: only when text is read

    steps = [] if keep_accents else [normalizers.NFKD(), normalizers.StripAccents()]
    return normalizers.Sequence([*steps, normalizers.Lowercase()])


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


def write_tokenizer_files(spm_model: str, directory: str,
                          keep_accents: bool | None = None) -> None:
    """Write the vocabulary into `directory` as a Hugging Face tokenizer directory: spiece.model,
    the tokenizer_config.json transformers' AlbertTokenizer reads, and tokenizer.json. The text
    rule is the vocabulary's (text_rule of spm_model) unless keep_accents gives it (a vocabulary
    being trained).

    tokenizer.json is the fast tokenizer already converted, as published ALBERT directories carry
    it: a plain `pip install transformers` has no protobuf, without which transformers cannot
    convert spiece.model itself. The conversion runs here, where protobuf comes with TensorFlow.
    """
    load_spm(spm_model)
    if keep_accents is None:
        keep_accents = text_rule(spm_model)  # before anything is written: it may be its directory
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _write_sentencepiece_files(spm_model, tmp, keep_accents)
        tokenizer = _albert_tokenizer(tmp)
        tokenizer.backend_tokenizer.save(os.path.join(tmp, FAST_TOKENIZER_NAME))
        for name in (FAST_TOKENIZER_NAME, TOKENIZER_CONFIG_NAME):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(directory, name))
    target = os.path.join(directory, "spiece.model")
    if os.path.abspath(spm_model) != os.path.abspath(target):
        shutil.copyfile(spm_model, target)


def _write_sentencepiece_files(spm_model: str, directory: str, keep_accents: bool) -> None:
    """spiece.model and tokenizer_config.json only: what transformers converts from."""
    shutil.copyfile(spm_model, os.path.join(directory, VOCAB_NAME))
    write_tokenizer_config(directory, keep_accents)


def write_tokenizer_config(directory: str, keep_accents: bool) -> str:
    """Write tokenizer_config.json, the record of the text rule, into `directory`; its path.
    Wherever spiece.model goes, this goes beside it: without it the vocabulary reads as one
    with accents stripped (text_rule)."""
    path = os.path.join(directory, TOKENIZER_CONFIG_NAME)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(keep_accents), f, indent=2)
        f.write("\n")
    return path


def _albert_tokenizer(directory: str):
    """transformers' AlbertTokenizer converted from `directory`'s spiece.model."""
    from transformers import AlbertTokenizer  # heavy (about a second); only training needs it

    return AlbertTokenizer.from_pretrained(directory, local_files_only=True)


def load_tokenizer(path: str):
    """transformers' AlbertTokenizer from a directory holding spiece.model, or a .model file,
    under the vocabulary's text rule (text_rule).

    transformers v5 builds the fast tokenizer from a SentencePiece model only through
    from_pretrained(directory), so a bare file is staged in a temporary directory first.
    """
    path = os.fspath(path)
    spm_path = os.path.join(path, VOCAB_NAME) if os.path.isdir(path) else path
    sp = load_spm(spm_path)
    keep_accents = text_rule(spm_path)
    with tempfile.TemporaryDirectory() as tmp:
        _write_sentencepiece_files(spm_path, tmp, keep_accents)
        tokenizer = _albert_tokenizer(tmp)
    if len(tokenizer) != sp.GetPieceSize():
        raise DataError(f"{spm_path}: transformers read {len(tokenizer)} pieces, SentencePiece "
                        f"{sp.GetPieceSize()}")
    return tokenizer
