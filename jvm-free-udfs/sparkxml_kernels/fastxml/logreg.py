"""FastXML's node separator: L1-regularised logistic regression solved like liblinear's newGLMNET.

Problem (points i of one node, columns j of its column-major feature matrix, the bias being the
last column)::

    min_w  sum_j |w_j| + sum_i C_i log(1 + exp(-y_i w.x_i)),   y_i in {+1, -1}

Solver: the authors' variant of liblinear's ``solve_l1r_lr`` (Yuan, Ho & Lin 2012): from w = 0,
at most 10 Newton iterations, each minimising the quadratic model of the loss plus the L1 term
by at most 10 passes of randomly ordered coordinate descent, then an Armijo line search. Outer
and inner shrinking skip coordinates sitting at 0 with a gradient safely inside [-1, 1]. The
stopping rule is relative: summed violation <= 0.01 x its value at w = 0. Loss values are
float64; feature values and the weights C stay float32, as in the authors' code.

Like the nDCG step, this follows the authors' C++ operation for operation, float32 products
included (x_ij^2 and C_i x_ij are float32 there), and draws the coordinate shuffles from the
same MT19937 stream with ``r % m``; the coordinate order (``index``) persists across Newton
iterations as it does there. Together with ``ndcg`` and ``tree``, that reproduces their trees.

``naive.l1r_lr_naive`` performs the same operations in the same order in plain Python (and
draws the same random numbers), so both return the same weights; ``naive.l1r_lr_reference``
solves the problem to high accuracy by a different method (FISTA) to check the solution itself.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from ._common import MT_STATE, mt_next, mt_seed

EPS = 0.01
MAX_NEWTON = 10
MAX_INNER = 10
MAX_LINESEARCH = 20
NU = 1e-12
SIGMA = 0.01
STEP_CLIP = 10.0


@njit(cache=True, nogil=True)
def _violation(G, wj, shrink):
    """How far coordinate j (gradient ``G`` of the loss, weight ``wj``) is from optimal under
    the L1 term; -1.0 when it sits at 0 with a gradient inside (-1 + shrink, 1 - shrink),
    i.e. should be shrunk out of the active set."""
    Gp = G + 1.0
    Gn = G - 1.0
    if wj == 0.0:
        # without data-dependent branches: max(-Gp, Gn, 0) at 0 is exactly the chain
        # "-Gp if Gp < 0, else Gn if Gn > 0, else 0"
        viol = max(max(-Gp, Gn), 0.0)
        if viol == 0.0 and Gp > shrink and Gn < -shrink:
            return -1.0
        return viol
    return abs(Gp) if wj > 0.0 else abs(Gn)


# The solver's steps, as separate functions so that the data-parallel grower
# (``fastxml.dist``) runs the very same arithmetic with its sums folded across shards. Sums
# over points (or over a column's entries) add to the value passed in, term after term, so
# starting from the sum over the preceding points gives the one-process result bit for bit.

@njit(cache=True, nogil=True)
def lr_init_rows(y, C, n, ewx, tau, Dd, Cneg):
    """Per-point state at w = 0: exp(w.x) = 1, tau = C sigma(-w.x), D = C e / (1 + e)^2, and
    C masked to the negative points (sums over them are then branch-free: adding 0.0 leaves a
    sum unchanged bit for bit, and the sign pattern is random, so a branch mispredicts)."""
    fzero = np.float32(0.0)
    for i in range(n):
        Cneg[i] = C[i] if y[i] < 0 else fzero
        e = 1.0  # exp(w.x) at w = 0
        ewx[i] = e
        t = 1.0 / (1.0 + e)
        tau[i] = np.float64(C[i]) * t
        Dd[i] = np.float64(C[i]) * e * (t * t)


@njit(cache=True, nogil=True)
def lr_column_sums(col_ptr, col_row, col_val, m, wt, out):
    """out[j] += sum over column j's entries of the float32 product wt[point] * value."""
    for j in range(m):
        s = out[j]
        for p in range(col_ptr[j], col_ptr[j + 1]):
            s += np.float64(wt[col_row[p]] * col_val[p])  # a float32 product, as theirs
        out[j] = s


@njit(cache=True, nogil=True)
def lr_hess_grad(col_ptr, col_row, col_val, m, Dd, tau, h_acc, g_acc):
    """Add column j's terms of the Hessian diagonal (x^2 D) and of the loss gradient's
    positive part (x tau) to h_acc[j], g_acc[j], in storage order (streams memory forward;
    the authors compute the same values walking their coordinate order)."""
    for j in range(m):
        h = h_acc[j]
        g = g_acc[j]
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_row[p]
            v = col_val[p]
            h += np.float64(v * v) * Dd[i]
            g += np.float64(v) * tau[i]
        h_acc[j] = h
        g_acc[j] = g


