"""Growing FastXML trees, entirely inside one compiled call.

Per tree, nodes are processed breadth-first from a queue, as in the authors' code. The points of
the tree live in one permutation array; a node owns a contiguous range of it and a split
partitions that range stably (positive child first), so no per-node allocation is needed.

The node's logistic regression wants its data column-major (feature -> points). The root's
columns are built once per tree from the row-major X by a counting sort; a split then derives
both children's columns from the parent's in one sequential pass (each entry is copied to the
child its point went to, renumbered), instead of transposing rows again per node, which
scattered writes all over memory and cost more than a third as much as the solver itself.
Columns therefore always appear in ascending feature id, the bias column last, and the entries
of a column in node order. Two entry buffers alternate between tree levels (a level reads one
and writes its children into the other), so the extra memory is twice X plus one entry a point.
Every other workspace is allocated once per call and reused across nodes and trees.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ._common import MT_STATE, NOMAP, append_pairs, grow, mt_next, mt_seed, sort_desc
from ._stlsort import stl_sort_desc
from .logreg import l1r_lr_kernel
from .ndcg import SORT_STACK, map_labels, optimize_ndcg_kernel

W_DROP = 1e-16


@njit(cache=True, nogil=True)
def build_root_columns(X_indptr, X_indices, X_data, n_features, bias32, cnt, ent_row, ent_val,
                       col_ptr, col_feat):
    """Column-major copy of all of X (the root node), features ascending, bias column last.

    Parameters
    ----------
    X_indptr, X_indices, X_data : uint64 (N+1,), uint32 (nnz,), float32 (nnz,)
        The training features (CSR, unsigned views).
    n_features : int
        D; the bias column gets the feature id D.
    bias32 : float32
        Value of the bias feature.
    cnt : int64 (>= D+1,)
        Scratch.
    ent_row, ent_val : uint32, float32 (>= nnz + N,)
        Receive each entry's point (0..N-1) and value, column after column.
    col_ptr : uint64 (>= D+2,)
        Receives the column boundaries (into ``ent_*``).
    col_feat : int32 (>= D+1,)
        Receives each column's feature id; features absent from X get no column.

    Returns
    -------
    int
        m, the number of columns (features present + 1).
    """
    N = X_indptr.shape[0] - 1
    for f in range(n_features):
        cnt[f] = 0
    for p in range(X_indptr[N]):
        cnt[X_indices[p]] += 1
    m = 0
    tot = 0
    for f in range(n_features):
        c = cnt[f]
        if c > 0:
            col_ptr[m] = tot
            col_feat[m] = f
            m += 1
            cnt[f] = tot  # from here on: the fill cursor of feature f
            tot += c
    col_ptr[m] = tot
    col_feat[m] = n_features
    for k in range(N):
        for p in range(X_indptr[k], X_indptr[k + 1]):
            f = X_indices[p]
            q = cnt[f]
            ent_row[q] = k
            ent_val[q] = X_data[p]
            cnt[f] = q + 1
    for k in range(N):
        ent_row[tot + k] = k
        ent_val[tot + k] = bias32
    m += 1
    col_ptr[m] = tot + N
    return m


@njit(cache=True, nogil=True)
def split_columns(ent_row, ent_val, col_ptr, col_feat, m, side, newk, dst_row, dst_val,
                  pos_start, neg_start, pos_ptr, pos_feat, neg_ptr, neg_feat):
    """Derive both children's columns from the parent's, in one sequential pass.

    Parameters
    ----------
    ent_row, ent_val : uint32, float32
        The parent's entries (local point, value).
    col_ptr, col_feat : uint64 (m+1,), int32 (m,)
        The parent's column boundaries and feature ids.
    m : int
        The parent's number of columns.
    side : int8 (n,)
        +1 / -1: the child of each parent point.
    newk : uint32 (n,)
        Each parent point's index inside its child.
    dst_row, dst_val : uint32, float32
        Receive the children's entries: the positive child's from ``pos_start``, the negative
        child's from ``neg_start`` (the caller sizes both regions exactly).
    pos_ptr, pos_feat, neg_ptr, neg_feat : uint64 (>= m+1,), int32 (>= m,)
        Receive each child's column boundaries and feature ids; columns a child lacks are
        dropped.

    Returns
    -------
    (int, int)
        The children's numbers of columns.
    """
    wp = np.uint64(pos_start)
    wn = np.uint64(neg_start)
    mp = 0
    mn = 0
    one = np.uint64(1)
    for c in range(m):
        sp = wp
        sn = wn
        for p in range(col_ptr[c], col_ptr[c + 1]):
            k = ent_row[p]
            # branch-free: the side pattern is unpredictable
            t = np.uint64(side[k] > 0)
            dest = wp if t else wn
            dst_row[dest] = newk[k]
            dst_val[dest] = ent_val[p]
            wp += t
            wn += one - t
        if wp > sp:
            pos_ptr[mp] = sp
            pos_feat[mp] = col_feat[c]
            mp += 1
        if wn > sn:
            neg_ptr[mn] = sn
            neg_feat[mn] = col_feat[c]
            mn += 1
    pos_ptr[mp] = wp
    neg_ptr[mn] = wn
    return mp, mn


@njit(cache=True, nogil=True)
def leaf_label_sums(Y_indptr, Y_indices, rows, lab_map, act_w, lsum):
    """lsum[j] += act_w[j] for each of the points' labels, points in order, in float32."""
    for k in range(rows.shape[0]):
        r = rows[k]
        for p in range(Y_indptr[r], Y_indptr[r + 1]):
            j = lab_map[Y_indices[p]]
            lsum[j] += act_w[j]


