"""DART: dropout for boosted trees (XGBoost's ``dart`` booster, Rashmi & Gilad-Bachrach 2015).

Every round, before the gradients, some of the existing trees are dropped; the round's new
tree(s) are fitted to the gradients of the remaining ensemble, then the dropped trees and the
new ones are rescaled so that the ensemble's output stays on scale. With ``k`` trees dropped
and ``lr = learning_rate / trees per round`` (XGBoost divides by the number of outputs)::

    normalizeType "tree":    dropped x k / (k + lr),   new weight 1 / (k + lr)
    normalizeType "forest":  dropped x 1 / (1 + lr),   new weight 1 / (1 + lr)
    nothing dropped:         new weight 1

(the new trees' leaves already carry the learning rate). Dropping (XGBoost's ``DropTrees``):
with probability ``skipDrop`` nothing is dropped this round; otherwise tree ``i`` of ``T`` is
dropped with probability ``rateDrop`` ("uniform") or ``rateDrop * T * w_i / sum(w)``
("weighted", ``w`` the current weights), and with ``oneDrop`` one tree (uniform, or in
proportion to its weight) when none was.

Unlike XGBoost, the draws come from ``numpy.random.default_rng([seed, round, DART_STREAM])``,
the same on every worker, so the model does not depend on the number of workers (XGBoost
draws from its global Mersenne twister; same parameters, different dropped trees). Weights
are float64 (XGBoost's float32).

Weights are applied to the trees' values as they change: a model's ``value`` arrays hold
``weight x leaf`` (prediction, leaves, SHAP and every export read them as plain trees), and
``tree_weights`` records each tree's weight (predictor.py; XGBoost's ``weight_drop``).
Evaluation metrics, as XGBoost's, use all trees with their weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._dtypes import FLOAT
from .binned import route_binned_any

BOOSTER_TYPES = ("gbtree", "dart")
NORMALIZE_TYPES = ("tree", "forest")
SAMPLE_TYPES = ("uniform", "weighted")
# third seed word of the dropout draws: a stream apart from column sampling's [seed, round, k]
DART_STREAM = 0xDA27


@dataclass(frozen=True)
class DartParams:
    """rate_drop in [0, 1]; skip_drop in [0, 1]; one_drop; normalize_type "tree" | "forest";
    sample_type "uniform" | "weighted" (XGBoost's ``rate_drop``, ``skip_drop``, ``one_drop``,
    ``normalize_type``, ``sample_type``)."""

    rate_drop: float = 0.0
    skip_drop: float = 0.0
    one_drop: bool = False
    normalize_type: str = "tree"
    sample_type: str = "uniform"

    def __post_init__(self):
        if not 0.0 <= self.rate_drop <= 1.0:
            raise ValueError(f"rateDrop must be in [0, 1], got {self.rate_drop}")
        if not 0.0 <= self.skip_drop <= 1.0:
            raise ValueError(f"skipDrop must be in [0, 1], got {self.skip_drop}")
        if self.normalize_type not in NORMALIZE_TYPES:
            raise ValueError(f"normalizeType must be one of {list(NORMALIZE_TYPES)}, got "
                             f"{self.normalize_type!r}")
        if self.sample_type not in SAMPLE_TYPES:
            raise ValueError(f"sampleType must be one of {list(SAMPLE_TYPES)}, got "
                             f"{self.sample_type!r}")


def draw_drops(params: DartParams, weights, seed: int, round_: int) -> np.ndarray:
    """int64 ascending indices of the trees dropped in round ``round_`` (``weights``: the
    current weight of every existing tree)."""
    w = np.asarray(weights, FLOAT)
    T = w.size
    if T == 0:
        return np.zeros(0, np.int64)
    rng = np.random.default_rng([seed & (2**63 - 1), round_, DART_STREAM])
    if params.skip_drop > 0.0 and rng.random() < params.skip_drop:
        return np.zeros(0, np.int64)
    u = rng.random(T)
    weighted = params.sample_type == "weighted"
    if weighted:
        drop = u < params.rate_drop * T * w / w.sum()
    else:
        drop = u < params.rate_drop
    idx = np.flatnonzero(drop).astype(np.int64)
    if params.one_drop and idx.size == 0:
        pick = rng.choice(T, p=w / w.sum()) if weighted else rng.integers(T)
        idx = np.array([pick], np.int64)
    return idx


def normalization(params: DartParams, n_dropped: int, learning_rate: float,
                  trees_per_round: int):
    """(factor for the dropped trees, weight of the new trees) of one round.

    Examples
    --------
    >>> normalization(DartParams(rate_drop=0.1), 3, 0.5, 1)       # k / (k + lr), 1 / (k + lr)
    (0.8571428571428571, 0.2857142857142857)
    >>> normalization(DartParams(normalize_type="forest"), 3, 0.5, 1)
    (0.6666666666666666, 0.6666666666666666)
    >>> normalization(DartParams(), 0, 0.5, 1)                     # nothing dropped
    (1.0, 1.0)
    """
    if n_dropped == 0:
        return 1.0, 1.0
    lr = learning_rate / trees_per_round
    if params.normalize_type == "forest":
        f = 1.0 / (1.0 + lr)
        return f, f
    return n_dropped / (n_dropped + lr), 1.0 / (n_dropped + lr)


class Dropout:
    """The DART state of one training run: every tree's weight, and the round's drops.

    ``begin(round)`` draws the dropped trees; ``dropped_scores`` gives their (weighted)
    outputs on a binned matrix, which the booster subtracts before the gradients;
    ``commit(new_trees)`` rescales the dropped trees' values in place, weights the new
    trees and returns the dropped trees' factor (the booster rescales their part of the raw
    scores by it)."""

    def __init__(self, params: DartParams, seed: int, learning_rate: float, n_outputs: int):
        self.params = params
        self.seed = int(seed)
        self.learning_rate = float(learning_rate)
        self.n_outputs = int(n_outputs)
        self.weights: list[float] = []
        self.dropped = np.zeros(0, np.int64)

    def begin(self, round_: int) -> np.ndarray:
        self.dropped = draw_drops(self.params, self.weights, self.seed, round_)
        return self.dropped

    def dropped_scores(self, binned, trees, n_rows: int) -> np.ndarray:
        """float64 (n_rows, n_outputs): the dropped trees' summed outputs per row."""
        out = np.zeros((n_rows, self.n_outputs), FLOAT)
        for t in self.dropped:
            tree = trees[t]
            out[:, t % self.n_outputs] += tree.value[route_binned_any(binned, tree)]
        return out

    def kept_scores(self, binned, trees, init, exact: bool) -> np.ndarray | None:
        """float64 (n_rows, n_outputs): ``init`` plus the kept trees' outputs summed afresh in
        tree order (XGBoost's training prediction), when ``exact`` (tie-sensitive objectives:
        ranking) or when fewer trees are kept than dropped; None otherwise (the booster then
        subtracts the dropped trees' outputs from the full scores, which differs by rounding:
        rows whose exact scores tie may no longer tie)."""
        kept = np.setdiff1d(np.arange(len(self.weights)), self.dropped)
        if not exact and kept.size >= self.dropped.size:
            return None
        out = np.array(init, FLOAT)
        for t in kept:
            tree = trees[t]
            out[:, t % self.n_outputs] += tree.value[route_binned_any(binned, tree)]
        return out

    def weight_new(self) -> float:
        return normalization(self.params, self.dropped.size, self.learning_rate,
                             self.n_outputs)[1]

    def commit(self, trees, n_new: int) -> float:
        """Rescale the dropped trees (their values, in place) and record the weights of the
        ``n_new`` trees appended last (whose values the booster already multiplied by
        :meth:`weight_new`). Returns the dropped trees' factor."""
        factor, w_new = normalization(self.params, self.dropped.size, self.learning_rate,
                                      self.n_outputs)
        for t in self.dropped:
            trees[t].value *= factor
            self.weights[t] *= factor
        self.weights.extend([w_new] * n_new)
        return factor

    def tree_weights(self, n_trees: int) -> np.ndarray:
        return np.asarray(self.weights[:n_trees], FLOAT)


def dart_params(p) -> DartParams:
    """The DartParams of ``BoosterParams`` ``p``."""
    return DartParams(p.rateDrop, p.skipDrop, bool(p.oneDrop), p.normalizeType, p.sampleType)
