"""Bayesian factorization machines by Gibbs sampling (Rendle's MCMC in libFM, as myFM runs it).

Model and priors (libFM, TIST 2012; the constants are myFM's defaults):

* y_i ~ N(ŷ(x_i), 1 / (α w_i)) for regression (w_i: row weight, 1 by default: a row of
  integer weight w is sampled as w copies of the row); for binary
  classification a probit model: a latent z_i ~ N(ŷ(x_i), 1) with y_i = [z_i > 0], α = 1;
  for ordinal regression (``loss`` "ordinal") an ordered probit model: class c when
  γ_{c-1} < z_i ≤ γ_c, α = 1, the cutpoints γ and the z_i drawn after the other parameters
  of each sweep (``ordinal``);
* w0 ~ N(0, 1 / reg0) with reg0 = 1;
* w_j ~ N(μ_w[g], 1/λ_w[g]) and v_jf ~ N(μ_v[g, f], 1/λ_v[g, f]), g the group of feature j
  (``fieldStarts``; one group without);
* α ~ Gamma(α0/2, β0/2), λ ~ Gamma(α0/2, β0/2), μ ~ N(μ0, 1/(γ0 λ)) with
  α0 = β0 = γ0 = 1, μ0 = 0. Initial values: α = 1, λ = 1e-5, μ = 0, w = 0, v ~ N(0, initStd²).

One sweep, in myFM's order: (classification) draw every z_i from its truncated normal; α; w0;
λ_w, μ_w; every w_j; λ_v, μ_v; then every v_jf, factor by factor. Each parameter is drawn from
its Gaussian full conditional (``cd.gaussian_update``) with the cached residuals and q_if,
block by block (exclusive blocks, see ``layout``: a block's draws are independent given the
rest, so drawing them together is the sequential sampler). Sweeps after ``burnIn`` are kept
every ``thinning`` sweeps; the prediction averages over the kept samples.

All draws of global parameters come from one PCG64 generator seeded with ``seed`` on every
rank; latent z_i come from per-row uniforms (``rng``), so the chain does not depend on the
number of workers (up to the rounding of the reduced sums).
"""
from __future__ import annotations

import time

import numpy as np

from .._dtypes import FLOAT
from .cd import FACTOR, LINEAR, factor_cache
from .relation import RelationalData
from .rng import STREAM_PROBIT, param_rng, sample_probit_targets, uniforms
from .solver import (
    SQUARED,
    GibbsRule,
    RowCache,
    fm_predict_cached,
    update_blocks,
)
from .watch import end_iteration, init_from

ALPHA_0 = BETA_0 = GAMMA_0 = 1.0
MU_0 = 0.0
REG_0 = 1.0
LAMBDA_INIT = 1e-5

__all__ = ["run_mcmc"]


def _draw_lambda_mu(rng, values, group_of, n_groups, mu, lam):
    """λ_g then μ_g of each group from the current values (myFM's order and formulas)."""
    counts = np.bincount(group_of, minlength=n_groups).astype(FLOAT)
    dev2 = np.bincount(group_of, weights=(values - mu[group_of]) ** 2, minlength=n_groups)
    shape = (ALPHA_0 + counts) / 2.0
    rate = (BETA_0 + dev2) / 2.0
    lam[:] = rng.gamma(shape, 1.0 / rate)
    sums = np.bincount(group_of, weights=values, minlength=n_groups)
    prec = lam * (GAMMA_0 + counts)
    mean = lam * (GAMMA_0 * MU_0 + sums) / prec
    mu[:] = mean + rng.standard_normal(n_groups) / np.sqrt(prec)


def draw_noise_precision(rng, w_total: float, sq: float, rmse: list) -> float:
    """Gibbs draw of the noise precision alpha from its Gamma posterior, given the weighted
    residual sum of squares ``sq``; a row of weight w counts as w copies of the row (shape:
    the sum of weights ``w_total``). The training RMSE is appended to ``rmse``."""
    rmse.append(float(np.sqrt(sq / max(w_total, 1e-300))))
    return float(rng.gamma((ALPHA_0 + w_total) / 2.0, 2.0 / (BETA_0 + sq)))


def draw_intercept(rows, rng, w0: float, alpha: float, w_total: float, lin: float) -> float:
    """Gibbs draw of the intercept from its Normal posterior (prior precision ``REG_0``),
    given ``lin`` = sum w r at the current one; the rows' residuals move with it."""
    prec = alpha * w_total + REG_0
    new = alpha * (w0 * w_total - lin) / prec + rng.standard_normal() / np.sqrt(prec)
    rows.r += new - w0
    return float(new)