@njit(cache=True, nogil=True)
def lr_outer_active(Grad, w, index, m, shrink):
    """Outer shrinking: move the coordinates to drop to the end of ``index``; return (number
    active, max violation, summed violation)."""
    Gmax_new = 0.0
    Gnorm1_new = 0.0
    active = m
    s = 0
    while s < active:
        j = index[s]
        viol = _violation(Grad[j], w[j], shrink)
        if viol < 0.0:
            active -= 1
            tmp = index[s]
            index[s] = index[active]
            index[active] = tmp
            continue
        Gmax_new = max(Gmax_new, viol)
        Gnorm1_new += viol
        s += 1
    return active, Gmax_new, Gnorm1_new


@njit(cache=True, nogil=True)
def lr_shuffle(mt, index, qp_active):
    """The authors' shuffle of the active coordinates (``r % (active - s)``, MT19937)."""
    for s in range(qp_active):
        jj = s + mt_next(mt) % (qp_active - s)
        tmp = index[jj]
        index[jj] = index[s]
        index[s] = tmp


@njit(cache=True, nogil=True, inline="always")
def lr_coord_grad(col_ptr, col_row, col_val, Dd, xTd, j, G):
    """G + column j's part of the quadratic model's gradient, sum x D (X d)."""
    for p in range(col_ptr[j], col_ptr[j + 1]):
        i = col_row[p]
        G += np.float64(col_val[p]) * Dd[i] * xTd[i]
    return G


@njit(cache=True, nogil=True, inline="always")
def lr_coord_z(G, H, wp):
    """Closed-form minimiser of the one-variable model with the L1 term, clipped; 0.0 when it
    is below 1e-12 in size (the coordinate is left alone)."""
    Gp = G + 1.0
    Gn = G - 1.0
    Hw = H * wp
    z = -Gp / H if Gp < Hw else (-Gn / H if Gn > Hw else -wp)
    if abs(z) < 1.0e-12:
        return 0.0
    return min(max(z, -STEP_CLIP), STEP_CLIP)


@njit(cache=True, nogil=True, inline="always")
def lr_coord_apply(col_ptr, col_row, col_val, xTd, j, z):
    """X d += z e_j on the points of column j."""
    for p in range(col_ptr[j], col_ptr[j + 1]):
        xTd[col_row[p]] += np.float64(col_val[p]) * z


@njit(cache=True, nogil=True, inline="always")
def lr_coord_decide(G, wp, H, qp_shrink):
    """(violation, step) of a coordinate whose gradient is ``G``, weight ``wp`` and curvature
    ``H``: a negative violation shrinks it out of the active set (the step is then 0.0)."""
    viol = _violation(G, wp, qp_shrink)
    if viol < 0.0:
        return viol, 0.0
    return viol, lr_coord_z(G, H, wp)


@njit(cache=True, nogil=True, inline="always")
def lr_coord_step(G, j, s, qp_active, qp_shrink, qp_Gmax_new, qp_Gnorm1_new, index, wpd, Hdiag,
                  col_ptr, col_row, col_val, xTd):
    """Coordinate ``j = index[s]`` of an inner round, its gradient ``G`` known: shrink it out
    of the active set (swapped to its end) or take its Newton step. Returns (next s,
    qp_active, qp_Gmax_new, qp_Gnorm1_new)."""
    viol, z = lr_coord_decide(G, wpd[j], Hdiag[j], qp_shrink)
    if viol < 0.0:  # inner shrinking
        qp_active -= 1
        tmp = index[s]
        index[s] = index[qp_active]
        index[qp_active] = tmp
        return s, qp_active, qp_Gmax_new, qp_Gnorm1_new
    qp_Gmax_new = max(qp_Gmax_new, viol)
    qp_Gnorm1_new += viol
    if z != 0.0:
        wpd[j] += z
        lr_coord_apply(col_ptr, col_row, col_val, xTd, j, z)
    return s + 1, qp_active, qp_Gmax_new, qp_Gnorm1_new


@njit(cache=True, nogil=True, inline="always")
def lr_round_end(qp_Gnorm1_new, inner_eps, Gnorm1_init, qp_active, active, qp_Gmax_new):
    """After an inner round: (stop, qp_active, qp_Gmax_old). Stop when the round converged on
    the whole active set; converged on a shrunk set, re-check all coordinates once more."""
    if qp_Gnorm1_new <= inner_eps * Gnorm1_init:
        if qp_active == active:
            return True, qp_active, qp_Gmax_new
        return False, active, np.inf
    return False, qp_active, qp_Gmax_new


