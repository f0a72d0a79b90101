"""The classification / regression metrics against scikit-learn and scipy on random inputs."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from albert.eval.classification_scoring import (
    accuracy,
    average_ranks,
    classification_scores,
    f1_binary,
    matthews_corrcoef,
    pearson,
    regression_scores,
    softmax_cross_entropy,
    spearman,
)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("classes", [2, 3, 7])
def test_class_metrics_match_sklearn(seed, classes):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    labels = rng.integers(0, classes, n)
    # Predictions that agree with the labels more often than chance, so MCC is not ~0.
    predictions = np.where(rng.random(n) < 0.6, labels, rng.integers(0, classes, n))
    assert accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions))
    assert matthews_corrcoef(labels, predictions) == pytest.approx(
        sk.matthews_corrcoef(labels, predictions), abs=1e-12)
    if classes == 2:
        assert f1_binary(labels, predictions) == pytest.approx(
            sk.f1_score(labels, predictions), abs=1e-12)


def test_class_metrics_edge_cases_match_sklearn():
    cases = [
        ([0, 0, 0, 0], [0, 0, 0, 0]),  # one class only: MCC undefined -> 0, F1 0 (no positives)
        ([1, 1, 1], [1, 1, 1]),
        ([0, 1, 0, 1], [0, 0, 0, 0]),  # never predicts the positive class
        ([0, 1, 1, 0], [1, 0, 0, 1]),  # always wrong: MCC -1
        ([0, 1], [1, 1]),
    ]
    for labels, predictions in cases:
        assert matthews_corrcoef(labels, predictions) == pytest.approx(
            sk.matthews_corrcoef(labels, predictions), abs=1e-12), (labels, predictions)
        assert f1_binary(labels, predictions) == pytest.approx(
            sk.f1_score(labels, predictions, zero_division=0.0), abs=1e-12), (labels, predictions)


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 500))
    x = rng.normal(size=n)
    y = 0.5 * x + rng.normal(size=n)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    # Ties (STS-B's gold scores come in steps of 0.2): scipy's average ranks.
    tied_x, tied_y = np.round(x, 0), np.round(y * 5) / 5
    np.testing.assert_allclose(average_ranks(tied_x), stats.rankdata(tied_x), atol=0)
    assert spearman(tied_x, tied_y) == pytest.approx(stats.spearmanr(tied_x, tied_y)[0],
                                                     abs=1e-12)


def test_correlation_of_a_constant_is_nan():
    assert np.isnan(pearson([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]))
    assert np.isnan(spearman([3.0, 3.0], [1.0, 2.0]))
    assert np.isnan(pearson([1.0], [2.0]))


def test_scores_bundle_the_metrics_of_the_task():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(50, 2))
    labels = rng.integers(0, 2, 50)
    scores = classification_scores(logits, labels, 2)
    predictions = logits.argmax(axis=1)
    assert scores["accuracy"] == pytest.approx(sk.accuracy_score(labels, predictions))
    assert scores["f1"] == pytest.approx(sk.f1_score(labels, predictions))
    assert scores["mcc"] == pytest.approx(sk.matthews_corrcoef(labels, predictions))
    assert scores["loss"] == pytest.approx(sk.log_loss(labels, np.exp(logits) / np.exp(
        logits).sum(axis=1, keepdims=True)))
    assert "f1" not in classification_scores(rng.normal(size=(9, 3)), rng.integers(0, 3, 9), 3)
    predicted, gold = rng.normal(size=40), rng.normal(size=40)
    scores = regression_scores(predicted, gold)
    assert scores["loss"] == pytest.approx(sk.mean_squared_error(gold, predicted))
    assert scores["pearson"] == pytest.approx(stats.pearsonr(predicted, gold)[0])
    assert scores["spearman"] == pytest.approx(stats.spearmanr(predicted, gold)[0])
    # Large logits stay finite.
    assert softmax_cross_entropy(np.array([[1000.0, 0.0]]), np.array([1])) == pytest.approx(1000)
