"""Ranking objectives and metrics for the boosting engine (LambdaMART).

Objectives (``Loss`` subclasses with ``requires_groups = True``, registered with
``loss.register_loss``; rows of a query are consecutive, ``group_ptr`` delimits them):

``lambdarank``
    LambdaMART with NDCG lambdas (Burges, "From RankNet to LambdaRank to LambdaMART: An
    Overview", MSR-TR-2010-82, section 6), computed as LightGBM's ``lambdarank`` does. Per
    query, documents are sorted by decreasing score (ties keep their row order). Every pair
    (i, j) of different relevance with at least one of the two ranked above the truncation
    level (``i < truncation`` in sorted order, ``j`` anywhere below ``i``) contributes, with
    ``h`` the more relevant document, ``l`` the other, ``ds = s_h - s_l``::

        dNDCG = (gain[rel_h] - gain[rel_l]) * |disc(rank_h) - disc(rank_l)| / maxDCG@truncation
        dNDCG /= 0.01 + |ds|                      (norm, unless all scores of the query tie)
        p     = 1 / (1 + exp(sigma * ds))
        g_h  -= sigma * p * dNDCG;   g_l += sigma * p * dNDCG
        h_h  += sigma^2 * p (1 - p) * dNDCG;  h_l += the same

    with ``disc(r) = 1 / log2(r + 2)`` (0-based rank) and ``gain[rel] = 2^rel - 1`` unless a
    ``label_gain`` list is given. With ``norm`` (LightGBM's ``lambdarank_norm``, default on)
    the query's gradients and hessians are finally multiplied by ``log2(1 + S) / S``, ``S``
    the sum of |lambda| over its pairs. A query whose ideal DCG is 0 (no relevant document
    within reach) gets zero gradients. Row weights multiply gradients and hessians.

``pairwise``
    RankNet: the logistic pair loss ``log(1 + exp(-sigma (s_h - s_l)))`` summed over ALL pairs
    of a query with different relevance (no truncation, no NDCG weight, no normalisation):
    ``g_h -= sigma p``, ``g_l += sigma p``, hessians ``sigma^2 p (1 - p)``. Cost per query is
    quadratic in its size.

``xendcg`` and ``map`` (XGBoost's ``rank:map``: MAP lambdas, binary labels) live in
ranking_xendcg.py and ranking_map.py.

Base score 0 for all (rankings do not depend on it).

Differences from LightGBM's lambdarank (the rest is the same computation): the sigmoid is
evaluated exactly, not from LightGBM's 1M-entry lookup table; the score-distance term uses
0.01 in double (LightGBM adds the float ``0.01f``); there is no position-bias correction
(``lambdarank_position_bias_regularization``). The default gains 2^rel - 1 take grades up to
``MAX_DEFAULT_GRADE`` = 31 (XGBoost's limit for its exponential gain, relevance < 32;
LightGBM's default ``label_gain`` stops at relevance 30): 2^rel - 1 overflows float64 from
grade 1024 on, and sums of such gains long before, which would turn the lambdas into NaN.
Higher grades need an explicit ``label_gain``.

Metrics (``metrics.register_metric``; summable statistics, so a query must not span
workers): ``ndcg@k`` -- per query NDCG@k with the same gains, ties in score kept in row
order, a query without relevant documents counts 1.0 (LightGBM), averaged over queries
weighted by the query weight (the mean of its rows' weights, as LightGBM); ``map@k`` --
``sparkxml_kernels.metrics``' definition, unweighted.

Every compiled kernel has a ``_naive`` twin (plain Python loops) used by the tests.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .loss import Loss, register_loss
from .metrics import register_metric

DEFAULT_TRUNCATION = 30
DEFAULT_SIGMA = 1.0
OBJECTIVES = ("lambdarank", "pairwise", "xendcg", "map")  # ranking_xendcg.py, ranking_map.py
# the largest grade the default gain 2^rel - 1 takes (XGBoost's limit for its exponential gain)
MAX_DEFAULT_GRADE = 31
_NORM_EPS = 0.01


# --------------------------------------------------------------------------- validation
def check_relevance(y, label_gain=None, what: str = "relevance") -> np.ndarray:
    """int64 relevance grades from ``y``; ValueError on NaN/inf, negative or fractional
    values, a grade without a ``label_gain`` entry, or (no ``label_gain``) a grade above
    ``MAX_DEFAULT_GRADE``."""
    y = np.asarray(y, FLOAT).reshape(-1)
    bad = ~np.isfinite(y)
    if bad.any():
        raise ValueError(f"{what} holds the non-finite value {y[bad][0]!r}")
    bad = (y < 0) | (y != np.floor(y))
    if bad.any():
        raise ValueError(f"{what} holds the value {y[bad][0]!r}; relevance grades must be "
                         f"integers >= 0")
    if label_gain is not None and y.size and y.max() >= len(label_gain):
        raise ValueError(f"{what} holds the grade {int(y.max())} but labelGain has only "
                         f"{len(label_gain)} entries (grades 0..{len(label_gain) - 1})")
    if label_gain is None and y.size and y.max() > MAX_DEFAULT_GRADE:
        raise ValueError(f"{what} holds the grade {y.max()!r}; the default gain 2^rel - 1 "
                         f"takes grades 0..{MAX_DEFAULT_GRADE}: give labelGain for higher "
                         f"grades")
    return y.astype(np.int64)


def gains_for(y_int, label_gain=None) -> np.ndarray:
    """Gain of each grade 0..max: ``label_gain`` or ``2^g - 1``."""
    if label_gain is not None:
        return np.asarray(label_gain, FLOAT)
    top = int(y_int.max()) if y_int.size else 0
    return np.exp2(np.arange(top + 1, dtype=FLOAT)) - 1.0


def check_group_ptr(group_ptr, n: int) -> np.ndarray:
    gp = np.ascontiguousarray(group_ptr, np.int64).reshape(-1)
    if gp.size < 1 or gp[0] != 0 or gp[-1] != n or np.any(np.diff(gp) < 0):
        raise ValueError(f"group_ptr must rise from 0 to the number of rows ({n})")
    return gp


def group_ptr_from_sorted_ids(qid) -> np.ndarray:
    """``group_ptr`` of rows already grouped by query id (equal ids consecutive). Raises
    when an id comes back after another one (rows not grouped)."""
    q = np.asarray(qid).reshape(-1)
    n = q.size
    if n == 0:
        return np.zeros(1, np.int64)
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    starts = np.concatenate(([0], change))
    if np.unique(q[starts]).size != starts.size:
        raise ValueError("rows of a query are not consecutive: group the rows by query id")
    return np.concatenate((starts, [n])).astype(np.int64)


# --------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def _max_dcg(yq, gains, k):
    """Ideal DCG@k of one query's grades."""
    s = np.sort(yq)[::-1]
    m = min(k, s.shape[0])
    out = 0.0
    for r in range(m):
        out += gains[s[r]] / np.log2(r + 2.0)
    return out


