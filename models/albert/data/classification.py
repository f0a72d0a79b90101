"""Sentence and sentence-pair classification / regression data: a TSV, CSV or JSON-lines file ->
examples -> features (cached as TFRecords) -> batches padded to their own longest sequence.

Files, chosen by name:
  .tsv            fields split at tabs, quotes are plain text (as GLUE's files, whose sentences
                  hold unbalanced quotes, are read by BERT/ALBERT and transformers)
  .csv            RFC 4180 quoting (a quoted field may hold commas and newlines)
  .jsonl, .json   one JSON object per line; columns are its keys
A header row names the columns (--text_a, --text_b, --label); a column is given by that name or,
with or without a header, by its 0-based position (the one way without one: --no_header, CoLA's
files), so one flag finds a column whose name differs between files. Blank lines are skipped.
Every row must have as many fields as the header (or, without one, the first row): a row that does
not is an error naming its line.

Features are BERT's: [CLS] a [SEP] for one text, [CLS] a [SEP] b [SEP] for a pair (token types 0
then 1), the longer text of a pair cut first, one token at a time, to fit max_seq_length. They are
cached unpadded; a batch is padded to its longest sequence (rounded up to pad_to_multiple_of),
or to max_seq_length with padding="max".
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import hashlib
import json
import logging
import math
import os
import shlex
from importlib import metadata

from albert.data.tokenization import text_rule, tokenizer_config
from albert.errors import DataError, SettingError

logger = logging.getLogger(__name__)

CACHE_VERSION = "2"  # bump when the feature layout or its key changes
TASKS = ("classification", "regression")


class ClassificationDataError(DataError):
    """A data file that cannot be used; the message names the file (and line) and the problem."""


@dataclasses.dataclass(frozen=True)
class Columns:
    """Where the texts and the label are: header names, or 0-based positions without a header."""

    text_a: str | int
    text_b: str | int | None = None
    label: str | int | None = "label"
    header: bool = True


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """A GLUE task's files: their columns, labels (in the order of the reference processors) and
    the metric its leaderboard reports first. predict_columns: the test file's, when they differ
    from train/dev's."""

    columns: Columns
    task: str
    labels: tuple[str, ...] | None
    metric: str
    predict_columns: Columns | None = None


# Column names of the GLUE distribution's train/dev files (test files share the text columns and
# have no label). CoLA's train/dev have no header: source, label, original annotation, sentence;
# its test file has one: index, sentence. MNLI's dev file is dev_matched.tsv (or
# dev_mismatched.tsv).
GLUE_TASKS = {
    "cola": GlueTask(Columns(3, None, 1, header=False), "classification", ("0", "1"), "mcc",
                     predict_columns=Columns("sentence", None, None)),
    "sst2": GlueTask(Columns("sentence", None, "label"), "classification", ("0", "1"),
                     "accuracy"),
    "mrpc": GlueTask(Columns("#1 String", "#2 String", "Quality"), "classification", ("0", "1"),
                     "f1"),
    "qqp": GlueTask(Columns("question1", "question2", "is_duplicate"), "classification",
                    ("0", "1"), "f1"),
    "mnli": GlueTask(Columns("sentence1", "sentence2", "gold_label"), "classification",
                     ("contradiction", "entailment", "neutral"), "accuracy"),
    "qnli": GlueTask(Columns("question", "sentence", "label"), "classification",
                     ("entailment", "not_entailment"), "accuracy"),
    "rte": GlueTask(Columns("sentence1", "sentence2", "label"), "classification",
                    ("entailment", "not_entailment"), "accuracy"),
    "stsb": GlueTask(Columns("sentence1", "sentence2", "score"), "regression", None, "pearson"),
}


@dataclasses.dataclass
class Example:
    index: int  # position among the file's rows, from 0 (GLUE's test files number them so)
    line: int  # where the row is in the file, for messages
    text_a: str
    text_b: str | None
    label: str | None  # as written; None in an unlabelled file


# -- reading ----------------------------------------------------------------------------------


def file_format(path: str) -> str:
    name = path.lower()
    for suffix, kind in ((".tsv", "tsv"), (".csv", "csv"), (".jsonl", "jsonl"),
                         (".json", "jsonl")):
        if name.endswith(suffix):
            return kind
    raise ClassificationDataError(f"{path}: cannot tell its format from the name; expected a "
                                  ".tsv, .csv or .jsonl (JSON lines) file")


