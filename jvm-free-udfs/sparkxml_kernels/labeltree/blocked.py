"""Dual coordinate descent for a node problem over fixed row blocks, one segment at a time.

Why. A node with many rows (a root sees every row carrying a label) is trained by several
tasks, each holding whole blocks of the rows, so that no task holds them all. Coordinate
descent is sequential: the weights must go to the task holding the next block. A *segment*
is a run of consecutive blocks of a pass that one task holds; run in the pass's order,
segments are the same steps whether one process holds every block or the blocks are split
between tasks, bit for bit.

What. liblinear's ``-s 1`` (squared hinge, as ``nodes.solve_binary``): each pass visits the
:data:`NUM_BLOCKS` blocks in a random order of its own (:func:`pass_order`), and every
block's active rows in a random permutation of their own (a stream per (problem, pass,
block), :func:`block_stream`); rows are shrunk against the previous pass's [PGmin, PGmax]
taken over all blocks; the solver stops when max PG - min PG <= tol (and both |.| <= tol)
over all rows, a pass with shrunk rows being followed by a full one, or after ``max_iter``
passes. Only the order differs from ``solve_binary``.

The order costs convergence, and the more blocks, the more. Parabel's rows are normalised
and carry a bias, so every pair of rows correlates, and coordinate descent over them needs a
fresh permutation of all rows each pass: visiting fixed sets of rows together is slower,
even in a random order. A fixed block order is the cyclic worst case (to tol 1e-2, 16 fixed
blocks took 490 passes against 44 for one permutation). On the 14 problems of the top seven
nodes of a 50,000-row Delicious-shaped tree, at Parabel's tol 0.1 and 20 passes at most, the
primal objective ends above its optimum by (relative, mean) 3.3e-5 for one permutation,
2.4e-4 with 2 blocks, 7.1e-4 with 8 (the problems stop by the tolerance after 9 to 16
passes), 1.9e-3 with 16 and 3.5e-3 with 64 (7.2e-3 when a pass visits groups of eight
consecutive blocks whole; every problem then runs all 20 passes). Eight blocks still divide
a root's rows among up to eight tasks (about half each with two), and with 2 tasks a pass
crosses between them 4.5 times on average. Only the level-wise mode, whose tasks cannot
hold a root's rows, solves nodes this way (``nodes.split_node``).

A row's block is its content key modulo :data:`NUM_BLOCKS` (the Spark side computes the key
from the row's features and labels), so the blocks do not depend on the partitioning or the
number of tasks.

State. Per problem, the *carry*: float64 (:data:`CARRY`,) with the pass's shrinking bounds,
counters and flags, which travels with the weights ``u`` (float64, over the CSR's columns).
Per task and problem (:class:`Shard`): its rows of the task's CSR (``rows`` int64, grouped
by block: group k's are rows[boff[k]:boff[k+1]], of block ``block_ids[k]``, ascending;
inside a block in the global row order), their labels and squared norms, ``alpha``
(float64), ``index`` (int64: each block's active rows first) and ``active`` (int64, per
block).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ..linear._rng import rng_next, shuffle_prefix
from ..linear.dcd import _A, _D, _E, _P, _Q, _S, _U, _Y, dcd_sweep

NUM_BLOCKS = 8
# carry fields; POS: how many blocks of the current pass's order are visited
PGMAX_OLD, PGMIN_OLD, PGMAX_NEW, PGMIN_NEW, ACTIVE, RESET, PASSES, DONE, STEPS, POS = range(10)
CARRY = 10
ALL_BLOCKS = np.ones(NUM_BLOCKS, np.uint8)


def new_carry() -> np.ndarray:
    """The carry of a problem before its first pass (every row active)."""
    c = np.zeros(CARRY)
    c[PGMAX_OLD], c[PGMIN_OLD] = np.inf, -np.inf
    c[PGMAX_NEW], c[PGMIN_NEW] = -np.inf, np.inf
    c[RESET] = 1.0
    return c


def block_offsets(blocks: np.ndarray):
    """(order, boff, block_ids) for rows whose block ids are ``blocks`` (int, in the global
    row order): ``order`` (int64) groups them by block, keeping the row order inside a block;
    ``boff`` (int64) and ``block_ids`` (int64, ascending) describe the groups."""
    blocks = np.asarray(blocks, np.int64)
    order = np.argsort(blocks, kind="stable")
    ids, counts = np.unique(blocks, return_counts=True)
    boff = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(counts, out=boff[1:])
    return order.astype(np.int64), boff, ids.astype(np.int64)


@njit(cache=True, nogil=True)
def block_stream(base, pass_no, block):
    """The generator state (uint64[1]) of (problem stream ``base``, pass, block); block
    ``NUM_BLOCKS`` is the pass's block order (:func:`pass_order`)."""
    s = np.empty(1, np.uint64)
    s[0] = base[0] + np.uint64(pass_no * (NUM_BLOCKS + 1) + block)
    out = np.empty(1, np.uint64)
    out[0] = rng_next(s)
    return out


