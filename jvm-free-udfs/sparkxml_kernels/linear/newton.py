"""Primal Newton for L2-regularised linear SVMs with few features (binary and one-vs-rest).

Why. Dual coordinate descent (``dcd``) converges at a rate set by the ratio of the smallest
non-zero eigenvalue of X^T X to the largest |x_i|^2. Dense, unscaled rows make that ratio tiny:
on pendigits (16 features in 0-100 plus the bias feature 1) it is 53 / 88,923 = 6e-4, so a
pass removes ~0.06 % of the remaining error; liblinear's own dual solver stalls there too.
The dual is the same for any linear reparametrisation of w, so no rescaling of the dual fixes
it. In the primal, with d + 1 weights, Newton's method solves the d x d system exactly and is
indifferent to that conditioning.

What. Each round is one Newton step on (Keerthi & DeCoste 2005; Chapelle 2007)::

    f(w) = 0.5 |w|^2 + sum_i C_i l(y_i w.x_i)

squared hinge: l(m) = max(0, 1 - m)^2 (piecewise quadratic: a generalised Hessian, exact line
search); hinge: l is smoothed to Huber's loss of width h (quadratic for |1 - m| < h), and h
shrinks tenfold whenever the smoothed problem is solved far below the target gap
(``H_SHRINK_AT``), from ``H_START`` to ``H_MIN``. The stopping rule is the dual's: the
derivative of the loss at each row gives a dual point alpha_i = -C_i l'(m_i) (in [0, C_i] for
hinge), feasible for the true (unsmoothed) dual, and w(alpha) = sum_i alpha_i y_i x_i is the
gradient pass's by-product; its best multiple s alpha (closed form) gives a dual value, any
of which bounds the optimum from below, so the largest so far certifies the model's primal
objective whatever h is (``dualHistory`` holds that bound).

Distribution: every block adds its rows' gradient and Hessian pieces, (B, problems, ...) is
all-reduced (each block's row non-zero on one task) and summed in block order, and every task
solves the same system with the same sequential Cholesky (``_chol_solve``), so the model does
not depend on how many tasks hold the blocks. The line search all-reduces two numbers per
block and problem per step.
"""
from __future__ import annotations

import time

import numpy as np

from .._jit import njit
from .dcd import HINGE

H_START = 0.5
H_MIN = 1e-6
# shrink h when the Newton decrement is below this fraction of tol * primal
H_SHRINK_AT = 1e-3
LINE_STEPS = 40
# the line search stops when |f'(t)| <= LINE_TOL x the Newton decrement
LINE_TOL = 1e-6
NPIECE = 5  # loss sum, sum alpha, sum alpha^2 / (4 C_i), free and bounded support vectors


@njit(cache=True, nogil=True)
def newton_stats(indptr, indices, data, lo, hi, labels, pos, w, cw, loss, h, marg, out):
    """Rows [lo, hi) of one problem at w: margins into ``marg`` and, in ``out`` (float64,
    NPIECE + d + d*d): the objective pieces, sum_i alpha_i y_i x_i (d) and the lower triangle
    of sum_i l''_i x_i x_i^T (d x d, row-major; left at zero when ``out`` is shorter)."""
    d = w.size
    hess = out.size >= NPIECE + d + d * d
    for i in range(lo, hi):
        yi = 1.0 if labels[i] == pos else -1.0
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += w[indices[p]] * data[p]
        m = yi * s
        marg[i] = m
        t = 1.0 - m
        c = cw[i]
        if loss == HINGE:
            if t > 0.0:
                out[0] += c * t
            if t >= h:
                a, curv = c, 0.0
            elif t <= -h:
                a, curv = 0.0, 0.0
            else:
                a, curv = c * (t + h) / (2.0 * h), c / (2.0 * h)
        else:
            if t > 0.0:
                out[0] += c * t * t
                a, curv = 2.0 * c * t, 2.0 * c
            else:
                a, curv = 0.0, 0.0
        if a > 0.0:
            out[1] += a
            if loss != HINGE:
                out[2] += a * a / (4.0 * c)
            if loss == HINGE and a >= c:
                out[4] += 1.0
            else:
                out[3] += 1.0
            for p in range(indptr[i], indptr[i + 1]):
                out[NPIECE + indices[p]] += a * yi * data[p]
        if curv > 0.0 and hess:
            for p in range(indptr[i], indptr[i + 1]):
                jp = indices[p]
                vp = curv * data[p]
                for q in range(indptr[i], indptr[i + 1]):
                    jq = indices[q]
                    if jq <= jp:
                        out[NPIECE + d + jp * d + jq] += vp * data[q]


