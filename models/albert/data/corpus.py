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
  as a stream, one document per article, turned into the prose a reader sees by
  `albert.data.wikitext` (templates that carry words rendered, the rest of the markup dropped;
  reference lists left out; sentences with a hole, such as a formula or a template whose words
  are gone, dropped and counted). Redirects, pages outside the article namespace and
  disambiguation pages are skipped and counted.

Reading is split in two so that the expensive half runs in worker processes: `read_documents`
streams a file's raw documents (cheap: decompression, JSON, XML), and `finish_document` turns one
into sentences (wikitext parsing, sentence splitting). Everything skipped is counted in ReadStats.

`python -m albert.corpus_text` writes what is read as plain text (what the model trains on).
"""

from __future__ import annotations

import bz2
import concurrent.futures as cf
import ctypes
import dataclasses
import fnmatch
import glob
import gzip
import itertools
import json
import logging
import lzma
import multiprocessing
import os
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
from albert.errors import DataError

FORMATS = ("auto", "text", *LAYOUTS, "jsonl", "parquet", "wikipedia")
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_BY_EXTENSION = {".txt": "text", ".text": "text", ".jsonl": "jsonl", ".ndjson": "jsonl",
                 ".json": "jsonl", ".parquet": "parquet", ".xml": "wikipedia"}


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
    # Wikipedia sentences dropped: a hole nothing fills (a formula), or markup left in them
    sentences_with_holes: int = 0
    sentences_with_markup: int = 0
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


logger = logging.getLogger("albert.data.corpus")


@dataclasses.dataclass
class InputSkips:
    """What listing the inputs left out. Each file is read once, whatever the paths that lead to
    it; the counts go into the tools' summaries so that "skipped nothing" is true."""

    duplicate_paths: int = 0  # a file already listed, reached again (./a, a link, a link loop)
    repeated_directories: int = 0  # a directory already listed, reached again through a link
    broken_links: int = 0  # links to nothing
    unreadable_directories: int = 0
    examples: dict = dataclasses.field(default_factory=dict)  # kind -> the first one, in words

    def count(self, kind: str, example: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        self.examples.setdefault(kind, example)

    def as_dict(self) -> dict:
        return {"duplicate_input_paths": self.duplicate_paths,
                "repeated_input_directories": self.repeated_directories,
                "broken_input_links": self.broken_links,
                "unreadable_input_directories": self.unreadable_directories}

    def describe(self) -> str | None:
        """One line for the log, None when nothing was left out."""
        words = {"duplicate_paths": "paths to a file already listed (read once)",
                 "repeated_directories": "links to a directory already listed (not entered "
                                         "again)",
                 "broken_links": "links to nothing",
                 "unreadable_directories": "directories that cannot be listed"}
        parts = [f"{text}: {getattr(self, kind)}, e.g. {self.examples[kind]}"
                 for kind, text in words.items() if getattr(self, kind)]
        return "inputs skipped: " + "; ".join(parts) if parts else None


def expand_inputs(patterns: Iterable[str], skips: InputSkips | None = None) -> list[str]:
    """Files, directories, globs and comma lists -> files in order, each file once.

    A path that exists is taken as it is, even when it holds glob characters (`[1]`) or commas;
    otherwise a comma splits it (logged). Files are deduplicated by their real path, and a
    directory is entered once however many links lead to it, so a link loop ends. What was left
    out is counted in `skips`. Raises FileNotFoundError naming the first pattern that matches no
    file.
    """
    skips = skips if skips is not None else InputSkips()
    files: list[str] = []
    listed: dict[str, str] = {}  # real path -> the path it was listed as
    for pattern in patterns:
        parts = _split_commas(pattern)
        for part in parts:
            found = _expand(part, skips)
            if not found:
                origin = f" (from {pattern!r}, split at its commas)" if len(parts) > 1 else ""
                raise FileNotFoundError(f"input {part!r}{origin} matches no file")
            for path in found:
                real = os.path.realpath(path)
                if real in listed:
                    first = listed[real]
                    skips.count("duplicate_paths", f"{path}, listed twice" if path == first
                                else f"{path} is {first}")
                else:
                    listed[real] = path
                    files.append(path)
    if not files:
        raise FileNotFoundError("no input files given")
    return files


def _split_commas(pattern: str) -> list[str]:
    if os.path.lexists(pattern):
        return [pattern]
    if "," not in pattern:
        return [pattern.strip()] if pattern.strip() else []
    parts = [s.strip() for s in pattern.split(",") if s.strip()]
    # A file name may hold a comma: say so when one was split, in case that was not meant.
    logger.info("input %r is no path, so it was split at its commas into %s", pattern,
                ", ".join(repr(p) for p in parts))
    return parts


def _expand(part: str, skips: InputSkips) -> list[str]:
    if os.path.lexists(part):
        matched = [part]  # before glob: `data[1].txt` names a file as often as a pattern
    elif glob.has_magic(part):
        matched = _glob(part, skips)
    else:
        return []
    found = []
    for path in matched:
        if os.path.isdir(path):
            found.extend(_files_below(path, skips))
        elif os.path.isfile(path):
            found.append(path)
        elif os.path.islink(path):
            if path == part:
                raise FileNotFoundError(f"input {part!r} is a link to {os.readlink(part)!r}, "
                                        "which does not exist")
            skips.count("broken_links", f"{path} -> {os.readlink(path)}")
    return found


def _glob(pattern: str, skips: InputSkips) -> list[str]:
    """glob.glob(pattern, recursive=True), except that `**` enters each directory once.

    glob follows every link: through a loop (`ln -s . loop/self`) it lists the tree again at
    every depth up to the kernel's link limit (40), and through two loops in one directory
    2**40 times.
    """
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    components = pattern.split(os.sep)
    base = ""  # as in glob: "" is the current directory, and names below it stay relative
    while len(components) > 1 and not glob.has_magic(components[0]):
        base = os.path.join(base, components.pop(0)) or os.sep
    out: list[str] = []
    # One set per `**` of the pattern: a directory walked once by a `**` has given every match
    # below it for the rest of the pattern.
    visited: list[set] = [set() for _ in components]

    def match(directory: str, i: int) -> None:
        component, last = components[i], i == len(components) - 1
        if component == "**":
            real = os.path.realpath(directory or os.curdir)
            if real in visited[i]:
                return
            visited[i].add(real)
            if last:
                out.append(directory or os.curdir)  # the caller lists everything below it
                return
            match(directory, i + 1)
            for sub in _subdirectories(directory):
                if os.path.realpath(sub) in visited[i]:
                    skips.count("repeated_directories", _link_words(sub))
                    continue
                match(sub, i)
            return
        if glob.has_magic(component):
            names = [n for n in _listdir(directory) if fnmatch.fnmatchcase(n, component)
                     and (component.startswith(".") or not n.startswith("."))]
        else:
            names = [component] if os.path.lexists(os.path.join(directory, component)) else []
        for name in names:
            path = os.path.join(directory, name)
            if last:
                out.append(path)
            elif os.path.isdir(path):
                match(path, i + 1)

    match(base, 0)
    return sorted(dict.fromkeys(out))


def _listdir(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory or os.curdir))
    except OSError:
        return []


