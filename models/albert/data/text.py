"""Reading corpus text: globs -> lines -> documents (lists of sentences), streaming.

Two input layouts are accepted:
- `line`: one document per line (the aws-samples format); sentences are split at ., ! or ? followed
  by whitespace.
- `blank`: BERT/ALBERT's format, one sentence per line and documents separated by blank lines.
`auto` picks `blank` when a file has a blank line within its first 1,000 lines, else `line`.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from collections.abc import Iterable, Iterator

FORMATS = ("auto", "line", "blank")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclasses.dataclass
class ReadStats:
    files: int = 0
    lines: int = 0
    bad_lines: int = 0  # not valid UTF-8: skipped and counted
    documents: int = 0


def expand_inputs(patterns: Iterable[str]) -> list[str]:
    """Globs and comma-separated lists -> sorted unique files; error naming what matched nothing."""
    files: list[str] = []
    for pattern in patterns:
        for part in filter(None, (s.strip() for s in pattern.split(","))):
            matched = sorted(glob.glob(part)) if glob.has_magic(part) else [part]
            matched = [m for m in matched if os.path.isfile(m)]
            if not matched:
                raise FileNotFoundError(f"input {part!r} matches no file")
            files.extend(matched)
    seen = set()
    unique = [f for f in files if not (f in seen or seen.add(f))]
    if not unique:
        raise FileNotFoundError("no input files given")
    return unique


def _decoded_lines(path: str, stats: ReadStats) -> Iterator[str]:
    with open(path, "rb") as f:
        for raw in f:
            stats.lines += 1
            try:
                yield raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                stats.bad_lines += 1


def iter_lines(files: Iterable[str], stats: ReadStats | None = None) -> Iterator[str]:
    stats = stats or ReadStats()
    for path in files:
        stats.files += 1
        yield from _decoded_lines(path, stats)


def detect_format(path: str) -> str:
    with open(path, "rb") as f:
        for i, raw in enumerate(f):
            if i >= 1000:
                break
            if not raw.strip():
                return "blank"
    return "line"


def split_sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def iter_documents(files: Iterable[str], fmt: str = "auto",
                   stats: ReadStats | None = None) -> Iterator[list[str]]:
    """Yield documents as lists of sentence strings, in file order; empty documents are dropped."""
    if fmt not in FORMATS:
        raise ValueError(f"--input_format must be one of {FORMATS}, got {fmt!r}")
    stats = stats or ReadStats()
    for path in files:
        stats.files += 1
        layout = detect_format(path) if fmt == "auto" else fmt
        if layout == "line":
            for line in _decoded_lines(path, stats):
                sentences = split_sentences(line)
                if sentences:
                    stats.documents += 1
                    yield sentences
        else:
            doc: list[str] = []
            for line in _decoded_lines(path, stats):
                line = line.strip()
                if line:
                    doc.append(line)
                elif doc:
                    stats.documents += 1
                    yield doc
                    doc = []
            if doc:
                stats.documents += 1
                yield doc
