"""A column flag that reads the labels as the text (issue 50 item 5): a headerless file read with
a header, whose first row's label matches the text column's position as a name, and a text column
that holds nothing but labels."""

import pytest

from albert.data.classification import ClassificationDataError, Columns, read_examples


def _headerless(tmp_path, name):
    path = tmp_path / name
    path.write_text("1\tthe film is a joy\n0\ta dull plot\n1\twarm and funny\n0\tsloppy work\n")
    return str(path)


@pytest.mark.parametrize("name", ["train.tsv", "dev.tsv"])
def test_a_position_that_is_also_a_header_name_is_ambiguous(tmp_path, name):
    # --text_a 1 --label 0 with --no_header forgotten: row 1 ("1", text) is taken as the header.
    path = _headerless(tmp_path, name)
    with pytest.raises(ClassificationDataError) as e:
        read_examples(path, Columns("1", None, "0", header=True))
    message = str(e.value)
    assert "\n" not in message
    assert "--text_a 1 is ambiguous" in message
    assert "names column 0 '1'" in message and "position 1 is column 'the film is a joy'" in message
    assert "--no_header" in message and path in message
    # Read as the user meant, every row is an example and the text is the text.
    examples = read_examples(path, Columns(1, None, 0, header=False))
    assert [e.label for e in examples] == ["1", "0", "1", "0"]
    assert examples[0].text_a == "the film is a joy"


def test_a_name_at_its_own_position_is_not_ambiguous(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("0\t1\nthe film is a joy\tpos\na dull plot\tneg\n")
    examples = read_examples(str(path), Columns("0", None, "1", header=True))
    assert [(e.text_a, e.label) for e in examples] == [("the film is a joy", "pos"),
                                                       ("a dull plot", "neg")]


@pytest.mark.parametrize("columns", [
    Columns("label", None, "label"),  # the same column by name
    Columns(0, None, 0, header=False),  # the same column by position
    Columns("sentence", "copy", "label"),  # text_b: another column holding the labels
])
def test_a_text_column_of_labels_is_refused(tmp_path, columns):
    path = tmp_path / "train.tsv"
    rows = [("label", "sentence", "copy")] if columns.header else []
    rows += [("1", "a joy", "1"), ("0", "dull", "0"), ("1", "warm", "1")]
    path.write_text("".join("\t".join(r) + "\n" for r in rows))
    with pytest.raises(ClassificationDataError) as e:
        read_examples(str(path), columns)
    message = str(e.value)
    assert "\n" not in message and str(path) in message
    assert "is one of the labels '0', '1'" in message
    assert "the label column is read as the text" in message
    # A file to predict has no labels to compare with: it is read.
    assert len(read_examples(str(path), columns, labelled=False)) == 3


def test_texts_that_are_only_sometimes_labels_are_kept(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("sentence\tlabel\nyes\tyes\nno\tno\nmaybe so\tyes\n")
    assert len(read_examples(str(path), Columns("sentence", None, "label"))) == 3


def test_a_first_row_whose_label_is_a_label_of_the_rows_is_no_header(tmp_path):
    """The case no flag makes ambiguous: rows "0\\tgreat movie" read with --label 0 --text_a 1
    and --no_header forgotten. "0" names column 0, which is also position 0, and the first row
    was dropped silently as the header. Its label cell is a label of the other rows: refused."""
    path = tmp_path / "train.tsv"
    path.write_text("0\tgreat movie\n0\tbad film\n1\tdull plot\n")
    with pytest.raises(ClassificationDataError) as e:
        read_examples(str(path), Columns("1", None, "0", header=True))
    message = str(e.value)
    assert "\n" not in message and str(path) in message
    assert "'0' in the label column" in message and "pass --no_header" in message
    assert len(read_examples(str(path), Columns(1, None, 0, header=False))) == 3
    # A real header's label name is no label: read as before.
    path.write_text("label\tsentence\n0\tgreat movie\n1\tdull plot\n")
    assert [e.label for e in read_examples(str(path), Columns("sentence", None, "label"))] == [
        "0", "1"]
