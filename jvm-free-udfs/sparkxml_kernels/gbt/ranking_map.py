"""LambdaMART with MAP lambdas, computed as XGBoost's ``rank:map``.

Labels are binary (0 = irrelevant, 1 = relevant), as XGBoost requires for ``rank:map``. Per
query, documents are sorted by decreasing score (ties keep their row order). With ``l_k`` the
label at position ``k`` (0-based) of that ranking, ``n_k = l_0 + ... + l_k`` (relevant
documents up to ``k``), ``acc_k = sum_{t <= k} l_t / (t + 1)`` and ``N = n_{cnt-1}``, the
query's average precision is ``AP = (1 / N) sum_k l_k n_k / (k + 1)``. Swapping the documents
at positions ``i < j`` of different labels changes it by (XGBoost's ``DeltaMAP``)::

    l_i = 1, l_j = 0:  dMAP = (n_i / (i+1) - n_j / (j+1) + acc_{j-1} - acc_i) / N
    l_i = 0, l_j = 1:  dMAP = (n_j / (j+1) - (n_i + 1) / (i+1) - acc_{j-1} + acc_i) / N

Pairs: every ``(i, j)``, ``i < min(cnt, truncation)``, ``j > i``, of different labels (XGBoost's
``lambdarank_pair_method="topk"`` with ``lambdarank_num_pair_per_sample = truncation``). With
``h`` the relevant document, ``l`` the other, ``ds = s_h - s_l``, ``d = |dMAP|``::

    d    /= 0.01 + |ds|           (norm, unless all scores of the query tie;
                                   XGBoost's lambdarank_score_normalization)
    p     = 1 / (1 + exp(-sigma ds))
    g_h  += sigma (p - 1) d;      g_l -= sigma (p - 1) d
    h_h  += 2 sigma^2 max(p (1 - p), 1e-16) d;   h_l += the same

and, with ``norm``, the query's gradients and hessians are multiplied by ``log2(1 + S) / S``,
``S`` the sum of ``2 sigma (1 - p) d`` over its pairs (XGBoost's lambdarank_normalization).
A query without relevant documents gets zero gradients. Row weights multiply gradients and
hessians. Base score 0.

Differences from XGBoost: XGBoost has no ``sigma`` (it is 1, the default here) and computes
the pair gradients in float32; its default ``lambdarank_num_pair_per_sample`` is 32 where
LambdaMART's ``ndcgTruncation`` defaults to 30; XGBoost weights whole queries
(``DMatrix.set_group`` weights, normalised to mean 1), here every row's weight multiplies its
own gradient.

The compiled kernel has a ``_naive`` twin that computes every dMAP by swapping the two
documents and recomputing AP from scratch.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .ranking import finish_query_naive, normalise_query, query_lists, query_rows

_NORM_EPS = 0.01
_HESS_EPS = 1e-16


def check_binary(y_int) -> None:
    """ValueError unless every relevance label is 0 or 1 (XGBoost's rule for rank:map)."""
    if y_int.size and y_int.max() > 1:
        raise ValueError(f"objective map needs binary relevance labels (0 or 1), got the "
                         f"grade {int(y_int.max())}")


@njit(cache=True, nogil=True)
def _map_kernel(y, raw, group_ptr, trunc, sigma, norm, out_g, out_h):
    n_groups = group_ptr.shape[0] - 1
    for q in range(n_groups):
        s0, e0 = query_rows(group_ptr, q, out_g, out_h)
        cnt = e0 - s0
        if cnt <= 1:
            continue
        order = np.argsort(-raw[s0:e0], kind="mergesort") + s0   # stable: ties keep row order
        n_rel = np.empty(cnt)
        acc = np.empty(cnt)
        run_n = 0.0
        run_a = 0.0
        for k in range(cnt):
            lk = float(y[order[k]])
            run_n += lk
            run_a += lk / (k + 1.0)
            n_rel[k] = run_n
            acc[k] = run_a
        total = n_rel[cnt - 1]
        if total <= 0.0:
            continue
        scale_by_gap = norm and raw[order[0]] != raw[order[cnt - 1]]
        sum_l = 0.0
        for i in range(min(cnt, trunc)):
            a = order[i]
            for j in range(i + 1, cnt):
                b = order[j]
                if y[a] == y[b]:
                    continue
                between = acc[j - 1] - acc[i]
                if y[a] > y[b]:
                    d = (n_rel[i] / (i + 1.0) - n_rel[j] / (j + 1.0) + between) / total
                    hi, lo = a, b
                else:
                    d = (n_rel[j] / (j + 1.0) - (n_rel[i] + 1.0) / (i + 1.0) - between) / total
                    hi, lo = b, a
                d = abs(d)
                ds = raw[hi] - raw[lo]
                if scale_by_gap:
                    d /= _NORM_EPS + abs(ds)
                z = -sigma * ds
                p = 1.0 / (1.0 + math.exp(z)) if z < 700.0 else 0.0
                lam = sigma * (p - 1.0) * d
                hes = 2.0 * sigma * sigma * max(p * (1.0 - p), _HESS_EPS) * d
                out_g[hi] += lam
                out_g[lo] -= lam
                out_h[hi] += hes
                out_h[lo] += hes
                sum_l -= 2.0 * lam
        if norm:
            normalise_query(out_g, out_h, s0, e0, sum_l)


def average_precision(labels_in_rank_order) -> float:
    """XGBoost's AP of one ranked list of 0/1 labels over the whole list (0 without
    relevant documents)."""
    hits, total = 0, 0.0
    for k, lab in enumerate(labels_in_rank_order):
        if lab:
            hits += 1
            total += hits / (k + 1)
    return total / hits if hits else 0.0


def _map_naive(y, raw, group_ptr, trunc, sigma, norm, out_g, out_h):
    """Twin of ``_map_kernel``: every |dMAP| by swapping the pair and recomputing AP."""
    for q in range(len(group_ptr) - 1):
        s0, e0, lab, sc, g, h = query_lists(y, raw, group_ptr, q)
        order = sorted(range(len(sc)), key=lambda i: -sc[i])
        ranked = [lab[i] for i in order]
        total = 0.0
        if len(lab) > 1 and sum(lab) > 0:
            ap = average_precision(ranked)
            same = sc[order[0]] == sc[order[-1]]
            for i in range(min(len(lab), trunc)):
                for j in range(i + 1, len(lab)):
                    a, b = order[i], order[j]
                    if lab[a] == lab[b]:
                        continue
                    swapped = list(ranked)
                    swapped[i], swapped[j] = swapped[j], swapped[i]
                    d = abs(average_precision(swapped) - ap)
                    hi, lo = (a, b) if lab[a] > lab[b] else (b, a)
                    ds = sc[hi] - sc[lo]
                    if norm and not same:
                        d /= _NORM_EPS + abs(ds)
                    p = 1 / (1 + math.exp(min(-sigma * ds, 700.0)))
                    g[hi] += sigma * (p - 1) * d
                    g[lo] -= sigma * (p - 1) * d
                    hs = 2 * sigma * sigma * max(p * (1 - p), _HESS_EPS) * d
                    h[hi] += hs
                    h[lo] += hs
                    total += 2 * sigma * (1 - p) * d
        finish_query_naive(g, h, total if norm else 0.0, out_g, out_h, s0, e0)


def make_map(base, truncation: int, sigma: float, norm: bool):
    """The loss object (a subclass of ``ranking._RankingLoss`` ``base``, passed in to keep
    the import one-way)."""

    class LambdaMAP(base):
        """LambdaMART with MAP lambdas (see ``sparkxml_kernels.gbt.ranking_map``)."""

        name = "map"

        def __init__(self):
            super().__init__(sigma, None)
            if int(truncation) < 1:
                raise ValueError(f"truncation must be >= 1, got {truncation}")
            self.truncation = int(truncation)
            self.norm = bool(norm)

        def _binary(self, y, raw, w, out_g, out_h, group_ptr):
            yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
            check_binary(yi)
            return yi, r, gp

        def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
            yi, r, gp = self._binary(y, raw, w, out_g, out_h, group_ptr)
            g, h = np.empty(yi.size, FLOAT), np.empty(yi.size, FLOAT)
            _map_kernel(yi, r, gp, self.truncation, self.sigma, self.norm, g, h)
            self._finish(w, g, h, out_g, out_h)

        def gradients_naive(self, y, raw, w, out_g, out_h, group_ptr=None):
            yi, r, gp = self._binary(y, raw, w, out_g, out_h, group_ptr)
            g, h = np.empty(yi.size), np.empty(yi.size)
            _map_naive(yi, r, gp, self.truncation, self.sigma, self.norm, g, h)
            self._finish(w, g, h, out_g, out_h)

    return LambdaMAP()
