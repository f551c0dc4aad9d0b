"""Evaluation metrics: extreme multi-label top-k metrics and per-query ranking metrics.

Multi-label metrics (Extreme Classification Repository definitions, as its evaluation code and
``pyxclib.evaluation.xc_metrics`` compute them; values in [0, 1], not %). For a row with true
label set ``y``, top-k predictions ``p_1..p_k`` (best first; padding ``-1`` and repeats of an
earlier prediction count as misses) and ``hit_j = [p_j in y]``:

- ``P@k = (1/k) sum_j hit_j``, averaged over all rows (rows without labels score 0);
- ``nDCG@k = DCG@k / IDCG@min(k, |y|)`` with ``DCG@k = sum_j hit_j / log2(j + 1)``, j = 1..k;
  rows without labels score 0;
- ``recall@k = sum_j hit_j / |y|`` (0 for rows without labels);
- ``PSP@k``: with inverse propensities ``w_l = 1/p_l``, ``psp_i = (1/k) sum_j w_{p_j} hit_j``
  and ``best_i`` the same sum over the k true labels of largest ``w``;
  ``PSP@k = sum_i psp_i / sum_i best_i``. The normalisation is over the whole data set, as
  the XC repository's code does it (``helper(score) / helper(optimal score)``), not per row;
- ``PSnDCG@k = sum_i (psDCG_i / Z_i) / sum_i (best psDCG_i / Z_i)`` where
  ``psDCG_i = sum_j w_{p_j} hit_j / log2(j + 1)``, the best one takes the true labels in
  decreasing ``w``, and ``Z_i = IDCG@min(k, |y_i|)`` (unweighted), again as the XC code does.

Each metric reduces to sufficient statistics ``(numerator, denominator)`` that add up over
partitions (``xc_stats``); the metric is their ratio. That is what the Spark evaluator sums.

Ranking metrics, per query then averaged over queries (``ranking_stats`` gives the sum and
the number of queries). Documents are ranked by decreasing score, ties kept in input order
(LightGBM's stable sort):

- ``ndcg@k``: gain ``2^rel - 1``, discount ``1/log2(r + 2)`` for 0-based rank r, divided by the
  ideal DCG@k; a query without a relevant document (ideal DCG 0) counts 1.0, as in LightGBM;
- ``map@k``: ``sum_{r<k, rel_r>0} (hits up to r)/(r + 1)`` divided by
  ``min(#relevant, k, query size)``; 1.0 without relevant documents (LightGBM's ``map@k``);
- ``precision@k``: relevant documents (rel > 0) in the top k, divided by k (Spark's
  ``RankingMetrics.precisionAt`` convention: a query shorter than k cannot reach 1; no
  relevant document: 0).
"""
from __future__ import annotations

import numpy as np

XC_METRICS = ("precisionAtK", "ndcgAtK", "recallAtK", "pspAtK", "psndcgAtK")
RANKING_METRICS = ("ndcgAtK", "mapAtK", "precisionAtK")
_PROPENSITY_METRICS = ("pspAtK", "psndcgAtK")


def inverse_propensities(label_counts, n: int, A: float = 0.55, B: float = 1.5) -> np.ndarray:
    """Inverse label propensities of Jain, Prabhu & Varma (KDD'16).

    ``1/p_l = 1 + C (N_l + B)^-A`` with ``C = (ln N - 1)(B + 1)^A``.

    Parameters
    ----------
    label_counts : array-like (L,)
        N_l, the number of training points with label l.
    n : int
        N, the number of training points.
    A, B : float
        0.55, 1.5 by default (0.5, 0.4 for Wikipedia; 0.6, 2.6 for Amazon).

    Returns
    -------
    float64 (L,)
    """
    counts = np.asarray(label_counts, dtype=np.float64)
    if n <= 0:
        raise ValueError(f"n must be > 0, got {n}")
    C = (np.log(n) - 1.0) * (B + 1.0) ** A
    return 1.0 + C * (counts + B) ** (-A)


