"""The only channel between workers during training: a small provider object.

Every worker runs the same booster/grower on its own rows; whatever must be global goes
through two methods:

``allreduce_sum(arr) -> arr``
    Element-wise sum of a float64 array over all ranks, returned on every rank (initial-score
    statistics, evaluation-metric statistics).
``reduce_and_decide(local, decide) -> decision``
    Sum the 1-D float64 ``local`` arrays onto rank 0; rank 0 calls ``decide(summed)`` which
    returns a 1-D float64 decision array; broadcast it; every rank returns it. The grower
    calls this once per tree level (depthwise) or per expansion (lossguide) with the
    concatenated histograms of the nodes it built. ``decide`` is only ever called on rank 0
    and may keep state there (the grower keeps the global parent histograms). An optional
    ``consume=True`` says the caller gives ``local`` up: it may be summed into in place
    (``sparkxml_kernels.collective.SocketCollective`` then skips a copy).

For bit-for-bit reproducible models an implementation must sum in a fixed order (e.g. rank
order, or a fixed tree) -- floating-point addition is not associative. The sums then differ
from a single-worker run only by rounding (~1e-16 relative).

:class:`LocalCollective` is the single-process identity. :class:`InProcessGroup` runs
``world_size`` workers as threads of one process (the kernels release the GIL); it is the
reference semantics for the socket implementation of the Spark layer and is used by tests.
"""
from __future__ import annotations

import threading

import numpy as np

from .._dtypes import FLOAT


class LocalCollective:
    """Single process: every collective operation is the identity."""

    rank = 0
    world_size = 1

    def allreduce_sum(self, arr: np.ndarray) -> np.ndarray:
        return np.asarray(arr, FLOAT)

    def reduce_and_decide(self, local: np.ndarray, decide, consume: bool = False) -> np.ndarray:
        return np.asarray(decide(np.asarray(local, FLOAT)), FLOAT)


class InProcessGroup:
    """Shared state of ``world_size`` thread workers; ``group.collective(rank)`` gives each
    worker its provider. Sums are taken in rank order."""

    def __init__(self, world_size: int, timeout: float | None = 600.0):
        if world_size < 1:
            raise ValueError("world_size must be >= 1")
        self.world_size = world_size
        self._barrier = threading.Barrier(world_size, timeout=timeout)
        self._slots = [None] * world_size
        self._result = None

    def abort(self) -> None:
        """Release every worker waiting in a collective call (they raise RuntimeError); call
        it when a worker fails outside one, or the others wait until the timeout."""
        self._barrier.abort()

    def collective(self, rank: int) -> "InProcessCollective":
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} out of range")
        return InProcessCollective(self, rank)

    def _exchange(self, rank, local, decide):
        self._slots[rank] = np.array(local, FLOAT, copy=True).reshape(-1)
        self._wait()
        if rank == 0:
            try:
                s = self._slots[0].copy()
                for other in self._slots[1:]:
                    if other.shape != s.shape:
                        raise ValueError(f"ranks sent arrays of sizes {s.shape} and "
                                         f"{other.shape}")
                    s += other
                self._result = s if decide is None else np.asarray(decide(s), FLOAT)
            except BaseException:
                self._barrier.abort()  # wake the other ranks instead of deadlocking them
                raise
        self._wait()
        out = self._result.copy()
        self._wait()  # nobody may overwrite the slots before everyone has read the result
        return out

    def _wait(self):
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError("another worker of the in-process group failed") from None


class InProcessCollective:
    """One thread worker's provider (see :class:`InProcessGroup`)."""

    def __init__(self, group: InProcessGroup, rank: int):
        self._group = group
        self.rank = rank
        self.world_size = group.world_size

    def allreduce_sum(self, arr: np.ndarray) -> np.ndarray:
        arr = np.asarray(arr, FLOAT)
        return self._group._exchange(self.rank, arr, None).reshape(arr.shape)

    def reduce_and_decide(self, local: np.ndarray, decide, consume: bool = False) -> np.ndarray:
        return self._group._exchange(self.rank, local, decide)
