"""Slow twins of the split searches in ``splitter``: brute force over every threshold of
every feature (``best_split_naive``) and over every subset of a categorical feature's
categories (``best_category_subset_naive``), proxies computed from the rows; and of
``ordered.split_node_ordered`` in plain Python (``split_node_ordered_naive``)."""
from __future__ import annotations

import numpy as np


def best_split_naive(crit, binned, rows, y, w, features_order, n_classes, min_leaf, min_wleaf,
                     miss=-1):
    """Slow twin of the scan: the best split over ``features_order`` (visited in that order,
    strictly better wins) by brute force over every threshold between distinct bins, with the
    proxy computed from the rows (``criteria.proxy_naive``); rows in bin ``miss`` are missing
    (scikit-learn's order: missing right, then present left and missing right, then missing
    left). Returns (feature, left bin, missing-go-left) or (-1, -1, False). No 1e-7
    neighbour rule (bins are compared as integers)."""
    from .criteria import proxy_naive

    best, out = -np.inf, (-1, -1, False)
    rows = np.asarray(rows)
    for f in features_order:
        b = np.asarray(binned)[rows, f].astype(np.int64)
        gone = b == miss
        present = np.unique(b[~gone])
        cands = [(t, (~gone) & (b <= t), None) for t in present[:-1]]
        if gone.any() and present.size:
            cands.append((present[-1], ~gone, False))
            cands += [(t, gone | (b <= t), True) for t in present[:-1]]
        for t, go, ml in cands:
            L, R = rows[go], rows[~go]
            if len(L) < min_leaf or len(R) < min_leaf:
                continue
            if w[L].sum() < min_wleaf or w[R].sum() < min_wleaf:
                continue
            p = proxy_naive(crit, y[L], w[L], y[R], w[R], n_classes)
            if p > best:
                side = bool(ml) if gone.any() else len(L) > len(R)
                best, out = p, (int(f), int(t), side)
    return out


def best_category_subset_naive(crit, cats, y, w, n_classes, min_leaf=1):
    """Slow twin of ``splitter.scan_categorical``: the best left set by brute force over every
    split of the categories present (all ``2**(m-1) - 1`` subsets holding the smallest id or
    not, each split counted once), proxies from the rows (``criteria.proxy_naive``). Returns
    (proxy, sorted tuple of the categories on the side without the largest id) or
    (-inf, None)."""
    from itertools import combinations

    from .criteria import proxy_naive

    cats = np.asarray(cats, np.int64)
    present = np.unique(cats)
    m = present.size
    best, best_set = -np.inf, None
    # subsets of the first m - 1 categories (the last always on the other side), non-empty
    for r in range(1, m):
        for sub in combinations(present[:-1].tolist(), r):
            go = np.isin(cats, sub)
            if go.sum() < min_leaf or (~go).sum() < min_leaf:
                continue
            p = proxy_naive(crit, y[go], w[go], y[~go], w[~go], n_classes)
            if p > best:
                best, best_set = p, tuple(sub)
    return best, best_set


