"""Coordinate-update kernels shared by ALS, MCMC and GBFM stage fitting.

Every solver sees the loss through three per-row arrays, refreshed at the start of a sweep:

* ``c1`` (n,): the weighted first derivative of the loss at the sweep's starting prediction;
* ``c2`` (n,): the weighted second derivative (the row weight for squared loss);
* ``r`` (n,): how much the prediction has moved since (the caches are updated in place).

The loss of row i is then modelled as ``c1_i r_i + c2_i r_i^2 / 2`` around the starting point:
exact for squared loss (``c1 + c2 r`` is the weighted residual ``w (pred - y)``), the
Newton / IRLS quadratic for logistic loss (as GLMNET's coordinate descent does), and for MCMC
the Gaussian likelihood of the current targets.

For a parameter ``theta`` the prediction of row i is ``const + theta h_i`` with

* ``LINEAR``:  h = x_ij                               (w_j)
* ``FACTOR``:  h = x_ij (q_if - v_jf x_ij)            (v_jf of a factorization machine; q_if =
  sum_l v_lf x_il is cached)
* ``CROSS``:   h = x_ij q'_if                          (a GBFM stage: v_jf of field p paired
  with the cached q' of field q)

:func:`block_stats` sums ``A_j = sum c2 h^2`` (curvature) and ``G_j = sum (c1 + c2 r) h``
(gradient) over the block's entries: the two numbers per feature that the all-reduce carries.
:func:`block_apply` moves the caches after the block's parameters change by ``delta``.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit

LINEAR, FACTOR, CROSS = 0, 1, 2

__all__ = ["LINEAR", "FACTOR", "CROSS", "NEWTON", "GIBBS", "block_stats", "block_apply",
           "block_finish", "update_blocks_local", "block_stats_naive", "block_stats_split",
           "block_stats_split_naive", "block_apply_naive", "factor_cache", "cross_cache", "feature_stats",
           "feature_stats_naive", "newton_update", "gaussian_update"]


@njit(cache=True, nogil=True, inline="always")
def _entry(vals, p, mode, qh, i, v, j):
    """(x, h) of entry p (row i, block-local feature j) for the mode; ``v``: the block's
    parameters (FACTOR). ``vals`` None: every value is 1.0."""
    if vals is None:
        x = 1.0
    else:
        x = vals[p]
    if mode == 0:
        return x, x
    if mode == 1:
        return x, x * (qh[i] - v[j] * x)
    return x, x * qh[i]


@njit(cache=True, nogil=True)
def block_stats(lo, hi, rows, feats, vals, base, mode, qh, vcol, c1, c2, r, out):
    """out[0, j - base] += sum c2 h^2, out[1, j - base] += sum (c1 + c2 r) h over entries
    lo:hi (``vcol``: the block's current parameters, indexed j - base; FACTOR only).

    ``vals`` None: every value is 1.0 (one-hot data); ``c1`` None: c1 = 0 (squared loss keeps
    the whole residual in r); ``c2`` None: c2 = 1 (no row weights). Numba compiles one version
    per combination with the dead branches removed: this is the hot loop of every solver and
    memory-bound, so not reading constant arrays matters.
    """
    A = out[0]
    G = out[1]
    for p in range(lo, hi):
        i = rows[p]
        j = feats[p] - base
        _, h = _entry(vals, p, mode, qh, i, vcol, j)
        if c2 is None:
            a = h
        else:
            a = c2[i] * h
        A[j] += a * h
        if c1 is None:
            G[j] += a * r[i]
        else:
            G[j] += c1[i] * h + a * r[i]


@njit(cache=True, nogil=True)
def block_stats_split(sub, rows, feats, vals, base, mode, qh, vcol, c1, c2, r, out):
    """:func:`block_stats` of each row block apart: entries ``sub[l]:sub[l + 1]`` (the rows of
    row block l, see ``solver.RowBlocks``) into ``out[l]`` (out: float64 (L, 2, m), zeroed)."""
    for b in range(sub.shape[0] - 1):
        block_stats(sub[b], sub[b + 1], rows, feats, vals, base, mode, qh, vcol, c1, c2, r,
                    out[b])


@njit(cache=True, nogil=True)
def block_apply(lo, hi, rows, feats, vals, base, mode, qh, vold, delta, r, qupd):
    """After the block's parameters moved by ``delta`` (from ``vold``): r_i += delta_j h_i and,
    for factors, qupd_i += delta_j x_ij. ``h`` uses the old parameters; for FACTOR ``qh`` and
    ``qupd`` are the same array (each row meets a block at most once, so ``qh_i`` is read
    before it is moved). ``vals`` None: all values are 1.0."""
    for p in range(lo, hi):
        i = rows[p]
        j = feats[p] - base
        x, h = _entry(vals, p, mode, qh, i, vold, j)
        r[i] += delta[j] * h
        if mode != 0:
            qupd[i] += delta[j] * x


NEWTON, GIBBS = 0, 1


@njit(cache=True, nogil=True)
def block_finish(kind, p0, p1, lam, mu, nrm, A, G, theta, tb, fs, lo, hi, rows, feats, vals,
                 mode, qh, r, qupd):
    """Set the block's parameters from its reduced sums and move the caches (one call).

    ``theta[fs - tb + j]`` is the parameter of feature fs + j. NEWTON (p0 = W, p1 = reg):
    :func:`newton_update`; GIBBS (p0 = alpha): :func:`gaussian_update` with per-feature
    ``lam``, ``mu`` and standard normal draws ``nrm`` (indexed by feature id).
    """
    m = A.shape[0]
    old = np.empty(m, np.float64)
    delta = np.empty(m, np.float64)
    for j in range(m):
        o = theta[fs - tb + j]
        old[j] = o
        if kind == 0:
            den = A[j] / p0 + p1
            new = o - (G[j] / p0 + p1 * o) / den if den > 0 else o
        else:
            prec = p0 * A[j] + lam[fs + j]
            new = (p0 * (A[j] * o - G[j]) + lam[fs + j] * mu[fs + j]) / prec \
                + nrm[fs + j] / np.sqrt(prec)
        theta[fs - tb + j] = new
        delta[j] = new - o
    block_apply(lo, hi, rows, feats, vals, fs, mode, qh, old, delta, r, qupd)


@njit(cache=True, nogil=True)
def update_blocks_local(blocks, block_starts, ptr, sub_flat, sub_ptr, rows, feats, vals, mode,
                        qh, theta, tb, c1, c2, r, qupd, kind, p0, p1, lam, mu, nrm):
    """``solver.update_blocks`` on one rank, in one call: per block (ids ``blocks``, in
    order) its row blocks' sums (:func:`block_stats_split`), added in row-block order as the
    one-rank ``order.fixed_sum`` adds them, then :func:`block_finish`. The same bits as the
    per-block calls; it saves their Python round trips (a9a's MCMC: 25,200 a fit).
    ``sub_flat[sub_ptr[b]:sub_ptr[b + 1]]`` is block b's ``sub``."""
    for b in blocks:
        fs = block_starts[b]
        fe = block_starts[b + 1]
        m = fe - fs
        sub = sub_flat[sub_ptr[b]:sub_ptr[b + 1]]
        parts = np.zeros((sub.shape[0] - 1, 2, m))
        block_stats_split(sub, rows, feats, vals, fs, mode, qh, theta[fs - tb:fe - tb], c1, c2,
                          r, parts)
        stats = np.zeros((2, m))
        for q in range(parts.shape[0]):
            stats += parts[q]
        block_finish(kind, p0, p1, lam, mu, nrm, stats[0], stats[1], theta, tb, fs, ptr[b],
                     ptr[b + 1], rows, feats, vals, mode, qh, r, qupd)


def _x(vals, p):
    return 1.0 if vals is None else float(vals[p])


def _h_naive(mode, x, qi, v):
    if mode == LINEAR:
        return x
    if mode == FACTOR:
        return x * (qi - v * x)
    return x * qi


def block_stats_naive(lo, hi, rows, feats, vals, base, mode, qh, vcol, c1, c2, r, m):
    """Slow twin of :func:`block_stats`; returns the (2, m) sums."""
    out = np.zeros((2, m), FLOAT)
    for p in range(lo, hi):
        i, j, x = int(rows[p]), int(feats[p]) - base, _x(vals, p)
        h = _h_naive(mode, x, qh[i] if mode else 0.0, vcol[j] if mode == FACTOR else 0.0)
        w = 1.0 if c2 is None else c2[i]
        out[0, j] += w * h * h
        out[1, j] += ((0.0 if c1 is None else c1[i]) + w * r[i]) * h
    return out


def block_stats_split_naive(sub, rows, feats, vals, base, mode, qh, vcol, c1, c2, r, m):
    """Slow twin of :func:`block_stats_split`; returns the (L, 2, m) sums."""
    return np.stack([block_stats_naive(int(sub[b]), int(sub[b + 1]), rows, feats, vals, base,
                                       mode, qh, vcol, c1, c2, r, m)
                     for b in range(len(sub) - 1)]) if len(sub) > 1 else np.zeros((0, 2, m))


def block_apply_naive(lo, hi, rows, feats, vals, base, mode, qh, vold, delta, r, qupd):
    """Slow twin of :func:`block_apply` (same in-place contract)."""
    for p in range(lo, hi):
        i, j, x = int(rows[p]), int(feats[p]) - base, _x(vals, p)
        h = _h_naive(mode, x, qh[i] if mode else 0.0, vold[j] if mode == FACTOR else 0.0)
        r[i] += delta[j] * h
        if mode != LINEAR:
            qupd[i] += delta[j] * x


@njit(cache=True, nogil=True)
def factor_cache(indptr, indices, data, Vt, Q):
    """Q[f, i] = sum_j Vt[f, j] x_ij for every factor f (Q: float64 (k, n), overwritten)."""
    k = Vt.shape[0]
    for i in range(indptr.shape[0] - 1):
        for f in range(k):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += Vt[f, indices[p]] * data[p]
            Q[f, i] = s


@njit(cache=True, nogil=True)
def cross_cache(lo, hi, rows, feats, vals, base, Vt, Q):
    """Q[f, i] += sum over entries lo:hi of Vt[f, j - base] x_ij (one field's part of a GBFM
    stage; Vt: float64 (k, m); ``vals`` None: all values 1.0)."""
    k = Vt.shape[0]
    for p in range(lo, hi):
        i = rows[p]
        j = feats[p] - base
        if vals is None:
            x = 1.0
        else:
            x = vals[p]
        for f in range(k):
            Q[f, i] += Vt[f, j] * x


@njit(cache=True, nogil=True)
def feature_stats(indptr, indices, data, c1, c2, mult, A, G):
    """A[j] += sum_i c2_i (mult_i x_ij)^2, G[j] += sum_i c1_i mult_i x_ij over all rows:
    the per-feature fit of the gradient that GBFM's greedy selection scores fields with."""
    for i in range(indptr.shape[0] - 1):
        m = mult[i]
        if m == 0.0:
            continue
        a = c2[i] * m * m
        g = c1[i] * m
        for p in range(indptr[i], indptr[i + 1]):
            x = data[p]
            j = indices[p]
            A[j] += a * x * x
            G[j] += g * x


def feature_stats_naive(indptr, indices, data, c1, c2, mult, d):
    """Slow twin of :func:`feature_stats`; returns (A, G)."""
    A, G = np.zeros(d), np.zeros(d)
    for i in range(len(indptr) - 1):
        for p in range(indptr[i], indptr[i + 1]):
            z = mult[i] * data[p]
            A[indices[p]] += c2[i] * z * z
            G[indices[p]] += c1[i] * z
    return A, G


def newton_update(theta, A, G, total_weight: float, reg):
    """One exact coordinate-descent step on (1/W) sum loss + reg/2 theta^2 for each theta:
    theta - (G/W + reg theta) / (A/W + reg); unchanged where the curvature is 0."""
    W = max(float(total_weight), 1e-300)
    den = A / W + reg
    safe = den > 0
    return np.where(safe, theta - (G / W + reg * theta) / np.where(safe, den, 1.0), theta)


def gaussian_update(theta, A, G, alpha: float, lam, mu, normals):
    """A draw from the Gaussian full conditional of each theta (Gibbs sampling, libFM/myFM):
    precision alpha A + lam, mean (alpha (A theta - G) + lam mu) / precision."""
    prec = alpha * A + lam
    mean = (alpha * (A * theta - G) + lam * mu) / prec
    return mean + normals / np.sqrt(prec)
