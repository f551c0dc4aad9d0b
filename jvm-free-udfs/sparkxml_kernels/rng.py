"""Counter-based random numbers shared by the families: a value depends only on (seed,
counter, row id), never on the order rows arrive in or how they are partitioned."""
from __future__ import annotations

import numpy as np

from ._dtypes import FLOAT

_GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(x):
    """SplitMix64 of every element of ``x`` (uint64; wraps as C does)."""
    x = (np.asarray(x, np.uint64) + np.uint64(_GOLDEN))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def row_uniforms(seed: int, round_: int, row_ids) -> np.ndarray:
    """Uniform [0, 1) numbers that depend only on (seed, round, global row id)."""
    with np.errstate(over="ignore"):
        key = splitmix64(splitmix64(np.array([seed & (2**64 - 1)], np.uint64))
                          ^ np.array([round_], np.uint64))
        u = splitmix64(np.asarray(row_ids, np.int64).astype(np.uint64) ^ key)
    return (u >> np.uint64(11)).astype(FLOAT) * (1.0 / 9007199254740992.0)