@njit(cache=True, nogil=True)
def leaf_finalize(lsum, n, nl, act_lab, ids, keys, stack, score, order, otmp, labels_per_leaf,
                  out_label, out_score):
    """The leaf's distribution from its label sums over ``n`` points (see
    :func:`leaf_distribution`); returns how many entries it wrote."""
    for j in range(nl):
        ids[j] = j
        keys[j] = np.float32(np.float64(lsum[j]) / np.float64(n))
        score[j] = keys[j]
    stl_sort_desc(ids, keys, nl, stack)
    kk = min(nl, labels_per_leaf)
    for q in range(kk):
        order[q] = ids[q]
    sort_desc(order, kk, score, act_lab, otmp)
    for q in range(kk):
        loc = order[q]
        out_label[q] = act_lab[loc]
        out_score[q] = np.float32(score[loc])
    return kk


@njit(cache=True, nogil=True)
def leaf_distribution(Y_indptr, Y_indices, rows, nl, lab_map, act_lab, act_w, lsum, ids, keys,
                      stack, score, order, otmp, labels_per_leaf, out_label, out_score):
    """Mean (weighted) label vector of the node's points, top ``labels_per_leaf``, best first.

    As the authors' leaf step: float32 sums of the label weights ``act_w`` (1 for FastXML, the
    inverse propensities for PfastreXML) over the points in node order, divided by the number
    of points, ranked by libstdc++'s ``std::sort`` (``stl_sort_desc``) and cut to
    ``labels_per_leaf``, so which labels tied at the cut are kept is decided as theirs is. The
    kept labels are stored best first, ties to the smaller label id. ``lsum``, ``keys``
    (float32), ``ids``, ``order``, ``otmp`` (int32), ``score`` (float64) and ``stack`` are
    scratch. Writes ``out_label`` / ``out_score`` (int32, float32) and returns how many entries
    it wrote.
    """
    n = rows.shape[0]
    if n == 0 or nl == 0:
        return 0
    for j in range(nl):
        lsum[j] = np.float32(0.0)
    leaf_label_sums(Y_indptr, Y_indices, rows, lab_map, act_w, lsum)
    return leaf_finalize(lsum, n, nl, act_lab, ids, keys, stack, score, order, otmp,
                         labels_per_leaf, out_label, out_score)


