"""Slow, obviously-correct twins of the label-tree kernels, for tests.

- :func:`spherical_kmeans_naive`: the clustering of ``cluster.spherical_kmeans`` in plain
  Python over dict rows (same initial draw, same tie rules);
- :func:`beam_search_naive`: the beam search of ``predictor.predict_kernel`` with Python
  lists and ``sorted``;
- :func:`exhaustive_naive`: every leaf label's full path probability in every tree, no beam:
  what the beam search returns once the beam holds every node of a level;
- :func:`blocked_segment_naive`: ``blocked.segment`` with Python loops;
- :func:`node_rows_naive`, :func:`slot_matrix_naive`, :func:`node_columns_naive`: a node's
  rows, its problems' positives and its features by scipy row selection (copies), as
  ``nodes.node_rows``, ``nodes.slot_matrix_t`` and ``nodes.mark_columns`` read them in
  place;
- :func:`node_problems_naive`: ``nodes.node_problems`` by scipy row and column selection.
"""
from __future__ import annotations

import math

import numpy as np

from ..linear._rng import PyRng
from .blocked import (
    ACTIVE,
    NUM_BLOCKS,
    PASSES,
    PGMAX_NEW,
    PGMAX_OLD,
    PGMIN_NEW,
    POS,
    RESET,
    STEPS,
)
from .cluster import initial_centroids


def _rows(R):
    return [dict(zip(R.indices[R.indptr[i]:R.indptr[i + 1]].tolist(),
                     R.data[R.indptr[i]:R.indptr[i + 1]].tolist())) for i in range(R.shape[0])]


