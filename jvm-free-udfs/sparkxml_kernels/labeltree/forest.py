"""Label-tree forests as flat arrays: training entry point, concatenation and checks.

A forest of T trees with M nodes in all (each tree's nodes breadth first, root first):

- ``tree_ids`` int32 (T,), ``tree_offsets`` int64 (T+1,): tree t owns nodes
  [tree_offsets[t], tree_offsets[t+1]);
- ``child_indptr`` int64 (M+1,), ``child_index`` int32: a node's children, as tree-local
  ids, each after its parent;
- ``leaf_indptr`` int64 (M+1,), ``leaf_label`` int32: each leaf's labels (internal nodes:
  none);
- the classifiers, per node a feature-major sparse matrix over its *slots* (its children, in
  ``child_index`` order, or its labels, in ``leaf_label`` order): ``wf_indptr`` int64
  (M+1,) into ``wf_feature`` int32 (node g's features, ascending; feature ``n_features`` is
  the bias), ``we_indptr`` int64 (len(wf_feature)+1,) into ``we_slot`` int32 and
  ``we_value`` float32. Feature-major, so scoring a node for a sparse row costs a lookup per
  row feature instead of a pass over all the node's weights.
"""
from __future__ import annotations

import numpy as np

from .cluster import build_tree
from .data import label_matrix, label_representations, normalised_rows
from .nodes import LOSSES, row_blocks, train_tree_nodes

FOREST_DTYPES = {
    "tree_ids": np.int32, "tree_offsets": np.int64, "child_indptr": np.int64,
    "child_index": np.int32, "leaf_indptr": np.int64, "leaf_label": np.int32,
    "wf_indptr": np.int64, "wf_feature": np.int32, "we_indptr": np.int64,
    "we_slot": np.int32, "we_value": np.float32,
}
# (indptr, the arrays it indexes): how trees concatenate and split
_CSR = (("child_indptr", ("child_index",)), ("leaf_indptr", ("leaf_label",)),
        ("wf_indptr", ("wf_feature",)), ("we_indptr", ("we_slot", "we_value")))
FOREST_KEYS = tuple(FOREST_DTYPES)

# Parabel's, except C (0.5, as the Spark estimators: see sparkxml.labeltree.params).
# split_nodes, split_rows, split_share: with split_nodes (the level-wise mode sets it), a
# node whose labels carry at least max(split_rows, split_share x the rows) (row, label) pairs
# is solved over fixed row blocks (nodes.split_node), so the level-wise mode can divide its
# rows between tasks. Off by default: the blocked order converges more slowly than one
# permutation of all rows (blocked.py), so a task holding every row keeps Parabel's solver. A node has at most as many rows as
# pairs, so every other node holds under half the rows; rows with many labels reach most
# nodes of the upper levels (Delicious-shaped rows, 19 labels each: 61% of the rows in a
# node of the fifth level), so that takes the roots and about five levels below them. The
# floor keeps small data sets (Bibtex: 11.7k pairs) unsplit
DEFAULTS = dict(branch=2, balanced=True, max_leaf=100, max_depth=64, cluster_eps=1e-4,
                loss="squared_hinge", C=0.5, tol=0.1, max_iter=20, weight_threshold=0.1,
                bias=1.0, seed=0, split_nodes=False, split_rows=16384, split_share=0.5)


def _ptr(lengths) -> np.ndarray:
    ptr = np.zeros(len(lengths) + 1, np.int64)
    ptr[1:] = np.cumsum(lengths)
    return ptr


def tree_arrays(tree_id: int, children: list, leaf_labels: list, weights: list) -> dict:
    """One tree's arrays (see the module docstring); ``weights`` as
    ``nodes.train_tree_nodes`` returns them."""
    M = len(children)
    feats = [w[0] for w in weights]
    eptr = [w[1] for w in weights]
    base = np.cumsum([0] + [int(p[-1]) for p in eptr[:-1]])
    we_indptr = np.concatenate([np.zeros(1, np.int64)]
                               + [p[1:] + b for p, b in zip(eptr, base)])
    return {"tree_ids": np.array([tree_id], np.int32),
            "tree_offsets": np.array([0, M], np.int64),
            "child_indptr": _ptr([len(c) for c in children]),
            "child_index": np.array([c for cs in children for c in cs], np.int32),
            "leaf_indptr": _ptr([len(lab) for lab in leaf_labels]),
            "leaf_label": np.concatenate(leaf_labels).astype(np.int32),
            "wf_indptr": _ptr([len(f) for f in feats]),
            "wf_feature": np.concatenate(feats).astype(np.int32), "we_indptr": we_indptr,
            "we_slot": np.concatenate([w[2] for w in weights]).astype(np.int32),
            "we_value": np.concatenate([w[3] for w in weights]).astype(np.float32)}


def check_params(params: dict) -> dict:
    p = dict(DEFAULTS, **params)
    if p["loss"] not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {p['loss']!r}")
    if int(p["branch"]) < 2:
        raise ValueError(f"branch must be >= 2, got {p['branch']}")
    for key in ("max_leaf", "max_depth", "max_iter"):
        if int(p[key]) < 1:
            raise ValueError(f"{key} must be >= 1, got {p[key]}")
    for key in ("C", "tol"):
        if not float(p[key]) > 0:
            raise ValueError(f"{key} must be > 0, got {p[key]}")
    if int(p["split_rows"]) < 0:
        raise ValueError(f"split_rows must be >= 0, got {p['split_rows']}")
    if not 0.0 <= float(p["split_share"]) <= 1.0:
        raise ValueError(f"split_share must be in [0, 1], got {p['split_share']}")
    if not float(p["weight_threshold"]) >= 0:
        raise ValueError(f"weight_threshold must be >= 0, got {p['weight_threshold']}")
    return p


class Prepared:
    """What every tree of one training set shares: normalised rows, labels, representations,
    the rows' blocks (``nodes.row_blocks`` of ``keys``)."""

    def __init__(self, xptr, xidx, xval, yptr, yidx, n_features: int, n_labels: int,
                 bias: float, keys=None):
        self.X = normalised_rows(xptr, xidx, xval, n_features, bias)
        self.blocks = row_blocks(keys, self.X.shape[0])
        Y = label_matrix(yptr, yidx, self.X.shape[0], n_labels)
        # the nodes read the labels by label: the transposed matrix alone is kept
        self.Yt = Y.T.tocsr()
        self.R = label_representations(self.X, Y, n_features)
        # labels without training rows are left out of the trees: nothing could be learnt
        self.labels = np.flatnonzero(np.diff(self.Yt.indptr) > 0).astype(np.int32)


def train_tree(prep: Prepared, tree_id: int, params: dict) -> dict:
    """Cluster and train tree ``tree_id``; its arrays (one tree)."""
    p = params
    children, leaf_labels = build_tree(prep.R, prep.labels, int(p["branch"]),
                                       bool(p["balanced"]), int(p["max_leaf"]),
                                       int(p["max_depth"]), float(p["cluster_eps"]),
                                       int(p["seed"]), int(tree_id))
    weights = train_tree_nodes(prep.X, prep.Yt, children, leaf_labels, p,
                               int(tree_id), prep.blocks)
    return tree_arrays(tree_id, children, leaf_labels, weights)


def train_forest(xptr, xidx, xval, yptr, yidx, n_features: int, n_labels: int, tree_ids,
                 report=None, keys=None, **params) -> dict:
    """Train trees ``tree_ids`` on the CSR rows X (features) and Y (labels).

    Parameters
    ----------
    xptr, xidx, xval : CSR of the features (n rows, ids < n_features)
    yptr, yidx : CSR of the label ids (< n_labels)
    tree_ids : ints
        Which trees (tree t depends only on the data, the params and (seed, t)).
    report : callable(done, total), optional
        Called after each tree.
    keys : int64 (n,), optional
        The rows' content keys, which place them in blocks (``nodes.row_blocks``; the Spark
        estimators pass their ``_k1``). Without them a row's block follows its position.
    **params
        ``branch``, ``balanced``, ``max_leaf``, ``max_depth``, ``cluster_eps``, ``loss``,
        ``C``, ``tol``, ``max_iter``, ``weight_threshold``, ``bias``, ``seed``,
        ``split_rows``, ``split_share`` (defaults: ``DEFAULTS``: Parabel's, with C 0.5).
    """
    p = check_params(params)
    prep = Prepared(xptr, xidx, xval, yptr, yidx, n_features, n_labels, float(p["bias"]),
                    keys)
    trees = []
    ids = [int(t) for t in tree_ids]
    for i, t in enumerate(ids):
        trees.append(train_tree(prep, t, p))
        if report is not None:
            report(i + 1, len(ids))
    return concat_forests(trees)


def empty_forest() -> dict:
    f = {k: np.zeros(0, dt) for k, dt in FOREST_DTYPES.items()}
    for k in ("tree_offsets",) + tuple(ptr for ptr, _ in _CSR):
        f[k] = np.zeros(1, np.int64)
    return f


def concat_forests(forests) -> dict:
    """One forest of the given forests' trees, in order."""
    forests = [f for f in forests if len(f["tree_ids"])]
    if not forests:
        return empty_forest()
    out = {"tree_ids": np.concatenate([f["tree_ids"] for f in forests]).astype(np.int32)}

    def offsets(key, count):
        parts, base = [np.zeros(1, np.int64)], 0
        for f in forests:
            parts.append(f[key][1:] + base)
            base += count(f)
        return np.concatenate(parts)

    out["tree_offsets"] = offsets("tree_offsets", lambda f: f["tree_offsets"][-1])
    for ptr, cols in _CSR:
        out[ptr] = offsets(ptr, lambda f, c=cols[0]: len(f[c]))
        for c in cols:
            out[c] = np.concatenate([f[c] for f in forests]).astype(FOREST_DTYPES[c])
    return out


def split_trees(forest: dict) -> list:
    """The forest's trees as one-tree forests."""
    off = forest["tree_offsets"]
    out = []
    for t in range(len(forest["tree_ids"])):
        a, b = int(off[t]), int(off[t + 1])
        tree = {"tree_ids": forest["tree_ids"][t:t + 1],
                "tree_offsets": np.array([0, b - a], np.int64)}
        ranges = {"child_indptr": (a, b), "leaf_indptr": (a, b), "wf_indptr": (a, b)}
        wf = forest["wf_indptr"]
        ranges["we_indptr"] = (int(wf[a]), int(wf[b]))
        for ptr, cols in _CSR:
            lo, hi = ranges[ptr]
            p = forest[ptr][lo:hi + 1]
            tree[ptr] = p - p[0]
            for c in cols:
                tree[c] = forest[c][p[0]:p[-1]]
        out.append(tree)
    return out


def sort_forest(forest: dict) -> dict:
    """The same trees ordered by tree id."""
    trees = split_trees(forest)
    return concat_forests([trees[i] for i in np.argsort(forest["tree_ids"], kind="stable")])
