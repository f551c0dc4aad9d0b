"""Sums over rows in a fixed order: what makes an FM / GBFM model the same, bit for bit, for
any number of workers and any input partitioning.

Rows are dealt to ``ROW_BLOCKS`` row blocks by their content key (block = key mod
``ROW_BLOCKS``, whatever the number of workers); a rank holds whole row blocks, a contiguous
range of them (rank r: the blocks b with b * world // ROW_BLOCKS == r), its rows sorted by
(block, key). Every sum over rows is taken per row block (:class:`RowBlocks`), in row order,
and the row blocks' sums are added in block order (:func:`fixed_sum`, the collective's
``ordered_fold``). One worker and several thus add the same numbers in the same order: the
model is the same bit for bit for any number of workers up to ``ROW_BLOCKS`` and any input
partitioning. The price: each rank adds (its row blocks) x (the sums' length) numbers more,
and a fold passes the running sum from rank to rank instead of a tree reduction.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit

__all__ = ["ROW_BLOCKS", "row_block_of", "fixed_sum", "seq_sum", "RowBlocks", "row_dots"]

# row blocks: the most workers whose models equal one worker's bit for bit (more blocks cost
# each update (blocks x features of the block) additions)
ROW_BLOCKS = 16


def row_block_of(keys: np.ndarray) -> np.ndarray:
    """int64 (n,): the row block of each content key (key mod ROW_BLOCKS, in [0, ROW_BLOCKS);
    Spark's ``pmod(key, ROW_BLOCKS)``)."""
    return np.mod(np.asarray(keys, np.int64), ROW_BLOCKS)


def fixed_sum(coll, parts: np.ndarray) -> np.ndarray:
    """The sum over every rank's row blocks, in block order: ``parts`` float64 (L, ...) holds
    this rank's L row blocks' sums, in block order (L may be 0); the ranks hold contiguous
    ranges of blocks in rank order. The same bits on every rank, for any number of ranks."""
    parts = np.asarray(parts, FLOAT)

    def add(acc):
        for b in range(parts.shape[0]):
            acc += parts[b]

    return np.asarray(coll.ordered_fold(np.zeros(parts.shape[1:], FLOAT), add), FLOAT)


@njit(cache=True, nogil=True)
def seq_sum(a):
    """Sum of a float64 array, one element after the other (numpy's pairwise sum depends on
    the array's alignment and length, a loop does not)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


class RowBlocks:
    """This rank's row blocks: rows ``ptr[l]:ptr[l + 1]`` are its l-th block (in block order;
    see the module docstring). ``ptr``: int64 (L + 1,)."""

    def __init__(self, ptr):
        self.ptr = np.ascontiguousarray(ptr, np.int64)

    @classmethod
    def of(cls, blocks: np.ndarray) -> "RowBlocks":
        """From the (ascending) row block of every row."""
        blocks = np.asarray(blocks)
        if blocks.size == 0:
            return cls(np.zeros(1, np.int64))
        starts = np.flatnonzero(blocks[1:] != blocks[:-1]) + 1
        return cls(np.concatenate([[0], starts, [blocks.size]]))

    @classmethod
    def whole(cls, n: int) -> "RowBlocks":
        """All n rows as one block (a single process that needs no fixed order)."""
        return cls(np.array([0, int(n)] if n else [0], np.int64))

    @property
    def n_blocks(self) -> int:
        return self.ptr.size - 1

    def ranges(self):
        return [(int(self.ptr[b]), int(self.ptr[b + 1])) for b in range(self.n_blocks)]

    def total(self, coll, fn, width: int) -> np.ndarray:
        """float64 (width,): the fixed-order sum of ``fn(lo, hi)`` (``width`` numbers over the
        rows lo:hi) over every rank's row blocks."""
        parts = np.zeros((self.n_blocks, int(width)), FLOAT)
        for b, (lo, hi) in enumerate(self.ranges()):
            parts[b] = fn(lo, hi)
        return fixed_sum(coll, parts)

    def sums(self, coll, *arrays) -> np.ndarray:
        """The fixed-order sums over all ranks' rows of each float64 (n,) array."""
        return self.total(coll, lambda lo, hi: [seq_sum(a[lo:hi]) for a in arrays],
                          len(arrays))

    def entry_bounds(self, rows: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """int64 (L + 1,): where each row block's entries start in ``rows[lo:hi]`` (entries in
        row order), offset by lo."""
        return lo + np.searchsorted(rows[lo:hi], self.ptr).astype(np.int64)


def row_dots(P, Q) -> np.ndarray:
    """Σ_f P[f, i] Q[f, i] for every row i (float64 (n,)), the factors added one after the
    other: the same bits for a row wherever it sits (an einsum's vector path may not)."""
    out = np.zeros(P.shape[1], FLOAT)
    for f in range(P.shape[0]):
        out += P[f] * Q[f]
    return out