@njit(cache=True, nogil=True, inline="always")
def draw_sides(mt, side, skip_before, take, skip_after):
    """The authors' random starting sides (odd draw: +1) for ``take`` points, after skipping
    ``skip_before`` draws and followed by ``skip_after`` more: a shard holding points
    skip_before .. skip_before + take of a node draws what one process would for them."""
    for _ in range(skip_before):
        mt_next(mt)
    for k in range(take):
        side[k] = 1 if mt_next(mt) % 2 else -1
    for _ in range(skip_after):
        mt_next(mt)


@njit(cache=True, nogil=True, inline="always")
def node_idcg(Y_indptr, rows, csum, idcg):
    """1 / IDCG(|y_i|) per point (float32; the division in float64, as the authors')."""
    for k in range(rows.shape[0]):
        r = rows[k]
        idcg[k] = np.float32(1.0 / np.float64(csum[Y_indptr[r + 1] - Y_indptr[r]]))


@njit(cache=True, nogil=True, inline="always")
def class_weights(coeff32, npos, n):
    """C+ and C- = c / fraction of the side, in float32 as the authors compute them."""
    c_pos = coeff32 / (np.float32(npos) / np.float32(n))
    c_neg = coeff32 / (np.float32(n - npos) / np.float32(n))
    return c_pos, c_neg


@njit(cache=True, nogil=True, inline="always")
def keep_weights(w, m, cfeat, w_idx, w_val):
    """The separator as stored: weights above W_DROP in size that stay non-zero in float32,
    with their feature ids (ascending, as the columns are); the others are zeroed in ``w``
    too (routing skips them). Returns how many were kept."""
    nw = 0
    for j in range(m):
        if abs(w[j]) > W_DROP:
            v = np.float32(w[j])
            if v != 0.0:
                w_idx[nw] = cfeat[j]
                w_val[nw] = v
                nw += 1
        else:
            w[j] = 0.0
    return nw


@njit(cache=True, nogil=True, inline="always")
def route_prods(cptr, col_row, col_val, m, w, n, prods):
    """w.x of the node's points as the authors route training points: accumulated column by
    column into float32 (each step w_j * x_ij in float64, then rounded); positive side when
    >= 0. It decides the children exactly as their code does; the predictor's float64 dot
    product with the float32 weights may send a training point lying on the hyperplane the
    other way, as theirs may."""
    for k in range(n):
        prods[k] = 0.0
    for j in range(m):
        wj = w[j]
        if wj == 0.0:
            continue  # adds 0.0: no change, and -0.0 cannot arise from a positive-zero start
        for p in range(cptr[j], cptr[j + 1]):
            k = col_row[p]
            prods[k] = np.float32(np.float64(prods[k]) + wj * np.float64(col_val[p]))


@njit(cache=True, nogil=True)
def _route_and_partition(X_indptr, cptr, col_row, col_val, m, w, rows, side, prods, newk,
                         perm_tmp):
    # Route the node's points (route_prods) and partition ``rows`` stably, positive child
    # first. Returns (points, column entries) of the positive child, or (-1, 0) when a child
    # would be empty.
    n = rows.shape[0]
    route_prods(cptr, col_row, col_val, m, w, n, prods)
    npos = 0
    epos = 0
    for k in range(n):
        if prods[k] >= 0.0:
            side[k] = 1
            npos += 1
            r = rows[k]
            epos += np.int64(X_indptr[r + 1] - X_indptr[r]) + 1
        else:
            side[k] = -1
    if npos == 0 or npos == n:
        return -1, 0
    a = 0
    b = npos
    for k in range(n):
        if side[k] > 0:
            newk[k] = a
            perm_tmp[a] = rows[k]
            a += 1
        else:
            newk[k] = b - npos
            perm_tmp[b] = rows[k]
            b += 1
    for k in range(n):
        rows[k] = perm_tmp[k]
    return npos, epos


