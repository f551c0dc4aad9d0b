"""A task's training rows: CSR grouped by block and sorted by content key, built once.

Two ways in:

- ``prepare``: any row order (tests, ``solver.fit_local``): sorts by (block, key), drops rows
  of weight 0, appends the bias feature. It holds the input, the output and index
  temporaries at once (~4x the CSR at its peak).
- ``RowsBuilder``: one Arrow batch at a time, written straight into arrays sized from the
  batches' lengths; the caller releases each batch once written. Fresh numpy arrays only
  take memory where they are written, so the input shrinks as the output grows and the peak
  stays near one copy of the CSR (the aim: worker memory <= 2x its CSR partition).
  - With a ``placement`` (``placement()``: every row's place in (block, key) order,
    computed from the batches' keys, weights and entry counts before any CSR is built),
    rows arrive in any order and each one is written where it belongs (the Spark stage
    sorts by key only, so each block's part is written front to back).
  - Without one, rows must arrive sorted by (block, key); rows out of order fall back to
    ``prepare``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class LinearData:
    """One task's rows, grouped by block and sorted by key inside each block.

    indptr int64 (n+1,), indices int32, data float64: CSR with the bias column (index
    ``n_features - 1``) appended when the model fits an intercept; labels int32 (n,);
    cw float64 (n,) = C * row weight (> 0); qd float64 (n,) = |x_i|^2;
    block_ids int64 (nb,) global ids of the blocks held, increasing; block_ptr int64 (nb+1,).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    labels: np.ndarray
    cw: np.ndarray
    qd: np.ndarray
    block_ids: np.ndarray
    block_ptr: np.ndarray
    n_features: int

    @property
    def n(self) -> int:
        return int(self.labels.size)

    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.indptr, self.indices, self.data, self.labels,
                                          self.cw, self.qd)))


def prepare(indptr, indices, data, labels, weights, keys, blocks, C: float,
            fit_intercept: bool, n_features: int) -> LinearData:
    """Order rows by (block, key), drop zero-weight rows, append the bias feature.

    Parameters
    ----------
    indptr, indices, data : CSR (int64, int32, float) of the raw features, width n_features
    labels : int (n,) class ids; weights : float (n,) >= 0 or None
    keys : int64 (n,) content keys; blocks : int64 (n,) block id of each row
    C : float > 0; fit_intercept : bool (a bias feature of value 1, regularised as w)
    """
    n = int(labels.size)
    indptr = np.asarray(indptr, np.int64)
    order = np.lexsort((np.asarray(keys, np.int64), np.asarray(blocks, np.int64)))
    keep = order if weights is None else order[np.asarray(weights)[order] > 0]
    lens = (indptr[1:] - indptr[:-1])[keep]
    extra = 1 if fit_intercept else 0
    new_ptr = np.zeros(keep.size + 1, np.int64)
    np.cumsum(lens + extra, out=new_ptr[1:])
    nnz = int(new_ptr[-1])
    # gather the kept rows' entries in the new order, with a slot for the bias at row end
    starts = np.repeat(indptr[:-1][keep] - new_ptr[:-1], lens)
    pos = np.arange(nnz, dtype=np.int64)
    body = np.ones(nnz, bool)
    if extra:
        body[new_ptr[1:] - 1] = False
    src = pos[body] + starts if n else pos[body]
    ind = np.empty(nnz, np.int32)
    val = np.empty(nnz, np.float64)
    ind[body] = np.asarray(indices)[src]
    val[body] = np.asarray(data, np.float64)[src]
    if extra:
        ind[~body] = n_features
        val[~body] = 1.0
    lab = np.ascontiguousarray(np.asarray(labels)[keep], np.int32)
    w = np.ones(keep.size) if weights is None else np.asarray(weights, np.float64)[keep]
    cw = C * w
    rows = np.repeat(np.arange(keep.size, dtype=np.int64), lens + extra)
    qd = np.bincount(rows, weights=val * val, minlength=keep.size)
    qd = np.ascontiguousarray(qd, np.float64)
    b = np.asarray(blocks, np.int64)[keep]
    ids, first = np.unique(b, return_index=True)
    ptr = np.append(first, keep.size).astype(np.int64)
    return LinearData(new_ptr, ind, val, lab, cw, qd, ids.astype(np.int64), ptr,
                      int(n_features) + extra)




