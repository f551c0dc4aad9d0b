"""Training rows and label representations of the label-tree kernels.

Rows are L2-normalised (a zero row stays zero) and get the bias as feature ``n_features``,
as Parabel prepares them; the classifiers see exactly these rows, and the predictor applies
the same transform. A label is represented by the normalised sum of its training rows'
normalised feature vectors (without the bias): the clustering's input.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def normalised_rows(indptr, indices, data, n_features: int, bias: float) -> sp.csr_matrix:
    """CSR float64 (n, n_features + 1): each row scaled to unit L2 norm, then the bias
    appended as column ``n_features`` (left out when ``bias`` is 0)."""
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
