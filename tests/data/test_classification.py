"""Classification files -> examples -> features -> padded batches, and the bundled sample task."""

import dataclasses
import os

import numpy as np
import pytest

from albert.data import classification as data
from albert.data.classification import (
    GLUE_TASKS,
    ClassificationDataError,
    Columns,
    read_examples,
)
from albert.data.classification_records import feature_dataset, write_feature_cache


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- the GLUE files' layouts ------------------------------------------------------------------

# The header and one row of each GLUE distribution file, as they are (MNLI's train file has 12
# columns, dev_matched 16; quotes are text).
GLUE_FILES = {
    "sst2": ("sentence\tlabel\n", "it 's a \"charming\" journey . \t1\n"),
    "mrpc": ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n",
             "1\t702876\t702977\tAmrozi accused his brother .\tReferring to him , he said .\n"),
    "qqp": ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n",
            "133273\t213221\t213222\tHow is the life?\tHow is \"life\" there?\t0\n"),
    "mnli": ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
             "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label\n",
             "0\t31193\t31193n\tgovernment\t( ( x ) )\t( y )\t(ROOT x)\t(ROOT y)\t"
             "Conceptually cream skimming has two dimensions .\tProduct and geography are what "
             "make it work .\tneutral\tneutral\n"),
    "qnli": ("index\tquestion\tsentence\tlabel\n",
             "0\tWhat came into force?\tThe law came into force .\tentailment\n"),
    "rte": ("index\tsentence1\tsentence2\tlabel\n",
            "0\tNo weapons were found .\tWeapons were found .\tnot_entailment\n"),
    "cola": ("", "gj04\t1\t\tOur friends won't buy this analysis .\n"),  # no header
    "stsb": ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\t"
             "score\n",
             "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off .\t"
             "An air plane is taking off .\t5.000\n"),
}


@pytest.mark.parametrize("task", sorted(GLUE_TASKS))
def test_glue_presets_read_the_real_layouts(task, tmp_path):
    header, row = GLUE_FILES[task]
    preset = GLUE_TASKS[task]
    path = write(tmp_path / "dev.tsv", header + row + row)
    examples = read_examples(path, preset.columns)
    assert len(examples) == 2 and examples[1].index == 1
    assert examples[0].text_a.strip() and examples[0].text_a[0].isupper() or task == "sst2"
    assert (examples[0].text_b is None) == (task in ("sst2", "cola"))
    values = data.label_values(examples, path, preset.task, preset.labels)
    if preset.task == "regression":
        assert values == [5.0, 5.0]
    else:
        assert preset.labels[values[0]] == examples[0].label


def test_tsv_quotes_are_text_and_lines_are_numbered(tmp_path):
    path = write(tmp_path / "t.tsv", 'sentence\tlabel\n"an open quote\tpos\n\nclosed" here\tneg\n')
    examples = read_examples(path, Columns("sentence"))
    assert [e.text_a for e in examples] == ['"an open quote', 'closed" here']
    assert [e.line for e in examples] == [2, 4]  # the blank line is skipped, not renumbered
    assert [e.index for e in examples] == [0, 1]


def test_csv_quoting_and_jsonl(tmp_path):
    path = write(tmp_path / "t.csv", 'text,other,y\n"a, quoted\nfield",x,1\nplain,x,0\n')
    examples = read_examples(path, Columns("text", "other", "y"))
    assert [(e.text_a, e.text_b, e.label, e.line) for e in examples] == [
        ("a, quoted\nfield", "x", "1", 2), ("plain", "x", "0", 4)]
    path = write(tmp_path / "t.jsonl", '{"q": "first", "y": 1}\n\n{"q": "second", "y": true}\n')
    examples = read_examples(path, Columns("q", None, "y"))
    assert [(e.text_a, e.label, e.line) for e in examples] == [("first", "1", 1),
                                                               ("second", "true", 3)]