def topk_matrix(pred, k: int) -> np.ndarray:
    """Top-k predictions as an int64 (n, k) matrix padded with -1.

    Parameters
    ----------
    pred : int array (n, m), list of int arrays, or (indptr, ids) tuple
        Predicted label ids per row, best first; -1 is padding. The first k are kept.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if isinstance(pred, tuple) and len(pred) == 2:
        indptr, ids = np.asarray(pred[0], np.int64), np.asarray(pred[1], np.int64)
        n = len(indptr) - 1
        lengths = np.minimum(np.diff(indptr), k)
        out = np.full((n, k), -1, np.int64)
        col = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        row = np.repeat(np.arange(n), lengths)
        out[row, col] = ids[np.repeat(indptr[:-1], lengths) + col]
        return out
    if isinstance(pred, np.ndarray) and pred.ndim == 2:
        out = np.full((pred.shape[0], k), -1, np.int64)
        m = min(k, pred.shape[1])
        out[:, :m] = pred[:, :m]
        return out
    rows = [np.asarray(r, np.int64).ravel()[:k] for r in pred]
    out = np.full((len(rows), k), -1, np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def _hits(P: np.ndarray, Y_indptr, Y_indices) -> np.ndarray:
    """bool (n, k): P[i, j] is a true label of row i and not a repeat of P[i, :j]."""
    n, k = P.shape
    Y_indptr = np.asarray(Y_indptr, np.int64)
    Y_indices = np.asarray(Y_indices, np.int64)
    if len(Y_indptr) != n + 1:
        raise ValueError(f"predictions have {n} rows, true labels {len(Y_indptr) - 1}")
    if n == 0:
        return np.zeros((0, k), bool)
    m = int(max(Y_indices.max(initial=0), P.max(initial=0))) + 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(Y_indptr))
    ykeys = np.sort(rows * m + Y_indices)
    valid = P >= 0
    pkeys = np.arange(n, dtype=np.int64)[:, None] * m + np.where(valid, P, 0)
    pos = np.searchsorted(ykeys, pkeys)
    hit = valid & (pos < len(ykeys)) & (ykeys[np.minimum(pos, len(ykeys) - 1)] == pkeys)
    # a repeated prediction counts once: keep the first occurrence in the row
    flat = np.where(valid, pkeys, -1 - np.arange(n * k).reshape(n, k)).ravel()
    _, first = np.unique(flat, return_index=True)
    keep = np.zeros(n * k, bool)
    keep[first] = True
    return hit & keep.reshape(n, k)


def _discount(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def _best_weighted(Y_indptr, Y_indices, w, k: int, disc=None) -> np.ndarray:
    """Per row: the largest achievable sum of w over k true labels (times ``disc`` by rank)."""
    Y_indptr = np.asarray(Y_indptr, np.int64)
    n = len(Y_indptr) - 1
    lengths = np.diff(Y_indptr)
    rows = np.repeat(np.arange(n), lengths)
    wy = w[np.asarray(Y_indices, np.int64)]
    order = np.lexsort((-wy, rows))
    rank = np.arange(len(wy)) - np.repeat(Y_indptr[:-1], lengths)
    ws = wy[order]
    take = rank < k
    contrib = ws[take] * (1.0 if disc is None else disc[rank[take]])
    return np.bincount(rows[take], contrib, minlength=n)


def xc_stats(metric: str, pred, Y_indptr, Y_indices, k: int, inv_prop=None):
    """Sufficient statistics ``(numerator, denominator)`` of a multi-label metric.

    Parameters
    ----------
    metric : one of ``XC_METRICS``
    pred : see ``topk_matrix``
    Y_indptr : int64 (n + 1,)
    Y_indices : int (nnz,)
        True label ids of each row.
    k : int >= 1
    inv_prop : float (L,), required by pspAtK and psndcgAtK
        Inverse propensities; every true label id must be < L.

    Returns
    -------
    (float, float)
        Sums over the rows; the metric is ``numerator / denominator`` (0 when the
        denominator is 0). They add up over disjoint sets of rows.
    """
    if metric not in XC_METRICS:
        raise ValueError(f"unknown metric {metric!r}: expected one of {list(XC_METRICS)}")
    P = topk_matrix(pred, k)
    hits = _hits(P, Y_indptr, Y_indices)
    n = P.shape[0]
    n_true = np.diff(np.asarray(Y_indptr, np.int64))
    disc = _discount(k)
    if metric == "precisionAtK":
        return float(hits.sum()) / k, float(n)
    if metric == "recallAtK":
        r = hits.sum(axis=1) / np.maximum(n_true, 1)
        return float(r.sum()), float(n)
    idcg = np.concatenate(([1.0], np.cumsum(disc)))[np.minimum(n_true, k)]
    if metric == "ndcgAtK":
        dcg = (hits * disc).sum(axis=1)
        return float(np.where(n_true > 0, dcg / idcg, 0.0).sum()), float(n)
    if inv_prop is None:
        raise ValueError(f"{metric} needs inverse propensities (inv_prop)")
    w = np.asarray(inv_prop, np.float64)
    Y_indices = np.asarray(Y_indices, np.int64)
    if len(Y_indices) and (Y_indices.max() >= len(w) or Y_indices.min() < 0):
        raise ValueError(f"a true label id ({int(Y_indices.max())}) is outside the "
                         f"{len(w)} inverse propensities")
    wp = np.where(hits, w[np.clip(P, 0, max(len(w) - 1, 0))] if len(w) else 0.0, 0.0)
    if metric == "pspAtK":
        return float(wp.sum()) / k, float(_best_weighted(Y_indptr, Y_indices, w, k).sum()) / k
    num = (wp * disc).sum(axis=1) / idcg
    den = _best_weighted(Y_indptr, Y_indices, w, k, disc) / idcg
    return float(num.sum()), float(den.sum())


def xc_metric(metric: str, pred, Y_indptr, Y_indices, k: int, inv_prop=None) -> float:
    """The value of a multi-label metric (see the module docstring and ``xc_stats``)."""
    num, den = xc_stats(metric, pred, Y_indptr, Y_indices, k, inv_prop)
    return num / den if den > 0 else 0.0


def precision_at_k(pred, Y_indptr, Y_indices, k: int = 5) -> float:
    return xc_metric("precisionAtK", pred, Y_indptr, Y_indices, k)


def ndcg_at_k(pred, Y_indptr, Y_indices, k: int = 5) -> float:
    return xc_metric("ndcgAtK", pred, Y_indptr, Y_indices, k)


def recall_at_k(pred, Y_indptr, Y_indices, k: int = 5) -> float:
    return xc_metric("recallAtK", pred, Y_indptr, Y_indices, k)


def psp_at_k(pred, Y_indptr, Y_indices, inv_prop, k: int = 5) -> float:
    return xc_metric("pspAtK", pred, Y_indptr, Y_indices, k, inv_prop)


def psndcg_at_k(pred, Y_indptr, Y_indices, inv_prop, k: int = 5) -> float:
    return xc_metric("psndcgAtK", pred, Y_indptr, Y_indices, k, inv_prop)


def xc_stats_naive(metric, pred, Y_indptr, Y_indices, k, inv_prop=None):
    """Row-by-row twin of ``xc_stats``."""
    import math

    rows = [list(r) for r in topk_matrix(pred, k)]
    num = den = 0.0
    for i, p in enumerate(rows):
        y = set(int(v) for v in Y_indices[Y_indptr[i]:Y_indptr[i + 1]])
        seen, hits = set(), []
        for lab in p:
            hits.append(lab >= 0 and lab in y and lab not in seen)
            seen.add(lab)
        z = sum(1 / math.log2(j + 2) for j in range(min(k, len(y))))
        if metric == "precisionAtK":
            num, den = num + sum(hits) / k, den + 1
        elif metric == "recallAtK":
            num, den = num + (sum(hits) / len(y) if y else 0.0), den + 1
        elif metric == "ndcgAtK":
            dcg = sum(1 / math.log2(j + 2) for j, h in enumerate(hits) if h)
            num, den = num + (dcg / z if y else 0.0), den + 1
        else:
            w = inv_prop
            best = sorted((w[lab] for lab in y), reverse=True)[:k]
            if metric == "pspAtK":
                num += sum(w[lab] for lab, h in zip(p, hits) if h) / k
                den += sum(best) / k
            elif y:
                num += sum(w[lab] / math.log2(j + 2)
                           for j, (lab, h) in enumerate(zip(p, hits)) if h) / z
                den += sum(b / math.log2(j + 2) for j, b in enumerate(best)) / z
    return num, den


# --------------------------------------------------------------------------- ranking
def _group(qid, n):
    """(order by qid stable, group id of each sorted row, group starts, n_groups)."""
    qid = np.asarray(qid)
    if len(qid) != n:
        raise ValueError(f"qid has {len(qid)} rows, scores {n}")
    order = np.argsort(qid, kind="stable")
    q = qid[order]
    new = np.ones(n, bool)
    new[1:] = q[1:] != q[:-1]
    g = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    return order, g, starts, len(starts)


def per_query(metric: str, scores, relevance, qid, k: int) -> np.ndarray:
    """Per-query values of a ranking metric, queries in increasing qid order.

    Parameters
    ----------
    metric : one of ``RANKING_METRICS``
    scores : float (n,)
        Predicted scores (higher ranks first).
    relevance : float (n,)
        Graded relevance (>= 0; relevant means > 0).
    qid : int (n,)
        Query id of each row; rows of a query need not be contiguous.
    k : int >= 1

    Returns
    -------
    float64 (n_queries,)
    """
    if metric not in RANKING_METRICS:
        raise ValueError(f"unknown metric {metric!r}: expected one of {list(RANKING_METRICS)}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    scores = np.asarray(scores, np.float64)
    rel = np.asarray(relevance, np.float64)
    n = len(scores)
    if len(rel) != n:
        raise ValueError(f"relevance has {len(rel)} rows, scores {n}")
    order, g, starts, nq = _group(qid, n)
    if nq == 0:
        return np.zeros(0)
    # within each query (rows already grouped by qid, stably): by decreasing score, stably
    by_score = order[np.lexsort((-scores[order], g))]
    rank = np.arange(n) - starts[g]
    top = rank < k
    r_s = rel[by_score]
    size = np.diff(np.append(starts, n))
    if metric == "ndcgAtK":
        disc = 1.0 / np.log2(rank + 2.0)
        dcg = np.bincount(g, np.where(top, (2.0 ** r_s - 1.0) * disc, 0.0), minlength=nq)
        ideal = rel[order][np.lexsort((-rel[order], g))]
        idcg = np.bincount(g, np.where(top, (2.0 ** ideal - 1.0) * disc, 0.0), minlength=nq)
        return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 1.0)
    relevant = r_s > 0
    hits_top = np.bincount(g, relevant & top, minlength=nq)
    if metric == "precisionAtK":
        return hits_top / k
    cum = np.cumsum(relevant)
    cum_in_q = cum - np.concatenate(([0], cum))[starts][g]
    ap = np.bincount(g, np.where(relevant & top, cum_in_q / (rank + 1.0), 0.0), minlength=nq)
    npos = np.bincount(g, relevant, minlength=nq)
    denom = np.minimum(npos, np.minimum(k, size))
    return np.where(npos > 0, ap / np.maximum(denom, 1), 1.0)


def ranking_stats(metric: str, scores, relevance, qid, k: int):
    """``(sum of per-query values, number of queries)``: adds up over disjoint queries."""
    v = per_query(metric, scores, relevance, qid, k)
    return float(v.sum()), float(len(v))


def ranking_metric(metric: str, scores, relevance, qid, k: int) -> float:
    """The mean over queries of a ranking metric (see the module docstring)."""
    s, c = ranking_stats(metric, scores, relevance, qid, k)
    return s / c if c else 0.0


def per_query_naive(metric, scores, relevance, qid, k):
    """Query-by-query twin of ``per_query``."""
    import math

    out = []
    for q in sorted(set(np.asarray(qid).tolist())):
        idx = [i for i in range(len(scores)) if qid[i] == q]
        ranked = sorted(idx, key=lambda i: -scores[i])          # stable: ties keep order
        rels = [float(relevance[i]) for i in ranked][:k]
        if metric == "ndcgAtK":
            dcg = sum((2 ** r - 1) / math.log2(j + 2) for j, r in enumerate(rels))
            ideal = sorted((float(relevance[i]) for i in idx), reverse=True)[:k]
            idcg = sum((2 ** r - 1) / math.log2(j + 2) for j, r in enumerate(ideal))
            out.append(dcg / idcg if idcg > 0 else 1.0)
        elif metric == "precisionAtK":
            out.append(sum(r > 0 for r in rels) / k)
        else:
            npos = sum(float(relevance[i]) > 0 for i in idx)
            hit, ap = 0, 0.0
            for j, r in enumerate(rels):
                if r > 0:
                    hit += 1
                    ap += hit / (j + 1)
            out.append(ap / min(npos, k, len(idx)) if npos else 1.0)
    return np.array(out)
