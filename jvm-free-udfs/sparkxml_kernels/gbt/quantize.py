"""Quantised gradients: LightGBM's ``use_quantized_grad``.

Each tree's gradients and hessians are rounded to a few integer levels before the histograms
are built (Shi et al., "Quantized Training of Gradient Boosting Decision Trees", NeurIPS 2022):

- the gradient scale is ``max |g| / (bins / 2)`` and the hessian scale ``max h / bins`` (the
  maxima over every worker's rows), so a row's levels are ``g_q`` in ``[-bins/2, bins/2]``
  and ``h_q`` in ``[0, bins]``; an objective of constant hessian keeps ``h_q = 1`` with the
  scale ``max h``;
- rounding is stochastic (``floor(|x| / scale + u)`` with the sign of ``x``, ``u`` uniform in
  [0, 1)), which keeps every sum unbiased, or to the nearest level;
- the histograms then hold integer sums: on dense bins a worker packs ``(g_q, h_q)`` into
  one int32 and adds 4-byte words (histogram_quantized.py), elsewhere the float kernels add
  the levels as float64, exactly as well; the sums are scaled back (``scale * integer
  sum``) before the split search, so splits, gains and leaf weights are computed as usual.

The uniforms come from :mod:`sparkxml_kernels.rng`'s counter hash of (seed, tree, global row
id), so the levels of a row do not depend on how rows are partitioned.

``quantTrainRenewLeaf`` (LightGBM's ``quant_train_renew_leaf``) refits each leaf's weight
from the true gradient and hessian sums of its rows after the tree is grown
(:func:`renew_leaves`).
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT, LEVELS
from .._jit import njit
from ..rng import splitmix64
from .splitting import leaf_weight

# the largest number of levels: g_q and h_q stay within int8, as LightGBM stores them
MAX_QUANT_BINS = 127


def check_quant_bins(bins) -> int:
    bins = int(bins)
    if not 2 <= bins <= MAX_QUANT_BINS:
        raise ValueError(f"numGradQuantBins must be in [2, {MAX_QUANT_BINS}], got {bins}")
    return bins


def check_quant_options(use, renew, monotone) -> None:
    """Renewed leaves would leave monotone bounds: the two are refused together (the
    message names both params)."""
    if use and renew and any(monotone or ()):
        raise ValueError("quantTrainRenewLeaf cannot be combined with monotoneConstraints "
                         "(a renewed leaf would leave its monotone bounds)")


def tree_key(seed: int, it: int, k: int) -> np.uint64:
    """The per-tree key of the rounding uniforms."""
    with np.errstate(over="ignore"):
        s = splitmix64(np.array([int(seed) & (2 ** 64 - 1)], np.uint64))[0]
        return splitmix64(np.array([s ^ np.uint64(0x51A7 + it * 65599 + k)], np.uint64))[0]


def row_keys(row_ids) -> np.ndarray:
    """uint64 (n,): each row's hashed id, computed once for the whole training."""
    with np.errstate(over="ignore"):
        return splitmix64(np.asarray(row_ids, np.int64).astype(np.uint64))


@njit(cache=True, nogil=True)
def _max_abs(g, h):
    mg = 0.0
    mh = 0.0
    for i in range(g.shape[0]):
        a = abs(g[i])
        b = abs(h[i])
        if a > mg:
            mg = a
        if b > mh:
            mh = b
    return mg, mh


@njit(cache=True, nogil=True)
def _mix(x):
    # SplitMix64 (rng.splitmix64) of one uint64
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def _quantize(g, h, keys, key, inv_g, inv_h, constant_hess, stochastic, gq, hq, packed):
    # one pass: levels as float64 (gq, hq: the float kernels' input, exact small integers)
    # and packed int32 words (histogram_quantized.pack_levels). The two uniforms of a row
    # are the two 32-bit halves of one hash of (row key, tree key).
    scale32 = 1.0 / 4294967296.0
    for i in range(g.shape[0]):
        if stochastic:
            r = _mix(keys[i] ^ key)
            ug = np.float64(r >> np.uint64(32)) * scale32
            uh = np.float64(r & np.uint64(0xFFFFFFFF)) * scale32
        else:
            ug = 0.5
            uh = 0.5
        x = g[i] * inv_g
        if x >= 0.0:
            a = np.int64(np.floor(x + ug))
        else:
            a = -np.int64(np.floor(-x + ug))
        if constant_hess:
            b = np.int64(1)
        else:
            b = np.int64(np.floor(h[i] * inv_h + uh))
        gq[i] = np.float64(a)
        hq[i] = np.float64(b)
        packed[i] = LEVELS(a * 65536 + b)