def _rows(path: str, kind: str):
    """(line number, fields) of each non-blank row of a TSV or CSV file."""
    # newline="\n": a stray carriage return inside a field is text, not a line break.
    with open(path, encoding="utf-8-sig", newline="" if kind == "csv" else "\n") as f:
        if kind == "tsv":
            for number, line in enumerate(f, 1):
                line = line.rstrip("\n").rstrip("\r")
                if line.strip():
                    yield number, line.split("\t")
            return
        reader = csv.reader(f, strict=True)
        first = 1
        try:
            for fields in reader:
                if any(field.strip() for field in fields):
                    yield first, fields
                first = reader.line_num + 1
        except csv.Error as e:
            raise ClassificationDataError(f"{path} line {reader.line_num}: {e}") from None


def _tsv_hint(fields: list[str], width: int | None) -> str:
    """What most likely broke a TSV row that has the wrong number of fields (width: how many it
    should have; None: not known, and only a quoted line break is suggested)."""
    if sum(field.count('"') for field in fields) % 2:
        # A text quoted across lines ("...\n...") is two rows here: in a .tsv quotes are
        # plain text (GLUE's sentences hold unbalanced ones), so they cannot protect a newline.
        return (" (a line break inside a quoted text? In a .tsv quotes are plain text and every "
                "line is a row: remove the line break, or save the file as .csv, where a quoted "
                "field may span lines)")
    if width is None:
        return ""
    if len(fields) > width:
        return " (a tab inside a text?)"
    return " (a missing field, or a line break inside a text?)"


def _column_index(path: str, header: list[str] | None, column, flag: str) -> int:
    """The position of `column` in the rows: a name of the header, else (with or without one)
    a 0-based position, so that one flag finds a column whose name differs between files
    (SST-2's train file says sentence, its dev file content)."""
    if header is None:
        return column
    if column in header:
        named = header.index(column)
        position = int(column) if column.isascii() and column.isdigit() else None
        if position is not None and position < len(header) and position != named:
            # A headerless file read without --no_header: its first row, taken as the header,
            # may hold the very number given as a position (a label "1" above --text_a 1).
            raise ClassificationDataError(
                f"{path}: {flag} {column} is ambiguous: the header row names column {named} "
                f"{column!r}, and position {position} is column {header[position]!r}; if the "
                f"file has no header row pass --no_header, else name the column ({flag} "
                f"{shlex.quote(header[position])} for position {position})")
        return named
    if isinstance(column, int) or (column.isascii() and column.isdigit()):
        if int(column) >= len(header):
            raise ClassificationDataError(
                f"{path}: {flag} {column} is past its {len(header)} columns (numbered from 0: "
                + ", ".join(repr(h) for h in header) + ")")
        return int(column)
    raise ClassificationDataError(
        f"{path} has no column {column!r} ({flag}); its columns are: "
        + ", ".join(repr(h) for h in header) + " (or give a column's position, from 0)")


def _check_header(path: str, header: list[str]) -> None:
    """Refuse a header that names a column twice: which of the two a flag meant is a guess."""
    seen = {}
    for position, name in enumerate(header):
        if name and name in seen:
            raise ClassificationDataError(
                f"{path}: its header names column {name!r} twice (positions {seen[name]} and "
                f"{position}, from 0); rename one so that --text_a/--text_b/--label say which "
                "(or, if the file has no header row, pass --no_header)")
        seen.setdefault(name, position)


# Column names a header row commonly holds (GLUE's and the usual ones): a label with one of
# these names, seen once, is the header row of a file read with --no_header.
_COLUMN_NAMES = {name.lower() for task in GLUE_TASKS.values()
                 for cols in (task.columns, task.predict_columns) if cols is not None
                 for name in (cols.text_a, cols.text_b, cols.label) if isinstance(name, str)}
_COLUMN_NAMES |= {"label", "labels", "class", "category", "target", "score", "text",
                  "sentence", "index", "id"}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_not_a_header(path: str, examples: list[Example], fields: list[str], where: dict,
                        line: int) -> None:
    """With --no_header, the first row is an example. When it looks like a header instead (its
    label appears only there and is a column name, or is the one word among numbers), training
    would learn a label named after a column: refuse, saying how to read the header."""
    if "--label" not in where:
        return
    first = examples[0].label
    rest = [e.label for e in examples[1:]]
    if first in rest:
        return
    if first.lower() in _COLUMN_NAMES:
        why = "a column name"
    elif rest and not _is_number(first) and all(_is_number(label) for label in rest):
        why = "the one label that is not a number"
    else:
        return
    names = " ".join(f"{flag} {shlex.quote(fields[index].strip())}"
                     for flag, index in where.items())
    raise ClassificationDataError(
        f"{path} line {line} looks like a header, but --no_header reads it as an example: its "
        f"label {first!r} appears only there and is {why}. Drop --no_header and name the "
        f"columns ({names}), or remove that row")


