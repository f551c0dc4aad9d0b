"""Bootstrap counts of rows in trees, from row content hashes (no RNG state to share).

Row ``r``'s count in tree ``t`` is drawn from a hash of (its content key, seed, t):
Poisson(subsamplingRate) with ``bootstrap`` (Spark MLlib's resampling), else 1 with probability
subsamplingRate. Counts depend on neither the partitioning nor the number of ranks.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .splitter import mix64


@njit(cache=True, nogil=True)
def _counts(keys, seed, n_trees, bootstrap, rate, out):
    lam = rate
    p0 = math.exp(-lam)
    for t in range(n_trees):
        salt = mix64(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(t))
        for r in range(keys.shape[0]):
            h = mix64(np.uint64(keys[r]) ^ salt)
            u = (h >> np.uint64(11)) * (1.0 / 9007199254740992.0)
            if bootstrap:
                k = 0
                p = p0
                F = p
                while u > F and k < 255:
                    k += 1
                    p *= lam / k
                    F += p
                out[t, r] = k
            else:
                out[t, r] = 1 if (rate >= 1.0 or u < rate) else 0


def bootstrap_counts(keys, seed: int, n_trees: int, bootstrap: bool, rate: float) -> np.ndarray:
    """uint8 (n_trees, n): each row's count in each tree (see the module docstring)."""
    keys = np.ascontiguousarray(keys).view(np.uint64) if np.asarray(keys).dtype == np.int64 \
        else np.ascontiguousarray(keys, np.uint64)
    out = np.empty((n_trees, keys.size), np.uint8)
    _counts(keys, np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF), n_trees, bool(bootstrap),
            float(rate), out)
    return out


def bootstrap_counts_naive(keys, seed, n_trees, bootstrap, rate):
    """Slow twin of :func:`bootstrap_counts` (Python integers, the same hash)."""
    M = (1 << 64) - 1

    def mix(x):
        z = (x + 0x9E3779B97F4A7C15) & M
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)

    keys = [int(k) & M for k in np.asarray(keys).astype(np.int64)]
    out = np.zeros((n_trees, len(keys)), np.uint8)
    for t in range(n_trees):
        salt = mix(((int(seed) & M) * 0x9E3779B97F4A7C15 + t) & M)
        for r, key in enumerate(keys):
            u = (mix(key ^ salt) >> 11) / 9007199254740992.0
            if bootstrap:
                k, p = 0, math.exp(-rate)
                F = p
                while u > F and k < 255:
                    k += 1
                    p *= rate / k
                    F += p
                out[t, r] = k
            else:
                out[t, r] = 1 if (rate >= 1.0 or u < rate) else 0
    return out


def subsample_class_weights(cls, counts, n_classes: int, collective=None) -> np.ndarray:
    """float64 (n_trees, n_classes): scikit-learn's ``class_weight="balanced_subsample"``
    per tree, ``N_t / (K_t * n_tc)`` from the tree's sample (``n_tc`` the bootstrap counts of
    class ``c`` summed over the rows of every rank, ``N_t`` their total, ``K_t`` the classes
    drawn at all); a class absent from the sample weighs 0, as there. A row's weight in tree
    ``t`` is then its count times ``out[t, class]``, as scikit-learn's forests weigh theirs.

    ``cls`` int (n,) class ids, ``counts`` (n_trees, n) this rank's counts; ``collective``
    (optional) sums the class counts over ranks (integers: exact in any order)."""
    counts = np.asarray(counts)
    per = np.zeros((counts.shape[0], int(n_classes)))
    for c in range(int(n_classes)):
        sel = np.asarray(cls) == c
        per[:, c] = counts[:, sel].sum(axis=1, dtype=np.float64)
    if collective is not None:
        per = np.asarray(collective.allreduce_sum(per.reshape(-1)), np.float64).reshape(per.shape)
    present = per > 0
    k = present.sum(axis=1, dtype=np.float64)
    total = per.sum(axis=1)
    out = np.zeros_like(per)
    np.divide(total[:, None], k[:, None] * per, out=out, where=present)
    return out
