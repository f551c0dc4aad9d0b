"""scikit-learn's ``RandomForestClassifier`` replayed on rows in a given order.

scikit-learn's forest depends on the order of its samples: tree ``t``'s seed is the t-th
``randint(2**31 - 1)`` of ``RandomState(random_state)``; the tree's bootstrap sample is
``RandomState(seed_t).randint(0, n, n_boot)`` (or, with sample or class weights,
``RandomState(seed_t).choice(n, n_boot, p=w / w.sum())``: scikit-learn 1.9 draws weighted
samples and then weighs each drawn row by its count only); its splitter draws features from
``RandomState(seed_t).randint(0, RAND_R_MAX)`` (``splitter.sklearn_seed``); and its sums add
samples in the order its sorts leave (``ordered.grow_tree_ordered``). Given the rows in
scikit-learn's order, this module makes every one of those draws with numpy's own
``RandomState`` and grows each tree with the ordered grower, so the forest is scikit-learn's
node for node and bit for bit, whichever process grows which tree.

Weights, as scikit-learn 1.9's forests apply them (``w`` = sample weight times the expanded
``class_weight`` 'balanced' or dict, ``None`` when neither is given; 'balanced' counts the
classes by their sample weights):

- bootstrap: a row's weight in tree t is its count in t's sample, times
  ``bootstrap.subsample_class_weights`` of that sample with ``balanced_subsample``;
- no bootstrap: every tree weighs the rows by ``w`` ('balanced_subsample' is then
  'balanced' over all rows, as there), or 1.
"""
from __future__ import annotations

import numpy as np

from .bootstrap import subsample_class_weights
from .ordered import grow_tree_ordered
from .predictor import ForestPredictor
from .splitter import sklearn_seed
from .tree import SplitParams, TreeArrays

MAX_INT = np.iinfo(np.int32).max


def tree_seeds(random_state: int, n_trees: int) -> list:
    """Each tree's ``random_state``, drawn as scikit-learn's ``_set_random_states`` draws
    them: one ``randint(MAX_INT)`` per tree, in order, from ``RandomState(random_state)``."""
    rs = np.random.RandomState(int(random_state))
    return [int(rs.randint(MAX_INT)) for _ in range(int(n_trees))]


def n_bootstrap(n: int, rate: float, w: np.ndarray | None) -> int:
    """scikit-learn's ``_get_n_samples_bootstrap`` with ``max_samples`` None for rate 1,
    else the float ``rate`` (of the rows, or of the weight sum when weights are given)."""
    if rate >= 1.0:
        return int(n)
    total = n if w is None else float(w.sum())
    return max(int(rate * total), 1)


def sample_counts(tree_seed: int, n: int, n_boot: int, w: np.ndarray | None) -> np.ndarray:
    """int64 (n,): each row's count in the tree's bootstrap sample
    (``_generate_sample_indices`` then ``bincount``)."""
    rs = np.random.RandomState(int(tree_seed))
    if w is None:
        idx = rs.randint(0, n, n_boot)
    else:
        idx = rs.choice(n, n_boot, replace=True, p=w / np.sum(w))
    return np.bincount(idx.astype(np.int32), minlength=n)


def balanced_weights(cls: np.ndarray, n_classes: int, sw: np.ndarray | None) -> np.ndarray:
    """float64 (n_classes,): scikit-learn 1.9's ``compute_class_weight("balanced")`` with
    sample weights: the weight sum over (classes present x the class's weight sum); a class
    absent from ``cls`` weighs 0."""
    counts = np.bincount(cls, weights=sw, minlength=n_classes).astype(np.float64)
    present = np.bincount(cls, minlength=n_classes) > 0
    out = np.zeros(n_classes)
    out[present] = np.sum(counts[present]) / (present.sum() * counts[present])
    return out


def forest_weights(cls: np.ndarray, n_classes: int, sw: np.ndarray | None, class_weight,
                   bootstrap: bool) -> np.ndarray | None:
    """float64 (n,) or None: the forest's ``_sample_weight`` (the sample weights times the
    expanded class weights). ``class_weight``: None, "balanced", "balanced_subsample" (with
    bootstrap weighed per tree instead, :func:`tree_weights`; without, "balanced"), or a
    per-class sequence (a dict expanded, 1 for the classes it does not name)."""
    named = isinstance(class_weight, str)
    if class_weight is None or (named and class_weight == "balanced_subsample" and bootstrap):
        expanded = None
    elif named:
        expanded = balanced_weights(cls, n_classes, sw)[cls]
    else:
        expanded = np.asarray(class_weight, np.float64)[cls]
    if expanded is None:
        return sw
    return expanded if sw is None else sw * expanded


