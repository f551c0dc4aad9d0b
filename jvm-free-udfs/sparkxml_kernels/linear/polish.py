"""Between CoCoA+ rounds: the most violating rows of all blocks, solved together on one rank.

Why. With B > 1 blocks, CoCoA+'s local subproblem charges every change of a block's share of
w at sigma' = B times its size (the separable bound that makes adding safe). On data with far
more rows than features (a9a: 32k rows in 123 dimensions) the primal is right after a few
rounds, but the dual lags: what is left is a *transfer* between blocks (block 1 should carry
more of some direction of w and block 2 less) that leaves w almost unchanged, so its true
curvature is tiny, while each block sees it at sigma' |x|^2. Measured on a9a with 2 blocks and
exact local solves: relative duality gap 2.8e-3 after 40 rounds, 2.1e-3 after 100; no local
accuracy fixes that, nor does alternating the blocks (Gauss-Seidel), nor a line search.

What. After a CoCoA+ round, rows whose KKT violation is largest are picked by a global rule
(a histogram of violations per block, all-reduced, so every task picks the same threshold):
at most half a block's rows and non-zeros. Their CSR, labels, C_i and alphas are gathered onto
rank 0 by one reduce (each row is non-zero on its own task only, so the float64 sum is the
exact concatenation), rank 0 runs the same dual coordinate descent on them with sigma = 1 (the
true curvature) against the current w, and broadcasts the new w and those rows' alphas. It is
a block-coordinate ascent step on the global dual (the dual never decreases), it lets the
transfers happen inside one sequential solver, and its result does not depend on which task
holds which block. Measured on a9a: 2 to 8 blocks reach a relative gap of 1e-3 in 3 to 12
rounds (see the README).

Payload layout (float64), per problem in order, per block in block order: a rows section
(binary/OVR: sign y_i, C_i, alpha_i, row length; Crammer-Singer: label, C_i, row length,
alpha_i (K)), then a non-zeros section (column index, value).
"""
from __future__ import annotations

import numpy as np

from . import cs as kcs
from . import dcd as kdcd
from ._rng import stream_state

BINS_PER_OCTAVE = 8  # violation bins: [tol 2^(j/8), tol 2^((j+1)/8)), the last one open
NBINS = 8 * 32
POLISH_PASSES = 20  # DCD passes over the gathered rows


def violation_bins(viol: np.ndarray, tol: float) -> np.ndarray:
    """Bin of each violation (int64): floor(8 log2(v / tol)) clipped to [0, NBINS-1]; -1
    below tol. The same function picks the rows and counts them, so counts and picks agree."""
    out = np.full(viol.shape, -1, np.int64)
    ok = viol >= tol
    if ok.any():
        out[ok] = np.minimum(np.floor(BINS_PER_OCTAVE * np.log2(viol[ok] / tol)), NBINS - 1).astype(np.int64)
    return out


def histograms(viol: np.ndarray, row_nnz: np.ndarray, tol: float, out: np.ndarray) -> None:
    """out[:NBINS] = rows per violation bin, out[NBINS:] = their non-zeros."""
    b = violation_bins(viol, tol)
    ok = b >= 0
    out[:NBINS] = np.bincount(b[ok], minlength=NBINS)
    out[NBINS:] = np.bincount(b[ok], weights=row_nnz[ok].astype(np.float64), minlength=NBINS)


def choose_bin(rows_hist: np.ndarray, nnz_hist: np.ndarray, row_cap: float,
               nnz_cap: float) -> int:
    """Lowest bin j such that the rows in bins >= j fit both caps (and are not none); -1 if
    even the top bin does not fit."""
    rows = np.cumsum(rows_hist[::-1])[::-1]
    nnz = np.cumsum(nnz_hist[::-1])[::-1]
    for j in range(NBINS):
        if rows[j] > 0 and rows[j] <= row_cap and nnz[j] <= nnz_cap:
            return j
    return -1


def _rows(ld, lo, hi, viol, tol, j0):
    b = violation_bins(viol[lo:hi], tol)
    return lo + np.flatnonzero(b >= j0)


