"""The official SQuAD v1.1 and v2.0 metrics, written from the official evaluation scripts' rules.

Answers are normalised by: lowercase, drop punctuation, drop the articles a/an/the, collapse
whitespace. Exact match and token-level F1 take the maximum over the gold answers.

v1.1 and v2.0 differ in edge cases, and each is scored by its own rules:
- v1.1: F1 is 0 when prediction and gold share no token (even if both normalise to empty);
  questions without a prediction score 0 and count in the total (the official script prints
  "Unanswered question ... will receive score 0").
- v2.0: a question with no gold answers is unanswerable (gold = ""); F1 is
  1 when both sides are empty and 0 when one is; questions without a prediction are left out of
  every score and total (the official script prints "Missing prediction for ..." and skips them).
  With no-answer probabilities, scores are reported at threshold 1.0 plus the best threshold for
  exact and F1, and HasAns / NoAns breakdowns. One deliberate difference: the best-threshold
  sweep counts only questions with a prediction (the official one mixes all questions into it
  and can exceed 100 when predictions are missing); with none missing they agree.
Both report how many questions have no prediction under "missing_predictions", and the CLI
warns about them, as the official scripts print them.

Inputs the official scripts would crash on are a ScoringInputError (an albert.errors.DataError,
a ValueError) instead: a prediction that is not a string, a no-answer value that is not a number,
and (v2.0) a no-answer file without an entry for a question that has a prediction (the official
script raises KeyError there; scoring on without it would give a wrong best_f1).
"""

from __future__ import annotations

import collections
import math
import re
import string

from albert.errors import DataError

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# -- v1.1 -------------------------------------------------------------------------------------


def exact_v1(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_v1(prediction: str, gold: str) -> float:
    return _f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


class ScoringInputError(DataError):
    """Predictions or no-answer values the official scripts cannot score; names the input."""


def _few(ids, n=5) -> str:
    ids = list(ids)
    return ", ".join(repr(i) for i in ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n
                                                  else "")


def check_predictions(predictions, what: str = "predictions") -> None:
    """{qid: answer string}; ScoringInputError naming `what` and the offending ids."""
    if not isinstance(predictions, dict):
        raise ScoringInputError(f"{what} must map question ids to answer strings, got "
                                f"{type(predictions).__name__}")
    bad = [q for q, v in predictions.items() if not isinstance(v, str)]
    if bad:
        example = predictions[bad[0]]
        raise ScoringInputError(
            f"{what}: {len(bad)} answer(s) are not strings (e.g. {bad[0]!r}: "
            f"{type(example).__name__} {example!r:.40}); ids: {_few(bad)}")


def check_na_probs(na_probs, scored_qids, what: str = "no-answer probabilities") -> None:
    """{qid: number}: every value a finite or infinite number (not NaN, not a bool) and an entry
    for every question in `scored_qids` (those with a prediction)."""
    if not isinstance(na_probs, dict):
        raise ScoringInputError(f"{what} must map question ids to numbers, got "
                                f"{type(na_probs).__name__}")
    bad = [q for q, v in na_probs.items()
           if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v)]
    if bad:
        example = na_probs[bad[0]]
        raise ScoringInputError(
            f"{what}: {len(bad)} value(s) are not numbers (e.g. {bad[0]!r}: "
            f"{type(example).__name__} {example!r:.40}); ids: {_few(bad)}")
    missing = [q for q in scored_qids if q not in na_probs]
    if missing:
        raise ScoringInputError(
            f"{what}: no value for {len(missing)} of the {len(scored_qids)} predicted questions: "
            f"{_few(missing)}; the official SQuAD v2.0 script stops on such a file (KeyError) "
            "and best_f1 without them would be wrong: write a value for every question")


