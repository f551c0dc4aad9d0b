"""Growing FastXML trees, entirely inside one compiled call.

Per tree, nodes are processed breadth-first from a queue, as in the authors' code. The points of
the tree live in one permutation array; a node owns a contiguous range of it and a split
partitions that range stably (positive child first), so no per-node allocation is needed. Every
workspace (column-major sub-matrix, solver vectors, label sums) is allocated once per call and
reused across nodes and trees; maps from global to local ids are reset entry by entry after
each node, which keeps a node's cost proportional to its own size rather than to N, D or L.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._common import grow, rng_next, row_dot, sort_desc
from .logreg import l1r_lr_kernel
from .ndcg import map_labels, optimize_ndcg_kernel

W_DROP = 1e-16


@njit(cache=True, nogil=True)
def build_columns(X_indptr, X_indices, X_data, rows, n_features, bias32, feat_map, act_feat,
                  feat_cnt, col_ptr, col_row, col_val):
    """Column-major copy of the rows ``rows`` of X, features renumbered, bias column last.

    Parameters
    ----------
    X_indptr, X_indices, X_data : int64 (N+1,), int32 (nnz,), float32 (nnz,)
        The training features (CSR).
    rows : int32 (n,)
        The node's points; local point k is ``rows[k]``.
    n_features : int
        D; the bias column gets the global id D.
    bias32 : float32
        Value of the bias feature.
    feat_map : int32 (D,)
        Global -> local column; all -1 on entry and on exit.
    act_feat : int32 (>= D+1,)
        Receives local column -> global feature id, in order of first appearance.
    feat_cnt : int64 (>= D+1,)
        Scratch.
    col_ptr : int64 (>= D+2,)
        Receives the column pointers.
    col_row, col_val : int32, float32 (>= nnz of the rows + n,)
        Receive local point index and value of each entry.

    Returns
    -------
    int
        m, the number of columns (active features + 1).
    """
    n = rows.shape[0]
    m = 0
    for k in range(n):
        r = rows[k]
        for p in range(X_indptr[r], X_indptr[r + 1]):
            f = X_indices[p]
            loc = feat_map[f]
            if loc < 0:
                loc = m
                feat_map[f] = m
                act_feat[m] = f
                feat_cnt[m] = 0
                m += 1
            feat_cnt[loc] += 1
    act_feat[m] = n_features
    feat_cnt[m] = n
    m += 1
    col_ptr[0] = 0
    for j in range(m):
        col_ptr[j + 1] = col_ptr[j] + feat_cnt[j]
        feat_cnt[j] = col_ptr[j]  # from here on: the fill cursor of column j
    for k in range(n):
        r = rows[k]
        for p in range(X_indptr[r], X_indptr[r + 1]):
            loc = feat_map[X_indices[p]]
            q = feat_cnt[loc]
            col_row[q] = k
            col_val[q] = X_data[p]
            feat_cnt[loc] = q + 1
    q = feat_cnt[m - 1]
    for k in range(n):
        col_row[q + k] = k
        col_val[q + k] = bias32
    for j in range(m - 1):
        feat_map[act_feat[j]] = -1
    return m


@njit(cache=True, nogil=True)
def leaf_distribution(Y_indptr, Y_indices, rows, nl, lab_map, act_lab, lcount, order, otmp,
                      labels_per_leaf, out_label, out_score):
    """Mean label vector of the node's points, top ``labels_per_leaf`` entries, best first.

    Ties in score go to the smaller label id. Writes ``out_label`` / ``out_score`` (int32,
    float32) and returns how many entries it wrote.
    """
    n = rows.shape[0]
    if n == 0 or nl == 0:
        return 0
    for j in range(nl):
        lcount[j] = 0.0
    for k in range(n):
        r = rows[k]
        for p in range(Y_indptr[r], Y_indptr[r + 1]):
            lcount[lab_map[Y_indices[p]]] += 1.0
    for j in range(nl):
        order[j] = j
    sort_desc(order, nl, lcount, act_lab, otmp)
    kk = min(nl, labels_per_leaf)
    for q in range(kk):
        loc = order[q]
        out_label[q] = act_lab[loc]
        out_score[q] = np.float32(lcount[loc] / n)
    return kk


@njit(cache=True, nogil=True)
def _route_and_partition(X_indptr, X_indices, X_data, rows, n_features, biasd, wd, w_idx,
                         w_val, nw, side, perm_tmp):
    # The same float32 weights and the same dot product as the predictor, so training and
    # prediction agree on every training point.
    n = rows.shape[0]
    for q in range(nw):
        wd[w_idx[q]] = np.float64(w_val[q])
    npos = 0
    for k in range(n):
        if row_dot(X_indptr, X_indices, X_data, rows[k], wd, n_features, biasd) >= 0.0:
            side[k] = 1
            npos += 1
        else:
            side[k] = -1
    for q in range(nw):
        wd[w_idx[q]] = 0.0
    if npos == 0 or npos == n:
        return -1
    a = 0
    b = npos
    for k in range(n):
        if side[k] > 0:
            perm_tmp[a] = rows[k]
            a += 1
        else:
            perm_tmp[b] = rows[k]
            b += 1
    for k in range(n):
        rows[k] = perm_tmp[k]
    return npos


@njit(cache=True, nogil=True)
def train_trees_kernel(X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features, n_labels,
                       states, max_leaf, labels_per_leaf, log_loss_coeff, bias, disc, csum):
    """Train one FastXML tree per PRNG state in ``states``; return the flattened forest.

    Parameters
    ----------
    X_indptr, X_indices, X_data : int64 (N+1,), int32 (nnzX,), float32 (nnzX,)
        Training features (CSR, ids < n_features).
    Y_indptr, Y_indices : int64 (N+1,), int32 (nnzY,)
        Training label sets (CSR pattern, ids < n_labels).
    n_features, n_labels : int
        D and L.
    states : uint64 (T,)
        Initial PRNG state of each tree (see ``_common.tree_seed``).
    max_leaf, labels_per_leaf : int
        Leaf size threshold and labels kept per leaf.
    log_loss_coeff, bias : float
        c of C± = c / frac±, and the value of the bias feature.
    disc, csum : float64
        From ``ndcg.discount_tables``.

    Returns
    -------
    tuple of arrays
        tree_offsets int64 (T+1,), pos_child int32 (M,), neg_child int32 (M,) (tree-local,
        -1 at leaves), w_indptr int64 (M+1,), w_index int32, w_value float32, leaf_indptr
        int64 (M+1,), leaf_label int32, leaf_score float32.
    """
    N = X_indptr.shape[0] - 1
    T = states.shape[0]
    nnzx = X_indptr[N]
    D1 = n_features + 1
    L1 = max(n_labels, 1)
    bias32 = np.float32(bias)
    biasd = np.float64(bias32)

    perm = np.empty(N, np.int32)
    perm_tmp = np.empty(N, np.int32)
    side = np.empty(N, np.int8)
    idcg = np.empty(N, np.float64)
    Cw = np.empty(N, np.float64)
    xTd = np.empty(N, np.float64)
    ewx = np.empty(N, np.float64)
    ewx_new = np.empty(N, np.float64)
    tau = np.empty(N, np.float64)
    Dd = np.empty(N, np.float64)

    feat_map = np.full(max(n_features, 1), -1, np.int32)
    act_feat = np.empty(D1, np.int32)
    feat_cnt = np.empty(D1, np.int64)
    col_ptr = np.empty(D1 + 1, np.int64)
    col_row = np.empty(nnzx + N, np.int32)
    col_val = np.empty(nnzx + N, np.float32)
    w = np.empty(D1, np.float64)
    wpd = np.empty(D1, np.float64)
    Hdiag = np.empty(D1, np.float64)
    Grad = np.empty(D1, np.float64)
    xjneg = np.empty(D1, np.float64)
    index = np.empty(D1, np.int32)
    wd = np.zeros(D1, np.float64)
    w_idx = np.empty(D1, np.int32)
    w_val = np.empty(D1, np.float32)
    w_key = np.empty(D1, np.float64)
    w_ord = np.empty(D1, np.int32)
    w_tmp = np.empty(D1, np.int32)

    lab_map = np.full(L1, -1, np.int32)
    act_lab = np.empty(L1, np.int32)
    pos_sum = np.empty(L1, np.float64)
    neg_sum = np.empty(L1, np.float64)
    diff = np.empty(L1, np.float64)
    order = np.empty(L1, np.int32)
    otmp = np.empty(L1, np.int32)
    leaf_lab = np.empty(L1, np.int32)
    leaf_val = np.empty(L1, np.float32)

    max_nodes = 2 * N + 1
    nstart = np.empty(max_nodes, np.int64)
    nend = np.empty(max_nodes, np.int64)

    est = T * max(4, 2 * (N // max(max_leaf, 1)) + 3)
    pos_child = np.empty(est, np.int32)
    neg_child = np.empty(est, np.int32)
    w_indptr = np.zeros(est + 1, np.int64)
    leaf_indptr = np.zeros(est + 1, np.int64)
    w_index = np.empty(est * 8, np.int32)
    w_value = np.empty(est * 8, np.float32)
    leaf_label = np.empty(est * 4, np.int32)
    leaf_score = np.empty(est * 4, np.float32)
    tree_offsets = np.zeros(T + 1, np.int64)

    state = np.empty(1, np.uint64)
    M = 0
    WN = 0
    LN = 0
    for t in range(T):
        state[0] = states[t]
        for i in range(N):
            perm[i] = i
        nstart[0] = 0
        nend[0] = N
        n_nodes = 1
        i = 0
        while i < n_nodes:
            s = nstart[i]
            e = nend[i]
            n = e - s
            rows = perm[s:e]
            nl = map_labels(Y_indptr, Y_indices, rows, lab_map, act_lab)
            npos = -1
            nw = 0
            if n > max_leaf:
                for k in range(n):
                    side[k] = 1 if (rng_next(state) & np.uint64(1)) else -1
                for k in range(n):
                    r = rows[k]
                    idcg[k] = 1.0 / csum[Y_indptr[r + 1] - Y_indptr[r]]
                ok = optimize_ndcg_kernel(Y_indptr, Y_indices, rows, side, lab_map, act_lab, nl,
                                          idcg, pos_sum, neg_sum, diff, order, otmp, disc)
                if ok:
                    npos0 = 0
                    for k in range(n):
                        if side[k] > 0:
                            npos0 += 1
                    frac_pos = npos0 / n
                    frac_neg = (n - npos0) / n
                    c_pos = log_loss_coeff / frac_pos
                    c_neg = log_loss_coeff / frac_neg
                    for k in range(n):
                        Cw[k] = c_pos if side[k] > 0 else c_neg
                    m = build_columns(X_indptr, X_indices, X_data, rows, n_features, bias32,
                                      feat_map, act_feat, feat_cnt, col_ptr, col_row, col_val)
                    l1r_lr_kernel(col_ptr, col_row, col_val, m, n, side, Cw, state, w, wpd,
                                  Hdiag, Grad, xjneg, index, xTd, ewx, ewx_new, tau, Dd)
                    for j in range(m):
                        if abs(w[j]) > W_DROP:
                            v = np.float32(w[j])
                            if v != 0.0:
                                w_idx[nw] = act_feat[j]
                                w_val[nw] = v
                                nw += 1
                    npos = _route_and_partition(X_indptr, X_indices, X_data, rows, n_features,
                                                biasd, wd, w_idx, w_val, nw, side, perm_tmp)

            pos_child = grow(pos_child, M + 1)
            neg_child = grow(neg_child, M + 1)
            w_indptr = grow(w_indptr, M + 2)
            leaf_indptr = grow(leaf_indptr, M + 2)
            if npos > 0:
                nstart[n_nodes] = s
                nend[n_nodes] = s + npos
                nstart[n_nodes + 1] = s + npos
                nend[n_nodes + 1] = e
                pos_child[M] = n_nodes
                neg_child[M] = n_nodes + 1
                n_nodes += 2
                # stored sorted by feature id: the key is -id for the descending sort
                for q in range(nw):
                    w_ord[q] = q
                    w_key[q] = -np.float64(w_idx[q])
                sort_desc(w_ord, nw, w_key, w_idx, w_tmp)
                w_index = grow(w_index, WN + nw)
                w_value = grow(w_value, WN + nw)
                for q in range(nw):
                    w_index[WN + q] = w_idx[w_ord[q]]
                    w_value[WN + q] = w_val[w_ord[q]]
                WN += nw
            else:
                pos_child[M] = -1
                neg_child[M] = -1
                kk = leaf_distribution(Y_indptr, Y_indices, rows, nl, lab_map, act_lab, diff,
                                       order, otmp, labels_per_leaf, leaf_lab, leaf_val)
                leaf_label = grow(leaf_label, LN + kk)
                leaf_score = grow(leaf_score, LN + kk)
                for q in range(kk):
                    leaf_label[LN + q] = leaf_lab[q]
                    leaf_score[LN + q] = leaf_val[q]
                LN += kk
            w_indptr[M + 1] = WN
            leaf_indptr[M + 1] = LN
            for j in range(nl):
                lab_map[act_lab[j]] = -1
            M += 1
            i += 1
        tree_offsets[t + 1] = M
    return (tree_offsets, pos_child[:M].copy(), neg_child[:M].copy(), w_indptr[:M + 1].copy(),
            w_index[:WN].copy(), w_value[:WN].copy(), leaf_indptr[:M + 1].copy(),
            leaf_label[:LN].copy(), leaf_score[:LN].copy())
