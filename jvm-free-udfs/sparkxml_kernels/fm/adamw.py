"""Factorization machines by mini-batch AdamW ("adamw", as Spark MLlib's FM solver).

Objective as ALS: weighted mean loss + decoupled weight decay ``regParam`` on w and V (not on
w0). An epoch splits the rows into ``ceil(1 / miniBatchFraction)`` mini-batches by a per-row
uniform of (seed, epoch, row id) (``rng``), so a mini-batch is the same set of rows whatever
the number of workers; each step sums the gradient over the batch's rows per row block and adds
the blocks' sums in a fixed order (``order``: the same bits for any number of workers; each
rank holds one gradient-sized array per row block), then applies the same AdamW step everywhere
(β1 = 0.9, β2 = 0.999, ε = 1e-8, learning rate ``stepSize``, bias-corrected moments).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .als import init_params
from .order import fixed_sum
from .rng import STREAM_BATCH, uniforms
from .solver import LOGISTIC, SQUARED, logistic_parts
from .watch import end_iteration, init_from, stalled

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8

__all__ = ["run_adamw", "batch_gradient", "batch_gradient_naive", "adamw_step", "minibatches"]


@njit(cache=True, nogil=True)
def batch_gradient(batch, indptr, indices, data, y, w, loss, w0, wl, Vt, grad):
    """Sum over rows ``batch`` of w_i dℓ/dθ into ``grad`` = [w0, w (d), Vt (k*d), Σw, Σwℓ]
    (zeroed by the caller)."""
    k, d = Vt.shape
    q = np.empty(k, np.float64)
    ov = 1 + d
    for b in range(batch.shape[0]):
        i = batch[b]
        lo, hi = indptr[i], indptr[i + 1]
        m = w0
        for f in range(k):
            q[f] = 0.0
        for p in range(lo, hi):
            j = indices[p]
            x = data[p]
            m += wl[j] * x
            for f in range(k):
                v = Vt[f, j] * x
                q[f] += v
                m -= 0.5 * v * v
        for f in range(k):
            m += 0.5 * q[f] * q[f]
        if loss == 0:
            e = m - y[i]
            dl = e
            lv = 0.5 * e * e
        else:
            pr, sp = logistic_parts(m)
            dl = pr - y[i]
            lv = sp - y[i] * m
        c = w[i] * dl
        grad[0] += c
        for p in range(lo, hi):
            j = indices[p]
            x = data[p]
            grad[1 + j] += c * x
            for f in range(k):
                grad[ov + f * d + j] += c * x * (q[f] - Vt[f, j] * x)
        grad[ov + k * d] += w[i]
        grad[ov + k * d + 1] += w[i] * lv


def batch_gradient_naive(batch, X, y, w, loss, w0, wl, Vt):
    """Slow twin of :func:`batch_gradient` by central finite differences of the dense model
    (for small tests)."""
    X = np.asarray(X, FLOAT)
    k, d = Vt.shape

    def total_loss(theta):
        b0, bw, bV = theta[0], theta[1:1 + d], theta[1 + d:].reshape(k, d)
        s = 0.0
        for i in batch:
            x = X[i]
            m = b0 + bw @ x + 0.5 * float(np.sum((bV @ x) ** 2) - np.sum((bV ** 2) @ (x ** 2)))
            lv = 0.5 * (m - y[i]) ** 2 if loss == SQUARED else \
                float(np.logaddexp(0, m) - y[i] * m)
            s += w[i] * lv
        return s

    theta = np.concatenate([[w0], wl, Vt.ravel()])
    g = np.zeros(theta.size)
    for t in range(theta.size):
        e = np.zeros(theta.size)
        e[t] = 1e-6
        g[t] = (total_loss(theta + e) - total_loss(theta - e)) / 2e-6
    return np.concatenate([g, [float(np.sum(w[batch])), total_loss(theta)]])


@njit(cache=True, nogil=True)
def adamw_step(theta, g, m, v, t, lr, decay, decay_from):
    """One AdamW step in place (``theta[decay_from:]`` decays; w0 at index 0 does not)."""
    c1 = 1.0 - BETA1 ** t
    c2 = 1.0 - BETA2 ** t
    for i in range(theta.shape[0]):
        m[i] = BETA1 * m[i] + (1.0 - BETA1) * g[i]
        v[i] = BETA2 * v[i] + (1.0 - BETA2) * g[i] * g[i]
        step = (m[i] / c1) / (math.sqrt(v[i] / c2) + EPS)
        if i >= decay_from:
            step += decay * theta[i]
        theta[i] -= lr * step


def batch_step(coll, parts, theta, mom, vel, step: int, lr: float, decay: float,
               decay_from: int, mask=None):
    """A mini-batch's AdamW step in place: ``parts`` float64 (row blocks, P + 2), each row
    block's gradient sums then its weight and loss sums, summed over the ranks in a fixed
    order (``order.fixed_sum``); the step takes the gradient over the batch weight (times
    ``mask``, if given), none for an empty batch. Returns (batch weight, batch loss, the
    number of steps taken so far)."""
    g = fixed_sum(coll, parts)
    bw, bl = g[-2], g[-1]
    if bw <= 0:
        return bw, bl, step
    step += 1
    grad = g[:-2] / bw if mask is None else g[:-2] * mask / bw
    adamw_step(theta, grad, mom, vel, step, lr, decay, decay_from)
    return bw, bl, step


def minibatches(seed: int, epoch: int, rids, n_batches: int, rb):
    """An epoch's mini-batches, rows dealt by a uniform of (seed, epoch, row id): per batch,
    its rows (ascending, so row block by row block) and where each of this rank's row blocks
    (``rb``, ``order.RowBlocks``) starts in it, int64 (L + 1,)."""
    batch_of = np.minimum((uniforms(seed, STREAM_BATCH, epoch, rids) * n_batches)
                          .astype(np.int64), n_batches - 1)
    order = np.argsort(batch_of, kind="stable")
    bounds = np.searchsorted(batch_of[order], np.arange(n_batches + 1))
    for b in range(n_batches):
        batch = order[bounds[b]:bounds[b + 1]]
        yield batch, np.searchsorted(batch, rb.ptr)


def run_adamw(data, y, weights, rids, params: dict, coll, watch=None):
    """Mini-batch AdamW on this rank's rows; every rank returns the same parameters (with
    early stopping, ``watch``: those after the best epoch)."""
    k, d = int(params["factorSize"]), data.d
    loss = LOGISTIC if params["task"] == "classification" else SQUARED
    lr, reg, tol = float(params["stepSize"]), float(params["regParam"]), float(params["tol"])
    fit_w0, fit_linear = bool(params["fitIntercept"]), bool(params["fitLinear"])
    seed = int(params["seed"])
    n_batches = max(1, int(math.ceil(1.0 / float(params["miniBatchFraction"]) - 1e-9)))
    w0, w, Vt = init_from(params.get("init"), init_params(seed, k, d, float(params["initStd"])))
    theta = np.concatenate([[w0], w, Vt.ravel()])
    mom, vel = np.zeros_like(theta), np.zeros_like(theta)
    mask = np.ones_like(theta)
    mask[0] = float(fit_w0)
    mask[1:1 + d] = float(fit_linear)
    grad_size = theta.size + 2
    rb = data.rb
    y = np.ascontiguousarray(y, FLOAT)
    weights = np.ones(data.n, FLOAT) if weights is None else np.ascontiguousarray(weights, FLOAT)
    hist = {"loss": [], "seconds": []}
    if watch is not None:
        hist["valid_metric"] = watch.history
    on_iteration = params.get("on_iteration")  # f(hist) after each iteration
    t0 = time.perf_counter()
    step, prev = 0, None
    for epoch in range(int(params["maxIter"])):
        ep_w = ep_l = 0.0
        for batch, sub in minibatches(seed, epoch, rids, n_batches, rb):
            parts = np.zeros((rb.n_blocks, grad_size), FLOAT)
            for r in range(rb.n_blocks):
                batch_gradient(batch[sub[r]:sub[r + 1]], data.indptr, data.indices,
                               data.data, y, weights, loss, theta[0], theta[1:1 + d],
                               theta[1 + d:].reshape(k, d), parts[r])
            bw, bl, step = batch_step(coll, parts, theta, mom, vel, step, lr, reg, 1, mask)
            ep_w += bw
            ep_l += bl
        mean_loss = ep_l / max(ep_w, 1e-300)
        hist["loss"].append(float(mean_loss))
        stop = watch is not None and watch.observe(
            epoch, theta[0], theta[1:1 + d], np.ascontiguousarray(theta[1 + d:].reshape(k, d)))
        end_iteration(hist, t0, on_iteration)
        if stop:
            break
        if stalled(prev, mean_loss, tol):
            break
        prev = mean_loss
    if watch is not None and watch.finish(hist):
        b0, bw, bVt = watch.best_state
        theta = np.concatenate([[b0], bw, bVt.ravel()])
    samples = {"w0": np.array([theta[0]], FLOAT),
               "w": theta[1:1 + d].astype(np.float32)[None, :],
               "V": theta[1 + d:].reshape(k, d).T.astype(np.float32)[None, :, :]}
    return samples, hist