def spherical_kmeans_naive(R, k: int, balanced: bool, eps: float, rng, max_rounds: int = 100):
    """Cluster ids (list) of the rows of the CSR matrix R."""
    rows = _rows(R)
    m, d = len(rows), R.shape[1]
    init = initial_centroids(m, k, rng)
    cents = [[rows[int(i)].get(j, 0.0) for j in range(d)] for i in init]
    old = -math.inf
    assign = [0] * m
    for _ in range(max_rounds):
        S = [[sum(v * c[j] for j, v in r.items()) for c in cents] for r in rows]
        if not balanced:
            assign = [max(range(k), key=lambda c: (s[c], -c)) for s in S]
        elif k == 2:
            order = sorted(range(m), key=lambda i: (-(S[i][0] - S[i][1]), i))
            assign = [0] * m
            for pos, i in enumerate(order):
                assign[i] = 0 if pos < (m + 1) // 2 else 1
        else:
            cap = -(-m // k)
            pairs = sorted(((-S[i][c], i * k + c) for i in range(m) for c in range(k)))
            assign = [-1] * m
            count = [0] * k
            for _, flat in pairs:
                i, c = divmod(flat, k)
                if assign[i] < 0 and count[c] < cap:
                    assign[i] = c
                    count[c] += 1
        obj = sum(S[i][assign[i]] for i in range(m)) / m
        if obj - old < eps:
            break
        old = obj
        for c in range(k):
            s = [0.0] * d
            for i in range(m):
                if assign[i] == c:
                    for j, v in rows[i].items():
                        s[j] += v
            norm = math.sqrt(sum(v * v for v in s))
            if norm > 0:
                cents[c] = [v / norm for v in s]
    return assign


def _prob(m: float, loss: str) -> float:
    if loss == "logistic":
        return 1.0 / (1.0 + math.exp(-m))
    z = 1.0 - m
    return 1.0 if z <= 0 else math.exp(-z * z)


def _unit_row(indptr, indices, data, r, n_features, bias):
    x: dict = {}
    for p in range(indptr[r], indptr[r + 1]):
        x[int(indices[p])] = x.get(int(indices[p]), 0.0) + float(np.float32(data[p]))
    norm = math.sqrt(sum(v * v for v in x.values()))
    x = {j: (v / norm if norm > 0 else 0.0) for j, v in x.items()}
    x[n_features] = bias
    return x


def _margins(f, g, x):
    """{slot: margin} of node g's classifiers for the row dict x."""
    out: dict = {}
    for q in range(f["wf_indptr"][g], f["wf_indptr"][g + 1]):
        v = x.get(int(f["wf_feature"][q]), 0.0)
        for e in range(f["we_indptr"][q], f["we_indptr"][q + 1]):
            s = int(f["we_slot"][e])
            out[s] = out.get(s, 0.0) + v * float(f["we_value"][e])
    return out


def _tree_label_scores(f, t, x, loss, beam):
    """{label: score} of tree t: beam search, or every leaf when ``beam`` is None."""
    base = int(f["tree_offsets"][t])
    cp, ci = f["child_indptr"], f["child_index"]

    def kids(node):
        return [int(c) for c in ci[cp[base + node]:cp[base + node + 1]]]

    level = [(0, 1.0)]
    while any(kids(n) for n, _ in level):
        nxt = []
        for n, s in level:
            ks = kids(n)
            mg = _margins(f, base + n, x)
            nxt.extend([(c, s * _prob(mg.get(i, 0.0), loss)) for i, c in enumerate(ks)]
                       if ks else [(n, s)])
        level = nxt if beam is None else sorted(nxt, key=lambda e: (-e[1], e[0]))[:beam]
    out: dict = {}
    for n, s in level:
        g = base + n
        mg = _margins(f, g, x)
        a = f["leaf_indptr"][g]
        for slot in range(f["leaf_indptr"][g + 1] - a):
            lab = int(f["leaf_label"][a + slot])
            out[lab] = out.get(lab, 0.0) + s * _prob(mg.get(slot, 0.0), loss)
    return out


def beam_search_naive(f, indptr, indices, data, n_features, bias, loss, beam, k):
    """(labels int32 (n, k), scores float32 (n, k)) as ``predict_kernel``; ``beam=None``:
    exhaustive."""
    T = len(f["tree_ids"])
    n = len(indptr) - 1
    labels = np.full((n, k), -1, np.int32)
    scores = np.zeros((n, k), np.float32)
    for r in range(n):
        x = _unit_row(indptr, indices, data, r, n_features, bias)
        acc: dict = {}
        for t in range(T):
            for lab, s in _tree_label_scores(f, t, x, loss, beam).items():
                acc[lab] = acc.get(lab, 0.0) + s
        best = sorted((-(v / T), lab) for lab, v in acc.items() if v / T > 0)[:k]
        for j, (neg, lab) in enumerate(best):
            labels[r, j] = lab
            scores[r, j] = np.float32(-neg)
    return labels, scores


def exhaustive_naive(f, indptr, indices, data, n_features, bias, loss, k):
    """Every leaf label scored by its full path in every tree (no beam)."""
    return beam_search_naive(f, indptr, indices, data, n_features, bias, loss, None, k)


def _stream_naive(base, pass_no: int, block: int) -> PyRng:
    start = (int(base[0]) + pass_no * (NUM_BLOCKS + 1) + block) % (1 << 64)
    return PyRng(np.array([PyRng(np.array([start], np.uint64)).next()], np.uint64))


def pass_order_naive(base, pass_no: int) -> list:
    """``blocked.pass_order`` in plain Python."""
    rng = _stream_naive(base, pass_no, NUM_BLOCKS)

    def shuffled(items):
        for s in range(len(items)):
            j = s + rng.below(len(items) - s)
            items[s], items[j] = items[j], items[s]
        return items

    return shuffled(list(range(NUM_BLOCKS)))


def blocked_segment_naive(X, y, C: float, qd, alpha, boff, block_ids, index, active, u, base,
                          carry, held):
    """:func:`segment` in plain Python, sums taken entry by entry as the kernel takes them
    (the twin the tests compare it with)."""
    diag = 0.5 / C
    reset = carry[RESET] != 0.0
    old_max = carry[PGMAX_OLD]
    new_max, new_min = carry[PGMAX_NEW], carry[PGMIN_NEW]
    act_sum = steps = 0
    pass_no = int(carry[PASSES])
    order = pass_order_naive(base, pass_no)
    group = {int(b): k for k, b in enumerate(block_ids)}
    pos = int(carry[POS])
    while pos < NUM_BLOCKS and held[order[pos]]:
        b = order[pos]
        pos += 1
        if b not in group:
            continue
        k = group[b]
        lo, hi = int(boff[k]), int(boff[k + 1])
        if reset:
            active[k] = hi - lo
        rng = _stream_naive(base, pass_no, b)
        act = int(active[k])
        for s in range(act):
            j = s + rng.below(act - s)
            index[lo + s], index[lo + j] = index[lo + j], index[lo + s]
        s = 0
        while s < act:
            t = int(index[lo + s])
            entries = range(X.indptr[t], X.indptr[t + 1])
            sign = 1.0 if y[t] else -1.0
            a = alpha[t]
            dot = 0.0
            for p in entries:
                dot += u[X.indices[p]] * X.data[p]
            G = sign * dot - 1.0 + a * diag
            if a == 0.0 and G > old_max:  # shrunk (the upper bound is infinite)
                act -= 1
                index[lo + s], index[lo + act] = index[lo + act], t
                continue
            PG = min(G, 0.0) if a == 0.0 else G
            new_max, new_min = max(new_max, PG), min(new_min, PG)
            if abs(PG) > 1e-12:
                na = max(a - G / (1.0 * qd[t] + diag), 0.0)
                alpha[t] = na
                sd = (na - a) * sign
                for p in entries:
                    u[X.indices[p]] += sd * X.data[p]
                steps += 1
            s += 1
        active[k] = act
        act_sum += act
    carry[POS] = pos
    carry[PGMAX_NEW], carry[PGMIN_NEW] = new_max, new_min
    carry[ACTIVE] += act_sum
    carry[STEPS] += steps


def node_rows_naive(Yt, labels) -> np.ndarray:
    """``nodes.node_rows`` through a copy of the labels' rows of ``Yt``."""
    carry = np.zeros(Yt.shape[1], bool)
    if len(labels):
        carry[Yt[np.asarray(labels)].indices] = True
    return np.flatnonzero(carry)


def slot_matrix_naive(Y, rows, groups) -> np.ndarray:
    """``nodes.slot_matrix_t`` with a Python set per group over a copy of the rows (of the
    label matrix ``Y``, not transposed)."""
    Yl = Y[np.asarray(rows, np.int64)]
    sets = [set(np.asarray(g).tolist()) for g in groups]
    P = np.zeros((len(rows), len(groups)), bool)
    for i in range(len(rows)):
        labs = set(Yl.indices[Yl.indptr[i]:Yl.indptr[i + 1]].tolist())
        for c, g in enumerate(sets):
            P[i, c] = bool(labs & g)
    return P


def node_columns_naive(X, rows) -> np.ndarray:
    """The columns (ascending) that ``rows`` of ``X`` use, through a copy of the rows."""
    return np.unique(X[np.asarray(rows, np.int64)].indices)


def node_problems_naive(X, Y, rows, groups):
    """``nodes.node_problems`` from ``Y`` (not transposed): the rows' used columns by
    ``np.unique`` and scipy's column selection."""
    Xl = X[np.asarray(rows, np.int64)]
    cols = np.unique(Xl.indices).astype(np.int32)
    Xl = Xl[:, cols].tocsr()
    Xl.sort_indices()
    return Xl, cols, slot_matrix_naive(Y, rows, groups)


def row_norms2_naive(X) -> np.ndarray:
    """``nodes.row_norms2``: each row's squared entries added in entry order (bincount)."""
    n = X.shape[0]
    return np.bincount(np.repeat(np.arange(n), np.diff(X.indptr)), weights=X.data * X.data,
                       minlength=n).astype(np.float64)
