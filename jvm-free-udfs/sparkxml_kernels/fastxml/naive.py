"""Plain-Python twin of ``train_forest``: one tree at a time, lists and dicts, no numba; and
of its node separator (``l1r_lr_naive``, with ``l1r_lr_reference``, an accurate solution by
another method, and ``l1r_lr_objective``).

It spells the algorithm out node by node (random sides, nDCG optimisation, the C± weights, the
node's columns, the L1 logistic regression, dropping zero weights, routing by w.x >= 0, leaf
distributions) with the same arithmetic in the same order and the same random stream as the
compiled kernel, so on small data both produce bit-identical forests. Tests compare them.
It is slow (pure Python throughout): use it on tens of points, not on real data sets.
"""
from __future__ import annotations

import math

import numpy as np

from ..inplace import shuffle_prefix_naive
from ._common import MT19937, tree_seed
from ._stlsort import stl_sort_desc_naive
from .forest import concat_forests
from .logreg import EPS, MAX_INNER, MAX_LINESEARCH, MAX_NEWTON, NU, SIGMA, STEP_CLIP
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


def l1r_lr_naive(columns, y, C, rng: MT19937):
    """Plain-Python twin of ``logreg.l1r_lr_kernel``: the same steps, in the same order.

    Parameters
    ----------
    columns : list of list of (int, float)
        Per column, its (local point, value) entries in storage order; values must already be
        float32-representable.
    y : list of int
        +1 / -1 per point.
    C : list of float
        Loss weight per point, float32-representable.
    rng : MT19937
        Advanced exactly as the kernel advances its state.

    Returns
    -------
    list of float
        The weights.
    """
    f32 = np.float32
    m, n = len(columns), len(y)
    w = [0.0] * m
    wpd = [0.0] * m
    Hdiag = [0.0] * m
    Grad = [0.0] * m
    xjneg = []
    for col in columns:
        s = 0.0
        for i, v in col:
            if y[i] < 0:
                s += float(f32(C[i] * v))
        xjneg.append(s)
    ewx = [1.0] * n
    tau = [C[i] * (1.0 / (1.0 + 1.0)) for i in range(n)]
    Dd = [C[i] * 1.0 * (0.5 * 0.5) for i in range(n)]

    def violation(G, wj):
        if wj == 0.0:
            return max(-(G + 1.0), G - 1.0, 0.0)
        return abs(G + 1.0) if wj > 0.0 else abs(G - 1.0)

    def shrinkable(G, wj, limit):
        # at 0, no violation, and the gradient inside (-1 + limit, 1 - limit)
        Gp, Gn = G + 1.0, G - 1.0
        return wj == 0.0 and not (Gp < 0.0 or Gn > 0.0) and Gp > limit and Gn < -limit

    index = list(range(m))

    def visit(G, wj, limit, s, active, gmax, gnorm1):
        # liblinear's shrinking of coordinate index[s]: a shrinkable one swaps with the last
        # active one and leaves the set, else its violation counts; returns (active, gmax,
        # gnorm1, kept)
        if shrinkable(G, wj, limit):
            index[s], index[active - 1] = index[active - 1], index[s]
            return active - 1, gmax, gnorm1, False
        viol = violation(G, wj)
        return active, max(gmax, viol), gnorm1 + viol, True

    inner_eps, Gmax_old, Gnorm1_init, w_norm = 1.0, math.inf, 0.0, 0.0
    for newton_iter in range(MAX_NEWTON):
        Gmax_new, Gnorm1_new = 0.0, 0.0
        active = m
        s = 0
        while s < active:
            j = index[s]
            h, g = NU, 0.0
            for i, v in columns[j]:
                h += float(f32(v * v)) * Dd[i]
                g += v * tau[i]
            Hdiag[j] = h
            Grad[j] = G = -g + xjneg[j]
            active, Gmax_new, Gnorm1_new, kept = visit(G, w[j], Gmax_old / n, s, active,
                                                       Gmax_new, Gnorm1_new)
            s += kept
        if newton_iter == 0:
            Gnorm1_init = Gnorm1_new
        if Gnorm1_new <= EPS * Gnorm1_init:
            break
        it, qp_Gmax_old, qp_active = 0, math.inf, active
        xTd = [0.0] * n
        while it < MAX_INNER:
            qp_Gmax_new, qp_Gnorm1_new = 0.0, 0.0
            shuffle_prefix_naive(index, qp_active, rng.below)
            s = 0
            while s < qp_active:
                j = index[s]
                H = Hdiag[j]
                G = Grad[j] + (wpd[j] - w[j]) * NU
                for i, v in columns[j]:
                    G += v * Dd[i] * xTd[i]
                Gp, Gn = G + 1.0, G - 1.0
                qp_active, qp_Gmax_new, qp_Gnorm1_new, kept = visit(
                    G, wpd[j], qp_Gmax_old / n, s, qp_active, qp_Gmax_new, qp_Gnorm1_new)
                if not kept:
                    continue
                if Gp < H * wpd[j]:
                    z = -Gp / H
                elif Gn > H * wpd[j]:
                    z = -Gn / H
                else:
                    z = -wpd[j]
                s += 1
                if abs(z) < 1.0e-12:
                    continue
                z = min(max(z, -STEP_CLIP), STEP_CLIP)
                wpd[j] += z
                for i, v in columns[j]:
                    xTd[i] += v * z
            it += 1
            if qp_Gnorm1_new <= inner_eps * Gnorm1_init:
                if qp_active == active:
                    break
                qp_active, qp_Gmax_old = active, math.inf
                continue
            qp_Gmax_old = qp_Gmax_new

        delta, w_norm_new = 0.0, 0.0
        for j in range(m):
            delta += Grad[j] * (wpd[j] - w[j])
            if wpd[j] != 0.0:
                w_norm_new += abs(wpd[j])
        delta += w_norm_new - w_norm
        negsum_xTd = 0.0
        for i in range(n):
            if y[i] < 0:
                negsum_xTd += C[i] * xTd[i]
        for num_ls in range(MAX_LINESEARCH):
            cond = w_norm_new - w_norm + negsum_xTd - SIGMA * delta
            ewx_new = []
            for i in range(n):
                e_xTd = math.exp(xTd[i])
                ewx_new.append(ewx[i] * e_xTd)
                cond += C[i] * math.log((1.0 + ewx_new[i]) / (e_xTd + ewx_new[i]))
            if cond <= 0.0:
                w_norm = w_norm_new
                w = list(wpd)
                ewx = ewx_new
                for i in range(n):
                    t = 1.0 / (1.0 + ewx[i])
                    tau[i] = C[i] * t
                    Dd[i] = C[i] * ewx[i] * (t * t)
                break
            wpd = [(w[j] + wpd[j]) * 0.5 for j in range(m)]
            w_norm_new = 0.0
            for j in range(m):
                if wpd[j] != 0.0:
                    w_norm_new += abs(wpd[j])
            delta *= 0.5
            negsum_xTd *= 0.5
            xTd = [x * 0.5 for x in xTd]
        else:
            ewx = [0.0] * n
            for j in range(m):
                if w[j] != 0.0:
                    for i, v in columns[j]:
                        ewx[i] += w[j] * v
            ewx = [math.exp(x) for x in ewx]
        if it == 1:
            inner_eps *= 0.25
        Gmax_old = Gmax_new
    return w


