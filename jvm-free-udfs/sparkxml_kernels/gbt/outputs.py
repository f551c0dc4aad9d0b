"""A GBT model's outputs from its raw scores, as its Spark ``transform`` gives them.

Shared by the Spark tasks (``sparkxml.gbt.tasks``) and the served predictor
(``sparkxml_kernels.serving``), so both give the same bits.
"""
from __future__ import annotations

import numpy as np

CLASSIFIER_OBJECTIVES = ("logistic", "softmax")


def class_scores(raw, n_outputs):
    """(raw vectors, probabilities) of a classifier: [-m, m] and [1 - p, p] for logistic
    (Spark ML's convention), the K scores and the softmax for multiclass."""
    if n_outputs == 1:
        m = np.asarray(raw, np.float64).reshape(-1)
        e = np.exp(-np.abs(m))  # the sigmoid without overflow warnings
        p1 = np.where(m >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        return np.column_stack([-m, m]), np.column_stack([1.0 - p1, p1])
    rawm = np.asarray(raw, np.float64).reshape(-1, n_outputs)
    if not rawm.size:
        return rawm, rawm
    e = np.exp(rawm - rawm.max(axis=1, keepdims=True))
    return rawm, e / e.sum(axis=1, keepdims=True)


def predict_from_probability(prob, thresholds=None):
    """Class index per row: argmax of p / t with ``thresholds`` t (a 0 threshold makes its
    class win whenever its probability is > 0), as Spark ML's probabilistic classifiers;
    argmax of p without."""
    if not prob.size:
        return np.zeros(0)
    if thresholds is None:
        return np.argmax(prob, axis=1).astype(np.float64)
    t = np.asarray(thresholds, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(t == 0.0, np.where(prob > 0, np.inf, 0.0), prob / np.where(t == 0,
                                                                                  1.0, t))
    return np.argmax(scaled, axis=1).astype(np.float64)
