"""Validation rows of an FM fit: the metric after every sweep / epoch, early stopping, and the
starting point of a warm start.

:class:`ValidationWatch` scores the rows a ``validationIndicatorCol`` held out: RMSE
(regression) or log loss (classification) of the model as it will predict, so for MCMC the
mean of ``link(ŷ_s)`` over the samples kept so far (before the first kept sample: the current
sample alone, which never counts as the best), for ALS / AdamW the current parameters. With
``earlyStoppingRounds = r > 0`` training stops once the metric has not improved for ``r``
sweeps and the model is the one at the best sweep (MCMC: the samples kept up to it).

The sums over the validation rows are fixed-order sums (``order``) as every other sum, so
every rank sees the same metric and stops at the same sweep, whatever the number of ranks.
:func:`end_iteration` is the rest of what every solver records after a sweep or epoch.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .cd import factor_cache
from .solver import fm_predict_cached

__all__ = ["ValidationWatch", "link_values", "init_from", "log_losses", "log_losses_naive",
           "end_iteration"]

_EPS = 1e-15


@njit(cache=True, nogil=True)
def log_losses(p, y, w, out):
    """out_i = -w_i (y_i log p_i + (1 - y_i) log(1 - p_i)), p clipped to [1e-15, 1 - 1e-15]
    (a compiled loop: the same bits for a row wherever it sits in the array)."""
    for i in range(p.shape[0]):
        q = min(max(p[i], _EPS), 1.0 - _EPS)
        out[i] = -w[i] * (y[i] * math.log(q) + (1.0 - y[i]) * math.log1p(-q))


def log_losses_naive(p, y, w):
    """Slow twin of :func:`log_losses`."""
    q = np.clip(np.asarray(p, FLOAT), _EPS, 1.0 - _EPS)
    return -np.asarray(w) * (y * np.log(q) + (1.0 - y) * np.log1p(-q))


def end_iteration(hist: dict, t0: float, on_iteration) -> None:
    """After a sweep or epoch: the seconds since ``t0`` (``time.perf_counter()``) appended
    to ``hist["seconds"]``, then the progress callback ``on_iteration(hist)``, if any."""
    hist["seconds"].append(time.perf_counter() - t0)
    if on_iteration is not None:
        on_iteration(hist)


def stalled(prev, value: float, tol: float) -> bool:
    """Whether an iterative solver stops: its objective (or mean loss) ``value`` moved by at
    most ``tol`` relative to the previous one (``prev``; None on the first iteration)."""
    return prev is not None and abs(prev - value) <= tol * max(abs(prev), 1e-300)


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

    def __init__(self, valid, link: str, rounds: int, coll, average: bool):
        self.v = valid
        self.link = str(link)
        self.rounds = int(rounds)
        self.coll = coll
        self.average = bool(average)
        self.vw = np.ones(valid.n, FLOAT) if valid.w is None else np.asarray(valid.w, FLOAT)
        (self.total_weight,) = valid.rb.sums(coll, self.vw)
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
            (s,) = self.v.rb.sums(self.coll, self.vw * (p - y) ** 2)
            return math.sqrt(s / max(self.total_weight, 1e-300))
        terms = np.empty(p.size, FLOAT)
        log_losses(np.ascontiguousarray(p, FLOAT), y, self.vw, terms)
        (s,) = self.v.rb.sums(self.coll, terms)
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

    def finish(self, hist: dict) -> bool:
        """At the end of a fit: :meth:`record` into ``hist``, then whether to keep the best
        sweep's model (:attr:`truncate`)."""
        self.record(hist)
        return self.truncate
