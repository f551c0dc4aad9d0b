"""CSR row helpers the linear solvers inline: a row's dot products with K weight columns,
and the prefetch hints for a row's entries."""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ..intrinsics import prefetch


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


@njit(cache=True, nogil=True, inline="always")
def prefetch_entries(indices, data, q0, q1):
    """Hints for a row's first and last entries, [q0, q1) (uint64 offsets): a row of a few
    dozen entries spans one or two cache lines of each array."""
    if q1 > q0:
        prefetch(indices, q0)
        prefetch(data, q0)
        prefetch(indices, q1 - np.uint64(1))
        prefetch(data, q1 - np.uint64(1))
