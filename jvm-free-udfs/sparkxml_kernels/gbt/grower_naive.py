"""The slow twin of :class:`grower.TreeGrower`: one process, every node's histogram built from
scratch and its split found by the naive evaluators, the same node numbering. Tests compare
the grower with it node for node."""
from __future__ import annotations

import heapq

import numpy as np

from .._dtypes import NODE
from .binned import build_histogram_any_naive, is_sparse, missing_code, route_binned_any
from .categorical import find_categorical_splits_naive
from .decision import REC, split_record
from .grower import _UNBOUNDED, EMPTY_REL, Tree, TreeGrower, TreeParams
from .histogram import n_hist_slots
from .node_features import NodeFeatures
from .splitting import bounded_leaf_weight, child_bounds, find_best_splits_naive


def grow_tree_naive(binned, grad, hess, edges, params: TreeParams, rows=None,
                    feature_mask=None, sample_key=None):
    """Slow twin of :meth:`TreeGrower.grow` (single process): every node's histogram built
    from scratch, splits by the naive evaluator, same node numbering. Returns (Tree,
    leaf_index). Dense (uint8/uint16) and sparse binned matrices, categorical features."""
    n, d = binned.shape
    dense_b = binned.to_dense() if is_sparse(binned) else np.asarray(binned)
    miss = missing_code(dense_b.dtype)
    n_bins = np.array([len(e) + 1 for e in edges], np.int32)
    S = n_hist_slots(n_bins)
    mask = np.ones(d, np.uint8) if feature_mask is None else np.asarray(feature_mask, np.uint8)
    grower = TreeGrower(binned, n_bins, edges, params)  # for _can_expand only
    rows = np.arange(n) if rows is None else np.asarray(rows)
    node_rows = [rows]
    G = [float(grad[rows].sum())]
    H = [float(hess[rows].sum())]
    depth = [0]
    split = [None]
    kids = {}
    mono = grower._mono
    bounds, value_bounds = [_UNBOUNDED], [_UNBOUNDED]

    cat_mask = grower._cat_mask
    nodes = NodeFeatures.make(params, mask, sample_key)
    paths = [frozenset()]

    def evaluate(c):
        h = build_histogram_any_naive(binned, node_rows[c], grad, hess, S)
        sums = np.array([[G[c], H[c]]])
        m = mask if nodes is None else mask & nodes.mask(c, depth[c], paths[c])
        res = find_best_splits_naive(h[None], sums, n_bins,
                                     m if cat_mask is None else m & (1 - cat_mask),
                                     params.split, edges, EMPTY_REL * H[0], mono,
                                     np.array([bounds[c]]))
        cres = None if cat_mask is None else find_categorical_splits_naive(
            h[None], sums, n_bins, m & cat_mask, params.split, params.cat, EMPTY_REL * H[0],
            counts=np.array([float(len(node_rows[c]))]))
        rec = split_record(c, res, cres, 0, grower._W)
        if rec is None:
            return None
        cat_set = rec[REC + 1:].astype(np.uint32) if rec.size > REC and rec[REC] else None
        return (rec[5], int(rec[1]), int(rec[2]), int(rec[3]), float(rec[4]), rec[6:8],
                rec[8:10], cat_set)

    def apply(c, s):
        _, f, t, dl, _, ls, rs, cat_set = s
        b = dense_b[node_rows[c], f].astype(np.int64)
        if cat_set is None:
            go = np.where(b == miss, bool(dl), b <= t)
        else:
            member = (cat_set[np.minimum(b, 32 * cat_set.size - 1) // 32]
                      >> (b % 32).astype(np.uint32)) & 1
            go = (b != miss) & (member != 0)
        ids = []
        kid_bounds = (bounds[c], bounds[c])
        if mono is not None:
            w = [bounded_leaf_weight(*sums, params.split, *bounds[c]) for sums in (ls, rs)]
            kid_bounds = child_bounds(mono[f], bounds[c], *w)
        for sel, sums, kb in ((go, ls, kid_bounds[0]), (~go, rs, kid_bounds[1])):
            bounds.append(kb)
            value_bounds.append(bounds[c])
            node_rows.append(node_rows[c][sel])
            G.append(float(sums[0]))
            H.append(float(sums[1]))
            depth.append(depth[c] + 1)
            paths.append(paths[c] | {f})
            split.append(None)
            ids.append(len(node_rows) - 1)
        split[c] = s
        kids[c] = ids
        return ids

    n_leaves = 1
    if params.grow_policy == "depthwise":
        level = [0]
        while level:
            nxt = []
            for c in level:
                if grower._can_expand(depth[c], H[c], 0):
                    s = evaluate(c)
                    if s is not None:
                        nxt += apply(c, s)
            level = nxt
    else:
        heap = []
        if grower._can_expand(0, H[0], 1):
            s = evaluate(0)
            if s is not None:
                heapq.heappush(heap, (-s[0], 0, s))
        while heap and (params.max_leaves == 0 or n_leaves < params.max_leaves):
            _, c, s = heapq.heappop(heap)
            children = apply(c, s)
            n_leaves += 1
            for k in children:
                if grower._can_expand(depth[k], H[k], n_leaves):
                    sk = evaluate(k)
                    if sk is not None:
                        heapq.heappush(heap, (-sk[0], k, sk))
    m = len(node_rows)
    feature = np.full(m, -1, NODE)
    bins = np.full(m, -1, np.int32)
    thr = np.full(m, np.nan)
    dl = np.zeros(m, np.uint8)
    left = np.full(m, -1, NODE)
    right = np.full(m, -1, NODE)
    gain = np.zeros(m)
    for c, (lc, rc) in kids.items():
        s = split[c]
        feature[c], bins[c], dl[c], thr[c], gain[c] = s[1], s[2], s[3], s[4], s[0]
        left[c], right[c] = lc, rc
    sp = params.split
    tree = Tree(feature, bins, thr, dl, left, right,
                np.array([bounded_leaf_weight(g, h, sp, *b) * params.learning_rate
                          for g, h, b in zip(G, H, value_bounds)]),
                gain, np.array(H))
    if cat_mask is not None:
        tree.is_cat = np.zeros(m, np.uint8)
        tree.cat_sets = np.zeros((m, grower._W), np.uint32)
        for c in kids:
            if split[c][7] is not None:
                tree.is_cat[c], tree.cat_sets[c] = 1, split[c][7]
    return tree, route_binned_any(binned, tree)
