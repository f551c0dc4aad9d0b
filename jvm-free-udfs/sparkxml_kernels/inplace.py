"""In-place array steps that several families' kernels take: swapping two entries of one
array or of two parallel arrays, the stable two-way partition of a row slice, and liblinear's shuffle of an
index prefix.

The numba helpers are ``inline="always"``: numba copies them into each caller's IR and never
compiles them on their own. Inlining rebinds each array argument, and where numba's
reference-count pruning cannot drop the rebinding's incref and decref (it depends on the
caller's control flow), every call pays two atomic operations per array: a per-row loop
where perf shows ``NRT_incref`` writes the step out instead.
"""
from __future__ import annotations

from ._jit import njit


@njit(cache=True, nogil=True, inline="always")
def swap(a, i, j):
    """Swap entries ``i`` and ``j`` of the 1-D array ``a``."""
    t = a[i]
    a[i] = a[j]
    a[j] = t


@njit(cache=True, nogil=True, inline="always")
def swap_pair(a, b, i, j):
    """Swap entries ``i`` and ``j`` of both ``a`` and ``b`` (1-D arrays of equal length)."""
    t = a[i]
    a[i] = a[j]
    a[j] = t
    u = b[i]
    b[i] = b[j]
    b[j] = u


@njit(cache=True, nogil=True, inline="always")
def place_row(part, scratch, s, nl, nr, r, left):
    """One step of the stable partition of ``part[s:e]`` into [left | right]: row ``r`` (read
    from ``part[i]`` with ``i >= s + nl``, so no unread row is overwritten) goes to
    ``part[s + nl]`` when ``left``, else to ``scratch[nr]``. Returns the new ``(nl, nr)``;
    :func:`close_partition` appends the right rows once the slice is read."""
    if left:
        part[s + nl] = r
        return nl + 1, nr
    scratch[nr] = r
    return nl, nr + 1


@njit(cache=True, nogil=True, inline="always")
def close_partition(part, scratch, s, nl, nr):
    """Copy the ``nr`` right rows from ``scratch`` after the ``nl`` left rows of ``part[s:]``."""
    for i in range(nr):
        part[s + nl + i] = scratch[i]


def shuffle_prefix_naive(index: list, active: int, below) -> None:
    """liblinear's shuffle of ``index[:active]`` in plain Python (the naive solvers'):
    entry ``s`` swaps with ``s + below(active - s)``, ``below(m)`` drawing from [0, m)."""
    for s in range(active):
        j = s + below(active - s)
        index[s], index[j] = index[j], index[s]
