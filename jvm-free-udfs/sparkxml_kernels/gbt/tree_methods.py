"""Split-finding methods of the GBT engine, XGBoost's ``tree_method``: "hist", "approx", "exact".

All three grow trees with the same histogram machinery (grower.py); they differ in the split
candidates a tree may use:

* **hist** (default) -- the bin edges of the fit (``binning.edges_from_sketch``, at most
  ``maxBins`` bins a feature), fixed for the whole fit.
* **exact** -- every distinct value of a feature is a candidate, as XGBoost's ``colmaker``:
  one bin per distinct value (:func:`exact_edges`), so a node's best split is the same
  enumeration over its sorted values, with the same gains; the split value is then
  XGBoost's, the midpoint between the node's two values either side (:class:`ExactSplits`).
  Bins are uint16, so a
  feature may have at most :data:`EXACT_MAX_VALUES` distinct values; memory is ``2 n d``
  bytes for the rows and ``16 d (V + 2)`` bytes per node histogram, ``V`` the largest
  number of distinct values of a feature.
* **approx** -- every tree proposes new candidates, XGBoost's global proposal: per feature,
  at most ``maxBins - 1`` real bins cut at the hessian-weighted quantiles of the tree's rows
  (:class:`ApproxCandidates`). The quantiles are taken over a fine grid of
  :data:`APPROX_FINE_FACTOR` x ``maxBins`` bins made once per fit (or over every distinct
  value when there are fewer), whose per-bin hessian sums are exact and reduced over all
  workers, so the candidates do not depend on how rows are split (up to floating-point
  rounding of the sums). The rows are then re-binned to the tree's candidates by a table
  lookup. Memory: the fine bins (uint16 above 255 fine bins) plus one uint8 copy.

Differences from XGBoost: approx's quantiles are exact on the fine grid rather than an
epsilon-approximate sketch of the raw values, so its candidates differ slightly; exact and
approx refuse categorical features (XGBoost's exact does too); exact grows depthwise only.
During training, evaluation rows are routed on their bins: with exact, a value unseen in the
training rows that lies between a node's left value and the split value goes right there and
left in the finished model (the metrics of such rows may differ by that).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import prange

from .._dtypes import BIN, FLOAT, INDEX
from .._jit import njit
from ..binning import (
    MAX_REAL_BINS_WIDE,
    SKETCH_FACTOR,
    _midpoints,
    edges_from_sketch,
    n_real_bins,
    sketch,
)
from ..threads import worth_threads
from .binned import SparseBinned, as_binned, build_histograms_any, is_sparse, missing_code
from .histogram import interleave, n_hist_slots

TREE_METHODS = ("hist", "approx", "exact")
# uint16 bins: 65535 real bins, 65535 marks missing
EXACT_MAX_VALUES = MAX_REAL_BINS_WIDE - 1  # and one empty bin above the largest value
APPROX_FINE_FACTOR = 16


def _real_bins(max_bins: int) -> int:
    """Real bins of ``maxBins`` as the fit's edges count them (256: 255 and the missing bin;
    above 256, uint16 bins)."""
    return n_real_bins(max_bins, wide=int(max_bins) > 256)


def check_tree_method(method: str, grow_policy: str = "depthwise", categorical=None) -> str:
    """``method`` when it is one of :data:`TREE_METHODS` and applies with these options;
    ValueError naming the option otherwise."""
    if method not in TREE_METHODS:
        raise ValueError(f"treeMethod must be one of {list(TREE_METHODS)}, got {method!r}")
    if method == "exact" and grow_policy != "depthwise":
        raise ValueError(f"treeMethod 'exact' grows depthwise only (XGBoost's colmaker), got "
                         f"growPolicy {grow_policy!r}")
    if method != "hist" and categorical:
        raise ValueError(f"treeMethod {method!r} does not split categorical features; use "
                         f"treeMethod 'hist' with categorical features")
    return method


def sketch_max_bins(method: str, max_bins: int) -> int:
    """The ``maxBins`` of the fit's one binning (sketch and edges) for ``method``: the fit's
    ``maxBins`` (hist), the fine grid (approx), every value up to the bound (exact)."""
    if method == "exact":
        return EXACT_MAX_VALUES + 1
    if method == "approx":
        return min(APPROX_FINE_FACTOR * _real_bins(max_bins) + 1,
                   EXACT_MAX_VALUES + 1)
    return int(max_bins)


def sketch_size(method: str, max_bins: int):
    """Summary entries a feature keeps in the fit's sketch (None: the sketch's default): above
    :data:`EXACT_MAX_VALUES` for exact, so that a pruned summary marks a feature with too
    many values; 8 x the fine grid for approx."""
    if method == "exact":
        return EXACT_MAX_VALUES + 1
    if method == "approx":
        return SKETCH_FACTOR * _real_bins(sketch_max_bins(method, max_bins))
    return None


def method_edges(X, weights, method: str, max_bins: int, feature_names=None) -> list:
    """Edges of one process's rows for ``method`` (what a Spark fit computes from all
    workers' sketches): ``max_bins`` bins (hist), the fine grid (approx), every value
    (exact). ``X``: float64 (n, d) or CSR, as ``binning.sketch`` takes."""
    n_bins = sketch_max_bins(method, max_bins)
    s = sketch(X, weights, min(n_bins, 256), size=sketch_size(method, max_bins))
    if method == "exact":
        return exact_edges(s, feature_names)
    return edges_from_sketch(s, n_bins, wide=n_bins > 256)


def exact_edges(sketch, feature_names=None) -> list:
    """Edges with one bin per distinct value of every feature, from an exact
    ``binning.Sketch`` (made with ``size`` above :data:`EXACT_MAX_VALUES`): the sorted
    distinct values themselves, so value ``v_k`` has bin ``k`` (and bin ``m``, above the
    largest value, stays empty); :class:`ExactSplits` reads the values back from them.

    Raises ValueError naming the first feature with more distinct values than
    :data:`EXACT_MAX_VALUES` (its summary was pruned, or holds more values).
    """
    edges = []
    for f in range(sketch.n_features):
        v = sketch.feature(f)[0]
        if not sketch.exact[f] or v.size > EXACT_MAX_VALUES:
            name = feature_names[f] if feature_names else f"f{f}"
            raise ValueError(f"treeMethod 'exact': feature '{name}' has more than "
                             f"{EXACT_MAX_VALUES} distinct values (one uint16 bin each); use "
                             f"treeMethod 'approx' or 'hist', or round the feature")
        edges.append(np.asarray(v, FLOAT).copy())
    return edges


def _bins_at(binned, rows, feats, keys=None):
    """Bins of the (row, feature) pairs; ``keys``: a sparse matrix's ``row * d + feature``
    of its stored entries (ascending), from :func:`_sparse_keys`."""
    if not is_sparse(binned):
        return np.asarray(binned)[rows, feats].astype(np.int64)
    out = binned.default_bin[feats].astype(np.int64)
    if keys.size:
        want = rows.astype(np.int64) * binned.n_features + feats
        pos = np.minimum(np.searchsorted(keys, want), keys.size - 1)
        hit = keys[pos] == want
        out[hit] = binned.bins[pos[hit]]
    return out


def _sparse_keys(binned):
    if not is_sparse(binned):
        return None
    rows = np.repeat(np.arange(binned.shape[0], dtype=np.int64), np.diff(binned.indptr))
    return rows * binned.n_features + binned.indices


class ExactSplits:
    """XGBoost's split values for trees grown on :func:`exact_edges`' bins.

    colmaker enumerates the values present in a node, so its split value is the midpoint
    between the node's largest value going left and its smallest value going right; the
    histogram split "bin <= t" knows the left one only. :meth:`finish` finds, over all
    workers, each split node's smallest bin going right and sets the threshold to
    ``(v_left + v_right) / 2`` (float64; XGBoost rounds it to float32). It also sends
    missing values left at splits on features without any missing value in the training
    rows, where colmaker only searches that direction.
    """

    def __init__(self, binned, edges, collective):
        self.binned = as_binned(binned)
        self.values = [np.asarray(e, FLOAT) for e in edges]
        self.coll = collective
        self.missing = missing_code(self.binned.dtype)
        self._keys = _sparse_keys(self.binned)
        if is_sparse(self.binned):
            b = self.binned
            local = np.bincount(b.indices[b.bins == self.missing],
                                minlength=b.n_features).astype(FLOAT)
            local += b.default_bin == self.missing
        else:
            local = (np.asarray(self.binned) == self.missing).sum(axis=0).astype(FLOAT)
        self.has_missing = self.coll.allreduce_sum(local) > 0

    def right_bins(self, tree, rows=None) -> np.ndarray:
        """int64 (N,) smallest non-missing bin going right at every split node, over all
        workers' rows in ``rows`` (-1 where none)."""
        n = self.binned.shape[0]
        r = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
        node = np.zeros(r.size, np.int64)
        big = np.iinfo(np.int32).max
        low = np.full(tree.left.size, big, np.int64)
        while r.size:
            split = tree.left[node] >= 0
            r, node = r[split], node[split]
            if not r.size:
                break
            b = _bins_at(self.binned, r, tree.feature[node].astype(np.int64), self._keys)
            miss = b == self.missing
            right = np.where(miss, tree.default_left[node] == 0, b > tree.bin[node])
            keep = right & ~miss
            np.minimum.at(low, node[keep], b[keep])
            node = np.where(right, tree.right[node], tree.left[node]).astype(np.int64)
        # a minimum over workers from one sum: every rank fills its own row
        rank, world = int(getattr(self.coll, "rank", 0)), int(self.coll.world_size)
        table = np.zeros((world, low.size), FLOAT)
        table[rank] = low
        low = self.coll.allreduce_sum(table.reshape(-1)).reshape(world, -1).min(axis=0)
        return np.where(low >= big, -1, low).astype(np.int64)

    def finish(self, tree, rows=None):
        """``tree`` with XGBoost's thresholds and default directions (see the class)."""
        right = self.right_bins(tree, rows)
        thr = tree.threshold.copy()
        dl = tree.default_left.copy()
        for node in np.flatnonzero(tree.left >= 0):
            f, t, u = int(tree.feature[node]), int(tree.bin[node]), int(right[node])
            v = self.values[f]
            if 0 <= u < v.size and t < v.size:
                thr[node] = _midpoints(v[t:t + 1], v[u:u + 1])[0]
            if not self.has_missing[f]:
                dl[node] = 1
        return dataclasses.replace(tree, threshold=thr, default_left=dl)


