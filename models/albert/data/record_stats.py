"""Pretraining records' statistics against what google-research/albert's create_pretraining_data
makes of the same text: the masked share, the masked runs' lengths in words, the [MASK] / random /
kept split, the share of SOP label 1 (swapped pairs), and how full the sequences are.

Google's rules, as its create_pretraining_data.py states them (defaults masked_lm_prob 0.15,
max_predictions_per_seq 20, ngram 3, short_seq_prob 0.1, random_next_sentence off), restated here
so that they can be run on the same text:
- Packing: a document's lines (sentences) are gathered until they reach the target length
  (max_seq_length - 3; for a short_seq_prob share of documents per pass, a random target in
  [2, max_seq_length - 3]) or the document ends. A gathering of two or more lines splits at a
  random line into A and B, swapped with probability 0.5 (label 1); one of a single line takes its B
  from a random other document, also label 1. A pair longer than max_seq_length - 3 loses tokens
  from its longer side; a line is never cut.
- Masking: min(max_predictions_per_seq, max(1, round(len * masked_lm_prob))) positions of the
  sequence (len counts [CLS] and [SEP]). Words (a start piece and the pieces after it) are visited
  in random order; each draws n <= ngram words with P(n) proportional to 1/n, shortened while it
  would pass the count, skipped if still too long or if it touches a chosen token. Each chosen
  token becomes [MASK] 80%, stays 10%, becomes a uniformly drawn vocabulary piece 10%. Its
  start-piece rule is ours less one mark: the apostrophe is not punctuation to it.

Records show runs of adjacent masked tokens, not the spans drawn (two spans that touch read as one
run), so both sides are compared by runs, counted in words by token_boundary. The expected values
are these rules run here: the masking rows by google's masking of the records' own sequences
(tokens restored from masked_lm_ids), `REPEATS` times; the sequence rows by google's packing of the
corpus the records were made from (summary.json's inputs and settings), `PASSES` passes. A
tolerance is 4 standard errors of the difference: masking rows paired per record, sequence rows
from the spread between google's passes, scaled to the records' dupe_factor.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import string

import numpy as np

from albert.data.corpus import ReadStats, finish_document, read_documents
from albert.data.pretraining import CLS_ID, MASK_ID, SEP_ID, is_start_piece
from albert.data.tokenization import preprocess_text

REPEATS = 4  # google maskings of each record
PASSES = 20  # google packings of the corpus
TOLERANCE_SE = 4
_FLOOR = 1e-9  # a share fixed by the lengths (the masked one) has no spread: rounding aside
# google-research's flag defaults, for records that come without a summary.json.
GOOGLE_DEFAULTS = {"masked_lm_prob": 0.15, "max_predictions_per_seq": 20, "ngram": 3,
                   "short_seq_prob": 0.1, "dupe_factor": 40}
_GOOGLE_MARKS = set(string.punctuation) - set("'<=>")

MASKING = ("masked share of tokens", "masked runs of 1 word", "masked runs of 2 words",
           "masked runs of 3 words", "masked runs of 4+ words", "masked -> [MASK]",
           "masked -> random token", "masked -> kept")
SEQUENCES = ("SOP label 1 (swapped)", "fill (tokens / max_seq_length)",
             "short (< half of max_seq_length)", "full (= max_seq_length)")
STATISTICS = MASKING + SEQUENCES
_COLUMN = {name: i for i, name in enumerate(STATISTICS)}


def google_start_piece(piece: str) -> bool:
    """google-research's start-piece rule: ours, except that an apostrophe is a letter-like mark
    (so "'s" or "':" starts a word to google and continues one to us)."""
    return (piece.startswith(("\u2581", "<")) or piece in _GOOGLE_MARKS
            or not all(c.lower() in string.ascii_lowercase or c in _GOOGLE_MARKS for c in piece))


class Vocabulary:
    """What the statistics need of a SentencePiece model: its size, both start-piece tables."""

    def __init__(self, sp, keep_accents: bool = False):
        self.sp = sp
        # the vocabulary's text rule (data.tokenization.text_rule), which the corpus is read under
        self.keep_accents = keep_accents
        self.size = sp.GetPieceSize()
        pieces = [sp.IdToPiece(i) for i in range(self.size)]
        self.ours = [is_start_piece(p) for p in pieces]
        self.google = [google_start_piece(p) for p in pieces]


def _runs(positions, boundary) -> list[int]:
    """Sorted masked positions -> the words in each run of adjacent ones."""
    runs: list[int] = []
    words, prev = 0, -2
    for p in positions:
        if p != prev + 1:
            if words:
                runs.append(words)
            words = 1
        elif boundary[p]:
            words += 1
        prev = p
    if words:
        runs.append(words)
    return runs


def masking_counts(ids, boundary, positions, labels) -> np.ndarray:
    """One sequence's masking rows as (numerator, denominator) pairs; `ids` unpadded, masked."""
    out = np.zeros((len(STATISTICS), 2))
    k = len(positions)
    out[0] = k, len(ids)
    runs = _runs(positions, boundary)
    for words in runs:
        out[min(words, 4), 0] += 1
    out[1:5, 1] = len(runs)
    for p, label in zip(positions, labels, strict=True):
        out[5 if ids[p] == MASK_ID else 7 if ids[p] == label else 6, 0] += 1
    out[5:8, 1] = k
    return out


