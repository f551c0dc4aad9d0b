"""Quantile regression forests (Meinshausen 2006): the training samples of every leaf, kept
with the model, and the weighted quantiles of the samples in the leaves a row reaches.

Leaf samples
------------
Per tree and leaf, the labels of the training rows in that tree's sample that end in the leaf,
each with its weight: the row's bootstrap count in the tree times its sample weight, the
weights of the whole forest rescaled so that they sum to the sum of the counts (with unit
sample weights: the counts themselves, exactly). Equal labels of one leaf are merged (their
weights summed). Stored sorted by (node, label) as three arrays (``sample_offsets`` int64
(N + 1,) over all nodes, ``sample_y`` and ``sample_w`` float64 (E,)); E is at most the sum
over trees of the rows in each tree's sample, i.e. ``rows x trees`` (about 0.63 of that with
Poisson(1) counts): 16 bytes per entry.

Prediction
----------
quantile-forest's default estimator (``RandomForestQuantileRegressor(max_samples_leaf=None)
.predict(X, q)``, ``weighted_quantile=True``, ``weighted_leaves=False``,
``aggregate_leaves_first=True``, ``interpolation="linear"``): the samples of the T leaves a row
reaches are pooled, a training label weighing the sum of its weights over those leaves, and
each quantile q is read off the weighted ECDF at rank ``q (W - 1) + 1`` (W the total weight,
C = 1 in quantile-forest's ``calc_weighted_quantile``), interpolating linearly between the two
neighbouring labels, a label of weight w spanning w ranks. With integer weights this is
``numpy.quantile`` of the pooled labels, each repeated its weight times.

Differences from quantile-forest: its constructor's default ``max_samples_leaf=1`` keeps one
random sample per leaf (a cheaper, noisier estimator); here every sample is kept (its
``max_samples_leaf=None``). It uses sample weights only to drop rows of weight 0; here they
weigh the samples as above. Pooled labels are merged by value before the ECDF (equal to
quantile-forest's per-row weights whenever the weights are integers).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from .oob import route_binned

SAMPLE_KEYS = ("sample_offsets", "sample_y", "sample_w")


# ------------------------------------------------------------------ leaf samples at fit time
@njit(cache=True, nogil=True)
def _leaf_entries(binned, counts, left, right, feature, bins, mleft, miss, offsets,
                  o_node, o_row, o_count, catl):
    k = 0
    for r in range(binned.shape[0]):
        for t in range(offsets.shape[0] - 1):
            c = counts[t, r]
            if c == 0:
                continue
            base = offsets[t]
            o_node[k] = base + route_binned(binned, r, base, left, right, feature, bins,
                                            mleft, miss, catl)
            o_row[k] = r
            o_count[k] = c
            k += 1
    return k


def leaf_entries(binned, counts, route, miss):
    """The in-sample (tree, row) pairs of one rank's rows: (node int64, row int64, count
    float64), each of size (number of nonzero ``counts``), the node being the global id of
    the leaf the row reaches in that tree (binned routing, as ``oob.oob_sums``)."""
    m = int(np.count_nonzero(counts))
    node, row, cnt = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.float64)
    k = _leaf_entries(binned, counts, route["children_left"], route["children_right"],
                      route["feature"], route["bin"],
                      np.ascontiguousarray(route["missing_go_to_left"], np.int64), int(miss),
                      route["tree_offsets"], node, row, cnt,
                      route.get("categories_left", np.zeros((1, 1), np.uint64)))
    return node[:k], row[:k], cnt[:k]


def leaf_entries_naive(binned, counts, route, miss):
    """Slow twin of :func:`leaf_entries`."""
    node, row, cnt = [], [], []
    off = route["tree_offsets"]
    for r in range(binned.shape[0]):
        for t in range(off.size - 1):
            if counts[t, r] == 0:
                continue
            j = int(off[t])
            while route["children_left"][j] >= 0:
                b = int(binned[r, route["feature"][j]])
                if route["bin"][j] == -2:  # categorical: category b's bit
                    cl = route["categories_left"][j]
                    go = bool((int(cl[b // 64]) >> (b % 64)) & 1)
                else:
                    go = route["missing_go_to_left"][j] != 0 if b == miss else \
                        b <= route["bin"][j]
                j = int(off[t] + (route["children_left"][j] if go
                                  else route["children_right"][j]))
            node.append(j)
            row.append(r)
            cnt.append(float(counts[t, r]))
    return (np.asarray(node, np.int64), np.asarray(row, np.int64),
            np.asarray(cnt, np.float64))


def leaf_samples(node, y, count, weight, n_nodes: int) -> dict:
    """The stored leaf samples from every (tree, row) entry of the forest, in any order.

    Parameters
    ----------
    node : int64 (E,) global leaf ids; y : float64 (E,) labels; count : float64 (E,)
        bootstrap counts (> 0); weight : float64 (E,) the rows' sample weights (> 0) or None;
    n_nodes : int, the forest's node count N.

    Returns
    -------
    dict of :data:`SAMPLE_KEYS` arrays (see the module docstring); the result does not depend
    on the order of the entries (they are sorted before anything is summed).
    """
    node = np.asarray(node, np.int64)
    y = np.asarray(y, np.float64) + 0.0  # -0.0 and 0.0: one label
    count = np.asarray(count, np.float64)
    w = count if weight is None else count * np.asarray(weight, np.float64)
    order = np.lexsort((w, y, node))
    node, y, w, count = node[order], y[order], w[order], count[order]
    if weight is not None and node.size:
        w = w * (count.sum() / w.sum())
    new = np.ones(node.size, bool)
    new[1:] = (node[1:] != node[:-1]) | (y[1:] != y[:-1])
    starts = np.flatnonzero(new)
    merged_w = np.add.reduceat(w, starts) if starts.size else np.zeros(0)
    merged_node = node[starts]
    offsets = np.zeros(n_nodes + 1, np.int64)
    np.add.at(offsets, merged_node + 1, 1)
    return {"sample_offsets": np.cumsum(offsets), "sample_y": y[starts].copy(),
            "sample_w": merged_w}


def gather_leaf_samples(coll, binned, counts, route, miss, y, w, n_nodes: int):
    """Every rank's in-sample (tree, row) entries onto rank 0, as :func:`leaf_samples`
    (call on every rank; rank 0 gets the dict, the others None). Each rank writes its
    entries into its own slot of one zero buffer summed by the collective, so every rank
    holds (entries of all ranks) x 3 (4 with weights) float64 for the duration: the memory
    bound of the fit's quantile option (``rows x trees`` entries at most)."""
    node, row, cnt = leaf_entries(binned, counts, route, miss)
    sizes = np.zeros(coll.world_size)
    sizes[coll.rank] = node.size
    sizes = coll.allreduce_sum(sizes).astype(np.int64)
    total, start = int(sizes.sum()), int(sizes[:coll.rank].sum())
    cols = [node.astype(np.float64), np.asarray(y, np.float64)[row], cnt]
    if w is not None:
        cols.append(np.asarray(w, np.float64)[row])
    width = len(cols)
    buf = np.zeros(total * width)
    buf[start * width:(start + node.size) * width] = np.column_stack(cols).ravel()
    out: dict = {}

    def decide(summed):
        e = np.asarray(summed).reshape(total, width)
        out.update(leaf_samples(e[:, 0].astype(np.int64), e[:, 1], e[:, 2],
                                e[:, 3] if width == 4 else None, n_nodes))
        return np.zeros(1)

    coll.reduce_and_decide(buf, decide, consume=True)
    return out if coll.rank == 0 else None


