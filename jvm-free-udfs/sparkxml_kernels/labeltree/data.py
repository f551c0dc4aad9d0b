"""Training rows and label representations of the label-tree kernels.

Rows are L2-normalised (a zero row stays zero) and get the bias as feature ``n_features``,
as Parabel prepares them; the classifiers see exactly these rows, and the predictor applies
the same transform. A label is represented by the normalised sum of its training rows'
normalised feature vectors (without the bias): the clustering's input.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._jit import njit


def normalised_rows(indptr, indices, data, n_features: int, bias: float) -> sp.csr_matrix:
    """CSR float64 (n, n_features + 1): each row scaled to unit L2 norm, then the bias
    appended as column ``n_features`` (left out when ``bias`` is 0).

    Built in place of the output: the input and the result are the only whole copies alive
    (a task's rows are most of its memory; the scipy expression of :func:`normalised_rows_naive`
    holds about six). The norms are scipy's on chunks of rows, so every value has the same
    bits as the naive twin's. Rows with unsorted or repeated indices take the naive path.
    """
    indptr = np.asarray(indptr, np.int64)
    indices = np.asarray(indices, np.int32)
    data = np.asarray(data, np.float64)
    n = indptr.size - 1
    if not _strictly_increasing(indptr, indices):
        return normalised_rows_naive(indptr, indices, data, n_features, bias)
    scale = np.zeros(n)
    for a in range(0, n, NORM_CHUNK_ROWS):
        b = min(n, a + NORM_CHUNK_ROWS)
        lo, hi = indptr[a], indptr[b]
        part = sp.csr_matrix((data[lo:hi], indices[lo:hi], indptr[a:b + 1] - lo),
                             shape=(b - a, n_features))
        norms = np.sqrt(np.asarray(part.multiply(part).sum(axis=1)).ravel())
        np.divide(1.0, norms, out=scale[a:b], where=norms > 0)
    with_bias = bias != 0.0
    ptr = np.zeros(n + 1, np.int64)
    _count_kept(indptr, data, scale, with_bias, ptr)
    out_idx = np.empty(int(ptr[-1]), np.int32)
    out_val = np.empty(int(ptr[-1]), np.float64)
    _fill_kept(indptr, indices, data, scale, n_features, float(bias), with_bias, ptr,
               out_idx, out_val)
    return sp.csr_matrix((out_val, out_idx, ptr), shape=(n, n_features + 1))


# rows whose norms scipy computes at a time: the temporaries stay a few MB
NORM_CHUNK_ROWS = 16384


@njit(cache=True, nogil=True)
def _strictly_increasing(indptr, indices):
    for i in range(indptr.shape[0] - 1):
        for q in range(indptr[i] + 1, indptr[i + 1]):
            if indices[q] <= indices[q - 1]:
                return False
    return True


@njit(cache=True, nogil=True)
def _count_kept(indptr, data, scale, with_bias, ptr):
    # entries per output row: the scaled values that are not zero (scipy's product drops
    # them, a zero row's included), plus the bias
    for i in range(indptr.shape[0] - 1):
        k = 0
        for q in range(indptr[i], indptr[i + 1]):
            if scale[i] * data[q] != 0.0:
                k += 1
        ptr[i + 1] = ptr[i] + k + (1 if with_bias else 0)


@njit(cache=True, nogil=True)
def _fill_kept(indptr, indices, data, scale, n_features, bias, with_bias, ptr, out_idx,
               out_val):
    for i in range(indptr.shape[0] - 1):
        at = ptr[i]
        for q in range(indptr[i], indptr[i + 1]):
            v = scale[i] * data[q]
            if v != 0.0:
                out_idx[at] = indices[q]
                out_val[at] = v
                at += 1
        if with_bias:
            out_idx[at] = n_features
            out_val[at] = bias


def normalised_rows_naive(indptr, indices, data, n_features: int,
                          bias: float) -> sp.csr_matrix:
    """Slow twin of :func:`normalised_rows` (scipy operations on the whole matrix, about six
    copies of it alive at once; also the path for rows with unsorted or repeated
    indices)."""
    indptr = np.asarray(indptr, np.int64)
    n = indptr.size - 1
    X = sp.csr_matrix((np.asarray(data, np.float64), np.asarray(indices, np.int32), indptr),
                      shape=(n, n_features))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    X = sp.diags(scale) @ X
    if bias != 0.0:
        X = sp.hstack([X, sp.csr_matrix(np.full((n, 1), float(bias)))], format="csr")
    else:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n, n_features + 1))
    X.sort_indices()
    return X.astype(np.float64)


def label_matrix(yptr, yidx, n_rows: int, n_labels: int, dtype=np.float64) -> sp.csr_matrix:
    """Y (n, L) 0/1 CSR of the rows' label sets (a repeated label counts once). ``dtype``
    bool: the structure alone at 1 byte an entry, for callers that never multiply by Y."""
    Y = sp.csr_matrix((np.ones(len(yidx), dtype), np.asarray(yidx, np.int32),
                       np.asarray(yptr, np.int64)), shape=(n_rows, n_labels))
    Y.sum_duplicates()
    Y.data[:] = 1
    return Y


def label_representations(X: sp.csr_matrix, Y: sp.csr_matrix, n_features: int) -> sp.csr_matrix:
    """R (L, n_features) CSR float64: row l = normalised sum of the normalised rows carrying
    label l (bias column dropped); a label without rows gets a zero row."""
    R = (Y.T.tocsr() @ X[:, :n_features]).tocsr()
    norms = np.sqrt(np.asarray(R.multiply(R).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    R = (sp.diags(scale) @ R).tocsr()
    R.sort_indices()
    return R
