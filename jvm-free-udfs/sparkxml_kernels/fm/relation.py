"""Relation blocks (myFM's ``RelationBlock``, libFM's block structure BS) for the MCMC solver.

Rating data repeats each user's and each item's features in every rating. A relation block
stores them once: a block matrix ``X_B`` (n_B block rows x d_B features) and, per data row i,
the index ``idx_B[i]`` of its block row. Row i's feature vector is the concatenation

    x_i = [x_flat_i, X_1[idx_1[i]], X_2[idx_2[i]], ...]

(flat features first, then each block's features, offset by the widths before it): the model
is an ordinary factorization machine over d = d_flat + sum d_B features, and
:func:`expand_relations` writes those vectors out (the naive twin of everything here).

What the block structure saves (Rendle, ICML 2013 "Scaling factorization machines to
relational data"; myFM's relation blocks): the per-block terms of the caches -- q_B = X_B V,
X_B w and the squared terms -- are computed once per block row and gathered per data row; and
the Gibbs update of a block feature j (one factor f) reads per-block-row aggregates instead of
the data rows. For a block row b, with c the row weights and q_i, r_i row i's factor cache
and residual, the aggregates over the rows i with idx[i] = b are

    W = sum c,  S1 = sum c q,  S2 = sum c q^2,  SR = sum c r,  SRQ = sum c r q,

and the sums the update needs (``cd``: A_j = sum c h^2, G_j = sum c r h, h = x (q - v x))
are, with x = X_B[b, j] and u = v_jf x,

    A_j = sum_b x^2 (S2 - 2 u S1 + u^2 W),     G_j = sum_b x (SRQ - u SR)

(LINEAR: h = x, A_j = sum_b x^2 W, G_j = sum_b x SR). After a draw moves v_jf by delta, every
row of block row b moves the same way -- q += t, r += t (q - u) with t = delta x -- so the
aggregates move in closed form, and the rows themselves once per block and factor
(r += D_b q + E_b, q += D_b, with D_b, E_b the block row's accumulated moves). A block's
features thus cost O(nnz(X_B)) per factor instead of O(rows x nnz per block row), plus O(rows)
to build the aggregates and move the rows.

The aggregates are summed per row block and the row blocks added in block order (``order``;
one all-reduce of 5 x n_B numbers per block and factor): every rank then holds the same
aggregates and draws the block's features alone, so the chain is the same for any number of
workers, bit for bit. Against the flat encoding the sums are regrouped: the same chain up to the rounding of
those sums (tests: the same predictions to float32 rounding).
"""
from __future__ import annotations

import numpy as np

from .._dtypes import FLOAT, INDEX, INDPTR
from .._jit import njit
from .cd import factor_cache
from .layout import (
    BlockedData,
    block_entries,
    check_sorted_indices,
    exclusive_segments,
    next_cooccurring,
)
from .order import fixed_sum
from .solver import update_blocks

__all__ = ["RelationBlock", "RelationalData", "expand_relations", "check_relation_index"]


def check_relation_index(idx, n_block_rows: int, name: str) -> np.ndarray:
    """int64 (n,) block-row indices, checked to lie in [0, n_block_rows); ``name`` (the index
    column) is named in the error."""
    idx = np.asarray(idx)
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"relation index '{name}' must hold integers, got {idx.dtype}")
    idx = idx.astype(np.int64, copy=False)
    bad = np.flatnonzero((idx < 0) | (idx >= n_block_rows))
    if bad.size:
        raise ValueError(f"relation index '{name}' holds the value {int(idx[bad[0]])} (row "
                         f"{int(bad[0])}); its block has {n_block_rows} rows (indices 0.."
                         f"{n_block_rows - 1})")
    return idx


class RelationBlock:
    """One relation block: a CSR block matrix (block-local feature ids) and its name.

    Parameters
    ----------
    indptr, indices, data : CSR of the block matrix (int64 (n_B + 1,), int32, float64)
    d : int, the block's width d_B
    name : str, the index column (named in errors)
    """

    def __init__(self, indptr, indices, data, d: int, name: str = "relation"):
        self.indptr = np.ascontiguousarray(indptr, INDPTR)
        self.indices = np.ascontiguousarray(indices, INDEX).copy()
        self.data = np.ascontiguousarray(data, FLOAT).copy()
        self.d, self.name = int(d), str(name)
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= self.d):
            raise ValueError(f"relation block of '{self.name}' has a feature index outside "
                             f"[0, {self.d})")
        if self.data.size and not np.isfinite(self.data).all():
            raise ValueError(f"relation block of '{self.name}' holds a non-finite value")
        check_sorted_indices(self.indptr, self.indices, self.data, f"block of {self.name}")

    @classmethod
    def from_matrix(cls, X, name: str = "relation") -> "RelationBlock":
        """From a numpy 2-D array or a scipy.sparse matrix (row b = block row b)."""
        import scipy.sparse as sp

        X = sp.csr_matrix(X)
        X.sum_duplicates()
        return cls(X.indptr, X.indices, X.data, X.shape[1], name)

    @property
    def n_rows(self) -> int:
        return self.indptr.size - 1


@njit(cache=True, nogil=True)
def _gather_rows(indptr, indices, data, parts_ptr, parts_ix, parts_dv, offsets, idx, out_ip,
                 out_ix, out_dv):
    """Row i = flat row i, then block row idx[r, i] of each block r (offset feature ids)."""
    pos = 0
    n = indptr.shape[0] - 1
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            out_ix[pos] = indices[p]
            out_dv[pos] = data[p]
            pos += 1
        for r in range(idx.shape[0]):
            b = idx[r, i]
            ip = parts_ptr[r]
            for p in range(ip[b], ip[b + 1]):
                out_ix[pos] = parts_ix[r][p] + offsets[r]
                out_dv[pos] = parts_dv[r][p]
                pos += 1
        out_ip[i + 1] = pos


def expand_relations(indptr, indices, data, d_flat: int, blocks, idx):
    """The flat encoding: CSR of x_i = [x_flat_i, X_1[idx_1[i]], ...] (see the module
    docstring).

    Parameters
    ----------
    indptr, indices, data : CSR (n rows) of the flat features (d_flat columns; may have none)
    blocks : list of RelationBlock
    idx : int64 (R, n) block row of each data row, per block (checked)

    Returns
    -------
    (indptr int64 (n + 1,), indices int32, data float64, d int)

    Examples
    --------
    >>> import numpy as np
    >>> users = RelationBlock.from_matrix(np.eye(2), "user")
    >>> ip, ix, dv, d = expand_relations(np.zeros(4, np.int64), np.zeros(0, np.int32),
    ...                                  np.zeros(0), 0, [users], np.array([[1, 0, 1]]))
    >>> ix.tolist(), d
    ([1, 0, 1], 2)
    """
    from numba.typed import List

    indptr = np.asarray(indptr, INDPTR)
    idx = np.ascontiguousarray(np.asarray(idx, np.int64).reshape(len(blocks), -1))
    n = indptr.size - 1
    for r, blk in enumerate(blocks):
        idx[r] = check_relation_index(idx[r], blk.n_rows, blk.name)
    offsets = np.cumsum([int(d_flat)] + [b.d for b in blocks])
    nnz = int(indptr[-1]) + sum(int(np.sum(np.diff(b.indptr)[idx[r]])) for r, b in
                                enumerate(blocks))
    out_ip = np.zeros(n + 1, INDPTR)
    out_ix = np.empty(nnz, INDEX)
    out_dv = np.empty(nnz, FLOAT)
    if not blocks:
        return indptr.copy(), np.asarray(indices, INDEX).copy(), np.asarray(data, FLOAT).copy(), \
            int(d_flat)
    _gather_rows(indptr, np.asarray(indices, INDEX), np.asarray(data, FLOAT),
                 List([b.indptr for b in blocks]), List([b.indices for b in blocks]),
                 List([b.data for b in blocks]), offsets[:-1].astype(np.int64), idx, out_ip,
                 out_ix, out_dv)
    return out_ip, out_ix, out_dv, int(offsets[-1])


