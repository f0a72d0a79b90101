"""Corpus inputs -> documents (lists of sentences), streaming, for the inputs people have.

Inputs (`expand_inputs`): files, directories (every non-hidden file below, sorted), globs (`**`
recurses) and comma lists. `.gz`, `.bz2` and `.xz` files are decompressed on the fly.

Formats (`--input_format`; `auto` picks by file name):
- `text` (`.txt` and anything unrecognised): plain UTF-8 text in the `line` or `blank` layout
  (`albert.data.text`), detected per file; `line` or `blank` force one.
- `jsonl` (`.jsonl`, `.ndjson`, `.json`): one JSON object per line; `--text_field` holds the text,
  paragraphs separated by newlines (an exported Hugging Face dataset).
- `parquet` (`.parquet`): the `--text_field` column, read in record batches with pyarrow.
- `wikipedia` (`.xml`, e.g. `enwiki-latest-pages-articles.xml.bz2`): a MediaWiki XML export read
  as a stream, one document per article. mwparserfromhell parses the wikitext; templates, tables,
  references, files, categories, headings and comments are dropped. Redirects, pages outside the
  article namespace and disambiguation pages are skipped and counted.

Reading is split in two so that the expensive half runs in worker processes: `read_documents`
streams a file's raw documents (cheap: decompression, JSON, XML), and `finish_document` turns one
into sentences (wikitext parsing, sentence splitting). Everything skipped is counted in ReadStats.
"""

from __future__ import annotations

import bz2
import ctypes
import dataclasses
import glob
import gzip
import itertools
import json
import lzma
import os
import re
import signal
import sys
import threading
import time
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from albert.data.text import (
    LAYOUTS,
    blank_documents,
    detect_layout,
    line_documents,
    text_sentences,
)

FORMATS = ("auto", "text", *LAYOUTS, "jsonl", "parquet", "wikipedia")
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_BY_EXTENSION = {".txt": "text", ".text": "text", ".jsonl": "jsonl", ".ndjson": "jsonl",
                 ".json": "jsonl", ".parquet": "parquet", ".xml": "wikipedia"}
# Wikipedia paragraphs shorter than this are headings, captions or list debris, not prose.
_WIKI_MIN_WORDS = 4


@dataclasses.dataclass
class ReadStats:
    """What was read and what was skipped (and why), summed over files and worker processes."""

    files: int = 0
    lines: int = 0
    bad_lines: int = 0  # not valid UTF-8
    bad_json_lines: int = 0  # not a JSON object, or its text field is missing or not a string
    null_texts: int = 0  # Parquet rows whose text is null
    pages: int = 0  # Wikipedia <page> elements
    redirects: int = 0
    non_article_pages: int = 0  # talk, user, template, file, category ... pages
    disambiguation_pages: int = 0
    empty_documents: int = 0  # no text left after cleanup
    documents: int = 0  # documents with at least one sentence

    def add(self, other: ReadStats) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class Namespaces(NamedTuple):
    """Lowercased namespace names of a wiki: links into `dropped` (files, categories) vanish,
    links into `other` namespaces keep only their label."""

    dropped: frozenset
    other: frozenset


# English defaults, for dumps without <siteinfo>; a dump's own names are added to these.
_DEFAULT_NAMESPACES = Namespaces(
    frozenset({"file", "image", "media", "category"}),
    frozenset({"talk", "user", "user talk", "wikipedia", "wp", "project", "file talk",
               "mediawiki", "template", "help", "portal", "draft", "module", "special",
               "category talk", "template talk", "wikt", "wiktionary", "s", "q", "commons"}),
)


class WikiPage(NamedTuple):
    title: str
    text: str  # wikitext
    namespaces: Namespaces


# -- inputs ----------------------------------------------------------------------------------


def expand_inputs(patterns: Iterable[str]) -> list[str]:
    """Files, directories, globs and comma lists -> files in order, without duplicates.

    Raises FileNotFoundError naming the first pattern that matches no file.
    """
    files: list[str] = []
    for pattern in patterns:
        for part in filter(None, (s.strip() for s in pattern.split(","))):
            if glob.has_magic(part):
                matched = sorted(glob.glob(part, recursive=True))
            else:
                matched = [part]
            found = []
            for path in matched:
                if os.path.isdir(path):
                    found.extend(_files_below(path))
                elif os.path.isfile(path):
                    found.append(path)
            if not found:
                raise FileNotFoundError(f"input {part!r} matches no file")
            files.extend(found)
    unique = list(dict.fromkeys(files))
    if not unique:
        raise FileNotFoundError("no input files given")
    return unique