def split_node_ordered_naive(crit, X, cls, w, samples, start, end, n_classes, features,
                             constant_features, n_known, max_features, min_leaf, min_wleaf,
                             state, sort):
    """Slow twin of ``ordered.split_node_ordered`` in plain Python floats, with the sort
    passed in (``sort(values, idx)`` sorts float32 ``values`` in place and permutes ``idx``
    alongside; a test passes scikit-learn's own), lists for the sums and no preallocated
    scratch. Mutates ``samples``, ``features``, ``constant_features`` and ``state`` as the
    kernel does. Returns (feature or -1, position, n_total_constants, threshold,
    missing-go-left)."""
    from .criteria import proxy
    from .splitter import FEATURE_THRESHOLD, rand_int

    def sums(order):
        t = [0.0] * (n_classes + 1)
        for i in order:
            t[1 + int(cls[i])] += float(w[i])
        return t

    node = [int(i) for i in samples[start:end]]
    total = sums(node)
    wn = 0.0
    for i in node:
        wn += float(w[i])
    d = len(features)
    f_i, n_visited, n_found, n_drawn, n_total = d, 0, 0, 0, n_known
    best, best_f, best_pos, best_thr, best_ml = -np.inf, -1, end, 0.0, False
    while f_i > n_total and (n_visited < max_features or n_visited <= n_found + n_drawn):
        n_visited += 1
        f_j = int(rand_int(n_drawn, f_i - n_found, state))
        if f_j < n_known:
            features[[n_drawn, f_j]] = features[[f_j, n_drawn]]
            n_drawn += 1
            continue
        f_j += n_found
        f = int(features[f_j])
        # the rows missing f to the end by scikit-learn's two-pointer swaps, then the sort
        row = [int(i) for i in samples[start:end]]
        lo, hi = 0, len(row) - 1
        while lo <= hi:
            if np.isnan(X[row[hi], f]):
                hi -= 1
                continue
            if np.isnan(X[row[lo], f]):
                row[lo], row[hi] = row[hi], row[lo]
                hi -= 1
            lo += 1
        n_miss = len(row) - lo
        vals = np.array([X[i, f] for i in row[:lo]], np.float32)
        idx = np.array(row[:lo], np.intp)
        sort(vals, idx)
        row[:lo] = [int(i) for i in idx]
        samples[start:end] = row
        if lo == 0 or (n_miss == 0 and vals[-1] <= vals[0] + FEATURE_THRESHOLD):
            features[[f_j, n_total]] = features[[n_total, f_j]]
            n_found += 1
            n_total += 1
            continue
        f_i -= 1
        features[[f_i, f_j]] = features[[f_j, f_i]]
        m = end - start
        # candidates: (position in the range, the range's order, threshold, missing left)
        cands = [(k, row, float(vals[k - 1]) / 2.0 + float(vals[k]) / 2.0, False)
                 for k in range(1, lo) if not vals[k] <= vals[k - 1] + FEATURE_THRESHOLD]
        if n_miss:
            cands.append((lo, row, np.inf, False))
            shifted = row[lo:] + row[:lo]  # missing first, both blocks in order
            cands += [(n_miss + k, shifted, t, True) for k, _, t, _ in cands[:-1]]
        # the criterion: left sums carried from the position it last stopped at (pos),
        # from nothing again when the scan restarts with the missing rows first
        order = None
        for k, rows, thr, ml in cands:
            if rows is not order:
                order, left, wl, pos = rows, [0.0] * (n_classes + 1), 0.0, 0
                samples[start:end] = rows
            if k < min_leaf or m - k < min_leaf:
                continue
            if k - pos <= m - k:  # forwards: add the rows pos..k-1 in order
                for i in rows[pos:k]:
                    left[1 + int(cls[i])] += float(w[i])
                    wl += float(w[i])
            else:  # from the totals, removing the rows from the end down to k
                left, wl = list(total), wn
                for i in rows[k:][::-1]:
                    left[1 + int(cls[i])] -= float(w[i])
                    wl -= float(w[i])
            pos = k
            wr = wn - wl
            if wl < min_wleaf or wr < min_wleaf:
                continue
            lt = np.array(left)
            q = proxy(crit, lt, np.array(total) - lt, wl, wr, np.zeros(0))
            if q > best:
                best, best_f, best_pos, best_thr = q, f, start + k, thr
                best_ml = ml if n_miss else k > m - k
        if n_miss:  # the second scan leaves the missing rows first, with or without candidates
            samples[start:end] = shifted
    if best_pos < end:
        a, b = start, end
        while a < b:
            x = X[samples[a], best_f]
            if (best_ml if np.isnan(x) else float(x) <= best_thr):
                a += 1
            else:
                b -= 1
                samples[[a, b]] = samples[[b, a]]
    features[:n_known] = constant_features[:n_known]
    constant_features[n_known:n_known + n_found] = features[n_known:n_known + n_found]
    return best_f, best_pos, n_total, best_thr, best_ml