def tree_weights(tree_seed: int, cls: np.ndarray, n_classes: int, w: np.ndarray | None,
                 bootstrap: bool, rate: float, balanced_subsample: bool) -> tuple:
    """(float64 (n,) row weights tree ``tree_seed`` is grown with, int64 (n,) bootstrap
    counts or None without bootstrap); ``w`` the forest's weights (:func:`forest_weights`)."""
    n = cls.size
    if not bootstrap:
        return (np.ones(n) if w is None else np.asarray(w, np.float64)), None
    counts = sample_counts(tree_seed, n, n_bootstrap(n, rate, w), w)
    if balanced_subsample:
        return counts * subsample_class_weights(cls, counts[None], n_classes)[0, cls], counts
    return counts.astype(np.float64), counts


def replay_trees(X: np.ndarray, cls: np.ndarray, sw: np.ndarray | None, class_weight,
                 params: SplitParams, random_state: int, n_trees: int, trees,
                 bootstrap: bool = True, rate: float = 1.0, oob=None, report=None) -> list:
    """Grow trees ``trees`` (ids in [0, n_trees)) of scikit-learn's forest.

    Parameters
    ----------
    X : float64 (n, d), finite or NaN (missing), the rows in scikit-learn's order
    cls : int32 (n,) class ids in [0, params.n_classes)
    sw : float64 (n,) sample weights, or None
    class_weight : None, "balanced", "balanced_subsample" or per-class weights
        (:func:`forest_weights`)
    params : SplitParams of a gini / entropy tree (``max_features`` as the forest's)
    random_state : the forest's ``random_state``
    n_trees, trees : the forest's size, and which of its trees to grow
    bootstrap, rate : ``bootstrap`` and ``max_samples`` (rate 1: None)
    oob : (float64 (n, K), int64 (n,)), optional
        Out-of-bag sums and counts that each grown tree is added to (:func:`oob_add`, with
        the counts it was grown with; bootstrap only).
    report : callable(done, total), optional
        Called after each tree.

    Returns
    -------
    list of (tree id, TreeArrays), in the order of ``trees``.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    >>> got = replay_trees(X, np.array([0, 0, 0, 1, 1, 1]), None, "balanced",
    ...                    SplitParams(0, n_classes=2), 0, 3, [2])
    >>> [(t, a.node_count) for t, a in got]
    [(2, 3)]
    """
    cls = np.ascontiguousarray(cls, np.int32)
    seeds = tree_seeds(random_state, n_trees)
    w = forest_weights(cls, params.n_classes, sw, class_weight, bootstrap)
    subsample = isinstance(class_weight, str) and class_weight == "balanced_subsample"
    trees = list(trees)
    out = []
    for done, t in enumerate(trees, 1):
        rw, counts = tree_weights(seeds[t], cls, params.n_classes, w, bootstrap, rate,
                                  subsample)
        tree: TreeArrays = grow_tree_ordered(X, cls, rw, params, sklearn_seed(seeds[t]))
        if oob is not None and counts is not None:
            oob_add(tree, counts, X, *oob)
        out.append((int(t), tree))
        if report is not None:
            report(done, len(trees))
    return out


def oob_add(tree: TreeArrays, counts: np.ndarray, X: np.ndarray, sums: np.ndarray,
            n_pred: np.ndarray) -> None:
    """Add the tree's class probabilities (scikit-learn's ``predict_proba``: the leaf's
    values over their sum) to the rows its bootstrap ``counts`` left out, as scikit-learn's
    ``_compute_oob_predictions`` does tree by tree: ``sums`` float64 (n, K), ``n_pred`` int64
    (n,)."""
    rows = np.flatnonzero(counts == 0)
    if rows.size == 0:
        return
    K = sums.shape[1]
    leaf = ForestPredictor.from_trees([tree], X.shape[1], K, "gini").apply(X[rows])[:, 0]
    proba = np.asarray(tree.value, np.float64).reshape(tree.node_count, -1)[leaf, :K]
    norm = proba.sum(axis=1)[:, None]
    norm[norm == 0.0] = 1.0
    sums[rows] += proba / norm
    n_pred[rows] += 1


def oob_score(sums: np.ndarray, n_pred: np.ndarray, cls: np.ndarray) -> tuple:
    """(accuracy, decision function float64 (n, K)): scikit-learn's ``oob_score_`` and
    ``oob_decision_function_`` from :func:`oob_add`'s sums (a row no tree left out counts as
    predicted once, with probabilities 0, as there)."""
    decision = sums / np.maximum(n_pred, 1)[:, None]
    return float(np.mean(np.argmax(decision, axis=1) == cls)), decision
