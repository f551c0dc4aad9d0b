"""Factorization machines by coordinate descent ("als", libFM's ALS learner).

Objective: (1/W) Σ_i w_i ℓ(y_i, ŷ_i) + regParam/2 (|w|² + |V|²), W = Σ_i w_i, with ℓ the
squared error / 2 (regression) or the logistic loss (classification). Each parameter in turn is
set by one Newton step on its coordinate (``cd.newton_update``), with the residuals and
q_if = Σ_l v_lf x_il cached and moved after every block: for squared loss this is libFM's
ALS (every step solves its coordinate exactly); for logistic loss the loss is re-expanded to
second order at the start of every sweep (GLMNET's scheme: a Newton outer step solved by one
sweep of coordinate descent). The intercept is not regularised.

One sweep: w0, every w_j, then every v_jf factor by factor, block by block (exclusive blocks,
see ``layout``: each block's steps equal the sequential ones). Training stops after
``maxIter`` sweeps, or earlier when the objective at the start of a sweep decreased by less
than ``tol`` (relative) over the previous sweep.
"""
from __future__ import annotations

import time

import numpy as np

from .._dtypes import FLOAT
from .cd import FACTOR, LINEAR, factor_cache
from .rng import param_rng
from .solver import (
    LOGISTIC,
    SQUARED,
    NewtonRule,
    RowCache,
    fm_predict_cached,
    update_blocks,
)
from .watch import end_iteration, init_from, stalled

__all__ = ["run_als", "init_params", "NewtonSweeps"]


class NewtonSweeps:
    """The coordinate-descent sweeps' shared part (FM's and FFM's ``als``): the rows' total
    weight ``W`` (summed over the ranks), the Newton step rule, and each sweep's start.

    :meth:`head` appends the objective to ``hist["objective"]``; when it moved by at most
    ``tol`` (relative) since the last sweep it sets :attr:`stalled` (the solver stops there),
    else it takes the intercept's and the linear weights' Newton steps.
    """

    def __init__(self, data, rows, coll, reg, tol: float, fit_w0: bool, fit_linear: bool):
        self.data, self.rows, self.coll, self.reg, self.tol = data, rows, coll, reg, tol
        self.fit_w0, self.fit_linear = fit_w0, fit_linear
        (self.W,) = data.rb.sums(coll, rows.w)
        self.rule = NewtonRule(self.W, reg)
        self.prev = None
        self.stalled = False

    def head(self, w0: float, w, Vt, hist: dict) -> float:
        """Start a sweep; returns the new intercept."""
        data, rows, coll = self.data, self.rows, self.coll
        obj = rows.objective(coll, data.rb, self.W, self.reg, w, Vt)
        hist["objective"].append(float(obj))
        self.stalled = stalled(self.prev, obj, self.tol)
        self.prev = obj
        if self.stalled:
            return w0
        if self.fit_w0:
            w0 = rows.newton_intercept(coll, data.rb, w0, self.W)
        if self.fit_linear:
            update_blocks(data, range(data.n_blocks), LINEAR, w, 0, None, None, rows, coll,
                          self.rule)
        return w0


def init_params(seed: int, k: int, d: int, init_std: float):
    """w0 = 0, w = 0, Vt ~ N(0, initStd²) (float64 (k, d)) from the shared generator."""
    rng = param_rng(seed)
    return 0.0, np.zeros(d, FLOAT), np.ascontiguousarray(
        rng.normal(0.0, float(init_std), size=(k, d)), FLOAT)


def run_als(data, y, weights, params: dict, coll, watch=None):
    """Coordinate descent on this rank's rows; every rank returns the same parameters.

    Returns
    -------
    (samples dict with S = 1: w0 (1,), w float32 (1, d), V float32 (1, d, k)), history;
    with early stopping (``watch``) the parameters at the best sweep.
    """
    k, d = int(params["factorSize"]), data.d
    reg, tol = float(params["regParam"]), float(params["tol"])
    loss = LOGISTIC if params["task"] == "classification" else SQUARED
    fit_w0, fit_linear = bool(params["fitIntercept"]), bool(params["fitLinear"])
    w0, w, Vt = init_from(params.get("init"),
                          init_params(int(params["seed"]), k, d, float(params["initStd"])))
    Q = np.zeros((k, data.n), FLOAT)
    factor_cache(data.indptr, data.indices, data.data, Vt, Q)
    pred = np.empty(data.n, FLOAT)
    fm_predict_cached(data.indptr, data.indices, data.data, w0, w, Vt, Q, pred)
    rows = RowCache(y, weights, loss, pred)
    sweeps = NewtonSweeps(data, rows, coll, reg, tol, fit_w0, fit_linear)
    blocks = range(data.n_blocks)
    hist = {"objective": [], "seconds": []}
    if watch is not None:
        hist["valid_metric"] = watch.history
    on_iteration = params.get("on_iteration")  # f(hist) after each iteration
    t0 = time.perf_counter()
    for _ in range(int(params["maxIter"])):
        w0 = sweeps.head(w0, w, Vt, hist)
        if sweeps.stalled:
            break
        for f in range(k):
            update_blocks(data, blocks, FACTOR, Vt[f], 0, Q[f], Q[f], rows, coll, sweeps.rule)
        stop = watch is not None and watch.observe(len(hist["seconds"]), w0, w, Vt)
        end_iteration(hist, t0, on_iteration)
        if stop:
            break
    if watch is not None and watch.finish(hist):
        w0, w, Vt = watch.best_state
    samples = {"w0": np.array([w0], FLOAT), "w": w.astype(np.float32)[None, :],
               "V": Vt.T.astype(np.float32)[None, :, :]}
    return samples, hist
