"""Regression objectives beyond squared error: absolute, huber, quantile, poisson, tweedie,
gamma (cox lives in ``cox.py``).

Gradients and hessians are XGBoost's and LightGBM's (they agree on all of these), with ``z =
raw - y`` and ``mu = exp(raw)``, each multiplied by the row weight:

============== ======================================= ======================================
objective      gradient                                hessian
============== ======================================= ======================================
absolute_error sign(z)                                 1
huber          z if abs(z) <= delta else delta sign(z) 1 (LightGBM's ``huber``)
quantile       1 - alpha if z >= 0 else -alpha         1
poisson        mu - y                                  mu exp(maxDeltaStep)
tweedie        -y mu^(1-rho) + mu^(2-rho)              -y (1-rho) mu^(1-rho) + (2-rho) mu^(2-rho)
gamma          1 - y / mu                              y / mu
============== ======================================= ======================================

absolute_error and quantile have a zero (or undefined) curvature, so the Newton leaf value is
only a step direction: ``leaf_alpha`` tells the booster to refit every leaf to the
alpha-quantile of its rows' residuals ``y - raw`` (``leaf_quantile.py``: XGBoost's rules,
interpolated without weights, the lower weighted quantile with), as LightGBM's
``RenewTreeOutput`` and XGBoost's adaptive trees do. poisson, tweedie and gamma model
``log E[y]``: ``transform`` returns ``exp(raw)``.

An objective with parameters is named ``"name[key=value;...]"`` (``objective_name``), as the
ranking objectives are; the loss object's ``name`` (what a model records) is the plain name,
whose default parameters only matter for training.

Each compiled gradient kernel has a ``_naive`` numpy twin (:func:`gradients_naive`).
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .loss import Loss, SquaredError, _weights

LOG_LINK = ("poisson", "tweedie", "gamma", "cox")
DEFAULTS = {"huber": {"delta": 1.0}, "quantile": {"alpha": 0.5},
            "poisson": {"maxDeltaStep": 0.7}, "tweedie": {"rho": 1.5}}
_EPS_MEAN = 1e-12


def objective_name(base: str, **params) -> str:
    """``"quantile[alpha=0.9]"``: the name ``make_loss`` builds a configured loss from (the
    plain name when every parameter is the default)."""
    conf = [f"{k}={float(v)!r}" for k, v in sorted(params.items())
            if v is not None and float(v) != DEFAULTS.get(base, {}).get(k)]
    return base + (f"[{';'.join(conf)}]" if conf else "")


def parse_objective(name: str):
    """``(base, {param: float})`` from ``"tweedie[rho=1.2]"``."""
    base, _, rest = name.partition("[")
    params = dict(DEFAULTS.get(base, {}))
    if rest:
        if not rest.endswith("]"):
            raise ValueError(f"malformed objective {name!r}")
        for item in rest[:-1].split(";"):
            k, _, v = item.partition("=")
            if k not in params:
                raise ValueError(f"objective {base!r} has no parameter {k!r}")
            params[k] = float(v)
    return base, params


# ---------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def _grad_kernel(kind, y, raw, w, weighted, g, h, a, b):
    # kind: 0 absolute, 1 huber (a = delta), 2 quantile (a = alpha), 3 poisson
    # (a = exp(maxDeltaStep)), 4 tweedie (a = rho), 5 gamma
    for i in range(y.shape[0]):
        wi = w[i] if weighted else 1.0
        z = raw[i] - y[i]
        if kind == 0:
            gi = 1.0 if z > 0.0 else (-1.0 if z < 0.0 else 0.0)
            hi = 1.0
        elif kind == 1:
            gi = z if abs(z) <= a else (a if z > 0.0 else -a)
            hi = 1.0
        elif kind == 2:
            gi = 1.0 - a if z >= 0.0 else -a
            hi = 1.0
        elif kind == 3:
            mu = np.exp(raw[i])
            gi = mu - y[i]
            hi = mu * a
        elif kind == 4:
            e1 = np.exp((1.0 - a) * raw[i])
            e2 = np.exp((2.0 - a) * raw[i])
            gi = -y[i] * e1 + e2
            hi = -y[i] * (1.0 - a) * e1 + (2.0 - a) * e2
        else:
            r = y[i] * np.exp(-raw[i])
            gi = 1.0 - r
            hi = r
        g[i] = gi * wi
        h[i] = hi * wi


_KINDS = {"absolute_error": 0, "huber": 1, "quantile": 2, "poisson": 3, "tweedie": 4,
          "gamma": 5}
_ONE = np.ones(1, FLOAT)


def gradients_naive(name, y, raw, w, **params):
    """Numpy twin of the compiled kernel: ``(grad, hess)`` of objective ``name``."""
    p = dict(DEFAULTS.get(name, {}), **params)
    y = np.asarray(y, FLOAT)
    raw = np.asarray(raw, FLOAT)
    z = raw - y
    one = np.ones_like(y)
    if name == "absolute_error":
        g, h = np.sign(z), one
    elif name == "huber":
        d = p["delta"]
        g, h = np.where(np.abs(z) <= d, z, d * np.sign(z)), one
    elif name == "quantile":
        g, h = np.where(z >= 0, 1.0 - p["alpha"], -p["alpha"]), one
    elif name == "poisson":
        mu = np.exp(raw)
        g, h = mu - y, mu * np.exp(p["maxDeltaStep"])
    elif name == "tweedie":
        rho = p["rho"]
        g = -y * np.exp((1 - rho) * raw) + np.exp((2 - rho) * raw)
        h = -y * (1 - rho) * np.exp((1 - rho) * raw) + (2 - rho) * np.exp((2 - rho) * raw)
    elif name == "gamma":
        g, h = 1.0 - y / np.exp(raw), y / np.exp(raw)
    else:
        raise ValueError(f"unknown objective {name!r}")
    wt = 1.0 if w is None else np.asarray(w, FLOAT)
    return g * wt, h * wt


# ---------------------------------------------------------------------------- losses
class PointwiseRegression(Loss):
    """One of the objectives of the module docstring; ``params`` as ``DEFAULTS``."""

    log_link = False
    leaf_alpha = None  # refit leaves to this quantile of the residuals (absolute, quantile)

    def __init__(self, name: str, **params):
        self.name = name
        self.params = dict(DEFAULTS.get(name, {}), **params)
        self._kind = _KINDS[name]
        self.log_link = name in LOG_LINK
        a = b = 0.0
        if name == "huber":
            a = self.params["delta"]
            if not a > 0:
                raise ValueError(f"huber delta must be > 0, got {a}")
        elif name == "quantile":
            a = self.params["alpha"]
            if not 0 < a < 1:
                raise ValueError(f"quantileAlpha must be in (0, 1), got {a}")
        elif name == "poisson":
            if not self.params["maxDeltaStep"] >= 0:
                raise ValueError(f"poisson maxDeltaStep must be >= 0, got "
                                 f"{self.params['maxDeltaStep']}")
            a = float(np.exp(self.params["maxDeltaStep"]))
        elif name == "tweedie":
            a = self.params["rho"]
            if not 1 < a < 2:
                raise ValueError(f"tweedieVariancePower must be in (1, 2), got {a}")
        self._a, self._b = float(a), float(b)
        if name == "absolute_error":
            self.leaf_alpha = 0.5
        elif name == "quantile":
            self.leaf_alpha = self._a

    # -- base score: XGBoost's (3.x) per objective: the weighted mean of y (its log for the
    # log-link objectives), the alpha-quantile for absolute_error / quantile (leaf rule)
    def init_stats(self, y, w):
        return SquaredError.init_stats(self, y, w)

    def init_from_stats(self, stats):
        mean = float(SquaredError.init_from_stats(self, stats)[0])
        if self.log_link:
            return np.array([np.log(max(mean, _EPS_MEAN))], FLOAT)
        return np.array([mean], FLOAT)

    def init_score_collective(self, y, w, coll):
        if self.leaf_alpha is None:
            return super().init_score_collective(y, w, coll)
        from .leaf_quantile import leaf_quantiles

        y = np.asarray(y, FLOAT).reshape(-1)
        q = leaf_quantiles(y, np.zeros(y.size, np.int64), 1, _weights(w, y.size),
                           self.leaf_alpha, coll)
        return np.array([0.0 if np.isnan(q[0]) else q[0]], FLOAT)

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        y = np.asarray(y, FLOAT).reshape(-1)
        weighted = w is not None
        wg = np.ascontiguousarray(w, FLOAT).reshape(-1) if weighted else _ONE
        _grad_kernel(self._kind, y, np.ascontiguousarray(raw, FLOAT).reshape(-1), wg,
                     weighted, out_g, out_h, self._a, self._b)

    def transform(self, raw):
        raw = np.asarray(raw, FLOAT)
        return np.exp(raw) if self.log_link else raw

    def link(self, value: float) -> float:
        """The raw score of a prediction ``value`` (XGBoost's base_score -> base margin)."""
        return float(np.log(value)) if self.log_link else float(value)

    def default_metric(self):
        from .regression_metrics import default_metric

        return default_metric(self.name, self.params)


def make_regression_loss(objective: str) -> PointwiseRegression:
    """The loss of ``"quantile"``, ``"quantile[alpha=0.9]"``, ... (see ``parse_objective``)."""
    base, params = parse_objective(objective)
    if base not in _KINDS:
        raise ValueError(f"unknown regression objective {objective!r}")
    return PointwiseRegression(base, **params)
