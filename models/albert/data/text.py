"""Plain text -> documents: sentence splitting and the two line layouts of text corpora.

- `line`: one document per line (the aws-samples format); a line is split into sentences at ., !
  or ? followed by whitespace.
- `blank`: BERT/ALBERT's format, one sentence per line and documents separated by blank lines.
`detect_layout` picks `blank` when a file has a blank line within its first 1,000 lines.
Reading files (compression, JSONL, Parquet, Wikipedia dumps) is `albert.data.corpus`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

LAYOUTS = ("line", "blank")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """One paragraph -> its sentences (split at ., ! or ? followed by whitespace)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def text_sentences(text: str, min_words: int = 1) -> list[str]:
    """A document's text, paragraphs separated by newlines -> its sentences.

    Paragraphs with fewer than `min_words` words are dropped (headings, captions, list debris).
    """
    out: list[str] = []
    for paragraph in text.split("\n"):
        paragraph = " ".join(paragraph.split())
        if paragraph and len(paragraph.split(" ")) >= min_words:
            out.extend(split_sentences(paragraph))
    return out


def detect_layout(first_lines: Iterable[bytes]) -> str:
    """`blank` if any of these raw lines is blank, else `line`."""
    return "blank" if any(not raw.strip() for raw in first_lines) else "line"


def line_documents(lines: Iterable[str]) -> Iterator[str]:
    """`line` layout: every non-blank line is one document (its text, split later)."""
    for line in lines:
        if line.strip():
            yield line


def blank_documents(lines: Iterable[str]) -> Iterator[list[str]]:
    """`blank` layout: runs of non-blank lines are documents, one sentence per line."""
    doc: list[str] = []
    for line in lines:
        line = line.strip()
        if line:
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc
