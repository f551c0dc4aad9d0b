"""Plain-Python twin of ``train_forest``: one tree at a time, lists and dicts, no numba.

It spells the algorithm out node by node (random sides, nDCG optimisation, the C± weights, the
node's columns, the L1 logistic regression, dropping zero weights, routing by w.x >= 0, leaf
distributions) with the same arithmetic in the same order and the same random stream as the
compiled kernel, so on small data both produce bit-identical forests. Tests compare them.
It is slow (pure Python throughout): use it on tens of points, not on real data sets.
"""
from __future__ import annotations

import numpy as np

from ._common import MT19937, tree_seed
from ._stlsort import stl_sort_desc_naive
from .forest import concat_forests
from .logreg import l1r_lr_naive
from .ndcg import discount_tables, label_weights, optimize_ndcg_naive
from .tree import W_DROP


def _rows(indptr, indices, data=None):
    out = []
    for r in range(len(indptr) - 1):
        a, b = int(indptr[r]), int(indptr[r + 1])
        if data is None:
            out.append([int(x) for x in indices[a:b]])
        else:
            out.append([(int(f), float(np.float32(v))) for f, v in zip(indices[a:b], data[a:b])])
    return out


def train_tree_naive(X_rows, Y_rows, n_features, n_labels, state, max_leaf=10,
                     labels_per_leaf=100, log_loss_coeff=1.0, bias=1.0, label_weight=None,
                     normalise_dcg=True):
    """Grow one FastXML tree.

    Parameters
    ----------
    X_rows : list of list of (int, float)
        Each point's (feature, value) entries in storage order.
    Y_rows : list of list of int
        Each point's labels.
    n_features, n_labels : int
    state : int
        MT19937 seed of the tree (``_common.tree_seed(seed, tree_id)``).
    label_weight, normalise_dcg
        As ``forest.train_forest``.

    Returns
    -------
    list of dict
        Nodes breadth-first: ``children`` (pos, neg) or (-1, -1), ``w`` [(feature, weight)]
        ascending, ``leaf`` [(label, score)] best first.
    """
    rng = MT19937(state)
    f32 = np.float32
    disc, csum = discount_tables(n_labels, max((len(y) for y in Y_rows), default=0),
                                 normalise_dcg)
    wt = label_weights(label_weight, n_labels)
    weights = {lab: f32(wt[lab]) for lab in range(int(n_labels))}
    b = float(np.float32(bias))
    queue = [list(range(len(X_rows)))]
    nodes = []
    i = 0
    while i < len(queue):
        pts = queue[i]
        n = len(pts)
        split = None
        if n > max_leaf:
            side = [rng.sign() for _ in pts]
            ok, side = optimize_ndcg_naive([Y_rows[p] for p in pts], side, disc, csum, weights)
            if ok:
                npos = sum(1 for s in side if s > 0)
                c_pos = float(f32(log_loss_coeff) / (f32(npos) / f32(n)))
                c_neg = float(f32(log_loss_coeff) / (f32(n - npos) / f32(n)))
                C = [c_pos if s > 0 else c_neg for s in side]
                # columns: the node's features ascending, then the bias; entries in node order
                feats = sorted({f for p in pts for f, _ in X_rows[p]})
                columns = [[(k, v) for k, p in enumerate(pts) for f2, v in X_rows[p] if f2 == f]
                           for f in feats]
                columns.append([(k, b) for k in range(n)])
                w = l1r_lr_naive(columns, side, C, rng)
                wdict = {}
                for f, wj in zip(feats + [n_features], w):
                    if abs(wj) > W_DROP and np.float32(wj) != 0.0:
                        wdict[f] = float(np.float32(wj))
                # route as the authors do: float32 sums, column by column, unrounded weights
                prods = [f32(0.0)] * n
                for col, wj in zip(columns, w):
                    if abs(wj) > W_DROP:
                        for k, v in col:
                            prods[k] = f32(float(prods[k]) + wj * v)
                pos, neg = [], []
                for k, p in enumerate(pts):
                    (pos if prods[k] >= 0.0 else neg).append(p)
                if pos and neg:
                    split = (wdict, pos, neg)
        if split is not None:
            wdict, pos, neg = split
            nodes.append({"children": (len(queue), len(queue) + 1),
                          "w": sorted(wdict.items()), "leaf": []})
            queue += [pos, neg]
        else:
            # float32 sums in node order; the cut is std::sort's, the kept ones best first
            sums = {}
            for p in pts:
                for lab in Y_rows[p]:
                    sums[lab] = f32(sums.get(lab, f32(0.0)) + weights[lab])
            mean = [(lab, f32(float(sums[lab]) / n)) for lab in sorted(sums)]
            kept = stl_sort_desc_naive(mean)[:labels_per_leaf]
            best = sorted(kept, key=lambda kv: (-float(kv[1]), kv[0]))
            nodes.append({"children": (-1, -1), "w": [],
                          "leaf": [(lab, float(v)) for lab, v in best]})
        i += 1
    return nodes


def train_forest_naive(X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features, n_labels,
                       tree_ids, seed=0, max_leaf=10, labels_per_leaf=100, log_loss_coeff=1.0,
                       bias=1.0, label_weight=None, normalise_dcg=True) -> dict:
    """Same arguments and result as ``forest.train_forest``, computed by :func:`train_tree_naive`."""
    X_rows = _rows(X_indptr, X_indices, X_data)
    Y_rows = _rows(Y_indptr, Y_indices)
    forests = []
    for t in np.asarray(tree_ids).reshape(-1):
        nodes = train_tree_naive(X_rows, Y_rows, int(n_features), int(n_labels),
                                 tree_seed(seed, int(t)), max_leaf, labels_per_leaf,
                                 log_loss_coeff, bias, label_weight, normalise_dcg)
        forests.append({
            "tree_ids": np.array([t], np.int32),
            "tree_offsets": np.array([0, len(nodes)], np.int64),
            "children": np.array([nd["children"] for nd in nodes], np.int32).reshape(-1, 2),
            "w_indptr": np.cumsum([0] + [len(nd["w"]) for nd in nodes]).astype(np.int64),
            "w_index": np.array([f for nd in nodes for f, _ in nd["w"]], np.int32),
            "w_value": np.array([v for nd in nodes for _, v in nd["w"]], np.float32),
            "leaf_indptr": np.cumsum([0] + [len(nd["leaf"]) for nd in nodes]).astype(np.int64),
            "leaf_label": np.array([lab for nd in nodes for lab, _ in nd["leaf"]], np.int32),
            "leaf_score": np.array([v for nd in nodes for _, v in nd["leaf"]], np.float32),
        })
    return concat_forests(forests)