@njit(cache=True, nogil=True, inline="always")
def query_rows(group_ptr, q, out_g, out_h):
    """Rows ``[s0, e0)`` of query ``q``, their gradients and hessians zeroed; returns
    ``(s0, e0)``."""
    s0 = group_ptr[q]
    e0 = group_ptr[q + 1]
    for i in range(s0, e0):
        out_g[i] = 0.0
        out_h[i] = 0.0
    return s0, e0


@njit(cache=True, nogil=True, inline="always")
def add_pair_lambda(out_g, out_h, hi, lo, sigma, ds, d):
    """RankNet's pair update, weighted by the metric change ``d``: rows ``hi`` (the more
    relevant) and ``lo`` with score gap ``ds``; returns the lambda added."""
    p = 1.0 / (1.0 + math.exp(sigma * ds)) if sigma * ds < 700.0 else 0.0
    lam = sigma * p * d
    hes = sigma * sigma * p * (1.0 - p) * d
    out_g[hi] -= lam
    out_g[lo] += lam
    out_h[hi] += hes
    out_h[lo] += hes
    return lam


@njit(cache=True, nogil=True, inline="always")
def normalise_query(out_g, out_h, s0, e0, sum_l):
    """LightGBM's lambda normalisation (XGBoost's too): a query's gradients and hessians
    times ``log2(1 + S) / S``, ``S`` the sum of its pairs' |lambda| (nothing when 0)."""
    if sum_l > 0.0:
        f = np.log2(1.0 + sum_l) / sum_l
        for i in range(s0, e0):
            out_g[i] *= f
            out_h[i] *= f


