"""Permutation feature importance, scikit-learn's ``permutation_importance`` on arrays.

For each feature, a fresh ``RandomState`` (seeded from one draw of the caller's seed, as
scikit-learn seeds every column alike) shuffles a row index ``n_repeats`` times; each shuffle
is applied to the already permuted column, and the score's drop from the baseline is that
repeat's importance. The same draws, the same permuted matrices and, for the same
predictions, the same numbers as scikit-learn.
"""
from __future__ import annotations

import numpy as np

METRICS = ("accuracy", "r2", "neg_mean_squared_error", "neg_mean_absolute_error")


def score(metric: str, y, pred, sample_weight=None) -> float:
    """scikit-learn's scorer value of ``metric`` (one of :data:`METRICS`) for predictions
    ``pred`` of targets ``y`` (float64 (n,)), weighted by ``sample_weight`` (n,) or None."""
    y = np.asarray(y, np.float64)
    pred = np.asarray(pred, np.float64)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    if metric == "accuracy":
        return float(np.average(y == pred, weights=w))
    if metric == "neg_mean_squared_error":
        return -float(np.average((y - pred) ** 2, weights=w))
    if metric == "neg_mean_absolute_error":
        return -float(np.average(np.abs(y - pred), weights=w))
    if metric == "r2":
        ww = np.ones_like(y) if w is None else w
        num = (ww * (y - pred) ** 2).sum()
        den = (ww * (y - np.average(y, weights=ww)) ** 2).sum()
        if den == 0.0:
            return 1.0 if num == 0.0 else 0.0
        return float(1.0 - num / den)
    raise ValueError(f"metric {metric!r} is not one of {list(METRICS)}")


def permutation_importance(predict, X, y, metric: str, n_repeats: int = 5, seed: int = 0,
                           sample_weight=None) -> dict:
    """Importances of the columns of ``X`` (float64 (n, d)) for the model ``predict``
    (a function of an (n, d) array returning (n,) predictions).

    Returns
    -------
    dict with ``importances`` float64 (d, n_repeats), ``importances_mean`` and
    ``importances_std`` (d,) (population std, as scikit-learn), ``baseline_score``.
    """
    X = np.array(X, np.float64)
    n, d = X.shape
    if n_repeats < 1:
        raise ValueError(f"nRepeats={n_repeats} is invalid: must be >= 1")
    col_seed = np.random.RandomState(seed).randint(np.iinfo(np.int32).max + 1)
    base = score(metric, y, predict(X), sample_weight)
    imp = np.empty((d, n_repeats))
    for j in range(d):
        rs = np.random.RandomState(col_seed)
        Xp = X.copy()
        idx = np.arange(n)
        for k in range(n_repeats):
            rs.shuffle(idx)
            Xp[:, j] = Xp[idx, j]
            imp[j, k] = base - score(metric, y, predict(Xp), sample_weight)
    return {"importances": imp, "importances_mean": imp.mean(axis=1),
            "importances_std": imp.std(axis=1), "baseline_score": base}
