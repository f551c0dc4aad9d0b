"""Dual coordinate descent for L2-regularised logistic regression (Yu, Huang & Lin, 2011;
liblinear's ``-s 7``), no separate intercept::

    min_w  0.5 |w|^2 + C sum_i log(1 + exp(-y_i w.x_i))

Each row i has the dual pair (a_i, C - a_i); a coordinate step solves the one-variable
sub-problem by a safeguarded Newton method, as liblinear's ``solve_l2r_lr_dual`` does
(initial alphas min(0.001 C, 1e-8), inner tolerance from 1e-2 shrinking by 10 when a pass
needs few Newton steps, stop when the largest sub-problem gradient of a pass is below ``tol``).
The coordinate order is the ``sparkxml_kernels.linear`` SplitMix stream (``shuffle_prefix``),
so the kernel is reproducible from its seed.

CSR ``indptr`` int64, ``indices`` int32, ``data`` float64; ``y`` float64 (+1/-1); ``w``
float64 zeros on entry, the weights on return.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from ..linear._rng import shuffle_prefix

MAX_INNER = 100


@njit(cache=True, nogil=True, error_model="numpy")
def lr_dual_cd(indptr, indices, data, y, C, tol, max_passes, rng, w):
    """Run the solver; return (passes, converged)."""
    n = indptr.size - 1
    alpha = np.empty(2 * n)
    xx = np.zeros(n)
    index = np.arange(n)
    for i in range(n):
        alpha[2 * i] = min(0.001 * C, 1e-8)
        alpha[2 * i + 1] = C - alpha[2 * i]
        for p in range(indptr[i], indptr[i + 1]):
            xx[i] += data[p] * data[p]
            w[indices[p]] += y[i] * alpha[2 * i] * data[p]
    inner_eps = 1e-2
    inner_min = min(1e-8, tol)
    passes = 0
    while passes < max_passes:
        shuffle_prefix(index, n, rng)
        newton = 0
        gmax = 0.0
        for s in range(n):
            i = index[s]
            yi = y[i]
            a = xx[i]
            b = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                b += w[indices[p]] * data[p]
            b *= yi
            i1 = 2 * i
            i2 = 2 * i + 1
            sign = 1.0
            if 0.5 * a * (alpha[i2] - alpha[i1]) + b < 0.0:
                i1 = 2 * i + 1
                i2 = 2 * i
                sign = -1.0
            old = alpha[i1]
            z = old
            if C - z < 0.5 * C:
                z = 0.1 * z
            gp = a * (z - old) + sign * b + math.log(z / (C - z))
            gmax = max(gmax, abs(gp))
            inner = 0
            while inner <= MAX_INNER:
                if abs(gp) < inner_eps:
                    break
                gpp = a + C / (C - z) / z
                tz = z - gp / gpp
                z = z * 0.1 if tz <= 0.0 else tz
                gp = a * (z - old) + sign * b + math.log(z / (C - z))
                newton += 1
                inner += 1
            if inner > 0:
                alpha[i1] = z
                alpha[i2] = C - z
                step = sign * (z - old) * yi
                for p in range(indptr[i], indptr[i + 1]):
                    w[indices[p]] += step * data[p]
        passes += 1
        if gmax < tol:
            return passes, True
        if newton <= n // 10:
            inner_eps = max(inner_min, 0.1 * inner_eps)
    return passes, False