# --------------------------------------------------------------------------------------------
# approx: candidates per tree


def weighted_cuts(w, n_real: int) -> np.ndarray:
    """Cut points of one feature for ``n_real`` real bins, from its hessian per fine bin.

    Parameters
    ----------
    w : float64 (m,)  hessian sum of each fine real bin
    n_real : int      at most this many coarse real bins

    Returns
    -------
    int64 (k,) ascending fine bins ``c``, k < n_real: coarse bin j holds the fine bins
    ``(c[j-1], c[j]]``. With at most ``n_real`` non-empty fine bins every one gets its own
    coarse bin; otherwise the fine bin whose cumulative hessian is nearest to each of
    ``j W / n_real`` (j = 1 .. n_real - 1), as ``binning.edges_from_sketch`` does.
    """
    w = np.asarray(w, FLOAT)
    nz = np.flatnonzero(w > 0)
    if nz.size <= n_real:
        return nz[:-1].astype(np.int64)
    cdf = np.cumsum(w)
    targets = np.arange(1, n_real, dtype=FLOAT) * (cdf[-1] / n_real)
    idx = np.minimum(np.searchsorted(cdf, targets), cdf.size - 1)
    prev = np.maximum(idx - 1, 0)
    pick = np.where((idx > 0) & (targets - cdf[prev] <= cdf[idx] - targets), prev, idx)
    cuts = np.unique(pick)
    return cuts[cuts < nz[-1]].astype(np.int64)  # a cut past the last value splits nothing


