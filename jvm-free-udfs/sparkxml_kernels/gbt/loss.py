"""Objectives: initial score from reducible statistics, gradients and hessians, transforms.

Every loss exposes the same small interface, which is what the booster (and a Spark task)
calls; a ranking loss (LambdaMART) plugs in by subclassing :class:`Loss`, setting
``requires_groups = True`` and registering itself with :func:`register_loss`:

* ``n_outputs`` -- raw scores per row (trees per boosting round);
* ``init_stats(y, w)`` -- a small float64 array of sufficient statistics that can be summed
  across workers (``collective.allreduce_sum``); ``init_from_stats(stats)`` turns the summed
  statistics into the base raw score(s), shape (n_outputs,);
* ``gradients(y, raw, w, out_g, out_h, group_ptr=None)`` -- fills first and second
  derivatives of the (weighted) loss with respect to the raw scores. ``raw``, ``out_g`` and
  ``out_h`` have shape (n,) when ``n_outputs == 1`` and (n, n_outputs) otherwise.
  ``group_ptr`` (int64 (n_groups + 1,)) delimits query groups of consecutive rows; pointwise
  losses ignore it, a ranking loss computes its gradients group by group (a group never spans
  two workers);
* ``transform(raw)`` -- predictions from raw scores (value, probability, class probabilities);
* ``gradients_and_stats(y, raw, w, out_g, out_h, group_ptr, metric, w_metric)`` -- the same
  gradients, plus ``metrics.metric_stats(metric, y, raw, w_metric)`` of the SAME raw scores
  when ``metric`` is the objective's own (rmse, logloss, mlogloss), else None. The booster
  computes each round's training-set metric this way: the sigmoid/softmax the gradients
  need is shared, so recording the training history costs one ``log1p`` per row.

Hessians follow XGBoost: logistic max(p(1-p), 1e-16) w, softmax max(2 p(1-p), 1e-16) w.
The logistic and softmax gradients are compiled loops (one pass per row, no temporaries).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .._dtypes import FLOAT
from .._jit import njit
from ..threads import worth_threads

_EPS_HESS = 1e-16
_EPS_PROB = 1e-12
_EPS_METRIC = 1e-15  # metrics.py clips probabilities to [eps, 1 - eps]
_LOG_EPS = float(np.log(_EPS_METRIC))
_LOG_1MEPS = float(np.log1p(-_EPS_METRIC))


def _weights(w, n):
    return None if w is None else np.asarray(w, FLOAT).reshape(n)


class Loss:
    """Base class; see the module docstring for the contract."""

    name = "base"
    n_outputs = 1
    requires_groups = False
    # threads a loss may use for its gradients (the booster sets its ``nthread``); losses
    # that use them give the same gradients and statistics whatever the number
    n_threads = 1

    def init_stats(self, y, w) -> np.ndarray:
        raise NotImplementedError

    def init_from_stats(self, stats) -> np.ndarray:
        raise NotImplementedError

    def init_score_collective(self, y, w, coll) -> np.ndarray:
        """Base raw score(s) over every worker's rows: the summed ``init_stats`` (losses
        whose base score is not a sum, e.g. a quantile, override it)."""
        return self.init_from_stats(coll.allreduce_sum(self.init_stats(y, w)))

    def init_score(self, y, w) -> np.ndarray:
        """Base raw score(s) from this data alone: ``init_from_stats(init_stats(y, w))``."""
        return self.init_from_stats(self.init_stats(y, w))

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None) -> None:
        raise NotImplementedError

    def gradients_and_stats(self, y, raw, w, out_g, out_h, group_ptr, metric, w_metric):
        """``gradients(...)``; returns None (subclasses fuse their own metric)."""
        self.gradients(y, raw, w, out_g, out_h, group_ptr)
        return None

    def transform(self, raw) -> np.ndarray:
        raise NotImplementedError

    def default_metric(self):
        """Evaluation metric used when none is given (None: the caller must choose)."""
        return None


class SquaredError(Loss):
    """0.5 (raw - y)^2; base score = weighted mean of y."""

    name = "squared_error"

    def init_stats(self, y, w):
        y = np.asarray(y, FLOAT)
        w = _weights(w, y.size)
        if w is None:
            return np.array([y.sum(), float(y.size)], FLOAT)
        return np.array([np.dot(w, y), w.sum()], FLOAT)

    def init_from_stats(self, stats):
        s, wsum = float(stats[0]), float(stats[1])
        return np.array([s / wsum if wsum > 0 else 0.0], FLOAT)

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        np.subtract(raw, y, out=out_g)
        if w is None:
            out_h.fill(1.0)
        else:
            np.multiply(out_g, w, out=out_g)
            out_h[:] = w

    def gradients_and_stats(self, y, raw, w, out_g, out_h, group_ptr, metric, w_metric):
        self.gradients(y, raw, w, out_g, out_h, group_ptr)
        if metric != "rmse":
            return None
        # g = w (raw - y): sum w (raw - y)^2 = sum g^2 / w
        weighted = w is not None
        g = np.ascontiguousarray(out_g)  # a view for one output: contiguous, no copy
        return np.array(_sq_sum(g, w if weighted else _ONE, weighted), FLOAT)

    def transform(self, raw):
        return np.asarray(raw, FLOAT)

    def default_metric(self):
        return "rmse"


class Logistic(Loss):
    """Binary log loss on raw log-odds; labels in {0, 1}; base score = log-odds of the
    weighted positive rate."""

    name = "logistic"

    def init_stats(self, y, w):
        return SquaredError.init_stats(self, y, w)

    def init_from_stats(self, stats):
        s, wsum = float(stats[0]), float(stats[1])
        p = s / wsum if wsum > 0 else 0.5
        p = min(max(p, _EPS_PROB), 1.0 - _EPS_PROB)
        return np.array([np.log(p / (1.0 - p))], FLOAT)

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        self.gradients_and_stats(y, raw, w, out_g, out_h, group_ptr, None, None)

    def gradients_and_stats(self, y, raw, w, out_g, out_h, group_ptr, metric, w_metric):
        want = metric == "logloss"
        weighted = w is not None or (want and w_metric is not None)
        wg, wm = _weight_args(w, w_metric if want else None, y.size, weighted)
        y = np.asarray(y, FLOAT).reshape(-1)
        raw = np.asarray(raw, FLOAT).reshape(-1)
        if self.n_threads > 1 and worth_threads(np.array([y.size])):
            terms = np.empty(y.size if want else 0, FLOAT)
            _logistic_parallel(y, raw, wg, weighted, out_g, out_h, want, terms)
            s, ws = _ordered_loss_sum(terms, wm, weighted) if want else (0.0, 0.0)
        else:
            s, ws = _logistic(y, raw, wg, wm, weighted, out_g, out_h, want)
        return np.array([s, ws], FLOAT) if want else None

    def transform(self, raw):
        """Class probabilities, float64 (n, 2): [1 - p, p]."""
        p = _sigmoid(np.asarray(raw, FLOAT).reshape(-1))
        return np.column_stack([1.0 - p, p])

    def default_metric(self):
        return "logloss"


class Softmax(Loss):
    """Multiclass log loss on K raw scores per row; labels 0..K-1; one tree per class per
    round; base scores = log of the weighted class priors."""

    name = "softmax"

    def __init__(self, n_classes: int):
        if int(n_classes) < 2:
            raise ValueError(f"softmax needs numClasses >= 2, got {n_classes}")
        self.n_outputs = int(n_classes)

    def init_stats(self, y, w):
        y = np.asarray(y).reshape(-1)
        lab = y.astype(np.int64)
        if lab.size and (lab.min() < 0 or lab.max() >= self.n_outputs or np.any(lab != y)):
            raise ValueError(f"softmax labels must be integers in [0, {self.n_outputs})")
        return np.bincount(lab, weights=_weights(w, lab.size),
                           minlength=self.n_outputs).astype(FLOAT)

    def init_from_stats(self, stats):
        stats = np.asarray(stats, FLOAT)
        total = stats.sum()
        prior = stats / total if total > 0 else np.full(stats.size, 1.0 / stats.size)
        return np.log(np.maximum(prior, _EPS_PROB))

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        self.gradients_and_stats(y, raw, w, out_g, out_h, group_ptr, None, None)

    def gradients_and_stats(self, y, raw, w, out_g, out_h, group_ptr, metric, w_metric):
        want = metric == "mlogloss"
        weighted = w is not None or (want and w_metric is not None)
        wg, wm = _weight_args(w, w_metric if want else None, len(y), weighted)
        s, ws = _softmax_grad(np.asarray(y, FLOAT).reshape(-1), np.asarray(raw, FLOAT), wg, wm,
                              weighted, out_g, out_h, want)
        return np.array([s, ws], FLOAT) if want else None

    def transform(self, raw):
        """Class probabilities, float64 (n, K)."""
        return _softmax(np.asarray(raw, FLOAT).reshape(-1, self.n_outputs))

    def default_metric(self):
        return "mlogloss"


_ONE = np.ones(1, FLOAT)


def _weight_args(w, w_metric, n, weighted):
    """(gradient weights, metric weights) for the compiled kernels: arrays of n, or dummies
    when nothing is weighted."""
    if not weighted:
        return _ONE, _ONE
    wg = np.ones(n, FLOAT) if w is None else np.ascontiguousarray(w, FLOAT)
    wm = np.ones(n, FLOAT) if w_metric is None else np.ascontiguousarray(w_metric, FLOAT)
    return wg, wm


@njit(cache=True, nogil=True)
def _sq_sum(g, w, weighted):
    s = 0.0
    ws = 0.0
    for i in range(g.shape[0]):
        if not weighted:
            s += g[i] * g[i]
            ws += 1.0
        elif w[i] > 0.0:
            s += g[i] * g[i] / w[i]
            ws += w[i]
    return s, ws


@njit(cache=True, nogil=True, inline="always")
def _logistic_row(x, yi, wi):
    # (gradient, hessian, e = exp(-|x|)) of the log loss at score x: p = sigmoid(x) with exp
    # of a negative argument only
    e = np.exp(-abs(x))
    p = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
    hh = p * (1.0 - p)
    return (p - yi) * wi, (hh if hh > _EPS_HESS else _EPS_HESS) * wi, e


@njit(cache=True, nogil=True, inline="always")
def _log_likelihood(x, e, yi):
    # y log p + (1 - y) log(1 - p) at score x: log p and log(1 - p) from _logistic_row's e,
    # clipped as metrics.py clips them
    l1pe = np.log1p(e)
    lp = -l1pe if x >= 0.0 else x - l1pe          # log p
    lq = -x - l1pe if x >= 0.0 else -l1pe         # log(1 - p)
    lp = min(max(lp, _LOG_EPS), _LOG_1MEPS)
    lq = min(max(lq, _LOG_EPS), _LOG_1MEPS)
    return yi * lp + (1.0 - yi) * lq


@njit(cache=True, nogil=True)
def _logistic(y, raw, w, wm, weighted, g, h, want):
    # gradients and hessians; with ``want``, also the log loss of these scores
    s = 0.0
    ws = 0.0
    for i in range(y.shape[0]):
        g[i], h[i], e = _logistic_row(raw[i], y[i], w[i] if weighted else 1.0)
        if want:
            mi = wm[i] if weighted else 1.0
            s -= mi * _log_likelihood(raw[i], e, y[i])
            ws += mi
    return s, ws


@njit(cache=True, nogil=True, parallel=True)
def _logistic_parallel(y, raw, w, weighted, g, h, want, terms):
    # _logistic's rows over threads: each row's gradient, hessian and weighted loss term by
    # the same expressions (so the same bits); the terms are summed in row order afterwards
    # (_ordered_loss_sum), so the metric is _logistic's too, whatever the threads
    for i in prange(y.shape[0]):
        g[i], h[i], e = _logistic_row(raw[i], y[i], w[i] if weighted else 1.0)
        if want:
            terms[i] = _log_likelihood(raw[i], e, y[i])


@njit(cache=True, nogil=True)
def _ordered_loss_sum(terms, wm, weighted):
    # _logistic's metric accumulation, in its order: s -= mi * term, ws += mi
    s = 0.0
    ws = 0.0
    for i in range(terms.shape[0]):
        mi = wm[i] if weighted else 1.0
        s -= mi * terms[i]
        ws += mi
    return s, ws


@njit(cache=True, nogil=True)
def _softmax_grad(y, raw, w, wm, weighted, g, h, want):
    n, K = raw.shape
    p = np.empty(K)
    s = 0.0
    ws = 0.0
    for i in range(n):
        m = raw[i, 0]
        for k in range(1, K):
            m = max(m, raw[i, k])
        tot = 0.0
        for k in range(K):
            p[k] = np.exp(raw[i, k] - m)
            tot += p[k]
        lab = np.int64(y[i])
        wi = w[i] if weighted else 1.0
        for k in range(K):
            pk = p[k] / tot
            gk = pk - 1.0 if k == lab else pk
            hk = 2.0 * pk * (1.0 - pk)
            g[i, k] = gk * wi
            h[i, k] = (hk if hk > _EPS_HESS else _EPS_HESS) * wi
        if want:
            mi = wm[i] if weighted else 1.0
            # log p_y = (raw_y - max) - log(sum), clipped at eps as metrics.py
            s -= mi * max(raw[i, lab] - m - np.log(tot), _LOG_EPS)
            ws += mi
    return s, ws


def _sigmoid(x):
    x = np.asarray(x, FLOAT)
    # exp of a negative argument only: no overflow warnings for large |x|
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softmax(raw):
    raw = np.asarray(raw, FLOAT)
    z = raw - raw.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


_REGISTRY = {
    "squared_error": lambda num_classes: SquaredError(),
    "logistic": lambda num_classes: Logistic(),
    "softmax": lambda num_classes: Softmax(num_classes),
}
_ALIASES = {
    "reg:squarederror": "squared_error", "squarederror": "squared_error",
    "regression": "squared_error", "binary:logistic": "logistic", "binary": "logistic",
    "multi:softprob": "softmax", "multi:softmax": "softmax", "multiclass": "softmax",
    "reg:absoluteerror": "absolute_error", "l1": "absolute_error", "mae": "absolute_error",
    "regression_l1": "absolute_error", "reg:quantileerror": "quantile",
    "count:poisson": "poisson", "reg:tweedie": "tweedie", "reg:gamma": "gamma",
    "survival:cox": "cox",
}
# objectives whose name may carry parameters, "quantile[alpha=0.9]" (objectives.py, cox.py)
_REGRESSION = ("absolute_error", "huber", "quantile", "poisson", "tweedie", "gamma")


def register_loss(name: str, factory) -> None:
    """Make ``make_loss(name, num_classes)`` return ``factory(num_classes)`` (for ranking
    losses living in other modules)."""
    _REGISTRY[name] = factory


def make_loss(objective: str, num_classes: int | None = None) -> Loss:
    """Loss object for an objective name (``squared_error``, ``logistic``, ``softmax``, the
    regression objectives of ``objectives.py`` with their parameters, ``cox`` or a registered
    name; XGBoost spellings such as ``binary:logistic`` or ``count:poisson`` are accepted)."""
    key = _ALIASES.get(objective, objective)
    base = key.partition("[")[0]
    if base in _REGRESSION:
        from .objectives import make_regression_loss

        return make_regression_loss(key)
    if base == "cox":
        from .cox import Cox

        return Cox()
    if key not in _REGISTRY and key.startswith("custom:"):  # a saved custom-objective model
        from .custom import MarginOnly

        return MarginOnly(key, num_classes if num_classes and num_classes > 2 else 1)
    if key not in _REGISTRY:
        raise ValueError(f"unknown objective {objective!r}; known: "
                         f"{sorted(_REGISTRY) + list(_REGRESSION) + ['cox']}")
    return _REGISTRY[key](num_classes)
