"""python -m albert.corpus_text: the sentences the data tools read, as plain text."""

import os

import pytest

from albert import corpus_text


@pytest.mark.e2e
def test_corpus_text_tool_prints_no_start_up_lines(sample_corpus):
    """Issue 27: `python -m albert.corpus_text` starts as every tool (flags.quiet_start)."""
    from helpers import as_a_user_runs, start_up_noise

    proc = as_a_user_runs("corpus_text", "--input", sample_corpus, "--output", "-",
                          "--max_documents", "1")
    assert proc.returncode == 0, proc.stderr
    assert start_up_noise(proc.stderr) == []
    # The corpus is in BERT's layout (a sentence a line, a blank line after each document): its
    # first document is the text, line for line, and the summary alone is on stderr.
    first = sample_corpus.read_text(encoding="utf-8").split("\n\n")[0].splitlines()
    assert len(first) > 3
    assert proc.stdout == "\n".join(first) + "\n"
    assert proc.stderr == f"wrote {len(first)} sentences of 1 documents to -\n"


# -- an output that is one of the inputs; an interrupted run (issue 34 item 1) ----------------

TEXT = "The first document says one thing.\nIt says it twice.\n\nThe second one says more.\n"


def _refused(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        corpus_text.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_output_that_is_an_input_is_refused_and_kept(tmp_path, capsys, monkeypatch):
    """`--input X --output X` emptied X and said "wrote 0 sentences"; the same file named
    another way, through a link, a hard link or a glob (last run's output matched on the next
    run) is refused too, in one line, before X is touched."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.txt").symlink_to(corpus)
    os.link(corpus, tmp_path / "hard.txt")
    monkeypatch.chdir(tmp_path)
    for given, output in [(corpus, corpus), ("corpus.txt", "./sub/../corpus.txt"),
                          ("link.txt", "corpus.txt"), ("corpus.txt", "link.txt"),
                          ("hard.txt", "corpus.txt"), ("*.txt", "corpus.txt"), (".", "corpus.txt")]:
        err = _refused(["--input", given, "--output", output], capsys)
        assert err.startswith(f"error: --output {output} is also one of the --input files"), err
        assert corpus.read_text() == TEXT

    # A glob that will match the output: the first run is fine; the next is refused, not fed
    # the previous output.
    assert corpus_text.main(["--input", "c*.txt", "--output", "corpus-text.txt"]) == 0
    assert "wrote 3 sentences of 2 documents" in capsys.readouterr().out
    written = (tmp_path / "corpus-text.txt").read_text()
    assert written == TEXT
    err = _refused(["--input", "c*.txt", "--output", "corpus-text.txt"], capsys)
    assert err == ("error: --output corpus-text.txt is also one of the --input files; writing it "
                   "would lose the text it holds: give another --output, or leave it out of "
                   "--input")
    assert (tmp_path / "corpus-text.txt").read_text() == written
    err = _refused(["--input", "corpus.txt", "--output", "sub"], capsys)
    assert err == "error: --output sub: is a directory; give the path of a text file"


def test_interrupted_run_leaves_the_previous_output_whole(tmp_path, capsys, monkeypatch):
    """The text is written beside the output and takes its place when complete: a run stopped
    half way (Ctrl-C, a full disk, kill) leaves the previous output as it was and no temporary
    file behind."""
    corpus, out = tmp_path / "corpus.txt", tmp_path / "out" / "text.txt"
    corpus.write_text(TEXT)
    out.parent.mkdir()
    out.write_text("the previous run's text\n")
    real = corpus_text.iter_documents

    def stopped_half_way(*args, **kwargs):
        docs = real(*args, **kwargs)
        yield next(docs)
        yield next(docs)
        # Two documents written by now, and the output not touched.
        assert out.read_text() == "the previous run's text\n"
        raise KeyboardInterrupt

    monkeypatch.setattr(corpus_text, "iter_documents", stopped_half_way)
    with pytest.raises(KeyboardInterrupt):
        corpus_text.main(["--input", str(corpus), "--output", str(out)])
    assert out.read_text() == "the previous run's text\n"
    assert os.listdir(out.parent) == ["text.txt"]
    monkeypatch.setattr(corpus_text, "iter_documents", real)
    assert corpus_text.main(["--input", str(corpus), "--output", str(out)]) == 0
    assert out.read_text() == TEXT and os.listdir(out.parent) == ["text.txt"]
