"""Binned matrices beyond dense uint8: sparse (CSR) storage, uint16 (wide) bins and
categorical features, with their histogram, partition and routing kernels.

Dense matrices, uint8 or uint16, keep the kernels of histogram.py and partition.py (the
partitions read the grower's column copy, for category sets too): every function here sends
them there, and takes its own code paths only for the data that need them:

* **wide bins** -- a feature with more than 255 real bins (``maxBins`` up to 65536) is binned
  to uint16 with 65535 as the missing bin;
* **sparse storage** (:class:`SparseBinned`) -- like LightGBM's sparse bins or XGBoost's CSR
  pages: per row, only the entries whose bin differs from the feature's bin of an absent
  entry (0.0) are stored, as (feature int32, bin uint8/uint16) pairs. Memory is
  ``8 (n + 1) + 5 nnz`` bytes (uint8 bins; ``6 nnz`` for uint16), against ``n d`` dense. A
  node's histogram is accumulated from its rows' stored entries; each feature's absent-value
  slot is then the node's total minus the feature's other slots (LightGBM's trick), so a
  histogram costs the node's non-zeros plus ``d x n_slots``, not ``rows x d``;
* **categorical splits** -- a node splitting on a categorical feature sends the bins in a set
  left (a bitset of ``ceil(n_slots / 32)`` uint32 words per node, bit ``b`` of word ``b // 32``
  = bin ``b`` goes left); the missing bin always goes right.

Categorical features are binned exactly: ``categories[f]`` holds the sorted category values
seen by the sketch, bin ``b`` is category ``categories[f][b]``, and a value that is not one of
them (a category unseen by the sketch, a negative or fractional value) gets the missing bin.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._dtypes import BIN, FLOAT, INDEX, INDPTR, NODE
from .._jit import njit
from ..binning import MAX_REAL_BINS, MISSING_BIN, MISSING_BIN_WIDE, bin_data
from ..inplace import close_partition, place_row
from ..inputs import csr_parts, dense, is_csr
from . import histogram as _hist
from . import partition as _part

WIDE = np.uint16


@dataclass
class SparseBinned:
    """Binned rows in CSR form, storing only entries whose bin differs from ``default_bin``.

    Attributes
    ----------
    indptr : int64 (n + 1,)
    indices : int32 (nnz,)   feature of each stored entry (ascending within a row)
    bins : uint8 or uint16 (nnz,)
    default_bin : int32 (d,)  bin of an absent entry (the bin of 0.0, or the missing bin)
    n_features : int
    """

    indptr: np.ndarray
    indices: np.ndarray
    bins: np.ndarray
    default_bin: np.ndarray
    n_features: int

    @property
    def shape(self):
        return (self.indptr.size - 1, int(self.n_features))

    @property
    def dtype(self):
        return self.bins.dtype

    @property
    def missing(self) -> int:
        return missing_code(self.bins.dtype)

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + self.bins.nbytes
                   + self.default_bin.nbytes)

    def take(self, rows) -> "SparseBinned":
        """The rows ``rows`` (int array or bool mask), in that order."""
        rows = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows)
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        ptr = np.zeros(rows.size + 1, INDPTR)
        np.cumsum(ends - starts, out=ptr[1:])
        sel = np.repeat(starts - ptr[:-1], ends - starts) + np.arange(ptr[-1])
        return SparseBinned(ptr, self.indices[sel], self.bins[sel], self.default_bin,
                            self.n_features)

    def to_dense(self) -> np.ndarray:
        """Dense (n, d) bins (tests and small data only)."""
        n, d = self.shape
        out = np.empty((n, d), self.bins.dtype)
        out[:] = self.default_bin.astype(self.bins.dtype)
        rows = np.repeat(np.arange(n), np.diff(self.indptr))
        out[rows, self.indices] = self.bins
        return out


def missing_code(dtype) -> int:
    return MISSING_BIN if np.dtype(dtype) == BIN else MISSING_BIN_WIDE


def is_sparse(binned) -> bool:
    return isinstance(binned, SparseBinned)


def needs_generic(binned, categorical=False) -> bool:
    """True when ``binned`` needs this module's kernels (not the dense uint8 fast path)."""
    return categorical or is_sparse(binned) or binned.dtype != BIN


