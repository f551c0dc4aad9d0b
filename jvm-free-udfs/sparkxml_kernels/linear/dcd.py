"""Dual coordinate descent for L2-regularised linear SVMs (Hsieh et al., ICML 2008).

Primal (liblinear's ``-s 3`` / ``-s 1``, no separate intercept)::

    min_w  0.5 |w|^2 + sum_i C_i loss(y_i w.x_i),  loss = max(0, 1 - m) or max(0, 1 - m)^2

Dual::

    max_a  sum_i a_i - 0.5 |sum_i a_i y_i x_i|^2 - 0.5 sum_i D_ii a_i^2,  0 <= a_i <= U_i

hinge: U_i = C_i, D_ii = 0; squared hinge: U_i = inf, D_ii = 1 / (2 C_i).

The kernels solve the CoCoA+ local subproblem of one *block* of rows (Ma et al. 2015, adding,
sigma' = number of blocks): with w the global weights at the start of the round and dw the
block's change so far, coordinate i sees the gradient through ``u = w + sigma * dw`` and the
curvature ``sigma |x_i|^2 + D_ii``. With one block (sigma = 1) this is plain DCD.

Two coordinate schedules:

- ``permutation``: liblinear's ``solve_l2r_l1l2_svc``: a random permutation of the active
  rows every pass, shrinking of rows whose projected gradient is outside the previous pass's
  [PGmin, PGmax] at a bound, stop when max PG - min PG <= tol (and both |.| <= tol) over all
  rows (a shrunk pass is followed by a full one);
- ``shark``: Shark's ``QpBoxLinear``: each row has a preference, updated from the gain of
  its step (CHANGE_RATE 0.2, clipped to [0.05, 20]); a pass visits rows in proportion to
  their preferences; when the largest KKT violation of a pass is below tol, preferences are
  reset to 1 and a full sweep must confirm it before the solver stops.

Arrays: CSR ``indptr`` int64, ``indices`` int32, ``data`` float64 over all rows of a task;
a block is the row range [lo, hi). ``labels`` int32, a row's sign is +1 when its label
equals ``pos``. Per-row ``upper`` (U_i), ``diag`` (D_ii), ``cw`` (C_i), ``qd`` (|x_i|^2)
float64. Per-problem ``alpha`` float64 (n,), ``pref`` float64 (n,), ``sstate`` float64 (3,)
= [average gain, epochs run, canstop] persist between rounds.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from ..intrinsics import prefetch
from ._rng import rng_below, rng_uniform, shuffle_prefix

PERMUTATION = 0
SHARK = 1
HINGE = 0
SQUARED_HINGE = 1

# Shark QpBoxLinear's strategy constants
CHANGE_RATE = 0.2
PREF_MIN = 0.05
PREF_MAX = 20.0
# a step without gain multiplies the preference by exp(CHANGE_RATE * (0 / avg - 1))
_SHRINK = math.exp(-CHANGE_RATE)


# Both schedules visit rows in a random order, so nearly every visit misses the cache for the
# row's scalars and its CSR entries (a9a: 5 MB of CSR; ~200 ns a visit, 4x the same pass in
# row order). The kernels therefore (1) pack each row's scalars into one 64-byte record,
# (2) prefetch the records PREFETCH_AHEAD * 2 visits ahead and the CSR entries
# PREFETCH_AHEAD visits ahead: the visiting order is known a pass in advance. Measured on
# a9a, CPU time per Shark pass: 7.4 -> 4.0 ms (hinge), 8.1 -> 3.9 ms (squared hinge).
PREFETCH_AHEAD = 6
_A, _U, _D, _Q, _Y, _P, _S, _E = 0, 1, 2, 3, 4, 5, 6, 7  # record fields


@njit(cache=True, nogil=True)
def _pack(indptr, lo, hi, labels, pos, upper, diag, qd, alpha, pref, sigma):
    rec = np.empty((hi - lo, 8))
    for t in range(hi - lo):
        i = lo + t
        rec[t, _A] = alpha[i]
        rec[t, _U] = upper[i]
        rec[t, _D] = diag[i]
        rec[t, _Q] = sigma * qd[i] + diag[i]
        rec[t, _Y] = 1.0 if labels[i] == pos else -1.0
        rec[t, _P] = pref[i] if pref.size else 1.0
        rec[t, _S] = indptr[i]
        rec[t, _E] = indptr[i + 1]
    return rec


@njit(cache=True, nogil=True, _nrt=False)
def _prefetch_visit(rec, indices, data, index, s, end):
    """Hints for the visits s + 2 * PREFETCH_AHEAD (its record) and s + PREFETCH_AHEAD (its
    CSR entries, whose bounds are in the record fetched earlier). A call, not inlined:
    ``_nrt=False`` keeps numba's reference counts of the arrays out of the visit loop."""
    if s + 2 * PREFETCH_AHEAD < end:
        prefetch(rec, np.uint64(index[s + 2 * PREFETCH_AHEAD] * 8))
    if s + PREFETCH_AHEAD < end:
        ta = index[s + PREFETCH_AHEAD]
        q0 = np.uint64(rec[ta, _S])
        q1 = np.uint64(rec[ta, _E])
        if q1 > q0:
            prefetch(indices, q0)
            prefetch(data, q0)
            prefetch(indices, q1 - np.uint64(1))
            prefetch(data, q1 - np.uint64(1))


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def dcd_sweep(rec, indices, data, index, active, u, sigma, pgmax_old, pgmin_old, pgmax_new,
              pgmin_new):
    """One sweep of the active records ``index[:active]`` in their order: liblinear's
    projected-gradient step for each, shrinking (moving to the inactive tail) those whose
    gradient lies outside [``pgmin_old``, ``pgmax_old``] at a bound. Returns (active,
    pgmax_new, pgmin_new, steps), the bounds extended by the sweep's projected gradients;
    steps go into ``u`` scaled by ``sigma``."""
    steps = 0
    s = 0
    while s < active:
        _prefetch_visit(rec, indices, data, index, s, active)
        # the rest of the visit is written out: a helper inlined here that takes arrays costs
        # two atomic reference counts per array and visit
        t = index[s]
        p0 = np.int64(rec[t, _S])
        p1 = np.int64(rec[t, _E])
        xu = 0.0
        for p in range(p0, p1):
            xu += u[indices[p]] * data[p]
        yi = rec[t, _Y]
        a = rec[t, _A]
        G = yi * xu - 1.0 + a * rec[t, _D]
        C = rec[t, _U]
        PG = 0.0
        if a == 0.0:
            if G > pgmax_old:
                active -= 1
                index[s] = index[active]
                index[active] = t
                continue
            elif G < 0.0:
                PG = G
        elif a == C:
            if G < pgmin_old:
                active -= 1
                index[s] = index[active]
                index[active] = t
                continue
            elif G > 0.0:
                PG = G
        else:
            PG = G
        if PG > pgmax_new:
            pgmax_new = PG
        if PG < pgmin_new:
            pgmin_new = PG
        if abs(PG) > 1.0e-12:
            na = min(max(a - G / rec[t, _Q], 0.0), C)
            rec[t, _A] = na
            sd = sigma * (na - a) * yi
            for p in range(p0, p1):
                u[indices[p]] += sd * data[p]
            steps += 1
        s += 1
    return active, pgmax_new, pgmin_new, steps


