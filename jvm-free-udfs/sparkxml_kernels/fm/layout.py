"""Training data layout: rows in key order, exclusive feature blocks, per-block entry lists.

Exact block updates
-------------------
Coordinate updates of a factorization machine (ALS and MCMC alike) are sequential: the update
of one parameter sees the residuals left by the previous one. Two features that never occur in
the same row touch disjoint rows, so their parameters (for one factor) are conditionally
independent given the rest: updating all of them at once gives the same result as updating
them one after the other. A *block* is a range of feature ids no two of which occur in one row
(a one-hot encoded categorical column is one). One block update then needs one all-reduce of
per-feature sums, and every rank applies the same update.

Blocks are found from the data: :func:`next_cooccurring` records, for every feature ``a``, the
smallest feature id ``b > a`` that follows ``a`` in some row (rows have sorted indices); a
contiguous range ``[s, e)`` is a block exactly when ``min(next[s:e]) >= e``, and
:func:`exclusive_segments` cuts ``[0, d)`` greedily into the fewest such ranges. One-hot
fields laid out side by side come out as (unions of) the fields; a dense vector gives one
block per feature. The per-rank ``next`` arrays are combined by an element-wise minimum (an
all-gather of world x d int32, ``solver.allreduce_min``), so the blocks depend on the data
only, not on how it is partitioned.

Entry lists
-----------
:func:`block_entries` lists, block by block, the non-zeros ``(row, feature, value)`` of the
block's features in row order (so the per-row caches are read sequentially while the per-feature
sums, small, take the scattered writes).
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT, INDEX, INDPTR
from .._jit import njit
from .order import RowBlocks

__all__ = ["sort_rows", "check_sorted_indices", "next_cooccurring", "next_cooccurring_naive",
           "exclusive_segments", "exclusive_segments_naive", "refine_blocks", "block_entries",
           "block_entries_naive", "BlockedData"]


@njit(cache=True, nogil=True)
def _take_rows(indptr, indices, data, order, out_indptr, out_indices, out_data):
    pos = 0
    for r in range(order.shape[0]):
        i = order[r]
        for k in range(indptr[i], indptr[i + 1]):
            out_indices[pos] = indices[k]
            out_data[pos] = data[k]
            pos += 1
        out_indptr[r + 1] = pos


def sort_rows(indptr, indices, data, order):
    """CSR rows permuted (or selected) by ``order`` (int64 (r,)): row i of the result is row
    order[i]."""
    order = np.ascontiguousarray(order, np.int64)
    nnz = int(np.sum(indptr[order + 1] - indptr[order])) if order.size else 0
    out_indptr = np.zeros(order.size + 1, INDPTR)
    out_indices = np.empty(nnz, INDEX)
    out_data = np.empty(nnz, FLOAT)
    _take_rows(indptr, indices, data, order, out_indptr, out_indices, out_data)
    return out_indptr, out_indices, out_data


@njit(cache=True, nogil=True)
def _sort_row_indices(indptr, indices, data):
    """Sort each row's indices in place (rows are short: insertion sort); return the first row
    holding a repeated index, or -1."""
    bad = -1
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        for k in range(lo + 1, hi):
            j, v = indices[k], data[k]
            m = k - 1
            while m >= lo and indices[m] > j:
                indices[m + 1] = indices[m]
                data[m + 1] = data[m]
                m -= 1
            indices[m + 1] = j
            data[m + 1] = v
        for k in range(lo + 1, hi):
            if indices[k] == indices[k - 1] and bad < 0:
                bad = i
    return bad


def check_sorted_indices(indptr, indices, data, column: str = "features") -> None:
    """Sort every row's feature ids (in place); raise when a row repeats one."""
    bad = _sort_row_indices(indptr, indices, data)
    if bad >= 0:
        raise ValueError(f"column '{column}' has a vector that repeats a feature index (row "
                         f"{bad} of this partition)")


@njit(cache=True, nogil=True)
def next_cooccurring(indptr, indices, d):
    """int32 (d,): for each feature a, the smallest feature b > a that directly follows a in
    some row (rows sorted); d when none does."""
    out = np.full(d, d, np.int32)
    for i in range(indptr.shape[0] - 1):
        for k in range(indptr[i], indptr[i + 1] - 1):
            a, b = indices[k], indices[k + 1]
            if b < out[a]:
                out[a] = b
    return out


def next_cooccurring_naive(indptr, indices, d):
    """Slow twin: the smallest b > a that occurs in a row together with a (any position)."""
    out = np.full(d, d, np.int32)
    for i in range(len(indptr) - 1):
        row = sorted(indices[indptr[i]:indptr[i + 1]])
        for x in range(len(row)):
            for y in range(x + 1, len(row)):
                out[row[x]] = min(out[row[x]], row[y])
    return out


def exclusive_segments(next_b: np.ndarray, d: int) -> np.ndarray:
    """int64 (B + 1,) starts of the fewest contiguous blocks no two features of which occur in
    one row (last entry d); see the module docstring."""
    return _segments(np.ascontiguousarray(next_b, np.int64), int(d))


@njit(cache=True, nogil=True)
def _segments(next_b, d):
    starts = np.empty(d + 1, np.int64)
    nb = 0
    limit = -1
    for a in range(d):
        if a >= limit:  # a co-occurs with a feature of the open block: a new block starts
            starts[nb] = a
            nb += 1
            limit = next_b[a]
        elif next_b[a] < limit:
            limit = next_b[a]
    starts[nb] = d
    return starts[:nb + 1].copy()


