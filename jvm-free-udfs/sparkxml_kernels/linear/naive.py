"""Slow, obviously-correct twins of the linear-SVM kernels, for tests.

They follow the same coordinate order (the same ``_rng`` stream), so on small problems they
must agree with ``dcd.dcd_block`` / ``cs.cs_block`` to rounding; the objective pieces are
recomputed from dense numpy algebra.
"""
from __future__ import annotations

import math

import numpy as np

from ..inplace import shuffle_prefix_naive
from ._rng import PyRng
from .dcd import CHANGE_RATE, HINGE, PREF_MAX, PREF_MIN, SHARK


def _row(indptr, indices, data, i):
    s, e = indptr[i], indptr[i + 1]
    return indices[s:e], data[s:e]


def dcd_block_naive(indptr, indices, data, lo, hi, labels, pos, upper, diag, qd, alpha, u,
                    sigma, tol, max_passes, schedule, rng_state, pref, sstate):
    """Pure-Python twin of ``dcd.dcd_block`` (same arguments but no workspace; ``rng_state``
    is a uint64[1] array, advanced as the kernel does)."""
    rng = PyRng(rng_state)
    l = hi - lo
    if l <= 0:
        return 0, 0, 0.0, True
    y = np.where(labels == pos, 1.0, -1.0)

    def dot(i):
        j, v = _row(indptr, indices, data, i)
        s = 0.0
        for jj, vv in zip(j, v):  # sequential, as the kernel adds
            s += u[jj] * vv
        return s

    def grad(i):  # liblinear's sign: G = y x.u - 1 + D a
        return y[i] * dot(i) - 1.0 + alpha[i] * diag[i]

    def move(i, new, mu):
        j, v = _row(indptr, indices, data, i)
        u[j] += sigma * mu * y[i] * v
        alpha[i] = new

    passes = steps = 0
    viol = 0.0
    if schedule == SHARK:
        avg, epoch, canstop = sstate[0], sstate[1], sstate[2] != 0
        while passes < max_passes:
            psum = float(sum(pref[lo:hi]))
            sched = []
            for t in range(l):
                p = pref[lo + t]
                left = l - len(sched)
                if t == l - 1:
                    n = left
                else:
                    num = left if psum < 1e-6 else min(float(left), left * p / psum)
                    n = int(math.floor(num))
                    if rng.uniform() < num - n:
                        n += 1
                    n = min(n, left)
                sched += [lo + t] * n
                psum -= p
            for s in range(l - 1, 0, -1):
                j = rng.below(s + 1)
                sched[s], sched[j] = sched[j], sched[s]
            viol = 0.0
            for i in sched:
                g = 1.0 - y[i] * dot(i) - diag[i] * alpha[i]
                a, U = alpha[i], upper[i]
                pg = 0.0 if (a == 0 and g < 0) or (a == U and g > 0) else g
                viol = max(viol, abs(pg))
                gain = 0.0
                if pg != 0:
                    q = sigma * qd[i] + diag[i]
                    mu = g / q
                    new = a + mu
                    if new <= 0.0:
                        mu, new = -a, 0.0
                    elif new >= U:
                        mu, new = U - a, U
                    move(i, new, mu)
                    gain = mu * (g - 0.5 * q * mu)
                    steps += 1
                if epoch == 0:
                    avg += gain / l
                else:
                    if avg > 0:
                        pref[i] = min(PREF_MAX, max(PREF_MIN, pref[i] * math.exp(
                            CHANGE_RATE * (gain / avg - 1.0))))
                    avg = (1 - 1 / l) * avg + gain / l
            epoch += 1
            passes += 1
            if viol < tol:
                if canstop:
                    sstate[:] = avg, epoch, 1.0
                    return passes, steps, viol, True
                canstop = True
                pref[lo:hi] = 1.0
            else:
                canstop = False
        sstate[:] = avg, epoch, 1.0 if canstop else 0.0
        return passes, steps, viol, False

    index = list(range(lo, hi))
    active = l
    pgmax_old, pgmin_old = math.inf, -math.inf
    while passes < max_passes:
        if active == 0:
            active, pgmax_old, pgmin_old = l, math.inf, -math.inf
        pgmax, pgmin = -math.inf, math.inf
        shuffle_prefix_naive(index, active, rng.below)
        s = 0
        while s < active:
            i = index[s]
            G = grad(i)
            a, C = alpha[i], upper[i]
            shrink = (a == 0 and G > pgmax_old) or (a == C and a != 0 and G < pgmin_old)
            if shrink:
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            PG = min(G, 0.0) if a == 0 else (max(G, 0.0) if a == C else G)
            pgmax, pgmin = max(pgmax, PG), min(pgmin, PG)
            if abs(PG) > 1e-12:
                new = min(max(a - G / (sigma * qd[i] + diag[i]), 0.0), C)
                move(i, new, new - a)
                steps += 1
            s += 1
        passes += 1
        viol = max(pgmax, -pgmin, 0.0)
        if pgmax - pgmin <= tol and abs(pgmax) <= tol and abs(pgmin) <= tol:
            if active == l:
                return passes, steps, viol, True
            active, pgmax_old, pgmin_old = l, math.inf, -math.inf
            continue
        pgmax_old = math.inf if pgmax <= 0 else pgmax
        pgmin_old = -math.inf if pgmin >= 0 else pgmin
    return passes, steps, viol, False


