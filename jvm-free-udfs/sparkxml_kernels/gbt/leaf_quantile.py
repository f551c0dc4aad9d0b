"""Exact quantiles per leaf over rows spread across workers (leaf refit of the absolute_error
and quantile objectives, and their base score), with XGBoost's two rules:

* rows with weights: the "lower" weighted alpha-quantile, the smallest value ``v`` among the
  leaf's rows with ``W(x <= v) >= alpha * W`` (XGBoost's ``WeightedQuantile``);
* rows without weights: XGBoost's ``Quantile``, the linear interpolation of NIST's definition:
  with the leaf's ``n`` values sorted ``a[0] <= ... <= a[n-1]`` and ``x = alpha (n + 1)``,
  ``a[k] + (x - 1 - k) (a[k+1] - a[k])`` for ``k = floor(x) - 1``; ``a[0]`` when
  ``alpha <= 1 / (n + 1)`` and ``a[n-1]`` when ``alpha >= n / (n + 1)``.

Each order statistic is found without moving rows: each value maps to a uint64 key with the
same order (the float64 bits, sign-adjusted), and the key is chosen a byte at a time, most
significant first. For each byte every worker histograms, per leaf, the weights (or counts) of
its rows whose key agrees with the prefix chosen so far, by the key's next byte (256
buckets); one ``allreduce_sum`` adds them up (both order statistics of an interpolation in
the same one) and every rank picks the same byte. Eight rounds fix all 64 bits, so the answer
does not depend on how rows are split (weights summing in a different order aside).

Differences: XGBoost (adaptive trees) and LightGBM average the workers' own leaf quantiles in
distributed training; here the quantile is that of all rows, the same whatever the number of
workers. LightGBM interpolates at position ``alpha n`` instead (and otherwise with weights).
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit


def order_keys(x) -> np.ndarray:
    """uint64 keys with the order of the float64 values ``x`` (no NaN)."""
    b = np.ascontiguousarray(x, FLOAT).view(np.uint64)
    sign = b >> np.uint64(63)
    return np.where(sign == 1, ~b, b | np.uint64(1 << 63))


def _from_keys(k) -> np.ndarray:
    k = np.asarray(k, np.uint64)
    top = k >> np.uint64(63)
    return np.where(top == 1, k & ~np.uint64(1 << 63), ~k).view(FLOAT)


@njit(cache=True, nogil=True)
def _byte_hist(keys, leaf, w, weighted, prefix, step, out):
    shift = np.uint64(56 - 8 * step)
    for i in range(keys.shape[0]):
        l = leaf[i]
        if l < 0:
            continue
        k = keys[i]
        if step > 0:
            hi = np.uint64(shift + np.uint64(8))
            if (k >> hi) != (prefix[l] >> hi):
                continue
        b = (k >> shift) & np.uint64(255)
        out[l, b] += w[i] if weighted else 1.0


def _select(keys, leaf, w, weighted, targets, coll) -> list:
    """Per target array ``t`` (n_leaves,), per leaf the smallest value whose rows' summed
    weight (count) up to it reaches ``t``; every rank gets the same arrays."""
    n_leaves = targets[0].size
    S = len(targets)
    prefix = np.zeros((S, n_leaves), np.uint64)
    below = np.zeros((S, n_leaves), FLOAT)
    for step in range(8):
        hist = np.zeros((S, n_leaves, 256), FLOAT)
        for s in range(S):
            _byte_hist(keys, leaf, w, weighted, prefix[s], step, hist[s])
        hist = coll.allreduce_sum(hist.reshape(-1)).reshape(S, n_leaves, 256)
        shift = np.uint64(56 - 8 * step)
        for s in range(S):
            for lf in range(n_leaves):
                if not targets[s][lf] > 0:
                    continue
                cum = below[s, lf] + np.cumsum(hist[s, lf])
                hit = np.flatnonzero((cum >= targets[s][lf]) & (hist[s, lf] > 0))
                # rounding can leave the last bucket's sum just below the target: take the
                # last non-empty bucket then (alpha close to 1)
                b = int(hit[0]) if hit.size else int(np.flatnonzero(hist[s, lf] > 0)[-1])
                below[s, lf] = cum[b] - hist[s, lf, b]
                prefix[s, lf] |= np.uint64(b) << shift
    return [_from_keys(prefix[s]) for s in range(S)]


def interpolation_ranks(n, alpha: float):
    """XGBoost's unweighted ``Quantile`` as ranks: (k, k + 1 clipped, d) per count in ``n``
    (0-based ranks of the two order statistics and the weight of the upper one)."""
    n = np.asarray(n, FLOAT)
    x = alpha * (n + 1.0)
    k = np.floor(x) - 1.0
    d = (x - 1.0) - k
    low = alpha <= 1.0 / (n + 1.0)
    high = alpha >= n / (n + 1.0)
    k = np.where(low, 0.0, np.where(high, n - 1.0, k))
    d = np.where(low | high, 0.0, d)
    k = np.maximum(k, 0.0)
    return k, np.minimum(k + 1.0, np.maximum(n - 1.0, 0.0)), d


def leaf_quantiles(values, leaf, n_leaves: int, w, alpha: float, coll) -> np.ndarray:
    """Per leaf 0..n_leaves-1, the alpha-quantile of ``values`` over the rows with
    ``leaf == l`` on every worker (``leaf < 0``: row left out): the lower weighted quantile
    with weights ``w``, XGBoost's interpolated one without (module docstring); NaN for a leaf
    without weight. Every rank gets the same array."""
    keys = order_keys(values)
    leaf = np.ascontiguousarray(leaf, np.int64)
    weighted = w is not None
    wa = np.ascontiguousarray(w, FLOAT) if weighted else np.ones(1, FLOAT)
    tot = np.bincount(leaf[leaf >= 0], weights=wa[leaf >= 0] if weighted else None,
                      minlength=n_leaves).astype(FLOAT)
    tot = coll.allreduce_sum(tot)[:n_leaves]
    if weighted:
        out = _select(keys, leaf, wa, True, [alpha * tot], coll)[0]
    else:
        k, k1, d = interpolation_ranks(tot, alpha)
        lo, hi = _select(keys, leaf, wa, False, [np.where(tot > 0, k + 1.0, 0.0),
                                                 np.where(tot > 0, k1 + 1.0, 0.0)], coll)
        out = np.where(d > 0, lo + d * (hi - lo), lo)
    out[tot <= 0] = np.nan
    return out


def leaf_quantiles_naive(values, leaf, n_leaves: int, w, alpha: float) -> np.ndarray:
    """Sorting twin of :func:`leaf_quantiles` on one worker's rows."""
    values = np.asarray(values, FLOAT)
    weighted = w is not None
    w = np.ones(values.size) if w is None else np.asarray(w, FLOAT)
    out = np.full(n_leaves, np.nan)
    for lf in range(n_leaves):
        m = np.asarray(leaf) == lf
        if not m.any() or w[m].sum() <= 0:
            continue
        order = np.argsort(values[m], kind="stable")
        v, cw = values[m][order], np.cumsum(w[m][order])
        if weighted:
            out[lf] = v[np.searchsorted(cw, alpha * cw[-1], side="left")]
            continue
        n = v.size
        if alpha <= 1.0 / (n + 1.0):
            out[lf] = v[0]
        elif alpha >= n / (n + 1.0):
            out[lf] = v[-1]
        else:
            x = alpha * (n + 1.0)
            k = int(np.floor(x) - 1.0)
            d = (x - 1.0) - k
            out[lf] = v[k] + d * (v[k + 1] - v[k]) if d > 0 else v[k]
    return out
