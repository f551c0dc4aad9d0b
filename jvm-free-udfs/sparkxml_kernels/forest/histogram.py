"""Per-node statistic histograms for the criteria, and node partitioning.

A node's histogram is float64 ``hist[k, slot, S]`` over the node's ``k`` selected features
(all features for a single tree, the drawn subset in a forest): slot = the row's bin (uint8 or
uint16 binned data; the last slot holds the missing values), S sums as in ``criteria``. Several
nodes built in one call are ``(m, k, n_slots, S)``, C order, so they concatenate into one
reduce.

A row's weight in tree ``t`` is ``rw[r] * counts[t, r]``: its sample (and class) weight times
its bootstrap count (all ones for a single tree). Rows whose weight is 0 are never in a node.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ..inplace import close_partition
from .criteria import per_label
from .exactsum import add_levels


@njit(cache=True, nogil=True, inline="always")
def _layout(out):
    # out (m, k, n_slots, S) as one flat array, with unsigned strides (no wraparound checks)
    # of a feature (fs) and of a slot (ss); returns (flat, m, k, fs, ss)
    m, k, n_slots, S = out.shape
    return out.reshape(-1), m, k, np.uint64(n_slots * S), np.uint64(S)


@njit(cache=True, nogil=True, inline="always")
def _node(feats, node_tree, j, k, fs):
    # node j's tree, the flat offset of its histogram and its feature count (its row of
    # feats is padded with -1)
    kk = 0
    while kk < k and feats[j, kk] >= 0:
        kk += 1
    return node_tree[j], np.uint64(j * k) * fs, kk


@njit(cache=True, nogil=True)
def _build(crit, binned, part, starts, ends, feats, node_tree, counts, cls, y, ylny, rw, tcw,
           out):
    # flat offsets (unsigned: no wraparound checks) instead of per-update array views
    classification = per_label(crit)
    has_tcw = tcw.shape[0] > 0
    flat, m, k, fs, ss = _layout(out)
    for j in range(m):
        t, node_base, kk = _node(feats, node_tree, j, k, fs)
        for i in range(starts[j], ends[j]):
            r = part[i]
            # the row's weight (times its per-tree class weight under balanced_subsample)
            # and regression terms written out here: an inlined helper taking the arrays
            # costs two atomic reference counts per array and row
            w = rw[r] * counts[t, r]
            if has_tcw:
                w *= tcw[t, cls[r]]
            base = node_base
            if classification:
                c = np.uint64(1 + cls[r])
                for fi in range(kk):
                    o = base + np.uint64(binned[r, feats[j, fi]]) * ss
                    flat[o] += 1.0
                    flat[o + c] += w
                    base += fs
            else:
                wy = w * y[r]
                wyy = wy * y[r]
                wl = w * ylny[r]
                for fi in range(kk):
                    o = base + np.uint64(binned[r, feats[j, fi]]) * ss
                    flat[o] += 1.0
                    flat[o + np.uint64(1)] += w
                    flat[o + np.uint64(2)] += wy
                    flat[o + np.uint64(3)] += wyy
                    flat[o + np.uint64(4)] += wl
                    base += fs


@njit(cache=True, nogil=True)
def _build_levels(crit, binned, part, starts, ends, feats, node_tree, counts, cls, y, ylny, rw,
                  tcw, off, nlev, mags, out):
    # _build with each statistic's terms split into levels (``exactsum``): slot o + off[s]
    classification = per_label(crit)
    has_tcw = tcw.shape[0] > 0
    flat, m, k, fs, ss = _layout(out)
    for j in range(m):
        t, node_base, kk = _node(feats, node_tree, j, k, fs)
        for i in range(starts[j], ends[j]):
            r = part[i]
            # the row's weight (times its per-tree class weight under balanced_subsample)
            # and regression terms written out here: an inlined helper taking the arrays
            # costs two atomic reference counts per array and row
            w = rw[r] * counts[t, r]
            if has_tcw:
                w *= tcw[t, cls[r]]
            base = node_base
            if classification:
                c = 1 + cls[r]
                for fi in range(kk):
                    o = np.int64(base + np.uint64(binned[r, feats[j, fi]]) * ss)
                    flat[o] += 1.0
                    add_levels(flat, o + off[c], w, c, nlev, mags)
                    base += fs
            else:
                wy = w * y[r]
                wyy = wy * y[r]
                wl = w * ylny[r]
                for fi in range(kk):
                    o = np.int64(base + np.uint64(binned[r, feats[j, fi]]) * ss)
                    flat[o] += 1.0
                    add_levels(flat, o + off[1], w, 1, nlev, mags)
                    add_levels(flat, o + off[2], wy, 2, nlev, mags)
                    add_levels(flat, o + off[3], wyy, 3, nlev, mags)
                    add_levels(flat, o + off[4], wl, 4, nlev, mags)
                    base += fs


def build_histograms(crit, binned, part, starts, ends, feats, node_tree, counts, cls, y, ylny,
                     rw, out, plan=None, tcw=None):
    """Add the histograms of ``m`` nodes to ``out`` (m, k, n_slots, S) (zero it first).

    Parameters
    ----------
    crit : criterion id (``criteria``)
    binned : uint8 or uint16 (n, d)
    part : int32 row indices; node j owns ``part[starts[j]:ends[j]]``
    feats : int64 (m, k) features of each node (-1 pads a shorter list)
    node_tree : int64 (m,) tree of each node (row of ``counts``)
    counts : uint8 (T, n) bootstrap counts; cls int32 (n,) classes (classification);
    y, ylny : float64 (n,) target and y·ln y (regression); rw : float64 (n,) row weights
    plan : ``exactsum.LevelPlan``, optional
        Sum each statistic in its levels: ``out`` is then (m, k, n_slots, plan.width), and
        ``exactsum.collapse`` of the summed histograms gives sums that do not depend on the
        order or spread of the rows.
    tcw : float64 (T, K), optional
        Per-tree class weights (classification; ``bootstrap.subsample_class_weights``): a
        row weighs ``rw[r] * counts[t, r] * tcw[t, cls[r]]`` in tree ``t``.
    """
    args = (crit, binned, part, np.asarray(starts, np.int64), np.asarray(ends, np.int64),
            np.ascontiguousarray(feats, np.int64), np.asarray(node_tree, np.int64), counts, cls,
            y, ylny, rw, no_class_weights() if tcw is None else np.ascontiguousarray(tcw))
    if plan is None or plan.plain:
        _build(*args, out)
    else:
        _build_levels(*args, plan.off, plan.nlev, plan.mags, out)


def no_class_weights() -> np.ndarray:
    """The ``tcw`` of no per-tree class weights (an empty (0, 0) table)."""
    return np.zeros((0, 0))


def build_histograms_naive(crit, binned, part, starts, ends, feats, node_tree, counts, cls, y,
                           ylny, rw, n_slots, S, tcw=None):
    """Slow twin of :func:`build_histograms`: returns a fresh array."""
    m, k = np.asarray(feats).shape
    out = np.zeros((m, k, n_slots, S))
    for j in range(m):
        for i in range(starts[j], ends[j]):
            r = part[i]
            w = rw[r] * counts[node_tree[j], r]
            if tcw is not None:
                w *= tcw[node_tree[j], cls[r]]
            for fi in range(k):
                f = feats[j][fi]
                if f < 0:
                    break
                h = out[j, fi, int(binned[r, f])]
                h[0] += 1
                if per_label(crit):
                    h[1 + cls[r]] += w
                else:
                    h[1:5] += [w, w * y[r], w * y[r] * y[r], w * ylny[r]]
    return out


def row_stats(crit, n_classes, cls, y, ylny, w) -> np.ndarray:
    """Per-row sums (n, S) (count 1, then the weighted statistics), for one-process growth."""
    n = w.shape[0]
    if per_label(crit):
        out = np.zeros((n, n_classes + 1))
        out[:, 0] = 1.0
        out[np.arange(n), 1 + cls] = w
        return out
    out = np.empty((n, 5))
    out[:, 0] = 1.0
    out[:, 1] = w
    out[:, 2] = w * y
    out[:, 3] = out[:, 2] * y
    out[:, 4] = w * ylny
    return out


def ylny(y) -> np.ndarray:
    """y·ln y with 0·ln 0 = 0 (poisson's node loss)."""
    y = np.asarray(y, np.float64)
    pos = y > 0
    out = np.zeros_like(y)
    out[pos] = y[pos] * np.log(y[pos])
    return out


@njit(cache=True, nogil=True)
def split_slice(binned, part, scratch, s, e, f, t, ml, miss, mask):
    """Reorder ``part[s:e]`` stably into [bin of f <= t, or bin == miss when ``ml`` | rest];
    a categorical split (``t == -2``) sends the bins with ``mask[bin] != 0`` left instead.
    Returns the left count."""
    nl = 0
    nr = 0
    cat = t == -2
    for i in range(s, e):
        r = part[i]
        b = binned[r, f]
        # inplace.place_row written out: inlined here, it left two atomic reference counts
        # per array and row
        if (mask[b] != 0) if cat else (b <= t or (ml and b == miss)):
            part[s + nl] = r
            nl += 1
        else:
            scratch[nr] = r
            nr += 1
    close_partition(part, scratch, s, nl, nr)
    return nl


@njit(cache=True, nogil=True)
def _partition(binned, part, scratch, starts, ends, features, bins, mls, miss, n_left, masks):
    for j in range(starts.shape[0]):
        n_left[j] = split_slice(binned, part, scratch, starts[j], ends[j], features[j], bins[j],
                                mls[j], miss, masks[j if masks.shape[0] > j else 0])


def partition_nodes(binned, part, starts, ends, features, bins, scratch=None, mls=None,
                    miss=-1, masks=None) -> np.ndarray:
    """Split node slices in place into [bin <= bins[j] (or the missing slot ``miss`` when
    ``mls[j]``) | rest], both sides keeping their order; a categorical split (``bins[j] ==
    -2``) sends the bins set in ``masks[j]`` (uint8 (m, n_slots)) left. Returns the number of
    rows going left per node (int64 (m,))."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if scratch is None:
        scratch = np.empty(int((ends - starts).max()) if starts.size else 0, part.dtype)
    n_left = np.empty(starts.size, np.int64)
    mls = np.zeros(starts.size, np.bool_) if mls is None else np.asarray(mls, np.bool_)
    masks = np.zeros((1, 1), np.uint8) if masks is None or not starts.size else \
        np.ascontiguousarray(masks, np.uint8).reshape(starts.size, -1)
    _partition(binned, part, scratch, starts, ends, np.asarray(features, np.int64),
               np.asarray(bins, np.int64), mls, int(miss), n_left, masks)
    return n_left


def partition_nodes_naive(binned, part, starts, ends, features, bins, mls=None, miss=-1,
                          masks=None):
    """Slow twin of :func:`partition_nodes` (returns (new part, n_left))."""
    part = np.array(part)
    n_left = np.zeros(len(starts), np.int64)
    for j, (s, e) in enumerate(zip(starts, ends)):
        rows = part[s:e]
        b = np.asarray(binned)[rows, features[j]].astype(np.int64)
        go = (b <= bins[j]) | (bool(mls is not None and mls[j]) & (b == miss))
        if bins[j] == -2:
            go = np.asarray(masks[j])[b] != 0
        part[s:e] = np.concatenate([rows[go], rows[~go]])
        n_left[j] = go.sum()
    return part, n_left
