"""Bottom-up pruning of grown trees by ``minSplitLoss`` (XGBoost's ``prune`` updater).

A split is collapsed into a leaf when both its children are leaves and its loss change
(``gain``, XGBoost's unhalved ``loss_chg``) is below ``min_split_loss`` -- or its children lie
deeper than ``max_depth`` (> 0) -- and this repeats upwards. So a weak split is kept when a
split below it is kept (XGBoost's grow-then-prune: a weak split with a strong child stays).
The result does not depend on the order the leaves are visited in: a split is collapsed
exactly when it and every split below it qualify.

The collapsed node keeps its stored ``value`` (its weight times the learning rate, as
XGBoost's ``ChangeToLeaf(learning_rate * base_weight)``) and gets ``gain`` 0. Surviving nodes
are renumbered in their old order, so children still come after their parents.

Trees are small (at most a few thousand nodes): plain Python, no compiled kernel.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import INDPTR, NODE

_NODE_FIELDS = ("feature", "bin", "threshold", "default_left", "left", "right", "value",
                "gain", "cover")


def prune_plan(left, right, gain, min_split_loss: float, max_depth: int = 0):
    """Which nodes of ONE tree survive pruning and where every old node lands.

    Parameters
    ----------
    left, right : int32 (N,)
        Tree-local children, -1 on leaves; node 0 is the root.
    gain : float64 (N,)
        Loss change of every split (0 on leaves).
    min_split_loss : float
        Splits whose subtree is all below this are collapsed (gamma).
    max_depth : int
        > 0: splits whose children are deeper than this are collapsed too.

    Returns
    -------
    keep : bool (N,)
        Nodes that remain (in their old order).
    leafed : bool (N,)
        Kept nodes that were splits and are now leaves.
    owner : int32 (N,)
        For every old node, the new id of the kept node it lies in (itself, or the
        collapsed ancestor that became a leaf): rows' leaf ids map through it.

    Examples
    --------
    A weak root split (gain 1) above a strong one (gain 10) and a weak one (gain 2):

    >>> left, right = [1, 3, -1, 5, -1, -1, -1], [2, 4, -1, 6, -1, -1, -1]
    >>> keep, leafed, owner = prune_plan(left, right, [1.0, 10.0, 0, 2.0, 0, 0, 0], 5.0)
    >>> keep.tolist(), leafed.tolist(), owner.tolist()
    ([True, True, True, True, True, False, False], [False, False, False, True, False, False, False], [0, 1, 2, 3, 4, 3, 3])
    """
    left = np.asarray(left)
    right = np.asarray(right)
    n = left.size
    collapsed = np.zeros(n, bool)   # a split turned into a leaf
    is_leaf = left < 0
    depth = np.zeros(n, np.int64)
    for node in range(n):  # children always come after their parent
        if left[node] >= 0:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
    # children before parents (reverse id order): a split collapses when both children are
    # (now) leaves and it is too weak or too deep
    for node in range(n - 1, -1, -1):
        if is_leaf[node]:
            continue
        a, b = left[node], right[node]
        if (is_leaf[a] or collapsed[a]) and (is_leaf[b] or collapsed[b]) and (
                gain[node] < min_split_loss or (max_depth > 0 and depth[node] + 1 > max_depth)):
            collapsed[node] = True
    keep = np.ones(n, bool)
    for node in range(n):  # parents first: the children of a removed/collapsed node go
        if left[node] >= 0 and (collapsed[node] or not keep[node]):
            keep[left[node]] = keep[right[node]] = False
    new_id = np.cumsum(keep) - 1
    owner = np.empty(n, NODE)
    for node in range(n):
        if keep[node]:
            owner[node] = new_id[node]
        if left[node] >= 0:
            for c in (left[node], right[node]):
                if not keep[c]:
                    owner[c] = owner[node]
    return keep, collapsed & keep, owner


def _remap_children(child, keep, leafed, new_id):
    out = np.where(child >= 0, new_id[np.maximum(child, 0)], -1).astype(NODE)[keep]
    out[leafed[keep]] = -1
    return out


def prune_tree(tree, min_split_loss: float, max_depth: int = 0, leaf=None):
    """Prune a grower ``Tree`` (grower.py) in place of a copy.

    Returns ``(tree, leaf)``: the pruned tree (the same object when nothing was pruned) and
    ``leaf`` (int32 (n,), rows' leaf ids) mapped onto it (None when not given).
    """
    keep, leafed, owner = prune_plan(tree.left, tree.right, tree.gain, min_split_loss,
                                     max_depth)
    if keep.all() and not leafed.any():
        return tree, leaf
    new_id = (np.cumsum(keep) - 1).astype(NODE)
    kw = {k: np.asarray(getattr(tree, k))[keep].copy() for k in _NODE_FIELDS}
    kw["left"] = _remap_children(np.asarray(tree.left), keep, leafed, new_id)
    kw["right"] = _remap_children(np.asarray(tree.right), keep, leafed, new_id)
    lf = leafed[keep]
    kw["feature"][lf] = -1
    kw["bin"][lf] = -1
    kw["threshold"][lf] = np.nan
    kw["default_left"][lf] = 0
    kw["gain"][lf] = 0.0
    if tree.is_cat is not None:
        kw["is_cat"] = tree.is_cat[keep].copy()
        kw["cat_sets"] = tree.cat_sets[keep].copy()
        kw["is_cat"][lf] = 0
        kw["cat_sets"][lf] = 0
    out = type(tree)(**kw)
    return out, (None if leaf is None else owner[np.asarray(leaf)])


def prune_predictor(pred, min_split_loss: float, max_depth: int = 0):
    """Every tree of a ``TreeEnsemblePredictor`` pruned (XGBoost's ``prune`` updater on an
    existing model); returns a new predictor, and the number of nodes removed."""
    from .predictor import TreeEnsemblePredictor

    a = pred.to_arrays()
    node_keys = ("feature", "threshold", "default_left", "left", "right", "value", "gain",
                 "cover")
    parts = {k: [] for k in node_keys}
    counts, cat_counts, words = [], [], []
    removed = 0
    for t in range(pred.n_trees):
        lo, hi = int(pred.tree_offsets[t]), int(pred.tree_offsets[t + 1])
        left, right = pred.left[lo:hi], pred.right[lo:hi]
        keep, leafed, _ = prune_plan(left, right, pred.gain[lo:hi], min_split_loss, max_depth)
        new_id = (np.cumsum(keep) - 1).astype(NODE)
        removed += int((~keep).sum())
        for k in node_keys:
            parts[k].append(getattr(pred, k)[lo:hi][keep].copy())
        parts["left"][-1] = _remap_children(left, keep, leafed, new_id)
        parts["right"][-1] = _remap_children(right, keep, leafed, new_id)
        lf = leafed[keep]
        parts["feature"][-1][lf] = -1
        parts["threshold"][-1][lf] = np.nan
        parts["default_left"][-1][lf] = 0
        parts["gain"][-1][lf] = 0.0
        counts.append(int(keep.sum()))
        if pred.has_categorical:
            for j in np.flatnonzero(keep):
                a_, b_ = int(pred.cat_ptr[lo + j]), int(pred.cat_ptr[lo + j + 1])
                n_words = 0 if leafed[j] else b_ - a_
                cat_counts.append(n_words)
                words.append(pred.cat_words[a_:a_ + n_words])
    for k in node_keys:
        a[k] = np.concatenate(parts[k])
    off = np.zeros(pred.n_trees + 1, INDPTR)
    np.cumsum(counts, out=off[1:])
    a["tree_offsets"] = off
    if pred.has_categorical:
        ptr = np.zeros(len(cat_counts) + 1, INDPTR)
        np.cumsum(cat_counts, out=ptr[1:])
        a["cat_ptr"], a["cat_words"] = ptr, np.concatenate(words).astype(np.uint32)
    return TreeEnsemblePredictor.from_arrays(a), removed