def _check_header_is_no_row(path: str, header: list[str], label_index: int,
                            examples: list[Example]) -> None:
    """Without --no_header the first row is the header. When its label cell is one of the rows'
    labels ("0" above rows labelled 0 and 1), it is most likely a row of a headerless file,
    dropped silently: refuse, saying how to read it."""
    name = header[label_index]
    if any(e.label == name for e in examples):
        raise ClassificationDataError(
            f"{path}: its first row, read as the header, has {name!r} in the label column, and "
            f"{name!r} is also a label of its rows: the first row looks like data. If the file "
            "has no header row pass --no_header; else rename that column")


def _warn_if_a_header(path: str, first: list[str], numbers: list[bool], texts: list[int],
                      line: int) -> None:
    """With --no_header, a file read only to predict has no label to tell a header by (see
    _check_not_a_header); its first row is predicted like any other. When that row looks like a
    header (its texts are column names, or a column holds a word above numbers), say so."""
    names = [first[i].strip() for i in texts]
    if names and all(name.lower() in _COLUMN_NAMES for name in names):
        why = "its text " + ", ".join(repr(n) for n in names) + " is a column name"
    else:
        above = [i for i, number in enumerate(numbers)
                 if number and first[i].strip() and not _is_number(first[i])]
        if not above:
            return
        why = f"its column {above[0]} holds {first[above[0]].strip()!r} above numbers"
    logger.warning("%s line %d looks like a header (%s), but --no_header reads it as a text to "
                   "predict, and predicts it: drop --no_header and name the columns, or remove "
                   "that row", path, line, why)


def _read_table(path: str, kind: str, columns: Columns, labelled: bool) -> list[Example]:
    rows = _rows(path, kind)
    header = None
    width = None
    if columns.header:
        first = next(rows, None)
        if first is None:
            raise ClassificationDataError(f"{path} is empty (expected a header row, then rows)")
        header = [h.strip() for h in first[1]]
        _check_header(path, header)
        width = len(header)
    wanted = [("--text_a", columns.text_a), ("--text_b", columns.text_b)]
    if labelled or (header is not None and columns.label in header):
        wanted.append(("--label", columns.label))
    where = {flag: _column_index(path, header, col, flag) for flag, col in wanted
             if col is not None}
    examples = []
    first_fields = None
    numbers = None  # without a header, to predict: whether each column holds numbers below row 1
    for number, fields in rows:
        if width is None:
            first_fields = fields
            width = len(fields)
            numbers = [False] * width if labelled else [True] * width
            for flag, index in where.items():
                if index >= width:
                    raise ClassificationDataError(
                        f"{path} line {number}: {flag} {index} is past the row's {width} "
                        "columns (numbered from 0)"
                        + (_tsv_hint(fields, None) if kind == "tsv" else ""))
        if len(fields) != width:
            expected = "the header" if header is not None else "the first row"
            raise ClassificationDataError(
                f"{path} line {number}: {len(fields)} fields where {expected} has {width}"
                + (_tsv_hint(fields, width) if kind == "tsv" else ""))
        if examples and numbers is not None:
            for i, field in enumerate(fields):
                numbers[i] = numbers[i] and _is_number(field)
        label = fields[where["--label"]].strip() if "--label" in where else None
        examples.append(Example(len(examples), number, fields[where["--text_a"]],
                                fields[where["--text_b"]] if "--text_b" in where else None,
                                label if labelled else None))
    if header is not None and labelled and "--label" in where:
        _check_header_is_no_row(path, header, where["--label"], examples)
    if header is None and labelled and examples:
        _check_not_a_header(path, examples, first_fields, where, examples[0].line)
    elif header is None and len(examples) > 1:
        _warn_if_a_header(path, first_fields, numbers,
                          [where[f] for f in ("--text_a", "--text_b") if f in where],
                          examples[0].line)
    return examples