@njit(cache=True, nogil=True, error_model="numpy")
def _permutation(rec, indices, data, u, sigma, tol, max_passes, rng, index):
    l = rec.shape[0]
    for s in range(l):
        index[s] = s
    active = l
    inf = np.inf
    pgmax_old = inf
    pgmin_old = -inf
    passes = 0
    steps = 0
    viol = 0.0
    converged = False
    while passes < max_passes:
        if active == 0:
            active = l
            pgmax_old = inf
            pgmin_old = -inf
        shuffle_prefix(index, active, rng)
        active, pgmax_new, pgmin_new, n_steps = dcd_sweep(
            rec, indices, data, index, active, u, sigma, pgmax_old, pgmin_old, -inf, inf)
        steps += n_steps
        passes += 1
        viol = max(pgmax_new, -pgmin_new, 0.0)
        if pgmax_new - pgmin_new <= tol and abs(pgmax_new) <= tol and abs(pgmin_new) <= tol:
            if active == l:
                converged = True
                break
            active = l
            pgmax_old = inf
            pgmin_old = -inf
            continue
        pgmax_old = pgmax_new
        pgmin_old = pgmin_new
        if pgmax_old <= 0.0:
            pgmax_old = inf
        if pgmin_old >= 0.0:
            pgmin_old = -inf
    return passes, steps, viol, converged


