"""Histograms of quantised gradients (quantize.py): integer sums in 4-byte words.

A row's levels travel packed in one int32, ``g_q * 2**16 + h_q``, and a node's rows are added
in chunks small enough that no sum can overflow its half of the word: at most
``2**16 // bins - 1`` rows, so a chunk's hessian sum stays below 2**16 and its gradient sum
within +-(2**15 - 1). After each chunk the int32 table is unpacked into the float64
histogram (``(d, n_slots, 2)``, histogram.py's layout) and cleared. The float64 sums are the
exact integer sums whatever the chunks, threads or row order, so these kernels give
bit-for-bit what :func:`histogram.build_histograms` gives on the levels as float64
(:func:`build_histograms_quantized_naive` is that twin).

Why 4-byte words: in a plain accumulation loop over 500,000 rows x 50 uint8 features (one
thread, this machine) a pass took 11.1 ms with int32 words, 15.6 ms with int64 and 22.0 ms
with the float kernels' 16-byte (gradient, hessian) pairs: a node's table of int32 words
(50 x 257, 51 KB) nearly fits the first-level cache, the float one (206 KB) does not. In a
GBT fit (benchmarks/gbt_synthetic.py, 1M x 50 on two tasks) a task's training went from
9.79 s to 7.25 s.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from .._dtypes import FLOAT, INDEX, LEVELS
from .._jit import njit
from ..threads import worth_threads
from .histogram import _accumulate_block, missing_of, plan_histogram_tasks


def chunk_rows(bins: int) -> int:
    """Rows a chunk may add before its int32 sums could overflow (``bins`` levels)."""
    return (1 << 16) // int(bins) - 1


def pack_levels(gq, hq) -> np.ndarray:
    """int32 (n,) words ``g_q * 2**16 + h_q`` of integer levels (float64 or int arrays)."""
    return (np.asarray(gq, np.int64) * 65536 + np.asarray(hq, np.int64)).astype(LEVELS)


@njit(cache=True, nogil=True)
def _flush(h32, out, f0, f1, n_slots):
    # features f0..f1-1 of the int32 table -> float64 (gradient, hessian) sums; clears them
    for t in range(f0 * n_slots, f1 * n_slots):
        v = np.int64(h32[t])
        low = v & np.int64(0xFFFF)
        out[2 * t] += np.float64((v - low) >> np.int64(16))
        out[2 * t + 1] += np.float64(low)
        h32[t] = 0


@njit(cache=True, nogil=True)
def _accumulate_quantized(binned, partition, s, e, features, lo, hi, p32, h32, out, miss_code,
                          has_missing, chunk):
    # rows partition[s:e], features features[lo:hi] -> out (float64 (d * n_slots * 2,)),
    # through the int32 table h32 (d * n_slots,): histogram's accumulation loop (generic in
    # the word) on each chunk of ``chunk`` rows, then a flush
    d = binned.shape[1]
    n_slots = np.uint64(h32.shape[0] // d)
    contiguous = features[hi - 1] - features[lo] == hi - 1 - lo
    for c0 in range(s, e, chunk):
        c1 = min(c0 + chunk, e)
        _accumulate_block(binned, partition, c0, c1, features, lo, hi, p32, h32, miss_code,
                          has_missing)
        if contiguous:
            _flush(h32, out, np.uint64(features[lo]), np.uint64(features[hi - 1]) + np.uint64(1),
                   n_slots)
        else:
            for fi in range(lo, hi):
                f = np.uint64(features[fi])
                _flush(h32, out, f, f + np.uint64(1), n_slots)


@njit(cache=True, nogil=True)
def _build_quantized(binned, partition, starts, ends, features, p32, out, miss_code,
                     has_missing, chunk):
    h32 = np.zeros(out.shape[1] // 2, LEVELS)
    for j in range(starts.shape[0]):
        if ends[j] > starts[j]:
            _accumulate_quantized(binned, partition, starts[j], ends[j], features, 0,
                                  features.shape[0], p32, h32, out[j], miss_code,
                                  has_missing, chunk)


@njit(cache=True, nogil=True, parallel=True)
def _build_quantized_parallel(binned, partition, starts, ends, features, p32, out, task_node,
                              task_lo, task_hi, thread_first, miss_code, has_missing, chunk):
    # as histogram._build_histograms_parallel: each (node, feature) pair is one thread's
    for t in prange(thread_first.shape[0] - 1):
        h32 = np.zeros(out.shape[1] // 2, LEVELS)
        for q in range(thread_first[t], thread_first[t + 1]):
            j = task_node[q]
            if ends[j] > starts[j]:
                _accumulate_quantized(binned, partition, starts[j], ends[j], features,
                                      task_lo[q], task_hi[q], p32, h32, out[j], miss_code,
                                      has_missing, chunk)


def build_histograms_quantized(binned, partition, starts, ends, packed, hist_out, bins,
                               features=None, n_threads=1, has_missing=True):
    """Add the integer sums of quantised gradients to several nodes' histograms.

    Parameters
    ----------
    binned : uint8 or uint16 (n, d), C order (dense bins)
    partition : int32 (k,); starts, ends : int64 (m,)
        As :func:`histogram.build_histograms`.
    packed : int32 (n,)
        Each row's levels, :func:`pack_levels` (``|g_q| <= bins // 2``, ``0 <= h_q <= bins``).
    hist_out : float64 (m, d, n_slots, 2), C order
        Added to (zero it first for fresh histograms): the integer sums, exact.
    bins : int
        The number of levels (sets the chunk size, :func:`chunk_rows`).
    features : int32 array, optional; n_threads : int; has_missing : bool
        As :func:`histogram.build_histograms`; the sums are the same whatever ``n_threads``.
    """
    m = len(starts)
    if hist_out.ndim != 4 or hist_out.shape[0] != m or hist_out.dtype != FLOAT:
        raise ValueError(f"hist_out must be float64 of shape ({m}, d, n_slots, 2)")
    if not hist_out.flags.c_contiguous:
        raise ValueError("hist_out must be C-contiguous")
    d = binned.shape[1]
    feats = (np.arange(d, dtype=INDEX) if features is None
             else np.ascontiguousarray(features, INDEX))
    args = (binned, partition, np.asarray(starts, np.int64), np.asarray(ends, np.int64), feats,
            np.ascontiguousarray(packed, LEVELS), hist_out.reshape(m, -1))
    tail = (missing_of(binned), bool(has_missing), chunk_rows(bins))
    if int(n_threads) > 1 and m and worth_threads(args[3] - args[2]):
        plan = plan_histogram_tasks(args[3] - args[2], feats.size, int(n_threads))
        _build_quantized_parallel(*args, *plan, *tail)
    elif m:
        _build_quantized(*args, *tail)


def build_histograms_quantized_naive(binned, rows_per_node, gq, hq, n_slots, features=None):
    """The naive twin: float64 (m, d, n_slots, 2) sums of the levels ``gq``/``hq`` of each
    node's rows (``rows_per_node``: a list of int arrays), one row and feature at a time."""
    binned = np.asarray(binned)
    d = binned.shape[1]
    miss = int(np.iinfo(binned.dtype).max)
    feats = range(d) if features is None else [int(f) for f in features]
    out = np.zeros((len(rows_per_node), d, n_slots, 2))
    for j, rows in enumerate(rows_per_node):
        for r in rows:
            for f in feats:
                b = int(binned[r, f])
                slot = n_slots - 1 if b == miss else b
                out[j, f, slot, 0] += gq[r]
                out[j, f, slot, 1] += hq[r]
    return out