def noise_and_intercept(rows, rng, coll, rb, w0: float, w_total: float, hist: dict,
                        unit_noise: bool, fit_w0: bool) -> tuple[float, float]:
    """A Gibbs sweep's first draws: the noise precision alpha from the rows' residual sums
    (1 under ``unit_noise``: probit and ordinal latents have unit variance), appended to
    ``hist["alpha"]``, then the intercept when ``fit_w0``. Returns ``(alpha, w0)``."""
    sq, lin = rows.residual_sums(coll, rb)
    alpha = 1.0 if unit_noise else draw_noise_precision(rng, w_total, sq, hist["train_rmse"])
    hist["alpha"].append(alpha)
    if fit_w0:
        w0 = draw_intercept(rows, rng, w0, alpha, w_total, lin)
    return alpha, w0


def probit_targets_step(rows, seed: int, it: int, rids, z) -> None:
    """The probit likelihood's Gibbs step of sweep ``it``: latent targets ``z`` (float64 (n,))
    drawn around the rows' current predictions from the rows' own uniforms, then made the
    targets of ``rows`` (a solver.RowCache)."""
    sample_probit_targets(rows.pred(), rows.y, uniforms(seed, STREAM_PROBIT, it, rids), z)
    rows.set_targets(z.copy())


class _OrdinalStep:
    """The ordered probit part of a sweep (``ordinal``): labels as class indices, the
    cutpoint sampler, and the latent targets drawn between the cutpoints."""

    def __init__(self, params, y, rids, rb, coll, seed):
        from . import ordinal as O

        self.O = O
        self.classes = np.asarray(params["classes"], FLOAT)
        self.cls = np.searchsorted(self.classes, y).astype(np.int64)
        self.sampler = O.CutpointSampler(self.classes.size)
        self.rids, self.rb, self.coll, self.seed = rids, rb, coll, seed
        self.kept: list = []
        self.gamma = np.zeros(self.classes.size - 1, FLOAT)

    def totals(self, rows):
        pred = rows.pred()
        return lambda gamma: self.rb.total(self.coll, lambda lo, hi: self.O.cutpoint_sums(
            pred[lo:hi], self.cls[lo:hi], gamma), 3 * gamma.size)

    def latents(self, rows, gamma, counter: int) -> None:
        self.gamma = gamma
        z = np.empty(self.cls.size, FLOAT)
        self.O.sample_ordinal_targets(rows.pred(), self.cls, gamma, uniforms(
            self.seed, self.O.STREAM_ORDINAL, counter, self.rids), z)
        rows.set_targets(z)


def _caches(data, w0, w, Vt):
    """(Q float64 (k, n), pred float64 (n,)): the factor caches and the prediction."""
    if isinstance(data, RelationalData):
        return data.caches(w0, w, Vt)
    Q = np.zeros((Vt.shape[0], data.n), FLOAT)
    factor_cache(data.indptr, data.indices, data.data, Vt, Q)
    pred = np.empty(data.n, FLOAT)
    fm_predict_cached(data.indptr, data.indices, data.data, w0, w, Vt, Q, pred)
    return Q, pred


def _update(data, mode, theta, q, rows, coll, rule):
    """One Gibbs update of theta (w, or a row of Vt with its cache q) over every feature."""
    if isinstance(data, RelationalData):
        data.update(mode, theta, q, rows, coll, rule)
    else:
        update_blocks(data, range(data.n_blocks), mode, theta, 0, q, q, rows, coll, rule)