@njit(cache=True, nogil=True, error_model="numpy")
def _shark(rec, indices, data, u, sigma, tol, max_passes, rng, index, sstate):
    l = rec.shape[0]
    avg_gain = sstate[0]
    epoch = sstate[1]
    canstop = sstate[2] != 0.0
    lr = 1.0 / l
    passes = 0
    steps = 0
    viol = 0.0
    converged = False
    while passes < max_passes:
        # schedule: row t gets about l * pref_t / sum(pref) slots (Shark's stochastic rounding)
        psum = 0.0
        for t in range(l):
            psum += rec[t, _P]
        npos = 0
        for t in range(l):
            p = rec[t, _P]
            left = l - npos
            if t == l - 1:
                n = left
            else:
                num = left if psum < 1e-6 else min(float(left), left * p / psum)
                n = int(math.floor(num))
                if rng_uniform(rng) < num - n:
                    n += 1
                n = min(n, left)
            for _ in range(n):
                index[npos] = t
                npos += 1
            psum -= p
        for s in range(l - 1, 0, -1):
            j = rng_below(rng, s + 1)
            t2 = index[s]
            index[s] = index[j]
            index[j] = t2
        viol = 0.0
        for s in range(l):
            _prefetch_visit(rec, indices, data, index, s, l)
            # the rest of the visit is written out: a helper inlined here that takes arrays
            # costs two atomic reference counts per array and visit
            t = index[s]
            p0 = np.int64(rec[t, _S])
            p1 = np.int64(rec[t, _E])
            xu = 0.0
            for p in range(p0, p1):
                xu += u[indices[p]] * data[p]
            yi = rec[t, _Y]
            a = rec[t, _A]
            bound = rec[t, _U]
            g = 1.0 - yi * xu - rec[t, _D] * a
            if (a == 0.0 and g < 0.0) or (a == bound and g > 0.0):
                pg = 0.0
            else:
                pg = g
            if abs(pg) > viol:
                viol = abs(pg)
            gain = 0.0
            if pg != 0.0:
                q = rec[t, _Q]
                mu = g / q
                na = a + mu
                if na <= 0.0:
                    mu = -a
                    na = 0.0
                elif na >= bound:
                    mu = bound - a
                    na = bound
                rec[t, _A] = na
                sd = sigma * mu * yi
                for p in range(p0, p1):
                    u[indices[p]] += sd * data[p]
                gain = mu * (g - 0.5 * q * mu)
                steps += 1
            if epoch == 0.0:
                avg_gain += gain * lr
            else:
                if avg_gain > 0.0:
                    if gain == 0.0:
                        # the common case (a row at its bound, rightly): a constant factor
                        if rec[t, _P] > PREF_MIN:
                            rec[t, _P] = max(PREF_MIN, rec[t, _P] * _SHRINK)
                    else:
                        change = CHANGE_RATE * (gain / avg_gain - 1.0)
                        rec[t, _P] = min(PREF_MAX, max(PREF_MIN, rec[t, _P] * math.exp(change)))
                avg_gain = (1.0 - lr) * avg_gain + lr * gain
        epoch += 1.0
        passes += 1
        if viol < tol:
            if canstop:
                converged = True
                break
            # a full sweep must confirm convergence
            canstop = True
            for t in range(l):
                rec[t, _P] = 1.0
        else:
            canstop = False
    sstate[0] = avg_gain
    sstate[1] = epoch
    sstate[2] = 1.0 if canstop else 0.0
    return passes, steps, viol, converged


