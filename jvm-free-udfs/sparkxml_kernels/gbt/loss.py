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
* ``transform(raw)`` -- predictions from raw scores (value, probability, class probabilities).

Hessians follow XGBoost: logistic max(p(1-p), 1e-16) w, softmax max(2 p(1-p), 1e-16) w.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT

_EPS_HESS = 1e-16
_EPS_PROB = 1e-12


def _weights(w, n):
    return None if w is None else np.asarray(w, FLOAT).reshape(n)


class Loss:
    """Base class; see the module docstring for the contract."""

    name = "base"
    n_outputs = 1
    requires_groups = False

    def init_stats(self, y, w) -> np.ndarray:
        raise NotImplementedError

    def init_from_stats(self, stats) -> np.ndarray:
        raise NotImplementedError

    def init_score(self, y, w) -> np.ndarray:
        """Base raw score(s) from this data alone: ``init_from_stats(init_stats(y, w))``."""
        return self.init_from_stats(self.init_stats(y, w))

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None) -> None:
        raise NotImplementedError

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
        p = _sigmoid(raw)
        np.subtract(p, y, out=out_g)
        np.multiply(p, 1.0 - p, out=out_h)
        np.maximum(out_h, _EPS_HESS, out=out_h)
        if w is not None:
            np.multiply(out_g, w, out=out_g)
            np.multiply(out_h, w, out=out_h)

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
        p = _softmax(raw)
        lab = np.asarray(y).astype(np.int64).reshape(-1)
        out_g[:] = p
        out_g[np.arange(lab.size), lab] -= 1.0
        np.multiply(p, 1.0 - p, out=out_h)
        np.multiply(out_h, 2.0, out=out_h)
        np.maximum(out_h, _EPS_HESS, out=out_h)
        if w is not None:
            wc = np.asarray(w, FLOAT).reshape(-1, 1)
            np.multiply(out_g, wc, out=out_g)
            np.multiply(out_h, wc, out=out_h)

    def transform(self, raw):
        """Class probabilities, float64 (n, K)."""
        return _softmax(np.asarray(raw, FLOAT).reshape(-1, self.n_outputs))

    def default_metric(self):
        return "mlogloss"


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
}


def register_loss(name: str, factory) -> None:
    """Make ``make_loss(name, num_classes)`` return ``factory(num_classes)`` (for ranking
    losses living in other modules)."""
    _REGISTRY[name] = factory


def make_loss(objective: str, num_classes: int | None = None) -> Loss:
    """Loss object for an objective name (``squared_error``, ``logistic``, ``softmax`` or a
    registered name; XGBoost spellings such as ``binary:logistic`` are accepted)."""
    key = _ALIASES.get(objective, objective)
    if key not in _REGISTRY:
        raise ValueError(f"unknown objective {objective!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[key](num_classes)
