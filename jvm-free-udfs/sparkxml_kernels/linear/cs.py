"""Crammer-Singer multiclass SVM by the sequential dual method (Keerthi et al., KDD 2008), as
liblinear's ``-s 4`` (``Solver_MCSVM_CS``), on the CoCoA+ local subproblem of one block.

Primal::

    min_W  0.5 sum_m |W_m|^2 + sum_i C_i max_m (e_i^m + W_m.x_i - W_{y_i}.x_i)

with e_i^m = 0 if m = y_i, else 1. Dual (liblinear's sign)::

    min_a  f(a) = 0.5 sum_m |sum_i a_i^m x_i|^2 + sum_i sum_m e_i^m a_i^m
    s.t.   sum_m a_i^m = 0,  a_i^m <= C_i [m = y_i]

so the duality gap is P(W) + f(a). Each row's K variables are solved exactly at once
(liblinear's ``solve_sub_problem``); rows are visited in a random permutation with
liblinear's two-level shrinking (rows, and classes within a row), eps_shrink = max(10 tol, 1)
halved each time it is reached, and a pass over everything must confirm the stop.

With the CoCoA+ local subproblem, ``U = W + sigma * dW`` gives the gradients and a row's
curvature is sigma |x_i|^2. Weights are feature-major here: ``U``, ``dW`` (d, K).
``alpha`` is (n, K).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ._rng import shuffle_prefix
from ._rows import row_dots


@njit(cache=True, nogil=True)
def _sub_problem(A, yi, Cy, active, Bv, out):
    """liblinear's closed-form solution of one row's K-variable subproblem."""
    D = Bv[:active].copy()
    if yi < active:
        D[yi] += A * Cy
    D = np.sort(D)[::-1]
    beta = D[0] - A * Cy
    r = 1
    while r < active and beta < r * D[r]:
        beta += D[r]
        r += 1
    beta /= r
    for m in range(active):
        if m == yi:
            out[m] = min(Cy, (beta - Bv[m]) / A)
        else:
            out[m] = min(0.0, (beta - Bv[m]) / A)


@njit(cache=True, nogil=True, inline="always")
def _shrunk(m, yi, a, Ci, G, minG):
    bound = Ci if m == yi else 0.0
    return a == bound and G[m] < minG


@njit(cache=True, nogil=True, error_model="numpy")
def cs_block(indptr, indices, data, lo, hi, labels, cw, qd, alpha, U, dW, sigma, tol,
             max_passes, rng, index):
    """Sequential dual passes over rows [lo, hi). Returns (passes, steps, last stopping
    value max_i (maxG - minG), converged)."""
    l = hi - lo
    K = U.shape[1]
    if l <= 0:
        return 0, 0, 0.0, True
    aidx = np.empty((l, K), np.int64)
    asz = np.empty(l, np.int64)
    yidx = np.empty(l, np.int64)
    G = np.empty(K)
    Bv = np.empty(K)
    anew = np.empty(K)
    dind = np.empty(K, np.int64)
    dval = np.empty(K)
    for t in range(l):
        for m in range(K):
            aidx[t, m] = m
        asz[t] = K
        yidx[t] = labels[lo + t]
        index[t] = t
    active = l
    eps_shrink = max(10.0 * tol, 1.0)
    start_from_all = True
    passes = 0
    steps = 0
    stopping = 0.0
    converged = False
    while passes < max_passes:
        stopping = -np.inf
        shuffle_prefix(index, active, rng)
        s = 0
        while s < active:
            t = index[s]
            i = lo + t
            A = sigma * qd[i]
            Ci = cw[i]
            if A <= 0.0:
                s += 1
                continue
            na = asz[t]
            for m in range(na):
                G[m] = 1.0
            if yidx[t] < na:
                G[yidx[t]] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                v = data[p]
                for m in range(na):
                    G[m] += U[j, aidx[t, m]] * v
            minG = np.inf
            maxG = -np.inf
            for m in range(na):
                if alpha[i, aidx[t, m]] < 0.0 and G[m] < minG:
                    minG = G[m]
                if G[m] > maxG:
                    maxG = G[m]
            if yidx[t] < na:
                if alpha[i, labels[i]] < Ci and G[yidx[t]] < minG:
                    minG = G[yidx[t]]
            m = 0
            while m < asz[t]:
                if _shrunk(m, yidx[t], alpha[i, aidx[t, m]], Ci, G, minG):
                    asz[t] -= 1
                    while asz[t] > m:
                        e = asz[t]
                        if not _shrunk(e, yidx[t], alpha[i, aidx[t, e]], Ci, G, minG):
                            tmp = aidx[t, m]
                            aidx[t, m] = aidx[t, e]
                            aidx[t, e] = tmp
                            g = G[m]
                            G[m] = G[e]
                            G[e] = g
                            if yidx[t] == e:
                                yidx[t] = m
                            elif yidx[t] == m:
                                yidx[t] = e
                            break
                        asz[t] -= 1
                m += 1
            if asz[t] <= 1:
                active -= 1
                tmp = index[s]
                index[s] = index[active]
                index[active] = tmp
                continue
            if maxG - minG <= 1e-12:
                s += 1
                continue
            if maxG - minG > stopping:
                stopping = maxG - minG
            na = asz[t]
            for m in range(na):
                Bv[m] = G[m] - A * alpha[i, aidx[t, m]]
            _sub_problem(A, yidx[t], Ci, na, Bv, anew)
            nz = 0
            for m in range(na):
                c = aidx[t, m]
                d = anew[m] - alpha[i, c]
                alpha[i, c] = anew[m]
                if abs(d) >= 1e-12:
                    dind[nz] = c
                    dval[nz] = d
                    nz += 1
            if nz:
                steps += 1
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    v = data[p]
                    for q in range(nz):
                        c = dind[q]
                        dW[j, c] += dval[q] * v
                        U[j, c] += sigma * dval[q] * v
            s += 1
        passes += 1
        if stopping < eps_shrink:
            if stopping < tol and start_from_all:
                converged = True
                break
            active = l
            for t in range(l):
                asz[t] = K
                yidx[t] = labels[lo + t]
                for m in range(K):
                    aidx[t, m] = m
            eps_shrink = max(eps_shrink / 2.0, tol)
            start_from_all = True
        else:
            start_from_all = False
    return passes, steps, max(stopping, 0.0), converged


@njit(cache=True, nogil=True)
def cs_stats(indptr, indices, data, lo, hi, labels, W, alpha, cw, out, viol):
    """Objective pieces and KKT violations of rows [lo, hi) at (W (d, K), alpha (n, K)).

    out (5,) = [sum_i C_i max_m (e_i^m + W_m.x_i - W_y.x_i), sum_i sum_{m != y_i} a_i^m,
    rows with a_i != 0 and a_i^{y_i} < C_i, rows with a_i^{y_i} = C_i, largest violation];
    viol[i] = liblinear's per-row stopping value max(0, max_m G^m - min_{m: a^m < bound_m} G^m)
    with G^m = e_i^m + W_m.x_i.
    """
    K = W.shape[1]
    M = np.empty(K)
    lsum, lin, nfree, nbound, vmax = 0.0, 0.0, 0, 0, 0.0
    for i in range(lo, hi):
        row_dots(indices, data, indptr[i], indptr[i + 1], W, M)
        y = labels[i]
        best = 0.0
        sv = False
        gmax = -np.inf
        gmin = np.inf
        for m in range(K):
            g = M[m]
            if m != y:
                z = 1.0 + M[m] - M[y]
                if z > best:
                    best = z
                lin += alpha[i, m]
                g += 1.0
                if alpha[i, m] < 0.0 and g < gmin:
                    gmin = g
            elif alpha[i, m] < cw[i] and g < gmin:
                gmin = g
            if g > gmax:
                gmax = g
            if alpha[i, m] != 0.0:
                sv = True
        vi = max(gmax - gmin, 0.0)
        viol[i] = vi
        if vi > vmax:
            vmax = vi
        lsum += cw[i] * best
        if alpha[i, y] == cw[i] and cw[i] > 0.0:
            nbound += 1
        elif sv:
            nfree += 1
    out[0], out[1], out[2], out[3], out[4] = lsum, lin, nfree, nbound, vmax