@njit(cache=True, nogil=True)
def row_dots(indptr, indices, data, lo, hi, labels, pos, v, out):
    """out[i] = y_i x_i . v for rows [lo, hi)."""
    for i in range(lo, hi):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += v[indices[p]] * data[p]
        out[i] = s if labels[i] == pos else -s


@njit(cache=True, nogil=True)
def line_pieces(marg, delta, lo, hi, cw, loss, h, t, out):
    """Along w + t v (delta_i = y_i x_i . v): out[0] = sum_i C_i l'(m_i + t delta_i) delta_i,
    out[1] = sum_i C_i l''(.) delta_i^2, over rows [lo, hi)."""
    g = 0.0
    c2 = 0.0
    for i in range(lo, hi):
        di = delta[i]
        tt = 1.0 - (marg[i] + t * di)
        c = cw[i]
        if loss == HINGE:
            if tt >= h:
                g -= c * di
            elif tt > -h:
                g -= c * (tt + h) / (2.0 * h) * di
                c2 += c / (2.0 * h) * di * di
        elif tt > 0.0:
            g -= 2.0 * c * tt * di
            c2 += 2.0 * c * di * di
    out[0] = g
    out[1] = c2


@njit(cache=True, nogil=True)
def _chol_solve(low, g):
    """Solve (I + S) x = g, S symmetric given by its lower triangle ``low`` (d, d), by a
    sequential Cholesky factorisation (the same bits on every task)."""
    d = g.size
    L = np.zeros((d, d))
    for i in range(d):
        for j in range(i + 1):
            L[i, j] = low[i, j] + (1.0 if i == j else 0.0)
    for j in range(d):
        s = L[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        s = np.sqrt(max(s, 1e-300))
        L[j, j] = s
        for i in range(j + 1, d):
            r = L[i, j]
            for k in range(j):
                r -= L[i, k] * L[j, k]
            L[i, j] = r / s
    x = g.copy()
    for i in range(d):
        r = x[i]
        for k in range(i):
            r -= L[i, k] * x[k]
        x[i] = r / L[i, i]
    for i in range(d - 1, -1, -1):
        r = x[i]
        for k in range(i + 1, d):
            r -= L[k, i] * x[k]
        x[i] = r / L[i, i]
    return x


def train(ld, cfg, collective, res):
    """Newton rounds (module docstring) for binary / one-vs-rest; fills and returns ``res``
    (a ``solver.TrainResult``). cfg as ``solver.train``."""
    from .dcd import SQUARED_HINGE

    t0 = time.perf_counter()
    loss = HINGE if cfg["loss"] == "hinge" else SQUARED_HINGE
    tol = float(cfg["tol"])
    B = int(cfg["num_blocks"])
    max_iter = int(cfg["max_iter"])
    mode = cfg["multi_class"]
    Kc = int(cfg["n_classes"])
    P = 1 if mode == "binary" else Kc
    pos_of = [1] if mode == "binary" else list(range(Kc))
    d, n = ld.n_features, ld.n
    W = np.zeros((P, d))
    h = np.full(P, H_START if loss == HINGE else 0.0)
    frozen = np.zeros(P, bool)
    marg = np.zeros((P, n))
    delta = np.zeros((P, n))
    width = NPIECE + d + d * d
    res.free_sv, res.bounded_sv = np.zeros(P, np.int64), np.zeros(P, np.int64)
    on_round = cfg.get("on_round")
    blocks = [(int(b), int(ld.block_ptr[lb]), int(ld.block_ptr[lb + 1]))
              for lb, b in enumerate(ld.block_ids)]

    def reduce(st):
        t_ = time.perf_counter()
        st = collective.allreduce_sum(st)
        res.timings["allreduce"] += time.perf_counter() - t_
        tot = np.zeros(st.shape[1:])
        for b in range(B):  # block order: the same sums on every task
            tot += st[b]
        return tot

    def evaluate():
        t_ = time.perf_counter()
        st = np.zeros((B, P, width))
        for b, lo, hi in blocks:
            for k in range(P):
                if not frozen[k]:
                    newton_stats(ld.indptr, ld.indices, ld.data, lo, hi, ld.labels,
                                 pos_of[k], W[k], ld.cw, loss, h[k], marg[k], st[b, k])
        res.timings["evaluate"] += time.perf_counter() - t_
        tot = reduce(st)
        wsq = np.einsum("kd,kd->k", W, W)
        wa = tot[:, NPIECE:NPIECE + d]
        primal = 0.5 * wsq + tot[:, 0]
        # the dual at s * alpha, s chosen best in closed form (s <= 1 keeps hinge's alpha <= C):
        # D(s alpha) = s A - s^2 (|w(alpha)|^2 / 2 + sum alpha^2 / (4 C))
        A, Q = tot[:, 1], np.einsum("kd,kd->k", wa, wa) + 2.0 * tot[:, 2]
        s = np.where(Q > 0, A / np.where(Q > 0, Q, 1.0), 1.0)
        if loss == HINGE:
            s = np.minimum(s, 1.0)
        dual = s * A - 0.5 * s * s * Q
        if res.primal:
            # every dual value bounds the optimum from below: the best so far certifies the
            # current primal; frozen problems keep their last values
            old_p, old_d = np.asarray(res.primal[-1]), np.asarray(res.dual[-1])
            dual = np.maximum(dual, old_d)
            primal, dual = np.where(frozen, old_p, primal), np.where(frozen, old_d, dual)
        else:
            res.free_sv[:], res.bounded_sv[:] = tot[:, 3], tot[:, 4]
        live = ~frozen
        res.free_sv[live], res.bounded_sv[live] = tot[live, 3], tot[live, 4]
        gap = primal - dual
        res.primal.append(primal.tolist())
        res.dual.append(dual.tolist())
        res.gap.append(gap.tolist())
        res.local_passes += 1
        frozen[:] |= gap <= tol * np.abs(primal)
        return tot, primal, gap

    def line_search(dirs, dec, active):
        """Exact minimisation of f along each active problem's direction: a safeguarded
        Newton iteration on the (monotone) derivative, all problems in the same steps."""
        vv = np.einsum("kd,kd->k", dirs, dirs)
        wv = np.einsum("kd,kd->k", W, dirs)
        t = np.ones(P)
        lo_t, hi_t = np.zeros(P), np.full(P, np.inf)
        done = ~active
        for _ in range(LINE_STEPS):
            st = np.zeros((B, P, 2))
            for b, lo, hi in blocks:
                for k in np.flatnonzero(~done):
                    line_pieces(marg[k], delta[k], lo, hi, ld.cw, loss, h[k], t[k], st[b, k])
            tot = reduce(st)
            res.local_steps += 1
            for k in np.flatnonzero(~done):
                g1 = wv[k] + t[k] * vv[k] + tot[k, 0]
                g2 = vv[k] + tot[k, 1]
                if abs(g1) <= LINE_TOL * dec[k]:
                    done[k] = True
                    continue
                if g1 < 0:
                    lo_t[k] = t[k]
                else:
                    hi_t[k] = t[k]
                tn = t[k] - g1 / g2
                if not lo_t[k] < tn < hi_t[k]:
                    tn = 0.5 * (lo_t[k] + hi_t[k]) if np.isfinite(hi_t[k]) else 2.0 * t[k]
                if np.isfinite(hi_t[k]) and hi_t[k] - lo_t[k] <= 1e-12 * hi_t[k]:
                    done[k] = True
                    t[k] = lo_t[k] if lo_t[k] > 0 else t[k]
                    continue
                t[k] = tn
            if done.all():
                break
        return t

    rnd = 0
    tot, primal, gap = evaluate()
    while not frozen.all() and rnd < max_iter:
        active = ~frozen
        dirs = np.zeros((P, d))
        dec = np.zeros(P)
        for k in np.flatnonzero(active):
            g = W[k] - tot[k, NPIECE:NPIECE + d]
            low = tot[k, NPIECE + d:].reshape(d, d)
            dirs[k] = -_chol_solve(low, g)
            dec[k] = -float(g @ dirs[k])
            for b, lo, hi in blocks:
                row_dots(ld.indptr, ld.indices, ld.data, lo, hi, ld.labels, pos_of[k],
                         dirs[k], delta[k])
        active &= dec > 0
        t = line_search(dirs, dec, active)
        for k in np.flatnonzero(active):
            W[k] += t[k] * dirs[k]
        if loss == HINGE:
            shrink = ~frozen & (dec < H_SHRINK_AT * tol * np.abs(primal))
            h[shrink] = np.maximum(h[shrink] / 10.0, H_MIN)
        rnd += 1
        tot, primal, gap = evaluate()
        if on_round is not None:
            on_round(rnd, max_iter, {"primal": float(sum(res.primal[-1])),
                                     "gap": float(sum(res.gap[-1]))})
    res.timings["local"] = time.perf_counter() - t0 - res.timings["evaluate"]
    res.converged = bool(frozen.all())
    res.rounds = rnd
    res.W = W
    return res