class RowsBuilder:
    """Write a task's rows, batch by batch, straight into arrays sized beforehand.

    Parameters
    ----------
    C : float > 0
    fit_intercept : bool
        Append a bias feature of value 1 (index ``n_features``), regularised as w.
    max_rows, max_nnz : int
        Upper bounds on the rows and stored entries to come (zero-weight rows and the zeros
        of dense vectors are dropped, so fewer may arrive).
    """

    def __init__(self, C: float, fit_intercept: bool, max_rows: int, max_nnz: int,
                 placement=None):
        self.C = float(C)
        self.extra = 1 if fit_intercept else 0
        self.dest = None
        if placement is not None:
            # every arriving row's place, and the final indptr (bias slots included)
            self.dest, self.indptr = placement
            self.arrived = 0
            max_rows = self.indptr.size - 1
        else:
            self.indptr = np.empty(max_rows + 1, np.int64)
            self.indptr[0] = 0
        self.ind = np.empty(max_nnz + self.extra * max_rows, np.int32)
        self.val = np.empty(max_nnz + self.extra * max_rows, np.float64)
        self.lab = np.empty(max_rows, np.int32)
        self.cw = np.empty(max_rows, np.float64)
        self.qd = np.empty(max_rows, np.float64)
        self.keys = np.empty(max_rows, np.int64)
        self.blk = np.empty(max_rows, np.int64)
        self.rows = 0
        self.in_order = True
        self._n_features = None

    def add(self, indptr, indices, data, labels, weights, keys, blocks, n_features) -> None:
        """One batch: CSR (int64, int32, float64) and per-row labels (int), weights (float or
        None), keys and blocks (int64); ``n_features`` is the bias column's index."""
        keys = np.asarray(keys, np.int64)
        blocks = np.asarray(blocks, np.int64)
        if self.dest is not None:
            self._place(indptr, indices, data, labels, weights, keys, blocks, n_features)
            return
        if weights is not None:
            keep = np.asarray(weights) > 0
            if not keep.all():
                indptr, indices, data = _rows(indptr, indices, data, np.flatnonzero(keep))
                labels, weights = labels[keep], weights[keep]
                keys, blocks = keys[keep], blocks[keep]
        m = keys.size
        if not m:
            return
        r = self.rows
        if self.in_order:
            db, dk = np.diff(blocks), np.diff(keys)
            self.in_order = bool(np.all((db > 0) | ((db == 0) & (dk >= 0))))
            if r and (blocks[0], keys[0]) < (self.blk[r - 1], self.keys[r - 1]):
                self.in_order = False
        lens = np.diff(indptr) + self.extra
        base = int(self.indptr[r])
        dst = self.indptr[r:r + m + 1]
        np.cumsum(lens, out=dst[1:])
        dst[1:] += base
        end = int(dst[-1])
        seg_i, seg_v = self.ind[base:end], self.val[base:end]
        if self.extra:
            body = np.ones(end - base, bool)
            body[dst[1:] - 1 - base] = False
            seg_i[body] = indices
            seg_v[body] = data
            seg_i[~body] = n_features
            seg_v[~body] = 1.0
        else:
            seg_i[:] = indices
            seg_v[:] = data
        self.qd[r:r + m] = np.bincount(np.repeat(np.arange(m), lens), weights=seg_v * seg_v,
                                       minlength=m)
        self.lab[r:r + m] = labels
        self.cw[r:r + m] = self.C if weights is None else self.C * np.asarray(weights)
        self.keys[r:r + m] = keys
        self.blk[r:r + m] = blocks
        self.rows = r + m

    def _place(self, indptr, indices, data, labels, weights, keys, blocks, n_features):
        """A batch of a placed build: each kept row written at its final row and offset."""
        m = keys.size
        dest = self.dest[self.arrived:self.arrived + m]
        self.arrived += m
        src_rows = np.flatnonzero(dest >= 0)
        if not src_rows.size:
            return
        t = dest[src_rows]
        lens = indptr[src_rows + 1] - indptr[src_rows]
        if not np.array_equal(self.indptr[t + 1] - self.indptr[t] - self.extra, lens):
            raise RuntimeError("a batch's rows do not have the entries their placement counted")
        total = int(lens.sum())
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        src = np.repeat(indptr[src_rows], lens) + within
        dst = np.repeat(self.indptr[t], lens) + within
        vals = np.asarray(data, np.float64)[src]
        self.ind[dst] = np.asarray(indices)[src]
        self.val[dst] = vals
        # |x|^2 summed in entry order, then the bias (1.0), as the ordered build sums them
        qd = np.bincount(np.repeat(np.arange(src_rows.size), lens), weights=vals * vals,
                         minlength=src_rows.size).astype(np.float64, copy=False)
        if self.extra:
            self.ind[self.indptr[t] + lens] = n_features
            self.val[self.indptr[t] + lens] = 1.0
            qd += 1.0
        self.qd[t] = qd
        self.lab[t] = np.asarray(labels)[src_rows]
        self.cw[t] = self.C if weights is None else self.C * np.asarray(weights)[src_rows]
        self.keys[t] = keys[src_rows]
        self.blk[t] = blocks[src_rows]
        self.rows += int(src_rows.size)

    def finish(self, n_features: int) -> LinearData:
        """The task's ``LinearData`` (views of the arrays written)."""
        n = self.rows
        nnz = int(self.indptr[n])
        if not self.in_order:
            lens = np.diff(self.indptr[:n + 1]) - self.extra
            body = np.ones(nnz, bool)
            if self.extra:
                body[self.indptr[1:n + 1] - 1] = False
            ip = np.zeros(n + 1, np.int64)
            np.cumsum(lens, out=ip[1:])
            # C = 1 with weights C_i: prepare's C_i = 1 * C_i, exactly the values written
            return prepare(ip, self.ind[:nnz][body], self.val[:nnz][body], self.lab[:n],
                           self.cw[:n], self.keys[:n], self.blk[:n], 1.0, bool(self.extra),
                           n_features)
        ids, first = np.unique(self.blk[:n], return_index=True)
        ptr = np.append(first, n).astype(np.int64)
        return LinearData(self.indptr[:n + 1], self.ind[:nnz], self.val[:nnz], self.lab[:n],
                          self.cw[:n], self.qd[:n], ids.astype(np.int64), ptr,
                          int(n_features) + self.extra)