@njit(cache=True, nogil=True)
def _lambdarank_kernel(y, raw, group_ptr, gains, trunc, sigma, norm, out_g, out_h):
    n_groups = group_ptr.shape[0] - 1
    maxc = 1
    for q in range(n_groups):
        maxc = max(maxc, group_ptr[q + 1] - group_ptr[q])
    disc = np.empty(maxc)
    for r in range(maxc):
        disc[r] = 1.0 / np.log2(r + 2.0)
    for q in range(n_groups):
        s0, e0 = query_rows(group_ptr, q, out_g, out_h)
        cnt = e0 - s0
        if cnt <= 1:
            continue
        mdcg = _max_dcg(y[s0:e0], gains, trunc)
        if mdcg <= 0.0:
            continue
        inv = 1.0 / mdcg
        order = np.argsort(-raw[s0:e0], kind="mergesort") + s0   # stable: ties keep row order
        scale_by_gap = norm and raw[order[0]] != raw[order[cnt - 1]]
        sum_l = 0.0
        for i in range(min(cnt - 1, trunc)):
            a = order[i]
            ya = y[a]
            for j in range(i + 1, cnt):
                b = order[j]
                yb = y[b]
                if ya == yb:
                    continue
                if ya > yb:
                    hi, lo = a, b
                else:
                    hi, lo = b, a
                ds = raw[hi] - raw[lo]
                d = (gains[y[hi]] - gains[y[lo]]) * (disc[i] - disc[j]) * inv
                if scale_by_gap:
                    d /= _NORM_EPS + abs(ds)
                sum_l += 2.0 * add_pair_lambda(out_g, out_h, hi, lo, sigma, ds, d)
        if norm:
            normalise_query(out_g, out_h, s0, e0, sum_l)


@njit(cache=True, nogil=True)
def _pairwise_kernel(y, raw, group_ptr, sigma, out_g, out_h):
    for q in range(group_ptr.shape[0] - 1):
        s0, e0 = query_rows(group_ptr, q, out_g, out_h)
        for a in range(s0, e0):
            for b in range(a + 1, e0):
                if y[a] != y[b]:
                    hi, lo = (a, b) if y[a] > y[b] else (b, a)
                    add_pair_lambda(out_g, out_h, hi, lo, sigma, raw[hi] - raw[lo], 1.0)


@njit(cache=True, nogil=True)
def _ndcg_kernel(y, raw, group_ptr, gains, k, out):
    n_groups = group_ptr.shape[0] - 1
    for q in range(n_groups):
        s0 = group_ptr[q]
        e0 = group_ptr[q + 1]
        ideal = _max_dcg(y[s0:e0], gains, k)
        if ideal <= 0.0:
            out[q] = 1.0
            continue
        order = np.argsort(-raw[s0:e0], kind="mergesort") + s0
        dcg = 0.0
        for r in range(min(k, e0 - s0)):
            dcg += gains[y[order[r]]] / np.log2(r + 2.0)
        out[q] = dcg / ideal


# --------------------------------------------------------------------------- naive twins
def _stable_desc(scores):
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def _max_dcg_naive(labels, gains, k):
    ideal = sorted(labels, reverse=True)[:k]
    return sum(gains[g] / math.log2(r + 2) for r, g in enumerate(ideal))


def query_lists(y, raw, group_ptr, q):
    """The naive twins' view of query ``q``: ``(s0, e0, labels, scores, g, h)``, the labels
    and scores as Python lists and g, h zeroed lists of the query's length."""
    s0, e0 = int(group_ptr[q]), int(group_ptr[q + 1])
    n = e0 - s0
    return (s0, e0, [int(v) for v in y[s0:e0]], [float(v) for v in raw[s0:e0]], [0.0] * n,
            [0.0] * n)


def finish_query_naive(g, h, total, out_g, out_h, s0, e0):
    """The naive twins' end of a query: g, h scaled by ``log2(1 + total) / total`` when
    ``total`` > 0 (LambdaMART's normalisation), then written to rows [s0, e0)."""
    if total > 0:
        f = math.log2(1 + total) / total
        g = [v * f for v in g]
        h = [v * f for v in h]
    out_g[s0:e0] = g
    out_h[s0:e0] = h