# ---------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def _aggregates(idx, rbptr, q, r, c2, mode, out):
    """out[l, :, b] (zeroed, float64 (L, 5, n_B)): W, S1, S2, SR, SRQ of the rows of row block
    l with idx = b, in row order (mode LINEAR: W and SR only; c2 None: weights 1)."""
    for lb in range(rbptr.shape[0] - 1):
        o = out[lb]
        for i in range(rbptr[lb], rbptr[lb + 1]):
            b = idx[i]
            if c2 is None:
                c = 1.0
            else:
                c = c2[i]
            o[0, b] += c
            o[3, b] += c * r[i]
            if mode != 0:
                qi = q[i]
                o[1, b] += c * qi
                o[2, b] += c * qi * qi
                o[4, b] += c * r[i] * qi


@njit(cache=True, nogil=True)
def _block_update(seg, ptr, brows, feats, vals, off, mode, theta, lam, mu, nrm, alpha, S, D,
                  E):
    """Gibbs draws of every feature of one block, segment by segment (exclusive ranges of the
    block's features), from the aggregates S (float64 (5, n_B): W, S1, S2, SR, SRQ per block
    row, summed over all rows); S moves with each draw and D / E collect each block row's
    moves of q and r (module docstring). ``theta``, ``lam``, ``mu``, ``nrm``: indexed by
    global feature id (block feature j is off + j)."""
    for s in range(seg.shape[0] - 1):
        fs, fe, lo, hi = seg[s], seg[s + 1], ptr[s], ptr[s + 1]
        m = fe - fs
        A = np.zeros(m)
        G = np.zeros(m)
        for p in range(lo, hi):
            b = brows[p]
            W = S[0, b]
            if W == 0.0:
                continue  # no row (or only weight-0 rows) uses block row b
            j = feats[p] - fs
            x = vals[p]
            if mode == 0:
                A[j] += x * x * W
                G[j] += x * S[3, b]
            else:
                u = theta[off + fs + j] * x
                A[j] += x * x * (S[2, b] - 2.0 * u * S[1, b] + u * u * W)
                G[j] += x * (S[4, b] - u * S[3, b])
        old = theta[off + fs:off + fe].copy()
        delta = np.empty(m)
        for j in range(m):
            g = off + fs + j
            prec = alpha * A[j] + lam[g]
            new = (alpha * (A[j] * old[j] - G[j]) + lam[g] * mu[g]) / prec \
                + nrm[g] / np.sqrt(prec)
            theta[g] = new
            delta[j] = new - old[j]
        for p in range(lo, hi):
            b = brows[p]
            j = feats[p] - fs
            x = vals[p]
            t = delta[j] * x
            if mode == 0:
                S[3, b] += t * S[0, b]
                E[b] += t
            else:
                u = old[j] * x
                W, S1, S2, SR, SRQ = S[0, b], S[1, b], S[2, b], S[3, b], S[4, b]
                S[4, b] = SRQ + t * SR + t * S2 + t * t * S1 - t * u * S1 - t * t * u * W
                S[3, b] = SR + t * (S1 - u * W)
                S[2, b] = S2 + 2.0 * t * S1 + t * t * W
                S[1, b] = S1 + t * W
                E[b] += t * (D[b] - u)
                D[b] += t


@njit(cache=True, nogil=True)
def _push_rows(idx, D, E, q, r, mode):
    """The rows' caches after a block's updates: r += D q + E, q += D (LINEAR: r += E)."""
    for i in range(idx.shape[0]):
        b = idx[i]
        if mode == 0:
            r[i] += E[b]
        else:
            r[i] += D[b] * q[i] + E[b]
            q[i] += D[b]


def _block_sums(ip, ix, dv, Vt, w):
    """Per block row: X_B V (float64 (k, n_B)), X_B w, and sum_f sum_j (v_jf x_bj)^2."""
    k, nb = Vt.shape[0], ip.size - 1
    QB = np.zeros((k, nb), FLOAT)
    factor_cache(ip, ix, dv, Vt, QB)
    rows = np.repeat(np.arange(nb), np.diff(ip))
    # (float64 even when there are no entries: bincount of nothing is int64)
    lin = np.bincount(rows, weights=w[ix] * dv, minlength=nb).astype(FLOAT)
    sq = np.bincount(rows, weights=((Vt[:, ix] * dv) ** 2).sum(axis=0),
                     minlength=nb).astype(FLOAT)
    return QB, lin, sq


