"""Evaluation metrics of classification beyond ``metrics.METRICS``, under XGBoost's names, as
summable statistics (``metrics.register_metric``):

=========== ===========================================================================
error@t     weighted share of rows with ``(sigmoid(raw) > t) != (y == 1)`` (t in (0, 1);
            ``error`` is error@0.5)
aucpr       area under the precision-recall curve, from the same two bucket histograms as
            ``auc`` (positives / negatives per bucket of the probability), each bucket one
            threshold; between thresholds the curve is interpolated as XGBoost does (Davis
            and Goadrich: precision follows the line of true against false positives, not a
            straight line in PR space), so the value is XGBoost's ``aucpr`` when no two
            distinct scores share a bucket
merror      weighted share of rows whose largest raw score (first one on ties) is not their
            class
=========== ===========================================================================

:func:`aucpr_exact` is the sorting reference of ``aucpr``.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT

PLAIN = ("aucpr", "merror")
MULTICLASS = ("mlogloss", "merror")


def is_classification_metric(name: str) -> bool:
    """``aucpr``, ``merror`` or ``error@t`` with t in (0, 1)."""
    base, at, param = str(name).partition("@")
    if base in PLAIN:
        return not at
    if base == "error" and at:
        try:
            return 0.0 < float(param) < 1.0
        except ValueError:
            return False
    return False


def pr_area(pos, neg) -> float:
    """Area under the PR curve from weights of positives and negatives per threshold group,
    highest score first (XGBoost's interpolation, see the module docstring)."""
    pos = np.asarray(pos, FLOAT)
    neg = np.asarray(neg, FLOAT)
    P, N = pos.sum(), neg.sum()
    if P <= 0 or N <= 0:
        return float("nan")
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    tp_prev = np.concatenate(([0.0], tp[:-1]))
    fp_prev = np.concatenate(([0.0], fp[:-1]))
    keep = (pos > 0) | (neg > 0)
    tp, fp, tp_prev, fp_prev = tp[keep], fp[keep], tp_prev[keep], fp_prev[keep]
    dtp = tp - tp_prev
    # along a step the false positives grow by h per true positive: precision is
    # tp / (tp + fp_prev + h (tp - tp_prev)), integrated in closed form over recall
    moved = dtp > 0
    h = np.where(moved, (fp - fp_prev) / np.where(moved, dtp, 1.0), 0.0)
    a = 1.0 + h
    b = np.where(moved, (fp_prev - h * tp_prev) / P, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log((a * tp / P + b) / np.where(b != 0, a * tp_prev / P + b, 1.0))
        area = np.where(b != 0, (dtp / P - b / a * logs) / a, dtp / P / a)
    return float(np.sum(np.where(moved, area, 0.0)))


def aucpr_exact(y, score, w=None) -> float:
    """XGBoost's ``aucpr`` by sorting the scores (ties are one threshold); reference for
    tests."""
    y = np.asarray(y, FLOAT).reshape(-1) > 0.5
    s = np.asarray(score, FLOAT).reshape(-1)
    wt = np.ones(y.size) if w is None else np.asarray(w, FLOAT).reshape(-1)
    order = np.argsort(-s, kind="stable")
    s, y, wt = s[order], y[order], wt[order]
    start = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    return pr_area(np.add.reduceat(np.where(y, wt, 0.0), start),
                   np.add.reduceat(np.where(y, 0.0, wt), start))


def _error_at(t):
    def stats(y, raw, w, group_ptr):
        from .loss import _sigmoid

        y = np.asarray(y, FLOAT).reshape(-1)
        wrong = (_sigmoid(np.asarray(raw, FLOAT).reshape(-1)) > t) != (y > 0.5)
        wt = np.ones(y.size) if w is None else np.asarray(w, FLOAT).reshape(-1)
        return np.array([np.dot(wt, wrong), wt.sum()])

    return stats


def _merror_stats(y, raw, w, group_ptr):
    raw = np.asarray(raw, FLOAT)
    if raw.ndim != 2:
        raise ValueError("merror needs (n, K) raw scores")
    y = np.asarray(y, FLOAT).reshape(-1)
    wrong = np.argmax(raw, axis=1) != y.astype(np.int64)
    wt = np.ones(y.size) if w is None else np.asarray(w, FLOAT).reshape(-1)
    return np.array([np.dot(wt, wrong), wt.sum()])


def _aucpr_stats(y, raw, w, group_ptr):
    from .metrics import metric_stats

    return metric_stats("auc", y, raw, w)


def _aucpr_finish(s):
    from .metrics import AUC_BUCKETS

    # buckets from the highest probability down
    return pr_area(s[:AUC_BUCKETS][::-1], s[AUC_BUCKETS:][::-1])


def _mean(s):
    return float(s[0] / s[1]) if s[1] > 0 else float("nan")


def ensure_metric(name: str) -> bool:
    """Register ``name`` with ``metrics.register_metric`` if it is one of these metrics;
    returns whether it is one."""
    from .metrics import _CUSTOM, register_metric

    if name in _CUSTOM:
        return True
    if not is_classification_metric(name):
        return False
    if name == "aucpr":
        register_metric(name, _aucpr_stats, _aucpr_finish, higher_is_better=True)
    elif name == "merror":
        register_metric(name, _merror_stats, _mean)
    else:
        register_metric(name, _error_at(float(name.partition("@")[2])), _mean)
    return True
