"""One text rule for every path (issue 50 items 12 and 14): the pretraining records (the data
generator's tokenization), the fine-tune features and the exported tokenizer, as transformers'
AutoTokenizer and the tokenizers package load it, give the same ids on any script, on emoji and
control characters, and on special tokens typed in the text. The rule is the vocabulary's
(tokenization.text_rule): a new vocabulary keeps accents, Google's published ones and those an
earlier version wrote strip them, and every path follows the vocabulary it is given."""

import json
import os
import random
import re
import shutil
import unicodedata

import pytest

from albert import train_tokenizer
from albert.data import classification, squad
from albert.data.pretraining import InstanceMaker, InstanceOptions
from albert.data.tokenization import (
    CLS,
    MASK,
    SEP,
    load_spm,
    load_tokenizer,
    preprocess_text,
    text_rule,
    write_tokenizer_files,
)
from albert.errors import DataError

THAI = "สวัสดีครับ ที่นี่มีไก่ย่าง ใกล้บ้านฉัน"
HINDI = "नमस्ते दुनिया, हिन्दी की किताबें पढ़िए"
ARABIC = "مَرْحَبًا بِالْعَالَمِ، اَلْعَرَبِيَّةُ لُغَةٌ جَمِيلَةٌ"
VIETNAMESE = "Tiếng Việt rất đẹp, người Hà Nội"
EMOJI = "❤️ 👨‍👩‍👧 👍🏽 🏳️‍🌈 ok"
# Control characters (\x1c-\x1f are whitespace to Python, not to Unicode), a vertical tab, a
# word-final capital sigma and typed quotes.
CONTROL = "a\x1cb\x1dc\x1ed\x1fe f\x0bg h\x01i\x7fj ΟΔΟΣ ``quoted'' \u3000x\u00a0y"
SPECIALS = f"a {MASK} b {SEP} c {CLS} d [mask] e{MASK}f"
SCRIPTS = [THAI, HINDI, ARABIC, VIETNAMESE, EMOJI,
           "Café naïve Élan, the quick brown fox, Beyoncé"]
# Where a copy of the rule in Python would differ from transformers': spacing accents (NFKD: a
# space and a mark), a mark newer than the tokenizers package's tables, a character Python's
# tables decompose and its do not, a case pair only it knows, a spacing mark (Mc) and final sigma.
EDGES = "Beyoncé café ¨a´b x\u0898y \u32ff \ua7cb \u0915\u0903 ΟΔΟΣ"
TEXTS = SCRIPTS + [CONTROL, SPECIALS, EDGES]
BEYONCE = "Beyoncé café"


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory):
    """A vocabulary trained by train_tokenizer on a little of each script."""
    root = tmp_path_factory.mktemp("multilingual")
    corpus = root / "corpus.txt"
    rng = random.Random(0)
    lines = []
    for _ in range(60):  # the words in many orders: enough sentences for the pieces
        for text in SCRIPTS:
            words = text.split()
            rng.shuffle(words)
            lines.append(" ".join(words))
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "vocab"
    args = train_tokenizer.parse_args(["--input", str(corpus), "--vocab_size", "110",
                                       "--character_coverage", "1.0", "--output_dir", str(out),
                                       "--processes", "1", "--threads", "1", "--no_progress"])
    train_tokenizer.train(args)
    return str(out)