def exclusive_segments_naive(indptr, indices, d: int) -> np.ndarray:
    """Slow twin: grow each block while no row holds two of its features."""
    rows = [set(indices[indptr[i]:indptr[i + 1]].tolist()) for i in range(len(indptr) - 1)]
    starts, s = [], 0
    while s < d:
        e = s + 1
        while e < d and all(len(r & set(range(s, e + 1))) <= 1 for r in rows):
            e += 1
        starts.append(s)
        s = e
    return np.asarray(starts + [d], np.int64)


def refine_blocks(block_starts: np.ndarray, field_starts) -> np.ndarray:
    """Starts of blocks that lie inside both a segment and a field (the union of starts)."""
    d = int(block_starts[-1])
    fs = np.asarray(field_starts if field_starts is not None else [], np.int64)
    return np.unique(np.concatenate([block_starts, fs[fs < d], [d]])).astype(np.int64)


@njit(cache=True, nogil=True)
def _block_entries(indptr, indices, data, block_of, n_blocks, ptr, rows, feats, vals):
    counts = np.zeros(n_blocks + 1, np.int64)
    for k in range(indices.shape[0]):
        counts[block_of[indices[k]] + 1] += 1
    for b in range(n_blocks):
        counts[b + 1] += counts[b]
    for b in range(n_blocks + 1):
        ptr[b] = counts[b]
    for i in range(indptr.shape[0] - 1):
        for k in range(indptr[i], indptr[i + 1]):
            b = block_of[indices[k]]
            p = counts[b]
            rows[p] = i
            feats[p] = indices[k]
            vals[p] = data[k]
            counts[b] = p + 1


def block_of_features(block_starts: np.ndarray) -> np.ndarray:
    """int32 (d,): the block of every feature."""
    d = int(block_starts[-1])
    return (np.searchsorted(block_starts, np.arange(d), side="right") - 1).astype(np.int32)


def block_entries(indptr, indices, data, block_starts):
    """(ptr int64 (B+1,), rows int32, feats int32, vals float64): the non-zeros of block b are
    entries ptr[b]:ptr[b+1], in row order."""
    B = block_starts.size - 1
    ptr = np.zeros(B + 1, np.int64)
    nnz = indices.size
    rows = np.empty(nnz, INDEX)
    feats = np.empty(nnz, INDEX)
    vals = np.empty(nnz, FLOAT)
    _block_entries(indptr, indices, np.asarray(data, FLOAT), block_of_features(block_starts), B,
                   ptr, rows, feats, vals)
    return ptr, rows, feats, vals


def block_entries_naive(indptr, indices, data, block_starts):
    """Slow twin of :func:`block_entries`."""
    B = len(block_starts) - 1
    lists = [[] for _ in range(B)]
    for i in range(len(indptr) - 1):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            b = int(np.searchsorted(block_starts, j, side="right") - 1)
            lists[b].append((i, j, data[k]))
    ptr = np.zeros(B + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    flat = [e for x in lists for e in x]
    return (ptr, np.array([e[0] for e in flat], INDEX), np.array([e[1] for e in flat], INDEX),
            np.array([e[2] for e in flat], FLOAT))


class BlockedData:
    """One worker's rows (CSR, key order) with the exclusive blocks' entry lists.

    Attributes
    ----------
    indptr, indices, data : CSR (int64, int32, float64)
    n, d : int
    block_starts : int64 (B + 1,)
    ptr, rows, feats, vals : the block entry lists (see :func:`block_entries`); ``vals`` is
        None when every value is 1.0 (``binary``)
    rb : order.RowBlocks
        The row blocks of the rows (default: one)
    sub : list of int64 (L + 1,)
        Per feature block: where each row block's entries start (``order``: the per-feature
        sums are taken per row block)
    """

    def __init__(self, indptr, indices, data, d: int, block_starts: np.ndarray,
                 rb: RowBlocks | None = None):
        self.indptr, self.indices, self.data = indptr, indices, np.asarray(data, FLOAT)
        self.n = indptr.size - 1
        self.d = int(d)
        self.block_starts = np.asarray(block_starts, np.int64)
        self.ptr, self.rows, self.feats, vals = block_entries(indptr, indices, self.data,
                                                              self.block_starts)
        self.rb = RowBlocks.whole(self.n) if rb is None else rb
        self.sub = [self.rb.entry_bounds(self.rows, int(self.ptr[b]), int(self.ptr[b + 1]))
                    for b in range(self.block_starts.size - 1)]
        # ``sub`` as one int64 array and its offsets (block b: flat[ptr[b]:ptr[b + 1]]), for
        # the kernels that loop over the blocks (``cd.update_blocks_local``)
        sub_ptr = np.zeros(len(self.sub) + 1, np.int64)
        sub_ptr[1:] = np.cumsum([s.size for s in self.sub])
        flat = np.concatenate(self.sub).astype(np.int64) if self.sub else np.zeros(0, np.int64)
        self.sub_flat = (flat, sub_ptr)
        # one-hot data: the kernels take None for "every value is 1.0" and read no values
        self.binary = bool(np.all(vals == 1.0))
        self.vals = None if self.binary else vals

    @property
    def n_blocks(self) -> int:
        return self.block_starts.size - 1

    def block(self, b: int):
        """(first feature, end feature, first entry, end entry) of block b."""
        return (int(self.block_starts[b]), int(self.block_starts[b + 1]), int(self.ptr[b]),
                int(self.ptr[b + 1]))
