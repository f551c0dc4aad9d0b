"""Cox proportional hazards (XGBoost's ``survival:cox``): labels are survival times, a
negative label a right-censored time ``-y``; the model predicts the hazard ratio
``exp(raw)``.

The negative partial log likelihood (Breslow's handling of ties) has, for row i at time t_i,

    grad_i = mu_i A(t_i) - d_i,    hess_i = mu_i A(t_i) - mu_i^2 B(t_i)
    A(t) = sum over events k with t_k <= t of 1 / R(t_k),   B(t) = ... 1 / R(t_k)^2
    R(t) = sum over rows j with t_j >= t of mu_j          (the risk set)

with ``mu = exp(raw)`` and ``d_i`` = 1 for an event; the gradient and hessian are then
multiplied by the row weight (the sums are unweighted, as XGBoost's). Risk sets span every
worker's rows: the distinct times of all workers form one sorted grid (gathered once, at the
base score), and each round one ``allreduce_sum`` of ``mu`` summed per grid time gives every
rank the same R. With distinct times this is XGBoost's gradient exactly; with tied event
times XGBoost adds 1 / R for the tied events sorted before the row only, here for all of
them (Breslow).
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from ..collective import LocalCollective
from .loss import Loss

_EPS_HESS = 1e-16


class Cox(Loss):
    name = "cox"
    log_link = True
    leaf_alpha = None

    def __init__(self):
        self._grid = None

    # XGBoost's base_score for survival:cox is 1 (margin 0); the partial likelihood does not
    # depend on a constant shift of the margins anyway
    def init_stats(self, y, w):
        return np.zeros(1, FLOAT)

    def init_from_stats(self, stats):
        return np.zeros(1, FLOAT)

    def init_score_collective(self, y, w, coll):
        self.setup(y, coll)
        return np.zeros(1, FLOAT)

    def setup(self, y, coll):
        """Gather the global grid of distinct times and the event counts per time."""
        y = np.asarray(y, FLOAT).reshape(-1)
        t = np.abs(y)
        local = np.unique(t)
        counts = np.zeros(coll.world_size, FLOAT)
        counts[coll.rank] = local.size
        counts = coll.allreduce_sum(counts).astype(np.int64)
        off = np.concatenate(([0], np.cumsum(counts)))
        buf = np.zeros(int(off[-1]), FLOAT)
        buf[off[coll.rank]:off[coll.rank + 1]] = local
        grid = np.unique(coll.allreduce_sum(buf))
        idx = np.searchsorted(grid, t)
        event = y > 0
        events = coll.allreduce_sum(np.bincount(idx[event], minlength=grid.size)
                                    .astype(FLOAT))
        self._grid, self._idx, self._event, self._events = grid, idx, event, events
        self._coll, self._n = coll, y.size

    def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
        self.gradients_and_stats(y, raw, w, out_g, out_h, group_ptr, None, None)

    def gradients_and_stats(self, y, raw, w, out_g, out_h, group_ptr, metric, w_metric):
        """The gradients, and with ``metric == "cox-nloglik"`` its summable statistics
        ``[sum over events of log R(t) - raw, events]``: the log R part, the same on every
        rank, is added by rank 0 only. The metric needs the training rows' risk sets, so it
        exists for the training set only."""
        if self._grid is None or self._n != np.size(y):
            self.setup(y, LocalCollective())
        raw = np.asarray(raw, FLOAT).reshape(-1)
        mu = np.exp(raw)
        E = self._coll.allreduce_sum(np.bincount(self._idx, weights=mu,
                                                 minlength=self._grid.size))
        R = np.cumsum(E[::-1])[::-1]
        stats = None
        if metric == "cox-nloglik":
            ev = self._events > 0
            shared = float(np.dot(self._events[ev], np.log(R[ev]))) if self._coll.rank == 0 \
                else 0.0
            stats = np.array([shared - raw[self._event].sum(), float(self._event.sum())],
                             FLOAT)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(self._events > 0, self._events / R, 0.0)
            inv2 = np.where(self._events > 0, self._events / (R * R), 0.0)
        A = np.cumsum(inv)[self._idx]
        B = np.cumsum(inv2)[self._idx]
        g = mu * A - self._event
        h = np.maximum(mu * A - mu * mu * B, _EPS_HESS)
        if w is not None:
            wt = np.asarray(w, FLOAT).reshape(-1)
            g, h = g * wt, h * wt
        out_g[:] = g
        out_h[:] = h
        return stats

    def transform(self, raw):
        return np.exp(np.asarray(raw, FLOAT))

    def link(self, value: float) -> float:
        return float(np.log(value))

    def default_metric(self):
        return "cox-nloglik"


def cox_gradients_naive(y, raw, w=None):
    """Row-by-row twin of :meth:`Cox.gradients` (quadratic; small tests only)."""
    y = np.asarray(y, FLOAT)
    raw = np.asarray(raw, FLOAT)
    t, mu, d = np.abs(y), np.exp(raw), (y > 0)
    n = y.size
    g, h = np.empty(n), np.empty(n)
    for i in range(n):
        a = b = 0.0
        for k in range(n):
            if d[k] and t[k] <= t[i]:
                r = mu[t >= t[k]].sum()
                a += 1.0 / r
                b += 1.0 / (r * r)
        g[i] = mu[i] * a - d[i]
        h[i] = max(mu[i] * a - mu[i] ** 2 * b, _EPS_HESS)
    wt = 1.0 if w is None else np.asarray(w, FLOAT)
    return g * wt, h * wt


def cox_nloglik(y, raw) -> float:
    """XGBoost's ``cox-nloglik``: the negative partial log likelihood (Breslow) per event."""
    y = np.asarray(y, FLOAT)
    raw = np.asarray(raw, FLOAT)
    t, mu, d = np.abs(y), np.exp(raw), y > 0
    grid, idx = np.unique(t, return_inverse=True)
    R = np.cumsum(np.bincount(idx, weights=mu, minlength=grid.size)[::-1])[::-1]
    n_events = d.sum()
    if n_events == 0:
        return float("nan")
    return float(-(raw[d] - np.log(R[idx[d]])).sum() / n_events)
