"""Slow twins of the split searches in ``splitter``: brute force over every threshold of
every feature (``best_split_naive``) and over every subset of a categorical feature's
categories (``best_category_subset_naive``), proxies computed from the rows."""
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