def l1r_lr_objective(X, y, C, w) -> float:
    """sum |w| + sum_i C_i log(1 + exp(-y_i w.x_i)), straight from the definition (numpy)."""
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    z = X.astype(np.float64) @ np.asarray(w, np.float64)
    return float(np.abs(w).sum() + np.sum(np.asarray(C) * np.logaddexp(0.0, -np.asarray(y) * z)))


def l1r_lr_reference(X, y, C, iters: int = 20000):
    """Near-exact minimiser by FISTA (accelerated proximal gradient), a method unrelated to
    newGLMNET, for checking the kernel's solution on small dense problems.

    Returns
    -------
    float64 array (m,)
    """
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    X = X.astype(np.float64)
    y = np.asarray(y, np.float64)
    C = np.asarray(C, np.float64)
    lip = 0.25 * np.linalg.norm(X * np.sqrt(C)[:, None], 2) ** 2 + 1e-12
    step = 1.0 / lip
    w = np.zeros(X.shape[1])
    v = w.copy()
    t = 1.0
    for _ in range(iters):
        z = X @ v
        grad = X.T @ (-C * y / (1.0 + np.exp(y * z)))
        u = v - step * grad
        w_new = np.sign(u) * np.maximum(np.abs(u) - step, 0.0)
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        v = w_new + ((t - 1.0) / t_new) * (w_new - w)
        w, t = w_new, t_new
    return w
