"""SHAP feature contributions of tree ensembles: the exact path-dependent TreeSHAP.

For one row ``x`` and one tree, the contribution of feature ``i`` is its Shapley value in the
game whose value of a feature set ``S`` is the tree's expected output when the features in
``S`` take ``x``'s values and the others are integrated out along the tree, each child
weighted by its share of the training cover (hessian sum) -- Lundberg, Erion & Lee,
"Consistent Individualized Feature Attribution for Tree Ensembles" (2018), Algorithm 1 for
the value, Algorithm 2 (polynomial time: one pass over the tree, keeping the path's
permutation weights with EXTEND / UNWIND) for the Shapley values. This is what XGBoost's
``predict(pred_contribs=True)`` computes; a missing value follows the node's default
direction as in prediction.

Output: float64 (n, K, d + 1) -- per output (class) ``k`` the d feature contributions and,
last, the bias: the base score (or the row's base margin) plus every tree's expected value
(the cover-weighted mean of its leaves). Each row sums to its raw score.

:func:`tree_shap_naive` computes the same Shapley values by definition (all subsets of the
features a tree splits on, exponential time) as the twin the tests compare against.
"""
from __future__ import annotations

from itertools import combinations
from math import factorial

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit


@njit(cache=True, nogil=True)
def _extend(pd, pz, po, pw, start, length, zero_fraction, one_fraction, feature):
    # append (feature, zero, one) to the path [start, start + length) and update the
    # permutation weights of every subset size
    pd[start + length] = feature
    pz[start + length] = zero_fraction
    po[start + length] = one_fraction
    pw[start + length] = 1.0 if length == 0 else 0.0
    for i in range(length - 1, -1, -1):
        pw[start + i + 1] += one_fraction * pw[start + i] * (i + 1) / (length + 1)
        pw[start + i] = zero_fraction * pw[start + i] * (length - i) / (length + 1)


@njit(cache=True, nogil=True)
def _unwind(pd, pz, po, pw, start, length, idx):
    # remove path element idx (inverse of _extend); the path then has length - 1 elements
    one = po[start + idx]
    zero = pz[start + idx]
    nxt = pw[start + length - 1]
    for j in range(length - 2, -1, -1):
        if one != 0.0:
            tmp = pw[start + j]
            pw[start + j] = nxt * length / ((j + 1) * one)
            nxt = tmp - pw[start + j] * zero * (length - 1 - j) / length
        else:
            pw[start + j] = pw[start + j] * length / (zero * (length - 1 - j))
    for j in range(idx, length - 1):
        pd[start + j] = pd[start + j + 1]
        pz[start + j] = pz[start + j + 1]
        po[start + j] = po[start + j + 1]


@njit(cache=True, nogil=True)
def _unwound_sum(pz, po, pw, start, length, idx):
    # sum of the weights _unwind(idx) would leave, without changing the path
    one = po[start + idx]
    zero = pz[start + idx]
    total = 0.0
    nxt = pw[start + length - 1]
    for j in range(length - 2, -1, -1):
        if one != 0.0:
            tmp = nxt * length / ((j + 1) * one)
            total += tmp
            nxt = pw[start + j] - tmp * zero * (length - 1 - j) / length
        else:
            total += pw[start + j] * length / (zero * (length - 1 - j))
    return total


@njit(cache=True, nogil=True)
def _shap_tree(base, feature, threshold, default_left, left, right, value, cover, x, phi,
               pd, pz, po, pw, frames_i, frames_f):
    # Algorithm 2's RECURSE with an explicit stack (numba's on-disk cache does not handle
    # self-recursive functions). A call copies its parent's path into the segment right after
    # it and never writes the parent's segment, so a pending sibling still finds it intact.
    # frame: node, parent_start, parent_length, split_feature | zero_fraction, one_fraction
    top = 1
    frames_i[0, 0] = 0
    frames_i[0, 1] = 0
    frames_i[0, 2] = 0
    frames_i[0, 3] = -1
    frames_f[0, 0] = 1.0
    frames_f[0, 1] = 1.0
    while top > 0:
        top -= 1
        node = frames_i[top, 0]
        parent_start = frames_i[top, 1]
        parent_length = frames_i[top, 2]
        start = parent_start + parent_length
        for i in range(parent_length):
            pd[start + i] = pd[parent_start + i]
            pz[start + i] = pz[parent_start + i]
            po[start + i] = po[parent_start + i]
            pw[start + i] = pw[parent_start + i]
        _extend(pd, pz, po, pw, start, parent_length, frames_f[top, 0], frames_f[top, 1],
                frames_i[top, 3])
        length = parent_length + 1
        j = base + node
        if left[j] < 0:
            for i in range(1, length):  # element 0 is the root's placeholder
                w = _unwound_sum(pz, po, pw, start, length, i)
                phi[pd[start + i]] += w * (po[start + i] - pz[start + i]) * value[j]
            continue
        f = feature[j]
        v = x[f]
        go_left = default_left[j] != 0 if np.isnan(v) else v <= threshold[j]
        hot = left[j] if go_left else right[j]
        cold = right[j] if go_left else left[j]
        incoming_zero = 1.0
        incoming_one = 1.0
        for i in range(1, length):  # a feature met again: undo its earlier split first
            if pd[start + i] == f:
                incoming_zero = pz[start + i]
                incoming_one = po[start + i]
                _unwind(pd, pz, po, pw, start, length, i)
                length -= 1
                break
        # cold below hot: the hot subtree is done first, as in the recursion
        for child, one in ((cold, 0.0), (hot, incoming_one)):
            frames_i[top, 0] = child
            frames_i[top, 1] = start
            frames_i[top, 2] = length
            frames_i[top, 3] = f
            frames_f[top, 0] = incoming_zero * cover[base + child] / cover[j]
            frames_f[top, 1] = one
            top += 1


