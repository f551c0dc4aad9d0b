"""What ALS, MCMC and GBFM share: per-row caches, losses, exact block updates, and the sums
that make the model the same for any number of workers.

:func:`update_blocks` is the distributed coordinate update: for each exclusive block (see
``layout``) every rank sums ``(A_j, G_j)`` over its own rows (``cd.block_stats``), the ranks'
sums are added in a fixed order, every rank computes the same new parameters with ``rule`` (a
Newton step, or a Gibbs draw from a generator seeded identically on all ranks), and every rank
moves its own caches (``cd.block_apply``).

The fixed order of the sums: ``order``.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .cd import (
    GIBBS,
    NEWTON,
    block_finish,
    block_stats_split,
    newton_update,
    update_blocks_local,
)
from .layout import BlockedData
from .order import ROW_BLOCKS, RowBlocks, fixed_sum, row_block_of, seq_sum

SQUARED, LOGISTIC = 0, 1

__all__ = ["residual_sums", "RowCache", "NewtonRule", "GibbsRule", "update_blocks",
           "loss_terms", "fm_predict_cached", "allreduce_min", "RowBlocks", "fixed_sum",
           "seq_sum", "ROW_BLOCKS", "row_block_of", "SQUARED", "LOGISTIC"]



@njit(cache=True, nogil=True)
def logistic_parts(m):
    """(sigmoid(m), log(1 + exp(m))) without overflow."""
    if m >= 0:
        z = math.exp(-m)
        return 1.0 / (1.0 + z), m + math.log1p(z)
    z = math.exp(m)
    return z / (1.0 + z), math.log1p(z)


@njit(cache=True, nogil=True)
def _loss_terms(loss, pred, y, w, c1, c2):
    """c1 = w l'(pred), c2 = w l''(pred); returns sum w l(pred)."""
    s = 0.0
    for i in range(pred.shape[0]):
        m = pred[i]
        if loss == 0:
            e = m - y[i]
            c1[i] = w[i] * e
            c2[i] = w[i]
            s += 0.5 * w[i] * e * e
        else:
            p, sp = logistic_parts(m)
            c1[i] = w[i] * (p - y[i])
            h = p * (1.0 - p)
            c2[i] = w[i] * (h if h > 1e-16 else 1e-16)
            s += w[i] * (sp - y[i] * m)
    return s


@njit(cache=True, nogil=True)
def residual_sums(r, w):
    """(sum w r^2, sum w r) of a residual; w None = 1. (A compiled loop: numpy's dot calls a
    multithreaded BLAS whose thread start-up costs more than the sum on a loaded machine.)"""
    s2 = 0.0
    s1 = 0.0
    for i in range(r.shape[0]):
        if w is None:
            s2 += r[i] * r[i]
            s1 += r[i]
        else:
            s2 += w[i] * r[i] * r[i]
            s1 += w[i] * r[i]
    return s2, s1


def loss_terms(loss: int, pred, y, w, c1, c2) -> float:
    """Fill ``c1``/``c2`` (see ``cd``) at ``pred``; return this rank's sum of w loss."""
    return float(_loss_terms(loss, pred, y, w, c1, c2))


@njit(cache=True, nogil=True)
def fm_predict_cached(indptr, indices, data, w0, w, Vt, Q, out):
    """out_i = w0 + sum_j w_j x_ij + 1/2 sum_f (Q_fi^2 - sum_j Vt_fj^2 x_ij^2) with the cached
    Q = X V (float64 throughout: the training-time prediction)."""
    k = Vt.shape[0]
    for i in range(indptr.shape[0] - 1):
        y = w0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            x = data[p]
            y += w[j] * x
            for f in range(k):
                v = Vt[f, j] * x
                y -= 0.5 * v * v
        for f in range(k):
            y += 0.5 * Q[f, i] * Q[f, i]
        out[i] = y


class RowCache:
    """Per-row state of one worker (all float64 (n,)).

    Squared loss keeps the whole weighted residual in the caches: ``r = pred - t`` (t: the
    targets, y or MCMC's latent draws), ``c2 = w`` and an empty ``c1``. Logistic loss keeps
    ``base`` (the prediction at the last re-expansion), ``r`` (the move since), and the
    derivatives ``c1``/``c2`` at ``base``. None stands for an array of zeros (c1) or ones
    (c2), which the kernels then do not read.
    """

    def __init__(self, y, w, loss: int, pred):
        n = y.size
        self.loss = int(loss)
        self.y = np.ascontiguousarray(y, FLOAT)
        self.w = np.ones(n, FLOAT) if w is None else np.ascontiguousarray(w, FLOAT)
        self.t = self.y
        pred = np.asarray(pred, FLOAT)
        if self.loss == SQUARED:
            # c1 = 0 and, without weights, c2 = 1: None tells the kernels not to read them
            self.r = pred - self.t
            self.c1 = None
            self.c2 = None if w is None else self.w
        else:
            self.base = pred.copy()
            self.r = np.zeros(n, FLOAT)
            self.c1 = np.zeros(n, FLOAT)
            self.c2 = np.zeros(n, FLOAT)

    def pred(self) -> np.ndarray:
        return (self.t if self.loss == SQUARED else self.base) + self.r

    def relinearize(self, coll, rb: RowBlocks) -> float:
        """Logistic: fold r into base and re-expand the loss there. Return sum w loss over
        every rank's rows (a fixed-order sum over the row blocks ``rb``)."""
        if self.loss == SQUARED:
            return 0.5 * float(self.residual_sums(coll, rb)[0])
        self.base += self.r
        self.r[:] = 0.0
        return float(rb.total(coll, lambda lo, hi: [loss_terms(
            self.loss, self.base[lo:hi], self.t[lo:hi], self.w[lo:hi], self.c1[lo:hi],
            self.c2[lo:hi])], 1)[0])

    def residual_sums(self, coll, rb: RowBlocks) -> np.ndarray:
        """(sum c2 r^2, sum c2 r) over every rank's rows (fixed order)."""
        c2 = self.c2
        return rb.total(coll, lambda lo, hi: residual_sums(
            self.r[lo:hi], None if c2 is None else c2[lo:hi]), 2)

    def set_targets(self, t) -> None:
        """New regression targets (MCMC's latent draws): the residual moves by t_old - t."""
        self.r += self.t - t
        self.t = t

    def objective(self, coll, rb: RowBlocks, total_weight: float, reg: float, w,
                  Vt) -> float:
        """The coordinate-descent solvers' objective, relinearising first: (1/W) sum w loss
        + reg/2 (|w|^2 + |V|^2), W the rows' total weight on every rank."""
        return self.relinearize(coll, rb) / max(total_weight, 1e-300) \
            + 0.5 * reg * (float(np.sum(w * w)) + float(np.sum(Vt * Vt)))

    def newton_intercept(self, coll, rb: RowBlocks, w0: float, total_weight: float) -> float:
        """The intercept after one unpenalised Newton step on every rank's rows (fixed-order
        sums); the residuals move with it."""
        c2 = self.w if self.c2 is None else self.c2
        c1, r = self.c1, self.r
        A, G = rb.total(coll, lambda lo, hi: [
            seq_sum(c2[lo:hi]), (0.0 if c1 is None else seq_sum(c1[lo:hi]))
            + residual_sums(r[lo:hi], c2[lo:hi])[1]], 2)
        new = float(newton_update(np.array([w0]), np.array([A]), np.array([G]), total_weight,
                                  0.0)[0])
        self.r += new - w0
        return new


_EMPTY = np.zeros(1, FLOAT)


class NewtonRule:
    """Coordinate Newton steps on (1/W) sum loss + reg/2 theta^2 (``cd.newton_update``)."""

    kind = NEWTON

    def __init__(self, total_weight: float, reg: float):
        self.p0, self.p1 = max(float(total_weight), 1e-300), float(reg)
        self.lam = self.mu = self.normals = _EMPTY

    def draw(self, n):
        return None


class GibbsRule:
    """Draws from the Gaussian full conditionals (``cd.gaussian_update``): per-feature prior
    precision ``lam`` and mean ``mu`` (float64 (d,)), normals from ``rng`` (the generator every
    rank shares), drawn once per call of :func:`update_blocks`."""

    kind = GIBBS

    def __init__(self, alpha: float, lam, mu, rng):
        self.p0, self.p1 = float(alpha), 0.0
        self.lam = np.ascontiguousarray(lam, FLOAT)
        self.mu = np.ascontiguousarray(mu, FLOAT)
        self.rng = rng
        self.normals = _EMPTY

    def draw(self, n):
        self.normals = self.rng.standard_normal(n)


def update_blocks(data: BlockedData, blocks, mode: int, theta: np.ndarray, theta_base: int,
                  qh, qupd, rows, coll, rule) -> None:
    """One exact coordinate update of ``theta`` over ``blocks`` (block ids, in order); the
    per-feature sums are fixed-order sums over the row blocks (``data.sub``).

    ``theta`` holds the parameters of features ``theta_base...`` (a row of Vt, w, or a GBFM
    field's embedding column); ``qh``/``qupd`` the factor caches the mode needs (see ``cd``);
    ``rows`` has the caches c1, c2, r; ``rule`` is a :class:`NewtonRule` or
    :class:`GibbsRule`, evaluated identically on every rank.
    """
    qh = _EMPTY if qh is None else qh
    qupd = _EMPTY if qupd is None else qupd
    rule.draw(data.d)
    if coll.world_size == 1:  # no reduce between the blocks: one kernel call
        sub_flat, sub_ptr = data.sub_flat
        update_blocks_local(np.asarray(blocks, np.int64), data.block_starts, data.ptr,
                            sub_flat, sub_ptr, data.rows, data.feats, data.vals, mode, qh,
                            theta, int(theta_base), rows.c1, rows.c2, rows.r, qupd, rule.kind,
                            float(rule.p0), float(rule.p1), rule.lam, rule.mu, rule.normals)
        return
    for b in blocks:
        fs, fe, lo, hi = data.block(b)
        m = fe - fs
        sub = data.sub[b]
        parts = np.zeros((sub.size - 1, 2, m), FLOAT)
        block_stats_split(sub, data.rows, data.feats, data.vals, fs, mode, qh,
                          theta[fs - theta_base:fe - theta_base], rows.c1, rows.c2, rows.r,
                          parts)
        stats = fixed_sum(coll, parts)
        block_finish(rule.kind, rule.p0, rule.p1, rule.lam, rule.mu, rule.normals, stats[0],
                     stats[1], theta, theta_base, fs, lo, hi, data.rows, data.feats, data.vals,
                     mode, qh, rows.r, qupd)


def allreduce_min(coll, local: np.ndarray, rank: int, world: int) -> np.ndarray:
    """Element-wise minimum of an int32 array over the ranks, built from ``allreduce_sum``: each
    rank fills its own row of a (world, d) array (an all-gather), then takes the minimum."""
    local = np.asarray(local, np.int32)
    if world == 1:
        return local.copy()
    buf = np.zeros((world, local.size), np.int32)
    buf[rank] = local
    out = np.asarray(coll.allreduce_sum(buf)).reshape(world, local.size)
    return out.min(axis=0).astype(np.int32)