@njit(cache=True, nogil=True)
def lr_delta(Grad, w, wpd, m, w_norm):
    """(Armijo's delta, |w + d|_1) of the Newton direction."""
    delta = 0.0
    w_norm_new = 0.0
    for j in range(m):
        delta += Grad[j] * (wpd[j] - w[j])
        if wpd[j] != 0.0:
            w_norm_new += abs(wpd[j])
    delta += w_norm_new - w_norm
    return delta, w_norm_new


@njit(cache=True, nogil=True)
def lr_row_dot(a, xTd, n, acc):
    """acc + sum_i a[i] x (X d)_i (a float32, promoted per term)."""
    for i in range(n):
        acc += np.float64(a[i]) * xTd[i]
    return acc


@njit(cache=True, nogil=True)
def lr_ls_cond(C, xTd, ewx, ewx_new, n, cond):
    """cond + the loss change of the line-search candidate; fills ewx_new."""
    for i in range(n):
        e_xTd = math.exp(xTd[i])
        ewx_new[i] = ewx[i] * e_xTd
        cond += np.float64(C[i]) * math.log((1.0 + ewx_new[i]) / (e_xTd + ewx_new[i]))
    return cond


@njit(cache=True, nogil=True)
def lr_accept_rows(C, ewx, ewx_new, tau, Dd, n):
    """Take the candidate: new exp(w.x), tau and D per point."""
    for i in range(n):
        ewx[i] = ewx_new[i]
        t = 1.0 / (1.0 + ewx[i])
        tau[i] = np.float64(C[i]) * t
        Dd[i] = np.float64(C[i]) * ewx[i] * (t * t)


@njit(cache=True, nogil=True)
def lr_halve(w, wpd, m):
    """Halve the step: wpd = (w + wpd) / 2; return its L1 norm."""
    w_norm_new = 0.0
    for j in range(m):
        wpd[j] = (w[j] + wpd[j]) * 0.5
        if wpd[j] != 0.0:
            w_norm_new += abs(wpd[j])
    return w_norm_new


@njit(cache=True, nogil=True)
def lr_refresh_ewx(col_ptr, col_row, col_val, m, w, n, ewx):
    """exp(w.x) recomputed from w (after too many halvings, to shed accumulated rounding)."""
    for i in range(n):
        ewx[i] = 0.0
    for j in range(m):
        if w[j] == 0.0:
            continue
        for p in range(col_ptr[j], col_ptr[j + 1]):
            ewx[col_row[p]] += w[j] * np.float64(col_val[p])
    for i in range(n):
        ewx[i] = math.exp(ewx[i])