@njit(cache=True, nogil=True)
def train_trees_kernel(X_indptr, X_indices, X_data, Y_indptr, Y_indices, n_features, n_labels,
                       states, max_leaf, labels_per_leaf, log_loss_coeff, bias, disc, csum,
                       label_weight):
    """Train one FastXML tree per PRNG state in ``states``; return the flattened forest.

    Parameters
    ----------
    X_indptr, X_indices, X_data : uint64 (N+1,), uint32 (nnzX,), float32 (nnzX,)
        Training features (CSR, ids < n_features), as unsigned views (see ``_common``).
    Y_indptr, Y_indices : uint64 (N+1,), uint32 (nnzY,)
        Training label sets (CSR pattern, ids < n_labels).
    n_features, n_labels : int
        D and L.
    states : int64 (T,)
        MT19937 seed of each tree (see ``_common.tree_seed``).
    max_leaf, labels_per_leaf : int
        Leaf size threshold and labels kept per leaf.
    log_loss_coeff, bias : float
        c of C± = c / frac±, and the value of the bias feature.
    disc, csum : float32
        From ``ndcg.discount_tables`` (``normalise=False`` for PfastreXML's DCG).
    label_weight : float32 (max(L, 1),)
        y_il of each label: ones for FastXML, inverse propensities for PfastreXML
        (``ndcg.label_weights``). They weigh the nDCG step and the leaf distributions.

    Returns
    -------
    tuple of arrays
        tree_offsets int64 (T+1,), pos_child int32 (M,), neg_child int32 (M,) (tree-local,
        -1 at leaves), w_indptr int64 (M+1,), w_index int32, w_value float32, leaf_indptr
        int64 (M+1,), leaf_label int32, leaf_score float32.
    """
    N = X_indptr.shape[0] - 1
    T = states.shape[0]
    nnzx = np.int64(X_indptr[N])
    D1 = n_features + 1
    L1 = max(n_labels, 1)
    bias32 = np.float32(bias)
    coeff32 = np.float32(log_loss_coeff)

    perm = np.empty(N, np.int32)
    perm_tmp = np.empty(N, np.int32)
    side = np.empty(N, np.int8)
    newk = np.empty(N, np.uint32)
    idcg = np.empty(N, np.float32)
    Cw = np.empty(N, np.float32)
    prods = np.empty(N, np.float32)
    xTd = np.empty(N, np.float64)
    ewx = np.empty(N, np.float64)
    ewx_new = np.empty(N, np.float64)
    tau = np.empty(N, np.float64)
    Dd = np.empty(N, np.float64)
    Cneg = np.empty(N, np.float32)

    # column-major node data, two alternating levels (see the module docstring)
    ent_row0 = np.empty(nnzx + N, np.uint32)
    ent_val0 = np.empty(nnzx + N, np.float32)
    ent_row1 = np.empty(nnzx + N, np.uint32)
    ent_val1 = np.empty(nnzx + N, np.float32)
    cap0 = max(D1 + 1, 64)
    col_ptr0 = np.empty(cap0, np.uint64)
    col_feat0 = np.empty(cap0, np.int32)
    col_ptr1 = np.empty(cap0, np.uint64)
    col_feat1 = np.empty(cap0, np.int32)
    neg_ptr = np.empty(D1 + 1, np.uint64)
    neg_feat = np.empty(D1 + 1, np.int32)
    cnt = np.empty(D1, np.int64)

    w = np.empty(D1, np.float64)
    wpd = np.empty(D1, np.float64)
    Hdiag = np.empty(D1, np.float64)
    Grad = np.empty(D1, np.float64)
    xjneg = np.empty(D1, np.float64)
    index = np.empty(D1, np.int32)
    w_idx = np.empty(D1, np.int32)
    w_val = np.empty(D1, np.float32)

    lab_map = np.full(L1, NOMAP, np.uint32)
    act_lab = np.empty(L1, np.int32)
    act_w = np.empty(L1, np.float32)
    lsum = np.empty(L1, np.float32)
    pos_sum = np.empty(L1, np.float32)
    neg_sum = np.empty(L1, np.float32)
    diff = np.empty(L1, np.float32)
    rank_ids = np.empty(L1, np.int32)
    rank_keys = np.empty(L1, np.float32)
    sort_stack = np.empty(SORT_STACK, np.int64)
    lcount = np.empty(L1, np.float64)
    order = np.empty(L1, np.int32)
    otmp = np.empty(L1, np.int32)
    leaf_lab = np.empty(L1, np.int32)
    leaf_val = np.empty(L1, np.float32)

    max_nodes = 2 * N + 1
    nstart = np.empty(max_nodes, np.int64)
    nend = np.empty(max_nodes, np.int64)
    ndepth = np.empty(max_nodes, np.int64)
    ncol = np.empty(max_nodes, np.int64)  # offset of the node's columns in its level's arrays
    nm = np.empty(max_nodes, np.int64)  # number of columns

    # one tree's worth to start with; the output buffers double as trees accumulate
    est = max(64, 2 * (N // max(max_leaf, 1)) + 3)
    pos_child = np.empty(est, np.int32)
    neg_child = np.empty(est, np.int32)
    w_indptr = np.zeros(est + 1, np.int64)
    leaf_indptr = np.zeros(est + 1, np.int64)
    w_index = np.empty(est * 8, np.int32)
    w_value = np.empty(est * 8, np.float32)
    leaf_label = np.empty(est * 4, np.int32)
    leaf_score = np.empty(est * 4, np.float32)
    tree_offsets = np.zeros(T + 1, np.int64)

    mt = np.empty(MT_STATE, np.uint32)
    M = 0
    WN = 0
    LN = 0
    for t in range(T):
        mt_seed(mt, states[t])
        for i in range(N):
            perm[i] = i
        nstart[0] = 0
        nend[0] = N
        ndepth[0] = 0
        ncol[0] = 0
        nm[0] = 0
        if N > max_leaf:
            nm[0] = build_root_columns(X_indptr, X_indices, X_data, n_features, bias32, cnt,
                                       ent_row0, ent_val0, col_ptr0, col_feat0)
        n_nodes = 1
        cur_depth = -1
        e_cur = np.int64(0)  # write cursors into the level that receives the children
        c_cur = np.int64(0)
        i = 0
        while i < n_nodes:
            s = nstart[i]
            e = nend[i]
            n = e - s
            d = ndepth[i]
            if d != cur_depth:
                cur_depth = d
                e_cur = np.int64(0)
                c_cur = np.int64(0)
            # this level's data and the level its children go to
            if d % 2 == 0:
                src_row, src_val, src_ptr, src_feat = ent_row0, ent_val0, col_ptr0, col_feat0
                dst_row, dst_val, dst_ptr, dst_feat = ent_row1, ent_val1, col_ptr1, col_feat1
            else:
                src_row, src_val, src_ptr, src_feat = ent_row1, ent_val1, col_ptr1, col_feat1
                dst_row, dst_val, dst_ptr, dst_feat = ent_row0, ent_val0, col_ptr0, col_feat0
            rows = perm[s:e]
            nl = map_labels(Y_indptr, Y_indices, rows, lab_map, act_lab, label_weight, act_w)
            # np.int64(...) rather than bare literals: a literal-typed argument makes numba
            # compile the callee twice (once for the literal, once for int64)
            npos = np.int64(-1)
            epos = np.int64(0)
            nw = np.int64(0)
            if n > max_leaf:
                draw_sides(mt, side, 0, n, 0)
                node_idcg(Y_indptr, rows, csum, idcg)
                ok = optimize_ndcg_kernel(Y_indptr, Y_indices, rows, side, lab_map, nl, act_w,
                                          idcg, pos_sum, neg_sum, diff, rank_ids, rank_keys,
                                          sort_stack, disc)
                if ok:
                    npos0 = 0
                    for k in range(n):
                        if side[k] > 0:
                            npos0 += 1
                    c_pos, c_neg = class_weights(coeff32, npos0, n)
                    for k in range(n):
                        Cw[k] = c_pos if side[k] > 0 else c_neg
                    m = nm[i]
                    cptr = src_ptr[ncol[i]:ncol[i] + m + 1]
                    cfeat = src_feat[ncol[i]:ncol[i] + m]
                    l1r_lr_kernel(cptr, src_row, src_val, m, n, side, Cw, mt, w, wpd, Hdiag,
                                  Grad, xjneg, index, xTd, ewx, ewx_new, tau, Dd, Cneg)
                    nw = keep_weights(w, m, cfeat, w_idx, w_val)
                    npos, epos = _route_and_partition(X_indptr, cptr, src_row, src_val, m, w,
                                                      rows, side, prods, newk, perm_tmp)
                    if npos > 0 and (npos > max_leaf or n - npos > max_leaf):
                        # children's columns (one of them may end up unused as a leaf)
                        need = c_cur + 2 * (m + 1)
                        if need > dst_ptr.shape[0]:
                            dst_ptr = grow(dst_ptr, need)
                            dst_feat = grow(dst_feat, need)
                            if d % 2 == 0:
                                col_ptr1, col_feat1 = dst_ptr, dst_feat
                            else:
                                col_ptr0, col_feat0 = dst_ptr, dst_feat
                        mp, mn = split_columns(src_row, src_val, cptr, cfeat, m, side, newk,
                                               dst_row, dst_val, e_cur, e_cur + epos,
                                               dst_ptr[c_cur:], dst_feat[c_cur:], neg_ptr,
                                               neg_feat)
                        # the negative child's columns go right after the positive child's
                        for q in range(mn + 1):
                            dst_ptr[c_cur + mp + 1 + q] = neg_ptr[q]
                        for q in range(mn):
                            dst_feat[c_cur + mp + 1 + q] = neg_feat[q]
                        ncol[n_nodes] = c_cur
                        nm[n_nodes] = mp
                        ncol[n_nodes + 1] = c_cur + mp + 1
                        nm[n_nodes + 1] = mn
                        c_cur += mp + mn + 2
                        e_cur += np.int64(src_ptr[ncol[i] + m] - src_ptr[ncol[i]])

            pos_child = grow(pos_child, M + 1)
            neg_child = grow(neg_child, M + 1)
            w_indptr = grow(w_indptr, M + 2)
            leaf_indptr = grow(leaf_indptr, M + 2)
            if npos > 0:
                for c in range(2):
                    ndepth[n_nodes + c] = d + 1
                nstart[n_nodes] = s
                nend[n_nodes] = s + npos
                nstart[n_nodes + 1] = s + npos
                nend[n_nodes + 1] = e
                pos_child[M] = n_nodes
                neg_child[M] = n_nodes + 1
                n_nodes += 2
                w_index, w_value, WN = append_pairs(w_index, w_value, WN, w_idx, w_val, nw)
            else:
                pos_child[M] = -1
                neg_child[M] = -1
                kk = leaf_distribution(Y_indptr, Y_indices, rows, nl, lab_map, act_lab, act_w,
                                       lsum, rank_ids, rank_keys, sort_stack, lcount, order,
                                       otmp, labels_per_leaf, leaf_lab, leaf_val)
                leaf_label, leaf_score, LN = append_pairs(leaf_label, leaf_score, LN, leaf_lab,
                                                          leaf_val, kk)
            w_indptr[M + 1] = WN
            leaf_indptr[M + 1] = LN
            for j in range(nl):
                lab_map[act_lab[j]] = NOMAP
            M += 1
            i += 1
        tree_offsets[t + 1] = M
    return (tree_offsets, pos_child[:M].copy(), neg_child[:M].copy(), w_indptr[:M + 1].copy(),
            w_index[:WN].copy(), w_value[:WN].copy(), leaf_indptr[:M + 1].copy(),
            leaf_label[:LN].copy(), leaf_score[:LN].copy())