def _files_below(directory: str) -> list[str]:
    out = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith("."))
    return out


def _split_compression(path: str) -> tuple[str, str]:
    """'a/b.xml.bz2' -> ('a/b.xml', '.bz2'); no compression suffix -> (path, '')."""
    base, ext = os.path.splitext(path)
    return (base, ext.lower()) if ext.lower() in _OPENERS else (path, "")


def file_format(path: str, fmt: str) -> str:
    """The format a file is read in: `fmt` unless it is `auto`, then by the file name."""
    if fmt != "auto":
        return fmt
    base, _ = _split_compression(path)
    return _BY_EXTENSION.get(os.path.splitext(base)[1].lower(), "text")


def open_binary(path: str):
    """A binary file object, decompressed on the fly for .gz/.bz2/.xz."""
    _, compression = _split_compression(path)
    return _OPENERS[compression](path, "rb") if compression else open(path, "rb")


def check_input(path: str, fmt: str, text_field: str) -> None:
    """Fail before any work on a file that cannot be read as asked (reads only its start).

    Raises ValueError naming the file, what was expected and what was found.
    """
    kind = file_format(path, fmt)
    if kind == "parquet":
        _parquet_file(path, text_field)
        return
    try:
        with open_binary(path) as f:
            head = f.read(1 << 16)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as e:
        raise ValueError(f"input {path}: cannot be read ({_reason(e)})") from None
    if kind == "wikipedia" and head.strip() and b"<mediawiki" not in head:
        raise ValueError(f"input {path}: not a MediaWiki XML export (no <mediawiki> element at "
                         "the start); use another --input_format for other files")
    if kind == "jsonl":
        first = next((line for line in head.split(b"\n") if line.strip()), None)
        if first is not None and len(first) < len(head):
            _check_json_field(path, first, text_field)


def _check_json_field(path: str, line: bytes, text_field: str) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        raise ValueError(f"input {path}: line 1 is not JSON; --input_format jsonl expects one "
                         "JSON object per line") from None
    if not isinstance(record, dict) or text_field not in record:
        fields = ", ".join(record) if isinstance(record, dict) else type(record).__name__
        raise ValueError(f"input {path}: the first record has no field {text_field!r} "
                         f"(it has: {fields}); choose the text with --text_field")


def _reason(e: BaseException) -> str:
    return (getattr(e, "strerror", None) or str(e) or type(e).__name__).rstrip(".")


# -- raw documents ---------------------------------------------------------------------------


def read_documents(path: str, fmt: str, text_field: str, stats: ReadStats) -> Iterator:
    """Stream one file's raw documents in file order: a str (text, paragraphs separated by
    newlines), a list of sentences, or a WikiPage. `finish_document` turns each into sentences.

    Raises ValueError naming the file when its content cannot be read as `fmt`.
    """
    kind = file_format(path, fmt)
    stats.files += 1
    try:
        if kind == "parquet":
            yield from _parquet_documents(path, text_field, stats)
        elif kind == "jsonl":
            yield from _jsonl_documents(path, text_field, stats)
        elif kind == "wikipedia":
            yield from _wiki_pages(path, stats)
        else:
            layout = kind if kind in LAYOUTS else _detect(path)
            lines = _decoded_lines(path, stats)
            yield from line_documents(lines) if layout == "line" else blank_documents(lines)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as e:
        raise ValueError(f"input {path}: cannot be read ({_reason(e)})") from None


def _detect(path: str) -> str:
    with open_binary(path) as f:
        return detect_layout(itertools.islice(f, 1000))


def _decoded_lines(path: str, stats: ReadStats) -> Iterator[str]:
    with open_binary(path) as f:
        for raw in f:
            stats.lines += 1
            try:
                yield raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                stats.bad_lines += 1


def _jsonl_documents(path: str, text_field: str, stats: ReadStats) -> Iterator[str]:
    with open_binary(path) as f:
        for raw in f:
            if not raw.strip():
                continue
            stats.lines += 1
            try:
                record = json.loads(raw)
            except UnicodeDecodeError:
                stats.bad_lines += 1
                continue
            except ValueError:
                stats.bad_json_lines += 1
                continue
            text = record.get(text_field) if isinstance(record, dict) else None
            if isinstance(text, str):
                yield text
            else:
                stats.bad_json_lines += 1


