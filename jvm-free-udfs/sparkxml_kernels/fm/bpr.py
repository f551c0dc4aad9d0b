"""Implicit feedback: a factorization machine ranker trained with the BPR loss.

Each training row is an observed (user, item, context x) interaction. The score is a
factorization machine over [one-hot user, one-hot item, x]:

    s(u, i, x) = b_i + <v_u, v_i> + <v_u + v_i, q(x)> + ½ Σ_f [q_f(x)² − Σ_j v_jf² x_j²],
    q(x) = Σ_j v_j x_j,

(the FM's intercept, user weights and context weights are left out: the BPR loss below does
not depend on them, so they would stay at their starting value). BPR (Rendle et al., UAI 2009)
minimises, for each row and each of its ``numNegatives`` sampled negative items j,

    −log σ(s(u, i, x) − s(u, j, x)) = −log σ(b_i − b_j + <v_i − v_j, v_u + q(x)>)

by mini-batch AdamW with decoupled weight decay ``regParam`` (as ``adamw``). Negatives are
drawn uniformly from the item catalogue, rejecting the items the user has as positives (up to
``MAX_TRIES`` draws; a user who has nearly every item may keep a positive), from a hash of
(seed, epoch, negative number, draw, row id): the same negatives whatever the partitioning.
Rejection is exact because rows are dealt to row blocks by their USER (block = hash(user) mod
``ROW_BLOCKS``), so a rank holds every positive of its users.

Synchronous scheme: all ranks hold the same parameters; a mini-batch (a per-row uniform of
(seed, epoch, row id), as ``adamw``) sums its gradient per row block, the blocks' sums are
added in block order (``order.fixed_sum``), and every rank applies the same AdamW step. The
model is the same bit for bit for any number of workers up to ``ROW_BLOCKS``. Each rank holds
one gradient-sized array (items + (users + items + features) x k numbers) per row block.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .adamw import batch_step, minibatches
from .order import RowBlocks
from .rng import occurrences, param_rng, row_ids, uniforms
from .watch import end_iteration, stalled

__all__ = ["sample_negatives", "sample_negatives_naive", "bpr_gradient", "bpr_gradient_naive",
           "prepare_bpr", "run_bpr", "MAX_TRIES"]

STREAM_NEGATIVE = 0x4E47
MAX_TRIES = 32


def sample_negatives(seed: int, epoch: int, rids, users, pos_codes, n_items: int,
                     n_neg: int) -> np.ndarray:
    """int64 (n, n_neg): negative items of each row for one epoch.

    ``pos_codes``: sorted int64 user * n_items + item of every positive of the rows' users
    (None: no rejection). Draw a of negative t of row r is item ⌊U · n_items⌋, U the uniform
    of (seed, epoch, t, a, row id); the first draw that is not a positive of the row's user
    wins (after ``MAX_TRIES`` draws, the last)."""
    rids = np.asarray(rids, np.int64)
    users = np.asarray(users, np.int64)
    n = rids.size
    out = np.empty((n, int(n_neg)), np.int64)
    for t in range(int(n_neg)):
        todo = np.arange(n)
        for a in range(MAX_TRIES):
            u = uniforms(seed, STREAM_NEGATIVE, (int(epoch) * int(n_neg) + t) * MAX_TRIES + a,
                         rids[todo])
            cand = np.minimum((u * n_items).astype(np.int64), n_items - 1)
            out[todo, t] = cand
            if pos_codes is None or pos_codes.size == 0:
                break
            code = users[todo] * n_items + cand
            at = np.minimum(np.searchsorted(pos_codes, code), pos_codes.size - 1)
            todo = todo[pos_codes[at] == code]
            if todo.size == 0:
                break
    return out


def sample_negatives_naive(seed, epoch, rids, users, positives: set, n_items, n_neg):
    """Slow twin of :func:`sample_negatives`: row by row, ``positives`` a set of (user, item)."""
    out = np.empty((len(rids), n_neg), np.int64)
    for r in range(len(rids)):
        for t in range(n_neg):
            for a in range(MAX_TRIES):
                u = uniforms(seed, STREAM_NEGATIVE, (epoch * n_neg + t) * MAX_TRIES + a,
                             np.array([rids[r]], np.int64))[0]
                c = min(int(u * n_items), n_items - 1)
                out[r, t] = c
                if (int(users[r]), c) not in positives:
                    break
    return out


@njit(cache=True, nogil=True)
def bpr_gradient(rows, users, items, neg, indptr, indices, data, theta, n_users, n_items,
                 n_features, k, grad):
    """Add the gradient of Σ_{r in rows, t} −log σ(s(u_r, i_r, x_r) − s(u_r, neg[r, t], x_r))
    to ``grad`` = [b (I), Vu (U k), Vi (I k), Vx (d k), pairs, loss] (theta's layout plus
    the pair count and the loss sum)."""
    ou = n_items
    oi = ou + n_users * k
    ox = oi + n_items * k
    end = ox + n_features * k
    h = np.empty(k, np.float64)
    dv = np.empty(k, np.float64)
    for b in range(rows.shape[0]):
        r = rows[b]
        u, i = users[r], items[r]
        lo, hi = indptr[r], indptr[r + 1]
        for f in range(k):
            h[f] = theta[ou + u * k + f]
        for p in range(lo, hi):
            j = indices[p]
            x = data[p]
            for f in range(k):
                h[f] += theta[ox + j * k + f] * x
        for t in range(neg.shape[1]):
            j = neg[r, t]
            z = theta[i] - theta[j]
            for f in range(k):
                dv[f] = theta[oi + i * k + f] - theta[oi + j * k + f]
                z += dv[f] * h[f]
            # −log σ(z) and its derivative −σ(−z), without overflow
            if z >= 0.0:
                e = math.exp(-z)
                s = e / (1.0 + e)
                lv = math.log1p(e)
            else:
                e = math.exp(z)
                s = 1.0 / (1.0 + e)
                lv = -z + math.log1p(e)
            c = -s
            grad[i] += c
            grad[j] -= c
            for f in range(k):
                grad[ou + u * k + f] += c * dv[f]
                grad[oi + i * k + f] += c * h[f]
                grad[oi + j * k + f] -= c * h[f]
            for p in range(lo, hi):
                jj = indices[p]
                x = data[p]
                for f in range(k):
                    grad[ox + jj * k + f] += c * dv[f] * x
            grad[end] += 1.0
            grad[end + 1] += lv


def fm_score_naive(theta, n_users, n_items, n_features, k, u, i, x):
    """s(u, i, x) by the FM's pairwise definition over z = [one-hot u, one-hot i, x]
    (w0 = 0, user and context weights 0, item weights b)."""
    ou = n_items
    oi = ou + n_users * k
    ox = oi + n_items * k
    V = np.concatenate([theta[ou:oi].reshape(n_users, k), theta[oi:ox].reshape(n_items, k),
                        theta[ox:ox + n_features * k].reshape(n_features, k)])
    z = np.zeros(n_users + n_items + n_features)
    z[u] = 1.0
    z[n_users + i] = 1.0
    z[n_users + n_items:] = x
    s = float(theta[i])
    nz = np.flatnonzero(z)
    for a in range(nz.size):
        for b in range(a + 1, nz.size):
            s += float(V[nz[a]] @ V[nz[b]]) * z[nz[a]] * z[nz[b]]
    return s


def bpr_gradient_naive(rows, users, items, neg, X, theta, n_users, n_items, n_features, k):
    """Slow twin of :func:`bpr_gradient` by central finite differences of the loss computed
    from :func:`fm_score_naive` (``X`` dense (n, d); for small tests)."""
    X = np.asarray(X, FLOAT).reshape(len(users), n_features)

    def total(th):
        s = 0.0
        for r in rows:
            sp = fm_score_naive(th, n_users, n_items, n_features, k, users[r], items[r], X[r])
            for j in neg[r]:
                sn = fm_score_naive(th, n_users, n_items, n_features, k, users[r], j, X[r])
                s += float(np.logaddexp(0.0, -(sp - sn)))
        return s

    g = np.zeros(theta.size)
    for t in range(theta.size):
        e = np.zeros(theta.size)
        e[t] = 1e-6
        g[t] = (total(theta + e) - total(theta - e)) / 2e-6
    return np.concatenate([g, [float(len(rows) * neg.shape[1]), total(theta)]])


class BPRData:
    """A rank's rows after :func:`prepare_bpr`: in (row block, key) order, with user / item
    indices, context CSR (possibly empty), row ids, the row blocks and the sorted positive
    codes user * n_items + item."""

    def __init__(self, users, items, indptr, indices, data, rids, rb, pos_codes, n_users,
                 n_items, n_features):
        self.users, self.items = users, items
        self.indptr, self.indices, self.data = indptr, indices, data
        self.rids, self.rb, self.pos_codes = rids, rb, pos_codes
        self.n_users, self.n_items, self.n_features = int(n_users), int(n_items), int(n_features)

    @property
    def n(self) -> int:
        return self.users.size


def prepare_bpr(users, items, keys, blocks, n_users: int, n_items: int, n_features: int = 0,
                indptr=None, indices=None, data=None) -> BPRData:
    """Sort a rank's rows by (row block, content key) and index them.

    Parameters
    ----------
    users, items : int64 (n,) indices into the catalogues (0 <= users < n_users, ...)
    keys : int64 (n,) content keys (hash of the row's columns)
    blocks : int64 (n,) row block of each row (hash of the user mod ``ROW_BLOCKS``)
    indptr, indices, data : optional CSR (n rows, n_features columns) of the context
    """
    users, items = np.asarray(users, np.int64), np.asarray(items, np.int64)
    keys, blocks = np.asarray(keys, np.int64), np.asarray(blocks, np.int64)
    order = np.lexsort((keys, blocks))  # stable: duplicates keep arrival order
    n = users.size
    if indptr is None:
        indptr, indices, data = np.zeros(n + 1, np.int64), np.zeros(0, np.int32), np.zeros(0)
    indptr = np.asarray(indptr, np.int64)
    lens = np.diff(indptr)[order]
    new_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    take = (np.repeat(indptr[:-1][order] - new_ptr[:-1], lens)
            + np.arange(int(new_ptr[-1]), dtype=np.int64))
    keys = keys[order]
    codes = np.unique(users * int(n_items) + items)
    return BPRData(np.ascontiguousarray(users[order]), np.ascontiguousarray(items[order]),
                   new_ptr, np.ascontiguousarray(np.asarray(indices, np.int32)[take]),
                   np.ascontiguousarray(np.asarray(data, FLOAT)[take]),
                   row_ids(keys, occurrences(keys)), RowBlocks.of(blocks[order]), codes,
                   n_users, n_items, n_features)


def init_theta(seed: int, n_users: int, n_items: int, n_features: int, k: int,
               init_std: float) -> np.ndarray:
    """Item biases 0, factors N(0, init_std²): the same on every rank."""
    rng = param_rng(seed, 0x4250)
    return np.concatenate([np.zeros(n_items),
                           rng.normal(0.0, init_std, (n_users + n_items + n_features) * k)])


def run_bpr(data: BPRData, params: dict, coll):
    """Mini-batch AdamW on the BPR loss; every rank returns the same arrays.

    ``params``: factorSize, maxIter, regParam, stepSize, miniBatchFraction, numNegatives,
    initStd, seed, tol, optional on_iteration(history). Returns ({"item_bias" float32 (I,),
    "user_factors" (U, k), "item_factors" (I, k), "feature_factors" (d, k)}, history)."""
    k = int(params["factorSize"])
    U, I, d = data.n_users, data.n_items, data.n_features
    lr, reg, tol = float(params["stepSize"]), float(params["regParam"]), float(params["tol"])
    seed, n_neg = int(params["seed"]), int(params["numNegatives"])
    n_batches = max(1, int(math.ceil(1.0 / float(params["miniBatchFraction"]) - 1e-9)))
    theta = init_theta(seed, U, I, d, k, float(params["initStd"]))
    mom, vel = np.zeros_like(theta), np.zeros_like(theta)
    grad_size = theta.size + 2
    rb = data.rb
    hist = {"loss": [], "seconds": []}
    on_iteration = params.get("on_iteration")
    t0 = time.perf_counter()
    step, prev = 0, None
    for epoch in range(int(params["maxIter"])):
        neg = sample_negatives(seed, epoch, data.rids, data.users, data.pos_codes, I, n_neg)
        ep_n = ep_l = 0.0
        for batch, sub in minibatches(seed, epoch, data.rids, n_batches, rb):
            parts = np.zeros((rb.n_blocks, grad_size), FLOAT)
            for r in range(rb.n_blocks):
                bpr_gradient(batch[sub[r]:sub[r + 1]], data.users, data.items, neg,
                             data.indptr, data.indices, data.data, theta, U, I, d, k, parts[r])
            bn, bl, step = batch_step(coll, parts, theta, mom, vel, step, lr, reg, 0)
            ep_n += bn
            ep_l += bl
        mean_loss = ep_l / max(ep_n, 1e-300)
        hist["loss"].append(float(mean_loss))
        end_iteration(hist, t0, on_iteration)
        if stalled(prev, mean_loss, tol):
            break
        prev = mean_loss
    ou, oi, ox = I, I + U * k, I + (U + I) * k
    arrays = {"item_bias": theta[:I].astype(np.float32),
              "user_factors": theta[ou:oi].reshape(U, k).astype(np.float32),
              "item_factors": theta[oi:ox].reshape(I, k).astype(np.float32),
              "feature_factors": theta[ox:].reshape(d, k).astype(np.float32)}
    return arrays, hist
