"""FastXML's nDCG partition step: one run of the alternating optimisation of (r+, r-, delta).

Given a node's points with a random +1/-1 side each, alternate
(a) r± = per-label sums over the side's points of y_il / IDCG(|y_i|), ranked descending, and
(b) delta_i = sign of sum_l y_il / IDCG_i * (disc(rank+_l) - disc(rank-_l)), kept when 0,
until the nDCG gains less than 1e-6. Labels are ranked among the node's active labels only (as
the authors' code does, since it shrinks the label matrix to the node first); ties in a ranking
go to the smaller label id, so results do not depend on the sort algorithm.

Arithmetic is float64 throughout (the authors' C++ uses float32); the naive twin performs the
same operations in the same order and therefore returns the identical partition.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._dtypes import INDEX, INDPTR
from ._common import NOMAP, sort_desc

NDCG_EPS = 1e-6


def discount_tables(n_labels: int, max_row_labels: int):
    """Rank discounts and IDCG normalisers, computed once per training call.

    Computed with ``math.log2`` in Python (not a vectorised numpy log) so the kernel and the
    naive twins read bit-identical tables.

    Parameters
    ----------
    n_labels : int
        Number of labels L (ranks run over at most L active labels).
    max_row_labels : int
        Largest number of labels on one point.

    Returns
    -------
    disc : float64 array (max(L, 1),)
        disc[r] = 1 / log2(r + 2) for the 0-based rank r.
    csum : float64 array (max_row_labels + 1,)
        csum[n] = IDCG(n) = sum_{r < n} disc(r), with csum[0] = 1 so that a point without labels
        has a finite (irrelevant) normaliser.
    """
    size = max(int(n_labels), int(max_row_labels), 1)
    disc = np.array([1.0 / math.log2(r + 2) for r in range(size)], dtype=np.float64)
    csum = np.empty(int(max_row_labels) + 1, dtype=np.float64)
    csum[0] = 1.0
    acc = 0.0
    for r in range(int(max_row_labels)):
        acc += disc[r]
        csum[r + 1] = acc
    return disc, csum


@njit(cache=True, nogil=True)
def map_labels(Y_indptr, Y_indices, rows, lab_map, act_lab):
    """Give the labels of ``rows`` local ids 0..nl-1 in order of first appearance.

    Parameters
    ----------
    Y_indptr, Y_indices : uint64 (N+1,), uint32 (nnz,)
        The training label sets (CSR pattern; unsigned views, see ``_common``).
    rows : int32 (n,)
        The node's points (global row ids).
    lab_map : uint32 (L,)
        Global -> local label id; must be all ``NOMAP`` on entry; the caller resets the entries
        listed in ``act_lab[:nl]`` to ``NOMAP`` when done with the node.
    act_lab : int32 (>= L,)
        Receives local -> global label id.

    Returns
    -------
    int
        nl, the number of distinct labels among the node's points.
    """
    nl = 0
    for k in range(rows.shape[0]):
        r = rows[k]
        for p in range(Y_indptr[r], Y_indptr[r + 1]):
            lab = Y_indices[p]
            if lab_map[lab] == NOMAP:
                lab_map[lab] = nl
                act_lab[nl] = lab
                nl += 1
    return nl


@njit(cache=True, nogil=True)
def _rank_side(sums, nl, act_lab, order, tmp, disc, diff, sign, acc):
    # ``acc`` carries the running nDCG sum so the summation order matches the naive twin's.
    for j in range(nl):
        order[j] = j
    sort_desc(order, nl, sums, act_lab, tmp)
    part = acc
    for r in range(nl):
        loc = order[r]
        if sign < 0:
            diff[loc] = -disc[r]
        else:
            diff[loc] += disc[r]
        part += disc[r] * sums[loc]
    return part


@njit(cache=True, nogil=True)
def optimize_ndcg_kernel(Y_indptr, Y_indices, rows, side, lab_map, act_lab, nl, idcg,
                         pos_sum, neg_sum, diff, order, tmp, disc):
    """Run the alternating nDCG optimisation on one node, updating ``side`` in place.

    Parameters
    ----------
    Y_indptr, Y_indices : uint64 (N+1,), uint32 (nnz,)
        Training label sets.
    rows : int32 (n,)
        The node's points.
    side : int8 (>= n,)
        +1 / -1 per point of the node; the starting split on entry, the optimised one on exit.
    lab_map : uint32, act_lab : int32
        As filled by :func:`map_labels` for these rows (``nl`` active labels).
    idcg : float64 (>= n,)
        1 / IDCG(|y_i|) per point of the node.
    pos_sum, neg_sum, diff : float64 (>= nl,)
        Scratch: r+, r-, and disc(rank+) - disc(rank-) per active label.
    order, tmp : int32 (>= nl,)
        Scratch for the rankings.
    disc : float64 (>= nl,)
        disc[r] = 1 / log2(r + 2).

    Returns
    -------
    bool
        False when one side ends up empty (the node then becomes a leaf).
    """
    n = rows.shape[0]
    ndcg = -2.0
    while True:
        for j in range(nl):
            pos_sum[j] = 0.0
            neg_sum[j] = 0.0
        for k in range(n):
            r = rows[k]
            v = idcg[k]
            if side[k] > 0:
                for p in range(Y_indptr[r], Y_indptr[r + 1]):
                    pos_sum[lab_map[Y_indices[p]]] += v
            else:
                for p in range(Y_indptr[r], Y_indptr[r + 1]):
                    neg_sum[lab_map[Y_indices[p]]] += v
        # non-literal arguments, so that numba compiles _rank_side once
        new_ndcg = _rank_side(neg_sum, nl, act_lab, order, tmp, disc, diff, np.int64(-1),
                              np.float64(0.0))
        new_ndcg = _rank_side(pos_sum, nl, act_lab, order, tmp, disc, diff, np.int64(1),
                              new_ndcg)
        new_ndcg /= n
        for k in range(n):
            r = rows[k]
            g = 0.0
            for p in range(Y_indptr[r], Y_indptr[r + 1]):
                g += idcg[k] * diff[lab_map[Y_indices[p]]]
            if g > 0.0:
                side[k] = 1
            elif g < 0.0:
                side[k] = -1
        if new_ndcg - ndcg < NDCG_EPS:
            break
        ndcg = new_ndcg
    npos = 0
    for k in range(n):
        if side[k] > 0:
            npos += 1
    return 0 < npos < n


def optimize_ndcg(Y_indptr, Y_indices, rows, side, n_labels):
    """Python entry to :func:`optimize_ndcg_kernel` (tests and experiments; allocates per call).

    Parameters
    ----------
    Y_indptr, Y_indices : int64 (N+1,), int32 (nnz,)
        Label sets (CSR pattern).
    rows : int array (n,)
        Points of the node.
    side : int array (n,)
        Starting +1/-1 split.
    n_labels : int
        L.

    Returns
    -------
    (bool, int8 array (n,))
        Success flag and the optimised split.
    """
    Y_indptr = np.ascontiguousarray(Y_indptr, dtype=INDPTR)
    Y_indices = np.ascontiguousarray(Y_indices, dtype=INDEX)
    Yp, Yi = Y_indptr.view(np.uint64), Y_indices.view(np.uint32)
    rows = np.ascontiguousarray(rows, dtype=np.int32)
    side = np.array(side, dtype=np.int8)
    lens = np.diff(Y_indptr)[rows] if rows.size else np.zeros(0, np.int64)
    disc, csum = discount_tables(n_labels, int(lens.max()) if lens.size else 0)
    lab_map = np.full(max(n_labels, 1), NOMAP, np.uint32)
    act_lab = np.empty(max(n_labels, 1), np.int32)
    nl = map_labels(Yp, Yi, rows, lab_map, act_lab)
    idcg = 1.0 / csum[lens]
    scratch = [np.empty(max(nl, 1), np.float64) for _ in range(3)]
    order = np.empty(max(nl, 1), np.int32)
    tmp = np.empty(max(nl, 1), np.int32)
    ok = optimize_ndcg_kernel(Yp, Yi, rows, side, lab_map, act_lab, nl, idcg,
                              scratch[0], scratch[1], scratch[2], order, tmp, disc)
    return bool(ok), side


def optimize_ndcg_naive(label_sets, side, disc, csum):
    """Obviously-correct twin of :func:`optimize_ndcg_kernel` in plain Python.

    Parameters
    ----------
    label_sets : list of list of int
        The node's points' labels, in node order.
    side : list of int
        Starting +1/-1 split (not modified).
    disc, csum : float64 arrays
        From :func:`discount_tables`.

    Returns
    -------
    (bool, list of int)
        Success flag and the optimised split.
    """
    side = list(side)
    n = len(label_sets)
    labels = []
    for ys in label_sets:
        for lab in ys:
            if lab not in labels:
                labels.append(lab)
    idcg = [1.0 / float(csum[len(ys)]) for ys in label_sets]
    ndcg = -2.0
    while True:
        pos = {lab: 0.0 for lab in labels}
        neg = {lab: 0.0 for lab in labels}
        for ys, s, v in zip(label_sets, side, idcg):
            for lab in ys:
                if s > 0:
                    pos[lab] += v
                else:
                    neg[lab] += v
        diff = {}
        new_ndcg = 0.0
        for sums, sign in ((neg, -1), (pos, 1)):
            ranked = sorted(labels, key=lambda lab: (-sums[lab], lab))
            for r, lab in enumerate(ranked):
                d = float(disc[r])
                diff[lab] = -d if sign < 0 else diff[lab] + d
                new_ndcg += d * sums[lab]
        new_ndcg /= n
        for k, ys in enumerate(label_sets):
            g = 0.0
            for lab in ys:
                g += idcg[k] * diff[lab]
            if g > 0.0:
                side[k] = 1
            elif g < 0.0:
                side[k] = -1
        if new_ndcg - ndcg < NDCG_EPS:
            break
        ndcg = new_ndcg
    npos = sum(1 for s in side if s > 0)
    return 0 < npos < n, side