def lookup_table(cuts, n_fine_slots: int, dtype) -> np.ndarray:
    """(d, n_fine_slots) coarse bin of every fine real bin: the number of cuts below it."""
    lut = np.zeros((len(cuts), n_fine_slots), dtype)
    b = np.arange(n_fine_slots)
    for f, c in enumerate(cuts):
        lut[f] = np.searchsorted(c, b, side="left")
    return lut


@njit(cache=True, nogil=True, inline="always")
def _remap_row(X, lut, miss_in, miss_out, out, i):
    for f in range(X.shape[1]):
        b = np.int64(X[i, f])
        out[i, f] = miss_out if b == miss_in else lut[f, b]


@njit(cache=True, nogil=True)
def _remap_dense(X, lut, miss_in, miss_out, out):
    for i in range(X.shape[0]):
        _remap_row(X, lut, miss_in, miss_out, out, i)


@njit(cache=True, nogil=True, parallel=True)
def _remap_dense_parallel(X, lut, miss_in, miss_out, out):
    for i in prange(X.shape[0]):
        _remap_row(X, lut, miss_in, miss_out, out, i)


def remap_bins(binned, lut, n_threads=1, out=None):
    """``binned`` (dense or sparse, fine bins) mapped through ``lut`` (:func:`lookup_table`);
    the fine missing bin becomes the coarse one. ``out``: a dense result array to reuse."""
    dtype = lut.dtype
    miss_in, miss_out = missing_code(binned.dtype), missing_code(dtype)
    if is_sparse(binned):
        bins = binned.bins.astype(np.int64)
        miss = bins == miss_in
        new = lut[binned.indices, np.where(miss, 0, bins)]
        new[miss] = miss_out
        dflt = binned.default_bin.astype(np.int64)
        dmiss = dflt == miss_in
        newd = lut[np.arange(dflt.size), np.where(dmiss, 0, dflt)].astype(np.int32)
        newd[dmiss] = miss_out
        # entries equal to the new default stay stored: the histogram and routing kernels
        # read a stored entry and an absent one alike
        return SparseBinned(binned.indptr, binned.indices, new.astype(dtype), newd,
                            binned.n_features)
    if out is None or out.shape != binned.shape or out.dtype != dtype:
        out = np.empty(binned.shape, dtype)
    if n_threads > 1 and worth_threads(np.array([binned.shape[0]])):
        _remap_dense_parallel(binned, lut, miss_in, miss_out, out)
    else:
        _remap_dense(binned, lut, miss_in, miss_out, out)
    return out


