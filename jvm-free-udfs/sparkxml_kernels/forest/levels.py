"""Per-level node kernels of the forest grower: split the large nodes of a level from their
summed histograms, and grow small nodes' whole subtrees from their rows (one process)."""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .criteria import EPSILON, impurity, node_weight, per_label, split_children
from .histogram import split_slice
from .nodes import _put
from .splitter import child_key, draw_subset, node_state, split_subset

# frontier node kinds: a leaf, split from histograms, grown in one process from its rows
_LEAF, _LARGE, _SMALL = 0, 1, 2
# random thresholds draw from their own stream per (seed, tree, node): not the features'
RANDOM_SPLIT_SALT = np.uint64(0xE7037ED1A0B428DB)


@njit(cache=True, nogil=True)
def _is_leaf(depth, n, w, imp, max_depth, min_split, min_leaf, min_wleaf):
    return (depth >= max_depth or n < min_split or n < 2 * min_leaf or w < 2 * min_wleaf
            or imp <= EPSILON)


@njit(cache=True, nogil=True)
def _split_and_record(mode, crit, hist, fmap, binned, rows, s, e, rs, vals, total, w, subset,
                      mtry, min_leaf, min_wleaf, bins, st, out_left, reps, rstate, thr, cst,
                      bounds, w_total, imp, min_dec, node, st_feat, st_bl, st_br, st_ml,
                      st_thr, yv, is_cat, cat_mask, st_cmask):
    """A node's split search (``splitter.split_subset``) and post-search test; an accepted
    split is stored at ``node`` (a categorical one's left set ``cat_mask`` in
    ``st_cmask[node]``). Returns (feature or -1, left bin, missing-go-left, right sums, left
    and right weights and impurities); -1 when the node stays a leaf. ``yv``:
    absolute_error's target values (``criteria.NO_VALUES`` otherwise)."""
    f, bl, br, ml = split_subset(mode, crit, hist, fmap, binned, rows, s, e, rs, vals, total,
                                 w, subset, mtry, min_leaf, min_wleaf, bins, st, out_left, reps,
                                 rstate, thr, cst, bounds, yv, is_cat, cat_mask)
    if f < 0:
        return -1, bl, ml, out_left, 0.0, 0.0, 0.0, 0.0
    ok, right, wl, wr, il, ir, _ = split_children(crit, w_total, w, imp, total, out_left,
                                                  min_dec, yv)
    if not ok:
        return -1, bl, ml, right, wl, wr, il, ir
    st_feat[node] = f
    st_bl[node] = bl
    st_br[node] = br
    st_ml[node] = ml
    if bl == -2:
        for b in range(cat_mask.shape[0]):
            st_cmask[node, b] = cat_mask[b]
    elif reps.shape[0] > 0:  # a random split: its drawn threshold
        st_thr[node] = thr[0]
    return f, bl, ml, right, wl, wr, il, ir


@njit(cache=True, nogil=True)
def child_bounds(cst, f, crit, left, right, wl, wr, lo, hi, side):
    """(lower, upper) value bound of child ``side`` (0 left, 1 right) of a split on ``f``
    under monotonic constraints ``cst`` (internal signs; (0,): none), as scikit-learn
    passes them down: the middle of the children's values splits the parent's range."""
    c = cst[f] if cst.shape[0] > 0 else 0
    if c == 0:
        return lo, hi
    k = 1 if per_label(crit) else 2  # (absolute_error refuses monotonic constraints)
    middle = left[k] / (2 * wl) + right[k] / (2 * wr)
    if (c > 0) == (side == 0):
        return lo, middle
    return middle, hi


