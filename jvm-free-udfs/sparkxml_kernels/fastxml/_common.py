"""Small numba helpers shared by the FastXML kernels: the PRNG, an index sort, growable buffers.

The PRNG is splitmix64 (Steele, Lea & Flood 2014). It is tiny, has a 64-bit state that fits a
one-element array (so helpers can advance it in place), and has a pure-Python twin here that
produces the same stream, which is what lets the naive tree builder reproduce the kernel's trees
bit for bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

# numba folds module-level numpy scalars into constants; keeping them uint64 avoids the silent
# promotion to float64 that mixing uint64 with Python ints causes.
_U_GOLDEN = np.uint64(_GOLDEN)
_U_MIX1 = np.uint64(_MIX1)
_U_MIX2 = np.uint64(_MIX2)
_U30 = np.uint64(30)
_U27 = np.uint64(27)
_U31 = np.uint64(31)
_U1 = np.uint64(1)
_U32 = np.uint64(32)

# "no local id yet" in the uint32 global -> local maps. The hot loops index with unsigned
# integers throughout (uint64 pointers, uint32 ids) because numba then omits the wraparound
# handling of negative indices on every access; that measured 1.8x on the solver's loops.
NOMAP = np.uint32(0xFFFFFFFF)


def _mix_py(z: int) -> int:
    z &= _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def tree_seed(seed: int, tree_id: int) -> int:
    """Initial PRNG state of tree ``tree_id`` under forest seed ``seed``.

    Depends on (seed, tree_id) only, so a tree comes out the same whichever task trains it and
    whatever other trees that task trains.

    Parameters
    ----------
    seed : int
        Forest seed (any Python int; reduced modulo 2**64).
    tree_id : int
        Global tree index (>= 0).

    Returns
    -------
    int
        A 64-bit state in [0, 2**64).
    """
    return _mix_py(_mix_py(int(seed) + _GOLDEN) ^ _mix_py((int(tree_id) + 1) * _GOLDEN))


class SplitMix64:
    """Pure-Python twin of :func:`rng_next` (same stream for the same state)."""

    def __init__(self, state: int):
        self.state = int(state) & _MASK64

    def next(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK64
        return _mix_py(self.state)

    def below(self, m: int) -> int:
        return ((self.next() >> 32) * m) >> 32

    def sign(self) -> int:
        return 1 if self.next() & 1 else -1


@njit(cache=True, nogil=True)
def rng_next(state):
    """Advance the splitmix64 state ``state`` (uint64 array, shape (1,)) and return 64 bits."""
    s = state[0] + _U_GOLDEN
    state[0] = s
    z = (s ^ (s >> _U30)) * _U_MIX1
    z = (z ^ (z >> _U27)) * _U_MIX2
    return z ^ (z >> _U31)


@njit(cache=True, nogil=True)
def rng_below(state, m):
    """Integer in [0, m) for 0 < m < 2**32 (int64), by Lemire's multiply-shift.

    A 64-bit modulo costs a division (tens of cycles); the coordinate shuffles draw one number
    per column per pass, which made the modulo a visible cost on small nodes. The bias is
    below m / 2**32, irrelevant for shuffling.
    """
    return np.int64(((rng_next(state) >> _U32) * np.uint64(m)) >> _U32)


@njit(cache=True, nogil=True)
def _before(a, b, key, tie):
    ka = key[a]
    kb = key[b]
    if ka > kb:
        return True
    if ka < kb:
        return False
    return tie[a] < tie[b]


@njit(cache=True, nogil=True)
def sort_desc(idx, m, key, tie, tmp):
    """Sort ``idx[:m]`` in place by ``key[idx]`` descending, then ``tie[idx]`` ascending.

    A bottom-up merge sort over index arrays, so no allocation happens per call (node loops call
    it thousands of times per tree).

    Parameters
    ----------
    idx : int32 array (>= m,)
        Positions into ``key`` / ``tie``; only the first ``m`` are sorted.
    m : int
        Number of entries to sort.
    key : float64 array
        Primary key, larger first.
    tie : int32 array
        Secondary key, smaller first; must be unique among the sorted positions for the order
        to be total (label or feature ids are).
    tmp : int32 array (>= m,)
        Scratch space.
    """
    run = 16
    for lo in range(0, m, run):
        hi = min(lo + run, m)
        for i in range(lo + 1, hi):
            v = idx[i]
            j = i - 1
            while j >= lo and _before(v, idx[j], key, tie):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    if m <= run:
        return
    src = idx
    dst = tmp
    in_tmp = False
    width = run
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if _before(src[j], src[i], key, tie):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for i in range(m):
            idx[i] = tmp[i]


@njit(cache=True, nogil=True)
def grow(a, need):
    """Return ``a`` itself when it holds >= ``need`` entries, else a copy at least twice as big."""
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    # an explicit loop: slice assignment pulls in numba's shape-mismatch error formatting,
    # which took longer to compile than all the FastXML code together
    for i in range(a.shape[0]):
        b[i] = a[i]
    return b


@njit(cache=True, nogil=True)
def row_dot(indptr, indices, data, row, wd, bias_feat, bias):
    """w·x of CSR row ``row`` (uint64 indptr, uint32 indices, float32 data) against the dense
    weights ``wd`` (float64), bias last.

    Training routes its points with this very function and the predictor routes with it too, so
    a training point always reaches the leaf it was assigned to (same float32 weights, same
    summation order).
    """
    s = 0.0
    for p in range(indptr[row], indptr[row + 1]):
        s += wd[indices[p]] * np.float64(data[p])
    return s + wd[bias_feat] * bias