def test_files_to_predict_need_no_label(tmp_path):
    path = write(tmp_path / "test.tsv", "index\tsentence\n0\tfirst\n1\tsecond\n")
    examples = read_examples(path, Columns("sentence", None, "label"), labelled=False)
    assert [e.label for e in examples] == [None, None]
    with pytest.raises(ClassificationDataError, match="no column 'label' .*--label"):
        read_examples(path, Columns("sentence", None, "label"))


@pytest.mark.parametrize("name, text, columns, message", [
    ("t.tsv", "sentence\tlabel\nfine\t1\n", Columns("sentense"),
     r"t.tsv has no column 'sentense' \(--text_a\); its columns are: 'sentence', 'label'"),
    ("t.tsv", "", Columns("sentence"), r"t.tsv is empty"),
    ("t.tsv", "sentence\tlabel\n\n", Columns("sentence"), "t.tsv has no rows after its header"),
    ("t.tsv", "sentence\tlabel\na\t1\nb\t0\tstray\nc\t1\n", Columns("sentence"),
     r"t.tsv line 3: 3 fields where the header has 2"),
    ("t.tsv", "x\t1\t\ty\nz\t0\n", Columns(3, None, 1, header=False),
     r"t.tsv line 2: 2 fields where the first row has 4"),
    ("t.tsv", "x\t1\n", Columns(3, None, 1, header=False), r"line 1: --text_a 3 is past"),
    ("t.csv", 'a,label\n"unclosed,1\n', Columns("a"), r"t.csv line \d+: "),
    ("t.jsonl", '{"sentence": "a", "label": 1}\n{"sentence": "b"\n', Columns("sentence"),
     r"t.jsonl line 2: not valid JSON"),
    ("t.jsonl", '{"sentence": "a", "label": 1}\n{"text": "b", "label": 0}\n',
     Columns("sentence"), r"t.jsonl line 2: no key 'sentence' \(--text_a\)"),
    ("t.jsonl", '["a", 1]\n', Columns("sentence"), "line 1: expected a JSON object"),
    ("t.jsonl", '{"sentence": "a", "label": 1}\n', Columns(0, None, 1),
     "--text_a must be a key, not the position 0"),
    ("t.txt", "a\n", Columns("sentence"), "cannot tell its format from the name"),
    # A header read with --no_header (issue 24 item 5), and a header naming a column twice.
    ("t.tsv", "gold_label\tsentence\nneutral\ta\nentailment\tb\n", Columns(1, None, 0, False),
     r"t.tsv line 1 looks like a header.*label 'gold_label' appears only there and is a column "
     r"name\. Drop --no_header and name the columns \(--text_a sentence --label gold_label\)"),
    ("t.csv", "src,score,text\nx,0.5,a\ny,1.5,b\n", Columns(2, None, 1, False),
     r"t.csv line 1 looks like a header.*'score'"),
    ("t.tsv", "s\tmark\na\t1\nb\t0\n", Columns(0, None, 1, False),
     r"line 1 looks like a header.*'mark' .* the one label that is not a number.*"
     r"\(--text_a s --label mark\)"),
    ("t.tsv", "sentence\tlabel\tlabel\na\t1\t0\n", Columns("sentence"),
     r"t.tsv: its header names column 'label' twice \(positions 1 and 2"),
    ("t.csv", "text,y,text\na,1,b\n", Columns("text", None, "y"),
     "t.csv: its header names column 'text' twice"),
    ("t.jsonl", '{"sentence": "a", "label": 1, "label": 0}\n', Columns("sentence"),
     "t.jsonl line 1: key 'label' appears twice"),
    # Quotes are text in a TSV, so a quoted line break splits a row: say so.
    ("t.tsv", 'sentence\tlabel\n"over\ntwo lines"\t1\n', Columns("sentence"),
     r"line 2: 1 fields where the header has 2 \(a line break inside a quoted text\?"),
    ("t.tsv", '"over\ntwo lines"\t1\nok\t0\n', Columns(0, None, 1, False),
     r"line 1: --label 1 is past the row's 1 columns \(numbered from 0\) \(a line break inside "
     r"a quoted text\?"),
    ("t.tsv", "sentence\tlabel\na\t1\tb\n", Columns("sentence"), r"\(a tab inside a text\?\)"),
    ("t.tsv", "sentence\tlabel\na\n", Columns("sentence"),
     r"\(a missing field, or a line break inside a text\?\)"),
])
def test_bad_files_are_named_with_their_line(name, text, columns, message, tmp_path):
    path = write(tmp_path / name, text)
    with pytest.raises(ClassificationDataError, match=message):
        read_examples(path, columns)