@njit(cache=True, nogil=True)
def _split_level(crit, hists, feats, n_tree, n_key, n_depth, n_imp, n_parent, n_isleft,
                 n_first, w_total, min_wleaf, frac, vals, reps, seed, mtry, max_depth,
                 min_split, min_leaf, min_dec, small_rows, cst, n_bounds, st_tree, st_parent,
                 st_isleft, st_feat, st_bl, st_br, st_ml, st_thr, st_imp, st_sums, st_lo, st_hi,
                 n_nodes, recs, c_tree, c_key, c_depth, c_imp, c_parent, c_isleft, c_kind, c_cap,
                 c_feats, c_bounds, yv, is_cat, st_cmask):
    """Split the large nodes of one level from their summed histograms; returns
    (nodes stored, children kept for the next level). ``reps`` (d, n_slots): random splits
    (``splitter.split_subset``), (0, 0): best splits. ``cst`` int8 (d,) monotonic
    constraints (internal signs, ``tree.SplitParams.internal_cst``; (0,): none),
    ``n_bounds`` (m, 2) the nodes' value bounds, ``c_bounds`` (2m, 2) the kept children's;
    ``yv`` absolute_error's target values (``criteria.NO_VALUES`` otherwise).
    ``is_cat`` uint8 (d,) categorical features ((0,): none); a categorical split's left set
    goes to ``st_cmask[node]`` and to the record's last ``n_slots`` columns (after the
    missing-go-left column ``6 + 2 * mtry``)."""
    m = hists.shape[0]
    d = vals.shape[0]
    S = hists.shape[3]
    n_slots = vals.shape[1]
    bins = np.empty(n_slots, np.int64)
    st = np.empty((n_slots, S))
    fmap = np.full(d, -1, np.int64)
    out_left = np.empty(S)
    total = np.empty(S)
    state = np.empty(1, np.uint32)
    sub = np.empty(d, np.int64)
    dummy_b = np.zeros((1, 1), np.uint8)
    dummy_r = np.zeros(1, np.int32)
    dummy_s = np.zeros((1, S))
    rstate = np.empty(1, np.uint32)
    thr = np.zeros(1)
    cat_mask = np.zeros(n_slots, np.uint8)
    ml_col = 6 + 2 * mtry
    nc = 0
    for j in range(m):
        t = n_tree[j]
        h = hists[j]
        for s in range(S):
            total[s] = 0.0
        for b in range(n_slots):
            for s in range(S):
                total[s] += h[0, b, s]
        n = total[0]
        w = node_weight(crit, total)
        imp = n_imp[j]
        if n_first[j]:
            w_total[t] = w
            min_wleaf[t] = frac * w
            imp = impurity(crit, total, w, yv)
        node = n_nodes
        _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_ml, st_thr, st_imp,
             st_sums, st_lo, st_hi, node, t, n_parent[j], n_isleft[j], imp, total,
             n_bounds[j, 0], n_bounds[j, 1])
        n_nodes += 1
        recs[j, 0] = -1.0
        if n_first[j] and _is_leaf(n_depth[j], n, w, imp, max_depth, min_split, min_leaf,
                                   min_wleaf[t]):
            continue
        for k in range(mtry):
            fmap[feats[j, k]] = k
        node_state(seed ^ RANDOM_SPLIT_SALT, t, n_key[j], rstate)
        f, bl, ml, right, wl, wr, il, ir = _split_and_record(
            0, crit, h, fmap, dummy_b, dummy_r, 0, 0, dummy_s, vals, total, w, feats[j], mtry,
            min_leaf, min_wleaf[t], bins, st, out_left, reps, rstate, thr, cst, n_bounds[j],
            w_total[t], imp, min_dec, node, st_feat, st_bl, st_br, st_ml, st_thr, yv, is_cat,
            cat_mask, st_cmask)
        for k in range(mtry):
            fmap[feats[j, k]] = -1
        if f < 0:
            continue
        recs[j, 0] = f
        recs[j, 1] = bl
        recs[j, ml_col] = ml
        if bl == -2:
            for b in range(n_slots):
                recs[j, ml_col + 1 + b] = cat_mask[b]
        for side in range(2):
            sums = out_left if side == 0 else right
            ws = wl if side == 0 else wr
            ci = il if side == 0 else ir
            ns = sums[0]
            key = child_key(n_key[j], 1 - side)
            blo, bhi = child_bounds(cst, f, crit, out_left, right, wl, wr, n_bounds[j, 0],
                                    n_bounds[j, 1], side)
            if _is_leaf(n_depth[j] + 1, ns, ws, ci, max_depth, min_split, min_leaf,
                        min_wleaf[t]):
                kind = _LEAF
                _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_ml, st_thr,
                     st_imp, st_sums, st_lo, st_hi, n_nodes, t, node, 1 - side, ci, sums, blo,
                     bhi)
                n_nodes += 1
            else:
                kind = _SMALL if ns <= small_rows else _LARGE
                c_tree[nc] = t
                c_key[nc] = key
                c_depth[nc] = n_depth[j] + 1
                c_imp[nc] = ci
                c_parent[nc] = node
                c_isleft[nc] = 1 - side
                c_kind[nc] = kind
                c_cap[nc] = int(ns)
                c_bounds[nc, 0] = blo
                c_bounds[nc, 1] = bhi
                if kind == _LARGE:
                    node_state(seed, t, key, state)
                    draw_subset(d, mtry, state, sub)
                    for k in range(mtry):
                        c_feats[nc, k] = sub[k]
                        recs[j, 6 + side * mtry + k] = sub[k]
                nc += 1
            recs[j, 2 + side] = kind
            recs[j, 4 + side] = ns
    return n_nodes, nc


