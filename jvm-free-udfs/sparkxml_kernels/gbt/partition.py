"""Applying split decisions to binned rows: node partitions and leaf routing.

The grower keeps the (sampled) local rows in one int32 array; node ``i`` owns a contiguous
slice. Splitting a node reorders its slice stably into [left rows | right rows], so rows stay
ascending inside every node and histogram building reads memory forward.

A row goes left when its bin is <= the split's bin threshold, or, for the missing bin 255,
when the split's default direction is left.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._dtypes import BIN, INDEX, NODE
from .histogram import PREFETCH_ROWS, prefetch


@njit(cache=True, nogil=True)
def _partition_nodes(binned, partition, scratch, starts, ends, features, bins, default_left,
                     n_left_out):
    bflat = binned.reshape(-1)
    d = np.uint64(binned.shape[1])
    for j in range(starts.shape[0]):
        s = starts[j]
        e = ends[j]
        f = np.uint64(features[j])  # unsigned: no negative-index wraparound code
        t = bins[j]
        dl = default_left[j] != 0
        nl = 0
        nr = 0
        for i in range(s, e):
            if i + PREFETCH_ROWS < e:  # scattered rows: fetch the byte we will need ahead
                prefetch(bflat, np.uint64(partition[i + PREFETCH_ROWS]) * d + f)
            r = partition[i]
            b = binned[np.uint64(r), f]
            go_left = dl if b == 255 else b <= t
            if go_left:
                partition[s + nl] = r  # s + nl <= i: never overwrites an unread row
                nl += 1
            else:
                scratch[nr] = r
                nr += 1
        for i in range(nr):
            partition[s + nl + i] = scratch[i]
        n_left_out[j] = nl


def partition_nodes(binned, partition, scratch, starts, ends, features, bins, default_left):
    """Split several nodes' row slices in place.

    Parameters
    ----------
    binned : uint8 (n, d)
    partition : int32 (k,)
        Row indices; node j owns ``partition[starts[j]:ends[j]]``; reordered in place to
        [left | right], each side keeping its order.
    scratch : int32 (>= largest slice,)
        Work space.
    starts, ends : int64 (m,)
    features, bins : int32 (m,)
    default_left : uint8 (m,)

    Returns
    -------
    int64 (m,)
        Rows going left per node (the left child is ``[start, start + n_left)``).
    """
    n_left = np.empty(len(starts), np.int64)
    _partition_nodes(binned, partition, scratch, np.asarray(starts, np.int64),
                     np.asarray(ends, np.int64), np.asarray(features, np.int32),
                     np.asarray(bins, np.int32), np.asarray(default_left, np.uint8), n_left)
    return n_left


def partition_nodes_naive(binned, partition, starts, ends, features, bins, default_left):
    """Slow twin of :func:`partition_nodes` (returns (new partition, n_left))."""
    partition = np.array(partition, INDEX)
    n_left = np.zeros(len(starts), np.int64)
    for j, (s, e) in enumerate(zip(starts, ends)):
        rows = partition[s:e]
        b = np.asarray(binned, BIN)[rows, features[j]].astype(np.int64)
        go = np.where(b == 255, bool(default_left[j]), b <= bins[j])
        partition[s:e] = np.concatenate([rows[go], rows[~go]])
        n_left[j] = go.sum()
    return partition, n_left


@njit(cache=True, nogil=True)
def _route_binned(binned, rows, feature, bins, default_left, left, right, out):
    for i in range(rows.shape[0]):
        r = rows[i]
        node = 0
        while left[node] >= 0:
            b = binned[r, feature[node]]
            go_left = default_left[node] != 0 if b == 255 else b <= bins[node]
            node = left[node] if go_left else right[node]
        out[i] = node


def route_binned(binned, tree, rows=None) -> np.ndarray:
    """Leaf (tree-local node id) of each row of binned data, by the tree's bin thresholds.

    Parameters
    ----------
    binned : uint8 (n, d)
    tree : grower.Tree (uses ``feature``, ``bin``, ``default_left``, ``left``, ``right``)
    rows : int32 array, optional (default: all rows)

    Returns
    -------
    int32 (len(rows),)
    """
    rows = np.arange(binned.shape[0], dtype=INDEX) if rows is None \
        else np.ascontiguousarray(rows, INDEX)
    out = np.empty(rows.size, NODE)
    _route_binned(binned, rows, tree.feature, tree.bin, tree.default_left, tree.left,
                  tree.right, out)
    return out


def route_binned_naive(binned, tree, rows=None) -> np.ndarray:
    """Slow twin of :func:`route_binned`."""
    rows = range(binned.shape[0]) if rows is None else rows
    out = []
    for r in rows:
        node = 0
        while tree.left[node] >= 0:
            b = int(binned[r, tree.feature[node]])
            go = bool(tree.default_left[node]) if b == 255 else b <= tree.bin[node]
            node = tree.left[node] if go else tree.right[node]
        out.append(node)
    return np.array(out, NODE)