def _lambdarank_naive(y, raw, group_ptr, gains, trunc, sigma, norm, out_g, out_h):
    """Query-by-query, pair-by-pair twin of ``_lambdarank_kernel``."""
    for q in range(len(group_ptr) - 1):
        s0, e0, lab, sc, g, h = query_lists(y, raw, group_ptr, q)
        mdcg = _max_dcg_naive(lab, gains, trunc)
        total = 0.0
        if len(lab) > 1 and mdcg > 0:
            order = _stable_desc(sc)
            same = sc[order[0]] == sc[order[-1]]
            rank = {doc: r for r, doc in enumerate(order)}
            for a in range(len(lab)):
                for b in range(len(lab)):
                    if lab[a] <= lab[b]:
                        continue                      # a is the more relevant one
                    if min(rank[a], rank[b]) >= trunc:
                        continue
                    ds = sc[a] - sc[b]
                    disc_gap = abs(1 / math.log2(rank[a] + 2) - 1 / math.log2(rank[b] + 2))
                    d = (gains[lab[a]] - gains[lab[b]]) * disc_gap / mdcg
                    if norm and not same:
                        d /= _NORM_EPS + abs(ds)
                    p = 1 / (1 + math.exp(min(sigma * ds, 700.0)))
                    g[a] -= sigma * p * d
                    g[b] += sigma * p * d
                    h[a] += sigma * sigma * p * (1 - p) * d
                    h[b] += sigma * sigma * p * (1 - p) * d
                    total += 2 * sigma * p * d
        finish_query_naive(g, h, total if norm else 0.0, out_g, out_h, s0, e0)


def _pairwise_naive(y, raw, group_ptr, sigma, out_g, out_h):
    """Twin of ``_pairwise_kernel``: RankNet gradients from the pair loss by hand."""
    out_g[:] = 0.0
    out_h[:] = 0.0
    for q in range(len(group_ptr) - 1):
        idx = range(int(group_ptr[q]), int(group_ptr[q + 1]))
        for a in idx:
            for b in idx:
                if y[a] > y[b]:
                    p = 1 / (1 + math.exp(min(sigma * (raw[a] - raw[b]), 700.0)))
                    out_g[a] -= sigma * p
                    out_g[b] += sigma * p
                    out_h[a] += sigma * sigma * p * (1 - p)
                    out_h[b] += sigma * sigma * p * (1 - p)


def ndcg_per_query_naive(y, raw, group_ptr, gains, k):
    out = []
    for q in range(len(group_ptr) - 1):
        s0, e0 = int(group_ptr[q]), int(group_ptr[q + 1])
        lab = [int(v) for v in y[s0:e0]]
        ideal = _max_dcg_naive(lab, gains, k)
        if ideal <= 0:
            out.append(1.0)
            continue
        order = _stable_desc([float(v) for v in raw[s0:e0]])[:k]
        out.append(sum(gains[lab[i]] / math.log2(r + 2) for r, i in enumerate(order)) / ideal)
    return np.array(out, FLOAT)


# --------------------------------------------------------------------------- public API
def ndcg_per_query(y, raw, group_ptr, k: int, label_gain=None) -> np.ndarray:
    """NDCG@k of every query (float64 (n_groups,)); see the module docstring."""
    yi = check_relevance(y, label_gain)
    gp = check_group_ptr(group_ptr, yi.size)
    out = np.empty(gp.size - 1, FLOAT)
    _ndcg_kernel(yi, np.ascontiguousarray(raw, FLOAT).reshape(-1), gp, gains_for(yi, label_gain),
                 int(k), out)
    return out


def query_weights(w, group_ptr) -> np.ndarray | None:
    """Mean row weight of each query (LightGBM's query weights), or None."""
    if w is None:
        return None
    w = np.asarray(w, FLOAT).reshape(-1)
    gp = np.asarray(group_ptr, np.int64)
    sizes = np.diff(gp)
    sums = np.add.reduceat(w, gp[:-1]) if w.size else np.zeros(sizes.size)
    sums = np.where(sizes > 0, sums, 0.0)
    return sums / np.maximum(sizes, 1)


class _RankingLoss(Loss):
    requires_groups = True
    n_outputs = 1

    def __init__(self, sigma: float = DEFAULT_SIGMA, label_gain=None):
        sigma = float(sigma)
        if not (sigma > 0 and math.isfinite(sigma)):
            raise ValueError(f"sigma must be finite and > 0, got {sigma}")
        self.sigma = sigma
        if label_gain is not None:
            label_gain = [float(v) for v in label_gain]
            if not label_gain or any(not math.isfinite(v) for v in label_gain):
                raise ValueError("labelGain must be a non-empty list of finite numbers")
        self.label_gain = label_gain

    def init_stats(self, y, w):
        return np.zeros(1, FLOAT)

    def init_from_stats(self, stats):
        return np.zeros(1, FLOAT)

    def transform(self, raw):
        return np.asarray(raw, FLOAT)

    def default_metric(self):
        return "ndcg@10"

    def _prepare(self, y, raw, w, out_g, out_h, group_ptr):
        if group_ptr is None:
            raise ValueError(f"objective {self.name} needs query groups (group_ptr)")
        yi = check_relevance(y, self.label_gain)
        gp = check_group_ptr(group_ptr, yi.size)
        r = np.ascontiguousarray(raw, FLOAT).reshape(-1)
        return yi, r, gp

    def _finish(self, w, g, h, out_g, out_h):
        if w is not None:
            w = np.asarray(w, FLOAT).reshape(-1)
            np.multiply(g, w, out=g)
            np.multiply(h, w, out=h)
        if g is not out_g:
            out_g[...] = g.reshape(out_g.shape)
            out_h[...] = h.reshape(out_h.shape)


