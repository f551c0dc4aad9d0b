"""scikit-learn's impurity criteria on per-node statistics (seed 003, ``tree/_criterion``).

Statistics
----------
A node (or one side of a split, or one histogram bin) is summarised by ``S`` float64 sums:

* classification (gini, entropy): ``[count, w_0, ..., w_{K-1}]``, S = K + 1: the number of
  rows and the weighted count of each class;
* regression (squared_error, friedman_mse, poisson): ``[count, w, wy, wyy, wylny]``, S = 5:
  rows, Σw, Σw·y, Σ(w·y)·y and Σw·y·ln y (poisson's node loss);
* absolute_error: ``[count, w_0, ..., w_{K-1}]`` as classification, with class ``k`` the
  ``k``-th smallest distinct target value ``yv[k]``: a node's weighted median and absolute
  deviation need the multiset of its targets, which these weights are, and they sum across
  rows and workers like class weights (:func:`median_abs_error`).

Every formula is written in scikit-learn's operation order (``node_impurity``,
``children_impurity``, ``proxy_impurity_improvement``, ``impurity_improvement``), so equal
sums give bit-equal proxies and ties compare as they do there. With integer weights and
targets all sums are exact whatever the order rows were added in.

Differences: poisson's node loss is Σw·y·ln y - Σw·y·ln(mean) from the sums (scikit-learn adds
w·xlogy(y, y/mean) row by row): the same up to rounding, and exactly 0 for a node whose
targets are all equal. friedman_mse selects splits by Friedman's proxy
(w_R s_L - w_L s_R)² / (w_L w_R) and reports Friedman's improvement; scikit-learn >= 1.9 maps
it to squared_error (the same splits for one output) and reports the squared-error one.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit

GINI, ENTROPY, SQUARED_ERROR, FRIEDMAN_MSE, POISSON, ABSOLUTE_ERROR = 0, 1, 2, 3, 4, 5
CRITERIA = {"gini": GINI, "entropy": ENTROPY, "log_loss": ENTROPY,
            "squared_error": SQUARED_ERROR, "friedman_mse": FRIEDMAN_MSE, "poisson": POISSON,
            "absolute_error": ABSOLUTE_ERROR}
CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss")
REGRESSION_CRITERIA = ("squared_error", "friedman_mse", "poisson", "absolute_error")
NO_VALUES = np.zeros(0)  # ``yv`` of the criteria that do not need target values
EPSILON = float(np.finfo(np.float64).eps)
LN2 = math.log(2.0)
# regression statistic slots
COUNT, W, WY, WYY, WYLNY = 0, 1, 2, 3, 4


def criterion_id(name: str) -> int:
    if name not in CRITERIA:
        raise ValueError(f"unknown criterion {name!r}; one of {sorted(CRITERIA)}")
    return CRITERIA[name]


def is_classification(crit: int) -> bool:
    return crit in (GINI, ENTROPY)


@njit(cache=True, nogil=True, inline="always")
def per_label(crit):
    """The sums are per-label weights (classification, and absolute_error's target values)."""
    return crit <= ENTROPY or crit == ABSOLUTE_ERROR


def n_stats(crit: int, n_classes: int = 0) -> int:
    """S, the number of sums per node / bin (see the module docstring); ``n_classes`` is the
    number of distinct target values for absolute_error."""
    return int(n_classes) + 1 if per_label(crit) else 5


@njit(cache=True, nogil=True, inline="always")
def _log2(x):
    # scikit-learn's tree `log` is ln(x) / ln(2), not log2(x): keep its rounding
    return math.log(x) / math.log(2.0)


# The helpers below take arrays, allocate nothing and are called per candidate split:
# ``_nrt=False`` compiles them without reference counting, which numba otherwise keeps (an
# atomic incref and decref per array argument and call) in functions with several returns.
@njit(cache=True, nogil=True, _nrt=False)
def node_weight(crit, st):
    """Σw of a node from its sums (per-label sums: Σ over labels)."""
    if per_label(crit):
        s = 0.0
        for c in range(1, st.shape[0]):
            s += st[c]
        return s
    return st[W]


@njit(cache=True, nogil=True, _nrt=False)
def median_abs_error(st, w, yv):
    """(weighted median, Σ w·|y - median|) of the targets of per-label sums ``st`` (K + 1,)
    with weight ``w``, ``yv`` float64 (K,) the ascending target values.

    scikit-learn's MAE criterion (``precompute_absolute_errors``): the median is the smallest
    target whose cumulative weight exceeds half the total, or the midpoint ``(a + b) / 2`` of
    the two targets around a cumulative weight of exactly half. The absolute error is summed
    here per distinct value; scikit-learn's pinball identity gives the same number when the
    weights and targets are integers (every term exact), up to rounding otherwise."""
    half = 0.5 * w
    c = 0.0
    prev = -1
    med = 0.0
    for k in range(yv.shape[0]):
        wk = st[1 + k]
        if wk <= 0.0:
            continue
        if c == half and prev >= 0:
            med = (yv[prev] + yv[k]) / 2
            break
        c += wk
        if c > half:
            med = yv[k]
            break
        prev = k
    ae = 0.0
    for k in range(yv.shape[0]):
        wk = st[1 + k]
        if wk > 0.0:
            ae += wk * abs(yv[k] - med)
    return med, ae


@njit(cache=True, nogil=True, _nrt=False)
def impurity(crit, st, w, yv):
    """Impurity of a node with sums ``st`` and weight ``w`` (scikit-learn's node_impurity);
    ``yv`` the target values of absolute_error's labels (else unused)."""
    if crit == ABSOLUTE_ERROR:
        return median_abs_error(st, w, yv)[1] / w
    if crit == GINI:
        sq = 0.0
        for c in range(1, st.shape[0]):
            sq += st[c] * st[c]
        return 1.0 - sq / (w * w)
    if crit == ENTROPY:
        e = 0.0
        for c in range(1, st.shape[0]):
            cnt = st[c]
            if cnt > 0.0:
                cnt /= w
                e -= cnt * _log2(cnt)
        return e
    if crit == POISSON:
        wy = st[WY]
        if wy <= EPSILON:
            return np.inf
        if st[WYY] * w == wy * wy:  # all targets equal: the loss is exactly 0
            return 0.0
        return (st[WYLNY] - wy * math.log(wy / w)) / w
    mean = st[WY] / w
    return st[WYY] / w - mean * mean


@njit(cache=True, nogil=True, _nrt=False)
def proxy(crit, left, right, wl, wr, yv):
    """scikit-learn's proxy_impurity_improvement of a candidate split (larger is better)."""
    if crit == SQUARED_ERROR:
        sl = left[WY]
        sr = right[WY]
        return (sl * sl) / wl + (sr * sr) / wr
    if crit == FRIEDMAN_MSE:
        diff = wr * left[WY] - wl * right[WY]
        return diff * diff / (wl * wr)
    if crit == POISSON:
        sl = left[WY]
        sr = right[WY]
        if sl <= EPSILON or sr <= EPSILON:
            return -np.inf
        pl = 0.0 - sl * _log2(sl / wl)
        pr = 0.0 - sr * _log2(sr / wr)
        return -pl - pr
    il = impurity(crit, left, wl, yv)
    ir = impurity(crit, right, wr, yv)
    return -wr * ir - wl * il


@njit(cache=True, nogil=True, _nrt=False)
def improvement(crit, w_total, wn, imp, left, right, wl, wr, il, ir):
    """Weighted impurity decrease of a chosen split (what feature importances sum)."""
    if crit == FRIEDMAN_MSE:
        diff = left[WY] / wl - right[WY] / wr
        return (wl * wr * diff * diff / (wl + wr)) / w_total
    return (wn / w_total) * (imp - (wr / wn * ir) - (wl / wn * il))


@njit(cache=True, nogil=True)
def split_children(crit, w_total, w, imp, total, left, min_dec, yv):
    """The two children of a chosen split with left sums ``left``: (accepted, right sums,
    left and right weights and impurities, weighted impurity decrease); accepted is False
    when the decrease is below ``min_dec`` (scikit-learn's post-search leaf test)."""
    right = total - left
    wl = node_weight(crit, left)
    wr = w - wl
    il = impurity(crit, left, wl, yv)
    ir = impurity(crit, right, wr, yv)
    gain = improvement(crit, w_total, w, imp, left, right, wl, wr, il, ir)
    return not (gain + EPSILON < min_dec), right, wl, wr, il, ir, gain


# ------------------------------------------------------------------------------ naive twins
def median_naive(y, w) -> float:
    """Weighted median of rows ``y`` with weights ``w`` > 0 by sorting them: the first
    target whose cumulative weight passes half the total; the midpoint when the weight
    before it is exactly half (twin of :func:`median_abs_error`)."""
    order = np.argsort(np.asarray(y, np.float64), kind="stable")
    ys = np.asarray(y, np.float64)[order]
    cw = np.cumsum(np.asarray(w, np.float64)[order])
    half = 0.5 * cw[-1]
    k = int(np.argmax(cw > half))
    if k > 0 and cw[k - 1] == half:
        return float((ys[k - 1] + ys[k]) / 2)
    return float(ys[k])


def impurity_naive(crit: int, y, w, n_classes: int = 0) -> float:
    """Impurity from the rows themselves (numpy, natural formulas)."""
    y = np.asarray(y, np.float64)
    w = np.asarray(w, np.float64)
    W_ = w.sum()
    if crit == ABSOLUTE_ERROR:
        return float((w * np.abs(y - median_naive(y, w))).sum() / W_)
    if crit in (GINI, ENTROPY):
        p = np.array([w[y == c].sum() for c in range(n_classes)]) / W_
        if crit == GINI:
            return float(1.0 - (p * p).sum())
        p = p[p > 0]
        return float(-(p * np.log(p) / math.log(2.0)).sum())
    mean = (w * y).sum() / W_
    if crit == POISSON:
        if (w * y).sum() <= EPSILON:
            return math.inf
        t = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0) / mean), 0.0)
        return float((w * t).sum() / W_)
    return float((w * (y - mean) ** 2).sum() / W_)


def proxy_naive(crit: int, yl, wl, yr, wr, n_classes: int = 0) -> float:
    """The proxy as minus the children's weighted impurity, up to a per-node constant; for
    squared error and poisson the constant is dropped the way scikit-learn drops it."""
    yl, wl, yr, wr = (np.asarray(a, np.float64) for a in (yl, wl, yr, wr))
    WL, WR = wl.sum(), wr.sum()
    if crit in (GINI, ENTROPY, ABSOLUTE_ERROR):
        return -WR * impurity_naive(crit, yr, wr, n_classes) - WL * impurity_naive(
            crit, yl, wl, n_classes)
    sl, sr = (wl * yl).sum(), (wr * yr).sum()
    if crit == SQUARED_ERROR:
        return sl * sl / WL + sr * sr / WR
    if crit == FRIEDMAN_MSE:
        return (WR * sl - WL * sr) ** 2 / (WL * WR)
    if sl <= EPSILON or sr <= EPSILON:
        return -math.inf
    return sl * math.log(sl / WL) / math.log(2.0) + sr * math.log(sr / WR) / math.log(2.0)
