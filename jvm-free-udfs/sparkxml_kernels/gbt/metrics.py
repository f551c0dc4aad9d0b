"""Evaluation metrics from statistics that sum across workers.

``metric_stats(name, y, raw, w)`` returns a small float64 array for this worker's rows;
``collective.allreduce_sum`` adds the arrays of all workers; ``metric_from_stats(name,
stats)`` finishes the metric. Every metric is computed this way, also in a single process, so
early stopping takes the same decisions however the rows are split across workers.

AUC is not a sum of per-row terms. It is computed from two weighted histograms of the
predicted probability (``AUC_BUCKETS`` equal-width buckets over [0, 1], positives and
negatives), pairs within one bucket counting one half. That is exact when no two distinct
scores share a bucket; the measured difference from the exact AUC is ~1e-5 on the LightGBM
binary sample (test: ``test_gbt_booster.py``). :func:`auc_exact` is the sorting reference.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .loss import _sigmoid, _softmax

METRICS = ("rmse", "logloss", "error", "auc", "mlogloss")
AUC_BUCKETS = 1 << 16
_EPS = 1e-15
_CUSTOM = {}


def register_metric(name: str, stats, finish, higher_is_better: bool = False) -> None:
    """Add a metric (e.g. NDCG@k for ranking): ``stats(y, raw, w, group_ptr) -> float64
    array`` (summable across workers) and ``finish(summed_stats) -> float``."""
    _CUSTOM[name] = (stats, finish, bool(higher_is_better))


def known_metrics():
    return METRICS + tuple(_CUSTOM)


def is_known(name: str) -> bool:
    """A built-in or registered metric, or a regression or classification metric
    (``regression_metrics``, ``classification_metrics``), registered here on first use."""
    return name in METRICS or _lookup(name)


def _lookup(name) -> bool:
    if name in _CUSTOM:
        return True
    from . import classification_metrics, regression_metrics

    return (regression_metrics.ensure_metric(name)
            or classification_metrics.ensure_metric(name))


def higher_is_better(name: str) -> bool:
    if _lookup(name):
        return _CUSTOM[name][2]
    return name == "auc"


def metric_stats(name: str, y, raw, w=None, group_ptr=None) -> np.ndarray:
    """Summable statistics of metric ``name`` over these rows.

    Parameters
    ----------
    name : one of ``METRICS``
    y : (n,) labels (values, {0, 1}, or class ids)
    raw : float64 (n,) raw scores, or (n, K) for mlogloss
    w : float64 (n,) or None
    group_ptr : int64 (n_groups + 1,) or None, passed to registered (ranking) metrics

    Returns
    -------
    float64 array: (2,) [weighted sum, weight] for rmse/logloss/error/mlogloss;
    (2 * AUC_BUCKETS,) [positive weights per bucket, negative weights per bucket] for auc.
    """
    if name not in METRICS and _lookup(name):
        return np.asarray(_CUSTOM[name][0](y, raw, w, group_ptr), FLOAT)
    y = np.asarray(y, FLOAT).reshape(-1)
    wt = np.ones(y.size) if w is None else np.asarray(w, FLOAT).reshape(-1)
    raw = np.asarray(raw, FLOAT)
    if name == "rmse":
        r = raw.reshape(-1) - y
        return np.array([np.dot(wt, r * r), wt.sum()])
    if name == "logloss":
        p = np.clip(_sigmoid(raw.reshape(-1)), _EPS, 1 - _EPS)
        ll = -(y * np.log(p) + (1 - y) * np.log(1 - p))
        return np.array([np.dot(wt, ll), wt.sum()])
    if name == "error":
        wrong = (raw.reshape(-1) > 0.0) != (y > 0.5)
        return np.array([np.dot(wt, wrong), wt.sum()])
    if name == "mlogloss":
        if raw.ndim != 2:
            raise ValueError("mlogloss needs (n, K) raw scores")
        p = _softmax(raw)[np.arange(y.size), y.astype(np.int64)]
        return np.array([np.dot(wt, -np.log(np.clip(p, _EPS, 1.0))), wt.sum()])
    if name == "auc":
        p = _sigmoid(raw.reshape(-1))
        b = np.minimum((p * AUC_BUCKETS).astype(np.int64), AUC_BUCKETS - 1)
        pos = y > 0.5
        out = np.zeros(2 * AUC_BUCKETS)
        out[:AUC_BUCKETS] = np.bincount(b[pos], weights=wt[pos], minlength=AUC_BUCKETS)
        out[AUC_BUCKETS:] = np.bincount(b[~pos], weights=wt[~pos], minlength=AUC_BUCKETS)
        return out
    raise ValueError(f"unknown metric {name!r}; known: {known_metrics()}")


def metric_from_stats(name: str, stats) -> float:
    """Finish a metric from (globally summed) :func:`metric_stats`."""
    if name not in METRICS and _lookup(name):
        return float(_CUSTOM[name][1](np.asarray(stats, FLOAT)))
    stats = np.asarray(stats, FLOAT)
    if name == "auc":
        pos, neg = stats[:AUC_BUCKETS], stats[AUC_BUCKETS:]
        P, N = pos.sum(), neg.sum()
        if P <= 0 or N <= 0:
            return float("nan")
        neg_below = np.cumsum(neg) - neg
        return float((np.dot(pos, neg_below) + 0.5 * np.dot(pos, neg)) / (P * N))
    s, wsum = stats
    if wsum <= 0:
        return float("nan")
    v = s / wsum
    return float(np.sqrt(v)) if name == "rmse" else float(v)


def auc_exact(y, score, w=None) -> float:
    """Weighted ROC AUC by sorting (ties count one half); reference for tests."""
    y = np.asarray(y, FLOAT).reshape(-1) > 0.5
    s = np.asarray(score, FLOAT).reshape(-1)
    wt = np.ones(y.size) if w is None else np.asarray(w, FLOAT).reshape(-1)
    order = np.argsort(s, kind="stable")
    s, y, wt = s[order], y[order], wt[order]
    start = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    pos = np.add.reduceat(np.where(y, wt, 0.0), start)
    neg = np.add.reduceat(np.where(y, 0.0, wt), start)
    P, N = pos.sum(), neg.sum()
    if P <= 0 or N <= 0:
        return float("nan")
    neg_below = np.cumsum(neg) - neg
    return float((np.dot(pos, neg_below) + 0.5 * np.dot(pos, neg)) / (P * N))
