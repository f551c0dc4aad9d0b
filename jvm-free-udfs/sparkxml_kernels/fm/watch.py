"""Validation rows of an FM fit: the metric after every sweep / epoch, early stopping, and the
starting point of a warm start.

:class:`ValidationWatch` scores the rows a ``validationIndicatorCol`` held out: RMSE
(regression) or log loss (classification) of the model as it will predict, so for MCMC the
mean of ``link(ŷ_s)`` over the samples kept so far (before the first kept sample: the current
sample alone, which never counts as the best), for ALS / AdamW the current parameters. With
``earlyStoppingRounds = r > 0`` training stops once the metric has not improved for ``r``
sweeps and the model is the one at the best sweep (MCMC: the samples kept up to it).

The sums over the validation rows go through the solver's ``total`` (the same reduction as
every other sum), so every rank sees the same metric and stops at the same sweep.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .cd import factor_cache
from .solver import fm_predict_cached, total

__all__ = ["ValidationWatch", "link_values", "init_from"]

_EPS = 1e-15


def link_values(link: str, raw: np.ndarray) -> np.ndarray:
    """The prediction a model of this link gives for raw scores (float64 (n,)): the
    predictor's own link function."""
    from .predictor import LINKS, _link_array

    return raw if link == "identity" else _link_array(np.asarray(raw, FLOAT), LINKS[link])


def init_from(init: dict | None, seed_parts):
    """The starting (w0, w float64 (d,), Vt float64 (k, d)): ``init``'s values (a warm start,
    ``{"w0", "w", "V"}`` with V (d, k)) when given, else ``seed_parts`` (the solver's own)."""
    if init is None:
        return seed_parts
    w0 = float(init["w0"])
    w = np.array(init["w"], FLOAT).reshape(-1)
    Vt = np.ascontiguousarray(np.asarray(init["V"], FLOAT).T)
    return w0, w, Vt


class ValidationWatch:
    """The validation metric of an FM fit, per sweep, and when to stop.

    Parameters
    ----------
    valid : train.Prepared
        This rank's validation rows (possibly none).
    link : {"identity", "probit", "logistic"}
    rounds : int
        earlyStoppingRounds (0: record the metric, never stop).
    coll : the collective
    average : bool
        MCMC: the metric of the mean over kept samples.
    """

    def __init__(self, valid, link: str, rounds: int, coll, average: bool, reduce=None):
        self.v = valid
        self.link = str(link)
        self.rounds = int(rounds)
        self.coll = coll
        self.average = bool(average)
        self.reduce = reduce or (lambda *vals: total(coll, *vals))
        self.vw = np.ones(valid.n, FLOAT) if valid.w is None else np.asarray(valid.w, FLOAT)
        (self.total_weight,) = self.reduce(float(self.vw.sum()))
        self.acc = np.zeros(valid.n, FLOAT)
        self.count = 0
        self.history: list = []
        self.best = math.inf
        self.best_at = -1
        self.best_count = 0
        self.best_state = None

    def _metric(self, p: np.ndarray) -> float:
        y = self.v.y
        if self.link == "identity":
            (s,) = self.reduce(float(np.sum(self.vw * (p - y) ** 2)))
            return math.sqrt(s / max(self.total_weight, 1e-300))
        q = np.clip(p, _EPS, 1.0 - _EPS)
        (s,) = self.reduce(float(-np.sum(self.vw * (y * np.log(q) + (1 - y) * np.log1p(-q)))))
        return s / max(self.total_weight, 1e-300)

    def observe(self, it: int, w0: float, w, Vt, kept: bool = True) -> bool:
        """Score the model after sweep ``it`` (0-based); True when training should stop.
        ``kept``: MCMC kept this sweep's sample."""
        v = self.v
        k = Vt.shape[0]
        Q = np.zeros((k, v.n), FLOAT)
        raw = np.empty(v.n, FLOAT)
        if v.n:
            factor_cache(v.indptr, v.indices, v.data, Vt, Q)
            fm_predict_cached(v.indptr, v.indices, v.data, float(w0), w, Vt, Q, raw)
        out = link_values(self.link, raw)
        if self.average and kept:
            self.acc += out
            self.count += 1
        cur = self.acc / self.count if self.average and self.count else out
        metric = self._metric(cur)
        self.history.append(metric)
        if (kept or not self.average) and metric < self.best - 1e-12:
            self.best, self.best_at, self.best_count = metric, it, self.count
            if not self.average:
                self.best_state = (float(w0), np.array(w, FLOAT), np.array(Vt, FLOAT))
        return self.rounds > 0 and self.best_at >= 0 and it - self.best_at >= self.rounds

    @property
    def truncate(self) -> bool:
        """Keep the best sweep's model (early stopping on and some sweep was eligible)."""
        return self.rounds > 0 and self.best_at >= 0

    def record(self, hist: dict) -> None:
        """Add the curve and the best sweep to a solver's history."""
        hist["valid_metric"] = list(self.history)
        hist["best_iteration"] = int(self.best_at)
