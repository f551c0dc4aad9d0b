"""Exact weighted quantiles per leaf over rows spread across workers (leaf refit of the
absolute_error and quantile objectives, and their base score).

The alpha-quantile of a leaf is the smallest value ``v`` among its rows with ``W(x <= v) >=
alpha * W`` (W: the weights, summed over every worker): always one of the values, the "lower"
weighted quantile. It is found without moving rows: each value maps to a uint64 key with the
same order (the float64 bits, sign-adjusted), and the key is chosen a byte at a time, most
significant first. For each byte every worker histograms, per leaf, the weights of its rows
whose key agrees with the prefix chosen so far, by the key's next byte (256 buckets); one
``allreduce_sum`` adds them up and every rank picks the same byte. Eight rounds fix all 64
bits, so the answer does not depend on how rows are split (weights summing in a different
order aside).

Differences from LightGBM and XGBoost: LightGBM interpolates between the two values around
the quantile, and in distributed training it averages the workers' own leaf quantiles, as
XGBoost does (its adaptive trees); here the quantile is the exact lower weighted quantile of
all rows, the same whatever the number of workers.
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


def leaf_quantiles(values, leaf, n_leaves: int, w, alpha: float, coll) -> np.ndarray:
    """Per leaf 0..n_leaves-1, the weighted alpha-quantile of ``values`` over the rows with
    ``leaf == l`` on every worker (``leaf < 0``: row left out); NaN for a leaf without weight.
    Every rank gets the same array."""
    keys = order_keys(values)
    leaf = np.ascontiguousarray(leaf, np.int64)
    weighted = w is not None
    wa = np.ascontiguousarray(w, FLOAT) if weighted else np.ones(1, FLOAT)
    tot = np.bincount(leaf[leaf >= 0], weights=wa[leaf >= 0] if weighted else None,
                      minlength=n_leaves).astype(FLOAT)
    tot = coll.allreduce_sum(tot)[:n_leaves]
    target = alpha * tot
    prefix = np.zeros(n_leaves, np.uint64)
    below = np.zeros(n_leaves, FLOAT)
    for step in range(8):
        hist = np.zeros((n_leaves, 256), FLOAT)
        _byte_hist(keys, leaf, wa, weighted, prefix, step, hist)
        hist = coll.allreduce_sum(hist.reshape(-1)).reshape(n_leaves, 256)
        shift = np.uint64(56 - 8 * step)
        for lf in range(n_leaves):
            if tot[lf] <= 0:
                continue
            cum = below[lf] + np.cumsum(hist[lf])
            hit = np.flatnonzero((cum >= target[lf]) & (hist[lf] > 0))
            # rounding can leave the last bucket's sum just below the target: take the last
            # non-empty bucket then (alpha close to 1)
            b = int(hit[0]) if hit.size else int(np.flatnonzero(hist[lf] > 0)[-1])
            below[lf] = cum[b] - hist[lf, b]
            prefix[lf] |= np.uint64(b) << shift
    out = _from_keys(prefix)
    out[tot <= 0] = np.nan
    return out


def leaf_quantiles_naive(values, leaf, n_leaves: int, w, alpha: float) -> np.ndarray:
    """Sorting twin of :func:`leaf_quantiles` on one worker's rows."""
    values = np.asarray(values, FLOAT)
    w = np.ones(values.size) if w is None else np.asarray(w, FLOAT)
    out = np.full(n_leaves, np.nan)
    for lf in range(n_leaves):
        m = np.asarray(leaf) == lf
        if not m.any() or w[m].sum() <= 0:
            continue
        order = np.argsort(values[m], kind="stable")
        v, cw = values[m][order], np.cumsum(w[m][order])
        out[lf] = v[np.searchsorted(cw, alpha * cw[-1], side="left")]
    return out
