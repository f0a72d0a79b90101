"""albert.demo.sample: the bundled English corpus (CPython's help topics)."""

from albert.demo.sample import pydoc_documents, write_corpus


def test_corpus_is_the_blank_line_layout_of_the_documents(tmp_path):
    path = tmp_path / "sub" / "corpus.txt"
    size = write_corpus(str(path))
    text = path.read_text(encoding="utf-8")
    assert size == len(text.encode()) == path.stat().st_size
    docs = [d.split("\n") for d in text.split("\n\n") if d.strip()]
    assert docs == [d for d in pydoc_documents()]
    assert all(line.strip() for d in docs for line in d)  # a blank line only between documents


def test_max_bytes_stops_after_the_document_that_reaches_it(tmp_path):
    full = write_corpus(str(tmp_path / "full.txt"))
    size = write_corpus(str(tmp_path / "cut.txt"), max_bytes=5000)
    assert 5000 <= size < full
    assert (tmp_path / "full.txt").read_text().startswith((tmp_path / "cut.txt").read_text())
    assert (tmp_path / "cut.txt").read_text().endswith("\n\n")