@pytest.fixture(scope="module")
def legacy_dir(vocab_dir, tmp_path_factory):
    """The same pieces in a directory an earlier version wrote: its tokenizer_config.json says
    keep_accents false (and knew no split_special_tokens)."""
    root = tmp_path_factory.mktemp("legacy")
    shutil.copyfile(os.path.join(vocab_dir, "spiece.model"), root / "spiece.model")
    with open(os.path.join(vocab_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config["keep_accents"] = False
    del config["split_special_tokens"]
    (root / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(root)


@pytest.fixture(scope="module")
def bare_file(vocab_dir, tmp_path_factory):
    """Google's layout: a .model file (30k-clean.model) with nothing beside it."""
    path = tmp_path_factory.mktemp("google") / "30k-clean.model"
    shutil.copyfile(os.path.join(vocab_dir, "spiece.model"), path)
    return str(path)


@pytest.fixture(scope="module")
def bare_dir(vocab_dir, tmp_path_factory):
    """spiece.model alone in its directory, no tokenizer_config.json."""
    root = tmp_path_factory.mktemp("bare")
    shutil.copyfile(os.path.join(vocab_dir, "spiece.model"), root / "spiece.model")
    return str(root)


# name: keep_accents the vocabulary's rule says.
VOCABULARIES = {"vocab_dir": True, "legacy_dir": False, "bare_file": False, "bare_dir": False}
LEGACY = [name for name, keep in VOCABULARIES.items() if not keep]


def spm_file(path):
    return os.path.join(path, "spiece.model") if os.path.isdir(path) else path


def exported(path, tmp_path):
    """transformers' AutoTokenizer of the vocabulary as write_tokenizer_files exports it."""
    from transformers import AutoTokenizer

    out = tmp_path / "export"
    write_tokenizer_files(spm_file(path), str(out))
    return AutoTokenizer.from_pretrained(str(out)), str(out)


def pretraining_ids(vocab_dir, text):
    """What create_pretraining_data writes for the text (one segment, not masked)."""
    maker = InstanceMaker(spm_file(vocab_dir), InstanceOptions(max_seq_length=512))
    return [i for segment in maker.tokenize_document([text]) for i in segment]


@pytest.mark.parametrize("name", VOCABULARIES)
def test_every_path_gives_the_same_ids(name, request, tmp_path):
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    vocab = request.getfixturevalue(name)
    assert text_rule(vocab) is VOCABULARIES[name]
    pretraining = [pretraining_ids(vocab, t) for t in TEXTS]
    fine_tune = load_tokenizer(vocab)
    examples = [classification.Example(i, i + 1, t, None, "x") for i, t in enumerate(TEXTS)]
    features, _ = classification.featurize(examples, None, fine_tune, max_seq_length=512)
    export, export_dir = exported(vocab, tmp_path)
    # train_tokenizer's own directory too: tokenizer.json + tokenizer_config.json as written.
    exports = [export, AutoTokenizer.from_pretrained(vocab)] if name == "vocab_dir" else [export]
    backend = Tokenizer.from_file(os.path.join(export_dir, "tokenizer.json"))
    for text, ids, feature in zip(TEXTS, pretraining, features, strict=True):
        assert ids and 0 not in ids, text
        assert feature.input_ids == [2, *ids, 3], text
        for tokenizer in exports:
            assert tokenizer(text)["input_ids"] == [2, *ids, 3], text
        if text is not SPECIALS:  # see test_typed_special_tokens_are_text
            assert backend.encode(text, add_special_tokens=False).ids == ids, text
    question = squad.Example("q", "?", CONTROL, [], is_impossible=True)
    (feature, *_) = squad.featurize([question], fine_tune, squad.FeatureSettings(
        max_seq_length=128, max_query_length=8, doc_stride=32), training=False)
    assert feature.input_ids[:feature.length] == [2, *fine_tune("?")["input_ids"][1:-1], 3,
                                                  *pretraining[TEXTS.index(CONTROL)], 3]


@pytest.mark.parametrize("text", SCRIPTS[:5])
def test_marks_that_spell_a_word_are_kept(vocab_dir, text):
    # Thai and Devanagari vowel signs, tone marks and the virama, Arabic harakat, Vietnamese
    # tones and emoji selectors reach the vocabulary: its pieces spell the text back.
    sp = load_spm(os.path.join(vocab_dir, "spiece.model"))
    ids = pretraining_ids(vocab_dir, text)
    assert 1 not in ids  # no <unk>: the vocabulary was trained under the same rule
    spelled = unicodedata.normalize("NFKC", text).lower()  # SentencePiece's NFKC, lowercased
    assert sp.DecodeIds(ids) == preprocess_text(text) == spelled
    assert load_tokenizer(vocab_dir).decode(ids) == spelled


def test_typed_special_tokens_are_text(vocab_dir):
    from tokenizers import Tokenizer

    ids = pretraining_ids(vocab_dir, SPECIALS)
    assert not {2, 3, 4} & set(ids)  # as published ALBERT's data: no [CLS]/[SEP]/[MASK] id
    assert load_tokenizer(vocab_dir)(SPECIALS, add_special_tokens=False)["input_ids"] == ids
    # tokenizer.json cannot say it (tokenizers does not save the flag): a program that loads it
    # with the tokenizers package alone sets it, as transformers does from tokenizer_config.json.
    backend = Tokenizer.from_file(os.path.join(vocab_dir, "tokenizer.json"))
    backend.encode_special_tokens = True
    assert backend.encode(SPECIALS, add_special_tokens=False).ids == ids


def test_exports_of_a_bare_model_file_follow_the_rule(vocab_dir, tmp_path):
    write_tokenizer_files(os.path.join(vocab_dir, "spiece.model"), str(tmp_path))
    from transformers import AutoTokenizer

    exported = AutoTokenizer.from_pretrained(str(tmp_path))
    for text in TEXTS:
        assert exported(text, add_special_tokens=False)["input_ids"] == pretraining_ids(
            vocab_dir, text)


def test_cached_features_follow_the_vocabularys_text_rule(vocab_dir, legacy_dir, bare_file,
                                                          tmp_path):
    # The same spiece.model bytes under another rule (its tokenizer_config.json changed, or
    # copied without it) give other ids: the vocabulary's rule is part of the cache keys.
    tsv = tmp_path / "t.tsv"
    tsv.write_text(f"sentence\tlabel\n{HINDI}\t1\n", encoding="utf-8")
    squad_file = tmp_path / "s.json"
    squad_file.write_text("{}")
    settings = classification.FeatureSettings(128, "classification", ("0", "1"),
                                              classification.Columns("sentence"), labelled=True)
    window = squad.FeatureSettings(128, 32, 8)

    def keys(vocab):
        return (classification.cache_key(str(tsv), settings, vocab, True),
                squad.cache_key(str(squad_file), window, spm_file(vocab), True))

    new, legacy, bare = keys(vocab_dir), keys(legacy_dir), keys(bare_file)
    assert new[0] != legacy[0] and new[1] != legacy[1]
    assert legacy == bare  # the same bytes under the same rule: the same features


@pytest.mark.parametrize("name", LEGACY)
def test_a_legacy_vocabulary_strips_accents_in_every_path(name, request, vocab_dir, tmp_path):
    # Google's published vocabularies were pretrained on text without accents: fine-tuning them
    # on "Beyoncé" must not give pieces they never saw.
    vocab = request.getfixturevalue(name)
    ids = pretraining_ids(vocab, BEYONCE)
    assert load_spm(spm_file(vocab)).DecodeIds(ids) == "beyonce cafe"
    assert ids != pretraining_ids(vocab_dir, BEYONCE)  # the same pieces, the other rule
    fine_tune = load_tokenizer(vocab)
    assert fine_tune(BEYONCE, add_special_tokens=False)["input_ids"] == ids
    assert fine_tune.decode(ids) == "beyonce cafe"
    export, _ = exported(vocab, tmp_path)
    assert export(BEYONCE, add_special_tokens=False)["input_ids"] == ids


def test_a_new_vocabulary_keeps_accents_in_every_path(vocab_dir, tmp_path):
    with open(os.path.join(vocab_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        assert json.load(f)["keep_accents"] is True  # train_tokenizer records its rule
    ids = pretraining_ids(vocab_dir, BEYONCE)
    assert load_spm(spm_file(vocab_dir)).DecodeIds(ids) == "beyoncé café"
    assert load_tokenizer(vocab_dir)(BEYONCE, add_special_tokens=False)["input_ids"] == ids
    export, _ = exported(vocab_dir, tmp_path)
    assert export(BEYONCE, add_special_tokens=False)["input_ids"] == ids


@pytest.mark.parametrize("name", VOCABULARIES)
def test_an_export_carries_the_vocabularys_rule(name, request, tmp_path):
    vocab = request.getfixturevalue(name)
    export, out = exported(vocab, tmp_path)
    with open(os.path.join(out, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["keep_accents"] is VOCABULARIES[name]
    assert config["split_special_tokens"] is True  # for both rules
    assert text_rule(out) is VOCABULARIES[name]
    assert export.decode(export(BEYONCE, add_special_tokens=False)["input_ids"]) == (
        "beyoncé café" if VOCABULARIES[name] else "beyonce cafe")


def test_an_export_into_the_vocabularys_own_directory_keeps_its_rule(legacy_dir, tmp_path):
    own = tmp_path / "own"
    shutil.copytree(legacy_dir, own)
    write_tokenizer_files(str(own / "spiece.model"), str(own))
    assert text_rule(str(own)) is False
    write_tokenizer_files(str(own / "spiece.model"), str(own), keep_accents=True)  # a new one
    assert text_rule(str(own)) is True


def test_a_config_that_cannot_say_the_rule_is_one_line(bare_dir, tmp_path):
    root = tmp_path / "v"
    shutil.copytree(bare_dir, root)
    config = root / "tokenizer_config.json"
    config.write_text('{"do_lower_case": true}')  # transformers' default: accents stripped
    assert text_rule(str(root)) is False
    for text, expected in (("{not json", "is not readable JSON"),
                           ('{"keep_accents": "yes"}', "keep_accents 'yes'"),
                           ("[true]", "got list")):
        config.write_text(text)
        with pytest.raises(DataError, match=re.escape(expected)) as e:
            load_tokenizer(str(root))
        assert str(config) in str(e.value) and "\n" not in str(e.value)


# Hangul syllables: transformers' legacy rule decomposes them (NFKD) into conjoining jamo that
# its SentencePiece charsmap step does not put back together (it maps a cluster of 6 bytes or
# more one character at a time), where SentencePiece itself, as in Google's own pretraining,
# recomposes them. Not a rule a Python step before SentencePiece can follow.
_JAMO = re.compile("[\u1100-\u11ff]")


@pytest.mark.parametrize("name", ["vocab_dir", "legacy_dir"])
def test_the_rule_is_transformers_own_on_every_mark_and_cased_character(name, request):
    # Each character that a mark, a decomposition or a case mapping touches, between letters:
    # SentencePiece's normalisation of preprocess_text's output is the fast tokenizer's.
    vocab = request.getfixturevalue(name)
    keep = VOCABULARIES[name]
    sp = load_spm(spm_file(vocab))
    normalizer = load_tokenizer(vocab).backend_tokenizer.normalizer
    checked = 0
    for cp in range(0x30000):
        c = chr(cp)
        # Python's tables and the fast tokenizer's: either may know a character the other not.
        if 0xD800 <= cp <= 0xDFFF or not (unicodedata.category(c).startswith("M")
                                         or unicodedata.normalize("NFKD", c) != c
                                         or c.lower() != c or c.upper() != c
                                         or normalizer.normalize_str(c) != c):
            continue
        if not keep and _JAMO.search(unicodedata.normalize("NFKD", c)):
            continue
        text = f"X{c}y z"
        fast = "\u2581" + "\u2581".join(normalizer.normalize_str(text).split())
        assert sp.Normalize(preprocess_text(text, keep)) == fast, hex(cp)
        checked += 1
    assert checked > 5000