@njit(cache=True, nogil=True)
def dcd_block(indptr, indices, data, lo, hi, labels, pos, upper, diag, qd, alpha, u,
              sigma, tol, max_passes, schedule, rng, index, pref, sstate):
    """Run DCD passes on rows [lo, hi) of one binary problem (see the module docstring).

    ``u`` holds w on entry and w + sigma * dw on return, where dw = sum of the block's steps
    a_i y_i x_i (the caller recovers dw as (u - w) / sigma). ``index`` is an int64 workspace of at least hi - lo entries. Returns
    (passes, steps, largest violation of the last pass, converged).
    """
    if hi <= lo:
        return 0, 0, 0.0, True
    rec = _pack(indptr, lo, hi, labels, pos, upper, diag, qd, alpha, pref, sigma)
    if schedule == SHARK:
        r = _shark(rec, indices, data, u, sigma, tol, max_passes, rng, index, sstate)
    else:
        r = _permutation(rec, indices, data, u, sigma, tol, max_passes, rng, index)
    for t in range(hi - lo):
        alpha[lo + t] = rec[t, _A]
        if schedule == SHARK:
            pref[lo + t] = rec[t, _P]
    return r


@njit(cache=True, nogil=True)
def block_stats(indptr, indices, data, lo, hi, labels, pos, w, alpha, upper, diag, cw, loss,
                out, viol):
    """Objective pieces and KKT violations of rows [lo, hi) at (w, alpha), one binary problem.

    out (6,) float64 = [sum_i C_i loss_i(w), sum_i a_i, sum_i D_ii a_i^2,
    free support vectors (0 < a_i < U_i), bounded ones (a_i = U_i), largest violation];
    viol[i] = |projected gradient| of row i (liblinear's PG: G = y_i w.x_i - 1 + D_ii a_i,
    projected onto the box [0, U_i]).
    """
    lsum = 0.0
    asum = 0.0
    dsum = 0.0
    nfree = 0
    nbound = 0
    vmax = 0.0
    for i in range(lo, hi):
        yi = 1.0 if labels[i] == pos else -1.0
        xw = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            xw += w[indices[p]] * data[p]
        z = 1.0 - yi * xw
        if z > 0.0:
            lsum += cw[i] * (z if loss == HINGE else z * z)
        a = alpha[i]
        G = diag[i] * a - z
        if a == 0.0:
            pg = min(G, 0.0)
        elif a == upper[i]:
            pg = max(G, 0.0)
        else:
            pg = G
        v = abs(pg)
        viol[i] = v
        if v > vmax:
            vmax = v
        if a > 0.0:
            asum += a
            dsum += diag[i] * a * a
            if a == upper[i]:
                nbound += 1
            else:
                nfree += 1
    out[0] = lsum
    out[1] = asum
    out[2] = dsum
    out[3] = nfree
    out[4] = nbound
    out[5] = vmax


@njit(cache=True, nogil=True)
def csr_margins(indptr, indices, data, W, b, out):
    """out[i, k] = x_i . W[k] + b[k] for CSR rows; W (K, d) float64, entries j >= d ignored
    (callers check the width first)."""
    n = indptr.size - 1
    K, d = W.shape
    for i in range(n):
        for k in range(K):
            out[i, k] = b[k]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if j < d:
                v = data[p]
                for k in range(K):
                    out[i, k] += W[k, j] * v
