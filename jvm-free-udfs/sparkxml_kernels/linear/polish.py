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
(a histogram of violations per block, all-reduced, so every task picks the same threshold),
at most ``POLISH_BLOCK_FRACTION`` of an average block's rows and non-zeros, or
``POLISH_MIN_ROWS`` / ``POLISH_MIN_NNZ`` where that is more (``solver``). Their labels,
C_i, alphas and entries are gathered onto rank 0 by one reduce (each row is non-zero on its
own task only, and integer sums of bit patterns are exact), rank 0 runs the same dual
coordinate descent on them with sigma = 1 (the true curvature) against the current w, and
broadcasts those rows' new alphas. Each task then adds its own rows' exact change
sum_i (a_i' - a_i) y_i x_i per block, all-reduced like a CoCoA+ round, so w stays exactly
A alpha. It is a block-coordinate step on the global dual that lets the transfers happen in
one sequential solver, and its result does not depend on which task holds which block.

Payload (int64, so that a sum with zeros is exact for any bits), per problem in order, per
block in block order: a rows section (binary/OVR: sign, C_i bits, alpha_i bits, row length;
Crammer-Singer: label, C_i bits, row length, alpha_i bits (K)), then one int64 per stored
entry: column index << 32 | float32 bits of the value. Rank 0 solves on the float32 values
in place (no decoded copy): 8 bytes an entry, against 12 in the CSR.
"""
from __future__ import annotations

import sys

import numpy as np

from .._jit import njit
from . import cs as kcs
from . import dcd as kdcd
from ._rng import stream_state

BINS_PER_OCTAVE = 8  # violation bins: [tol 2^(j/8), tol 2^((j+1)/8)), the last one open
NBINS = 8 * 32
assert sys.byteorder == "little"  # the payload's entries are read as (bits, index) int32 pairs
POLISH_PASSES = 20  # DCD passes over the gathered rows


# rows per slice of the per-row passes below: their float temporaries stay ~1 MB whatever
# the task's rows (the aim: worker memory <= 2x its CSR)
CHUNK_ROWS = 1 << 16


def violation_bins(viol: np.ndarray, tol: float) -> np.ndarray:
    """Bin of each violation (int64): floor(8 log2(v / tol)) clipped to [0, NBINS-1]; -1
    below tol. The same function picks the rows and counts them, so counts and picks agree."""
    out = np.full(viol.shape, -1, np.int64)
    for s in range(0, viol.size, CHUNK_ROWS):
        _bins_into(viol[s:s + CHUNK_ROWS], tol, out[s:s + CHUNK_ROWS])
    return out


def _bins_into(viol, tol, out):
    ok = viol >= tol
    if ok.any():
        out[ok] = np.minimum(np.floor(BINS_PER_OCTAVE * np.log2(viol[ok] / tol)),
                             NBINS - 1).astype(np.int64)


def rows_in_bins(viol: np.ndarray, tol: float, j0: int) -> np.ndarray:
    """Positions (int64, increasing) of the violations in bins >= j0, one slice at a time."""
    picked = []
    for s in range(0, viol.size, CHUNK_ROWS):
        picked.append(s + np.flatnonzero(violation_bins(viol[s:s + CHUNK_ROWS], tol) >= j0))
    return np.concatenate(picked) if picked else np.zeros(0, np.int64)


def histograms(viol: np.ndarray, indptr: np.ndarray, tol: float, out: np.ndarray) -> None:
    """out[:NBINS] = rows per violation bin, out[NBINS:] = their non-zeros (``indptr``: the
    rows' CSR pointers, viol.size + 1 of them). Counted by slices of ``CHUNK_ROWS`` rows:
    integer sums, exact in any order."""
    out[:] = 0.0
    for s in range(0, viol.size, CHUNK_ROWS):
        b = violation_bins(viol[s:s + CHUNK_ROWS], tol)
        ok = b >= 0
        lens = np.diff(indptr[s:s + b.size + 1])[ok].astype(np.float64)
        out[:NBINS] += np.bincount(b[ok], minlength=NBINS)
        out[NBINS:] += np.bincount(b[ok], weights=lens, minlength=NBINS)


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


def _f2i(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float64).view(np.int64)


def _i2f(a) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.float64)


@njit(cache=True, nogil=True)
def _pack_entries(indptr, indices, data, rows, out):
    """out[k] = index << 32 | float32 bits of the value, entries of ``rows`` in order (no
    temporaries the size of the selection)."""
    longest = 1
    for r in rows:
        longest = max(longest, indptr[r + 1] - indptr[r])
    tmp = np.empty(longest, np.float32)
    bits = tmp.view(np.uint32)
    k = 0
    for r in rows:
        p0 = indptr[r]
        m = indptr[r + 1] - p0
        for q in range(m):
            tmp[q] = data[p0 + q]
        for q in range(m):
            out[k] = (np.int64(indices[p0 + q]) << 32) | np.int64(bits[q])
            k += 1


@njit(cache=True, nogil=True)
def _row_norms(indptr, values, out):
    """out[t] = |x_t|^2 in float64 from the gathered (float32, strided) values."""
    for t in range(indptr.size - 1):
        s = 0.0
        for p in range(indptr[t], indptr[t + 1]):
            v = np.float64(values[p])
            s += v * v
        out[t] = s


@njit(cache=True, nogil=True)
def _rows_change(indptr, indices, data, rows, coef, out):
    """out[j, m] += coef[t, m] x_{rows[t]}[j]: the exact change of w from changed alphas."""
    K = coef.shape[1]
    for t in range(rows.size):
        r = rows[t]
        for p in range(indptr[r], indptr[r + 1]):
            j = indices[p]
            v = data[p]
            for m in range(K):
                out[j, m] += coef[t, m] * v


def polish(ld, W, alpha, viol, plan, cfg, rnd, collective):
    """One gather-solve-broadcast-update step for the problems in ``plan``.

    ``plan``: list of (problem k, bin j0, rows per global block (B,), nnz per global block (B,))
    computed identically on every rank from the all-reduced histograms. Binary/OVR: W (P, d),
    alpha (P, n); Crammer-Singer: W (d, K), alpha (n, K). Updates W and this task's alphas in
    place; returns the number of rows solved.
    """
    cs = cfg["multi_class"] == "crammer_singer"
    tol = float(cfg["tol"])
    B = int(cfg["num_blocks"])
    K = alpha.shape[1] if cs else 0
    rw = 3 + K if cs else 4
    d = ld.n_features
    layout, total = [], 0
    for k, j0, rows_b, nnz_b in plan:
        R, Z = int(rows_b.sum()), int(nnz_b.sum())
        roff = total + rw * np.concatenate([[0], np.cumsum(rows_b)[:-1]]).astype(np.int64)
        zoff = total + rw * R + np.concatenate([[0], np.cumsum(nnz_b)[:-1]]).astype(np.int64)
        layout.append((k, R, Z, total, roff, zoff))
        total += rw * R + Z
    payload = np.zeros(total, np.int64)
    mine = []  # (problem, block, rows) held here
    for (k, R, Z, base, roff, zoff), (_, j0, _, _) in zip(layout, plan):
        for lb, b in enumerate(ld.block_ids):
            lo, hi = int(ld.block_ptr[lb]), int(ld.block_ptr[lb + 1])
            rows = lo + rows_in_bins(viol[k, lo:hi], tol, j0)
            mine.append((k, int(b), rows))
            if not rows.size:
                continue
            lens = ld.indptr[rows + 1] - ld.indptr[rows]
            r0, z0 = int(roff[b]), int(zoff[b])
            sec = payload[r0:r0 + rw * rows.size].reshape(rows.size, rw)
            if cs:
                sec[:, 0] = ld.labels[rows]
                sec[:, 1] = _f2i(ld.cw[rows])
                sec[:, 2] = lens
                sec[:, 3:] = _f2i(alpha[rows])
            else:
                sec[:, 0] = np.where(ld.labels[rows] == _pos(cfg, k), 1, -1)
                sec[:, 1] = _f2i(ld.cw[rows])
                sec[:, 2] = _f2i(alpha[k, rows])
                sec[:, 3] = lens
            _pack_entries(ld.indptr, ld.indices, ld.data, rows,
                          payload[z0:z0 + int(lens.sum())])
    Wsnap = W.copy()
    sched = kdcd.SHARK if cfg["schedule"] == "shark" else kdcd.PERMUTATION

    def decide(summed):
        outs = []
        for k, R, Z, base, roff, zoff in layout:
            sec = summed[base:base + rw * R].reshape(R, rw)
            # the entries in place: little-endian int64 = (float32 bits, index) int32 pairs
            pairs = summed[base + rw * R:base + rw * R + Z].view(np.int32).reshape(Z, 2)
            ix, vx = pairs[:, 1], pairs[:, 0].view(np.float32)
            lens = sec[:, 2] if cs else sec[:, 3]
            ip = np.zeros(R + 1, np.int64)
            np.cumsum(lens, out=ip[1:])
            qd = np.empty(R)
            _row_norms(ip, vx, qd)
            cw = _i2f(sec[:, 1])
            rng = stream_state(int(cfg["seed"]), B, rnd, k)
            index = np.empty(max(R, 1), np.int64)
            if cs:
                a = _i2f(sec[:, 3:]).reshape(R, K).copy()
                U = Wsnap.copy()
                kcs.cs_block(ip, ix, vx, 0, R, sec[:, 0].astype(np.int32), cw, qd, a, U,
                             np.zeros_like(U), 1.0, tol, POLISH_PASSES, rng, index)
            else:
                a = _i2f(sec[:, 2]).copy()
                if cfg["loss"] == "hinge":
                    upper, diag = cw, np.zeros(R)
                else:
                    upper, diag = np.full(R, np.inf), 0.5 / cw
                kdcd.dcd_block(ip, ix, vx, 0, R, (sec[:, 0] > 0).astype(np.int32), 1, upper,
                               diag, qd, a, Wsnap[k].copy(), 1.0, tol, POLISH_PASSES, sched,
                               rng, index, np.ones(R), np.array([0.0, 0.0, 1.0]))
            outs.append(a.ravel())
        return np.concatenate(outs) if outs else np.zeros(0)

    res = collective.reduce_and_decide(payload, decide, consume=True)
    del payload
    # every task: its rows' new alphas, and the exact change of w per block
    P = 1 if cs else W.shape[0]
    dw = np.zeros((B, W.size)) if cs else np.zeros((B, P * d))
    off, solved = 0, 0
    for k, R, Z, base, roff, zoff in layout:
        width = K if cs else 1
        new = res[off:off + R * width].reshape(R, width)
        off += R * width
        solved += R
        for kk, b, rows in mine:
            if kk != k or not rows.size:
                continue
            start = int((roff[b] - base) // rw)
            a_new = new[start:start + rows.size]
            if cs:
                change = np.zeros((d, K))
                _rows_change(ld.indptr, ld.indices, ld.data, rows, a_new - alpha[rows], change)
                alpha[rows] = a_new
                dw[b] += change.ravel()
            else:
                y = np.where(ld.labels[rows] == _pos(cfg, k), 1.0, -1.0)
                change = np.zeros((d, 1))
                _rows_change(ld.indptr, ld.indices, ld.data, rows,
                             ((a_new[:, 0] - alpha[k, rows]) * y)[:, None], change)
                alpha[k, rows] = a_new[:, 0]
                dw[b, k * d:(k + 1) * d] += change[:, 0]
    dw = collective.allreduce_sum(dw)
    flat = W.reshape(-1)
    for b in range(B):  # block order: the same sums on every task
        flat += dw[b]
    return solved


def _pos(cfg, k):
    return 1 if cfg["multi_class"] == "binary" else k
