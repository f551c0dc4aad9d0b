"""XE-NDCG ranking objective (Bruch, "An Alternative Cross Entropy Loss for Learning-to-Rank",
arXiv:1911.09798), computed as LightGBM's ``rank_xendcg``.

Per query of ``cnt`` documents (``cnt`` <= 1: zero gradients), with ``rho = softmax(scores)``
and a fresh uniform draw ``gamma_i`` per document and round::

    phi_i = 2^rel_i - gamma_i,          P = sum(phi)   (at least 1e-15)
    t1_i  = rho_i - phi_i / P
    g_i   = t1_i + rho_i (S1 - u1_i) + rho_i (S2 - u2_i)
    h_i   = rho_i (1 - rho_i)

where ``u1_i = t1_i / (1 - rho_i)``, ``S1 = sum(u1)``, ``t2_i = rho_i (S1 - u1_i)``,
``u2_i = t2_i / (1 - rho_i)``, ``S2 = sum(u2)`` (LightGBM's second- and third-order
corrections of the gradient). Row weights multiply gradients and hessians.

The draws: each query has its own linear congruential generator, LightGBM's (``x = 214013 x +
2531011`` mod 2^32, ``gamma = ((x >> 16) & 0x7FFF) / 32768``), advanced once per document per
round. Seeded as LightGBM (``seed + query index``) when the caller gives no row ids, so a
single-process model equals LightGBM's with ``objective_seed`` = seed; with row ids (Spark),
a query's generator starts from ``seed`` and the id of its first row (a hash of the row in
LambdaMART), so the draws follow the query, not its position among a worker's queries, and
the model does not depend on partitioning or numWorkers.

Base score 0. The compiled kernel has a ``_naive`` twin.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit

_EPS = 1e-15
_MASK = 0xFFFFFFFF


def query_states(group_ptr, seed: int, row_ids=None) -> np.ndarray:
    """int64 (n_queries,) initial generator states (see the module docstring)."""
    gp = np.asarray(group_ptr, np.int64)
    nq = gp.size - 1
    if row_ids is None:
        return (int(seed) + np.arange(nq, dtype=np.int64)) & _MASK
    first = np.asarray(row_ids, np.int64)[gp[:-1]].astype(np.uint64)
    mixed = (first ^ np.uint64(int(seed) & (2**63 - 1))) * np.uint64(0x9E3779B97F4A7C15)
    return ((mixed >> np.uint64(32)) & np.uint64(_MASK)).astype(np.int64)


@njit(cache=True, nogil=True)
def _xendcg_kernel(y, raw, group_ptr, states, out_g, out_h):
    nq = group_ptr.size - 1
    for q in range(nq):
        a, b = group_ptr[q], group_ptr[q + 1]
        cnt = b - a
        if cnt <= 1:
            for i in range(a, b):
                out_g[i] = 0.0
                out_h[i] = 0.0
            continue
        m = raw[a]
        for i in range(a + 1, b):
            m = max(m, raw[i])
        rho = np.empty(cnt)
        z = 0.0
        for i in range(cnt):
            rho[i] = np.exp(raw[a + i] - m)
            z += rho[i]
        for i in range(cnt):
            rho[i] /= z
        phi = np.empty(cnt)
        x = states[q]
        total = 0.0
        for i in range(cnt):
            x = (214013 * x + 2531011) & 0xFFFFFFFF
            gamma = ((x >> 16) & 0x7FFF) / 32768.0
            phi[i] = 2.0 ** int(y[a + i]) - gamma
            total += phi[i]
        states[q] = x
        inv = 1.0 / max(_EPS, total)
        s1 = 0.0
        for i in range(cnt):
            t = rho[i] - phi[i] * inv
            out_g[a + i] = t
            phi[i] = t / (1.0 - rho[i])
            s1 += phi[i]
        s2 = 0.0
        for i in range(cnt):
            t = rho[i] * (s1 - phi[i])
            out_g[a + i] += t
            phi[i] = t / (1.0 - rho[i])
            s2 += phi[i]
        for i in range(cnt):
            out_g[a + i] += rho[i] * (s2 - phi[i])
            out_h[a + i] = rho[i] * (1.0 - rho[i])


def _xendcg_naive(y, raw, group_ptr, states, out_g, out_h):
    """Plain-Python twin of ``_xendcg_kernel`` (same draws, same order)."""
    for q in range(len(group_ptr) - 1):
        a, b = int(group_ptr[q]), int(group_ptr[q + 1])
        idx = list(range(a, b))
        if len(idx) <= 1:
            for i in idx:
                out_g[i] = out_h[i] = 0.0
            continue
        e = [np.exp(raw[i] - max(raw[a:b])) for i in idx]
        rho = [v / sum(e) for v in e]
        x = int(states[q])
        phi = []
        for i in idx:
            x = (214013 * x + 2531011) % 2**32
            phi.append(2.0 ** int(y[i]) - ((x >> 16) & 0x7FFF) / 32768.0)
        states[q] = x
        P = max(_EPS, sum(phi))
        t1 = [r - p / P for r, p in zip(rho, phi)]
        u1 = [t / (1 - r) for t, r in zip(t1, rho)]
        t2 = [r * (sum(u1) - u) for r, u in zip(rho, u1)]
        u2 = [t / (1 - r) for t, r in zip(t2, rho)]
        for k, i in enumerate(idx):
            out_g[i] = t1[k] + t2[k] + rho[k] * (sum(u2) - u2[k])
            out_h[i] = rho[k] * (1 - rho[k])


def make_xendcg(base, seed: int = 0, label_gain=None):
    """The loss object (a ``ranking._RankingLoss`` subclass ``base`` passed in, to keep the
    import one-way)."""

    class XeNDCG(base):
        """XE-NDCG (see ``sparkxml_kernels.gbt.ranking_xendcg``)."""

        name = "xendcg"
        # the booster hands over the global row ids (booster.train) when it has them
        wants_row_ids = True

        def __init__(self):
            super().__init__(1.0, label_gain)
            self.seed = int(seed)
            self.row_ids = None
            self._states = None

        def _states_for(self, gp):
            if self._states is None or self._states.size != gp.size - 1:
                self._states = query_states(gp, self.seed, self.row_ids)
            return self._states

        def gradients(self, y, raw, w, out_g, out_h, group_ptr=None):
            yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
            g, h = np.empty(yi.size, FLOAT), np.empty(yi.size, FLOAT)
            _xendcg_kernel(yi.astype(FLOAT), r, gp, self._states_for(gp), g, h)
            self._finish(w, g, h, out_g, out_h)

        def gradients_naive(self, y, raw, w, out_g, out_h, group_ptr=None):
            yi, r, gp = self._prepare(y, raw, w, out_g, out_h, group_ptr)
            g, h = np.empty(yi.size), np.empty(yi.size)
            _xendcg_naive(yi, r, gp, self._states_for(gp), g, h)
            self._finish(w, g, h, out_g, out_h)

    return XeNDCG()