def run_mcmc(data, y, weights, rids, params: dict, coll, group_of, n_groups: int, watch=None):
    """Run the Gibbs sampler on this rank's rows; every rank returns the same samples.

    Parameters
    ----------
    data : layout.BlockedData, or relation.RelationalData (relation blocks)
    y, weights : float64 (n,) labels (0/1 for classification) and row weights (or None)
    rids : int64 (n,) row identities (per-row random streams)
    params : dict with factorSize, maxIter, burnIn, thinning, initStd, seed, task,
        fitIntercept, fitLinear
    group_of : int (d,) hyper-prior group of each feature
    watch : watch.ValidationWatch, optional
        Scores the mean of the kept samples after every sweep; with early stopping the
        samples are those kept up to the best sweep.

    Returns
    -------
    (samples dict: w0 (S,), w float32 (S, d), V float32 (S, d, k)), history dict
    """
    k, d = int(params["factorSize"]), data.d
    n_iter, burn, thin = int(params["maxIter"]), int(params["burnIn"]), int(params["thinning"])
    classify = params["task"] == "classification"
    ordinal = params.get("loss") == "ordinal"
    fit_w0, fit_linear = bool(params["fitIntercept"]), bool(params["fitLinear"])
    seed = int(params["seed"])
    rng = param_rng(seed)
    # the initial factors are drawn even for a warm start: the chain's draws stay aligned
    w0, w, Vt = init_from(params.get("init"), (0.0, np.zeros(d, FLOAT), np.ascontiguousarray(
        rng.normal(0.0, float(params["initStd"]), size=(k, d)), FLOAT)))
    alpha = 1.0
    lam_w, mu_w = np.full(n_groups, LAMBDA_INIT), np.zeros(n_groups)
    lam_v, mu_v = np.full((k, n_groups), LAMBDA_INIT), np.zeros((k, n_groups))
    Q, pred = _caches(data, w0, w, Vt)
    rows = RowCache(y, weights, SQUARED, pred)
    z = np.empty(data.n, FLOAT)
    (w_total,) = data.rb.sums(coll, rows.w)
    if ordinal:
        ord_step = _OrdinalStep(params, y, rids, data.rb, coll, seed)
        ord_step.latents(rows, ord_step.sampler.start(ord_step.totals(rows)), 0)
    samples_w0, samples_w, samples_V = [], [], []
    hist = {"train_rmse": [], "alpha": [], "seconds": []}
    if watch is not None:
        hist["valid_metric"] = watch.history  # the same list: live progress lines see it
    on_iteration = params.get("on_iteration")  # f(hist) after each iteration
    t0 = time.perf_counter()
    for it in range(n_iter):
        if classify:
            probit_targets_step(rows, seed, it, rids, z)
        alpha, w0 = noise_and_intercept(rows, rng, coll, data.rb, w0, w_total, hist,
                                        classify or ordinal, fit_w0)
        if fit_linear:
            _draw_lambda_mu(rng, w, group_of, n_groups, mu_w, lam_w)
            _update(data, LINEAR, w, None, rows, coll,
                    GibbsRule(alpha, lam_w[group_of], mu_w[group_of], rng))
        for f in range(k):
            _draw_lambda_mu(rng, Vt[f], group_of, n_groups, mu_v[f], lam_v[f])
        for f in range(k):
            _update(data, FACTOR, Vt[f], Q[f], rows, coll,
                    GibbsRule(alpha, lam_v[f][group_of], mu_v[f][group_of], rng))
        if ordinal:  # myFM's order: the cutpoints and latents after the FM parameters
            ord_step.latents(rows, ord_step.sampler.step(ord_step.totals(rows), rng), it + 1)
            hist.setdefault("mh_accepted", []).append(float(ord_step.sampler.accepted))
        kept = it >= burn and (it - burn) % thin == 0
        if kept:
            if ordinal:
                ord_step.kept.append(ord_step.gamma.copy())
            samples_w0.append(w0)
            samples_w.append(w.astype(np.float32))
            samples_V.append(Vt.T.astype(np.float32))
        stop = watch is not None and watch.observe(it, w0, w, Vt, kept)
        end_iteration(hist, t0, on_iteration)
        if stop:
            break
    if watch is not None and watch.finish(hist):
        n = watch.best_count
        samples_w0, samples_w, samples_V = samples_w0[:n], samples_w[:n], samples_V[:n]
    if not samples_w0:  # burnIn >= maxIter is refused by the params; keep the last state
        samples_w0, samples_w, samples_V = [w0], [w.astype(np.float32)], \
            [Vt.T.astype(np.float32)]
    samples = {"w0": np.asarray(samples_w0, FLOAT), "w": np.stack(samples_w),
               "V": np.stack(samples_V)}
    if ordinal:
        cuts = ord_step.kept[:len(samples_w0)] or [ord_step.gamma.copy()]
        samples.update(cutpoints=np.stack(cuts), classes=ord_step.classes)
    hist.update(lambda_w=lam_w.tolist(), mu_w=mu_w.tolist(), lambda_v=lam_v.tolist(),
                mu_v=mu_v.tolist(), n_samples=len(samples_w0))
    return samples, hist