def _gather_csr(ld, rows):
    lens = ld.indptr[rows + 1] - ld.indptr[rows]
    starts = np.repeat(ld.indptr[rows] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    src = np.arange(int(lens.sum()), dtype=np.int64) + starts
    return lens, ld.indices[src], ld.data[src]


def polish(ld, W, alpha, viol, plan, cfg, rnd, collective):
    """One gather-solve-broadcast step for the problems in ``plan``.

    ``plan``: list of (problem k, bin j0, rows per global block (B,), nnz per global block (B,))
    computed identically on every rank from the all-reduced histograms. Binary/OVR: W (P, d),
    alpha (P, n); Crammer-Singer: W (d, K), alpha (n, K). Updates W and this task's alphas in
    place; returns the number of rows solved.
    """
    cs = cfg["multi_class"] == "crammer_singer"
    tol = float(cfg["tol"])
    K = alpha.shape[1] if cs else 0
    rw = 3 + K if cs else 4
    d = ld.n_features
    layout, total = [], 0
    for k, j0, rows_b, nnz_b in plan:
        R, Z = int(rows_b.sum()), int(nnz_b.sum())
        roff = total + rw * np.concatenate([[0], np.cumsum(rows_b)[:-1]]).astype(np.int64)
        zoff = total + rw * R + 2 * np.concatenate([[0], np.cumsum(nnz_b)[:-1]]).astype(np.int64)
        layout.append((k, j0, R, Z, total, roff, zoff))
        total += rw * R + 2 * Z
    payload = np.zeros(total)
    mine = []
    for k, j0, R, Z, base, roff, zoff in layout:
        for lb, b in enumerate(ld.block_ids):
            lo, hi = int(ld.block_ptr[lb]), int(ld.block_ptr[lb + 1])
            rows = _rows(ld, lo, hi, viol[k] if not cs else viol[0], tol, j0)
            mine.append((k, b, rows))
            if not rows.size:
                continue
            lens, ind, val = _gather_csr(ld, rows)
            r0, z0 = int(roff[b]), int(zoff[b])
            sec = payload[r0:r0 + rw * rows.size].reshape(rows.size, rw)
            if cs:
                sec[:, 0] = ld.labels[rows]
                sec[:, 1] = ld.cw[rows]
                sec[:, 2] = lens
                sec[:, 3:] = alpha[rows]
            else:
                sec[:, 0] = np.where(ld.labels[rows] == _pos(cfg, k), 1.0, -1.0)
                sec[:, 1] = ld.cw[rows]
                sec[:, 2] = alpha[k, rows]
                sec[:, 3] = lens
            nz = payload[z0:z0 + 2 * ind.size].reshape(ind.size, 2)
            nz[:, 0] = ind
            nz[:, 1] = val
    Wflat = W.copy()

    def decide(summed):
        outs = []
        for k, j0, R, Z, base, roff, zoff in layout:
            sec = summed[base:base + rw * R].reshape(R, rw)
            nz = summed[base + rw * R:base + rw * R + 2 * Z].reshape(Z, 2)
            lens = (sec[:, 2] if cs else sec[:, 3]).astype(np.int64)
            ip = np.zeros(R + 1, np.int64)
            np.cumsum(lens, out=ip[1:])
            ix = np.ascontiguousarray(nz[:, 0].astype(np.int32))
            vx = np.ascontiguousarray(nz[:, 1])
            qd = np.bincount(np.repeat(np.arange(R), lens), weights=vx * vx, minlength=R)
            cw = np.ascontiguousarray(sec[:, 1])
            rng = stream_state(int(cfg["seed"]), int(cfg["num_blocks"]), rnd, k)
            index = np.empty(max(R, 1), np.int64)
            if cs:
                lab = sec[:, 0].astype(np.int32)
                a = np.ascontiguousarray(sec[:, 3:])
                U = Wflat.copy()
                kcs.cs_block(ip, ix, vx, 0, R, lab, cw, qd, a, U, np.zeros_like(U), 1.0, tol,
                             POLISH_PASSES, rng, index)
                outs += [U.ravel(), a.ravel()]
            else:
                lab = (sec[:, 0] > 0).astype(np.int32)
                a = np.ascontiguousarray(sec[:, 2])
                if cfg["loss"] == "hinge":
                    upper, diag = cw, np.zeros(R)
                else:
                    upper, diag = np.full(R, np.inf), 0.5 / cw
                u = Wflat[k].copy()
                sched = kdcd.SHARK if cfg["schedule"] == "shark" else kdcd.PERMUTATION
                kdcd.dcd_block(ip, ix, vx, 0, R, lab, 1, upper, diag, qd, a, u, 1.0, tol,
                               POLISH_PASSES, sched, rng, index, np.ones(R),
                               np.array([0.0, 0.0, 1.0]))
                outs += [u, a]
        return np.concatenate(outs) if outs else np.zeros(0)

    res = collective.reduce_and_decide(payload, decide)
    off = 0
    solved = 0
    for k, j0, R, Z, base, roff, zoff in layout:
        if cs:
            W[:] = res[off:off + W.size].reshape(W.shape)
            off += W.size
            a = res[off:off + R * K].reshape(R, K)
            off += R * K
        else:
            W[k] = res[off:off + d]
            off += d
            a = res[off:off + R]
            off += R
        solved += R
        for kk, b, rows in mine:
            if kk != k or not rows.size:
                continue
            start = int((roff[b] - base) // rw)
            if cs:
                alpha[rows] = a[start:start + rows.size]
            else:
                alpha[k, rows] = a[start:start + rows.size]
    return solved


def _pos(cfg, k):
    return 1 if cfg["multi_class"] == "binary" else k
