"""CSR rows put in a global order from pieces that arrive one after another.

A training task's rows come in Arrow batches in whatever order the shuffle delivered them,
and the kernels want them in one order that does not depend on that (the rows' keys). Each
batch is converted to CSR as it arrives; :func:`rows_in_order` then writes every piece's
rows straight to their places in one output and lets each piece go once it is written. The
task holds the output and the pieces not yet written, about one copy of its rows, where a
stack of the pieces followed by a row take holds three.
"""
from __future__ import annotations

import numpy as np

from ._dtypes import INDPTR
from ._jit import njit
from .memory import release_freed

__all__ = ["rows_in_order", "rows_in_order_naive"]


def rows_in_order(pieces: list, order: np.ndarray):
    """The rows of the stacked CSR ``pieces`` taken in ``order``.

    Parameters
    ----------
    pieces : list of (indptr, indices, data)
        Row blocks, stacked in list order (n rows in all). All ``indices`` share one dtype,
        and so do all ``data``. The list is emptied as the pieces are written.
    order : int64 (n,)
        A permutation of the stacked rows: row i of the result is stacked row ``order[i]``.

    Returns
    -------
    indptr : int64 (n + 1,)
    indices, data : the pieces' dtypes (nnz,)

    Examples
    --------
    >>> import numpy as np
    >>> a = (np.array([0, 1, 3]), np.array([4, 1, 2], np.int32), np.array([1., 2., 3.]))
    >>> b = (np.array([0, 2]), np.array([0, 5], np.int32), np.array([4., 5.]))
    >>> ip, ix, dv = rows_in_order([a, b], np.array([2, 0, 1]))
    >>> ip.tolist(), ix.tolist(), dv.tolist()
    ([0, 2, 3, 5], [0, 5, 4, 1, 2], [4.0, 5.0, 1.0, 2.0, 3.0])
    """
    order = np.asarray(order, np.int64)
    counts = [len(p[0]) - 1 for p in pieces]
    n = int(sum(counts))
    if len(order) != n:
        raise ValueError(f"order has {len(order)} rows, the pieces {n}")
    lengths = np.concatenate([np.diff(p[0]) for p in pieces]) if pieces else np.zeros(0)
    indptr = np.zeros(n + 1, INDPTR)
    np.cumsum(lengths[order], out=indptr[1:])
    if not pieces:
        return indptr, np.zeros(0, np.int32), np.zeros(0)
    # np.empty: the output's pages become resident as the rows are written, while the
    # written pieces go
    indices = np.empty(int(indptr[-1]), pieces[0][1].dtype)
    data = np.empty(int(indptr[-1]), pieces[0][2].dtype)
    dest = np.empty(n, np.int64)
    dest[order] = np.arange(n)
    first = 0
    for count in counts:
        ip, ix, dv = pieces.pop(0)
        _scatter_rows(np.asarray(ip, INDPTR), ix, dv, dest[first:first + count], indptr,
                      indices, data)
        first += count
        del ip, ix, dv
        release_freed()
    return indptr, indices, data


@njit(cache=True, nogil=True)
def _scatter_rows(indptr, indices, data, dest, out_indptr, out_indices, out_data):
    for i in range(dest.shape[0]):
        at = out_indptr[dest[i]]
        for q in range(indptr[i], indptr[i + 1]):
            out_indices[at] = indices[q]
            out_data[at] = data[q]
            at += 1


def rows_in_order_naive(pieces: list, order: np.ndarray):
    """Slow twin of :func:`rows_in_order`: the pieces stacked, then the rows taken (three
    copies of the rows alive at once). Leaves ``pieces`` as it is."""
    order = np.asarray(order, np.int64)
    ptrs, shift = [np.zeros(1, np.int64)], 0
    for ip, _, _ in pieces:
        ptrs.append(np.asarray(ip[1:], np.int64) - ip[0] + shift)
        shift = int(ptrs[-1][-1]) if len(ptrs[-1]) else shift
    stacked_ptr = np.concatenate(ptrs)
    ix = np.concatenate([p[1][p[0][0]:p[0][-1]] for p in pieces])
    dv = np.concatenate([p[2][p[0][0]:p[0][-1]] for p in pieces])
    starts, ends = stacked_ptr[order], stacked_ptr[order + 1]
    take = (np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])
            if len(order) else np.zeros(0, np.int64))
    indptr = np.zeros(len(order) + 1, np.int64)
    np.cumsum(ends - starts, out=indptr[1:])
    return indptr, ix[take], dv[take]
