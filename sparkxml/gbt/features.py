"""Driver side of the GBT engine's feature kinds: wide (uint16) bins, categorical
features and sparse vector columns.

* **maxBins above 256**: the sketch keeps ``8 x`` the real bins per feature and the edges
  allow up to 65535 real bins; tasks bin to uint16 (``sparkxml_kernels.gbt.binned``).
* **Categorical features** (which ones: ``sparkxml._core.categorical``): named by ``categoricalCols`` (names in ``featuresCols``, or the
  vector column's ML attribute names), plus the vector column's nominal attributes (what
  ``StringIndexer`` + ``VectorAssembler`` write). Their categories are the distinct values the
  sketch saw (it keeps every value of a feature with at most ``8 x`` the real bins); they
  must be integers in [0, 2**31 - 1) (LightGBM's rule), at most ``maxBins - 1`` of them. A
  category the sampled sketch never saw is binned as missing at training (it goes right at
  every categorical split) and at prediction.
* **Sparse vector columns**: a vector column of at least ``SPARSE_MIN_FEATURES`` slots
  travels to the Python tasks as Spark's VectorUDT struct (its stored entries only) instead
  of a dense array made by ``vector_to_array``; tasks convert it to CSR and store the binned
  rows sparsely when the entries fill less than a quarter of the matrix (LightGBM/XGBoost
  style, ``binned.SparseBinned``), so a task's memory grows with the non-zeros, not rows x d.
  The width comes from the column's ML attribute metadata, or else the data-check job sizes
  the first rows of each partition (``histogram_engine.data_checks``) instead of every
  vector; either way the tasks refuse a vector of another size.
"""
from __future__ import annotations

import numpy as np

from sparkxml.datasets import num_features
from sparkxml_kernels import binning
from sparkxml_kernels.gbt import tree_methods
from sparkxml_kernels.gbt.categorical import check_categories

# a vector column this wide (or wider) ships sparse (the dense array costs 8 bytes a slot)
SPARSE_MIN_FEATURES = 1024


def with_known_width(dataset, spec: dict) -> dict:
    """``spec`` with ``width`` when the vector column's metadata gives it (else the data
    checks size a few rows of each partition; the tasks check every vector). No Spark job."""
    if spec["kind"] != "vector":
        return spec
    d = num_features(dataset, spec["col"])
    return dict(spec, width=d) if d else spec


def with_sparse(spec: dict, d: int) -> dict:
    """``spec`` with ``width=d`` (the checked vector size) and ``sparse=True`` when the
    column is wide enough to ship sparse."""
    if spec["kind"] != "vector":
        return spec
    spec = dict(spec, width=int(d))
    return dict(spec, sparse=True) if d >= SPARSE_MIN_FEATURES else spec


def sketch_args(max_bins: int) -> tuple:
    """(maxBins for the sketch task, summary size): above 256 bins the summary keeps 8 x the
    real bins (the task's own default is bounded by uint8 bins)."""
    wide = max_bins > 256
    n_real = binning.n_real_bins(max_bins, wide=wide)
    return min(max_bins, 256), (max(binning.SKETCH_FACTOR * n_real, 256) if wide else None)


def method_sketch_args(method: str, max_bins: int) -> tuple:
    """(maxBins for the sketch task, summary size, maxBins of the edges) of a fit with
    ``treeMethod`` ``method`` (``sparkxml_kernels.gbt.tree_methods``)."""
    n_bins = tree_methods.sketch_max_bins(method, max_bins)
    sketch_bins, size = sketch_args(n_bins)
    return sketch_bins, tree_methods.sketch_size(method, max_bins) or size, n_bins


def method_edges(sketch, max_bins: int, cat_ids, feature_names, method: str = "hist"):
    """``edges_and_categories`` for ``treeMethod`` ``method``: ``max_bins`` is the edges'
    (``method_sketch_args``); exact has one bin per distinct value (ValueError naming a
    feature with too many)."""
    if method == "exact":
        return tree_methods.exact_edges(sketch, feature_names), None
    return edges_and_categories(sketch, max_bins, cat_ids, feature_names)


def edges_and_categories(sketch, max_bins: int, cat_ids, feature_names):
    """Bin edges of every feature and the categories (list of d: None or sorted float64
    values) of the categorical ones, checked (see the module docstring)."""
    wide = max_bins > 256
    edges = binning.edges_from_sketch(sketch, max_bins, wide=wide)
    if not cat_ids:
        return edges, None
    n_real = binning.n_real_bins(max_bins, wide=wide)
    cats = [None] * sketch.n_features
    for f in cat_ids:
        name = feature_names[f] if feature_names else f"f{f}"
        values = check_categories(sketch.feature(f)[0], name)
        if not sketch.exact[f] or values.size > n_real:
            raise ValueError(f"categoricalCols: feature '{name}' has more than {n_real} "
                             f"categories; raise maxBins (up to 65536) above its number of "
                             f"categories")
        cats[f] = values
        # exact bins: edges midway between consecutive categories, one bin per category
        edges[f] = binning._midpoints(values[:-1], values[1:]) if values.size > 1 \
            else np.empty(0)
    return edges, cats