def sequence_counts(length: int, label: int, max_seq_length: int) -> np.ndarray:
    out = np.zeros((len(STATISTICS), 2))
    out[8] = label, 1
    out[9] = length / max_seq_length, 1
    out[10] = length < max_seq_length / 2, 1
    out[11] = length == max_seq_length, 1
    return out


# -- google-research's rules ----------------------------------------------------------------------


def google_masking(tokens, vocab: Vocabulary, masked_lm_prob, max_predictions, ngram, rng):
    """google's masking of one sequence -> (masked ids, its token_boundary, positions, labels)."""
    start = vocab.google
    words: list[list[int]] = []
    boundary = [0] * len(tokens)
    for i, t in enumerate(tokens):
        if t == CLS_ID or t == SEP_ID:
            boundary[i] = 1
            continue  # a piece after [SEP] that starts no word joins the word before it
        if words and not start[t]:
            words[-1].append(i)
        else:
            words.append([i])
            boundary[i] = int(start[t])
    count = min(max_predictions, max(1, round(len(tokens) * masked_lm_prob)))
    sizes = range(1, ngram + 1)
    weights = [1 / n for n in sizes]
    order = list(range(len(words)))
    rng.shuffle(order)
    out = list(tokens)
    labels: dict[int, int] = {}
    for w in order:
        if len(labels) >= count:
            break
        # n words, fewer where the sequence ends: google slices past the end.
        n = rng.choices(sizes, weights)[0]
        span = [p for word in words[w:w + n] for p in word]
        while len(labels) + len(span) > count and n > 1:
            n -= 1
            span = [p for word in words[w:w + n] for p in word]
        if len(labels) + len(span) > count or any(p in labels for p in span):
            continue
        for p in span:
            labels[p] = tokens[p]
            if rng.random() < 0.8:
                out[p] = MASK_ID
            elif rng.random() >= 0.5:
                out[p] = rng.randrange(vocab.size)  # any piece, the special ones too
    positions = sorted(labels)
    return out, boundary, positions, [labels[p] for p in positions]


def google_packing(lengths: list[list[int]], max_seq_length: int, short_seq_prob: float, rng):
    """One pass of google's packing over documents given as sentence lengths: for each document,
    its instances as (tokens used, label)."""
    max_tokens = max_seq_length - 3
    for index, doc in enumerate(lengths):
        target = max_tokens
        if rng.random() < short_seq_prob:
            target = rng.randint(2, max_tokens)
        instances = []
        chunk: list[int] = []
        gathered = 0
        for i, length in enumerate(doc):
            chunk.append(length)
            gathered += length
            if i != len(doc) - 1 and gathered < target:
                continue
            if len(chunk) >= 2:
                a_end = rng.randint(1, len(chunk) - 1)
                a, b = sum(chunk[:a_end]), sum(chunk[a_end:])
                label = int(rng.random() < 0.5)
            else:
                a, b, label = chunk[0], 0, 1
                other = index
                for _ in range(10):
                    other = rng.randrange(len(lengths))
                    if other != index:
                        break
                source = lengths[other]
                for s in source[rng.randrange(len(source)):]:
                    b += s
                    if b >= target - a:
                        break
            instances.append((min(a + b, max_tokens) + 3, label))
            chunk, gathered = [], 0
        yield instances


def corpus_sentence_lengths(files, input_format, text_field, sp,
                            keep_accents: bool = False) -> list[list[int]]:
    """The corpus as google reads it, one sentence a line and documents apart (our reader gives
    that layout) -> each document's tokenized sentence lengths, empty ones left out."""
    stats = ReadStats()
    docs = []
    for path in files:
        for raw in read_documents(path, input_format, text_field, stats):
            sentences = finish_document(raw, stats)
            if not sentences:
                continue
            texts = [t for t in (preprocess_text(s, keep_accents) for s in sentences) if t]
            doc = [len(ids) for ids in sp.EncodeAsIds(texts) if ids]
            if doc:
                docs.append(doc)
    return docs


# -- the comparison -----------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    name: str
    ours: float
    google: float | None
    tolerance: float | None

    @property
    def ok(self) -> bool | None:
        if self.google is None:
            return None
        return abs(self.ours - self.google) <= self.tolerance


def _ratio(counts: np.ndarray, column: int) -> float:
    den = counts[:, column, 1].sum()
    return float(counts[:, column, 0].sum() / den) if den else float("nan")


def _linearized(counts: np.ndarray, column: int) -> np.ndarray:
    """Each unit's share of a ratio-of-sums' error (the delta method): their root sum of squares
    is its standard error."""
    num, den = counts[:, column, 0], counts[:, column, 1]
    total = den.sum()
    return (num - num.sum() / total * den) / total if total else np.zeros_like(num)