@njit(cache=True, nogil=True)
def pass_order(base, pass_no):
    """The order (int64 (NUM_BLOCKS,), a permutation of the block ids) in which pass
    ``pass_no`` of the problem with stream ``base`` visits the blocks."""
    order = np.arange(NUM_BLOCKS)
    shuffle_prefix(order, NUM_BLOCKS, block_stream(base, pass_no, NUM_BLOCKS))
    return order


def block_slots(block_ids) -> np.ndarray:
    """int64 (NUM_BLOCKS,): the group of each block id among ``block_ids`` (ascending ids,
    as :func:`block_offsets` gives them), -1 where a block has no rows."""
    slot = np.full(NUM_BLOCKS, -1, np.int64)
    slot[np.asarray(block_ids, np.int64)] = np.arange(len(block_ids))
    return slot


@njit(cache=True, nogil=True)
def pack_rows(indptr, rows, y, diag, qd, alpha):
    """``linear.dcd`` records of the CSR rows ``rows``: record t is row rows[t], with label
    ``y[t]`` (1: positive), squared norm ``qd[t]``, dual variable ``alpha[t]``, the squared
    hinge's bounds (upper inf, diagonal ``diag``)."""
    n = len(rows)
    rec = np.empty((n, 8))
    for t in range(n):
        i = rows[t]
        rec[t, _A] = alpha[t]
        rec[t, _U] = np.inf
        rec[t, _D] = diag
        rec[t, _Q] = 1.0 * qd[t] + diag
        rec[t, _Y] = 1.0 if y[t] == 1 else -1.0
        rec[t, _P] = 1.0
        rec[t, _S] = indptr[i]
        rec[t, _E] = indptr[i + 1]
    return rec


@njit(cache=True, nogil=True)
def segment(indptr, indices, data, rows, y, diag, qd, alpha, boff, slot, index, active,
            u, base, carry, held):
    """Visit the carry's current pass onwards while its blocks are held here.

    CSR ``indptr`` int64, ``indices`` int32 (columns of ``u``), ``data`` float64: the task's
    rows, of which the problem's are ``rows`` (int64, grouped by block); per problem row
    ``y`` int32 (1: positive), ``qd`` float64 (squared norm), ``alpha`` float64; ``diag``
    0.5 / C; ``slot`` (:func:`block_slots`) each block's group; ``held`` uint8
    (NUM_BLOCKS,): the blocks this task holds. From position ``carry[POS]`` of the pass's
    order (:func:`pass_order`) the blocks are visited while ``held`` says so; ``carry[POS]``
    then points at the first block held elsewhere (``NUM_BLOCKS``: the pass is over, and
    :func:`end_pass` closes it). Only the visited blocks' active rows are packed, one block
    at a time. Updates ``alpha``, ``index``, ``active``, ``u`` and the carry's new bounds,
    active count and steps."""
    _segment(indptr, indices, data, rows, y, diag, qd, alpha, np.empty((0, 8)), boff, slot,
             index, active, u, base, carry, held)


@njit(cache=True, nogil=True)
def segment_packed(rec, indices, data, boff, slot, index, active, u, base, carry, held):
    """:func:`segment` on rows already packed as ``linear.dcd`` records (alpha inside): a
    process holding every block keeps them packed from pass to pass."""
    none = np.empty(0, np.int64)
    _segment(none, indices, data, none, np.empty(0, np.int32), 0.0, np.empty(0),
             np.empty(0), rec, boff, slot, index, active, u, base, carry, held)


@njit(cache=True, nogil=True, error_model="numpy")
def _segment(indptr, indices, data, rows, y, diag, qd, alpha, packed, boff, slot, index,
             active, u, base, carry, held):
    """:func:`segment` (``packed`` empty) or :func:`segment_packed` (``packed``: every row's
    record, alpha inside)."""
    reset = carry[RESET] != 0.0
    pgmax_old = carry[PGMAX_OLD]
    pgmin_old = carry[PGMIN_OLD]
    pgmax_new = carry[PGMAX_NEW]
    pgmin_new = carry[PGMIN_NEW]
    pass_no = np.int64(carry[PASSES])
    order = pass_order(base, pass_no)
    pos = np.int64(carry[POS])
    act_sum = 0
    steps = 0
    while pos < NUM_BLOCKS and held[order[pos]] != 0:
        b = order[pos]
        pos += 1
        k = slot[b]
        if k < 0:
            continue
        lo = boff[k]
        hi = boff[k + 1]
        act = hi - lo if reset else active[k]
        seen = act
        if packed.shape[0] > 0:
            rec = packed
            view = index[lo:hi]
        else:
            # only the block's active rows (index[lo:lo + act]), numbered in their own
            # records: the shuffle and the shrinking swaps act on positions, so the steps
            # are the packed solve's
            sel = index[lo:lo + act].copy()
            rec = pack_rows(indptr, rows[sel], y[sel], diag, qd[rows[sel]], alpha[sel])
            view = np.arange(act)
        shuffle_prefix(view, act, block_stream(base, pass_no, b))
        act, pgmax_new, pgmin_new, n = dcd_sweep(rec, indices, data, view, act, u, 1.0,
                                                 pgmax_old, pgmin_old, pgmax_new, pgmin_new)
        steps += n
        active[k] = act
        act_sum += act
        if packed.shape[0] == 0:
            for t in range(seen):
                index[lo + t] = sel[view[t]]
                alpha[sel[t]] = rec[t, _A]
    carry[POS] = pos
    carry[PGMAX_NEW] = pgmax_new
    carry[PGMIN_NEW] = pgmin_new
    carry[ACTIVE] += act_sum
    carry[STEPS] += steps