def _subdirectories(directory: str) -> list[str]:
    """Non-hidden subdirectories, sorted, real ones before links (so that a directory reached
    both ways is listed under its own name)."""
    subs = [os.path.join(directory, n) for n in _listdir(directory)
            if not n.startswith(".") and os.path.isdir(os.path.join(directory, n))]
    return sorted(subs, key=os.path.islink)


def _link_words(path: str, first: str | None = None) -> str:
    if os.path.islink(path):
        return f"{path} -> {os.readlink(path)}"
    # A real directory reached earlier through a link.
    return f"{path}, listed as {first}" if first else f"{path}, listed through a link"


def _files_below(directory: str, skips: InputSkips | None = None) -> list[str]:
    """Every non-hidden file below `directory`, sorted; a linked directory is followed once."""
    skips = skips if skips is not None else InputSkips()
    entered = {os.path.realpath(directory): directory}

    def unreadable(error: OSError) -> None:
        skips.count("unreadable_directories", f"{error.filename}: {reason_of(error)}")

    out = []
    for root, dirs, names in os.walk(directory, onerror=unreadable, followlinks=True):
        kept = []
        for path in _subdirectories(root):
            real = os.path.realpath(path)
            if real in entered:
                skips.count("repeated_directories", _link_words(path, entered[real]))
                continue
            entered[real] = path
            kept.append(os.path.basename(path))
        dirs[:] = sorted(kept)
        for name in sorted(n for n in names if not n.startswith(".")):
            path = os.path.join(root, name)
            if os.path.isfile(path):
                out.append(path)
            elif os.path.islink(path) and not os.path.exists(path):
                skips.count("broken_links", f"{path} -> {os.readlink(path)}")
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

    Raises DataError naming the file, what was expected and what was found.
    """
    kind = file_format(path, fmt)
    if kind == "parquet":
        _parquet_file(path, text_field)
        return
    try:
        with open_binary(path) as f:
            head = f.read(1 << 16)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as e:
        raise DataError(f"input {path}: cannot be read ({reason_of(e)})") from None
    if kind == "wikipedia" and head.strip() and b"<mediawiki" not in head:
        raise DataError(f"input {path}: not a MediaWiki XML export (no <mediawiki> element at "
                        "the start); use another --input_format for other files")
    if kind == "jsonl":
        first = next((line for line in head.split(b"\n") if line.strip()), None)
        if first is not None and len(first) < len(head):
            _check_json_field(path, first, text_field)


def _check_json_field(path: str, line: bytes, text_field: str) -> None:
    try:
        record = json.loads(line)
    except ValueError:
        raise DataError(f"input {path}: line 1 is not JSON; --input_format jsonl expects one "
                        "JSON object per line") from None
    if not isinstance(record, dict) or text_field not in record:
        fields = ", ".join(record) if isinstance(record, dict) else type(record).__name__
        raise DataError(f"input {path}: the first record has no field {text_field!r} "
                        f"(it has: {fields}); choose the text with --text_field")


def reason_of(e: BaseException) -> str:
    """Why a file could not be read or written, in a few words (for the one error line)."""
    return (getattr(e, "strerror", None) or str(e) or type(e).__name__).rstrip(".")


# -- raw documents ---------------------------------------------------------------------------


def read_documents(path: str, fmt: str, text_field: str, stats: ReadStats) -> Iterator:
    """Stream one file's raw documents in file order: a str (text, paragraphs separated by
    newlines), a list of sentences, or a WikiPage. `finish_document` turns each into sentences.

    Raises DataError naming the file when its content cannot be read as `fmt`.
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
        raise DataError(f"input {path}: cannot be read ({reason_of(e)})") from None


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
    # pyarrow (about 0.1 s) only for Parquet input; the generator and its workers start without.
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as e:
        raise DataError(f"input {path}: not a readable Parquet file ({reason_of(e)})") from None
    schema = pf.schema_arrow
    if text_field not in schema.names:
        raise DataError(f"input {path}: no column {text_field!r} (columns: "
                        f"{', '.join(schema.names)}); choose the text with --text_field")
    column_type = schema.field(text_field).type
    if not (pa.types.is_string(column_type) or pa.types.is_large_string(column_type)):
        raise DataError(f"input {path}: column {text_field!r} holds {column_type}, not strings")
    return pf


