"""The random stream every linear-SVM kernel draws from: SplitMix64, in numba and in Python.

One small generator that both the compiled kernels and their naive twins implement, so a
twin replays exactly the kernel's coordinate order. A stream is keyed by (seed, block,
round, problem): the permutations of a block in a round do not depend on which Spark task
runs the block, nor on how many blocks a task runs.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
# the same constants as uint64 for the compiled code
_U_GOLDEN, _U_M1, _U_M2 = map(np.uint64, (_GOLDEN, _M1, _M2))
_S11, _S27, _S30, _S31, _S32 = map(np.uint64, (11, 27, 30, 31, 32))
_INV53 = 1.0 / 9007199254740992.0


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def stream_state(seed: int, block: int, rnd: int, problem: int) -> np.ndarray:
    """A fresh uint64[1] generator state for (seed, block, round, problem)."""
    z = 0
    for part in (seed, block, rnd, problem):
        z = _mix((z + _GOLDEN + (int(part) & _MASK)) & _MASK)
    return np.array([z], dtype=np.uint64)


@njit(cache=True, nogil=True)
def rng_next(state):
    s = state[0] + _U_GOLDEN
    state[0] = s
    z = (s ^ (s >> _S30)) * _U_M1
    z = (z ^ (z >> _S27)) * _U_M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True)
def rng_below(state, n):
    """Integer in [0, n) for 1 <= n < 2**32 (Lemire's multiply-shift on the high 32 bits:
    no division)."""
    return np.int64(((rng_next(state) >> _S32) * np.uint64(n)) >> _S32)


@njit(cache=True, nogil=True)
def rng_uniform(state):
    """Float in [0, 1) with 53 random bits."""
    return np.float64(rng_next(state) >> _S11) * _INV53


@njit(cache=True, nogil=True)
def shuffle_prefix(index, active, state):
    """liblinear's in-place shuffle of index[:active]: swap s with s + below(active - s)."""
    for s in range(active):
        j = s + rng_below(state, active - s)
        t = index[s]
        index[s] = index[j]
        index[j] = t


class PyRng:
    """The same stream in plain Python (for the naive twins)."""

    def __init__(self, state: np.ndarray):
        self.s = int(state[0])

    def next(self) -> int:
        self.s = (self.s + _GOLDEN) & _MASK
        return _mix(self.s)

    def below(self, n: int) -> int:
        return ((self.next() >> 32) * n) >> 32

    def uniform(self) -> float:
        return float(self.next() >> 11) * _INV53
