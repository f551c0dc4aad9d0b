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


# ------------------------------------------------------------------ distributed mode
def score_terms(metric: str, y, pred, sample_weight=None) -> np.ndarray:
    """float64 (4,): sums over rows that :func:`score_from_terms` turns into ``metric``'s
    score, so that blocks of rows scored apart add up: [Σw·hit or Σw·loss, Σw, Σw·y, Σw·y²]."""
    y = np.asarray(y, np.float64)
    pred = np.asarray(pred, np.float64)
    w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if metric == "accuracy":
        first = float(np.dot(w, y == pred))
    elif metric == "neg_mean_absolute_error":
        first = float(np.dot(w, np.abs(y - pred)))
    elif metric in ("neg_mean_squared_error", "r2"):
        first = float(np.dot(w, (y - pred) ** 2))
    else:
        raise ValueError(f"metric {metric!r} is not one of {list(METRICS)}")
    return np.array([first, w.sum(), np.dot(w, y), np.dot(w, y * y)])


def score_from_terms(metric: str, t) -> float:
    """``metric``'s score from summed :func:`score_terms` (r2's total sum of squares as
    Σw·y² - (Σw·y)²/Σw)."""
    s, sw, swy, swyy = (float(v) for v in t)
    if metric == "accuracy":
        return s / sw
    if metric in ("neg_mean_squared_error", "neg_mean_absolute_error"):
        return -s / sw
    den = swyy - swy * swy / sw
    if den <= 0.0:
        return 1.0 if s == 0.0 else 0.0
    return 1.0 - s / den


def block_importance_terms(predict, X, y, metric: str, n_repeats: int, seed: int, block: int,
                           sample_weight=None) -> np.ndarray:
    """One block of rows' terms (float64 (1 + d * n_repeats, 4)): row 0 the baseline's, row
    1 + j * n_repeats + k those of feature j permuted within the block by
    ``numpy.random.default_rng([seed, block, j, k])`` (each repeat a fresh permutation of the
    original column)."""
    X = np.array(X, np.float64)
    n, d = X.shape
    out = np.empty((1 + d * n_repeats, 4))
    out[0] = score_terms(metric, y, predict(X), sample_weight)
    for j in range(d):
        col = X[:, j].copy()
        for k in range(n_repeats):
            X[:, j] = col[np.random.default_rng([seed, block, j, k]).permutation(n)]
            out[1 + j * n_repeats + k] = score_terms(metric, y, predict(X), sample_weight)
        X[:, j] = col
    return out