@pytest.mark.parametrize("text, columns, labelled", [
    ("pos\tfirst\nneg\tsecond\nneg\tthird\n", Columns(1, None, 0, False), True),  # not a name
    ("2\tfirst\n0\tsecond\n1\tthird\n", Columns(1, None, 0, False), True),  # a number once
    ("label\tfirst\nlabel\tsecond\nx\tthird\n", Columns(1, None, 0, False), True),  # twice
    ("label\tsentence\n", Columns(1, None, 0, False), False),  # to predict: no label read
    ("sentence\tlabel\t\t\na\t1\t\t\n", Columns("sentence"), True),  # blank names repeat
])
def test_first_rows_that_are_examples_are_kept(text, columns, labelled, tmp_path):
    path = write(tmp_path / "t.tsv", text)
    examples = read_examples(path, columns, labelled)
    assert examples[0].line == (1 if not columns.header else 2)


def test_bad_encoding_and_missing_file(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes(b"sentence\tlabel\ncaf\xe9\t1\n")
    with pytest.raises(ClassificationDataError, match="t.tsv is not UTF-8"):
        read_examples(str(path), Columns("sentence"))
    with pytest.raises(FileNotFoundError, match="nope.tsv does not exist"):
        read_examples(str(tmp_path / "nope.tsv"), Columns("sentence"))


def test_labels_sorted_checked_and_numeric(tmp_path):
    path = write(tmp_path / "t.tsv", "sentence\tlabel\na\t10\nb\t2\nc\t2\nd\t0\n")
    examples = read_examples(path, Columns("sentence"))
    labels = data.label_set(examples)
    assert labels == ("0", "2", "10")  # as numbers
    assert data.label_values(examples, path, "classification", labels) == [2, 1, 1, 0]
    assert data.label_set([data.Example(0, 1, "a", None, "neg"),
                           data.Example(1, 2, "b", None, "pos"),
                           data.Example(2, 3, "c", None, "neg")]) == ("neg", "pos")
    with pytest.raises(ClassificationDataError,
                       match=r"t.tsv line 3: label '2' is not one of the 2 labels \('0', '10'\)"):
        data.label_values(examples, path, "classification", ("0", "10"))
    assert data.label_values(examples, path, "regression", None) == [10.0, 2.0, 2.0, 0.0]
    bad = write(tmp_path / "r.tsv", "sentence\tlabel\na\t0.5\nb\tn/a\n")
    with pytest.raises(ClassificationDataError, match="r.tsv line 3: label 'n/a' is not a "
                                                      "finite number"):
        data.label_values(read_examples(bad, Columns("sentence")), bad, "regression", None)


# -- features ---------------------------------------------------------------------------------


def test_truncate_pair_cuts_the_longer_first():
    a, b = list(range(10)), list(range(4))
    assert data.truncate_pair(a, b, 8)
    assert (len(a), len(b)) == (4, 4) and a == [0, 1, 2, 3]
    a, b = list(range(3)), list(range(9))
    assert data.truncate_pair(a, b, 7) and (len(a), len(b)) == (3, 4)
    a = list(range(5))
    assert not data.truncate_pair(a, None, 5) and len(a) == 5
    assert data.truncate_pair(a, None, 2) and a == [0, 1]


@pytest.fixture(scope="module")
def tokenizer(sample_vocab):
    from albert.data.tokenization import load_tokenizer

    return load_tokenizer(sample_vocab)


def test_featurize_matches_the_tokenizers_pair_encoding(tokenizer):
    examples = [data.Example(0, 2, "The debugger stops at a breakpoint.",
                             "Format strings hold replacement fields.", "1"),
                data.Example(1, 3, "Short.", "x " * 200, "0")]
    features, stats = data.featurize(examples, [1, 0], tokenizer, 32)
    reference = tokenizer(examples[0].text_a, examples[0].text_b, return_token_type_ids=True)
    assert features[0].input_ids == reference["input_ids"]
    assert features[0].token_type_ids == reference["token_type_ids"]
    assert features[0].label == 1 and features[1].label == 0
    long = features[1]
    assert len(long.input_ids) == 32 and long.input_ids[0] == tokenizer.cls_token_id
    assert long.input_ids.count(tokenizer.sep_token_id) == 2 and long.input_ids[-1] == 3
    assert stats["truncated"] == 1 and stats["max_length"] == 32
    single, _ = data.featurize([data.Example(0, 1, "Hello there.", None, None)], None,
                               tokenizer, 16)
    assert single[0].input_ids == tokenizer("Hello there.")["input_ids"]
    assert set(single[0].token_type_ids) == {0} and single[0].label == -1


@pytest.mark.parametrize("padding, multiple, expected", [("batch", 8, 16), ("batch", 1, 11),
                                                          ("max", 8, 40)])
def test_batches_are_padded_to_their_longest(tokenizer, tmp_path, padding, multiple, expected):
    import tensorflow as tf

    examples = [data.Example(i, i + 2, "word " * n, None, str(i % 2))
                for i, n in enumerate([3, 9, 5, 2])]
    features, stats = data.featurize(examples, [0, 1, 0, 1], tokenizer, 40)
    write_feature_cache(features, stats, str(tmp_path / "f"), regression=False)
    assert data.read_feature_meta(str(tmp_path / "f"))["examples"] == 4
    records, parse = feature_dataset(str(tmp_path / "f"), False, 40, padding, multiple)
    batch = parse(next(iter(records.batch(4))))
    lengths = [len(f.input_ids) for f in features]
    assert max(lengths) == 11
    assert batch["input_ids"].shape == (4, expected)
    for i, f in enumerate(features):
        np.testing.assert_array_equal(batch["input_ids"][i, :lengths[i]], f.input_ids)
        assert int(tf.reduce_sum(batch["input_ids"][i, lengths[i]:])) == 0
        assert int(tf.reduce_sum(batch["attention_mask"][i])) == lengths[i]
    np.testing.assert_array_equal(batch["labels"], [0, 1, 0, 1])
    np.testing.assert_array_equal(batch["index"], [0, 1, 2, 3])
    assert batch["labels"].dtype == tf.int32


def test_regression_labels_are_float(tokenizer, tmp_path):
    features, stats = data.featurize([data.Example(0, 2, "a b", "c", "3.2")], [3.2], tokenizer, 16)
    write_feature_cache(features, stats, str(tmp_path / "r"), regression=True)
    records, parse = feature_dataset(str(tmp_path / "r"), True, 16)
    batch = parse(next(iter(records.batch(1))))
    assert batch["labels"].dtype.name == "float32"
    assert float(batch["labels"][0]) == pytest.approx(3.2)


def test_cache_key_follows_file_vocabulary_and_settings(sample_vocab, tmp_path):
    path = write(tmp_path / "t.tsv", "sentence\tlabel\na\t1\n")
    settings = data.FeatureSettings(128, "classification", ("0", "1"), Columns("sentence"),
                                    labelled=True)
    key = data.cache_key(path, settings, sample_vocab, True)
    assert key == data.cache_key(path, settings, sample_vocab, True)
    assert key != data.cache_key(path, settings, sample_vocab, False)
    other = data.FeatureSettings(128, "classification", ("1", "0"), Columns("sentence"),
                                 labelled=True)
    assert key != data.cache_key(path, other, sample_vocab, True)  # label ids differ
    # Read without labels (to predict), the same file's features carry label -1.
    unlabelled = dataclasses.replace(settings, labelled=False)
    assert key != data.cache_key(path, unlabelled, sample_vocab, True)
    for columns in (Columns("sentence", None, "y"), Columns(0, None, 1, header=False)):
        moved = dataclasses.replace(settings, columns=columns)
        assert key != data.cache_key(path, moved, sample_vocab, True)
    # A vocabulary directory is keyed by its spiece.model, as load_tokenizer reads it.
    vocab_dir = tmp_path / "vocab"
    vocab_dir.mkdir()
    (vocab_dir / "spiece.model").write_bytes(open(sample_vocab, "rb").read())
    # ... with its text rule: a spiece.model alone reads as accents stripped (text_rule)
    (vocab_dir / "tokenizer_config.json").write_bytes(
        open(os.path.join(os.path.dirname(sample_vocab), "tokenizer_config.json"), "rb").read())
    assert key == data.cache_key(path, settings, str(vocab_dir), True)
    write(tmp_path / "t.tsv", "sentence\tlabel\nb\t1\n")
    assert key != data.cache_key(path, settings, sample_vocab, True)


# -- the bundled sample task ------------------------------------------------------------------


# -- issue 34 items 19 and 20 ---------------------------------------------------------------------


@pytest.mark.parametrize("text, columns, why", [
    ("index\tsentence\n0\tfirst\n1\tsecond\n", Columns(1, None, None, False),
     "its text 'sentence' is a column name"),
    ("id\tquestion\tsentence\n7\tq\ts\n8\tr\tt\n", Columns(1, 2, None, False),
     "its text 'question', 'sentence' is a column name"),
    ("n\tremark\n0\tfirst\n1\tsecond\n", Columns(1, None, None, False),
     "its column 0 holds 'n' above numbers"),
])
def test_a_file_to_predict_whose_first_row_looks_like_a_header_is_read_and_warned(
        text, columns, why, tmp_path, caplog):
    """Without a label there is nothing to refuse by (the header row is predicted like any
    text), but a first row that looks like a header is named, with the way on."""
    path = write(tmp_path / "test.tsv", text)
    examples = read_examples(path, columns, labelled=False)
    assert examples[0].line == 1  # still read: it may be a text after all
    assert [r.getMessage() for r in caplog.records] == [
        f"{path} line 1 looks like a header ({why}), but --no_header reads it as a text to "
        "predict, and predicts it: drop --no_header and name the columns, or remove that row"]


@pytest.mark.parametrize("text", [
    "0\tfirst\n1\tsecond\n",  # numbers and texts throughout
    "sentence\tfirst\n",  # one row: nothing to compare it with
    "a\tgood film\nb\tsentence\n",  # a column name, but not in the first row
    "x\tfirst\n1\tsecond\ny\tthird\n",  # a word above numbers and words
])
def test_files_to_predict_without_a_header_row_are_not_warned(text, tmp_path, caplog):
    path = write(tmp_path / "test.tsv", text)
    read_examples(path, Columns(1, None, None, False), labelled=False)
    assert caplog.records == []


def test_a_column_by_position_reads_files_whose_headers_name_it_differently(tmp_path):
    """SST-2: the train file's header says label<TAB>sentence, the dev file's label<TAB>content.
    One --text_a 1 --label 0 reads both; a header name still wins over a position."""
    train = write(tmp_path / "train.tsv", "label\tsentence\n1\tgood\n0\tbad\n")
    dev = write(tmp_path / "dev.tsv", "label\tcontent\n0\tdull\n")
    columns = Columns("1", None, "0")
    assert [(e.text_a, e.label) for e in read_examples(train, columns)] == [("good", "1"),
                                                                         ("bad", "0")]
    assert [(e.text_a, e.label) for e in read_examples(dev, columns)] == [("dull", "0")]
    named = write(tmp_path / "named.tsv", "0\t1\nx\ty\n")  # columns named "0" and "1"
    assert read_examples(named, Columns("0", None, "1"))[0].text_a == "x"
    with pytest.raises(ClassificationDataError, match=r"--label 5 is past its 2 columns"):
        read_examples(dev, Columns("1", None, "5"))
