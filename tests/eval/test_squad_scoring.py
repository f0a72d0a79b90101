"""Official SQuAD scoring rules, each on hand-computed cases."""

import json
import subprocess
import sys

import pytest

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


def squad(qas, version):
    return {"version": version, "data": [{"title": "t", "paragraphs": [
        {"context": "ctx", "qas": qas}]}]}


def test_v1_max_over_gold_answers_and_missing_predictions():
    data = squad([
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


def v2_data():
    return squad([
        {"id": "a", "question": "?", "is_impossible": False,
         "answers": [{"text": "Paris", "answer_start": 0}]},
        {"id": "b", "question": "?", "is_impossible": False,
         "answers": [{"text": "in 1990", "answer_start": 0}, {"text": "1990", "answer_start": 3}]},
        {"id": "c", "question": "?", "is_impossible": True, "answers": []},
        {"id": "d", "question": "?", "is_impossible": True, "answers": []},
    ], "v2.0")


def test_v2_unanswerable_and_breakdown():
    preds = {"a": "paris.", "b": "1990 year", "c": "", "d": "something"}
    r = evaluate(v2_data(), preds)
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
    r = evaluate_v2(v2_data()["data"], preds, na)
    # Default threshold 1.0: nothing becomes "no answer": a 1, b 1, c 0, d 0.
    assert r["exact"] == pytest.approx(50.0)
    # Sweep in order a(0.1) b... sorted: a .1, c .5, d .7, b .9; start = #NoAns = 2
    # a: +1 -> 3 (best, thresh .1); c: -1 -> 2; d: -1 -> 1; b: +1 -> 2.  best = 3/4.
    assert r["best_exact"] == pytest.approx(75.0) and r["best_exact_thresh"] == 0.1
    assert r["best_f1"] == pytest.approx(75.0) and r["best_f1_thresh"] == 0.1
    # Threshold 0.6: d (0.7) and b (0.9) become no-answer: a 1, b 0, c 0, d 1.
    r2 = evaluate_v2(v2_data()["data"], preds, na, na_prob_thresh=0.6)
    assert r2["exact"] == pytest.approx(50.0)
    assert r2["NoAns_exact"] == pytest.approx(50.0) and r2["HasAns_exact"] == pytest.approx(50.0)


def test_v2_missing_prediction_is_skipped():
    r = evaluate(v2_data(), {"a": "Paris"})
    assert r["total"] == 1 and r["exact"] == 100.0 and r["missing_predictions"] == 3


def test_version_detection_scores_v1_as_v1():
    v1 = squad([{"id": "q", "question": "?", "answers": [{"text": "a", "answer_start": 0}]}],
               "1.1")
    # Both normalise to empty: v1.1 gives F1 0 (v2 would give 1).
    assert evaluate(v1, {"q": "the"})["f1"] == 0.0
    assert evaluate_v1(v1["data"], {"q": "the"})["exact_match"] == 100.0


@pytest.mark.e2e
def test_cli_prints_json_and_errors(tmp_path):
    data, preds, na = tmp_path / "d.json", tmp_path / "p.json", tmp_path / "n.json"
    data.write_text(json.dumps(v2_data()))
    preds.write_text(json.dumps({"a": "Paris", "b": "1990", "c": "", "d": ""}))
    na.write_text(json.dumps({"a": 0.0, "b": 0.0, "c": 1.0, "d": 1.0}))
    out = subprocess.run([sys.executable, "-m", "albert.squad_eval", str(data), str(preds),
                          "--na_prob_file", str(na)], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["exact"] == 100.0 and result["best_f1"] == 100.0
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "albert.squad_eval", str(bad), str(preds)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "is not valid JSON" in proc.stderr


# -- hostile input (issue 13) -----------------------------------------------------------------


def squad_eval(*argv):
    return subprocess.run([sys.executable, "-m", "albert.squad_eval", *map(str, argv)],
                          capture_output=True, text=True, timeout=120)


def write_json(path, obj):
    path.write_text(json.dumps(obj))
    return path


@pytest.mark.e2e
def test_null_odds_missing_ids_is_an_error_naming_them(tmp_path):
    """Item 6: a no-answer file without some predicted ids made best_f1 65 (below plain F1 100)
    without a word; the official v2.0 script raises KeyError there: one error line naming the
    count and the ids, exit 2."""
    data = write_json(tmp_path / "d.json", v2_data())
    preds = write_json(tmp_path / "p.json", {"a": "Paris", "b": "1990", "c": "", "d": ""})
    na = write_json(tmp_path / "n.json", {"a": 0.0, "b": 0.0})
    proc = squad_eval(data, preds, "--na_prob_file", na)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"error: no-answer file {na}: no value for 2 of the 4 predicted questions: 'c', 'd'; the "
        "official SQuAD v2.0 script stops on such a file (KeyError) and best_f1 without them "
        "would be wrong: write a value for every question"]
    # An id without a prediction needs no value (the official script never looks it up); ids
    # the data does not have are ignored, as there.
    write_json(preds, {"a": "Paris", "b": "1990", "c": ""})
    write_json(na, {"a": 0.0, "b": 0.0, "c": 1.0, "zz": 0.5})
    ok = squad_eval(data, preds, "--na_prob_file", na)
    assert ok.returncode == 0, ok.stderr
    # Over the 3 scored questions (the official sweep mixes in unpredicted 'd': 133.3).
    assert json.loads(ok.stdout)["best_f1"] == 100.0


@pytest.mark.e2e
def test_missing_predictions_warn_as_the_official_scripts(tmp_path):
    """Item 6 (predictions missing ids): v2.0 leaves them out of the scores, v1.1 scores them 0
    (each official script's rule), and both warn on stderr with the count and the ids."""
    data = write_json(tmp_path / "d.json", v2_data())
    preds = write_json(tmp_path / "p.json", {"a": "Paris", "c": ""})
    proc = squad_eval(data, preds)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["total"] == 2 and result["exact"] == 100.0 and result["missing_predictions"] == 2
    assert proc.stderr.splitlines() == [
        f"warning: 2 of the questions in {data} have no prediction in {preds} (b, d); as in the "
        "official v2.0 script they are left out of every score and total"]
    v1 = write_json(tmp_path / "v1.json", squad(
        [{"id": "q1", "question": "?", "answers": [{"text": "x", "answer_start": 0}]},
         {"id": "q2", "question": "?", "answers": [{"text": "y", "answer_start": 0}]}], "1.1"))
    proc = squad_eval(v1, write_json(tmp_path / "p1.json", {"q1": "x"}))
    assert proc.returncode == 0 and json.loads(proc.stdout)["exact_match"] == 50.0
    assert "scored 0 and counted in the total" in proc.stderr and "(q2)" in proc.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(
    "preds, na, message",
    [
        ({"a": "Paris", "b": 1990, "c": "", "d": None}, None,
         "error: predictions file {p}: 2 answer(s) are not strings (e.g. 'b': int 1990); "
         "ids: 'b', 'd'"),
        ({"a": "Paris", "b": "1990", "c": "", "d": ""}, {"a": 0, "b": "high", "c": 1, "d": 1},
         "error: no-answer file {n}: 1 value(s) are not numbers (e.g. 'b': str 'high'); ids: 'b'"),
        ({"a": "Paris", "b": "1990", "c": "", "d": ""}, {"a": 0, "b": None, "c": 1, "d": True},
         "error: no-answer file {n}: 2 value(s) are not numbers (e.g. 'b': NoneType None); "
         "ids: 'b', 'd'"),
        (["Paris"], None, "error: predictions file {p} must map question ids to answer strings, "
                          "got list"),
    ],
)
def test_non_string_prediction_or_non_numeric_null_odds_is_one_line_error(preds, na, message,
                                                                           tmp_path):
    """Item 12 (squad_eval): were TypeError/AttributeError tracebacks."""
    data = write_json(tmp_path / "d.json", v2_data())
    p = write_json(tmp_path / "p.json", preds)
    argv = [data, p]
    n = tmp_path / "n.json"
    if na is not None:
        argv += ["--na_prob_file", write_json(n, na)]
    proc = squad_eval(*argv)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [message.format(p=p, n=n)]


def test_squad_eval_prints_no_start_up_lines(tmp_path):
    """Issue 27: squad_eval starts as every tool (flags.quiet_start): stderr holds nothing but
    what it says itself."""
    from helpers import as_a_user_runs, start_up_noise

    data = write_json(tmp_path / "d.json", v2_data())
    preds = write_json(tmp_path / "p.json", {"a": "Paris", "b": "1990", "c": "", "d": ""})
    proc = as_a_user_runs("squad_eval", data, preds)
    assert proc.returncode == 0, proc.stderr
    assert start_up_noise(proc.stderr) == [] and proc.stderr == ""
    assert json.loads(proc.stdout)["exact"] == 100.0
