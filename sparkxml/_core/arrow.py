"""Arrow record batches to numpy arrays and back, inside Spark tasks: feature columns (vector,
array or numeric columns) to dense or CSR arrays, label/weight/indicator columns, and dense
matrices to array<double> columns.

Imports no ``pyspark.ml``: a Python worker that unpickles a task function importing this pays
for numpy, pyarrow and ``sparkxml_kernels`` only.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from sparkxml_kernels.arrow_io import vectors_to_csr


def column_of(batch: pa.RecordBatch, name: str):
    return batch.column(batch.schema.get_field_index(name))


def array_features(col, name: str, d: int) -> np.ndarray:
    """Dense float64 (n, d) from an Arrow list<double> column of length-d lists (a vector
    column after ``vector_to_array``): the flat values reshaped, no per-row work."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    if col.null_count:
        raise ValueError(f"featuresCol: column '{name}' has a null vector")
    lengths = col.value_lengths().to_numpy(zero_copy_only=False)
    if n and (lengths != d).any():
        bad = int(lengths[lengths != d][0])
        raise ValueError(f"featuresCol: column '{name}' has a vector of size {bad}, expected {d}")
    values = col.flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, np.float64).reshape(n, d)


def batch_features(batch, spec, n_features, missing=float("nan")):
    """The batch's features as dense float64 (n, d); NaN (or a null column value) = missing,
    and so is ``missing`` (the ``missing`` param) when it is not NaN. ``spec["float32"]``
    (trees) rounds them to float32 first, as scikit-learn's trees do. ``spec["sparse"]``
    (a wide vector column shipped as the VectorUDT struct, ``sparkxml.gbt.features``):
    CSR ``(indptr, indices, data, d)`` instead, absent entries 0.0. ``spec["name"]``, when
    set, is the column messages name (the user's, for a column the transform renamed)."""
    name = spec.get("name", spec.get("col"))
    if spec.get("sparse"):
        indptr, indices, data, _ = vectors_to_csr(column_of(batch, spec["col"]), name,
                                                  n_features, np.float64)
        if not np.isnan(missing):
            if missing == 0.0:
                raise ValueError("missing=0.0 (absent entries missing) is not supported for "
                                 "vector columns wide enough to be read sparse")
            data = _as_missing(data, missing)
        if spec.get("float32"):
            data = data.astype(np.float32).astype(np.float64)
        return indptr, indices, data, n_features
    if spec["kind"] == "vector":
        X = array_features(column_of(batch, spec["col"]), name, n_features)
    else:
        cols = spec["cols"]
        X = np.empty((batch.num_rows, len(cols)), np.float64)
        for j, c in enumerate(cols):
            a = column_of(batch, c)
            X[:, j] = a.cast(pa.float64()).to_numpy(zero_copy_only=False)  # null -> NaN
    if not np.isnan(missing):
        X = _as_missing(X, missing)
    if spec.get("float32"):
        X = X.astype(np.float32).astype(np.float64)
    return X


def _as_missing(a: np.ndarray, missing: float) -> np.ndarray:
    """``a`` with the value ``missing`` replaced by NaN. ``a`` may be a read-only view of an
    Arrow buffer (a vector column's values): it is copied only when a value is replaced."""
    hit = a == missing
    if not hit.any():
        return a
    if not a.flags.writeable:
        a = a.copy()
    a[hit] = np.nan
    return a


def margin_column(batch, name, k):
    """float64 (n,) or (n, k) base margins from a double column (k == 1) or an array/vector
    column of k values (a vector arrives as a dense array, see feature_exprs)."""
    col = column_of(batch, name)
    if k == 1:
        m = np.array(col.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    else:
        m = array_features(col, name, k)
    if not np.all(np.isfinite(m)):
        raise ValueError(f"baseMarginCol: column '{name}' holds a null or non-finite value")
    return m


def float_column(batch, name):
    # a copy: a zero-copy view would keep the whole IPC batch body (all columns) alive
    a = column_of(batch, name)
    return np.array(a.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def bool_column(batch, name):
    return np.asarray(column_of(batch, name).to_numpy(zero_copy_only=False), bool)


def n_values(X) -> int:
    """Values a feature block holds: stored entries of CSR, rows x d of dense."""
    return int(X[0][-1]) if isinstance(X, tuple) else int(X.size)


def concat_features(xs):
    """Row-concatenate dense blocks or CSR tuples (indptr, indices, data, d)."""
    if len(xs) == 1:
        return xs[0]
    if not isinstance(xs[0], tuple):
        return np.concatenate(xs)
    ptrs, off = [np.zeros(1, np.int64)], 0
    for p, _, _, _ in xs:
        ptrs.append(p[1:] + off)
        off += int(p[-1])
    return (np.concatenate(ptrs), np.concatenate([x[1] for x in xs]),
            np.concatenate([x[2] for x in xs]), xs[0][3])


def dense_vectors(mat: np.ndarray) -> pa.Array:
    """Arrow struct of Spark ML DenseVectors (VectorUDT's sqlType) from an (n, k) matrix."""
    n, k = mat.shape
    vtype = pa.array(np.ones(n, np.int8), pa.int8())
    size = pa.nulls(n, pa.int32())
    indices = pa.nulls(n, pa.list_(pa.int32()))
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int32))
    values = pa.ListArray.from_arrays(offsets, pa.array(np.ascontiguousarray(mat).reshape(-1),
                                                        pa.float64()))
    return pa.StructArray.from_arrays([vtype, size, indices, values],
                                      names=["type", "size", "indices", "values"])