def scales(max_g: float, max_h: float, bins: int, constant_hess: bool):
    """(gradient scale, hessian scale) from the global maxima (LightGBM's rule)."""
    sg = max_g / (bins // 2) if max_g > 0 else 1.0
    if constant_hess:
        sh = max_h if max_h > 0 else 1.0
    else:
        sh = max_h / bins if max_h > 0 else 1.0
    return float(sg), float(sh)


def global_max(coll, values) -> np.ndarray:
    """Element-wise maximum of the small float64 ``values`` over the ranks, with the
    collective's sum: each rank fills its own row of a (world, k) array of zeros."""
    values = np.asarray(values, FLOAT)
    if coll.world_size == 1:
        return values
    table = np.zeros((coll.world_size, values.size), FLOAT)
    table[coll.rank] = values
    return np.asarray(coll.allreduce_sum(table.reshape(-1)), FLOAT).reshape(
        coll.world_size, values.size).max(axis=0)


class GradQuantizer:
    """Quantises one tree's gradients at a time (see the module docstring).

    Parameters
    ----------
    row_ids : int64 (n,)
        Global row ids (the rounding uniforms depend on them, not on row order).
    bins : int
        ``numGradQuantBins``, in [2, 127].
    stochastic : bool
    constant_hess : bool
        The objective's hessian is the same for every row (squared error, unweighted).
    seed : int
    """

    def __init__(self, row_ids, bins, stochastic=True, constant_hess=False, seed=0):
        self.bins = check_quant_bins(bins)
        self.stochastic = bool(stochastic)
        self.constant_hess = bool(constant_hess)
        self.seed = int(seed)
        self.keys = row_keys(row_ids)
        n = self.keys.size
        self.gq = np.empty(n, FLOAT)
        self.hq = np.empty(n, FLOAT)
        self.packed = np.empty(n, LEVELS)

    def quantize(self, g, h, it, k, coll, rows=None):
        """Levels of this tree's gradients ``g``, ``h`` (float64 (n,)): returns
        ``(gq, hq, packed, (scale_g, scale_h))``; gq/hq float64 (n,), packed int32 (n,).
        The scales come from the rows in ``rows`` (all rows when None) of every rank."""
        g = np.ascontiguousarray(g, FLOAT)
        h = np.ascontiguousarray(h, FLOAT)
        mg, mh = _max_abs(g, h) if rows is None else _max_abs(g[rows], h[rows])
        mg, mh = global_max(coll, [mg, mh])
        sg, sh = scales(mg, mh, self.bins, self.constant_hess)
        _quantize(g, h, self.keys, tree_key(self.seed, it, k), 1.0 / sg, 1.0 / sh,
                  self.constant_hess, self.stochastic, self.gq, self.hq, self.packed)
        return self.gq, self.hq, self.packed, (sg, sh)


def quantize_naive(g, h, row_ids, bins, stochastic, constant_hess, seed, it, k, max_g, max_h):
    """The naive twin of :meth:`GradQuantizer.quantize` (given the global maxima): levels
    (gq, hq) as float64, one row at a time."""
    sg, sh = scales(max_g, max_h, bins, constant_hess)
    key = int(tree_key(seed, it, k))
    keys = row_keys(row_ids)
    gq = np.empty(len(g))
    hq = np.empty(len(g))
    for i in range(len(g)):
        if stochastic:
            with np.errstate(over="ignore"):
                r = int(splitmix64(np.array([int(keys[i]) ^ key], np.uint64))[0])
            ug, uh = (r >> 32) / 2.0 ** 32, (r & 0xFFFFFFFF) / 2.0 ** 32
        else:
            ug = uh = 0.5
        x = g[i] * (1.0 / sg)
        gq[i] = np.floor(x + ug) if x >= 0 else -np.floor(-x + ug)
        hq[i] = 1.0 if constant_hess else np.floor(h[i] * (1.0 / sh) + uh)
    return gq, hq, (sg, sh)


def scale_histograms(hists, scale) -> None:
    """In place: float64 ``(..., 2)`` integer sums -> gradient and hessian sums."""
    sg, sh = scale
    hists[..., 0] *= sg
    hists[..., 1] *= sh


def renew_leaves(tree, leaf, rows, g, h, params, coll) -> None:
    """LightGBM's ``quant_train_renew_leaf``: each leaf's weight from the true gradient and
    hessian sums of its rows (``rows``, or all), summed over the ranks in rank order,
    times the learning rate (``params``: TreeParams)."""
    n_nodes = tree.feature.shape[0]
    idx = leaf if rows is None else leaf[rows]
    gs = g if rows is None else g[rows]
    hs = h if rows is None else h[rows]
    sums = np.concatenate([np.bincount(idx, gs, n_nodes), np.bincount(idx, hs, n_nodes)])
    sums = np.asarray(coll.allreduce_sum(sums), FLOAT)
    G, H = sums[:n_nodes], sums[n_nodes:]
    for node in np.flatnonzero(tree.left < 0):
        tree.value[node] = leaf_weight(float(G[node]), float(H[node]), params.split) * \
            params.learning_rate