class _JsonObject(dict):
    """A JSON object that remembers the keys it was given more than once."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.repeated = [k for k, n in collections.Counter(k for k, _ in pairs).items() if n > 1]


def _read_jsonl(path: str, columns: Columns, labelled: bool) -> list[Example]:
    for flag, col in (("--text_a", columns.text_a), ("--text_b", columns.text_b),
                      ("--label", columns.label)):
        if isinstance(col, int):
            raise ClassificationDataError(f"{path} is JSON lines: {flag} must be a key, not the "
                                          f"position {col} (--no_header is for TSV/CSV)")
    examples = []
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line, object_pairs_hook=_JsonObject)
            except json.JSONDecodeError as e:
                raise ClassificationDataError(f"{path} line {number}: not valid JSON "
                                              f"({e.msg})") from None
            if not isinstance(row, dict):
                raise ClassificationDataError(f"{path} line {number}: expected a JSON object, "
                                              f"got {type(row).__name__}")
            if row.repeated:
                # json keeps the last of a repeated key: which one was meant is a guess.
                raise ClassificationDataError(f"{path} line {number}: key {row.repeated[0]!r} "
                                              "appears twice in the object; keep one")
            values = {}
            for flag, key in (("--text_a", columns.text_a), ("--text_b", columns.text_b),
                              ("--label", columns.label if labelled else None)):
                if key is None:
                    continue
                if key not in row:
                    raise ClassificationDataError(
                        f"{path} line {number}: no key {key!r} ({flag}); this row has: "
                        + ", ".join(repr(k) for k in row))
                value = row[key]
                if flag != "--label" and not isinstance(value, str):
                    raise ClassificationDataError(f"{path} line {number}: {key!r} must be a "
                                                  f"string, got {json.dumps(value)[:40]}")
                if flag == "--label" and (value is None or isinstance(value, dict | list)):
                    raise ClassificationDataError(f"{path} line {number}: label {key!r} must "
                                                  f"be a string or number, got "
                                                  f"{json.dumps(value)[:40]}")
                values[flag] = value
            label = values.get("--label")
            if isinstance(label, bool):
                label = str(label).lower()
            examples.append(Example(len(examples), number, values["--text_a"],
                                    values.get("--text_b"),
                                    None if label is None else str(label).strip()))
    return examples


def read_examples(path: str, columns: Columns, labelled: bool = True) -> list[Example]:
    """The rows of a TSV / CSV / JSON-lines file as examples. labelled=False (a file to
    predict): the label column is not needed (and ignored when present)."""
    kind = file_format(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist")
    try:
        if kind == "jsonl":
            examples = _read_jsonl(path, columns, labelled)
        else:
            examples = _read_table(path, kind, columns, labelled)
    except UnicodeDecodeError as e:
        raise ClassificationDataError(f"{path} is not UTF-8 text (byte {e.start}: "
                                      f"{e.reason})") from None
    if not examples:
        raise ClassificationDataError(f"{path} has no rows"
                                      + (" after its header" if columns.header
                                         and kind != "jsonl" else ""))
    if labelled:
        _check_texts_are_not_labels(path, examples, columns)
    return examples


def _check_texts_are_not_labels(path: str, examples: list[Example], columns: Columns) -> None:
    """Refuse a text column whose every value is one of the file's labels: the label column read
    as the text (a column flag pointing at it), which scores perfectly and learns nothing."""
    labels = {e.label for e in examples}
    for flag, column, texts in (("--text_a", columns.text_a, [e.text_a for e in examples]),
                                ("--text_b", columns.text_b, [e.text_b for e in examples])):
        if column is None or any(t is None or t.strip() not in labels for t in texts):
            continue
        raise ClassificationDataError(
            f"{path}: every {flag} text ({flag} {column}) is one of the labels "
            + ", ".join(repr(x) for x in sorted(labels)[:5]) + (", ..." if len(labels) > 5
                                                              else "")
            + f" (--label {columns.label}): the label column is read as the text; point "
            f"{flag} at the text column"
            + (" (or pass --no_header if the file has no header row)"
               if columns.header else ""))


# -- labels -----------------------------------------------------------------------------------


def label_set(examples: list[Example]) -> tuple[str, ...]:
    """The labels a training file uses, sorted (as numbers when they all are whole numbers, so
    "2" < "10"), which fixes their ids."""
    labels = {e.label for e in examples}

    def whole(text):
        try:
            int(text)
            return True
        except ValueError:
            return False

    if all(whole(label) for label in labels):
        return tuple(sorted(labels, key=int))
    return tuple(sorted(labels))


def label_values(examples: list[Example], path: str, task: str,
                 labels: tuple[str, ...] | None) -> list:
    """Each example's label as a class id (classification) or a float (regression); an error
    names the line of the first label that is not in `labels` or not a number."""
    if task == "regression":
        values = []
        for e in examples:
            try:
                value = float(e.label)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise ClassificationDataError(f"{path} line {e.line}: label {e.label!r} is not "
                                              "a finite number (--task regression)")
            values.append(value)
        return values
    ids = {label: i for i, label in enumerate(labels)}
    for e in examples:
        if e.label not in ids:
            shown = ", ".join(repr(x) for x in labels[:20]) + (", ..." if len(labels) > 20
                                                                else "")
            raise ClassificationDataError(
                f"{path} line {e.line}: label {e.label!r} is not one of the {len(labels)} "
                f"labels ({shown}); give the full set with --labels")
    return [ids[e.label] for e in examples]


# -- features ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FeatureSettings:
    """Everything that decides a file's features (and so its cache key)."""

    max_seq_length: int
    task: str
    labels: tuple[str, ...] | None
    columns: Columns
    # An unlabelled read of a labelled file (a dev set predicted) caches label -1 for every row;
    # without this in the key, scoring that file later would reuse those features.
    labelled: bool
    version: str = CACHE_VERSION

    def __post_init__(self):
        if self.max_seq_length < 8:
            raise SettingError(f"{{max_seq_length}} must be at least 8, got {self.max_seq_length}",
                               "max_seq_length")
        if self.task not in TASKS:
            raise SettingError(f"{{task}} must be one of {TASKS}, got {self.task!r}", "task")


