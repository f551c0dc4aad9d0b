"""In-process collectives: :class:`LocalCollective` (one worker: every operation is the
identity) and :class:`InProcessGroup` (``world_size`` workers as threads of one process, the
kernels releasing the GIL), the reference semantics of the socket collective, used by tests
and single-process training."""
from __future__ import annotations

import threading

import numpy as np

from .._dtypes import FLOAT


class ContextCollective:
    """``with collective:`` closes it on the way out (``close`` is idempotent)."""

    def close(self) -> None:
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LocalCollective(ContextCollective):
    """One process, world_size 1: every collective operation is the identity."""

    rank = 0
    world_size = 1

    # the arrays keep their dtype: a caller may reduce any numeric buffer (the socket
    # collective sums float64 payloads, which is what every caller sends it)
    def allreduce_sum(self, arr: np.ndarray, consume: bool = False) -> np.ndarray:
        return arr if consume and isinstance(arr, np.ndarray) else np.array(arr, copy=True)

    def reduce_and_decide(self, local: np.ndarray, decide, consume: bool = False) -> np.ndarray:
        local = local if consume else np.array(local, copy=True)
        return np.asarray(decide(local), dtype=FLOAT).ravel()

    def broadcast(self, arr: np.ndarray | None) -> np.ndarray:
        return np.asarray(arr, dtype=FLOAT).ravel().copy()

    def ordered_fold(self, init: np.ndarray, add) -> np.ndarray:
        acc = np.array(init, copy=True, order="C")
        add(acc)
        return acc

    def barrier(self) -> None:
        return None


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

    def _broadcast(self, rank, arr):
        if rank == 0:
            self._result = np.asarray(arr, FLOAT).ravel().copy()
        self._wait()
        out = self._result.copy()
        self._wait()
        return out

    def _fold(self, rank, init, add):
        # rank r folds after ranks 0..r-1, in rank order, as the socket collective does
        if rank == 0:
            self._result = np.array(init, copy=True, order="C")
        for r in range(self.world_size):
            if r == rank:
                try:
                    add(self._result)
                except BaseException:
                    self._barrier.abort()
                    raise
            self._wait()
        out = self._result.copy()
        self._wait()
        return out

    def _wait(self):
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError("another worker of the in-process group failed") from None


class InProcessCollective(ContextCollective):
    """One thread worker's provider (see :class:`InProcessGroup`)."""

    def __init__(self, group: InProcessGroup, rank: int):
        self._group = group
        self.rank = rank
        self.world_size = group.world_size

    def allreduce_sum(self, arr: np.ndarray, consume: bool = False) -> np.ndarray:
        arr = np.asarray(arr, FLOAT)
        return self._group._exchange(self.rank, arr, None).reshape(arr.shape)

    def reduce_and_decide(self, local: np.ndarray, decide, consume: bool = False) -> np.ndarray:
        return self._group._exchange(self.rank, local, decide)

    def broadcast(self, arr: np.ndarray | None) -> np.ndarray:
        return self._group._broadcast(self.rank, arr)

    def ordered_fold(self, init: np.ndarray, add) -> np.ndarray:
        return self._group._fold(self.rank, init, add)

    def barrier(self) -> None:
        self._group._wait()
