"""Feature-matrix input forms shared by binning and prediction.

Two forms are accepted everywhere a feature matrix is read:

* dense: a float64 array of shape (n, d), C order; NaN means "missing";
* CSR: a tuple ``(indptr, indices, data, n_features)`` (or any object with ``indptr``,
  ``indices``, ``data`` and ``shape``, such as a scipy.sparse CSR matrix). Absent entries are
  0.0 (Spark ML convention); an explicit NaN is "missing".
"""
from __future__ import annotations

import numpy as np

from ._dtypes import FLOAT, INDEX, INDPTR


def is_csr(X) -> bool:
    """True when ``X`` is a CSR tuple or a CSR-like object (see module docstring)."""
    if isinstance(X, tuple):
        return len(X) == 4
    return hasattr(X, "indptr") and hasattr(X, "indices") and hasattr(X, "data")


def csr_parts(X):
    """Return ``(indptr int64, indices int32, data float64, n_rows, n_features)`` of a CSR input.

    Raises
    ------
    ValueError
        On inconsistent lengths or out-of-range feature indices.
    """
    if isinstance(X, tuple):
        indptr, indices, data, n_features = X
    else:
        if getattr(X, "format", "csr") != "csr":
            X = X.tocsr()
        indptr, indices, data, n_features = X.indptr, X.indices, X.data, X.shape[1]
    indptr = np.ascontiguousarray(indptr, dtype=INDPTR)
    indices = np.ascontiguousarray(indices, dtype=INDEX)
    data = np.ascontiguousarray(data, dtype=FLOAT)
    n_features = int(n_features)
    if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0:
        raise ValueError("CSR indptr must be 1-D and start at 0")
    if indices.size != data.size or indptr[-1] != indices.size:
        raise ValueError(f"CSR arrays disagree: indptr[-1]={indptr[-1]}, "
                         f"{indices.size} indices, {data.size} values")
    if indices.size and (indices.min() < 0 or indices.max() >= n_features):
        raise ValueError(f"CSR feature index out of range [0, {n_features})")
    return indptr, indices, data, indptr.size - 1, n_features


def dense(X) -> np.ndarray:
    """Return ``X`` as a C-ordered float64 (n, d) array (no copy when it already is one)."""
    X = np.ascontiguousarray(X, dtype=FLOAT)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D feature matrix, got shape {X.shape}")
    return X