class Comparison:
    """Records fed one at a time (`add`), then google's packing (`add_packing`), then `rows`."""

    def __init__(self, vocab: Vocabulary, max_seq_length: int, max_predictions: int,
                 settings: dict | None = None, seed: int = 0):
        self.vocab = vocab
        self.max_seq_length, self.max_predictions = max_seq_length, max_predictions
        self.settings = {**GOOGLE_DEFAULTS, **(settings or {})}
        self.rng = random.Random(seed)
        self.ours: list[np.ndarray] = []
        self.google: list[np.ndarray] = []
        self.packing: list[np.ndarray] | None = None
        self.passes = 0

    def add(self, ids, boundary, positions, labels, sop_label: int) -> None:
        """One record, unpadded: `ids` its input_ids up to the last used token, `boundary` its
        token_boundary (None: the vocabulary's start pieces, as our generator marks them),
        `positions` and `labels` its masked positions and ids with weight 1."""
        if boundary is None:
            boundary = [int(self.vocab.ours[t]) for t in ids]
        ours = masking_counts(ids, boundary, positions, labels)
        ours += sequence_counts(len(ids), sop_label, self.max_seq_length)
        self.ours.append(ours)
        tokens = list(ids)
        for p, label in zip(positions, labels, strict=True):
            tokens[p] = label
        google = np.zeros_like(ours)
        for _ in range(REPEATS):
            google += masking_counts(*google_masking(
                tokens, self.vocab, self.settings["masked_lm_prob"], self.max_predictions,
                self.settings["ngram"], self.rng))
        self.google.append(google / REPEATS)

    def add_packing(self, lengths: list[list[int]], passes: int = PASSES) -> None:
        """google's packing of the corpus (sentence lengths per document), `passes` times."""
        self.packing = []
        for _ in range(passes):
            counts = np.zeros((len(STATISTICS), 2))
            for instances in google_packing(lengths, self.max_seq_length,
                                            self.settings["short_seq_prob"], self.rng):
                for length, label in instances:
                    counts += sequence_counts(length, label, self.max_seq_length)
            self.packing.append(counts)
        self.passes = passes

    def rows(self) -> list[Row]:
        ours, google = np.array(self.ours), np.array(self.google)
        rows = []
        for name in MASKING:
            c = _COLUMN[name]
            diff = _linearized(ours, c) - _linearized(google, c)  # paired: the same records
            rows.append(Row(name, _ratio(ours, c), _ratio(google, c),
                            TOLERANCE_SE * float(np.sqrt((diff ** 2).sum())) + _FLOOR))
        packing = np.array(self.packing) if self.packing else None
        for name in SEQUENCES:
            c = _COLUMN[name]
            if packing is None:
                rows.append(Row(name, _ratio(ours, c), None, None))
                continue
            # A document's instances vary together (one target per document and pass), so the
            # spread is taken between whole passes over the same corpus, for ours scaled to
            # the records' passes.
            per_pass = packing[:, c, 0] / packing[:, c, 1]
            sd = float(per_pass.std(ddof=1))
            se = np.hypot(sd / np.sqrt(self.passes), sd / np.sqrt(self.settings["dupe_factor"]))
            rows.append(Row(name, _ratio(ours, c), _ratio(packing, c),
                            TOLERANCE_SE * float(se) + _FLOOR))
        return rows


def find_summary(files: list[str]) -> str | None:
    """The generator's summary.json beside the record files or one directory up."""
    for path in files:
        here = os.path.dirname(os.path.abspath(path))
        for directory in (here, os.path.dirname(here)):
            candidate = os.path.join(directory, "summary.json")
            if os.path.isfile(candidate):
                return candidate
    return None


def read_summary(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def table(rows: list[Row], records: int, masking_note: str, packing_note: str) -> str:
    lines = [f"statistics of {records} records against google-research/albert's "
             "create_pretraining_data on the same text (tolerance: "
             f"{TOLERANCE_SE} standard errors of the difference)",
             f"{'statistic':34} {'ours':>8} {'google':>8} {'tolerance':>10}"]
    for title, names in ((masking_note, MASKING), (packing_note, SEQUENCES)):
        lines.append(title)
        for row in rows:
            if row.name not in names:
                continue
            if row.google is None:
                lines.append(f"  {row.name:32} {row.ours:8.4f} {'n/a':>8}")
                continue
            lines.append(f"  {row.name:32} {row.ours:8.4f} {row.google:8.4f} "
                         f"{'±' + format(row.tolerance, '.4f'):>10}  "
                         f"{'ok' if row.ok else 'DIFFERS'}")
    differ = [r.name for r in rows if r.ok is False]
    lines.append(f"{len(differ)} of {sum(r.ok is not None for r in rows)} statistics outside "
                 "the tolerance" + (f": {', '.join(differ)}" if differ else ""))
    return "\n".join(lines)
