"""FastXML's nDCG partition step: one run of the alternating optimisation of (r+, r-, delta).

Given a node's points with a random +1/-1 side each, alternate
(a) r± = per-label sums over the side's points of y_il / IDCG(|y_i|), ranked descending, and
(b) delta_i = sign of sum_l y_il / IDCG_i * (disc(rank+_l) - disc(rank-_l)), kept when 0,
until the nDCG gains less than 1e-6. Labels are ranked among the node's active labels only, as
the authors' code does (it shrinks the label matrix to the node first, labels ascending).

This follows the authors' C++ to the bit, because the splits are very sensitive to it: the
arithmetic is float32 with the same operations in the same order, and the rankings are
libstdc++'s unstable ``std::sort`` replayed (``_stlsort``), so tied labels get the same ranks.
The one known difference: the discount of rank r is 1 / log2(r + 2) rounded correctly, where
glibc's ``log2f`` is off by one bit at some ranks from 4163 on (173 of the first 2 million).
The naive twin performs the same operations in plain Python on numpy float32 scalars.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._dtypes import INDEX, INDPTR
from ._common import NOMAP
from ._stlsort import stl_sort_desc, stl_sort_desc_naive

NDCG_EPS = np.float32(1e-6)
SORT_STACK = 192  # int64 scratch of stl_sort_desc


def discount_tables(n_labels: int, max_row_labels: int):
    """Rank discounts and IDCG normalisers (float32, as the authors' tables), once per call.

    Parameters
    ----------
    n_labels : int
        Number of labels L (ranks run over at most L active labels).
    max_row_labels : int
        Largest number of labels on one point.

    Returns
    -------
    disc : float32 array (max(L, max_row_labels, 1),)
        disc[r] = 1 / log2(r + 2) for the 0-based rank r (log2 rounded to float32 first).
    csum : float32 array (max_row_labels + 1,)
        csum[n] = IDCG(n) = sum_{r < n} disc(r), summed in float32, with csum[0] = 1 so that a
        point without labels has a finite (irrelevant) normaliser.
    """
    size = max(int(n_labels), int(max_row_labels), 1)
    disc = np.array([1.0 / float(np.float32(math.log2(r + 2))) for r in range(size)],
                    dtype=np.float64).astype(np.float32)
    csum = np.empty(int(max_row_labels) + 1, dtype=np.float32)
    csum[0] = 1.0
    acc = np.float32(0.0)
    for r in range(int(max_row_labels)):
        acc = np.float32(acc + disc[r])
        csum[r + 1] = acc
    return disc, csum


def inverse_idcg(csum, n_row_labels):
    """float32 1 / IDCG(|y_i|) per point, the division done in float64 as the authors do."""
    return (1.0 / csum[np.asarray(n_row_labels)].astype(np.float64)).astype(np.float32)


@njit(cache=True, nogil=True)
def map_labels(Y_indptr, Y_indices, rows, lab_map, act_lab):
    """Give the labels of ``rows`` local ids 0..nl-1 in ascending global id order.

    Ascending, as the authors' shrunk label matrix has them: the rankings start from that
    order, and with an unstable sort the start order decides where tied labels land.

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
                lab_map[lab] = 0
                act_lab[nl] = lab
                nl += 1
    act_lab[:nl].sort()
    for j in range(nl):
        lab_map[act_lab[j]] = j
    return nl


@njit(cache=True, nogil=True)
def optimize_ndcg_kernel(Y_indptr, Y_indices, rows, side, lab_map, nl, idcg, pos_sum, neg_sum,
                         diff, ids, keys, stack, disc):
    """Run the alternating nDCG optimisation on one node, updating ``side`` in place.

    Parameters
    ----------
    Y_indptr, Y_indices : uint64 (N+1,), uint32 (nnz,)
        Training label sets.
    rows : int32 (n,)
        The node's points, ascending.
    side : int8 (>= n,)
        +1 / -1 per point of the node; the starting split on entry, the optimised one on exit.
    lab_map : uint32
        As filled by :func:`map_labels` for these rows (``nl`` active labels).
    idcg : float32 (>= n,)
        1 / IDCG(|y_i|) per point of the node (:func:`inverse_idcg`).
    pos_sum, neg_sum, diff : float32 (>= nl,)
        Scratch: r+, r-, and disc(rank+) - disc(rank-) per active label.
    ids, keys : int32, float32 (>= nl,)
        Scratch for the rankings.
    stack : int64 (>= SORT_STACK,)
        Scratch for the sort.
    disc : float32 (>= nl,)
        disc[r] = 1 / log2(r + 2).

    Returns
    -------
    bool
        False when one side ends up empty (the node then becomes a leaf).
    """
    n = rows.shape[0]
    fn = np.float32(n)
    zero = np.float32(0.0)
    ndcg = np.float32(-2.0)
    while True:
        for j in range(nl):
            pos_sum[j] = zero
            neg_sum[j] = zero
            diff[j] = zero
        for k in range(n):
            r = rows[k]
            v = idcg[k]
            if side[k] > 0:
                for p in range(Y_indptr[r], Y_indptr[r + 1]):
                    pos_sum[lab_map[Y_indices[p]]] += v
            else:
                for p in range(Y_indptr[r], Y_indptr[r + 1]):
                    neg_sum[lab_map[Y_indices[p]]] += v
        new_ndcg = zero
        for sgn in range(2):  # the negative side's ranking first, as the authors do
            sums = neg_sum if sgn == 0 else pos_sum
            for j in range(nl):
                ids[j] = j
                keys[j] = sums[j]
            stl_sort_desc(ids, keys, nl, stack)
            for q in range(nl):
                lab = ids[q]
                if sgn == 0:
                    diff[lab] = diff[lab] - disc[q]
                else:
                    diff[lab] = diff[lab] + disc[q]
                new_ndcg = new_ndcg + disc[q] * keys[q]
        new_ndcg = new_ndcg / fn
        for k in range(n):
            r = rows[k]
            g = zero
            v = idcg[k]
            for p in range(Y_indptr[r], Y_indptr[r + 1]):
                g = g + v * diff[lab_map[Y_indices[p]]]
            if g > zero:
                side[k] = 1
            elif g < zero:
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
        Points of the node, ascending.
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
    idcg = inverse_idcg(csum, lens)
    f32 = [np.empty(max(nl, 1), np.float32) for _ in range(4)]
    ids = np.empty(max(nl, 1), np.int32)
    ok = optimize_ndcg_kernel(Yp, Yi, rows, side, lab_map, nl, idcg, f32[0], f32[1], f32[2],
                              ids, f32[3], np.empty(SORT_STACK, np.int64), disc)
    return bool(ok), side


def optimize_ndcg_naive(label_sets, side, disc, csum):
    """Obviously-correct twin of :func:`optimize_ndcg_kernel` in plain Python.

    Parameters
    ----------
    label_sets : list of list of int
        The node's points' labels, in node order.
    side : list of int
        Starting +1/-1 split (not modified).
    disc, csum : float32 arrays
        From :func:`discount_tables`.

    Returns
    -------
    (bool, list of int)
        Success flag and the optimised split.
    """
    f32 = np.float32
    side = list(side)
    n = len(label_sets)
    labels = sorted({lab for ys in label_sets for lab in ys})
    idcg = [f32(1.0 / float(csum[len(ys)])) for ys in label_sets]
    ndcg = f32(-2.0)
    while True:
        pos = {lab: f32(0.0) for lab in labels}
        neg = {lab: f32(0.0) for lab in labels}
        for ys, s, v in zip(label_sets, side, idcg):
            for lab in ys:
                if s > 0:
                    pos[lab] = f32(pos[lab] + v)
                else:
                    neg[lab] = f32(neg[lab] + v)
        diff = {lab: f32(0.0) for lab in labels}
        new_ndcg = f32(0.0)
        for sums, sign in ((neg, -1), (pos, 1)):
            ranked = stl_sort_desc_naive([(lab, sums[lab]) for lab in labels])
            for r, (lab, val) in enumerate(ranked):
                d = disc[r]
                diff[lab] = f32(diff[lab] - d) if sign < 0 else f32(diff[lab] + d)
                new_ndcg = f32(new_ndcg + f32(d * val))
        new_ndcg = f32(new_ndcg / f32(n))
        for k, ys in enumerate(label_sets):
            g = f32(0.0)
            for lab in ys:
                g = f32(g + f32(idcg[k] * diff[lab]))
            if g > 0.0:
                side[k] = 1
            elif g < 0.0:
                side[k] = -1
        if f32(new_ndcg - ndcg) < NDCG_EPS:
            break
        ndcg = new_ndcg
    npos = sum(1 for s in side if s > 0)
    return 0 < npos < n, side
