"""GBFM's joint fit: the field pairs that boosting selected, refitted together by MCMC.

Boosting fits each stage to what the previous stages left, with a fixed shrinkage and L2
penalty, and never revisits a stage; on real data that leaves the model behind a plain FM
fitted by MCMC. The joint fit keeps boosting's choice of *which* field pairs interact (the
distinct pairs P, in the order first selected) and then fits a factorization machine
restricted to them,

    ŷ(x) = w0 + Σ_j w_j x_j + Σ_{(p,q)∈P} ⟨Σ_{i∈C_p} x_i v_i, Σ_{j∈C_q} x_j v_j⟩,

(one rank-``factorSize`` embedding v_i per feature, shared by the pairs its field is in, and
a linear term for every feature) by ``FMRegressor``'s Gibbs sampler (``mcmc``): Gaussian
likelihood with a Gamma prior on its precision, or probit with latent targets for
classification, and per-field hyper-priors on w and on every factor column, so there is
nothing to tune. With every pair selected it is ``FMRegressor(fieldStarts=...)``. ŷ is linear
in each v_if, with coefficient x_if times the sum of the partner fields' embeddings of the
row: the ``cd`` CROSS mode, block by block as everywhere else.

The prediction is the posterior mean over the sweeps kept after ``burnIn``. ŷ is linear in
w0 and w and, per pair, in the matrix M_t = V_p V_qᵀ, so the averaged prediction equals
the model with the averaged w0, w and M_t. The running sum of M_t is kept in factor form
(|C_p| x r and |C_q| x r): when r passes ``_MAX_RANK`` (at least 2k) a thin SVD (through the
QR factors) cuts it to its leading half, and the stored factors keep the singular values
above ``_FINAL_DROP`` of the largest. The stored model predicts the average of the samples up
to that truncation (on MovieLens 100K the test RMSE moved by less than 1e-4 between rank 16
and the exact average).
"""
from __future__ import annotations

import time

import numpy as np

from .._dtypes import FLOAT
from .cd import CROSS, LINEAR, cross_cache
from .mcmc import (
    LAMBDA_INIT,
    _draw_lambda_mu,
    draw_intercept,
    draw_noise_precision,
    probit_targets_step,
)
from .order import row_dots
from .rng import param_rng
from .solver import SQUARED, GibbsRule, RowCache, update_blocks

__all__ = ["joint_pairs", "run_joint_mcmc", "compress_factors"]

# the stream of the joint fit's draws (boosting draws its initial factors from stream 0)
STREAM_JOINT = 0x4A4F
# the running sums are recompressed when their width passes _MAX_RANK (at least 2k), to half
# of it; the stored rank drops singular values below _FINAL_DROP of the largest (on
# MovieLens 100K the test RMSE moved by less than 1e-4 between rank 16 and the exact mean)
_MAX_RANK = 64
_REL_DROP = 1e-7
_FINAL_DROP = 1e-3
# initial factors, as FMRegressor's default initStd
INIT_STD = 0.1


def joint_pairs(stage_fields) -> list:
    """The distinct field pairs of the stages (unordered), in the order first selected."""
    seen, out = set(), []
    for p, q in np.asarray(stage_fields).reshape(-1, 2).tolist():
        key = (min(p, q), max(p, q))
        if key not in seen:
            seen.add(key)
            out.append((int(p), int(q)))
    return out


def compress_factors(A, B, max_rank: int = _MAX_RANK, rel_drop: float = _REL_DROP):
    """(A', B') with A' B'ᵀ = A Bᵀ up to the dropped singular values: the thin SVD of the
    product through the QR factors of A (n1, c) and B (n2, c); at most ``max_rank`` columns,
    none whose singular value is below ``rel_drop`` times the largest."""
    qa, ra = np.linalg.qr(A)
    qb, rb = np.linalg.qr(B)
    u, s, vt = np.linalg.svd(ra @ rb.T)
    keep = int(np.sum(s > rel_drop * (s[0] if s.size else 0.0)))
    keep = max(1, min(keep, max_rank))
    root = np.sqrt(s[:keep])
    return (np.ascontiguousarray((qa @ u[:, :keep]) * root),
            np.ascontiguousarray((qb @ vt[:keep].T) * root))


def run_joint_mcmc(data, y, weights, rids, pairs, fs, field_blocks, params: dict, coll):
    """Gibbs sampling of the pairs' joint model on this rank's rows; every rank returns the
    same result.

    Parameters
    ----------
    data : layout.BlockedData (blocks refined by the fields)
    y, weights : float64 (n,) labels (0/1 for classification) and row weights (or None)
    rids : int64 (n,) row identities (the probit targets' random streams)
    pairs : list of (p, q) field indices
    fs : int64 (m+1,) field starts (last = d)
    field_blocks : list of block-id lists, one per field
    params : dict with task, factorSize, jointIter, burnIn, seed; optional
        on_joint_iteration(history) after every sweep (progress)

    Returns
    -------
    (w0 float, w float64 (d,), factors: list of (A (|C_p|, r), B (|C_q|, r)) per pair with
    A Bᵀ the posterior mean of V_p V_qᵀ, history dict)
    """
    k, d = int(params["factorSize"]), data.d
    n_iter, burn = int(params["jointIter"]), int(params["burnIn"])
    classify = params["task"] == "classification"
    seed = int(params["seed"])
    rng = param_rng(seed, STREAM_JOINT)
    m = fs.size - 1
    field_of = np.repeat(np.arange(m), np.diff(fs))
    fields = sorted({c for pq in pairs for c in pq})
    partners = {c: sorted({q if p == c else p for p, q in pairs if c in (p, q)})
                for c in fields}
    w0 = 0.0
    w = np.zeros(d, FLOAT)
    V = {c: np.ascontiguousarray(rng.normal(0.0, INIT_STD, (k, int(fs[c + 1] - fs[c]))), FLOAT)
         for c in fields}
    Q = {c: np.zeros((k, data.n), FLOAT) for c in fields}
    for c in fields:
        for b in field_blocks[c]:
            _, _, lo, hi = data.block(b)
            cross_cache(lo, hi, data.rows, data.feats, data.vals, int(fs[c]), V[c], Q[c])
    pred = np.zeros(data.n, FLOAT)
    for p, q in pairs:
        pred += row_dots(Q[p], Q[q])
    rows = RowCache(y, weights, SQUARED, pred)
    z = np.empty(data.n, FLOAT)
    (w_total,) = data.rb.sums(coll, rows.w)
    lam_w, mu_w = np.full(m, LAMBDA_INIT), np.zeros(m)
    lam_v, mu_v = np.full((k, m), LAMBDA_INIT), np.zeros((k, m))
    lam_d, mu_d = np.zeros(d), np.zeros(d)
    all_blocks = range(data.n_blocks)
    n_kept, sum_w0, sum_w = 0, 0.0, np.zeros(d, FLOAT)
    acc: list = [None] * len(pairs)  # running Σ V_p V_qᵀ of each pair, in factor form
    cap = max(_MAX_RANK, 2 * k)
    hist: dict = {"joint_train_rmse": [], "joint_seconds": []}
    on_iteration = params.get("on_joint_iteration")  # f({"seconds", "train_rmse"}) per sweep
    t0 = time.perf_counter()
    alpha = 1.0
    for it in range(n_iter):
        if classify:
            probit_targets_step(rows, seed, it, rids, z)
        sq, lin = rows.residual_sums(coll, data.rb)
        if not classify:
            alpha = draw_noise_precision(rng, w_total, sq, hist["joint_train_rmse"])
        w0 = draw_intercept(rows, rng, w0, alpha, w_total, lin)
        _draw_lambda_mu(rng, w, field_of, m, mu_w, lam_w)
        update_blocks(data, all_blocks, LINEAR, w, 0, None, None, rows, coll,
                      GibbsRule(alpha, lam_w[field_of], mu_w[field_of], rng))
        for f in range(k):
            for c in fields:
                one_l, one_m = lam_v[f, c:c + 1], mu_v[f, c:c + 1]
                _draw_lambda_mu(rng, V[c][f], np.zeros(V[c].shape[1], np.int64), 1, one_m,
                                one_l)
        for f in range(k):
            for c in fields:
                s, e = int(fs[c]), int(fs[c + 1])
                lam_d[s:e], mu_d[s:e] = lam_v[f, c], mu_v[f, c]
                # ŷ moves with V_c[f] by x_ij times the sum of its partners' embeddings
                other = Q[partners[c][0]][f].copy()
                for q in partners[c][1:]:
                    other += Q[q][f]
                update_blocks(data, field_blocks[c], CROSS, V[c][f], s, other, Q[c][f], rows,
                              coll, GibbsRule(alpha, lam_d, mu_d, rng))
        if it >= burn:
            n_kept += 1
            sum_w0 += w0
            sum_w += w
            for t, (p, q) in enumerate(pairs):
                a, b = V[p].T, V[q].T
                if acc[t] is None:
                    acc[t] = (a.copy(), b.copy())
                else:
                    acc[t] = (np.hstack([acc[t][0], a]), np.hstack([acc[t][1], b]))
                    if acc[t][0].shape[1] > cap:
                        acc[t] = compress_factors(*acc[t], max_rank=cap // 2)
        hist["joint_seconds"].append(time.perf_counter() - t0)
        if on_iteration is not None:
            on_iteration({"seconds": hist["joint_seconds"],
                          "train_rmse": hist["joint_train_rmse"]})
    if n_kept == 0:
        raise ValueError("the joint fit kept no sample (burnIn >= jointIter)")
    factors = []
    for a, b in acc:
        a, b = compress_factors(a, b, max_rank=cap // 2, rel_drop=_FINAL_DROP)
        factors.append((a / n_kept, b))
    hist.update(joint_samples=n_kept, joint_alpha=alpha,
                joint_lambda_v=lam_v.tolist(), joint_lambda_w=lam_w.tolist())
    return sum_w0 / n_kept, sum_w / n_kept, factors, hist
