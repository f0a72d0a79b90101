"""The official SQuAD v1.1 and v2.0 metrics, written from the official evaluation scripts' rules.

Answers are normalised by: lowercase, drop punctuation, drop the articles a/an/the, collapse
whitespace. Exact match and token-level F1 take the maximum over the gold answers.

v1.1 and v2.0 differ in edge cases, and each is scored by its own rules:
- v1.1: F1 is 0 when prediction and gold share no token (even if both normalise to empty);
  questions without a prediction score 0 and count in the total.
- v2.0: a question with no gold answers is unanswerable (gold = ""); F1 is
  1 when both sides are empty and 0 when one is; questions without a prediction are skipped (as in
  the official script, which prints them). With no-answer probabilities, scores are reported at
  threshold 1.0 plus the best threshold for exact and F1, and HasAns / NoAns breakdowns.
"""

from __future__ import annotations

import collections
import re
import string

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


def evaluate_v1(dataset: list, predictions: dict) -> dict:
    """dataset: the 'data' list of a SQuAD v1.1 file; predictions: {qid: text}."""
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
    # As the official script: start from "no answer everywhere" over every question in the data.
    current = best = float(sum(1 for q in has_ans if not has_ans[q]))
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
    na_probs: optional {qid: probability (or odds) of no answer}."""
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
    probs = na_probs if na_probs is not None else {q: 0.0 for q in predictions}

    def thresholded(raw):
        return {q: (float(not has_ans[q]) if probs.get(q, 0.0) > na_prob_thresh else s)
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