def as_binned(binned):
    """Dense binned input as a C-ordered uint8/uint16 array; sparse unchanged."""
    if is_sparse(binned):
        return binned
    a = np.asarray(binned)
    if a.dtype not in (BIN, WIDE):
        a = a.astype(BIN)
    return np.ascontiguousarray(a)


def take_rows(binned, rows):
    """Rows of a dense or sparse binned matrix."""
    return binned.take(rows) if is_sparse(binned) else np.ascontiguousarray(binned[rows])


# --------------------------------------------------------------------------------------------
# binning


def _flat_edges(edges):
    ptr = np.zeros(len(edges) + 1, INDPTR)
    ptr[1:] = np.cumsum([len(e) for e in edges])
    flat = np.concatenate([np.asarray(e, FLOAT) for e in edges]) if edges else np.empty(0)
    return ptr, np.ascontiguousarray(flat, FLOAT)


def _flat_categories(categories, d):
    """(cat_ptr int64 (d + 1,), cat_values float64): empty ranges for numerical features."""
    cats = [None] * d if categories is None else list(categories)
    if len(cats) != d:
        raise ValueError(f"categories has {len(cats)} entries for {d} features")
    return _flat_edges([np.empty(0) if c is None else np.asarray(c, FLOAT) for c in cats])


@njit(cache=True, nogil=True)
def _bin_one(x, f, eptr, eflat, cptr, cflat, missing):
    if np.isnan(x):
        return missing
    lo = eptr[f]
    hi = eptr[f + 1]
    a, b = lo, hi  # number of edges < x: first index with edge >= x
    while a < b:
        mid = (a + b) >> 1
        if eflat[mid] < x:
            a = mid + 1
        else:
            b = mid
    k = a - lo
    if cptr[f + 1] > cptr[f] and cflat[cptr[f] + k] != x:
        return missing  # a value that is not one of the feature's categories
    return k


@njit(cache=True, nogil=True)
def _bin_dense_generic(X, eptr, eflat, cptr, cflat, missing, out):
    n, d = X.shape
    for i in range(n):
        for f in range(d):
            out[i, f] = _bin_one(X[i, f], f, eptr, eflat, cptr, cflat, missing)


@njit(cache=True, nogil=True)
def _bin_csr_sparse(indptr, indices, data, default_bin, eptr, eflat, cptr, cflat, missing,
                    out_ptr, out_idx, out_bins):
    k = 0
    n = indptr.shape[0] - 1
    out_ptr[0] = 0
    for i in range(n):
        for j in range(indptr[i], indptr[i + 1]):
            f = indices[j]
            b = _bin_one(data[j], f, eptr, eflat, cptr, cflat, missing)
            if b != default_bin[f]:
                out_idx[k] = f
                out_bins[k] = b
                k += 1
        out_ptr[i + 1] = k
    return k


