"""Feature importances of a boosted ensemble, with XGBoost's ``get_score`` definitions.

Over every split node of every tree, for each feature ``f``:

``weight``       the number of splits on ``f`` (LightGBM's ``split``; "split" is accepted)
``total_gain``   the sum of the splits' gains (loss reduction, ``gain`` of the node arrays)
``total_cover``  the sum of the splits' covers (hessian sums of the split nodes)
``gain``         ``total_gain / weight``: the average gain of a split on ``f``
``cover``        ``total_cover / weight``: the average cover

Features never split on have no score (XGBoost leaves them out of ``get_score``'s dict).
Categorical splits count as splits of their feature, as in XGBoost.

Differences from XGBoost: the gains and covers are float64 (XGBoost stores float32 and sums
them in float32/double), so the scores agree to float32 precision. With ``minSplitLoss``
> 0 a node's gain is the loss reduction minus ``minSplitLoss`` (booster.py), where XGBoost
stores the reduction itself.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT

IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")
_ALIASES = {"split": "weight"}


def check_importance_type(importance_type: str) -> str:
    """The canonical name of ``importance_type``; ValueError naming the allowed ones."""
    t = _ALIASES.get(importance_type, importance_type)
    if t not in IMPORTANCE_TYPES:
        raise ValueError(f"importanceType must be one of {list(IMPORTANCE_TYPES)} (or "
                         f"'split' = 'weight'), got {importance_type!r}")
    return t


def importance_scores(feature, left, gain, cover, n_features: int, importance_type: str):
    """Per-feature scores of the split nodes of an ensemble's flat node arrays.

    Parameters
    ----------
    feature : int (N,)
        Split feature of every node (any value on leaves).
    left : int (N,)
        Left child of every node, -1 on leaves.
    gain, cover : float64 (N,)
        Split gain and hessian cover of every node.
    n_features : int
    importance_type : str
        One of :data:`IMPORTANCE_TYPES` (or "split").

    Returns
    -------
    scores : float64 (n_features,)
        0 where a feature has no split.
    used : bool (n_features,)
        Features with at least one split (those ``get_score`` reports).

    Examples
    --------
    >>> import numpy as np
    >>> s, used = importance_scores(np.array([1, 0, 1, 0, 0]), np.array([1, 3, -1, -1, -1]),
    ...                             np.array([4.0, 2.0, 0, 0, 0]), np.array([10.0, 6, 4, 3, 3]),
    ...                             3, "gain")
    >>> s.tolist(), used.tolist()
    ([2.0, 4.0, 0.0], [True, True, False])
    """
    t = check_importance_type(importance_type)
    split = np.asarray(left) >= 0
    f = np.asarray(feature)[split].astype(np.int64)
    count = np.bincount(f, minlength=n_features).astype(FLOAT)
    used = count > 0
    if t == "weight":
        return count, used
    w = np.asarray(gain if "gain" in t else cover, FLOAT)[split]
    total = np.bincount(f, weights=w, minlength=n_features).astype(FLOAT)
    if t.startswith("total_"):
        return total, used
    return np.divide(total, count, out=np.zeros(n_features, FLOAT), where=used), used


def importance_scores_naive(trees, n_features: int, importance_type: str) -> dict:
    """Slow twin of :func:`importance_scores`: {feature id: score} of the used features,
    tree by tree from ``TreeEnsemblePredictor.tree`` dicts."""
    t = check_importance_type(importance_type)
    stats = {}
    for tree in trees:
        for node in range(len(tree["left"])):
            if tree["left"][node] < 0:
                continue
            s = stats.setdefault(int(tree["feature"][node]), [0, 0.0, 0.0])
            s[0] += 1
            s[1] += float(tree["gain"][node])
            s[2] += float(tree["cover"][node])
    out = {}
    for f, (n, g, c) in stats.items():
        out[f] = {"weight": float(n), "total_gain": g, "total_cover": c, "gain": g / n,
                  "cover": c / n}[t]
    return out