@njit(cache=True, nogil=True)
def _grow_smalls(crit, n_classes, buf, offsets, s_tree, s_key, s_depth, s_imp, s_parent,
                 s_isleft, s_first, w_total, min_wleaf, frac, vals, reps, seed, mtry, max_depth,
                 min_split, min_leaf, min_dec, cst, s_bounds, st_tree, st_parent, st_isleft,
                 st_feat, st_bl, st_br, st_ml, st_thr, st_imp, st_sums, st_lo, st_hi, n_nodes,
                 yv, is_cat, st_cmask):
    """Grow the whole subtree of each small node from its collected rows ``buf`` (row
    [present, bins..., target, weight]; the target is the label index for per-label sums),
    depth first, left subtree first (``cst``, ``s_bounds``, ``yv``: monotonic constraints,
    the nodes' bounds and absolute_error's target values; ``is_cat``, ``st_cmask``:
    categorical features and splits; as :func:`_split_level`)."""
    d = vals.shape[0]
    S = st_sums.shape[1]
    n_slots = vals.shape[1]
    classification = per_label(crit)
    bins = np.empty(n_slots, np.int64)
    sub = np.empty(d, np.int64)
    state = np.empty(1, np.uint32)
    fmap = np.zeros(1, np.int64)
    hist = np.zeros((1, 1, S))
    out_left = np.empty(S)
    total = np.empty(S)
    rstate = np.empty(1, np.uint32)
    thr = np.zeros(1)
    cat_mask = np.zeros(n_slots, np.uint8)
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        m = b - a
        t = s_tree[q]
        binned = np.empty((m, d), np.int64)
        rs = np.zeros((m, S))
        for i in range(m):
            row = buf[a + i]
            for f in range(d):
                binned[i, f] = np.int64(row[1 + f])
            yr = row[d + 1]
            wv = row[d + 2]
            rs[i, 0] = 1.0
            if classification:
                rs[i, 1 + np.int64(yr)] = wv
            else:
                rs[i, 1] = wv
                rs[i, 2] = wv * yr
                rs[i, 3] = rs[i, 2] * yr
                rs[i, 4] = wv * (yr * math.log(yr) if yr > 0 else 0.0)
        if s_first[q]:
            for s in range(S):
                total[s] = 0.0
            for i in range(m):
                for s in range(S):
                    total[s] += rs[i, s]
            w_total[t] = node_weight(crit, total)
            min_wleaf[t] = frac * w_total[t]
        st = np.empty((max(n_slots, m), S))
        rows = np.arange(m).astype(np.int32)
        scratch = np.empty(m, np.int32)
        cap = 2 * m + 2
        k_start = np.empty(cap, np.int64)
        k_end = np.empty(cap, np.int64)
        k_depth = np.empty(cap, np.int64)
        k_parent = np.empty(cap, np.int64)
        k_isleft = np.empty(cap, np.int64)
        k_key = np.empty(cap, np.uint64)
        k_imp = np.empty(cap)
        k_bounds = np.empty((cap, 2))
        k_bounds[0, 0] = s_bounds[q, 0]
        k_bounds[0, 1] = s_bounds[q, 1]
        k_start[0] = 0
        k_end[0] = m
        k_depth[0] = s_depth[q]
        k_parent[0] = s_parent[q]
        k_isleft[0] = s_isleft[q]
        k_key[0] = s_key[q]
        k_imp[0] = s_imp[q]
        top = 1
        first = s_first[q]
        while top > 0:
            top -= 1
            s = k_start[top]
            e = k_end[top]
            depth = k_depth[top]
            key = k_key[top]
            imp = k_imp[top]
            lo = k_bounds[top, 0]
            hi = k_bounds[top, 1]
            for u in range(S):
                total[u] = 0.0
            for i in range(s, e):
                r = rows[i]
                for u in range(S):
                    total[u] += rs[r, u]
            n = total[0]
            w = node_weight(crit, total)
            if first:
                imp = impurity(crit, total, w, yv)
                first = False
            node = n_nodes
            _put(st_tree, st_parent, st_isleft, st_feat, st_bl, st_br, st_ml, st_thr, st_imp,
                 st_sums, st_lo, st_hi, node, t, k_parent[top], k_isleft[top], imp, total, lo,
                 hi)
            n_nodes += 1
            if _is_leaf(depth, n, w, imp, max_depth, min_split, min_leaf, min_wleaf[t]):
                continue
            node_state(seed, t, key, state)
            draw_subset(d, mtry, state, sub)
            node_state(seed ^ RANDOM_SPLIT_SALT, t, key, rstate)
            f, bl, ml, right, wl, wr, il, ir = _split_and_record(
                1, crit, hist, fmap, binned, rows, s, e, rs, vals, total, w, sub, mtry,
                min_leaf, min_wleaf[t], bins, st, out_left, reps, rstate, thr, cst,
                k_bounds[top], w_total[t], imp, min_dec, node, st_feat, st_bl, st_br, st_ml,
                st_thr, yv, is_cat, cat_mask, st_cmask)
            if f < 0:
                continue
            nl = split_slice(binned, rows, scratch, s, e, f, bl, ml, n_slots - 1, cat_mask)
            for side in range(2):  # right pushed first: the left subtree comes first
                is_left = side
                k_start[top] = s if is_left else s + nl
                k_end[top] = s + nl if is_left else e
                k_depth[top] = depth + 1
                k_parent[top] = node
                k_isleft[top] = is_left
                k_key[top] = child_key(key, is_left)
                k_imp[top] = il if is_left else ir
                k_bounds[top, 0], k_bounds[top, 1] = child_bounds(
                    cst, f, crit, out_left, right, wl, wr, lo, hi, 1 - is_left)
                top += 1
    return n_nodes