def bin_matrix(X, edges, categories=None, sparse=None, wide=None, n_threads=1):
    """Bin raw features into a dense (uint8/uint16) or sparse binned matrix.

    Parameters
    ----------
    X : float64 (n, d) (NaN = missing) or CSR ``(indptr, indices, data, d)`` / scipy CSR
        (absent = 0.0, explicit NaN = missing)
    edges : list of d float64 arrays (``binning.edges_from_sketch``)
    categories : list of d (None or sorted float64 array), optional
        Category values of categorical features (see the module docstring).
    sparse : bool, optional
        Store sparsely (:class:`SparseBinned`); default: CSR input whose entries fill less
        than a quarter of the matrix.
    wide : bool, optional
        uint16 bins; default: when a feature has more than 255 real bins.
    n_threads : int
        Threads of the dense uint8 fast path (``binning.bin_data``); the bins do not
        depend on it.

    Returns
    -------
    uint8/uint16 (n, d) C-ordered array, or SparseBinned
    """
    d = len(edges)
    if wide is None:
        wide = any(len(e) > MAX_REAL_BINS - 1 for e in edges) or (
            categories is not None and any(c is not None and len(c) > MAX_REAL_BINS
                                           for c in categories))
    dtype = WIDE if wide else BIN
    has_cats = categories is not None and any(c is not None for c in categories)
    csr = is_csr(X)
    if sparse is None:
        if csr:
            indptr, _, _, n, _ = csr_parts(X)
            sparse = indptr[-1] < 0.25 * max(n, 1) * max(d, 1)
        else:
            sparse = False
    if not (sparse or wide or has_cats):
        return bin_data(X, edges, n_threads)  # the dense uint8 fast path
    eptr, eflat = _flat_edges(edges)
    cptr, cflat = _flat_categories(categories, d)
    miss = missing_code(dtype)
    zeros = np.array([_bin_one(0.0, f, eptr, eflat, cptr, cflat, miss) for f in range(d)],
                     np.int64)
    if csr:
        indptr, indices, data, n, dx = csr_parts(X)
        if dx != d:
            raise ValueError(f"X has {dx} features, edges {d}")
        nnz = int(indptr[-1])
        ptr = np.empty(n + 1, INDPTR)
        idx = np.empty(nnz, INDEX)
        bins = np.empty(nnz, dtype)
        k = _bin_csr_sparse(np.asarray(indptr, INDPTR), np.asarray(indices, INDEX),
                            np.asarray(data, FLOAT), zeros, eptr, eflat, cptr, cflat, miss,
                            ptr, idx, bins)
        sb = SparseBinned(ptr, idx[:k].copy(), bins[:k].copy(), zeros.astype(np.int32), d)
        return sb if sparse else sb.to_dense()
    X = dense(X)
    if X.shape[1] != d:
        raise ValueError(f"X has {X.shape[1]} features, edges {d}")
    out = np.empty(X.shape, dtype)
    _bin_dense_generic(X, eptr, eflat, cptr, cflat, miss, out)
    if sparse:
        return to_sparse(out)
    return out


def to_sparse(binned, default_bin=None) -> SparseBinned:
    """A dense binned matrix as SparseBinned (``default_bin`` per feature: default the most
    frequent bin of each column)."""
    binned = np.asarray(binned)
    n, d = binned.shape
    if default_bin is None:
        default_bin = np.array([np.bincount(binned[:, f]).argmax() if n else 0
                                for f in range(d)], np.int32)
    keep = binned != np.asarray(default_bin, binned.dtype)[None, :]
    ptr = np.zeros(n + 1, INDPTR)
    np.cumsum(keep.sum(axis=1), out=ptr[1:])
    rows, cols = np.nonzero(keep)
    return SparseBinned(ptr, cols.astype(INDEX), binned[rows, cols],
                        np.asarray(default_bin, np.int32), d)


# --------------------------------------------------------------------------------------------
# histograms


@njit(cache=True, nogil=True)
def _hist_sparse(indptr, indices, bins, default_bin, partition, starts, ends, features,
                 fmask, gh, out, missing):
    d = fmask.shape[0]
    n_slots = out.shape[1] // d
    miss = n_slots - 1
    before = np.empty(features.shape[0], np.complex128)
    for j in range(starts.shape[0]):
        h = out[j]
        for fi in range(features.shape[0]):  # what the caller's histogram already holds
            base = features[fi] * n_slots
            s = 0j
            for k in range(n_slots):
                s += h[base + k]
            before[fi] = s
        total = 0j
        for i in range(starts[j], ends[j]):
            r = partition[i]
            v = gh[r]
            total += v
            for q in range(indptr[r], indptr[r + 1]):
                f = indices[q]
                if fmask[f] == 0:
                    continue
                k = np.int64(bins[q])
                if k == missing:
                    k = miss
                h[f * n_slots + k] += v
        for fi in range(features.shape[0]):  # absent entries: the node's rest
            f = features[fi]
            base = f * n_slots
            s = 0j
            for k in range(n_slots):
                s += h[base + k]
            k = np.int64(default_bin[f])
            if k == missing:
                k = miss
            h[base + k] += total - (s - before[fi])


