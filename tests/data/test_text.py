"""albert.data.text: sentence splitting and the two line layouts of a text corpus."""

from albert.data.text import (
    blank_documents,
    detect_layout,
    line_documents,
    split_sentences,
    text_sentences,
)


def test_sentences_end_at_a_stop_followed_by_whitespace():
    assert split_sentences("  It runs. Does it stop?  Yes!\tIt does. ") == [
        "It runs.", "Does it stop?", "Yes!", "It does."]
    # No whitespace after the stop: one sentence (version numbers, file names, URLs).
    assert split_sentences("Python 3.11 reads setup.py first.") == [
        "Python 3.11 reads setup.py first."]
    assert split_sentences("   ") == []


def test_paragraphs_are_split_and_short_ones_dropped():
    text = "Overview\nThe  loop   runs. Then it ends.\n\nSee also\nA list of three words."
    assert text_sentences(text) == ["Overview", "The loop runs.", "Then it ends.", "See also",
                                    "A list of three words."]
    # Headings and captions under min_words go; whitespace inside a paragraph is collapsed.
    assert text_sentences(text, min_words=3) == ["The loop runs.", "Then it ends.",
                                                 "A list of three words."]


def test_layout_is_blank_only_when_a_blank_line_is_seen():
    assert detect_layout([b"One doc. Two sentences.\n", b"Another doc.\n"]) == "line"
    assert detect_layout([b"A sentence.\n", b"  \r\n", b"Next document.\n"]) == "blank"
    assert detect_layout([]) == "line"


def test_line_layout_is_one_document_a_line():
    lines = ["First doc. Its second sentence.\n", "\n", "   \n", "Second doc.\n"]
    assert list(line_documents(lines)) == ["First doc. Its second sentence.\n", "Second doc.\n"]


def test_blank_layout_groups_runs_of_lines_into_documents():
    lines = ["\n", "a one.\n", "  a two.  \n", "\n", "\n", "b one.\n", "\n", "c one.\n",
             "c two."]
    assert list(blank_documents(lines)) == [["a one.", "a two."], ["b one."],
                                            ["c one.", "c two."]]
    assert list(blank_documents(["\n", " \n"])) == []
