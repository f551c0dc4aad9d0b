"""Categorical features of trees and forests on the driver: the checks of their category ids
(riding along with the data-check job) and their bins (one per category).

A categorical feature's values are category ids 0..K-1: K is the number of values of its
nominal ML attribute when the metadata declares one (``sparkxml._core.categorical``), else
the largest id + 1. Training rows must hold such an id (no missing values), so a bin is a
category: ``edges = 0.5, 1.5, ..., K - 1.5`` and bin ``c`` is category ``c``
(``sparkxml_kernels.forest.splitter.scan_categorical``).
"""
from __future__ import annotations

import numpy as np
from pyspark.ml.functions import vector_to_array
from pyspark.sql import functions as F

from sparkxml._core.categorical import feature_name, nominal_arity
from sparkxml_kernels import binning


def _value(spec, f):
    if spec["kind"] == "vector":
        return vector_to_array(F.col(spec["col"]))[f]
    return F.col(spec["cols"][f]).cast("double")


def check_categorical_options(spec: dict, cat_ids, crit: str, cst) -> None:
    """Options refused with categorical features, before any job: a monotonic constraint on
    one (as scikit-learn's histogram trees refuse it: categories have no order), and
    criterion absolute_error (its node sums are per-label weights, which the sort of
    categories by mean target does not read)."""
    for f in cat_ids:
        if cst and f < len(cst) and cst[f] != 0:
            raise ValueError(f"monotonicConstraints: {cst[f]} on the categorical feature "
                             f"{feature_name(spec, f)}; categorical features cannot have "
                             f"monotonic constraints (as in scikit-learn)")
    if crit == "absolute_error" and len(cat_ids):
        raise ValueError(f"categoricalCols: criterion 'absolute_error' does not split "
                         f"categorical features (feature {feature_name(spec, cat_ids[0])}); "
                         f"use another criterion, or leave the feature numeric")


def category_checks(spec: dict, cat_ids) -> dict:
    """Aggregates of each categorical feature ``f``: smallest and largest value, a
    non-integer value, and the number of missing (null or NaN) values."""
    out = {}
    for f in cat_ids:
        x = _value(spec, f)
        gone = x.isNull() | F.isnan(x)
        x_ = F.when(~gone, x)
        out[f"cat_min_{f}"] = F.min(x_)
        out[f"cat_max_{f}"] = F.max(x_)
        out[f"cat_frac_{f}"] = F.first(F.when(x_ != F.floor(x_), x_), ignorenulls=True)
        out[f"cat_missing_{f}"] = F.sum(F.when(gone, 1).otherwise(0))
    return out


def category_counts(dataset, spec: dict, cat_ids, d: int, extra: dict, max_bins: int):
    """int64 (d,): the number of categories K of each feature (0: numeric), or None without
    categorical features; refuses (naming the feature and the value) ids that are missing,
    negative, not integers, at or above a declared K, or more than ``maxBins`` allows."""
    if not cat_ids:
        return None
    declared = nominal_arity(dataset, spec)
    n_real = binning.n_real_bins(max_bins, wide=max_bins > 256)
    out = np.zeros(d, np.int64)
    for f in cat_ids:
        if f >= d:
            raise ValueError(f"categoricalCols: feature {f} of the vector column "
                             f"'{spec['col']}' is categorical (metadata), but its vectors "
                             f"have {d} features")
        name = feature_name(spec, f, dataset)
        if extra[f"cat_missing_{f}"]:
            raise ValueError(f"categoricalCols: categorical feature {name} has "
                             f"{extra[f'cat_missing_{f}']} missing (null or NaN) values; "
                             f"categorical features need a category id on every training row")
        lo, hi, frac = extra[f"cat_min_{f}"], extra[f"cat_max_{f}"], extra[f"cat_frac_{f}"]
        if lo is not None and lo < 0:
            raise ValueError(f"categoricalCols: categorical feature {name} holds the negative "
                             f"value {lo!r}; category ids are integers 0..K-1")
        if frac is not None:
            raise ValueError(f"categoricalCols: categorical feature {name} holds the value "
                             f"{frac!r}, not an integer; category ids are integers 0..K-1")
        k = declared.get(f)
        top = -1 if hi is None else int(hi)
        if k is not None and top >= k:
            raise ValueError(f"categoricalCols: categorical feature {name} holds the category "
                             f"id {top}, but its metadata declares {k} categories (ids "
                             f"0..{k - 1})")
        k = top + 1 if k is None else k
        if k > n_real:
            raise ValueError(f"categoricalCols: categorical feature {name} has {k} categories,"
                             f" more than the {n_real} bins of maxBins={max_bins}; raise "
                             f"maxBins above the number of categories")
        out[f] = max(k, 1)
    return out


def category_bins(edges: list, bin_values, sketch, n_categories):
    """Bin values (``bins.bin_values``) with every categorical feature's bins made one per
    category: its ``edges`` (changed in place) at ``c + 0.5`` and bin ``c`` of value ``c``."""
    if n_categories is None:
        return bin_values(sketch, edges)
    cat = np.flatnonzero(n_categories)
    for f in cat:
        edges[f] = np.arange(int(n_categories[f]) - 1, dtype=np.float64) + 0.5
    vals = bin_values(sketch, edges)
    for f in cat:
        k = int(n_categories[f])
        vals[f, :] = np.nan
        vals[f, :k] = np.arange(k)
    return vals
