"""Bins for trees: exact bins (one per distinct value) carry their value for thresholds.

Trees see features as float32, as scikit-learn does (it casts X to float32 before fitting and
predicting): ``as_float32`` rounds raw values so that a bin per distinct float32 value, and
thresholds at the midpoints of float32 values, are scikit-learn's.

Missing values (NaN) take the last slot of every feature's histogram (``vals[:, -1]``, always
reserved): ``tree_binned`` moves binning's missing bin there.
"""
from __future__ import annotations

import numpy as np

from .. import binning


def as_float32(X) -> np.ndarray:
    """float64 array holding the float32 rounding of ``X`` (dense)."""
    return np.asarray(X, np.float32).astype(np.float64)


def bin_values(sketch: "binning.Sketch", edges) -> np.ndarray:
    """float64 (d, n_slots): the value of each bin of a feature whose bins are exact (the
    sketch kept every distinct value and each got its own bin), NaN elsewhere; the last slot
    is the missing values' (NaN)."""
    d = len(edges)
    n_slots = max((len(e) + 1 for e in edges), default=1) + 1
    vals = np.full((d, n_slots), np.nan)
    for f in range(d):
        v = sketch.feature(f)[0]
        if sketch.exact[f] and v.size == len(edges[f]) + 1:
            vals[f, :v.size] = v
    return vals


def exact_edges(X, max_bins: int = 65536):
    """Edges and bin values from the rows themselves (one process): a convenience for tests,
    benchmarks and serving-side refits; the Spark layer builds them from merged sketches."""
    X = as_float32(X)
    n_real = binning.n_real_bins(max_bins, wide=True)
    sk = binning.sketch(X, None, 256, size=max(binning.SKETCH_FACTOR * n_real, 256))
    edges = binning.edges_from_sketch(sk, max_bins, wide=True)
    return edges, bin_values(sk, edges)


def tree_binned(binned, vals) -> np.ndarray:
    """``binning``'s bins (missing: the dtype's largest value) with the missing values moved
    to the trees' missing slot ``vals.shape[1] - 1`` (in place when possible)."""
    binned = np.asarray(binned)
    top = np.iinfo(binned.dtype).max
    miss = vals.shape[1] - 1
    if miss > top:
        raise ValueError(f"{vals.shape[1]} bin slots do not fit {binned.dtype} bins")
    if miss != top:
        binned = binned.copy() if not binned.flags.writeable else binned
        binned[binned == top] = miss
    return binned


def tree_bins(X, edges, vals) -> np.ndarray:
    """Bin float64 rows (NaN = missing) for the tree kernels: ``binning.bin_data`` then
    :func:`tree_binned`."""
    return tree_binned(binning.bin_data(as_float32(X), edges), vals)
