"""SQuAD JSON -> model features (cached as TFRecords) and model outputs -> answers.

Features follow BERT/ALBERT: [CLS] question [SEP] context-window [SEP], the question cut to
max_query_length tokens, the context split into windows of what remains, each new window starting
doc_stride tokens after the previous one. Character <-> token alignment uses the fast tokenizer's
offsets into the original context, so accents, odd whitespace and unicode map back exactly.

A predicted answer is read as whole words (whole_word_span): from the start of the word its first
piece falls in to the end of the word its last piece falls in, since SentencePiece pieces often
end inside a word ("sofia nova|k"). Words are BERT's basic tokenizer's: whitespace-delimited, with
punctuation split off, so a comma or quote next to a word is in the answer only when a predicted
piece covers it, as the reference's get_final_text leaves it out. Unlike get_final_text, a piece
inside a word brings in the whole word: the reference keeps just the predicted characters. That
holds only in scripts that put spaces between words: in Thai, Japanese, Chinese or Korean (whose
particles join the word before them, 서울+은) the space-delimited unit is a phrase or a sentence,
so there the predicted characters are the answer, as in get_final_text, and a span never grows
past the whitespace-delimited tokens it touches (get_final_text's bound).

Labels: the first gold answer's token span when the window contains it, else position 0 ([CLS]),
which is also the label of unanswerable questions (SQuAD v2).

Padding: the feature cache (albert.data.squad_records, with the tf.data readers) keeps each
window unpadded, with its length. Its prediction_batches and training_batches pad a batch to its
length bucket (padding="batch": a multiple of BUCKET, windows of similar length batched together)
or every window to max_seq_length (padding="max"); the model masks the padding, and postprocess
reads each window's logits over its real tokens only, so the padding never changes an answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import unicodedata

import numpy as np

from albert.data.tokenization import text_rule, tokenizer_config
from albert.errors import DataError, SettingError
from albert.eval.squad_scoring import normalize_answer

logger = logging.getLogger(__name__)

# Bump when the feature layout changes (2: windows stored unpadded, with their real length).
CACHE_VERSION = "2"
# Batch padding rounds a batch's length up to a multiple of this (capped at max_seq_length), so
# XLA compiles a handful of shapes (6 at 384), not one per batch.
BUCKET = 64
PADDINGS = ("batch", "max")


class SquadError(DataError):
    """A SQuAD file that cannot be used; the message names the file and the entry."""


class SettingsError(SettingError):
    """Feature settings that cannot work; the message names the settings (the fields of
    FeatureSettings, the flags of the same names)."""


@dataclasses.dataclass
class Example:
    qid: str
    question: str
    context: str
    answers: list[tuple[str, int]]  # (text, start char), aligned with the context
    is_impossible: bool


@dataclasses.dataclass
class SquadFileStats:
    questions: int = 0
    impossible: int = 0
    realigned_answers: int = 0  # answer_start was off but the text occurs in the context
    mismatched_answers: int = 0  # text not found in the context: not used for training


def read_squad(path: str) -> tuple[list[Example], dict, SquadFileStats]:
    """Parse an official-layout SQuAD file: data -> paragraphs -> qas. Returns (examples,
    the parsed JSON (for scoring), stats)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"SQuAD file not found: {path}") from None
    except json.JSONDecodeError as e:
        raise SquadError(f"{path} is not valid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise SquadError(f"{path} is not UTF-8: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SquadError(f"{path} is not in the SQuAD layout (expected a top-level 'data' list)")
    examples, stats = [], SquadFileStats()
    for a, article in enumerate(data["data"]):
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs", []), list):
            raise SquadError(f"{path}: data[{a}] must be an object with a 'paragraphs' list")
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            if (not isinstance(paragraph, dict) or not isinstance(paragraph.get("context"), str)
                    or not isinstance(paragraph.get("qas"), list)):
                raise SquadError(f"{where} needs a 'context' string and a 'qas' list")
            context = paragraph["context"]
            for q, qa in enumerate(paragraph["qas"]):
                if not isinstance(qa, dict) or "id" not in qa or "question" not in qa:
                    raise SquadError(f"{where}.qas[{q}] needs 'id' and 'question'")
                _check_question(qa, f"{where}.qas[{q}]")
                stats.questions += 1
                impossible = bool(qa.get("is_impossible", False)) or not qa.get("answers")
                answers = []
                for ans in ([] if impossible else qa["answers"]):
                    aligned = _align_answer(context, ans, stats)
                    if aligned is not None:
                        answers.append(aligned)
                stats.impossible += impossible
                examples.append(Example(str(qa["id"]), qa["question"], context, answers,
                                        impossible))
    if stats.mismatched_answers:
        logger.warning("%s: %d answers do not occur in their context and are not used for "
                       "training", path, stats.mismatched_answers)
    return examples, data, stats


def _check_question(qa: dict, where: str) -> None:
    """Types the official layout promises; SquadError naming the entry and its id."""
    name = f"{where} (id {qa['id']!r})"
    if not isinstance(qa["id"], (str, int)) or isinstance(qa["id"], bool):
        raise SquadError(f"{where}: 'id' must be a string (or a number), got {qa['id']!r}")
    if not isinstance(qa["question"], str):
        raise SquadError(f"{name}: 'question' must be a string, got "
                         f"{type(qa['question']).__name__} {qa['question']!r:.40}")
    answers = qa.get("answers")
    if answers is not None and not isinstance(answers, list):
        raise SquadError(f"{name}: 'answers' must be a list, got {type(answers).__name__}")
    for i, answer in enumerate(answers or []):
        if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
            text = answer.get("text") if isinstance(answer, dict) else answer
            raise SquadError(f"{name}: answers[{i}] needs a 'text' string, got "
                             f"{type(text).__name__} {text!r:.40}")


def _align_answer(context: str, answer: dict, stats: SquadFileStats):
    text, start = answer.get("text", ""), answer.get("answer_start", -1)
    if not text:
        stats.mismatched_answers += 1
        return None
    if isinstance(start, int) and context[start:start + len(text)] == text:
        return text, start
    # Off-by-a-few answer_start values exist in the wild: take the nearest occurrence.
    hits, i = [], context.find(text)
    while i != -1:
        hits.append(i)
        i = context.find(text, i + 1)
    if not hits:
        stats.mismatched_answers += 1
        return None
    stats.realigned_answers += 1
    anchor = start if isinstance(start, int) else 0
    return text, min(hits, key=lambda h: abs(h - anchor))


@dataclasses.dataclass(frozen=True)
class FeatureSettings:
    """Window settings, checked when built so that no setting can loop forever or leave no
    room for the context. A doc_stride larger than the room a window has for context is
    allowed: each window then starts where the previous one ended (as BERT's
    min(length, doc_stride) step), so no token is skipped."""

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64

    def __post_init__(self):
        for name in ("max_seq_length", "doc_stride", "max_query_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise SettingsError(f"{{{name}}} must be a whole number, got {value!r}", name)
            if value < 1:
                raise SettingsError(f"{{{name}}} must be at least 1, got {value}", name)
        if self.max_seq_length < self.max_query_length + 4:
            raise SettingsError(
                f"{{max_seq_length}} {self.max_seq_length} leaves no room for context after a "
                f"{{max_query_length}} {self.max_query_length} question: [CLS] question [SEP] "
                f"context [SEP] needs {{max_seq_length}} >= {{max_query_length}} + 4 "
                f"({self.max_query_length + 4})", "max_seq_length", "max_query_length"
            )


@dataclasses.dataclass
class Feature:
    example_index: int
    input_ids: list[int]
    token_type_ids: list[int]
    attention_mask: list[int]
    start_position: int
    end_position: int
    # Per token of the sequence: (start char, end char) in the context for context tokens, else
    # None; and whether this window gives the token its most context (BERT's rule).
    token_spans: list
    max_context: list

    @property
    def length(self) -> int:
        """Real tokens of the window ([CLS] question [SEP] context [SEP]); the rest is padding."""
        return sum(self.attention_mask)


def _windows(n_tokens: int, max_tokens: int, stride: int):
    start = 0
    while True:
        length = min(n_tokens - start, max_tokens)
        yield start, length
        if start + length >= n_tokens:
            return
        start += min(length, stride)


def featurize(examples: list[Example], tokenizer, settings: FeatureSettings,
              training: bool) -> list[Feature]:
    s = settings
    cls_id, sep_id, pad_id = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    q_ids = tokenizer([e.question for e in examples], add_special_tokens=False)["input_ids"]
    ctx = tokenizer([e.context for e in examples], add_special_tokens=False,
                    return_offsets_mapping=True)
    features = []
    for idx, example in enumerate(examples):
        question = q_ids[idx][: s.max_query_length]
        ids, offsets = ctx["input_ids"][idx], ctx["offset_mapping"][idx]
        max_tokens = s.max_seq_length - len(question) - 3
        if max_tokens < 1:
            raise SquadError(f"--max_seq_length {s.max_seq_length} leaves no room for context "
                             f"after a {len(question)}-token question")
        answer_tokens = None
        if example.answers:
            text, start_char = example.answers[0]
            answer_tokens = _char_span_to_tokens(offsets, start_char, start_char + len(text))
        if training and not example.is_impossible and answer_tokens is None:
            continue  # its answer is not in the context: nothing to learn from
        windows = list(_windows(len(ids), max_tokens, s.doc_stride)) if ids else [(0, 0)]
        for w_start, w_len in windows:
            prefix = 1 + len(question) + 1
            input_ids = [cls_id, *question, sep_id, *ids[w_start:w_start + w_len], sep_id]
            type_ids = [0] * prefix + [1] * (w_len + 1)
            spans = [None] * prefix + [tuple(offsets[t]) for t in range(w_start, w_start + w_len)]
            spans.append(None)
            max_ctx = [False] * prefix + [
                _is_max_context(windows, (w_start, w_len), t)
                for t in range(w_start, w_start + w_len)
            ] + [False]
            start_pos = end_pos = 0
            if answer_tokens is not None and not example.is_impossible:
                a, b = answer_tokens
                if w_start <= a and b < w_start + w_len:
                    start_pos, end_pos = a - w_start + prefix, b - w_start + prefix
            pad = s.max_seq_length - len(input_ids)
            features.append(Feature(
                example_index=idx,
                input_ids=input_ids + [pad_id] * pad,
                token_type_ids=type_ids + [0] * pad,
                attention_mask=[1] * len(input_ids) + [0] * pad,
                start_position=start_pos,
                end_position=end_pos,
                token_spans=spans + [None] * pad,
                max_context=max_ctx + [False] * pad,
            ))
    return features


def _char_span_to_tokens(offsets, start_char: int, end_char: int):
    """First token ending after start_char .. last token starting before end_char."""
    start = next((t for t, (s, e) in enumerate(offsets) if e > start_char and e > s), None)
    end = next((t for t in range(len(offsets) - 1, -1, -1)
                if offsets[t][0] < end_char and offsets[t][1] > offsets[t][0]), None)
    if start is None or end is None or end < start:
        return None
    return start, end


def _is_max_context(windows, current, token: int) -> bool:
    """Whether `current` is the window where `token` has the most context on both sides."""
    best_score, best = None, None
    for w_start, w_len in windows:
        end = w_start + w_len - 1
        if token < w_start or token > end:
            continue
        score = min(token - w_start, end - token) + 0.01 * w_len
        if best_score is None or score > best_score:
            best_score, best = score, (w_start, w_len)
    return best == current


def answer_recovery_rate(examples: list[Example], features: list[Feature]) -> float:
    """Fraction of answerable examples whose labelled token span maps back to the gold text."""
    ok, total = 0, 0
    by_example: dict[int, list[Feature]] = {}
    for f in features:
        by_example.setdefault(f.example_index, []).append(f)
    for idx, example in enumerate(examples):
        if example.is_impossible or not example.answers:
            continue
        total += 1
        for f in by_example.get(idx, []):
            if f.start_position > 0:
                text = example.context[f.token_spans[f.start_position][0]:
                                       f.token_spans[f.end_position][1]]
                if normalize_answer(text) == normalize_answer(example.answers[0][0]):
                    ok += 1
                    break
    return ok / max(total, 1)


# -- caching ----------------------------------------------------------------------------------


def cache_key(path: str, settings: FeatureSettings, spm_model: str, training: bool) -> str:
    h = hashlib.sha256()
    for file in (path, spm_model):
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    # The vocabulary's text rule is the tokenizer's settings: features made under another rule
    # (its tokenizer_config.json changed, or written by an earlier version) are stale.
    h.update(json.dumps([dataclasses.asdict(settings), training, CACHE_VERSION,
                         tokenizer_config(text_rule(spm_model))], sort_keys=True).encode())
    return h.hexdigest()[:16]


def feature_meta(features: list[Feature]) -> list[dict]:
    """What post-processing needs of each window, in feature order: its example, its real length
    and its tokens' alignment (postprocess)."""
    return [{"example_index": f.example_index, "length": f.length, "token_spans": f.token_spans,
             "max_context": f.max_context} for f in features]


def read_feature_meta(prefix: str) -> list[dict]:
    with open(prefix + ".meta.json", encoding="utf-8") as f:
        return json.load(f)


# -- batches: padded to max_seq_length, or to their length bucket -------------------------------


def padded_length(longest: int, max_seq_length: int, bucket: int = BUCKET) -> int:
    """The length a batch whose longest window is `longest` is padded to: rounded up to a
    multiple of `bucket`, never past max_seq_length (albert.data.reader.padded_length pads
    tensors the same way)."""
    return min((longest + bucket - 1) // bucket * bucket, max_seq_length)


def check_padding(padding: str, bucket: int) -> None:
    if padding not in PADDINGS:
        raise ValueError(f"padding must be 'batch' or 'max', got {padding!r}")
    if isinstance(bucket, bool) or not isinstance(bucket, int) or bucket < 1:
        raise ValueError(f"bucket must be a whole number >= 1, got {bucket!r}")


def plan_batches(lengths: list[int], batch_size: int, max_seq_length: int,
                 padding: str = "batch", bucket: int = BUCKET) -> list[tuple[list[int], int]]:
    """Prediction batches of windows of these lengths: [(indices, padded length)], each index
    exactly once. padding="max": consecutive runs of batch_size, all at max_seq_length.
    padding="batch": windows grouped by padded_length(their length), each group in its windows'
    order cut into runs of batch_size; a batch is emitted when it fills, the unfilled last one of
    each group at the end (shortest group first). squad_records.prediction_batches makes the same
    batches (tf.data's group_by_window) from the feature cache."""
    check_padding(padding, bucket)
    if padding == "max":
        return [(list(range(i, min(i + batch_size, len(lengths)))), max_seq_length)
                for i in range(0, len(lengths), batch_size)]
    groups: dict[int, list[int]] = {}
    out = []
    for i, n in enumerate(lengths):
        key = padded_length(int(n), max_seq_length, bucket)
        group = groups.setdefault(key, [])
        group.append(i)
        if len(group) == batch_size:
            out.append((group, key))
            groups[key] = []
    out.extend((groups[key], key) for key in sorted(groups) if groups[key])
    return out


def real_logits(feature_index, attention_mask, start_logits, end_logits) -> dict:
    """One prediction batch's logits ([B, S] arrays or tensors) -> {feature_index: (start [n],
    end [n])}, n each window's real length (its attention_mask's sum): padding is never an
    answer, and so trimmed the results of a window do not depend on how its batch was padded."""
    mask, index = np.asarray(attention_mask), np.asarray(feature_index)
    start, end = np.asarray(start_logits), np.asarray(end_logits)
    out = {}
    for i, fi in enumerate(index):
        n = int(mask[i].sum())
        out[int(fi)] = (start[i, :n], end[i, :n])
    return out


# -- answers from logits ----------------------------------------------------------------------


def _is_punctuation(char: str) -> bool:
    # BERT's basic tokenizer splits off every ASCII non-alphanumeric symbol ($, +, <, ^, ` and |
    # too, though Unicode does not call them punctuation) and everything Unicode does (P*).
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


# Scripts written without spaces between words (CJK ideographs, kana, Thai, Lao, Khmer, Myanmar,
# Tibetan, Yi, Javanese, Balinese), and Hangul, whose words carry their particles ("서울은": Seoul
# + topic): their space-delimited units are no words, so a span never grows into them.
_UNSPACED_BLOCKS = (
    (0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1100, 0x11FF), (0x1780, 0x17FF),
    (0x19E0, 0x19FF), (0x1B00, 0x1B7F), (0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029),
    (0x3031, 0x3035), (0x3040, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xA4CF),
    (0xA960, 0xA97F), (0xA980, 0xA9FF), (0xAA60, 0xAA7F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF),
    (0xFF66, 0xFFDC), (0x1B000, 0x1B16F), (0x20000, 0x2FA1F), (0x30000, 0x323AF))


def _is_word_char(char: str) -> bool:
    """Whether a span ending (or starting) next to `char` cuts a word: a letter, digit or mark of
    a script that separates its words with spaces."""
    if char.isspace() or _is_punctuation(char):
        return False
    code = ord(char)
    return not any(low <= code <= high for low, high in _UNSPACED_BLOCKS)


def whole_word_span(context: str, start: int, end: int) -> tuple[int, int]:
    """The characters [start, end) of `context` widened to whole words: the smallest span that
    covers them, starts and ends on a word boundary, and holds no whitespace at its ends.

    Only letters/digits of scripts that separate words with spaces grow a span (_is_word_char):
    a span in Thai, Japanese, Chinese or Korean comes back as predicted. Punctuation inside
    [start, end) stays, and punctuation or whitespace just outside it is never added, so a span
    never grows past the whitespace-delimited tokens it touches. An all-whitespace span comes
    back empty.
    """
    while start < end and context[start].isspace():
        start += 1
    while end > start and context[end - 1].isspace():
        end -= 1
    if start == end:
        return start, start
    if _is_word_char(context[start]):
        while start > 0 and _is_word_char(context[start - 1]):
            start -= 1
    if _is_word_char(context[end - 1]):
        while end < len(context) and _is_word_char(context[end]):
            end += 1
    return start, end


def postprocess(examples: list[Example], meta: list[dict], results: dict, *, n_best: int = 20,
                max_answer_length: int = 30, version_2: bool = False,
                null_score_diff_threshold: float = 0.0):
    """results: {feature_index: (start_logits, end_logits)} -> (predictions, nbest, null_odds).
    The logits of a window are read over its real tokens (meta's "length"), so neither how
    long its batch was padded nor how much of the padding the results keep changes an answer.

    For each example, the best spans over all its windows (start <= end, at most
    max_answer_length tokens, inside the context, start token in its max-context window), each
    read as the whole words it touches (whole_word_span); spans that read the same are one n-best
    entry, with the best score among them (as the reference de-duplicates its final texts).
    v2: the null score is the smallest [CLS] start+end over the windows; the answer is "" when
    null_score - best_span_score > null_score_diff_threshold; null_odds holds that difference.
    """
    by_example: dict[int, list[int]] = {}
    for i, m in enumerate(meta):
        by_example.setdefault(m["example_index"], []).append(i)
    predictions, nbest_out, null_odds = {}, {}, {}
    for idx, example in enumerate(examples):
        candidates, null_score = [], math.inf
        for fi in by_example.get(idx, []):
            if fi not in results:
                continue
            # Over the window's real tokens only (its cached length; the whole array for a meta
            # without one): padding, however long, never takes an n-best place.
            n = meta[fi].get("length")
            start_logits, end_logits = (np.asarray(x)[:n] for x in results[fi])
            spans, max_ctx = meta[fi]["token_spans"], meta[fi]["max_context"]
            null_score = min(null_score, float(start_logits[0] + end_logits[0]))
            starts = np.argsort(start_logits)[::-1][:n_best]
            ends = np.argsort(end_logits)[::-1][:n_best]
            for s in starts:
                if spans[s] is None or not max_ctx[s]:
                    continue
                for e in ends:
                    if spans[e] is None or e < s or e - s + 1 > max_answer_length:
                        continue
                    candidates.append((float(start_logits[s] + end_logits[e]),
                                       spans[s][0], spans[e][1]))
        candidates.sort(key=lambda c: c[0], reverse=True)
        seen, nbest = set(), []
        for score, a, b in candidates:
            text = example.context[slice(*whole_word_span(example.context, a, b))]
            if not text or text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "score": score})
            if len(nbest) >= n_best:
                break
        if version_2 and math.isfinite(null_score):
            nbest.append({"text": "", "score": null_score})
            nbest.sort(key=lambda c: c["score"], reverse=True)
        if not nbest:
            nbest = [{"text": "", "score": 0.0}]
        scores = np.array([c["score"] for c in nbest])
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        for c, p in zip(nbest, probs, strict=True):
            c["probability"] = float(p)
        best_span = next((c for c in nbest if c["text"]), None)
        if version_2:
            diff = null_score - (best_span["score"] if best_span else -math.inf)
            null_odds[example.qid] = float(diff) if math.isfinite(diff) else 1e9
            answer = "" if (best_span is None or diff > null_score_diff_threshold) \
                else best_span["text"]
        else:
            answer = best_span["text"] if best_span else ""
        predictions[example.qid] = answer
        nbest_out[example.qid] = nbest
    return predictions, nbest_out, null_odds
