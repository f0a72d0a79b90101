"""Documents -> ALBERT pretraining instances (SOP + n-gram MLM) -> serialized tf.train.Example.

Pure Python and SentencePiece, no TensorFlow: this runs in the generator's worker processes, where
importing TensorFlow would cost seconds and hundreds of MB per worker.

Follows google-research/albert's create_pretraining_data:
- A document's sentences are packed into chunks of about `target_seq_length` tokens (10% of
  documents get a random shorter target); a chunk splits at a random sentence boundary into A and B,
  and with probability 0.5 they are swapped (sentence-order prediction, label 1 = swapped).
- Masking picks whole SentencePiece words and n-grams of them (n <= ngram, P(n) proportional to
  1/n), about masked_lm_prob of the tokens, at most max_predictions_per_seq; each chosen token
  becomes [MASK] 80%, stays 10%, becomes a random token 10%.
Two deliberate differences, both so that every document is processed independently (which is what
makes the output identical for any number of processes): a chunk holding a single sentence is split
inside that sentence instead of borrowing a random other document (ALBERT's NSP leftover), and
random replacement tokens exclude the five special tokens.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import struct

from albert.data.tokenization import load_spm, preprocess_text, text_rule
from albert.errors import DataError, SettingError

PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3, 4
NUM_SPECIAL = 5
_PUNCT = set('!"#$%&\'()*+,-./:;?@[\\]^_`{|}~') | {"€", "£"}
_ENGLISH = set("abcdefghijklmnopqrstuvwxyz")

FEATURE_NAMES = (
    "input_ids", "input_mask", "segment_ids", "token_boundary", "masked_lm_positions",
    "masked_lm_ids", "masked_lm_weights", "next_sentence_labels",
)


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    ngram: int = 3
    short_seq_prob: float = 0.1

    def validate(self):
        if self.max_seq_length < 8:
            raise SettingError(f"{{max_seq_length}} must be at least 8, got {self.max_seq_length}",
                               "max_seq_length")
        if not 0 < self.masked_lm_prob < 1:
            raise SettingError(f"{{masked_lm_prob}} must be in (0, 1), got {self.masked_lm_prob}",
                               "masked_lm_prob")
        if self.max_predictions_per_seq < 1:
            raise SettingError("{max_predictions_per_seq} must be at least 1",
                               "max_predictions_per_seq")
        if self.ngram < 1:
            raise SettingError(f"{{ngram}} must be at least 1, got {self.ngram}", "ngram")
        if not 0 <= self.short_seq_prob <= 1:
            raise SettingError(f"{{short_seq_prob}} must be in [0, 1], got {self.short_seq_prob}",
                               "short_seq_prob")


@dataclasses.dataclass
class Instance:
    input_ids: list[int]  # with [CLS]/[SEP], masked, unpadded
    segment_ids: list[int]
    token_boundary: list[int]
    masked_lm_positions: list[int]
    masked_lm_ids: list[int]
    is_swapped: bool


def is_start_piece(piece: str) -> bool:
    """Whether a SentencePiece piece starts a word (ALBERT's rule for whole-word masking)."""
    return (
        piece.startswith("\u2581")
        or piece.startswith("<")
        or piece in _PUNCT
        or not all(c.lower() in _ENGLISH or c in _PUNCT for c in piece)
    )


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class InstanceMaker:
    """Tokenizes documents and turns them into serialized training examples."""

    def __init__(self, spm_model: str, options: InstanceOptions):
        options.validate()
        self.options = options
        self.sp = load_spm(spm_model)
        # The vocabulary's text rule, as the fine-tune tokenizer reads it (load_tokenizer).
        self.keep_accents = text_rule(spm_model)
        self.vocab_size = self.sp.GetPieceSize()
        if self.vocab_size <= NUM_SPECIAL:
            raise DataError(f"{spm_model}: vocabulary of {self.vocab_size} pieces is too small")
        self.start_piece = [is_start_piece(self.sp.IdToPiece(i)) for i in range(self.vocab_size)]
        self.start_piece[CLS_ID] = self.start_piece[SEP_ID] = True
        self._varints = [_encode_varint(i) for i in range(max(self.vocab_size, 1 << 14))]
        # Cumulative n-gram weights, one row per largest n available at a position.
        weights = [1.0 / n for n in range(1, options.ngram + 1)]
        self._ngram_cum = [list(itertools.accumulate(weights[:k]))
                           for k in range(1, options.ngram + 1)]
        self._max_tokens = options.max_seq_length - 3

    # -- tokenization ---------------------------------------------------------------------------

    def tokenize_document(self, sentences: list[str]) -> list[list[int]]:
        """Sentences -> token id lists; sentences longer than a sequence are cut into pieces."""
        texts = [preprocess_text(s, self.keep_accents) for s in sentences]
        out = []
        for ids in self.sp.EncodeAsIds([t for t in texts if t]):
            for start in range(0, len(ids), self._max_tokens):
                piece = ids[start:start + self._max_tokens]
                if piece:
                    out.append(piece)
        return out

    # -- instances --------------------------------------------------------------------------------

    def instances_from_document(self, doc: list[list[int]], rng: random.Random) -> list[Instance]:
        opts = self.options
        target = self._max_tokens
        if rng.random() < opts.short_seq_prob:
            target = rng.randint(2, self._max_tokens)
        instances = []
        chunk: list[list[int]] = []
        length = 0
        for i, segment in enumerate(doc):
            chunk.append(segment)
            length += len(segment)
            if i != len(doc) - 1 and length < target:
                continue
            if len(chunk) >= 2:
                a_end = rng.randint(1, len(chunk) - 1)
                a = [t for s in chunk[:a_end] for t in s]
                b = [t for s in chunk[a_end:] for t in s]
            elif len(chunk[0]) >= 2:
                cut = rng.randint(1, len(chunk[0]) - 1)
                a, b = chunk[0][:cut], chunk[0][cut:]
            else:
                chunk, length = [], 0
                continue
            swapped = rng.random() < 0.5
            if swapped:
                a, b = b, a
            a, b = self._truncate_pair(a, b, rng)
            tokens = [CLS_ID, *a, SEP_ID, *b, SEP_ID]
            segment_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            masked, positions, labels = self.mask_tokens(tokens, rng)
            boundary = [1 if self.start_piece[t] else 0 for t in tokens]
            instances.append(Instance(masked, segment_ids, boundary, positions, labels, swapped))
            chunk, length = [], 0
        return instances

    def _truncate_pair(self, a, b, rng):
        """Trim the longer side one token at a time, randomly from its front or back."""
        la, lb = len(a), len(b)
        fa = ba = fb = bb = 0
        while la + lb > self._max_tokens:
            front = rng.random() < 0.5
            if la > lb:
                fa, ba, la = fa + front, ba + (not front), la - 1
            else:
                fb, bb, lb = fb + front, bb + (not front), lb - 1
        return a[fa:len(a) - ba], b[fb:len(b) - bb]

    def mask_tokens(self, tokens: list[int], rng: random.Random):
        """ALBERT n-gram masking. Returns (masked tokens, sorted positions, original ids)."""
        opts = self.options
        words: list[list[int]] = []
        for i, t in enumerate(tokens):
            if t == CLS_ID or t == SEP_ID:
                continue
            if words and not self.start_piece[t] and words[-1][-1] == i - 1:
                words[-1].append(i)
            else:
                words.append([i])
        num_to_predict = min(opts.max_predictions_per_seq,
                             max(1, int(round(len(tokens) * opts.masked_lm_prob))))
        # Visit word starts in random order, shuffling lazily: only the few starts actually
        # visited are drawn (a partial Fisher-Yates), instead of shuffling all of them.
        starts = list(range(len(words)))
        output = list(tokens)
        labels: dict[int, int] = {}
        for k in range(len(starts)):
            if len(labels) >= num_to_predict:
                break
            j = rng.randrange(k, len(starts))
            starts[k], starts[j] = starts[j], starts[k]
            start = starts[k]
            cum = self._ngram_cum[min(opts.ngram, len(words) - start) - 1]
            draw = rng.random() * cum[-1]
            n = next(k for k, c in enumerate(cum, 1) if draw < c)
            positions = [p for w in words[start:start + n] for p in w]
            while len(labels) + len(positions) > num_to_predict and n > 1:
                n -= 1
                positions = [p for w in words[start:start + n] for p in w]
            if len(labels) + len(positions) > num_to_predict:
                continue
            if any(p in labels for p in positions):
                continue
            for p in positions:
                labels[p] = tokens[p]
                if rng.random() < 0.8:
                    output[p] = MASK_ID
                elif rng.random() >= 0.5:
                    output[p] = rng.randint(NUM_SPECIAL, self.vocab_size - 1)
        positions = sorted(labels)
        return output, positions, [labels[p] for p in positions]

    # -- serialization ----------------------------------------------------------------------------

    def _int64_feature(self, values) -> bytes:
        table = self._varints
        packed = b"".join([table[v] for v in values])
        inner = b"\x0a" + _encode_varint(len(packed)) + packed  # Int64List.value, packed
        return b"\x1a" + _encode_varint(len(inner)) + inner  # Feature.int64_list

    @staticmethod
    def _float_feature(values) -> bytes:
        packed = struct.pack(f"<{len(values)}f", *values)
        inner = b"\x0a" + _encode_varint(len(packed)) + packed  # FloatList.value, packed
        return b"\x12" + _encode_varint(len(inner)) + inner  # Feature.float_list

    def serialize(self, inst: Instance) -> bytes:
        """A tf.train.Example with the google-research BERT/ALBERT pretraining features."""
        seq, preds = self.options.max_seq_length, self.options.max_predictions_per_seq
        n = len(inst.input_ids)
        pad = [0] * (seq - n)
        k = len(inst.masked_lm_positions)
        pred_pad = [0] * (preds - k)
        features = {
            "input_ids": self._int64_feature(inst.input_ids + pad),
            "input_mask": self._int64_feature([1] * n + pad),
            "segment_ids": self._int64_feature(inst.segment_ids + pad),
            "token_boundary": self._int64_feature(inst.token_boundary + pad),
            "masked_lm_positions": self._int64_feature(inst.masked_lm_positions + pred_pad),
            "masked_lm_ids": self._int64_feature(inst.masked_lm_ids + pred_pad),
            "masked_lm_weights": self._float_feature([1.0] * k + [0.0] * (preds - k)),
            "next_sentence_labels": self._int64_feature([1 if inst.is_swapped else 0]),
        }
        entries = []
        for name in FEATURE_NAMES:
            key = name.encode()
            entry = (b"\x0a" + _encode_varint(len(key)) + key
                     + b"\x12" + _encode_varint(len(features[name])) + features[name])
            entries.append(b"\x0a" + _encode_varint(len(entry)) + entry)  # Features.feature
        body = b"".join(entries)
        return b"\x0a" + _encode_varint(len(body)) + body  # Example.features