def end_pass(carry: np.ndarray, n_rows: int, tol: float, max_iter: int) -> bool:
    """Close a pass once every block has been visited (``n_rows``: the problem's rows over all
    tasks): liblinear's convergence and shrinking rules. Returns whether the problem is done
    (also ``carry[DONE]``)."""
    carry[PASSES] += 1
    carry[POS] = 0.0
    mx, mn = carry[PGMAX_NEW], carry[PGMIN_NEW]
    reset = False
    if mx - mn <= tol and abs(mx) <= tol and abs(mn) <= tol:
        if carry[ACTIVE] == n_rows:
            carry[DONE] = 1.0
        reset = True
        old = (np.inf, -np.inf)
    else:
        old = (mx if mx > 0.0 else np.inf, mn if mn < 0.0 else -np.inf)
        if carry[ACTIVE] == 0:  # every row shrunk: the next pass takes them all again
            reset = True
            old = (np.inf, -np.inf)
    carry[PGMAX_OLD], carry[PGMIN_OLD] = old
    carry[PGMAX_NEW], carry[PGMIN_NEW] = -np.inf, np.inf
    carry[ACTIVE] = 0.0
    carry[RESET] = 1.0 if reset else 0.0
    if carry[PASSES] >= max_iter:
        carry[DONE] = 1.0
    return bool(carry[DONE])


class Shard:
    """One task's rows of one node problem: the solver state that stays with the rows.

    ``X``: the task's rows (CSR; its arrays are shared, not copied, when they already have
    the kernel's dtypes), ``rows`` the problem's (grouped by block as ``boff``/``block_ids``
    say), ``y`` per problem row (bool or 0/1), ``qd`` the squared norms of ``X``'s rows (all
    of them: the problems of one task share it), ``held`` uint8
    (NUM_BLOCKS,) the blocks the task holds (all of them by default). ``packed``: keep
    the rows packed between visits (64 bytes a row instead of 16, and no packing a pass),
    for a process that solves one problem at a time; the dual variables are then in the
    records, not in ``alpha``."""

    def __init__(self, X, rows, y, qd, boff, block_ids, C: float, packed: bool = False,
                 held: np.ndarray = ALL_BLOCKS):
        n = len(rows)
        self.indptr = np.ascontiguousarray(X.indptr, np.int64)
        self.indices = np.ascontiguousarray(X.indices, np.int32)
        self.data = np.ascontiguousarray(X.data, np.float64)
        self.rows = np.ascontiguousarray(rows, np.int64)
        self.y = np.ascontiguousarray(y, np.int32)
        self.qd = np.ascontiguousarray(qd, np.float64)
        self.diag = 0.5 / C
        self.alpha = np.zeros(n)
        self.index = np.arange(n, dtype=np.int64)
        self.active = np.zeros(len(block_ids), np.int64)
        self.boff = np.asarray(boff, np.int64)
        self.slot = block_slots(block_ids)
        self.held = np.ascontiguousarray(held, np.uint8)
        self.rec = (pack_rows(self.indptr, self.rows, self.y, self.diag, self.qd[self.rows],
                              self.alpha)
                    if packed and n else None)

    def visit(self, u: np.ndarray, base: np.ndarray, carry: np.ndarray) -> None:
        if self.rec is not None:
            segment_packed(self.rec, self.indices, self.data, self.boff, self.slot,
                           self.index, self.active, u, base, carry, self.held)
            return
        segment(self.indptr, self.indices, self.data, self.rows, self.y, self.diag, self.qd,
                self.alpha, self.boff, self.slot, self.index, self.active, u, base, carry,
                self.held)


def solve_blocked(X, y: np.ndarray, boff, block_ids, C: float, tol: float, max_iter: int,
                  base: np.ndarray, qd=None) -> np.ndarray:
    """Dense float64 weights (X.shape[1],) of one problem whose rows (CSR, grouped by block as
    ``boff``/``block_ids`` say) are all here; ``y`` bool (positives); ``base`` its
    ``linear._rng.stream_state``."""
    w = np.zeros(X.shape[1])
    if X.shape[0] == 0:
        return w
    if qd is None:
        from .nodes import row_norms2

        qd = row_norms2(X)
    shard = Shard(X, np.arange(X.shape[0]), y, qd, boff, block_ids, C, packed=True)
    carry = new_carry()
    while True:
        shard.visit(w, base, carry)
        if end_pass(carry, X.shape[0], tol, max_iter):
            return w