def build_histograms_any(binned, partition, starts, ends, gradhess, hist_out, features=None,
                         n_threads=1, has_missing=True):
    """:func:`histogram.build_histograms` for any binned matrix (same arguments;
    ``n_threads`` and ``has_missing`` are used by the dense kernels only)."""
    if not is_sparse(binned):
        return _hist.build_histograms(binned, partition, starts, ends, gradhess, hist_out,
                                      features, n_threads, has_missing)
    m = len(starts)
    n, d = binned.shape
    if hist_out.shape[0] != m or hist_out.ndim != 4:
        raise ValueError(f"hist_out must have shape ({m}, d, n_slots, 2)")
    feats = _hist._features_arg(features, d)
    gh = _hist._complex_view(gradhess, gradhess.shape[0]).reshape(-1)
    out = _hist._complex_view(hist_out, m)
    st, en = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    fmask = np.zeros(d, np.uint8)
    fmask[feats] = 1
    _hist_sparse(binned.indptr, binned.indices, binned.bins, binned.default_bin,
                 partition, st, en, feats, fmask, gh, out, binned.missing)


def build_histogram_any_naive(binned, rows, grad, hess, n_slots, features=None):
    """Slow twin of :func:`build_histograms_any` for one node (fresh (d, n_slots, 2))."""
    dense_b = binned.to_dense() if is_sparse(binned) else np.asarray(binned)
    miss = missing_code(dense_b.dtype)
    d = dense_b.shape[1]
    out = np.zeros((d, n_slots, 2), FLOAT)
    for r in rows:
        for f in (range(d) if features is None else features):
            b = int(dense_b[r, f])
            k = n_slots - 1 if b == miss else b
            out[f, k] += (grad[r], hess[r])
    return out


# --------------------------------------------------------------------------------------------
# partition and routing


@njit(cache=True, nogil=True)
def _sparse_bin(indptr, indices, bins, default_bin, r, f):
    for q in range(indptr[r], indptr[r + 1]):
        c = indices[q]
        if c == f:
            return np.int64(bins[q])
        if c > f:
            break
    return np.int64(default_bin[f])


@njit(cache=True, nogil=True)
def _goes_left(b, t, dl, is_cat, sets, node, missing):
    if is_cat:
        if b == missing:
            return False
        return (sets[node, b >> 5] >> np.uint32(b & 31)) & np.uint32(1) != 0
    if b == missing:
        return dl != 0
    return b <= t


@njit(cache=True, nogil=True)
def _partition_generic(dense_b, indptr, indices, bins, default_bin, sparse, partition,
                       scratch, starts, ends, features, thresholds, default_left, is_cat,
                       sets, missing, n_left_out):
    for j in range(starts.shape[0]):
        s = starts[j]
        e = ends[j]
        f = features[j]
        nl = 0
        nr = 0
        for i in range(s, e):
            r = partition[i]
            if sparse:
                b = _sparse_bin(indptr, indices, bins, default_bin, r, f)
            else:
                b = np.int64(dense_b[r, f])
            left = _goes_left(b, thresholds[j], default_left[j], is_cat[j] != 0, sets, j,
                              missing)
            nl, nr = place_row(partition, scratch, s, nl, nr, r, left)
        close_partition(partition, scratch, s, nl, nr)
        n_left_out[j] = nl


_EMPTY_SETS = np.zeros((1, 1), np.uint32)


def _parts(binned):
    """(dense array, indptr, indices, bins, default_bin, is_sparse) for the generic kernels."""
    if is_sparse(binned):
        return (np.zeros((1, 1), binned.bins.dtype), binned.indptr, binned.indices,
                binned.bins, binned.default_bin, True)
    z = np.zeros(1, INDPTR)
    return (binned, z, np.zeros(1, INDEX), np.zeros(1, binned.dtype), np.zeros(1, np.int32),
            False)