def placement(keys, blocks, counts, keep, fit_intercept: bool):
    """Where a ``RowsBuilder`` writes each arriving row.

    Parameters
    ----------
    keys, blocks : int64 (m,) content key and block id of every row, in arrival order
    counts : int64 (m,) entries each row's vector keeps (``arrow_io.stored_counts``)
    keep : bool (m,) rows to train on (weight > 0)
    fit_intercept : bool (one more entry a row: the bias)

    Returns
    -------
    dest : int64 (m,) each row's index in (block, key) order, -1 for a row left out
    indptr : int64 (kept + 1,) the CSR's row offsets in that order, bias slots included
    """
    kept = np.flatnonzero(keep)
    order = kept[np.lexsort((np.asarray(keys, np.int64)[kept],
                             np.asarray(blocks, np.int64)[kept]))]
    dest = np.full(len(keys), -1, np.int64)
    dest[order] = np.arange(order.size, dtype=np.int64)
    indptr = np.zeros(order.size + 1, np.int64)
    np.cumsum(np.asarray(counts, np.int64)[order] + (1 if fit_intercept else 0), out=indptr[1:])
    return dest, indptr


def _rows(ip, ix, vx, rows):
    lens = ip[rows + 1] - ip[rows]
    out = np.zeros(rows.size + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    src = np.repeat(ip[rows] - out[:-1], lens) + np.arange(int(out[-1]), dtype=np.int64)
    return out, ix[src], vx[src]


def feature_scales(ld: LinearData, C: float, num_blocks: int, n_raw: int,
                   collective) -> np.ndarray:
    """1 / (weighted standard deviation) of each raw feature over all tasks' rows, 0 where it
    is 0 (a constant feature is left out, as Spark MLlib does). The deviation is MLlib's
    unbiased weighted one: sum w (x - mean)^2 / (sum w - sum w^2 / sum w), weights
    C_i / C. Sums are taken per block and added in block order after one all-reduce, so
    every task gets the same bits whatever tasks hold the blocks."""
    st = np.zeros((int(num_blocks), 2 * n_raw + 2))
    body = ld.indices < n_raw  # not the bias column
    for lb, b in enumerate(ld.block_ids):
        lo, hi = int(ld.block_ptr[lb]), int(ld.block_ptr[lb + 1])
        w = ld.cw[lo:hi] / C
        p0, p1 = int(ld.indptr[lo]), int(ld.indptr[hi])
        rw = np.repeat(w, np.diff(ld.indptr[lo:hi + 1]))
        keep = body[p0:p1]
        ix, v, rw = ld.indices[p0:p1][keep], ld.data[p0:p1][keep], rw[keep]
        st[b, 0], st[b, 1] = w.sum(), (w * w).sum()
        st[b, 2:2 + n_raw] = np.bincount(ix, weights=rw * v, minlength=n_raw)
        st[b, 2 + n_raw:] = np.bincount(ix, weights=rw * v * v, minlength=n_raw)
    st = collective.allreduce_sum(st)
    tot = np.zeros(st.shape[1])
    for b in range(int(num_blocks)):
        tot += st[b]
    sw, sw2 = tot[0], tot[1]
    mean = tot[2:2 + n_raw] / sw if sw > 0 else np.zeros(n_raw)
    den = sw - sw2 / sw if sw > 0 else 0.0
    var = np.maximum(tot[2 + n_raw:] - sw * mean * mean, 0.0) / den if den > 0 else \
        np.zeros(n_raw)
    std = np.sqrt(var)
    inv = np.zeros(n_raw)
    np.divide(1.0, std, out=inv, where=std > 0)
    return inv


def scale_features(ld: LinearData, inv: np.ndarray) -> None:
    """Multiply each raw feature by ``inv`` in place (the bias column is kept) and update
    |x_i|^2."""
    n_raw = inv.size
    body = ld.indices < n_raw
    ld.data[body] *= inv[ld.indices[body]]
    rows = np.repeat(np.arange(ld.n, dtype=np.int64), np.diff(ld.indptr))
    ld.qd[:] = np.bincount(rows, weights=ld.data * ld.data, minlength=ld.n)