def _parquet_documents(path: str, text_field: str, stats: ReadStats) -> Iterator[str]:
    import pyarrow as pa  # only for Parquet input, as in _parquet_file

    pf = _parquet_file(path, text_field)
    try:
        # Record batches keep memory at one batch, whatever the file's size.
        for batch in pf.iter_batches(batch_size=256, columns=[text_field]):
            for text in batch.column(0).to_pylist():
                stats.lines += 1
                if text is None:
                    stats.null_texts += 1
                else:
                    yield text
    except pa.ArrowException as e:  # a damaged page (an OSError is read_documents' to name)
        raise DataError(f"input {path}: not a readable Parquet file ({reason_of(e)})") from None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _wiki_pages(path: str, stats: ReadStats) -> Iterator[WikiPage]:
    namespaces = _DEFAULT_NAMESPACES
    with open_binary(path) as f:
        events = ET.iterparse(f, events=("start", "end"))
        try:
            _, root = next(events)
            if _local(root.tag) != "mediawiki":
                raise DataError(f"input {path}: not a MediaWiki XML export (root element "
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
            raise DataError(f"input {path}: malformed XML ({e})") from None


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


def chunked(docs: Iterable, size: int) -> Iterator[tuple[int, int, list]]:
    """Documents -> (chunk index, index of its first document, documents), `size` at a time."""
    it = iter(docs)
    for index in itertools.count():
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield index, index * size, chunk


# -- Wikipedia -------------------------------------------------------------------------------

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
    """An article's wikitext -> the sentences of its prose (albert.data.wikitext); None for a
    disambiguation page. Sentences dropped for a hole or for markup are counted in `stats`."""
    # mwparserfromhell (wikitext's parser) only for Wikipedia dumps, and only in the workers
    # that read them.
    import mwparserfromhell

    from albert.data import wikitext

    try:
        code = wikitext.parse(page.text)
    except mwparserfromhell.parser.ParserError:
        return []
    if _is_disambiguation(page.title, code):
        stats.disambiguation_pages += 1
        return None
    found = wikitext.sentences(wikitext.plain_text(code, page.namespaces))
    stats.sentences_with_holes += found.with_holes
    stats.sentences_with_markup += found.with_markup
    return found.sentences


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

# -- the extracted text, to read ------------------------------------------------------------


def _finish_chunk(raw_docs: list) -> tuple[list[list[str]], ReadStats]:
    stats = ReadStats()
    docs = [d for d in (finish_document(raw, stats) for raw in raw_docs) if d]
    return docs, stats


def map_chunks(fn, chunks: Iterable, processes: int, stats: ReadStats) -> Iterator:
    """fn(chunk) -> (items, ReadStats) over `chunks` in `processes` worker processes (here when
    1), yielding every item in corpus order and adding each chunk's stats to `stats`."""
    if processes == 1:
        for raw in chunks:
            items, chunk_stats = fn(raw)
            stats.add(chunk_stats)
            yield from items
        return
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(processes, mp_context=ctx, initializer=die_with_parent,
                                initargs=(os.getpid(),)) as pool:
        pending: list[cf.Future] = []
        for raw in chunks:
            pending.append(pool.submit(fn, raw))
            # A bounded number of chunks in flight, collected in order: the output keeps the
            # corpus order, and memory does not grow with the corpus.
            while len(pending) >= 2 * processes:
                items, chunk_stats = pending.pop(0).result()
                stats.add(chunk_stats)
                yield from items
        for future in pending:
            items, chunk_stats = future.result()
            stats.add(chunk_stats)
            yield from items


def iter_documents(files: Iterable[str], fmt: str, stats: ReadStats, text_field: str = "text",
                   processes: int = 1) -> Iterator[list[str]]:
    """Every file's documents as lists of sentences, in corpus order, counted in `stats`; the
    wikitext parsing spread over `processes` worker processes (in this one when 1)."""
    chunks = (raw for path in files
              for _, _, raw in chunked(read_documents(path, fmt, text_field, stats), 64))
    yield from map_chunks(_finish_chunk, chunks, processes, stats)
