"""Feature-matrix input forms shared by binning and prediction.

Two forms are accepted everywhere a feature matrix is read:

* dense: a float64 array of shape (n, d), C order; NaN means "missing";
* CSR: a tuple ``(indptr, indices, data, n_features)`` (or any object with ``indptr``,
  ``indices``, ``data`` and ``shape``, such as a scipy.sparse CSR matrix). Absent entries are
  0.0 (Spark ML convention); an explicit NaN is "missing".

What a served model takes (``sparkxml_kernels.serving``) is wider, and checked in one place,
:func:`model_input`: numpy arrays, scipy.sparse matrices, CSR tuples and pandas DataFrames of
the training feature columns (or of the vector column).
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


# ------------------------------------------------------------------------- served models
class FeatureSpec:
    """What a served model reads (``sparkxml_kernels.serving``).

    Parameters
    ----------
    n_features : int
        The width of the training feature vectors.
    names : sequence of str, optional
        The training feature columns (``featuresCols``, or a vector column's attribute
        names) when known: a pandas DataFrame holding them is read by name.
    vector_col : str, optional
        The features column of a vector model (``featuresCol``): a DataFrame holding it is
        read from it (one array, list or Spark ML Vector per row).
    allow_nan : bool
        True where NaN means "missing" (trees); False refuses NaN and infinite values.
    model : str
        Names the model in error messages.
    """

    def __init__(self, n_features: int, names=None, vector_col: str | None = None,
                 allow_nan: bool = False, model: str = "the model"):
        self.n_features = int(n_features)
        self.names = None if names is None else [str(c) for c in names]
        self.vector_col = vector_col
        self.allow_nan = bool(allow_nan)
        self.model = model


def _check_dtype(dtype, where: str):
    if np.dtype(dtype).kind not in "biuf":
        raise ValueError(f"{where} has dtype {dtype}; features must be numeric "
                         f"(bool, integer or float)")


def _check_values(data, spec: FeatureSpec, where, row_of=None):
    if spec.allow_nan or not data.size:
        return
    bad = ~np.isfinite(data)
    if bad.any():
        q = int(np.flatnonzero(bad.reshape(-1))[0])
        at = f"row {row_of(q)}" if row_of is not None else f"entry {q}"
        raise ValueError(f"{where} holds {float(data.reshape(-1)[q])!r} at {at}; {spec.model} "
                         f"takes finite values only (NaN is not 'missing' for it)")


def _check_width(d: int, spec: FeatureSpec, where: str):
    if d != spec.n_features:
        raise ValueError(f"{where} has {d} features; {spec.model} was trained on "
                         f"{spec.n_features}")


def _is_frame(X) -> bool:
    return type(X).__module__.split(".")[0] == "pandas" and hasattr(X, "columns")


def _frame_columns(df, cols, spec: FeatureSpec) -> np.ndarray:
    out = np.empty((len(df), len(cols)), FLOAT)
    for j, c in enumerate(cols):
        s = df[c]
        kind = getattr(s.dtype, "kind", "O")
        if kind not in "biuf":
            raise ValueError(f"X column '{c}' has dtype {s.dtype}; features must be numeric "
                             f"(bool, integer or float)")
        out[:, j] = s.to_numpy(dtype=FLOAT, na_value=np.nan)  # a null is NaN
    return out


def _vector_cells(cells, spec: FeatureSpec, col: str):
    """CSR of one vector per row: Spark ML Vectors, arrays, lists or scipy sparse rows."""
    ptr, idx, val = [0], [], []
    for i, v in enumerate(cells):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            raise ValueError(f"X column '{col}' has a null vector at row {i}")
        if hasattr(v, "tocsr"):  # a scipy sparse row
            v = v.tocsr()
            if v.shape[0] != 1:
                raise ValueError(f"X column '{col}' row {i} has shape {v.shape}, not a vector")
            size, ii, vv = v.shape[1], v.indices, v.data
        elif hasattr(v, "indices") and hasattr(v, "values"):  # a Spark ML SparseVector
            size, ii, vv = int(v.size), np.asarray(v.indices), np.asarray(v.values)
        else:
            a = np.asarray(v.toArray() if hasattr(v, "toArray") else v)
            if a.ndim != 1:
                raise ValueError(f"X column '{col}' row {i} has shape {a.shape}, not a vector")
            _check_dtype(a.dtype, f"X column '{col}' row {i}")
            size = a.size
            ii = np.flatnonzero(a)
            vv = a[ii]
        _check_width(size, spec, f"X column '{col}' row {i}")
        idx.append(np.asarray(ii, INDEX))
        val.append(np.asarray(vv, FLOAT))
        ptr.append(ptr[-1] + len(ii))
    cat = (lambda xs, t: np.concatenate(xs).astype(t) if xs else np.zeros(0, t))
    return (np.asarray(ptr, INDPTR), cat(idx, INDEX), cat(val, FLOAT), spec.n_features)


def _frame(df, spec: FeatureSpec):
    cols = [str(c) for c in df.columns]
    if spec.names and all(c in cols for c in spec.names):
        return _frame_columns(df, spec.names, spec)
    if spec.vector_col and spec.vector_col in cols:
        return _vector_cells(df[spec.vector_col].tolist(), spec, spec.vector_col)
    if spec.names is None and len(cols) == spec.n_features:
        return _frame_columns(df, list(df.columns), spec)
    want = (f"the columns {spec.names}" if spec.names else
            f"{spec.n_features} numeric columns")
    if spec.vector_col:
        want += f" or a vector column '{spec.vector_col}'"
    missing = [c for c in spec.names or () if c not in cols][:5]
    raise ValueError(f"X (a DataFrame with columns {cols[:10]}) does not hold {spec.model}'s "
                     f"features: it expects {want}"
                     + (f"; missing: {missing}" if missing else ""))


def model_input(X, spec: FeatureSpec, form: str = "dense"):
    """A served model's feature matrix in the form its kernel reads, checked.

    Parameters
    ----------
    X : array-like (n, d), scipy.sparse matrix, CSR tuple or pandas.DataFrame
        A DataFrame is read by the training feature column names when it holds them
        (``spec.names``), else from the model's vector column (``spec.vector_col``), else,
        for a model without known names, its ``n_features`` numeric columns in order.
    spec : FeatureSpec
    form : {"dense", "csr", "any"}
        "dense": float64 (n, d) (absent sparse entries 0.0); "csr": ``(indptr int64,
        indices int32, data float64, d)`` holding the non-zeros of a dense input (what a
        Spark ML DenseVector becomes in ``transform``); "any": as given.

    Raises
    ------
    ValueError
        Naming the problem: not 2-D, a non-numeric dtype or column, a width other than
        ``n_features``, a feature index out of range, NaN or infinite values where the model
        refuses them, a DataFrame without the model's columns.
    """
    if _is_frame(X):
        X = _frame(X, spec)
    if not isinstance(X, tuple) and hasattr(X, "tocsr") and not hasattr(X, "indptr"):
        X = X.tocsr()  # another scipy.sparse format
    if is_csr(X):
        if not isinstance(X, tuple):
            _check_dtype(X.data.dtype, "X (sparse)")
        indptr, indices, data, n, d = csr_parts(X)
        _check_width(d, spec, "X")
        _check_values(data, spec, "X",
                      lambda q: int(np.searchsorted(indptr, q, side="right") - 1))
        if form != "dense":
            return indptr, indices, data, d
        out = np.zeros((n, d), FLOAT)
        out[np.repeat(np.arange(n), np.diff(indptr)), indices] = data
        return out
    a = np.asarray(X)
    _check_dtype(a.dtype, "X")
    if a.ndim != 2:
        raise ValueError(f"X must be 2-D (rows, features), got shape {a.shape}"
                         + ("; reshape(1, -1) for one row" if a.ndim == 1 else ""))
    _check_width(a.shape[1], spec, "X")
    a = np.ascontiguousarray(a, FLOAT)
    _check_values(a, spec, "X", lambda q: q // max(a.shape[1], 1))
    if form != "csr":
        return a
    nz = a != 0
    indptr = np.zeros(a.shape[0] + 1, INDPTR)
    np.cumsum(nz.sum(axis=1), out=indptr[1:])
    return indptr, np.nonzero(nz)[1].astype(INDEX), a[nz], a.shape[1]