def block_stats_naive(X, labels, pos, w, alpha, upper, diag, cw, loss):
    """Dense twin of ``dcd.block_stats`` over all rows of the dense (n, d) X: (out (6,),
    violations (n,))."""
    y = np.where(labels == pos, 1.0, -1.0)
    z = np.maximum(0.0, 1.0 - y * (X @ w))
    sv = alpha > 0
    G = y * (X @ w) - 1.0 + diag * alpha
    pg = np.where(alpha == 0, np.minimum(G, 0.0), np.where(alpha == upper, np.maximum(G, 0.0), G))
    viol = np.abs(pg)
    out = np.array([float(np.sum(cw * (z if loss == HINGE else z * z))),
                    float(alpha[sv].sum()), float(np.sum(diag[sv] * alpha[sv] ** 2)),
                    float(np.sum(sv & (alpha != upper))), float(np.sum(sv & (alpha == upper))),
                    float(viol.max(initial=0.0))])
    return out, viol


def cs_violations_naive(X, labels, W, alpha, cw):
    """Per-row Crammer-Singer stopping values (liblinear's max G - min G over the classes
    below their bound), dense: twin of ``cs.cs_stats``'s ``viol``."""
    M = X @ W
    n, K = M.shape
    e = np.ones((n, K))
    e[np.arange(n), labels] = 0.0
    G = M + e
    bound = np.zeros((n, K))
    bound[np.arange(n), labels] = cw
    Gmin = np.where(alpha < bound, G, np.inf).min(axis=1)
    return np.maximum(G.max(axis=1) - Gmin, 0.0)


def cs_subproblem_naive(A, yi, Cy, Bv):
    """The K-variable Crammer-Singer row subproblem by brute force over its KKT form:
    minimise 0.5 A |a|^2 + B.a s.t. sum a = 0, a_m <= C [m = y] — solved by bisection on the
    multiplier beta (a_m = min(bound_m, (beta - B_m) / A) is increasing in beta)."""
    K = len(Bv)
    bound = np.zeros(K)
    bound[yi] = Cy

    def total(beta):
        return float(np.minimum(bound, (beta - Bv) / A).sum())

    lo, hi = float(Bv.min()) - 1e6, float(Bv.max()) + A * Cy + 1e6
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if total(mid) < 0:
            lo = mid
        else:
            hi = mid
    return np.minimum(bound, (0.5 * (lo + hi) - Bv) / A)


def cs_objective_naive(X, labels, W, alpha, cw):
    """Crammer-Singer primal P(W) (W (d, K)) and liblinear's dual value f(alpha), dense."""
    M = X @ W
    n, K = M.shape
    e = np.ones((n, K))
    e[np.arange(n), labels] = 0.0
    loss = np.max(e + M - M[np.arange(n), labels][:, None], axis=1)
    P = 0.5 * float(np.sum(W * W)) + float(np.sum(cw * loss))
    Wa = X.T @ alpha
    f = 0.5 * float(np.sum(Wa * Wa)) + float(np.sum(e * alpha))
    return P, f


def margins_naive(X, W, b):
    """(n, K) margins X W^T + b for dense X."""
    return np.asarray(X, np.float64) @ np.asarray(W, np.float64).T + b


