"""Custom objectives and metrics: Python callables on numpy arrays, as XGBoost's ``obj`` and
``custom_metric``.

* objective ``fn(label, margin, weight) -> (grad, hess)``: float64 arrays of the rows'
  labels, margins ((n,) for one output, (n, K) for K) and weights (None when unweighted);
  it returns the gradient and hessian of the loss with respect to the margin, of the
  margin's shape, weights applied by ``fn`` itself (as XGBoost's custom objectives). Every
  value is checked: the wrong shape, a non-finite value or a hessian <= 0 on a row of
  positive weight raise an error naming the objective and the first bad row.
* metric ``fn(label, margin, weight) -> (total, weight_sum)``: two numbers that add up over
  workers (a weighted sum of per-row terms and the weight); the metric is their ratio over
  all rows, so the value does not depend on how rows are split.

A model trained with a custom objective records ``custom:<name>`` as its objective and
predicts the margin (identity transform, as XGBoost's models with a custom objective); it
predicts, saves and loads without the callable, which only training needs.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .loss import Loss, register_loss
from .metrics import register_metric

PREFIX = "custom:"


def custom_name(name: str) -> str:
    """``custom:<name>``; ``name`` non-empty, without ``[`` ``]`` ``:``."""
    name = str(name)
    if not name or any(c in name for c in "[]:") or name != name.strip():
        raise ValueError(f"custom objective/metric name must be a non-empty word without "
                         f"'[', ']' or ':', got {name!r}")
    return PREFIX + name


def _check(what, name, arr, shape):
    a = np.asarray(arr, FLOAT) if arr is not None else None
    if a is None or a.shape != shape:
        got = None if a is None else a.shape
        raise ValueError(f"custom objective {name!r} returned {what} of shape {got}; it "
                         f"must have the margin's shape {shape}")
    bad = np.flatnonzero(~np.isfinite(a.reshape(-1)))
    if bad.size:
        raise ValueError(f"custom objective {name!r} returned a non-finite {what} "
                         f"({a.reshape(-1)[bad[0]]!r} at row {bad[0] // max(1, a[0].size)})")
    return a


class CustomObjective(Loss):
    """A loss from ``fn(label, margin, weight) -> (grad, hess)`` (see the module docstring);
    base score 0 (set ``baseScore`` for another)."""

    def __init__(self, fn, name: str, n_outputs: int = 1):
        if not callable(fn):
            raise TypeError(f"custom objective must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = custom_name(name)
        self.n_outputs = int(n_outputs)

    def init_stats(self, y, w):
        return np.zeros(1, FLOAT)

    def init_from_stats(self, stats):
        return np.zeros(self.n_outputs, FLOAT)

    def transform(self, raw):
        return np.asarray(raw, FLOAT)

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        margin = np.array(raw, FLOAT)  # a copy: fn must not change the booster's scores
        shape = margin.shape
        y = np.asarray(y, FLOAT).reshape(-1)
        wt = None if w is None else np.asarray(w, FLOAT).reshape(-1)
        out = self.fn(y.copy(), margin, None if wt is None else wt.copy())
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ValueError(f"custom objective {self.name!r} must return (grad, hess), got "
                             f"{type(out).__name__}")
        g = _check("grad", self.name, out[0], shape)
        h = _check("hess", self.name, out[1], shape)
        positive = np.ones(y.size, bool) if wt is None else wt > 0
        rows = h.reshape(y.size, -1)
        bad = np.flatnonzero(positive & np.any(rows <= 0, axis=1))
        if bad.size:
            raise ValueError(f"custom objective {self.name!r} returned a hessian <= 0 "
                             f"({rows[bad[0]].min()!r} at row {bad[0]}); hessians must be > 0 "
                             f"on rows of positive weight")
        out_g[...] = g.reshape(out_g.shape)
        out_h[...] = h.reshape(out_h.shape)


class MarginOnly(Loss):
    """What a saved model with a custom objective loads as: the margin, no training."""

    def __init__(self, name: str, n_outputs: int = 1):
        self.name = name
        self.n_outputs = int(n_outputs or 1)

    def transform(self, raw):
        return np.asarray(raw, FLOAT)

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        raise ValueError(f"objective {self.name!r} is a custom objective: give its function "
                         f"(setCustomObjective) to train with it")


def register_objective(fn, name: str) -> str:
    """Register ``fn`` for ``make_loss`` and return the objective name."""
    full = custom_name(name)
    register_loss(full, lambda num_classes, _f=fn, _n=name: CustomObjective(
        _f, _n, num_classes if num_classes and num_classes > 2 else 1))
    return full


def register_custom_metric(fn, name: str, higher_is_better: bool = False) -> str:
    """Register metric ``fn`` (see the module docstring) and return its name."""
    if not callable(fn):
        raise TypeError(f"custom metric must be callable, got {type(fn).__name__}")
    full = custom_name(name)

    def stats(y, raw, w, group_ptr):
        out = fn(np.asarray(y, FLOAT).reshape(-1).copy(), np.array(raw, FLOAT),
                 None if w is None else np.asarray(w, FLOAT).reshape(-1).copy())
        a = np.asarray(out, FLOAT).reshape(-1) if out is not None else np.zeros(0)
        if a.size != 2 or not np.all(np.isfinite(a)):
            raise ValueError(f"custom metric {full!r} must return two finite numbers "
                             f"(weighted sum, weight), got {out!r}")
        return a

    register_metric(full, stats, lambda s: float(s[0] / s[1]) if s[1] > 0 else float("nan"),
                    higher_is_better)
    return full