def _buffers(out_g, out_h, n):
    if (isinstance(out_g, np.ndarray) and out_g.dtype == FLOAT and out_g.flags.c_contiguous
            and out_g.ndim == 1 and isinstance(out_h, np.ndarray) and out_h.dtype == FLOAT
            and out_h.flags.c_contiguous and out_h.ndim == 1):
        return out_g, out_h
    return np.empty(n, FLOAT), np.empty(n, FLOAT)


class LambdaRank(_RankingLoss):
    """LambdaMART objective with NDCG lambdas (see the module docstring).

    Parameters
    ----------
    truncation : int, default 30
        LightGBM's ``lambdarank_truncation_level``: pairs need one document ranked above it;
        the ideal DCG normalising a query is taken at this depth.
    label_gain : list of float, optional
        Gain of each relevance grade (default ``2^g - 1``).
    sigma : float, default 1.0
    norm : bool, default True
        LightGBM's ``lambdarank_norm``.
    """

    name = "lambdarank"

    def __init__(self, truncation: int = DEFAULT_TRUNCATION, label_gain=None,
                 sigma: float = DEFAULT_SIGMA, norm: bool = True):
        super().__init__(sigma, label_gain)
        if int(truncation) < 1:
            raise ValueError(f"truncation must be >= 1, got {truncation}")
        self.truncation = int(truncation)
        self.norm = bool(norm)

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
        g, h = _buffers(out_g, out_h, yi.size)
        _lambdarank_kernel(yi, r, gp, gains_for(yi, self.label_gain), self.truncation,
                           self.sigma, self.norm, g, h)
        self._finish(w, g, h, out_g, out_h)

    def gradients_naive(self, y, raw, w, out_g, out_h, group_ptr=None):
        yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
        g, h = np.empty(yi.size), np.empty(yi.size)
        _lambdarank_naive(yi, r, gp, gains_for(yi, self.label_gain), self.truncation,
                          self.sigma, self.norm, g, h)
        self._finish(w, g, h, out_g, out_h)


class Pairwise(_RankingLoss):
    """RankNet pairwise logistic objective (see the module docstring)."""

    name = "pairwise"

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
        g, h = _buffers(out_g, out_h, yi.size)
        _pairwise_kernel(yi, r, gp, self.sigma, g, h)
        self._finish(w, g, h, out_g, out_h)

    def gradients_naive(self, y, raw, w, out_g, out_h, group_ptr=None):
        yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
        g, h = np.empty(yi.size), np.empty(yi.size)
        _pairwise_naive(yi, r, gp, self.sigma, g, h)
        self._finish(w, g, h, out_g, out_h)

    def loss_value(self, y, raw, group_ptr) -> float:
        """The RankNet loss (for gradient checks)."""
        total = 0.0
        for q in range(len(group_ptr) - 1):
            idx = range(int(group_ptr[q]), int(group_ptr[q + 1]))
            for a in idx:
                for b in idx:
                    if y[a] > y[b]:
                        total += np.logaddexp(0.0, -self.sigma * (raw[a] - raw[b]))
        return float(total)


def make_ranking_loss(objective: str, truncation: int = DEFAULT_TRUNCATION, label_gain=None,
                      sigma: float = DEFAULT_SIGMA, norm: bool = True,
                      seed: int = 0) -> _RankingLoss:
    if objective == "lambdarank":
        return LambdaRank(truncation, label_gain, sigma, norm)
    if objective == "pairwise":
        return Pairwise(sigma, label_gain)
    if objective == "xendcg":
        from .ranking_xendcg import make_xendcg

        return make_xendcg(_RankingLoss, seed, label_gain)
    if objective == "map":
        from .ranking_map import make_map

        if label_gain is not None:
            raise ValueError("labelGain does not apply to objective map (binary labels)")
        return make_map(_RankingLoss, truncation, sigma, norm)
    raise ValueError(f"unknown ranking objective {objective!r}; known: {list(OBJECTIVES)}")