def newton_stats_naive(X, labels, pos, w, cw, loss, h):
    """Dense-algebra twin of ``newton.newton_stats`` over all rows of X (scipy CSR): (margins,
    out) with out = [loss sum, sum alpha, sum alpha^2 / (4 C_i), free, bounded] + sum_i alpha_i
    y_i x_i + the lower triangle of sum_i l''_i x_i x_i^T (flattened)."""
    y = np.where(labels == pos, 1.0, -1.0)
    m = y * (X @ w)
    t = 1.0 - m
    if loss == HINGE:
        lsum = float(np.sum(cw * np.maximum(t, 0.0)))
        a = cw * np.clip((t + h) / (2.0 * h), 0.0, 1.0)
        curv = np.where(np.abs(t) < h, cw / (2.0 * h), 0.0)
        sq = 0.0
        bounded = int(np.sum((a > 0) & (a >= cw)))
    else:
        lsum = float(np.sum(cw * np.maximum(t, 0.0) ** 2))
        a = 2.0 * cw * np.maximum(t, 0.0)
        curv = np.where(t > 0.0, 2.0 * cw, 0.0)
        sq = float(np.sum(a * a / (4.0 * cw)))
        bounded = 0
    free = int(np.sum(a > 0)) - bounded
    Xd = np.asarray(X.todense())
    H = np.tril(Xd.T @ (curv[:, None] * Xd))
    head = [lsum, float(a.sum()), sq, free, bounded]
    return m, np.concatenate([head, Xd.T @ (a * y), H.ravel()])


def dcd_multi_naive(starts, ends, indices, data, positive, qd, diag, tol, max_passes,
                    rng_state, W, passes):
    """Pure-Python twin of ``dcd_multi.dcd_multi`` (the same arguments; ``rng_state`` is
    advanced as the kernel does): per problem liblinear's steps, shrinking and stop, one
    shared row order a pass."""
    rng = PyRng(rng_state)
    n, K = positive.shape
    alpha = np.zeros((n, K))
    act = np.ones((n, K), bool)
    done = [False] * K
    pgmax_old = [math.inf] * K
    passes[:] = 0
    index = list(range(n))
    active = n
    sweeps = 0

    def activate_all(k):
        act[:, k] = True
        pgmax_old[k] = math.inf

    def finish(k):
        done[k] = True
        act[:, k] = False

    while n > 0 and not all(done):
        for k in range(K):
            if not done[k] and not act[:, k].any():
                activate_all(k)
                active = n
        hi = [-math.inf] * K
        lo = [math.inf] * K
        shuffle_prefix_naive(index, active, rng.below)
        s = 0
        while s < active:
            i = index[s]
            if not act[i].any():
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            j, v = indices[starts[i]:ends[i]], data[starts[i]:ends[i]]
            g = [0.0] * K
            for jj, vv in zip(j, v):  # entry by entry, as the kernel adds
                for k in range(K):
                    g[k] += W[jj, k] * vv
            step = [0.0] * K
            for k in range(K):
                if not act[i, k]:
                    continue
                y = 1.0 if positive[i, k] else -1.0
                a = alpha[i, k]
                G = y * g[k] - 1.0 + a * diag
                if a == 0.0 and G > pgmax_old[k]:
                    act[i, k] = False
                    continue
                PG = min(G, 0.0) if a == 0.0 else G
                hi[k], lo[k] = max(hi[k], PG), min(lo[k], PG)
                if abs(PG) > 1.0e-12:
                    alpha[i, k] = max(a - G / (qd[i] + diag), 0.0)
                    step[k] = (alpha[i, k] - a) * y
            if any(st != 0.0 for st in step):
                for jj, vv in zip(j, v):
                    for k in range(K):
                        W[jj, k] += step[k] * vv
            if not act[i].any():
                active -= 1
                index[s], index[active] = index[active], index[s]
                continue
            s += 1
        sweeps += 1
        for k in range(K):
            if done[k]:
                continue
            passes[k] += 1
            if hi[k] - lo[k] <= tol and abs(hi[k]) <= tol and abs(lo[k]) <= tol:
                if act[:, k].all():
                    finish(k)
                    continue
                activate_all(k)
                active = n
            else:
                pgmax_old[k] = hi[k] if hi[k] > 0.0 else math.inf
            if passes[k] >= max_passes:
                finish(k)
    rng_state[0] = rng.s
    return sweeps