def question_ids(squad_json: dict) -> list:
    """Every question id of a SQuAD file, in file order."""
    return [qa["id"] for article in squad_json["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


def evaluate_v1(dataset: list, predictions: dict) -> dict:
    """dataset: the 'data' list of a SQuAD v1.1 file; predictions: {qid: text}."""
    check_predictions(predictions)
    em = f1 = total = 0.0
    missing = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    missing += 1
                    continue
                golds = [a["text"] for a in qa["answers"]]
                pred = predictions[qa["id"]]
                em += max(exact_v1(pred, g) for g in golds)
                f1 += max(f1_v1(pred, g) for g in golds)
    total = max(total, 1)
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total,
            "total": int(total), "missing_predictions": missing}


# -- v2.0 -------------------------------------------------------------------------------------


def _tokens_v2(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def exact_v2(prediction: str, gold: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(prediction))


def f1_v2(prediction: str, gold: str) -> float:
    gold_toks, pred_toks = _tokens_v2(gold), _tokens_v2(prediction)
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    return _f1(pred_toks, gold_toks)


def _best_threshold(predictions, scores, na_probs, has_ans):
    """Sweep the no-answer threshold over the sorted no-answer probabilities."""
    # Start from "no answer everywhere" over the scored questions. The official script counts
    # the unanswerable questions of the whole data file here but divides by the scored ones, so
    # with predictions missing it can report best_f1 above 100; with every question predicted
    # (what run_squad writes) the two are the same.
    current = best = float(sum(1 for q in scores if not has_ans[q]))
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1.0 if predictions[qid] else 0.0
        current += diff
        if current > best:
            best = current
            best_thresh = na_probs[qid]
    return 100.0 * best / max(len(scores), 1), best_thresh


def evaluate_v2(dataset: list, predictions: dict, na_probs: dict | None = None,
                na_prob_thresh: float = 1.0) -> dict:
    """dataset: the 'data' list of a SQuAD v2.0 file; predictions {qid: text ('' = no answer)};
    na_probs: optional {qid: probability (or odds) of no answer}; it needs an entry for every
    question with a prediction (ScoringInputError otherwise, where the official script raises
    KeyError)."""
    check_predictions(predictions)
    has_ans, exact_raw, f1_raw = {}, {}, {}
    missing = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qid = qa["id"]
                has_ans[qid] = bool(qa["answers"])
                golds = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
                if not golds:
                    golds = [""]
                if qid not in predictions:
                    missing += 1
                    continue
                pred = predictions[qid]
                exact_raw[qid] = max(exact_v2(pred, g) for g in golds)
                f1_raw[qid] = max(f1_v2(pred, g) for g in golds)
    if na_probs is not None:
        check_na_probs(na_probs, list(exact_raw))
    probs = na_probs if na_probs is not None else {q: 0.0 for q in predictions}

    def thresholded(raw):
        return {q: (float(not has_ans[q]) if probs[q] > na_prob_thresh else s)
                for q, s in raw.items()}

    exact, f1 = thresholded(exact_raw), thresholded(f1_raw)

    def summary(qids, prefix=""):
        n = len(qids)
        if not n:
            return {}
        return {f"{prefix}exact": 100.0 * sum(exact[q] for q in qids) / n,
                f"{prefix}f1": 100.0 * sum(f1[q] for q in qids) / n, f"{prefix}total": n}

    qids = list(exact)
    result = summary(qids)
    result.update(summary([q for q in qids if has_ans[q]], "HasAns_"))
    result.update(summary([q for q in qids if not has_ans[q]], "NoAns_"))
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = _best_threshold(
            predictions, exact_raw, probs, has_ans)
        result["best_f1"], result["best_f1_thresh"] = _best_threshold(
            predictions, f1_raw, probs, has_ans)
    if missing:
        result["missing_predictions"] = missing
    return result


def detect_version(squad_json: dict) -> str:
    """'v1.1' or 'v2.0' from the file's version field, else from is_impossible markers."""
    version = str(squad_json.get("version", ""))
    if version.startswith("v2") or version.startswith("2"):
        return "v2.0"
    if version.startswith("1"):
        return "v1.1"
    for article in squad_json.get("data", []):
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                if "is_impossible" in qa:
                    return "v2.0"
    return "v1.1"


def evaluate(squad_json: dict, predictions: dict, na_probs: dict | None = None,
             version: str | None = None) -> dict:
    version = version or detect_version(squad_json)
    if version == "v1.1":
        return evaluate_v1(squad_json["data"], predictions)
    return evaluate_v2(squad_json["data"], predictions, na_probs)