def configure_objective(objective: str, truncation: int = DEFAULT_TRUNCATION, label_gain=None,
                        sigma: float = DEFAULT_SIGMA, norm: bool = True, seed: int = 0) -> str:
    """Register a configured ranking loss and return the objective name to give the booster
    (``BoosterParams.objective``).

    The default configurations are registered as plain ``"lambdarank"`` / ``"pairwise"``;
    other ones under a name that spells the configuration, e.g.
    ``"lambdarank[truncation=10,sigma=1.0,norm=True,labelGain=0.0,1.0,3.0]"``. The loss
    object's ``name`` (what a trained model records as its objective) stays ``lambdarank`` /
    ``pairwise``.
    """
    loss = make_ranking_loss(objective, truncation, label_gain, sigma, norm, seed)  # validates
    if objective == "pairwise":
        conf = [] if loss.sigma == DEFAULT_SIGMA else [f"sigma={loss.sigma!r}"]
    elif objective == "xendcg":  # its gains are 2^rel, as LightGBM's
        conf = [f"seed={int(seed)}"]
    else:  # lambdarank, map
        conf = []
        if loss.truncation != DEFAULT_TRUNCATION:
            conf.append(f"truncation={loss.truncation}")
        if loss.sigma != DEFAULT_SIGMA:
            conf.append(f"sigma={loss.sigma!r}")
        if not loss.norm:
            conf.append("norm=False")
    if loss.label_gain is not None and objective != "xendcg":
        conf.append("labelGain=" + ",".join(repr(v) for v in loss.label_gain))
    name = objective + (f"[{';'.join(conf)}]" if conf else "")
    cfg = dict(truncation=truncation, label_gain=loss.label_gain, sigma=sigma, norm=norm,
               seed=int(seed))
    register_loss(name, lambda num_classes, _o=objective, _c=cfg: make_ranking_loss(_o, **_c))
    return name


def parse_metric(name: str):
    """``("ndcg" | "map", k)`` from ``"ndcg@10"``, ``"map@5"``, ``"ndcg"`` (k = 10); None when
    the name is not a ranking metric."""
    if not isinstance(name, str):
        return None
    base, _, k = name.partition("@")
    if base not in ("ndcg", "map"):
        return None
    if not k:
        return base, 10
    try:
        kk = int(k)
    except ValueError:
        return None
    return (base, kk) if kk >= 1 and str(kk) == k else None


def configure_metric(name: str, label_gain=None) -> str:
    """Register ranking metric ``name`` (``ndcg@k`` or ``map@k``) for the booster's
    ``evalMetric`` and return the registered name. ``ndcg`` uses ``label_gain`` (default
    ``2^g - 1``); both need ``group_ptr``. Raises ValueError for an unknown name."""
    parsed = parse_metric(name)
    if parsed is None:
        raise ValueError(f"unknown ranking metric {name!r}: use 'ndcg@k' or 'map@k' (k >= 1)")
    kind, k = parsed
    full = f"{kind}@{k}"
    gain = None if label_gain is None else [float(v) for v in label_gain]

    def stats(y, raw, w, group_ptr):
        if group_ptr is None:
            raise ValueError(f"metric {full} needs query groups (group_ptr)")
        gp = np.asarray(group_ptr, np.int64)
        if kind == "ndcg":
            vals = ndcg_per_query(y, raw, gp, k, gain)
        else:
            from ..metrics import per_query

            qid = np.repeat(np.arange(gp.size - 1), np.diff(gp))
            vals = per_query("mapAtK", np.asarray(raw, FLOAT).reshape(-1),
                             np.asarray(y, FLOAT).reshape(-1), qid, k)
        qw = query_weights(w, gp) if kind == "ndcg" else None
        if qw is None:
            return np.array([vals.sum(), float(vals.size)])
        return np.array([np.dot(qw, vals), qw.sum()])

    def finish(s):
        return float(s[0] / s[1]) if s[1] > 0 else float("nan")

    register_metric(full, stats, finish, higher_is_better=True)
    return full


def _register_defaults():
    for obj in OBJECTIVES:
        register_loss(obj, lambda num_classes, _o=obj: make_ranking_loss(_o))
    for k in (1, 3, 5, 10):
        configure_metric(f"ndcg@{k}")


_register_defaults()
