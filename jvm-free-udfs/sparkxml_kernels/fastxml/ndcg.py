"""FastXML's nDCG partition step: one run of the alternating optimisation of (r+, r-, delta).

Given a node's points with a random +1/-1 side each, alternate
(a) r± = per-label sums over the side's points of y_il / IDCG(|y_i|), ranked descending, and
(b) delta_i = sign of sum_l y_il / IDCG_i * (disc(rank+_l) - disc(rank-_l)), kept when 0,
until the nDCG gains less than 1e-6. PfastreXML (Jain, Prabhu & Varma, KDD'16) runs the same
step with y_il = 1/p_l, the label's inverse propensity, and without the IDCG normalisation
(propensity-scored DCG): the authors multiply their label matrix by the inverse propensities
and set every IDCG to 1, which the label weights (``map_labels``) and
``discount_tables(..., normalise=False)`` do here. Labels are ranked among the node's active
labels only, as the authors' code does (it shrinks the label matrix to the node first, labels
ascending).

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

from .._dtypes import INDEX, INDPTR
from .._jit import njit
from ._common import NOMAP
from ._stlsort import stl_sort_desc, stl_sort_desc_naive

NDCG_EPS = np.float32(1e-6)
SORT_STACK = 192  # int64 scratch of stl_sort_desc


def discount_tables(n_labels: int, max_row_labels: int, normalise: bool = True):
    """Rank discounts and IDCG normalisers (float32, as the authors' tables), once per call.

    Parameters
    ----------
    n_labels : int
        Number of labels L (ranks run over at most L active labels).
    max_row_labels : int
        Largest number of labels on one point.
    normalise : bool
        False makes every normaliser 1 (plain DCG, PfastreXML's objective).

    Returns
    -------
    disc : float32 array (max(L, max_row_labels, 1),)
        disc[r] = 1 / log2(r + 2) for the 0-based rank r (log2 rounded to float32 first).
    csum : float32 array (max_row_labels + 1,)
        csum[n] = IDCG(n) = sum_{r < n} disc(r), summed in float32, with csum[0] = 1 so that a
        point without labels has a finite (irrelevant) normaliser; all 1 when not
        ``normalise``.
    """
    size = max(int(n_labels), int(max_row_labels), 1)
    disc = np.array([1.0 / float(np.float32(math.log2(r + 2))) for r in range(size)],
                    dtype=np.float64).astype(np.float32)
    csum = np.empty(int(max_row_labels) + 1, dtype=np.float32)
    csum[0] = 1.0
    acc = np.float32(0.0)
    for r in range(int(max_row_labels)):
        acc = np.float32(acc + disc[r])
        csum[r + 1] = acc if normalise else np.float32(1.0)
    return disc, csum


def label_weights(label_weight, n_labels: int) -> np.ndarray:
    """float32 (max(L, 1),) label weights y_il: ones when ``label_weight`` is None, else the
    given values, which must be finite and > 0 (one a label)."""
    L1 = max(int(n_labels), 1)
    if label_weight is None:
        return np.ones(L1, np.float32)
    w = np.asarray(label_weight, dtype=np.float64).reshape(-1)
    if w.size != int(n_labels):
        raise ValueError(f"label_weight has {w.size} entries for n_labels={n_labels}")
    if w.size and not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ValueError("label_weight must hold finite values > 0")
    out = np.ones(L1, np.float32)
    out[:w.size] = w.astype(np.float32)
    return out


def inverse_idcg(csum, n_row_labels):
    """float32 1 / IDCG(|y_i|) per point, the division done in float64 as the authors do."""
    return (1.0 / csum[np.asarray(n_row_labels)].astype(np.float64)).astype(np.float32)


@njit(cache=True, nogil=True)
def map_labels(Y_indptr, Y_indices, rows, lab_map, act_lab, label_weight, act_w):
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
    label_weight : float32 (L,)
        y_il of each label (1 for FastXML, the inverse propensity for PfastreXML).
    act_w : float32 (>= L,)
        Receives each local label's weight.

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
        act_w[j] = label_weight[act_lab[j]]
    return nl


@njit(cache=True, nogil=True)
def ndcg_side_sums(Y_indptr, Y_indices, rows, side, lab_map, act_w, idcg, pos_sum, neg_sum):
    """Add each point's gains ``act_w[l] * idcg[k]`` to its side's label sums (step (a)).

    Points are taken in order and each gain is added in float32, so the sums are the authors'
    bit for bit when the sums start at 0 (or at the sums over the preceding points: the
    data-parallel grower folds them across shards this way).
    """
    for k in range(rows.shape[0]):
        r = rows[k]
        v = idcg[k]
        if side[k] > 0:
            for p in range(Y_indptr[r], Y_indptr[r + 1]):
                j = lab_map[Y_indices[p]]
                pos_sum[j] += act_w[j] * v
        else:
            for p in range(Y_indptr[r], Y_indptr[r + 1]):
                j = lab_map[Y_indices[p]]
                neg_sum[j] += act_w[j] * v


@njit(cache=True, nogil=True)
def ndcg_rank_gain(pos_sum, neg_sum, nl, diff, ids, keys, stack, disc):
    """Rank both sides' sums (step (b)): fill ``diff`` with disc(rank+) - disc(rank-) per
    label and return the float32 sum of disc(rank) x sum over both rankings (not yet divided
    by the number of points)."""
    zero = np.float32(0.0)
    for j in range(nl):
        diff[j] = zero
    gain = zero
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
            gain = gain + disc[q] * keys[q]
    return gain


@njit(cache=True, nogil=True)
def ndcg_update_sides(Y_indptr, Y_indices, rows, side, lab_map, act_w, idcg, diff):
    """delta_i = sign of the point's gain under the new rankings, kept when 0 (step (c))."""
    zero = np.float32(0.0)
    for k in range(rows.shape[0]):
        r = rows[k]
        g = zero
        v = idcg[k]
        for p in range(Y_indptr[r], Y_indptr[r + 1]):
            j = lab_map[Y_indices[p]]
            g = g + (act_w[j] * v) * diff[j]
        if g > zero:
            side[k] = 1
        elif g < zero:
            side[k] = -1


@njit(cache=True, nogil=True)
def optimize_ndcg_kernel(Y_indptr, Y_indices, rows, side, lab_map, nl, act_w, idcg, pos_sum,
                         neg_sum, diff, ids, keys, stack, disc):
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
    act_w : float32 (>= nl,)
        Weight y_il of each active label (``map_labels``); a point's gain for label l is the
        float32 product ``act_w[l] * idcg[k]``, as the authors' ``data * idcgs[i]``.
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
        ndcg_side_sums(Y_indptr, Y_indices, rows, side, lab_map, act_w, idcg, pos_sum, neg_sum)
        new_ndcg = ndcg_rank_gain(pos_sum, neg_sum, nl, diff, ids, keys, stack, disc) / fn
        ndcg_update_sides(Y_indptr, Y_indices, rows, side, lab_map, act_w, idcg, diff)
        if new_ndcg - ndcg < NDCG_EPS:
            break
        ndcg = new_ndcg
    npos = 0
    for k in range(n):
        if side[k] > 0:
            npos += 1
    return 0 < npos < n


def optimize_ndcg(Y_indptr, Y_indices, rows, side, n_labels, label_weight=None, normalise=True):
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
    label_weight : float32 array (L,), optional
        y_il per label (default 1).
    normalise : bool
        Divide by each point's IDCG (nDCG, default) or not (DCG).

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
    disc, csum = discount_tables(n_labels, int(lens.max()) if lens.size else 0, normalise)
    L1 = max(n_labels, 1)
    lab_map = np.full(L1, NOMAP, np.uint32)
    act_lab = np.empty(L1, np.int32)
    act_w = np.empty(L1, np.float32)
    weights = label_weights(label_weight, n_labels)
    nl = map_labels(Yp, Yi, rows, lab_map, act_lab, weights, act_w)
    idcg = inverse_idcg(csum, lens)
    f32 = [np.empty(max(nl, 1), np.float32) for _ in range(4)]
    ids = np.empty(max(nl, 1), np.int32)
    ok = optimize_ndcg_kernel(Yp, Yi, rows, side, lab_map, nl, act_w, idcg, f32[0], f32[1],
                              f32[2], ids, f32[3], np.empty(SORT_STACK, np.int64), disc)
    return bool(ok), side


def optimize_ndcg_naive(label_sets, side, disc, csum, weights=None):
    """Obviously-correct twin of :func:`optimize_ndcg_kernel` in plain Python.

    Parameters
    ----------
    label_sets : list of list of int
        The node's points' labels, in node order.
    side : list of int
        Starting +1/-1 split (not modified).
    disc, csum : float32 arrays
        From :func:`discount_tables`.
    weights : dict label -> float32, optional
        y_il per label (default 1).

    Returns
    -------
    (bool, list of int)
        Success flag and the optimised split.
    """
    f32 = np.float32
    side = list(side)
    n = len(label_sets)
    labels = sorted({lab for ys in label_sets for lab in ys})
    wt = {lab: f32(1.0 if weights is None else weights[lab]) for lab in labels}
    idcg = [f32(1.0 / float(csum[len(ys)])) for ys in label_sets]
    ndcg = f32(-2.0)
    while True:
        pos = {lab: f32(0.0) for lab in labels}
        neg = {lab: f32(0.0) for lab in labels}
        for ys, s, v in zip(label_sets, side, idcg):
            for lab in ys:
                if s > 0:
                    pos[lab] = f32(pos[lab] + f32(wt[lab] * v))
                else:
                    neg[lab] = f32(neg[lab] + f32(wt[lab] * v))
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
                g = f32(g + f32(f32(wt[lab] * idcg[k]) * diff[lab]))
            if g > 0.0:
                side[k] = 1
            elif g < 0.0:
                side[k] = -1
        if f32(new_ndcg - ndcg) < NDCG_EPS:
            break
        ndcg = new_ndcg
    npos = sum(1 for s in side if s > 0)
    return 0 < npos < n, side
