"""Field-aware factorization machines by coordinate descent ("als") and Gibbs sampling ("mcmc").

The FFM model (``ffm``) is multilinear: for any single parameter θ (w0, a w_j or a
V[j, f, c]) the prediction of row i is g_i + θ h_i, with h_i free of θ. With x̃ = x √r (the
row scaled by libffm's normalisation r = 1/||x||², or r = 1) and j in field g = f(j):

* w0:        h_i = 1
* w_j:       h_i = x̃_ij
* V[j, f, c]: h_i = x̃_ij Σ_{b ≠ j in row i, f(b) = f} V[b, g, c] x̃_ib

so every per-coordinate step of FM's solvers is exact here too: a Newton step on (1/W) Σ w_i
ℓ_i + regParam/2 (‖w‖² + ‖V‖²) (``als``: libFM's ALS for squared loss, GLMNET's re-expanded
quadratic for logistic loss, ``FMClassifier``'s route) and a draw from the Gaussian full
conditional (``mcmc``: libFM's / myFM's Gibbs sampler, probit latents for classification).

Caches, per row i (float64 (m, m, k, n), m fields, k factors):

    P[f, g, c, i] = Σ_{b in row i, f(b) = f} V[b, g, c] x̃_ib

so h of V[j, f, c] (j in field g) is x̃_ij (P[f, g, c, i] - [g = f] V[j, f, c] x̃_ij): FM's
FACTOR coordinate (``cd``, q - v x) when g = f, its CROSS coordinate (x q) otherwise, and an
update of V[j, f, c] by δ moves P[g, f, c, i] by δ x̃_ij. Together with the residual cache of
``solver.RowCache`` a sweep costs O(nnz m k) plus one all-reduce per feature block and
(f, c): the memory is m² k float64 a row.

Distribution: FM's (``solver.update_blocks``). Blocks are the exclusive feature blocks
(``layout``) cut at the field starts, so each lies in one field: features of a block never
share a row, so their coordinates (for one (f, c)) are independent given the rest and one
block update is the sequential one. The per-feature sums are fixed-order sums over the 16 row
blocks, the global draws come from one generator seeded alike on every rank and the probit
latents from per-row uniforms: the model is the same, bit for bit, for any numWorkers.

One sweep: w0, every w_j, then every V[:, f, c] (f outer, c inner), feature blocks in order.
MCMC first draws (classification) the latent targets, α (regression), then the hyper-priors
of w before w and those of every V[:, f, c] before the factors (myFM's order), with one
(λ, μ) per (field of the feature, target field f, factor c).
"""
from __future__ import annotations

import time

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .als import NewtonSweeps
from .cd import CROSS, FACTOR, LINEAR, block_finish, block_stats_split
from .ffm import ffm_scores, field_of_features
from .layout import BlockedData, refine_blocks
from .mcmc import (
    ALPHA_0,
    BETA_0,
    LAMBDA_INIT,
    REG_0,
    _draw_lambda_mu,
    noise_and_intercept,
    probit_targets_step,
)
from .order import fixed_sum
from .rng import STREAM_PROBIT, param_rng, sample_probit_targets, uniforms
from .solver import (
    LOGISTIC,
    SQUARED,
    GibbsRule,
    RowCache,
    update_blocks,
)
from .watch import end_iteration

__all__ = ["ffm_factor_cache", "ffm_factor_cache_naive", "scaled_values", "ffm_blocked",
           "init_ffm_params", "run_ffm_als", "run_ffm_mcmc", "run_ffm_cd_naive"]


@njit(cache=True, nogil=True)
def ffm_factor_cache(indptr, indices, data, field_of, Vt, P):
    """P[f, g, c, i] += Σ over row i's entries of field f of Vt[g, c, j] x_ij (P: float64
    (m, m, k, n), zeros on entry; Vt: float64 (m, k, d), the factors V[j, g, c] as
    Vt[g, c, j]; field_of int32 (d,))."""
    m, k = Vt.shape[0], Vt.shape[1]
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            f = field_of[j]
            x = data[p]
            for g in range(m):
                for c in range(k):
                    P[f, g, c, i] += Vt[g, c, j] * x
    return P


def ffm_factor_cache_naive(X, field_starts, Vt):
    """Slow twin of :func:`ffm_factor_cache` on a dense (n, d) matrix: one masked product per
    (f, g, c)."""
    X = np.asarray(X, FLOAT)
    n, d = X.shape
    fo = field_of_features(field_starts, d)
    m, k = Vt.shape[0], Vt.shape[1]
    P = np.zeros((m, m, k, n))
    for f in range(m):
        cols = fo == f
        for g in range(m):
            for c in range(k):
                P[f, g, c] = X[:, cols] @ Vt[g, c, cols]
    return P


def scaled_values(indptr, data, normalize: bool) -> np.ndarray:
    """float64 (nnz,): each row's values times √r, r = 1/||x||² (1 for an empty row or
    without normalisation): the model's x̃."""
    data = np.asarray(data, FLOAT)
    if not normalize or data.size == 0:
        return data.copy()
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    sq = np.bincount(rows, weights=data * data, minlength=indptr.size - 1)
    scale = np.where(sq > 0, 1.0 / np.sqrt(np.where(sq > 0, sq, 1.0)), 1.0)
    return data * scale[rows]


def ffm_blocked(prep, field_starts, normalize: bool) -> BlockedData:
    """The rows of ``prep`` (``train.Prepared``) with values x̃ over exclusive blocks cut at
    the field starts (each block in one field)."""
    return BlockedData(prep.indptr, prep.indices,
                       scaled_values(prep.indptr, prep.data, normalize), prep.d,
                       refine_blocks(prep.segments, list(field_starts)), prep.rb)


def init_ffm_params(seed: int, d: int, m: int, k: int, init_std: float):
    """(rng, w0 = 0, w = 0, Vt ~ N(0, initStd²) float64 (m, k, d)) from the shared generator
    (the same generator MCMC goes on drawing from)."""
    rng = param_rng(seed)
    Vt = np.ascontiguousarray(rng.normal(0.0, float(init_std), size=(m, k, d)), FLOAT)
    return rng, 0.0, np.zeros(d, FLOAT), Vt


class _State:
    """The parameters, the caches and the block plan of one worker."""

    def __init__(self, data: BlockedData, field_starts, params: dict):
        self.data = data
        self.fs = [int(v) for v in field_starts]
        self.d, self.m, self.k = data.d, len(self.fs), int(params["factorSize"])
        self.field_of = field_of_features(self.fs, self.d)
        self.block_field = [int(self.field_of[data.block(b)[0]]) for b in range(data.n_blocks)]

    def caches(self, w0, w, Vt):
        """(P, pred): the factor caches and the training-time prediction."""
        data = self.data
        P = np.zeros((self.m, self.m, self.k, data.n), FLOAT)
        ffm_factor_cache(data.indptr, data.indices, data.data, self.field_of, Vt, P)
        pred = ffm_scores(data.indptr, data.indices, data.data, self.field_of, w0, w,
                          np.ascontiguousarray(Vt.transpose(2, 0, 1)), False)
        return P, pred

    def update_factor(self, Vt, f: int, c: int, P, rows, coll, rule) -> None:
        """One exact update of V[:, f, c] over every block (``solver.update_blocks`` with the
        mode and caches of each block's field)."""
        data = self.data
        theta = Vt[f, c]
        rule.draw(data.d)
        for b in range(data.n_blocks):
            g = self.block_field[b]
            mode = FACTOR if g == f else CROSS
            qh, qupd = P[f, g, c], P[g, f, c]
            fs, fe, lo, hi = data.block(b)
            sub = data.sub[b]
            parts = np.zeros((sub.size - 1, 2, fe - fs), FLOAT)
            block_stats_split(sub, data.rows, data.feats, data.vals, fs, mode, qh,
                              theta[fs:fe], rows.c1, rows.c2, rows.r, parts)
            stats = fixed_sum(coll, parts)
            block_finish(rule.kind, rule.p0, rule.p1, rule.lam, rule.mu, rule.normals,
                         stats[0], stats[1], theta, 0, fs, lo, hi, data.rows, data.feats,
                         data.vals, mode, qh, rows.r, qupd)

    def arrays(self, w0, w, V, link: str, normalize: bool) -> dict:
        return {"w0": np.asarray(w0, FLOAT), "w": np.asarray(w, FLOAT),
                "V": np.asarray(V, FLOAT), "field_starts": np.asarray(self.fs + [self.d],
                                                                       np.int64),
                "normalize": np.asarray(bool(normalize)), "link": np.asarray(link),
                "n_features": np.asarray(self.d, np.int64)}


def _as_V(Vt):
    """float64 (d, m, k) from the training layout (m, k, d)."""
    return np.ascontiguousarray(Vt.transpose(2, 0, 1))


def run_ffm_als(data: BlockedData, y, weights, params: dict, coll):
    """Coordinate descent on this rank's rows (``data`` from :func:`ffm_blocked`); every rank
    returns the same ``FFMPredictor`` arrays (w0 (), w (d,), V (d, m, k)) and history
    ({"objective", "seconds"}). Stops after maxIter sweeps, or when the objective at the start
    of a sweep changed by at most ``tol`` (relative) over one sweep."""
    st = _State(data, params["fieldStarts"], params)
    reg, tol = float(params["regParam"]), float(params["tol"])
    classify = params["task"] == "classification"
    fit_w0, fit_linear = bool(params["fitIntercept"]), bool(params["fitLinear"])
    _, w0, w, Vt = init_ffm_params(int(params["seed"]), st.d, st.m, st.k,
                                   float(params["initStd"]))
    P, pred = st.caches(w0, w, Vt)
    rows = RowCache(y, weights, LOGISTIC if classify else SQUARED, pred)
    sweeps = NewtonSweeps(data, rows, coll, reg, tol, fit_w0, fit_linear)
    hist: dict = {"objective": [], "seconds": []}
    on_iteration = params.get("on_iteration")
    t0 = time.perf_counter()
    for _ in range(int(params["maxIter"])):
        w0 = sweeps.head(w0, w, Vt, hist)
        if sweeps.stalled:
            break
        for f in range(st.m):
            for c in range(st.k):
                st.update_factor(Vt, f, c, P, rows, coll, sweeps.rule)
        end_iteration(hist, t0, on_iteration)
    hist["n_blocks"] = int(data.n_blocks)
    return st.arrays(w0, w, _as_V(Vt), "logistic" if classify else "identity",
                     params["normalize"]), hist


def run_ffm_mcmc(data: BlockedData, y, weights, rids, params: dict, coll):
    """Gibbs sampling on this rank's rows (``data`` from :func:`ffm_blocked`; ``rids`` int64
    (n,) row identities for the probit latents); every rank returns the same arrays, the
    samples kept after ``burnIn`` every ``thinning`` sweeps: w0 (S,), w (S, d), V (S, d, m, k)
    (``FFMPredictor`` averages their predictions), and history ({"train_rmse" (regression),
    "alpha", "seconds", the last hyper-priors})."""
    st = _State(data, params["fieldStarts"], params)
    n_iter, burn, thin = int(params["maxIter"]), int(params["burnIn"]), int(params["thinning"])
    classify = params["task"] == "classification"
    fit_w0, fit_linear = bool(params["fitIntercept"]), bool(params["fitLinear"])
    seed = int(params["seed"])
    rng, w0, w, Vt = init_ffm_params(seed, st.d, st.m, st.k, float(params["initStd"]))
    m, k, fo = st.m, st.k, st.field_of
    lam_w, mu_w = np.full(m, LAMBDA_INIT), np.zeros(m)
    lam_v, mu_v = np.full((m, k, m), LAMBDA_INIT), np.zeros((m, k, m))
    P, pred = st.caches(w0, w, Vt)
    rows = RowCache(y, weights, SQUARED, pred)
    z = np.empty(data.n, FLOAT)
    (w_total,) = data.rb.sums(coll, rows.w)
    kept: list = []
    hist: dict = {"train_rmse": [], "alpha": [], "seconds": []}
    on_iteration = params.get("on_iteration")
    t0 = time.perf_counter()
    for it in range(n_iter):
        if classify:
            probit_targets_step(rows, seed, it, rids, z)
        alpha, w0 = noise_and_intercept(rows, rng, coll, data.rb, w0, w_total, hist, classify,
                                        fit_w0)
        if fit_linear:
            _draw_lambda_mu(rng, w, fo, m, mu_w, lam_w)
            update_blocks(data, range(data.n_blocks), LINEAR, w, 0, None, None, rows, coll,
                          GibbsRule(alpha, lam_w[fo], mu_w[fo], rng))
        for f in range(m):
            for c in range(k):
                _draw_lambda_mu(rng, Vt[f, c], fo, m, mu_v[f, c], lam_v[f, c])
        for f in range(m):
            for c in range(k):
                st.update_factor(Vt, f, c, P, rows, coll,
                                 GibbsRule(alpha, lam_v[f, c][fo], mu_v[f, c][fo], rng))
        if it >= burn and (it - burn) % thin == 0:
            kept.append((w0, w.copy(), _as_V(Vt)))
        end_iteration(hist, t0, on_iteration)
    if not kept:  # burnIn >= maxIter is refused by the params; keep the last state
        kept.append((w0, w.copy(), _as_V(Vt)))
    hist.update(lambda_w=lam_w.tolist(), mu_w=mu_w.tolist(), n_samples=len(kept),
                n_blocks=int(data.n_blocks))
    return st.arrays([s[0] for s in kept], np.stack([s[1] for s in kept]),
                     np.stack([s[2] for s in kept]), "probit" if classify else "identity",
                     params["normalize"]), hist


def run_ffm_cd_naive(X, y, weights, rids, params: dict):
    """Slow twin of :func:`run_ffm_als` (params["solver"] "als") and :func:`run_ffm_mcmc`
    ("mcmc") in one process on a dense (n, d) matrix: one parameter after the other in feature
    order, each h_i recomputed from the definition of the model and the residual from a full
    prediction (no caches, no blocks); the same draws in the same order. Returns the same
    arrays (history: "objective" or "alpha" only)."""
    X = np.asarray(X, FLOAT)
    n, d = X.shape
    fs = [int(v) for v in params["fieldStarts"]]
    m, k = len(fs), int(params["factorSize"])
    fo = field_of_features(fs, d)
    sq = (X * X).sum(axis=1)
    Xs = X / np.sqrt(np.where(sq > 0, sq, 1.0))[:, None] if params["normalize"] else X.copy()
    wt = np.ones(n) if weights is None else np.asarray(weights, FLOAT)
    classify = params["task"] == "classification"
    mcmc = params["solver"] == "mcmc"
    reg = float(params["regParam"])
    fit_w0, fit_linear = bool(params["fitIntercept"]), bool(params["fitLinear"])
    seed = int(params["seed"])
    rng, w0, w, Vt = init_ffm_params(seed, d, m, k, float(params["initStd"]))

    def predict():
        V = Vt.transpose(2, 0, 1)            # (d, m, k)
        Vab = V[:, fo, :]                    # Vab[a, b] = V[a, f(b)]
        M = np.einsum("abc,bac->ab", Vab, Vab)
        pair = 0.5 * (np.einsum("ia,ab,ib->i", Xs, M, Xs) - (Xs * Xs) @ np.diag(M))
        return w0 + Xs @ w + pair

    def h_factor(j, f, c):
        partners = fo == f
        partners[j] = False
        return Xs[:, j] * (Xs[:, partners] @ Vt[fo[j], c, partners])

    t = np.asarray(y, FLOAT).copy()
    base = c1 = c2 = None
    alpha, W = 1.0, float(wt.sum())
    lam_w, mu_w = np.full(m, LAMBDA_INIT), np.zeros(m)
    lam_v, mu_v = np.full((m, k, m), LAMBDA_INIT), np.zeros((m, k, m))
    normals = np.zeros(d)
    prm = {"alpha": alpha, "lam": None, "mu": None}

    def step(old, h):
        """The new value of one coordinate from its h (0 outside the feature's rows)."""
        p = predict()
        if mcmc or not classify:
            A, G = float(np.sum(wt * h * h)), float(np.sum(wt * (p - t) * h))
        else:
            A, G = float(np.sum(c2 * h * h)), float(np.sum((c1 + c2 * (p - base)) * h))
        if mcmc:
            return old, A, G
        den = A / W + reg
        return (old - (G / W + reg * old) / den if den > 0 else old), A, G

    def gibbs(old, h, j):
        _, A, G = step(old, h)
        prec = prm["alpha"] * A + prm["lam"][j]
        return (prm["alpha"] * (A * old - G) + prm["lam"][j] * prm["mu"][j]) / prec \
            + normals[j] / np.sqrt(prec)

    hist: dict = {"objective": [], "alpha": []}
    kept = []
    prev = None
    for it in range(int(params["maxIter"])):
        p = predict()
        if mcmc:
            if classify:
                z = np.empty(n)
                sample_probit_targets(p, np.asarray(y, FLOAT),
                                      uniforms(seed, STREAM_PROBIT, it, rids), z)
                t = z
            e = p - t
            if not classify:
                alpha = float(rng.gamma((ALPHA_0 + W) / 2.0,
                                        2.0 / (BETA_0 + float(np.sum(wt * e * e)))))
            prm["alpha"] = alpha
            hist["alpha"].append(alpha)
            if fit_w0:
                prec = alpha * W + REG_0
                w0 = alpha * (w0 * W - float(np.sum(wt * e))) / prec \
                    + rng.standard_normal() / np.sqrt(prec)
        else:
            if classify:
                base = p.copy()
                pr = 1.0 / (1.0 + np.exp(-p))
                c1, c2 = wt * (pr - t), wt * np.maximum(pr * (1 - pr), 1e-16)
                lv = float(np.sum(wt * (np.logaddexp(0.0, p) - t * p)))
            else:
                lv = 0.5 * float(np.sum(wt * (p - t) ** 2))
            obj = lv / W + 0.5 * reg * (float(np.sum(w * w)) + float(np.sum(Vt * Vt)))
            hist["objective"].append(obj)
            if prev is not None and abs(prev - obj) <= float(params["tol"]) * abs(prev):
                break
            prev = obj
            if fit_w0:
                A = float(np.sum(wt if c2 is None else c2))
                G = float(np.sum(wt * (p - t))) if c1 is None else float(np.sum(c1))
                w0 = w0 - (G / W) / (A / W)
        if fit_linear:
            if mcmc:
                _draw_lambda_mu(rng, w, fo, m, mu_w, lam_w)
                prm.update(lam=lam_w[fo], mu=mu_w[fo])
                normals = rng.standard_normal(d)
            for j in range(d):
                h = Xs[:, j]
                w[j] = gibbs(w[j], h, j) if mcmc else step(w[j], h)[0]
        if mcmc:
            for f in range(m):
                for c in range(k):
                    _draw_lambda_mu(rng, Vt[f, c], fo, m, mu_v[f, c], lam_v[f, c])
        for f in range(m):
            for c in range(k):
                if mcmc:
                    prm.update(lam=lam_v[f, c][fo], mu=mu_v[f, c][fo])
                    normals = rng.standard_normal(d)
                for j in range(d):
                    h = h_factor(j, f, c)
                    Vt[f, c, j] = gibbs(Vt[f, c, j], h, j) if mcmc \
                        else step(Vt[f, c, j], h)[0]
        burn, thin = int(params.get("burnIn", 0)), int(params.get("thinning", 1))
        if mcmc and it >= burn and (it - burn) % thin == 0:
            kept.append((w0, w.copy(), Vt.transpose(2, 0, 1).copy()))
    link = ("probit" if mcmc else "logistic") if classify else "identity"
    arrays = {"w0": np.asarray(w0), "w": w, "V": Vt.transpose(2, 0, 1).copy()}
    if mcmc:
        arrays = {"w0": np.array([s[0] for s in kept]), "w": np.stack([s[1] for s in kept]),
                  "V": np.stack([s[2] for s in kept])}
    arrays.update(field_starts=np.asarray(fs + [d], np.int64),
                  normalize=np.asarray(bool(params["normalize"])), link=np.asarray(link),
                  n_features=np.asarray(d, np.int64))
    return arrays, hist