def partition_nodes_any(binned, partition, scratch, starts, ends, features, bins,
                        default_left, is_cat=None, sets=None, n_threads=1, columns=None):
    """:func:`partition.partition_nodes` for any binned matrix, with categorical splits.

    is_cat : uint8 (m,), optional  1 where node j splits on a category set
    sets : uint32 (m, W), optional  node j's left bins (bitset; see the module docstring)
    n_threads : int  used by the dense kernels without category sets only
    columns : the dense matrix's ``partition.column_copy``, optional: the column kernels
        read it (the same partitions)
    """
    no_sets = is_cat is None or not np.asarray(is_cat).any()
    if no_sets and (columns is not None or not needs_generic(binned)):
        return _part.partition_nodes(binned, partition, scratch, starts, ends, features,
                                     bins, default_left, n_threads, columns)
    m = len(starts)
    is_cat = np.zeros(m, np.uint8) if is_cat is None else np.asarray(is_cat, np.uint8)
    sets = _EMPTY_SETS if sets is None else np.ascontiguousarray(sets, np.uint32)
    if columns is not None:
        return _part.partition_nodes_sets(columns, partition, scratch, starts, ends, features,
                                          bins, default_left, is_cat, sets)
    n_left = np.empty(m, np.int64)
    _partition_generic(*_parts(binned), partition, scratch, np.asarray(starts, np.int64),
                       np.asarray(ends, np.int64), np.asarray(features, np.int32),
                       np.asarray(bins, np.int64), np.asarray(default_left, np.uint8), is_cat,
                       sets, missing_code(binned.dtype), n_left)
    return n_left


@njit(cache=True, nogil=True)
def _route_generic(dense_b, indptr, indices, bins, default_bin, sparse, rows, feature,
                   thresholds, default_left, is_cat, sets, left, right, missing, out):
    for i in range(rows.shape[0]):
        r = rows[i]
        node = 0
        while left[node] >= 0:
            f = feature[node]
            if sparse:
                b = _sparse_bin(indptr, indices, bins, default_bin, r, f)
            else:
                b = np.int64(dense_b[r, f])
            if _goes_left(b, thresholds[node], default_left[node], is_cat[node] != 0, sets,
                          node, missing):
                node = left[node]
            else:
                node = right[node]
        out[i] = node


def tree_sets(tree):
    """(is_cat uint8 (N,), sets uint32 (N, W)) of a grower Tree (zeros without categories)."""
    if getattr(tree, "is_cat", None) is None:
        return np.zeros(tree.feature.size, np.uint8), _EMPTY_SETS
    return tree.is_cat, tree.cat_sets


def route_binned_any(binned, tree, rows=None) -> np.ndarray:
    """:func:`partition.route_binned` for any binned matrix and categorical trees."""
    is_cat, sets = tree_sets(tree)
    if not is_cat.any() and not needs_generic(binned):
        return _part.route_binned(binned, tree, rows)
    n = binned.shape[0]
    rows = np.arange(n, dtype=INDEX) if rows is None else np.ascontiguousarray(rows, INDEX)
    out = np.empty(rows.size, NODE)
    _route_generic(*_parts(binned), rows, tree.feature, tree.bin.astype(np.int64),
                   tree.default_left, is_cat, sets, tree.left, tree.right,
                   missing_code(binned.dtype), out)
    return out


def route_binned_any_naive(binned, tree, rows=None) -> np.ndarray:
    """Slow twin of :func:`route_binned_any`."""
    dense_b = binned.to_dense() if is_sparse(binned) else np.asarray(binned)
    miss = missing_code(dense_b.dtype)
    is_cat, sets = tree_sets(tree)
    out = []
    for r in (range(dense_b.shape[0]) if rows is None else rows):
        node = 0
        while tree.left[node] >= 0:
            b = int(dense_b[r, tree.feature[node]])
            if is_cat[node]:
                go = b != miss and bool((int(sets[node, b // 32]) >> (b % 32)) & 1)
            else:
                go = bool(tree.default_left[node]) if b == miss else b <= tree.bin[node]
            node = tree.left[node] if go else tree.right[node]
        out.append(node)
    return np.array(out, NODE)


def concat_rows(parts):
    """Row-concatenate binned blocks of one kind (dense arrays of one dtype, or SparseBinned
    with the same default bins)."""
    if len(parts) == 1:
        return parts[0]
    if not is_sparse(parts[0]):
        return np.concatenate(parts)
    ptrs, off = [np.zeros(1, INDPTR)], 0
    for p in parts:
        ptrs.append(p.indptr[1:] + off)
        off += int(p.indptr[-1])
    return SparseBinned(np.concatenate(ptrs), np.concatenate([p.indices for p in parts]),
                        np.concatenate([p.bins for p in parts]), parts[0].default_bin,
                        parts[0].n_features)