@dataclasses.dataclass
class Feature:
    index: int
    input_ids: list[int]
    token_type_ids: list[int]
    label: int | float  # -1 (classification) or 0.0 (regression) in an unlabelled file


def truncate_pair(a: list, b: list | None, budget: int) -> bool:
    """Cut a (and b) in place to `budget` tokens together, from the end of the longer one first
    (BERT's rule). Returns whether anything was cut."""
    if b is None:
        cut = len(a) > budget
        del a[budget:]
        return cut
    cut = False
    while len(a) + len(b) > budget:
        cut = True
        (a if len(a) > len(b) else b).pop()
    return cut


def featurize(examples: list[Example], labels: list | None, tokenizer,
              max_seq_length: int) -> tuple[list[Feature], dict]:
    """Examples (and their label values, None when unlabelled) -> features and statistics:
    examples, truncated (cut to fit), mean_length and max_length (tokens, specials included)."""
    pair = examples[0].text_b is not None
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    tokens_a = tokenizer([e.text_a for e in examples], add_special_tokens=False)["input_ids"]
    tokens_b = (tokenizer([e.text_b for e in examples], add_special_tokens=False)["input_ids"]
                if pair else [None] * len(examples))
    features, truncated, total, longest = [], 0, 0, 0
    for i, e in enumerate(examples):
        a, b = list(tokens_a[i]), (list(tokens_b[i]) if pair else None)
        truncated += truncate_pair(a, b, max_seq_length - (3 if pair else 2))
        ids = [cls_id, *a, sep_id]
        types = [0] * len(ids)
        if pair:
            ids += [*b, sep_id]
            types += [1] * (len(b) + 1)
        label = labels[i] if labels is not None else -1
        features.append(Feature(e.index, ids, types, label))
        total += len(ids)
        longest = max(longest, len(ids))
    stats = {"examples": len(features), "truncated": truncated,
             "mean_length": total / max(len(features), 1), "max_length": longest}
    return features, stats


def cache_key(path: str, settings: FeatureSettings, spm_model: str, training: bool) -> str:
    """Of the file's and the vocabulary's bytes, the settings (columns, task, labels, whether
    labels were read), `training`, the tokenizer library's version and the text rule."""
    if os.path.isdir(spm_model):
        spm_model = os.path.join(spm_model, "spiece.model")
    h = hashlib.sha256()
    for file in (path, spm_model):
        part = hashlib.sha256()
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                part.update(block)
        h.update(part.digest())
    try:
        # Features are transformers' tokenization of the vocabulary: a new release may split
        # text differently.
        tokenizer_version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        tokenizer_version = None
    # The vocabulary's text rule is the tokenizer's settings: features made under another rule
    # (its tokenizer_config.json changed, or written by an earlier version) are stale.
    h.update(json.dumps([dataclasses.asdict(settings), training, tokenizer_version,
                         tokenizer_config(text_rule(spm_model))], sort_keys=True).encode())
    return h.hexdigest()[:16]


def read_feature_meta(prefix: str) -> dict:
    with open(prefix + ".meta.json", encoding="utf-8") as f:
        return json.load(f)
