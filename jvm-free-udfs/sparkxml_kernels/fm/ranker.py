"""Scoring and top-k recommendation with an FM ranker (``modelKind`` "fm_ranker", trained by
``bpr``): s(u, i, x) = b_i + <v_u, v_i> + <v_u + v_i, q(x)> + ½ Σ_f [q_f² − Σ_j v_jf² x_j²],
q(x) = Σ_j v_j x_j: the factorization machine over [one-hot user, one-hot item, x].

=================  ===================  ================================================
key                dtype, shape         meaning
=================  ===================  ================================================
user_ids           int64 (U,)           the user ids seen in training, ascending
item_ids           int64 (I,)           the item ids (the catalogue), ascending
item_bias          float32 (I,)         b_i
user_factors       float32 (U, k)       v_u
item_factors       float32 (I, k)       v_i
feature_factors    float32 (d, k)       v_j of the context features (d may be 0)
n_features         int64 ()             d
=================  ===================  ================================================

A user or item not seen in training scores NaN. Recommendations score every item of the
catalogue without context (x = 0), best first, ties to the lower item id; they exclude
nothing (not even the user's training items), as MLlib's ALS.
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT
from .._jit import njit
from .predictor import _Predictor, _rows

RANKER_KEYS = ("user_ids", "item_ids", "item_bias", "user_factors", "item_factors",
               "feature_factors", "n_features")

__all__ = ["FMRankerPredictor", "pair_scores", "pair_scores_naive", "top_items",
           "top_items_naive", "RANKER_KEYS"]


@njit(cache=True, nogil=True)
def _pair_scores(u_idx, i_idx, indptr, indices, data, bi, Vu, Vi, Vx, out):
    k = Vu.shape[1]
    q = np.empty(k, np.float64)
    for r in range(u_idx.shape[0]):
        u, i = u_idx[r], i_idx[r]
        if u < 0 or i < 0:
            out[r] = np.nan
            continue
        s = np.float64(bi[i])
        for f in range(k):
            s += np.float64(Vu[u, f]) * np.float64(Vi[i, f])
        lo, hi = indptr[r], indptr[r + 1]
        if hi > lo:
            q2 = 0.0
            for f in range(k):
                q[f] = 0.0
            for p in range(lo, hi):
                j = indices[p]
                x = data[p]
                for f in range(k):
                    vx = np.float64(Vx[j, f]) * x
                    q[f] += vx
                    q2 += vx * vx
            for f in range(k):
                s += (np.float64(Vu[u, f]) + np.float64(Vi[i, f])) * q[f] + 0.5 * q[f] * q[f]
            s -= 0.5 * q2
        out[r] = s


def pair_scores(u_idx, i_idx, indptr, indices, data, bi, Vu, Vi, Vx) -> np.ndarray:
    """float64 (n,): s(u, i, x) of each row (indices into the catalogues; -1: unknown, NaN)."""
    out = np.empty(np.asarray(u_idx).size, FLOAT)
    _pair_scores(np.asarray(u_idx, np.int64), np.asarray(i_idx, np.int64),
                 np.asarray(indptr, np.int64), np.asarray(indices, np.int32),
                 np.asarray(data, FLOAT), bi, Vu, Vi, Vx, out)
    return out


def pair_scores_naive(u_idx, i_idx, X, bi, Vu, Vi, Vx) -> np.ndarray:
    """Slow twin of :func:`pair_scores`: the FM of ``predictor.fm_scores_naive`` over the dense
    rows [one-hot u, one-hot i, x] (``X`` dense (n, d))."""
    from .predictor import fm_scores_naive

    U, I = Vu.shape[0], Vi.shape[0]
    X = np.asarray(X, FLOAT).reshape(len(u_idx), Vx.shape[0])
    Z = np.zeros((len(u_idx), U + I + Vx.shape[0]))
    Z[np.arange(len(u_idx)), u_idx] = 1.0
    Z[np.arange(len(u_idx)), U + np.asarray(i_idx)] = 1.0
    Z[:, U + I:] = X
    W = np.concatenate([np.zeros(U), np.asarray(bi, FLOAT), np.zeros(Vx.shape[0])])
    V = np.concatenate([Vu, Vi, Vx]).astype(FLOAT)
    return fm_scores_naive(Z, np.zeros(1), W[None], V[None], 0)[0]


@njit(cache=True, nogil=True)
def _top_items(u_idx, bi, Vu, Vi, kk, out_items, out_scores):
    n_items, k = Vi.shape
    s = np.empty(n_items, np.float64)
    for r in range(u_idx.shape[0]):
        u = u_idx[r]
        if u < 0:
            for t in range(kk):
                out_items[r, t] = -1
                out_scores[r, t] = np.nan
            continue
        for i in range(n_items):
            v = np.float64(bi[i])
            for f in range(k):
                v += np.float64(Vu[u, f]) * np.float64(Vi[i, f])
            s[i] = -v
        order = np.argsort(s, kind="mergesort")  # stable: ties to the lower item index
        for t in range(kk):
            out_items[r, t] = order[t]
            out_scores[r, t] = -s[order[t]]


def top_items(u_idx, bi, Vu, Vi, k: int):
    """(item indices int64 (n, k'), scores float64 (n, k')), k' = min(k, items): the best
    items of each user (index -1: unknown user, -1 and NaN)."""
    u_idx = np.asarray(u_idx, np.int64)
    kk = min(int(k), Vi.shape[0])
    items = np.empty((u_idx.size, kk), np.int64)
    scores = np.empty((u_idx.size, kk), FLOAT)
    _top_items(u_idx, bi, Vu, Vi, kk, items, scores)
    return items, scores


def top_items_naive(u_idx, bi, Vu, Vi, k: int):
    """Slow twin of :func:`top_items`: every score by :func:`pair_scores_naive`, then a full
    sort (descending score, then ascending index)."""
    kk = min(int(k), Vi.shape[0])
    I = Vi.shape[0]
    items, scores = [], []
    for u in u_idx:
        s = pair_scores_naive(np.full(I, u), np.arange(I), np.zeros((I, 0)), bi, Vu, Vi,
                              np.zeros((0, Vu.shape[1])))
        order = np.lexsort((np.arange(I), -s))[:kk]
        items.append(order)
        scores.append(s[order])
    return np.array(items, np.int64).reshape(-1, kk), np.array(scores).reshape(-1, kk)


class FMRankerPredictor:
    """An FM ranker (see the module docstring): ``score(users, items, X)`` and
    ``recommend(users, k)`` on raw user / item ids."""

    keys = RANKER_KEYS

    def __init__(self, user_ids, item_ids, item_bias, user_factors, item_factors,
                 feature_factors, n_features: int):
        self.user_ids = np.ascontiguousarray(user_ids, np.int64).reshape(-1)
        self.item_ids = np.ascontiguousarray(item_ids, np.int64).reshape(-1)
        for name, ids in (("user_ids", self.user_ids), ("item_ids", self.item_ids)):
            if ids.size == 0 or np.any(np.diff(ids) <= 0):
                raise ValueError(f"{name} must be non-empty and strictly ascending")
        U, I, d = self.user_ids.size, self.item_ids.size, int(n_features)
        self.n_features = d
        self.item_bias = np.ascontiguousarray(item_bias, np.float32).reshape(-1)
        self.user_factors = np.ascontiguousarray(user_factors, np.float32)
        self.item_factors = np.ascontiguousarray(item_factors, np.float32)
        self.feature_factors = np.ascontiguousarray(feature_factors, np.float32)
        k = self.user_factors.shape[1] if self.user_factors.ndim == 2 else -1
        if (self.item_bias.size != I or self.user_factors.shape != (U, k)
                or self.item_factors.shape != (I, k)
                or self.feature_factors.reshape(-1).size != d * max(k, 0)):
            raise ValueError(f"ranker arrays disagree: {U} users, {I} items, {d} features, "
                             f"item_bias {self.item_bias.shape}, user_factors "
                             f"{self.user_factors.shape}, item_factors "
                             f"{self.item_factors.shape}, feature_factors "
                             f"{self.feature_factors.shape}")
        self.feature_factors = self.feature_factors.reshape(d, k)
        for a in (self.item_bias, self.user_factors, self.item_factors, self.feature_factors):
            if not np.isfinite(a).all():
                raise ValueError("ranker parameters hold NaN or infinite values")

    @property
    def factor_size(self) -> int:
        return self.user_factors.shape[1]

    @staticmethod
    def _index(ids, values) -> np.ndarray:
        values = np.asarray(values).reshape(-1)
        if values.dtype.kind == "f":
            if not np.all(np.isfinite(values) & (values == np.floor(values))):
                raise ValueError("user and item ids must be integers")
        v = values.astype(np.int64)
        at = np.minimum(np.searchsorted(ids, v), ids.size - 1)
        return np.where(ids[at] == v, at, -1).astype(np.int64)

    def user_index(self, users) -> np.ndarray:
        """int64 (n,): position of each user id in ``user_ids``, -1 when unseen."""
        return self._index(self.user_ids, users)

    def item_index(self, items) -> np.ndarray:
        """int64 (n,): position of each item id in ``item_ids``, -1 when unseen."""
        return self._index(self.item_ids, items)

    def score_csr(self, u_idx, i_idx, indptr, indices, data) -> np.ndarray:
        """float64 (n,) scores for catalogue indices and context CSR rows."""
        return pair_scores(u_idx, i_idx, indptr, indices, data, self.item_bias,
                           self.user_factors, self.item_factors, self.feature_factors)

    def score(self, users, items, X=None) -> np.ndarray:
        """float64 (n,): s(user, item, x) for id arrays ``users``, ``items`` (n,) and
        optional context ``X`` (dense (n, d) or scipy CSR; None: no context); NaN where the
        user or item was not seen in training."""
        u, i = self.user_index(users), self.item_index(items)
        if u.size != i.size:
            raise ValueError(f"users has {u.size} ids, items {i.size}")
        n = u.size
        if X is None:
            indptr, indices, data = np.zeros(n + 1, np.int64), np.zeros(0, np.int32), \
                np.zeros(0)
        else:
            shape = tuple(np.shape(X))
            if shape != (n, self.n_features):
                raise ValueError(f"X has shape {shape}; expected ({n}, {self.n_features}) "
                                 f"(one context row a pair)")
            # the FM predictors' reading of X: dense or CSR, finiteness checked
            indptr, indices, data = _rows(X, self.n_features)
        return self.score_csr(u, i, indptr, indices, data)

    def recommend_index(self, u_idx, k: int):
        """(item indices, scores) of :func:`top_items` for user indices."""
        return top_items(u_idx, self.item_bias, self.user_factors, self.item_factors, k)

    def recommend(self, users, k: int):
        """(item ids int64 (n, k'), scores float64 (n, k')), k' = min(k, catalogue size): the
        best items of each user id, best first; an unseen user gets ids -1 and NaN scores."""
        if int(k) < 1:
            raise ValueError(f"k={k} must be >= 1")
        idx, scores = self.recommend_index(self.user_index(users), k)
        return np.where(idx >= 0, self.item_ids[np.maximum(idx, 0)], -1), scores

    def to_arrays(self) -> dict:
        return {"user_ids": self.user_ids, "item_ids": self.item_ids,
                "item_bias": self.item_bias, "user_factors": self.user_factors,
                "item_factors": self.item_factors, "feature_factors": self.feature_factors,
                "n_features": np.asarray(self.n_features, np.int64)}

    @classmethod
    def from_arrays(cls, a: dict) -> "FMRankerPredictor":
        return cls(a["user_ids"], a["item_ids"], a["item_bias"], a["user_factors"],
                   a["item_factors"], a["feature_factors"], int(a["n_features"]))

    # the FM predictors' loader: ``keys`` required, then ``from_arrays``
    from_directory = _Predictor.__dict__["from_directory"]