def check_samples(samples: dict, n_nodes: int, leaf) -> None:
    """Raise ValueError unless ``samples`` are consistent with a forest of ``n_nodes`` nodes
    (``leaf``: bool (N,), samples only on leaves)."""
    off = np.asarray(samples["sample_offsets"])
    ys, ws = np.asarray(samples["sample_y"]), np.asarray(samples["sample_w"])
    if off.shape != (n_nodes + 1,) or off[0] != 0 or np.any(np.diff(off) < 0) \
            or off[-1] != ys.size or ws.size != ys.size:
        raise ValueError("leaf sample arrays are inconsistent with the node arrays")
    if np.any(np.diff(off)[~np.asarray(leaf, bool)] != 0) or not np.all(ws > 0) \
            or not np.all(np.isfinite(ys)):
        raise ValueError("leaf sample arrays are corrupt (samples on an internal node, "
                         "weights <= 0 or labels not finite)")


# ------------------------------------------------------------------ prediction
@njit(cache=True, nogil=True)
def _ecdf_quantile(v, cw, w, q):
    """quantile-forest's ``calc_weighted_quantile`` (C = 1, linear) for one q on distinct
    sorted labels ``v`` with weights ``w`` > 0 and cumulative weights ``cw``."""
    n = v.shape[0]
    f = cw[n - 1] - 1.0
    p = q * f + 1.0
    lo = 0
    hi = 1
    for j in range(n):
        if p >= cw[j]:
            lo = j
            hi = j + 1
        else:
            break
    if hi > n - 1:
        hi = n - 1
    if lo >= n - 1:
        return v[n - 1]
    if hi <= 0:
        return v[0]
    if lo == hi:
        return v[lo]
    p_lo = min(q, (cw[lo] - 1.0) / f)
    p_hi = max(q, (cw[hi] - 1.0) / f)
    p_hi = p_lo + (p_hi - p_lo) / w[hi]
    if q >= p_hi:
        return v[hi]
    frac = (q - p_lo) / (p_hi - p_lo)
    if frac <= 0:
        return v[lo]
    if frac >= 1:
        return v[hi]
    return v[lo] + frac * (v[hi] - v[lo])