# ---------------------------------------------------------------------------- data
class _Drawn:
    """A GibbsRule whose normals are already drawn (for the whole feature range): the flat
    part's update must not draw again."""

    def __init__(self, rule):
        self.kind, self.p0, self.p1 = rule.kind, rule.p0, rule.p1
        self.lam, self.mu, self.normals = rule.lam, rule.mu, rule.normals

    def draw(self, n):
        return None


class RelationalData:
    """One worker's rows for the MCMC sweep: the flat part (``layout.BlockedData`` over the
    flat features) and the relation blocks with each row's block-row index.

    Parameters
    ----------
    flat : BlockedData over the flat features [0, d_flat)
    blocks : list of RelationBlock
    idx : int64 (R, n) the rows' block-row indices (rows in the flat part's order)
    """

    def __init__(self, flat: BlockedData, blocks, idx):
        self.flat = flat
        self.n, self.rb = flat.n, flat.rb
        self.blocks = list(blocks)
        self.idx = [check_relation_index(idx[r], b.n_rows, b.name)
                    for r, b in enumerate(self.blocks)]
        self.offsets = np.cumsum([flat.d] + [b.d for b in self.blocks])[:-1].astype(np.int64)
        self.d = flat.d + sum(b.d for b in self.blocks)
        # each block's exclusive segments (features never in one block row) and entry lists
        self.segments, self.entries = [], []
        for b in self.blocks:
            seg = exclusive_segments(next_cooccurring(b.indptr, b.indices, b.d), b.d)
            self.segments.append(seg)
            self.entries.append(block_entries(b.indptr, b.indices, b.data, seg))
        self.n_blocks = flat.n_blocks + sum(s.size - 1 for s in self.segments)

    def caches(self, w0, w, Vt):
        """(Q float64 (k, n), pred float64 (n,)): the factor caches and the prediction, with
        the blocks' terms computed once per block row and gathered per data row."""
        f = self.flat
        k = Vt.shape[0]
        Q = np.zeros((k, self.n), FLOAT)
        factor_cache(f.indptr, f.indices, f.data, Vt, Q)
        rows = np.repeat(np.arange(self.n), np.diff(f.indptr))
        lin = np.bincount(rows, weights=w[f.indices] * f.data, minlength=self.n).astype(FLOAT)
        sq = np.bincount(rows, weights=((Vt[:, f.indices] * f.data) ** 2).sum(axis=0),
                         minlength=self.n).astype(FLOAT)
        for b, off, idx in zip(self.blocks, self.offsets, self.idx):
            QB, linB, sqB = _block_sums(b.indptr, b.indices, b.data,
                                        np.ascontiguousarray(Vt[:, off:off + b.d]),
                                        w[off:off + b.d])
            Q += QB[:, idx]
            lin += linB[idx]
            sq += sqB[idx]
        pred = w0 + lin + 0.5 * ((Q * Q).sum(axis=0) - sq)
        return Q, pred

    def update(self, mode: int, theta, q, rows, coll, rule) -> None:
        """One Gibbs update of ``theta`` (w, or one factor's row of Vt; q: that factor's
        cache, None for LINEAR) over every feature: the flat blocks, then each relation
        block's segments (``solver.update_blocks``' contract)."""
        rule.draw(self.d)
        drawn = _Drawn(rule)
        update_blocks(self.flat, range(self.flat.n_blocks), mode, theta, 0, q, q, rows, coll,
                      drawn)
        qa = np.zeros(1, FLOAT) if q is None else q
        for b, off, idx, seg, (ptr, brows, feats, vals) in zip(
                self.blocks, self.offsets, self.idx, self.segments, self.entries):
            # the aggregates of all rows, summed over the row blocks in order: every rank
            # then draws the block's features alone, the same numbers for any world size
            parts = np.zeros((self.rb.n_blocks, 5, b.n_rows), FLOAT)
            _aggregates(idx, self.rb.ptr, qa, rows.r, rows.c2, mode, parts)
            S = fixed_sum(coll, parts)
            D = np.zeros(b.n_rows, FLOAT)
            E = np.zeros(b.n_rows, FLOAT)
            _block_update(seg, ptr, brows, feats, vals, int(off), mode, theta, drawn.lam,
                          drawn.mu, drawn.normals, float(drawn.p0), S, D, E)
            _push_rows(idx, D, E, qa, rows.r, mode)
