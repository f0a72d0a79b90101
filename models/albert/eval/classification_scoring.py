"""Sentence-classification and regression metrics, computed exactly from all predictions.

GLUE reports accuracy (SST-2, MNLI, QNLI, RTE), accuracy and F1 (MRPC, QQP), Matthews correlation
(CoLA) and Pearson / Spearman correlation (STS-B). Spearman needs the ranks of every prediction, so
run_classifier gathers all predictions on rank 0 and scores them there; nothing here is averaged
over batches or ranks. NumPy only, so scoring needs no TensorFlow.
"""

from __future__ import annotations

import math

import numpy as np


def accuracy(labels, predictions) -> float:
    """labels, predictions: int [N] class ids -> the fraction equal."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.size == 0:
        return float("nan")
    return float(np.mean(labels == predictions))


def f1_binary(labels, predictions, positive: int = 1) -> float:
    """F1 of the `positive` class over int [N] ids; 0.0 when it is never predicted nor present
    (scikit-learn's zero_division=0)."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    true_pos = float(np.sum((predictions == positive) & (labels == positive)))
    predicted = float(np.sum(predictions == positive))
    actual = float(np.sum(labels == positive))
    if predicted + actual == 0:
        return 0.0
    return 2.0 * true_pos / (predicted + actual)


def matthews_corrcoef(labels, predictions) -> float:
    """Matthews correlation over int [N] ids, any number of classes (the multi-class R_K of
    Gorodkin 2004, which is the usual MCC for two classes); 0.0 when undefined (one class only
    predicted or present), as scikit-learn."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    classes = np.union1d(labels, predictions)
    confusion = np.zeros((len(classes), len(classes)), np.float64)
    np.add.at(confusion, (np.searchsorted(classes, labels), np.searchsorted(classes, predictions)),
              1.0)
    true_per_class = confusion.sum(axis=1)
    pred_per_class = confusion.sum(axis=0)
    correct, total = np.trace(confusion), confusion.sum()
    cov_tp = correct * total - true_per_class @ pred_per_class
    cov_pp = total * total - pred_per_class @ pred_per_class
    cov_tt = total * total - true_per_class @ true_per_class
    if cov_pp * cov_tt == 0:
        return 0.0
    return float(cov_tp / math.sqrt(cov_pp * cov_tt))


def pearson(x, y) -> float:
    """Pearson correlation of float [N] arrays; NaN when either is constant (undefined)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.size < 2:
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0.0:
        return float("nan")
    return float(np.clip((dx @ dy) / denominator, -1.0, 1.0))


def average_ranks(x) -> np.ndarray:
    """float [N] -> 1-based ranks [N], ties sharing the mean of their ranks (scipy's 'average')."""
    x = np.asarray(x)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), np.float64)
    sorted_x = x[order]
    start = 0
    while start < len(x):
        end = start + 1
        while end < len(x) and sorted_x[end] == sorted_x[start]:
            end += 1
        ranks[order[start:end]] = (start + 1 + end) / 2.0  # mean of ranks start+1 .. end
        start = end
    return ranks


def spearman(x, y) -> float:
    """Spearman rank correlation: Pearson of the average ranks."""
    return pearson(average_ranks(x), average_ranks(y))


def softmax_cross_entropy(logits, labels) -> float:
    """Mean cross-entropy of float [N, C] logits against int [N] ids (float64, stable)."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(shifted).sum(axis=1))
    picked = shifted[np.arange(len(labels)), np.asarray(labels)]
    return float(np.mean(log_norm - picked))


def classification_scores(logits, labels, num_labels: int) -> dict:
    """float [N, C] logits and int [N] gold ids -> loss, accuracy, MCC and, for two classes, F1
    of class 1 (the second label: `1` in GLUE's binary tasks)."""
    predictions = np.argmax(np.asarray(logits), axis=1)
    scores = {"loss": softmax_cross_entropy(logits, labels),
              "accuracy": accuracy(labels, predictions),
              "mcc": matthews_corrcoef(labels, predictions)}
    if num_labels == 2:
        scores["f1"] = f1_binary(labels, predictions)
    return scores


def regression_scores(predictions, labels) -> dict:
    """float [N] predictions and gold values -> mean squared error, Pearson, Spearman."""
    predictions, labels = np.asarray(predictions, np.float64), np.asarray(labels, np.float64)
    return {"loss": float(np.mean((predictions - labels) ** 2)),
            "pearson": pearson(predictions, labels),
            "spearman": spearman(predictions, labels)}