@njit(cache=True, nogil=True)
def _predict_quantiles(leaves, offsets, ys, ws, qs, out, buf_y, buf_w):
    for i in range(leaves.shape[0]):
        m = 0
        for t in range(leaves.shape[1]):
            node = leaves[i, t]
            for e in range(offsets[node], offsets[node + 1]):
                buf_y[m] = ys[e]
                buf_w[m] = ws[e]
                m += 1
        if m == 0:
            for k in range(qs.shape[0]):
                out[i, k] = np.nan
            continue
        order = np.argsort(buf_y[:m], kind="mergesort")  # stable: equal labels in tree order
        v = np.empty(m)
        w = np.empty(m)
        d = 0
        for j in range(m):
            yj = buf_y[order[j]]
            if d > 0 and v[d - 1] == yj:
                w[d - 1] += buf_w[order[j]]
            else:
                v[d] = yj
                w[d] = buf_w[order[j]]
                d += 1
        cw = np.cumsum(w[:d])
        for k in range(qs.shape[0]):
            out[i, k] = _ecdf_quantile(v[:d], cw, w[:d], qs[k])


def check_quantiles(quantiles) -> np.ndarray:
    """float64 (Q,) from a non-empty list of numbers each in the open interval (0, 1)."""
    q = np.atleast_1d(np.asarray(quantiles, np.float64)) if np.size(quantiles) else \
        np.zeros(0)
    if q.ndim != 1 or q.size == 0 or not np.all((q > 0) & (q < 1)):
        raise ValueError(f"quantiles={list(np.atleast_1d(quantiles))} is invalid: must be a "
                         f"non-empty list of numbers in (0, 1)")
    return q


def predict_quantiles(leaves, samples: dict, quantiles) -> np.ndarray:
    """float64 (n, Q): the quantiles of each row given its leaves (int64 (n, T) global node
    ids, ``ForestPredictor.apply``) and the forest's leaf samples."""
    q = check_quantiles(quantiles)
    leaves = np.ascontiguousarray(leaves, np.int64)
    off = samples["sample_offsets"]
    sizes = np.diff(off)
    cap = int(sizes[leaves].sum(axis=1).max()) if leaves.size else 0
    out = np.empty((leaves.shape[0], q.size))
    _predict_quantiles(leaves, off, samples["sample_y"], samples["sample_w"], q, out,
                       np.empty(cap), np.empty(cap))
    return out


def predict_quantiles_naive(leaves, samples: dict, quantiles) -> np.ndarray:
    """Slow twin of :func:`predict_quantiles`: pooled labels merged by value with a dict,
    quantile-forest's ECDF rule written out."""
    q = check_quantiles(quantiles)
    off, ys, ws = samples["sample_offsets"], samples["sample_y"], samples["sample_w"]
    out = np.full((leaves.shape[0], q.size), np.nan)
    for i in range(leaves.shape[0]):
        pooled: dict = {}
        for node in leaves[i]:
            for e in range(off[node], off[node + 1]):
                pooled[ys[e]] = pooled.get(ys[e], 0.0) + ws[e]
        if not pooled:
            continue
        v = np.array(sorted(pooled))
        w = np.array([pooled[x] for x in v])
        cw = np.cumsum(w)
        f = cw[-1] - 1.0
        for k, qk in enumerate(q):
            below = np.flatnonzero(qk * f + 1.0 >= cw)
            lo = int(below[-1]) if below.size else 0
            hi = min(lo + 1, v.size - 1)
            if lo >= v.size - 1 or lo == hi:
                out[i, k] = v[lo]
                continue
            p_lo = min(qk, (cw[lo] - 1.0) / f)
            p_hi = p_lo + (max(qk, (cw[hi] - 1.0) / f) - p_lo) / w[hi]
            frac = 1.0 if qk >= p_hi else (qk - p_lo) / (p_hi - p_lo)
            out[i, k] = v[lo] + min(max(frac, 0.0), 1.0) * (v[hi] - v[lo]) \
                if 0.0 < frac < 1.0 else (v[lo] if frac <= 0.0 else v[hi])
    return out
