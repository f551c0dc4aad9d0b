"""Evaluation metrics of the regression objectives, under XGBoost's names, as summable
statistics (``metrics.register_metric``): ``[weighted sum of per-row terms, weight]``.

``pred`` below is ``exp(raw)`` for the log-link metrics:

=================== ===================================================================
mae                 abs(y - raw)
quantile@a          pinball loss: a (y - raw) if y >= raw else (a - 1) (y - raw)
huber@d             0.5 z^2 if abs(z) <= d else d (abs(z) - d / 2), z = raw - y (LightGBM)
poisson-nloglik     lgamma(y + 1) + pred - y log(pred)
gamma-nloglik       y / pred + log(pred) (XGBoost's, dispersion 1)
gamma-deviance      2 (log(pred / y) + y / pred - 1) (pred and y + 1e-6, as XGBoost)
tweedie-nloglik@r   -y pred^(1-r) / (1-r) + pred^(2-r) / (2-r)
cox-nloglik         per event: log R(t) - raw (R: the risk set's sum of exp(raw); the
                    training set only, from ``cox.Cox.gradients_and_stats``)
=================== ===================================================================

``quantile``, ``huber`` and ``tweedie-nloglik`` without ``@`` take the objective's parameter
(the estimator resolves them); the names with a parameter are registered on first use.
"""
from __future__ import annotations

from math import lgamma

import numpy as np

from .._dtypes import FLOAT

_PARAMETRIC = ("quantile", "huber", "tweedie-nloglik")
PLAIN = ("mae", "poisson-nloglik", "gamma-nloglik", "gamma-deviance", "cox-nloglik")
_EPS = 1e-16
_lgamma = np.frompyfunc(lgamma, 1, 1)


def terms(name: str, y, raw) -> np.ndarray:
    """Per-row metric terms (before weighting and averaging)."""
    base, _, param = name.partition("@")
    y = np.asarray(y, FLOAT).reshape(-1)
    raw = np.asarray(raw, FLOAT).reshape(-1)
    if base == "mae":
        return np.abs(y - raw)
    if base == "quantile":
        a = float(param)
        d = y - raw
        return np.where(d >= 0, a * d, (a - 1.0) * d)
    if base == "huber":
        dl = float(param)
        z = np.abs(raw - y)
        return np.where(z <= dl, 0.5 * z * z, dl * (z - 0.5 * dl))
    pred = np.maximum(np.exp(raw), _EPS)
    if base == "poisson-nloglik":
        return _lgamma(y + 1.0).astype(FLOAT) + pred - y * np.log(pred)
    if base == "gamma-nloglik":
        return y / pred + np.log(pred)
    if base == "gamma-deviance":
        p, t = pred + 1e-6, y + 1e-6
        return 2.0 * (np.log(p / t) + t / p - 1.0)
    if base == "tweedie-nloglik":
        r = float(param)
        return -y * pred ** (1.0 - r) / (1.0 - r) + pred ** (2.0 - r) / (2.0 - r)
    raise ValueError(f"unknown regression metric {name!r}")


def is_regression_metric(name: str) -> bool:
    base, at, param = str(name).partition("@")
    if base in PLAIN:
        return not at
    if base in _PARAMETRIC and at:
        try:
            v = float(param)
        except ValueError:
            return False
        if base == "quantile":
            return 0 < v < 1
        if base == "tweedie-nloglik":
            return 1 < v < 2
        return v > 0
    return False


def _cox_stats(y, raw, w, group_ptr):
    raise ValueError("cox-nloglik needs the risk sets of the training rows: it is recorded "
                     "for the training set only (no validation metric or early stopping "
                     "with objective cox)")


def ensure_metric(name: str) -> bool:
    """Register ``name`` with ``metrics.register_metric`` if it is a regression metric;
    returns whether it is one."""
    from .metrics import _CUSTOM, register_metric

    if name in _CUSTOM:
        return True
    if name == "cox-nloglik":  # its statistics come from the Cox loss (cox.py)
        register_metric(name, _cox_stats, lambda s: float(s[0] / s[1]) if s[1] > 0
                        else float("nan"))
        return True
    if not is_regression_metric(name):
        return False

    def stats(y, raw, w, group_ptr, _n=name):
        t = terms(_n, y, raw)
        if w is None:
            return np.array([t.sum(), float(t.size)])
        wt = np.asarray(w, FLOAT).reshape(-1)
        return np.array([np.dot(wt, t), wt.sum()])

    def finish(s):
        return float(s[0] / s[1]) if s[1] > 0 else float("nan")

    register_metric(name, stats, finish, higher_is_better=False)
    return True


def default_metric(objective: str, params: dict) -> str:
    """XGBoost's default metric of each objective (LightGBM's ``huber`` for huber)."""
    name = {"absolute_error": "mae", "quantile": f"quantile@{params.get('alpha')!r}",
            "huber": f"huber@{params.get('delta')!r}", "poisson": "poisson-nloglik",
            "gamma": "gamma-nloglik",
            "tweedie": f"tweedie-nloglik@{params.get('rho')!r}"}[objective]
    ensure_metric(name)
    return name


def resolve(metric: str, objective: str, params: dict) -> str:
    """A metric name as the booster runs it: ``quantile``, ``huber`` and ``tweedie-nloglik``
    get the objective's parameter (``quantile@0.9``)."""
    if metric in _PARAMETRIC:
        key = {"quantile": "alpha", "huber": "delta", "tweedie-nloglik": "rho"}[metric]
        if key not in params:
            raise ValueError(f"evalMetric '{metric}' needs an '@' parameter (e.g. "
                             f"'{metric}@{ {'alpha': 0.5, 'delta': 1.0, 'rho': 1.5}[key]}') "
                             f"with objective {objective!r}")
        return f"{metric}@{float(params[key])!r}"
    return metric
