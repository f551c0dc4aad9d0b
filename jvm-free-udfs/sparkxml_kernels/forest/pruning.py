"""Minimal cost-complexity pruning, as scikit-learn's ``ccp_alpha`` and
``cost_complexity_pruning_path`` (``tree/_tree.pyx``: ``_cost_complexity_prune``).

A node's cost is ``R(t) = w_t * impurity_t / w_root``; a branch's, the sum over its leaves.
Pruning repeatedly turns into a leaf the inner node with the smallest effective alpha
``(R(t) - R(branch t)) / (leaves(t) - 1)`` (the first in node order on ties), while that alpha
is at most ``ccp_alpha``. Every sum is taken in scikit-learn's order, so the pruned tree and
the path are scikit-learn's bit for bit when the grown tree is.

Trees are dicts of per-node arrays in ``tree.TreeArrays``' layout (node ids in depth-first
preorder); other per-node arrays (such as the forest grower's ``bin``) follow their nodes.
"""
from __future__ import annotations

import numpy as np

from .tree import TREE_LEAF, TREE_UNDEFINED

# what a node turned into a leaf holds in the structural arrays
_LEAF_FILL = {"children_left": TREE_LEAF, "children_right": TREE_LEAF,
              "feature": TREE_UNDEFINED, "threshold": float(TREE_UNDEFINED),
              "missing_go_to_left": 0, "bin": -1}


def _prune(tree: dict, ccp_alpha: float | None):
    """scikit-learn's pruning loop: (leaves of the pruned tree (bool (N,)), nodes kept
    (bool (N,)), path alphas, path impurities); ``ccp_alpha`` None: prune to the root (the
    path)."""
    left = np.asarray(tree["children_left"])
    right = np.asarray(tree["children_right"])
    w = np.asarray(tree["weighted_n_node_samples"], np.float64)
    n = left.size
    r_node = w * np.asarray(tree["impurity"], np.float64) / w[0]
    parent = np.full(n, -1, np.int64)
    inner = left >= 0
    parent[left[inner]] = np.flatnonzero(inner)
    parent[right[inner]] = np.flatnonzero(inner)
    leaves = ~inner
    r_branch = np.zeros(n)
    n_leaves = np.zeros(n, np.int64)
    for leaf in np.flatnonzero(leaves):
        r_branch[leaf] = r_node[leaf]
        cur = r_node[leaf]
        i = leaf
        while i != 0:
            p = parent[i]
            r_branch[p] += cur
            n_leaves[p] += 1
            i = p
    cand = inner.copy()
    kept = np.ones(n, bool)
    alphas, imps = [0.0], [float(r_branch[0])]
    while cand[0]:
        idx = np.flatnonzero(cand)
        sub = (r_node[idx] - r_branch[idx]) / (n_leaves[idx] - 1)
        k = int(np.argmin(sub))  # the first smallest, as the strict < scan
        eff, b = float(sub[k]), int(idx[k])
        if ccp_alpha is not None and ccp_alpha < eff:
            break
        stack = [b]
        while stack:
            i = stack.pop()
            if not kept[i]:
                continue
            cand[i] = leaves[i] = kept[i] = False
            if left[i] >= 0:
                stack += [left[i], right[i]]
        leaves[b] = kept[b] = True
        pruned = n_leaves[b] - 1
        n_leaves[b] = 0
        diff = r_node[b] - r_branch[b]
        r_branch[b] = r_node[b]
        i = parent[b]
        while i != -1:
            n_leaves[i] -= pruned
            r_branch[i] += diff
            i = parent[i]
        alphas.append(eff)
        imps.append(float(r_branch[0]))
    return leaves, kept, np.asarray(alphas), np.asarray(imps)


def cost_complexity_pruning_path(tree: dict) -> dict:
    """scikit-learn's ``cost_complexity_pruning_path`` of a grown tree: ``ccp_alphas`` and
    ``impurities`` (float64 (k,)), the effective alphas of the successive subtrees and the
    total leaf impurity of each."""
    _, _, a, imp = _prune(tree, None)
    return {"ccp_alphas": a, "impurities": imp}


def prune_tree(tree: dict, ccp_alpha: float) -> dict:
    """The subtree scikit-learn keeps for ``ccp_alpha`` (> 0): same arrays, fewer nodes,
    ids renumbered in preorder, left child first, as scikit-learn rebuilds a pruned tree
    (a best-first tree is renumbered even when nothing is pruned)."""
    if ccp_alpha <= 0.0:
        return tree
    leaves, kept, _, _ = _prune(tree, float(ccp_alpha))
    L = np.asarray(tree["children_left"])
    R = np.asarray(tree["children_right"])
    order, stack = [], [0]
    while stack:
        g = stack.pop()
        order.append(g)
        if L[g] >= 0 and not leaves[g]:
            stack.append(int(R[g]))
            stack.append(int(L[g]))
    order = np.asarray(order, np.int64)
    if order.size == kept.size and np.array_equal(order, np.arange(kept.size)):
        return tree
    new = np.full(kept.size, -1, np.int64)
    new[order] = np.arange(order.size)
    now_leaf = leaves[order] & (L[order] >= 0)
    out = {}
    for k, v in tree.items():
        v = np.asarray(v)
        if v.ndim == 0 or v.shape[0] != kept.size:
            out[k] = v
            continue
        a = v[order].copy()
        if k in _LEAF_FILL:
            a[now_leaf] = _LEAF_FILL[k]
        if k in ("children_left", "children_right"):
            a = np.where(a >= 0, new[np.maximum(a, 0)], a).astype(v.dtype)
        out[k] = a
    return out


def prune_forest(arrays: dict, ccp_alpha: float) -> dict:
    """:func:`prune_tree` on every tree of concatenated forest arrays (``tree_offsets``)."""
    if ccp_alpha <= 0.0:
        return arrays
    off = np.asarray(arrays["tree_offsets"])
    per_node = [k for k, v in arrays.items()
                if np.ndim(v) > 0 and np.shape(v)[0] == off[-1] and k != "tree_offsets"]
    parts = []
    for t in range(off.size - 1):
        parts.append(prune_tree({k: np.asarray(arrays[k])[off[t]:off[t + 1]]
                                 for k in per_node}, ccp_alpha))
    out = dict(arrays)
    for k in per_node:
        out[k] = np.concatenate([p[k] for p in parts])
    sizes = [p["children_left"].size for p in parts]
    out["tree_offsets"] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return out