def _parquet_file(path: str, text_field: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as e:
        raise ValueError(f"input {path}: not a readable Parquet file ({_reason(e)})") from None
    schema = pf.schema_arrow
    if text_field not in schema.names:
        raise ValueError(f"input {path}: no column {text_field!r} (columns: "
                         f"{', '.join(schema.names)}); choose the text with --text_field")
    column_type = schema.field(text_field).type
    if not (pa.types.is_string(column_type) or pa.types.is_large_string(column_type)):
        raise ValueError(f"input {path}: column {text_field!r} holds {column_type}, not strings")
    return pf


def _parquet_documents(path: str, text_field: str, stats: ReadStats) -> Iterator[str]:
    pf = _parquet_file(path, text_field)
    # Record batches keep memory at one batch, whatever the file's size.
    for batch in pf.iter_batches(batch_size=256, columns=[text_field]):
        for text in batch.column(0).to_pylist():
            stats.lines += 1
            if text is None:
                stats.null_texts += 1
            else:
                yield text


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _wiki_pages(path: str, stats: ReadStats) -> Iterator[WikiPage]:
    namespaces = _DEFAULT_NAMESPACES
    with open_binary(path) as f:
        events = ET.iterparse(f, events=("start", "end"))
        try:
            _, root = next(events)
            if _local(root.tag) != "mediawiki":
                raise ValueError(f"input {path}: not a MediaWiki XML export (root element "
                                 f"<{_local(root.tag)}>)")
            for event, elem in events:
                if event != "end":
                    continue
                name = _local(elem.tag)
                if name == "namespaces":
                    namespaces = _site_namespaces(elem)
                elif name == "page":
                    page = _page(elem, namespaces, stats)
                    # Drop what was parsed so far: memory stays at one page.
                    root.clear()
                    if page is not None:
                        yield page
        except ET.ParseError as e:
            raise ValueError(f"input {path}: malformed XML ({e})") from None


def _site_namespaces(elem) -> Namespaces:
    dropped, other = set(_DEFAULT_NAMESPACES.dropped), set(_DEFAULT_NAMESPACES.other)
    for ns in elem:
        name = (ns.text or "").strip().lower()
        key = ns.get("key", "0")
        if name and key != "0":
            (dropped if key in ("-2", "6", "14") else other).add(name)
    return Namespaces(frozenset(dropped), frozenset(other))


def _page(elem, namespaces: Namespaces, stats: ReadStats) -> WikiPage | None:
    stats.pages += 1
    title, ns, text, redirect = "", "0", "", False
    for child in elem:
        name = _local(child.tag)
        if name == "title":
            title = child.text or ""
        elif name == "ns":
            ns = (child.text or "0").strip()
        elif name == "redirect":
            redirect = True
        elif name == "revision":
            for part in child:
                if _local(part.tag) == "text":
                    text = part.text or ""
    if ns != "0":
        stats.non_article_pages += 1
        return None
    if redirect or text.lstrip()[:9].upper() == "#REDIRECT":
        stats.redirects += 1
        return None
    return WikiPage(title, text, namespaces)


# -- documents -------------------------------------------------------------------------------


def finish_document(raw, stats: ReadStats) -> list[str] | None:
    """A raw document from read_documents -> its sentences, or None (skipped and counted)."""
    if isinstance(raw, WikiPage):
        sentences = wiki_sentences(raw, stats)
        if sentences is None:
            return None
    elif isinstance(raw, str):
        sentences = text_sentences(raw)
    else:
        sentences = raw
    if not sentences:
        stats.empty_documents += 1
        return None
    stats.documents += 1
    return sentences


def iter_documents(files: Iterable[str], fmt: str = "auto", stats: ReadStats | None = None,
                   text_field: str = "text") -> Iterator[list[str]]:
    """Every file's documents as lists of sentences, in order, in this process."""
    stats = stats if stats is not None else ReadStats()
    for path in files:
        for raw in read_documents(path, fmt, text_field, stats):
            sentences = finish_document(raw, stats)
            if sentences:
                yield sentences


def chunked(docs: Iterable, size: int) -> Iterator[tuple[int, int, list]]:
    """Documents -> (chunk index, index of its first document, documents), `size` at a time."""
    it = iter(docs)
    for index in itertools.count():
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield index, index * size, chunk


# -- Wikipedia -------------------------------------------------------------------------------

_DROPPED_TAGS = frozenset({
    "ref", "references", "table", "gallery", "math", "chem", "ce", "score", "timeline",
    "imagemap", "syntaxhighlight", "source", "pre", "code", "hiero", "graph", "mapframe",
    "maplink", "templatedata", "templatestyles", "includeonly", "noinclude", "inputbox",
    "categorytree", "hr",
})
_MAGIC_WORD = re.compile(r"__[A-Z]+__")  # behaviour switches such as __NOTOC__
_DISAMBIGUATION_TEMPLATES = frozenset({
    "disambiguation", "disambig", "disamb", "dab", "dis", "hndis", "geodis", "numberdis",
    "letter-numbercombdisambig", "mil-unit-dis",
})


def _is_disambiguation(title: str, code) -> bool:
    if title.rstrip().endswith("(disambiguation)"):
        return True
    for template in code.filter_templates(recursive=False):
        name = str(template.name).strip().lower().replace("_", " ")
        if name in _DISAMBIGUATION_TEMPLATES or "disambiguation" in name:
            return True
    return False


def wiki_sentences(page: WikiPage, stats: ReadStats) -> list[str] | None:
    """An article's wikitext -> the sentences of its prose; None for a disambiguation page."""
    import mwparserfromhell

    try:
        code = mwparserfromhell.parse(page.text)
    except mwparserfromhell.parser.ParserError:
        return []
    if _is_disambiguation(page.title, code):
        stats.disambiguation_pages += 1
        return None
    text = _plain_text(code, page.namespaces)
    return text_sentences(text, min_words=_WIKI_MIN_WORDS)


def _plain_text(code, namespaces: Namespaces) -> str:
    """The readable text of a parsed wikitext tree: what a reader of the article sees as prose.

    Walks mwparserfromhell's nodes (the library does the parsing) and keeps text, link labels and
    the contents of formatting tags; drops templates, tables, references, comments, headings and
    links to files and categories.
    """
    from mwparserfromhell.nodes import ExternalLink, Heading, HTMLEntity, Tag, Text, Wikilink

    out: list[str] = []
    for node in code.nodes:
        if isinstance(node, Text):
            out.append(node.value)
        elif isinstance(node, Wikilink):
            out.append(_link_text(node, namespaces))
        elif isinstance(node, ExternalLink):
            if node.title is not None:
                out.append(_plain_text(node.title, namespaces))
        elif isinstance(node, Tag):
            name = str(node.tag).strip().lower()
            if name == "br":
                out.append("\n")
            elif name not in _DROPPED_TAGS and node.contents is not None:
                out.append(_plain_text(node.contents, namespaces))
        elif isinstance(node, HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, Heading):
            out.append("\n")
        # Templates, comments and template arguments add nothing a reader sees as prose.
    return _MAGIC_WORD.sub("", "".join(out)).replace("\u00a0", " ")


def _link_text(link, namespaces: Namespaces) -> str:
    title = str(link.title).strip()
    label = link.text
    if title.startswith(":"):  # [[:Category:X]] is a plain link to the page, not a category
        title = title[1:]
    elif ":" in title:
        prefix = title.split(":", 1)[0].strip().lower()
        if prefix in namespaces.dropped:
            return ""
        if prefix in namespaces.other or (prefix.isalpha() and prefix.islower()
                                          and 2 <= len(prefix) <= 3):
            # Another namespace, or an interlanguage link ([[fr:Paris]]): keep a label only.
            return _plain_text(label, namespaces) if label is not None else ""
    if label is not None:
        return _plain_text(label, namespaces)
    return _plain_text(link.title, namespaces).lstrip(":")


# -- worker processes ------------------------------------------------------------------------


def die_with_parent(parent_pid: int) -> None:
    """Make this worker process exit when `parent_pid` dies, even by kill -9.

    Linux: the kernel sends SIGKILL (prctl PR_SET_PDEATHSIG). Everywhere, and in case the parent
    died before that took effect, a daemon thread checks the parent every second. Ctrl-C is left
    to the parent, which stops its workers and cleans up.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()

