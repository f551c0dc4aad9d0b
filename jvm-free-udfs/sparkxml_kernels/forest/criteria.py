"""scikit-learn's impurity criteria on per-node statistics (seed 003, ``tree/_criterion``).

Statistics
----------
A node (or one side of a split, or one histogram bin) is summarised by ``S`` float64 sums:

* classification (gini, entropy): ``[count, w_0, ..., w_{K-1}]``, S = K + 1: the number of
  rows and the weighted count of each class;
* regression (squared_error, friedman_mse, poisson): ``[count, w, wy, wyy, wylny]``, S = 5:
  rows, Σw, Σw·y, Σ(w·y)·y and Σw·y·ln y (poisson's node loss).

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

GINI, ENTROPY, SQUARED_ERROR, FRIEDMAN_MSE, POISSON = 0, 1, 2, 3, 4
CRITERIA = {"gini": GINI, "entropy": ENTROPY, "log_loss": ENTROPY,
            "squared_error": SQUARED_ERROR, "friedman_mse": FRIEDMAN_MSE, "poisson": POISSON}
CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss")
REGRESSION_CRITERIA = ("squared_error", "friedman_mse", "poisson")
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


def n_stats(crit: int, n_classes: int = 0) -> int:
    """S, the number of sums per node / bin (see the module docstring)."""
    return int(n_classes) + 1 if is_classification(crit) else 5


@njit(cache=True, nogil=True, inline="always")
def _log2(x):
    # scikit-learn's tree `log` is ln(x) / ln(2), not log2(x): keep its rounding
    return math.log(x) / math.log(2.0)


@njit(cache=True, nogil=True)
def node_weight(crit, st):
    """Σw of a node from its sums (classification: Σ over classes)."""
    if crit <= ENTROPY:
        s = 0.0
        for c in range(1, st.shape[0]):
            s += st[c]
        return s
    return st[W]


@njit(cache=True, nogil=True)
def impurity(crit, st, w):
    """Impurity of a node with sums ``st`` and weight ``w`` (scikit-learn's node_impurity)."""
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


@njit(cache=True, nogil=True)
def proxy(crit, left, right, wl, wr):
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
    il = impurity(crit, left, wl)
    ir = impurity(crit, right, wr)
    return -wr * ir - wl * il


@njit(cache=True, nogil=True)
def improvement(crit, w_total, wn, imp, left, right, wl, wr, il, ir):
    """Weighted impurity decrease of a chosen split (what feature importances sum)."""
    if crit == FRIEDMAN_MSE:
        diff = left[WY] / wl - right[WY] / wr
        return (wl * wr * diff * diff / (wl + wr)) / w_total
    return (wn / w_total) * (imp - (wr / wn * ir) - (wl / wn * il))


@njit(cache=True, nogil=True)
def split_children(crit, w_total, w, imp, total, left, min_dec):
    """The two children of a chosen split with left sums ``left``: (accepted, right sums,
    left and right weights and impurities, weighted impurity decrease); accepted is False
    when the decrease is below ``min_dec`` (scikit-learn's post-search leaf test)."""
    right = total - left
    wl = node_weight(crit, left)
    wr = w - wl
    il = impurity(crit, left, wl)
    ir = impurity(crit, right, wr)
    gain = improvement(crit, w_total, w, imp, left, right, wl, wr, il, ir)
    return not (gain + EPSILON < min_dec), right, wl, wr, il, ir, gain


# ------------------------------------------------------------------------------ naive twins
def impurity_naive(crit: int, y, w, n_classes: int = 0) -> float:
    """Impurity from the rows themselves (numpy, natural formulas)."""
    y = np.asarray(y, np.float64)
    w = np.asarray(w, np.float64)
    W_ = w.sum()
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
    if crit in (GINI, ENTROPY):
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