def remap_bins_naive(binned, lut):
    """Slow twin of :func:`remap_bins` for dense input."""
    X = np.asarray(binned)
    miss_in, miss_out = missing_code(X.dtype), missing_code(lut.dtype)
    out = np.empty(X.shape, lut.dtype)
    for i in range(X.shape[0]):
        for f in range(X.shape[1]):
            b = int(X[i, f])
            out[i, f] = miss_out if b == miss_in else lut[f, b]
    return out


class ApproxCandidates:
    """Per-tree hessian-weighted candidates (treeMethod "approx") over fixed fine bins.

    Parameters
    ----------
    fine_binned : uint8 / uint16 (n, d) or binned.SparseBinned
        This worker's rows on the fine grid (``sketch_max_bins("approx", maxBins)``).
    fine_edges : list of d float64 arrays
        The fine grid's edges, the same on every worker.
    max_bins : int
        The fit's ``maxBins``: each tree's candidates give at most ``n_real_bins(max_bins)``
        real bins a feature.
    collective : LocalCollective-like
    n_threads : int
    """

    def __init__(self, fine_binned, fine_edges, max_bins: int, collective, n_threads=1):
        self.fine = as_binned(fine_binned)
        self.edges = [np.asarray(e, FLOAT) for e in fine_edges]
        self.n_fine = np.array([e.size + 1 for e in self.edges], np.int32)
        self.n_slots = n_hist_slots(self.n_fine)
        self.n_real = _real_bins(max_bins)
        self.dtype = BIN if self.n_real <= 255 else np.uint16
        self.coll = collective
        self.n_threads = int(n_threads)
        n, d = self.fine.shape
        self._partition = np.arange(n, dtype=INDEX)
        self._gh = np.empty((n, 2), FLOAT)
        self._out = None
        self.cuts = None

    def hessian_sums(self, hess, rows=None) -> np.ndarray:
        """(d, n_slots) hessian of every fine bin over all workers' rows in ``rows``."""
        n, d = self.fine.shape
        part = self._partition if rows is None else np.asarray(rows, INDEX)
        gh = interleave(hess, hess, self._gh, self.n_threads)
        hist = np.zeros((1, d, self.n_slots, 2), FLOAT)
        build_histograms_any(self.fine, part, np.array([0]), np.array([part.size]), gh, hist,
                             None, self.n_threads)
        return self.coll.allreduce_sum(np.ascontiguousarray(hist[0, :, :, 1]))

    def propose(self, hess, rows=None):
        """This tree's (binned rows, n_bins int32 (d,), edges): the rows re-binned to the
        hessian-weighted candidates of ``hess`` (float64 (n,)) over the rows ``rows``."""
        hs = self.hessian_sums(hess, rows)
        self.cuts = [weighted_cuts(hs[f, :self.n_fine[f]], self.n_real)
                     for f in range(self.n_fine.size)]
        lut = lookup_table(self.cuts, self.n_slots, self.dtype)
        self._out = remap_bins(self.fine, lut, self.n_threads,
                               None if is_sparse(self.fine) else self._out)
        edges = [e[c] for e, c in zip(self.edges, self.cuts)]
        n_bins = np.array([c.size + 1 for c in self.cuts], np.int32)
        return self._out, n_bins, edges

    def to_fine(self, tree):
        """``tree`` (grown on the last :meth:`propose`'s bins) with its split bins on the fine
        grid, so that it routes the fine rows of this and of the evaluation sets; its
        thresholds are unchanged (coarse bin t ends at fine bin ``cuts[t]``)."""
        b = tree.bin.copy()
        for node in np.flatnonzero(tree.left >= 0):
            b[node] = self.cuts[tree.feature[node]][tree.bin[node]]
        return dataclasses.replace(tree, bin=b)
