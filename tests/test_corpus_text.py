"""python -m albert.corpus_text: the sentences the data tools read, as plain text."""

import pytest


@pytest.mark.e2e
def test_corpus_text_tool_prints_no_start_up_lines(sample_corpus):
    """Issue 27: `python -m albert.corpus_text` starts as every tool (flags.quiet_start)."""
    from helpers import as_a_user_runs, start_up_noise

    proc = as_a_user_runs("corpus_text", "--input", sample_corpus, "--output", "-",
                          "--max_documents", "1")
    assert proc.returncode == 0, proc.stderr
    assert start_up_noise(proc.stderr) == []
    assert proc.stderr.startswith("wrote ") and proc.stdout.strip()