@njit(cache=True, nogil=True)
def _tree_shap(X, feature, threshold, default_left, left, right, value, cover, tree_offsets,
               tree_outputs, max_depth, out):
    n_trees = tree_offsets.shape[0] - 1
    size = (max_depth + 2) * (max_depth + 3) // 2 + 1
    pd = np.zeros(size, np.int64)
    pz = np.zeros(size)
    po = np.zeros(size)
    pw = np.zeros(size)
    frames_i = np.zeros((2 * max_depth + 2, 4), np.int64)
    frames_f = np.zeros((2 * max_depth + 2, 2))
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(n_trees):
            _shap_tree(tree_offsets[t], feature, threshold, default_left, left, right, value,
                       cover, x, out[i, tree_outputs[t]], pd, pz, po, pw, frames_i, frames_f)


def _depths(pred) -> np.ndarray:
    """Depth of every node (global ids)."""
    depth = np.zeros(pred.feature.size, np.int64)
    for t in range(pred.n_trees):
        base = int(pred.tree_offsets[t])
        stack = [0]
        while stack:
            node = stack.pop()
            j = base + node
            if pred.left[j] >= 0:
                for c in (int(pred.left[j]), int(pred.right[j])):
                    depth[base + c] = depth[j] + 1
                    stack.append(c)
    return depth


def expected_values(pred) -> np.ndarray:
    """float64 (n_trees,): each tree's cover-weighted mean leaf value (its output when no
    feature is known; XGBoost's ``node_mean_values`` of the root)."""
    mean = pred.value.astype(FLOAT).copy()
    out = np.empty(pred.n_trees, FLOAT)
    for t in range(pred.n_trees):
        base = int(pred.tree_offsets[t])
        order, stack = [], [0]  # preorder: children come after their parent
        while stack:
            node = stack.pop()
            order.append(node)
            if pred.left[base + node] >= 0:
                stack += [int(pred.left[base + node]), int(pred.right[base + node])]
        for node in reversed(order):
            j = base + node
            if pred.left[j] >= 0:
                lj, rj = base + pred.left[j], base + pred.right[j]
                mean[j] = (mean[lj] * pred.cover[lj] + mean[rj] * pred.cover[rj]) / pred.cover[j]
        out[t] = mean[base]
    return out


def _bias(pred, n, base_margin) -> np.ndarray:
    """(n, K) bias column: base score (or margin) + the trees' expected values."""
    K = pred.n_outputs
    bias = np.empty((n, K), FLOAT)
    if base_margin is None:
        bias[:] = pred.base_score
    else:
        bias[:] = np.asarray(base_margin, FLOAT).reshape(n, K)
    bias += np.bincount(pred.tree_outputs, weights=expected_values(pred), minlength=K)
    return bias


def _finish(pred, phi):
    return phi[:, 0, :] if pred.n_outputs == 1 else phi


def tree_shap(pred, X, base_margin=None) -> np.ndarray:
    """SHAP contributions of dense rows (NaN = missing), see the module docstring.

    Parameters
    ----------
    pred : TreeEnsemblePredictor
    X : float64 (n, >= n_features)
    base_margin : (n,) or (n, K), optional
        Replaces the base score in the bias column (as in prediction).

    Returns
    -------
    float64 (n, d + 1) for one output, (n, K, d + 1) otherwise.
    """
    pred.refuse_categorical("SHAP")
    X = np.ascontiguousarray(X, FLOAT)
    n, d = X.shape[0], pred.n_features
    phi = np.zeros((n, pred.n_outputs, d + 1), FLOAT)
    max_depth = int(_depths(pred).max()) if pred.feature.size else 0
    _tree_shap(X, pred.feature, pred.threshold, pred.default_left, pred.left, pred.right,
               pred.value, pred.cover, pred.tree_offsets, pred.tree_outputs, max_depth, phi)
    phi[:, :, d] += _bias(pred, n, base_margin)
    return _finish(pred, phi)


def tree_shap_naive(pred, X, base_margin=None) -> np.ndarray:
    """Slow twin of :func:`tree_shap`: per row and tree, the Shapley values by definition
    over all subsets of the features the tree splits on (exponential: small trees only)."""
    X = np.asarray(X, FLOAT)
    n, d = X.shape[0], pred.n_features
    phi = np.zeros((n, pred.n_outputs, d + 1), FLOAT)
    for t in range(pred.n_trees):
        tr = pred.tree(t)

        def expect(node, x, known):
            if tr["left"][node] < 0:
                return tr["value"][node]
            f = tr["feature"][node]
            lc, rc = tr["left"][node], tr["right"][node]
            if f in known:
                v = x[f]
                go_left = bool(tr["default_left"][node]) if np.isnan(v) else \
                    v <= tr["threshold"][node]
                return expect(lc if go_left else rc, x, known)
            return (tr["cover"][lc] * expect(lc, x, known)
                    + tr["cover"][rc] * expect(rc, x, known)) / tr["cover"][node]

        used = sorted(set(int(f) for f, l in zip(tr["feature"], tr["left"]) if l >= 0))
        M = len(used)
        for r in range(n):
            x = X[r]
            for i in used:
                others = [f for f in used if f != i]
                total = 0.0
                for size in range(M):
                    weight = factorial(size) * factorial(M - size - 1) / factorial(M)
                    for S in combinations(others, size):
                        S = set(S)
                        total += weight * (expect(0, x, S | {i}) - expect(0, x, S))
                phi[r, tr["output"], i] += total
    phi[:, :, d] += _bias(pred, n, base_margin)
    return _finish(pred, phi)
