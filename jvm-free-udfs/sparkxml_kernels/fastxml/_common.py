"""Small numba helpers shared by the FastXML kernels: the PRNG, an index sort, growable buffers.

The PRNG is the 32-bit Mersenne Twister, MT19937 (Matsumoto & Nishimura 1998), exactly as C++'s
``std::mt19937``: the authors' FastXML seeds one with the tree index and draws from it for the
random starting sides (``r % 2``) and the solver's coordinate shuffles (``r % m``). Drawing the
same numbers in the same order is what lets this kernel grow the authors' trees. Its state is a
uint32 array of 625 entries (624 words and the read position), so helpers advance it in place;
:class:`MT19937` is the pure-Python twin the naive builders draw from.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit

MT_STATE = 625  # 624 state words + the read position
_M32 = 0xFFFFFFFF
# MT19937's constants as uint64, so the compiled code never mixes signed and unsigned
_U_M32, _U_UPPER, _U_LOWER, _U_MATRIX, _U_INIT, _U_B, _U_C = map(np.uint64, (
    _M32, 0x80000000, 0x7FFFFFFF, 0x9908B0DF, 1812433253, 0x9D2C5680, 0xEFC60000))
_U1, _U7, _U11, _U15, _U18, _U30 = map(np.uint64, (1, 7, 11, 15, 18, 30))

# "no local id yet" in the uint32 global -> local maps. The hot loops index with unsigned
# integers throughout (uint64 pointers, uint32 ids) because numba then omits the wraparound
# handling of negative indices on every access; that measured 1.8x on the solver's loops.
NOMAP = np.uint32(0xFFFFFFFF)


def tree_seed(seed: int, tree_id: int) -> int:
    """MT19937 seed of tree ``tree_id`` under forest seed ``seed``.

    ``seed`` = 0 gives tree t the seed t, the authors' numbering (``fastXML_train -s 0``), so
    forest seed 0 grows their trees 0..T-1. Other seeds shift the tree numbering by
    ``seed * 0x9E3779B1`` (mod 2**32). A tree depends on (seed, tree_id) only, so it comes out
    the same whichever task trains it and whatever other trees that task trains.

    Parameters
    ----------
    seed : int
        Forest seed (any Python int).
    tree_id : int
        Global tree index (>= 0).

    Returns
    -------
    int
        A seed in [0, 2**32).
    """
    return (int(tree_id) + int(seed) * 0x9E3779B1) & _M32


class MT19937:
    """Pure-Python twin of :func:`mt_seed` / :func:`mt_next` (``std::mt19937``)."""

    def __init__(self, seed: int):
        mt = [int(seed) & _M32]
        for i in range(1, 624):
            prev = mt[-1]
            mt.append((1812433253 * (prev ^ (prev >> 30)) + i) & _M32)
        self.mt = mt
        self.pos = 624

    def next(self) -> int:
        mt = self.mt
        if self.pos >= 624:
            for i in range(624):
                y = (mt[i] & 0x80000000) | (mt[(i + 1) % 624] & 0x7FFFFFFF)
                v = mt[(i + 397) % 624] ^ (y >> 1)
                mt[i] = v ^ 0x9908B0DF if y & 1 else v
            self.pos = 0
        y = mt[self.pos]
        self.pos += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return y ^ (y >> 18)

    def below(self, m: int) -> int:
        """``next() % m``, the authors' way of drawing from [0, m)."""
        return self.next() % m

    def sign(self) -> int:
        """+1 when the next number is odd, else -1 (the authors' random starting side)."""
        return 1 if self.next() % 2 else -1


@njit(cache=True, nogil=True)
def mt_seed(mt, seed):
    """Seed the MT19937 state ``mt`` (uint32 (625,)) like ``std::mt19937::seed(seed)``."""
    x = np.uint64(seed) & _U_M32
    mt[0] = np.uint32(x)
    for i in range(1, 624):
        x = (_U_INIT * (x ^ (x >> _U30)) + np.uint64(i)) & _U_M32
        mt[i] = np.uint32(x)
    mt[624] = np.uint32(624)


@njit(cache=True, nogil=True)
def mt_next(mt):
    """Next 32-bit output of the MT19937 state ``mt``, as int64."""
    pos = np.int64(mt[624])
    if pos >= 624:
        for i in range(624):
            y = (np.uint64(mt[i]) & _U_UPPER) | (np.uint64(mt[(i + 1) % 624]) & _U_LOWER)
            v = np.uint64(mt[(i + 397) % 624]) ^ (y >> _U1)
            if y & _U1:
                v ^= _U_MATRIX
            mt[i] = np.uint32(v)
        pos = 0
    y = np.uint64(mt[pos])
    mt[624] = np.uint32(pos + 1)
    y ^= y >> _U11
    y ^= (y << _U7) & _U_B
    y ^= (y << _U15) & _U_C
    y ^= y >> _U18
    return np.int64(y & _U_M32)


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


@njit(cache=True, nogil=True, inline="always")
def append_pairs(dst_a, dst_b, used, src_a, src_b, count):
    """Append ``src_a[:count]`` and ``src_b[:count]`` to the buffers ``dst_a`` and ``dst_b``
    that hold ``used`` entries (grown by ``grow``); return (dst_a, dst_b, used + count)."""
    dst_a = grow(dst_a, used + count)
    dst_b = grow(dst_b, used + count)
    for q in range(count):
        dst_a[used + q] = src_a[q]
        dst_b[used + q] = src_b[q]
    return dst_a, dst_b, used + count


@njit(cache=True, nogil=True)
def row_dot(indptr, indices, data, row, wd, bias_feat, bias):
    """w·x of CSR row ``row`` (uint64 indptr, uint32 indices, float32 data) against the dense
    weights ``wd`` (float64), bias last: the predictor's routing.
    """
    s = 0.0
    for p in range(indptr[row], indptr[row + 1]):
        s += wd[indices[p]] * np.float64(data[p])
    return s + wd[bias_feat] * bias