@njit(cache=True, nogil=True)
def l1r_lr_kernel(col_ptr, col_row, col_val, m, n, y, C, mt, w, wpd, Hdiag, Grad, xjneg,
                  index, xTd, ewx, ewx_new, tau, Dd, Cneg):
    """Fit the L1-regularised logistic regression of one node.

    Parameters
    ----------
    col_ptr : uint64 (>= m+1,)
        Column pointers of the node's column-major matrix (m columns, bias last).
    col_row : uint32 (nnz,)
        Local point index (0..n-1) of each entry. Unsigned on purpose, as are the pointers:
        numba then skips the negative-index wraparound code on every access, which measured
        1.8x faster on the inner loops.
    col_val : float32 (nnz,)
        Feature value of each entry.
    m, n : int
        Number of columns and of points.
    y : int8 (>= n,)
        Target side, +1 or -1.
    C : float32 (>= n,)
        Loss weight per point.
    mt : uint32 (625,)
        MT19937 state (``_common.mt_seed``), advanced by the coordinate shuffles.
    w : float64 (>= m,)
        Output: the weights (entries < m).
    wpd, Hdiag, Grad, xjneg : float64 (>= m,)
        Scratch per column.
    index : int32 (>= m,)
        Scratch: the coordinate order and the active sets.
    xTd, ewx, ewx_new, tau, Dd : float64 (>= n,)
        Scratch per point: X d, exp(w.x), its line-search candidate, C sigma(-w.x) and the
        Hessian weights.
    Cneg : float32 (>= n,)
        Scratch: C masked to the negative points.

    Returns
    -------
    int
        Number of Newton iterations run.
    """
    inner_eps = 1.0
    Gmax_old = np.inf
    Gnorm1_init = 0.0
    w_norm = 0.0
    lr_init_rows(y, C, n, ewx, tau, Dd, Cneg)
    for j in range(m):
        index[j] = j
        w[j] = 0.0
        wpd[j] = 0.0
        xjneg[j] = 0.0
    lr_column_sums(col_ptr, col_row, col_val, m, Cneg, xjneg)

    newton_iter = 0
    while newton_iter < MAX_NEWTON:
        for j in range(m):
            Hdiag[j] = NU
            Grad[j] = 0.0
        lr_hess_grad(col_ptr, col_row, col_val, m, Dd, tau, Hdiag, Grad)
        for j in range(m):
            Grad[j] = -Grad[j] + xjneg[j]
        active, Gmax_new, Gnorm1_new = lr_outer_active(Grad, w, index, m, Gmax_old / n)

        if newton_iter == 0:
            Gnorm1_init = Gnorm1_new
        if Gnorm1_new <= EPS * Gnorm1_init:
            break

        it = 0
        qp_Gmax_old = np.inf
        qp_active = active
        for i in range(n):
            xTd[i] = 0.0
        while it < MAX_INNER:
            qp_Gmax_new = 0.0
            qp_Gnorm1_new = 0.0
            qp_shrink = qp_Gmax_old / n
            lr_shuffle(mt, index, qp_active)
            s = 0
            while s < qp_active:
                # lr_coord_grad and lr_coord_step written out: a helper inlined here that
                # takes arrays costs two atomic reference counts per array and coordinate
                j = index[s]
                G = Grad[j] + (wpd[j] - w[j]) * NU
                for p in range(col_ptr[j], col_ptr[j + 1]):
                    i = col_row[p]
                    G += np.float64(col_val[p]) * Dd[i] * xTd[i]
                viol, z = lr_coord_decide(G, wpd[j], Hdiag[j], qp_shrink)
                if viol < 0.0:  # inner shrinking: swapped to the end of the active set
                    qp_active -= 1
                    index[s], index[qp_active] = index[qp_active], index[s]
                    continue
                qp_Gmax_new = max(qp_Gmax_new, viol)
                qp_Gnorm1_new += viol
                if z != 0.0:
                    wpd[j] += z
                    for p in range(col_ptr[j], col_ptr[j + 1]):
                        xTd[col_row[p]] += np.float64(col_val[p]) * z
                s += 1
            it += 1
            stop, qp_active, qp_Gmax_old = lr_round_end(qp_Gnorm1_new, inner_eps, Gnorm1_init,
                                                        qp_active, active, qp_Gmax_new)
            if stop:
                break

        delta, w_norm_new = lr_delta(Grad, w, wpd, m, w_norm)
        negsum_xTd = lr_row_dot(Cneg, xTd, n, 0.0)

        num_ls = 0
        while num_ls < MAX_LINESEARCH:
            cond = lr_ls_cond(C, xTd, ewx, ewx_new, n,
                              w_norm_new - w_norm + negsum_xTd - SIGMA * delta)
            if cond <= 0.0:
                w_norm = w_norm_new
                for j in range(m):
                    w[j] = wpd[j]
                lr_accept_rows(C, ewx, ewx_new, tau, Dd, n)
                break
            w_norm_new = lr_halve(w, wpd, m)
            delta *= 0.5
            negsum_xTd *= 0.5
            for i in range(n):
                xTd[i] *= 0.5
            num_ls += 1

        if num_ls >= MAX_LINESEARCH:
            lr_refresh_ewx(col_ptr, col_row, col_val, m, w, n, ewx)

        if it == 1:
            inner_eps *= 0.25
        newton_iter += 1
        Gmax_old = Gmax_new
    return newton_iter


def _csc_parts(X):
    import scipy.sparse as sp

    X = sp.csc_matrix(X)
    X.sort_indices()
    return (X.indptr.astype(np.uint64), X.indices.astype(np.uint32),
            X.data.astype(np.float32), X.shape)


def l1r_lr(X, y, C, seed: int = 0):
    """Python entry to :func:`l1r_lr_kernel` (tests and experiments; allocates per call).

    Parameters
    ----------
    X : scipy.sparse matrix or ndarray (n, m)
        Points as rows; include the bias column yourself (the kernel does not append one).
    y : int array (n,)
        +1 / -1.
    C : float array (n,)
        Loss weights (rounded to float32).
    seed : int
        MT19937 seed for the coordinate shuffles.

    Returns
    -------
    float64 array (m,)
        The weights.
    """
    col_ptr, col_row, col_val, (n, m) = _csc_parts(X)
    y = np.asarray(y, dtype=np.int8)
    C = np.asarray(C, dtype=np.float32)
    mt = np.empty(MT_STATE, np.uint32)
    mt_seed(mt, seed)
    cols = [np.empty(max(m, 1), np.float64) for _ in range(5)]
    pts = [np.empty(max(n, 1), np.float64) for _ in range(5)]
    index = np.empty(max(m, 1), np.int32)
    l1r_lr_kernel(col_ptr, col_row, col_val, m, n, y, C, mt, cols[0], cols[1], cols[2], cols[3],
                  cols[4], index, pts[0], pts[1], pts[2], pts[3], pts[4],
                  np.empty(max(n, 1), np.float32))
    return cols[0][:m].copy()
