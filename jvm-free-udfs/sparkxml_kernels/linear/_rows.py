"""CSR row helper the linear solvers inline: a row's dot products with K weight columns."""
from __future__ import annotations

from .._jit import njit


@njit(cache=True, nogil=True, inline="always")
def row_dots(indices, data, p0, p1, W, out):
    """out[k] = x . W[:, k] for the CSR row whose entries are [p0, p1) and W (d, K), each
    sum in the row's entry order."""
    K = W.shape[1]
    for k in range(K):
        out[k] = 0.0
    for p in range(p0, p1):
        j = indices[p]
        v = data[p]
        for k in range(K):
            out[k] += W[j, k] * v
