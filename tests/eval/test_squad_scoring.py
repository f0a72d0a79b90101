"""Official SQuAD scoring rules, each on hand-computed cases."""

import pytest
from helpers import squad_json, squad_v2_sample

from albert.eval.squad_scoring import (
    evaluate,
    evaluate_v1,
    evaluate_v2,
    f1_v1,
    f1_v2,
    normalize_answer,
)


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("The Cat", "cat"),  # lowercase, article removed
        ("a dog, an owl & the bird!", "dog owl bird"),  # punctuation + all three articles
        ("  many   spaces\there ", "many spaces here"),  # whitespace collapsed
        ("theatre anthem", "theatre anthem"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("", ""),
    ],
)
def test_normalization(raw, normalized):
    assert normalize_answer(raw) == normalized


def test_token_f1_by_hand():
    # pred tokens: [red, fox, jumps]; gold: [quick, red, fox] -> 2 shared
    # precision 2/3, recall 2/3, F1 = 2/3
    assert f1_v1("the red fox jumps", "quick red fox") == pytest.approx(2 / 3)
    # Repeated tokens count by multiplicity: pred [a1 b b], gold [b] -> p 1/3, r 1 -> 0.5
    assert f1_v1("x y y", "y") == pytest.approx(0.5)
    assert f1_v1("nothing", "else") == 0.0


def test_v1_and_v2_differ_on_empty_answers():
    # v1.1: no shared token -> 0 even if both are empty after normalisation.
    assert f1_v1("the", "a") == 0.0
    # v2.0: both empty -> 1; one empty -> 0.
    assert f1_v2("the", "a") == 1.0
    assert f1_v2("", "cat") == 0.0


def test_v1_max_over_gold_answers_and_missing_predictions():
    data = squad_json([
        {"id": "q1", "question": "?", "answers": [{"text": "Denver Broncos", "answer_start": 0},
                                                  {"text": "Broncos", "answer_start": 0}]},
        {"id": "q2", "question": "?", "answers": [{"text": "blue sky", "answer_start": 0}]},
        {"id": "q3", "question": "?", "answers": [{"text": "x", "answer_start": 0}]},
    ], "1.1")
    preds = {"q1": "the Broncos", "q2": "sky"}  # q3 missing: scores 0 and counts
    result = evaluate(data, preds)
    # q1: EM 1 (matches "Broncos"), F1 1; q2: EM 0, F1 = 2*(1*0.5)/(1.5) = 2/3; q3: 0.
    assert result["exact_match"] == pytest.approx(100 * 1 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert result["total"] == 3 and result["missing_predictions"] == 1
    assert set(result) == {"exact_match", "f1", "total", "missing_predictions"}


def test_v2_unanswerable_and_breakdown():
    preds = {"a": "paris.", "b": "1990 year", "c": "", "d": "something"}
    r = evaluate(squad_v2_sample(), preds)
    # a: EM 1 F1 1; b: EM 0, F1 vs "1990" = 2*(1/2*1)/(1.5) = 2/3; c: 1/1; d: 0/0
    assert r["exact"] == pytest.approx(100 * 2 / 4)
    assert r["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 4)
    assert r["HasAns_total"] == 2 and r["NoAns_total"] == 2
    assert r["HasAns_exact"] == pytest.approx(50.0)
    assert r["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert r["NoAns_exact"] == pytest.approx(50.0) and r["NoAns_f1"] == pytest.approx(50.0)
    assert "best_f1" not in r  # only with no-answer probabilities


def test_v2_threshold_and_best_threshold_search():
    preds = {"a": "Paris", "b": "1990", "c": "wrong", "d": "also wrong"}
    na = {"a": 0.1, "b": 0.9, "c": 0.5, "d": 0.7}
    r = evaluate_v2(squad_v2_sample()["data"], preds, na)
    # Default threshold 1.0: nothing becomes "no answer": a 1, b 1, c 0, d 0.
    assert r["exact"] == pytest.approx(50.0)
    # Sweep in order a(0.1) b... sorted: a .1, c .5, d .7, b .9; start = #NoAns = 2
    # a: +1 -> 3 (best, thresh .1); c: -1 -> 2; d: -1 -> 1; b: +1 -> 2.  best = 3/4.
    assert r["best_exact"] == pytest.approx(75.0) and r["best_exact_thresh"] == 0.1
    assert r["best_f1"] == pytest.approx(75.0) and r["best_f1_thresh"] == 0.1
    # Threshold 0.6: d (0.7) and b (0.9) become no-answer: a 1, b 0, c 0, d 1.
    r2 = evaluate_v2(squad_v2_sample()["data"], preds, na, na_prob_thresh=0.6)
    assert r2["exact"] == pytest.approx(50.0)
    assert r2["NoAns_exact"] == pytest.approx(50.0) and r2["HasAns_exact"] == pytest.approx(50.0)


def test_v2_missing_prediction_is_skipped():
    r = evaluate(squad_v2_sample(), {"a": "Paris"})
    assert r["total"] == 1 and r["exact"] == 100.0 and r["missing_predictions"] == 3


def test_version_detection_scores_v1_as_v1():
    v1 = squad_json([{"id": "q", "question": "?", "answers": [{"text": "a", "answer_start": 0}]}],
               "1.1")
    # Both normalise to empty: v1.1 gives F1 0 (v2 would give 1).
    assert evaluate(v1, {"q": "the"})["f1"] == 0.0
    assert evaluate_v1(v1["data"], {"q": "the"})["exact_match"] == 100.0
