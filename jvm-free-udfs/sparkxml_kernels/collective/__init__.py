"""The only channel between the workers of one training: a small collective object.

Every worker runs the same kernels on its own rows; whatever must be global goes through the
methods of :class:`Collective`. Implementations:

- :class:`LocalCollective` (``local``): one process, world_size 1, every operation the identity;
- :class:`InProcessGroup` (``local``): ``world_size`` workers as threads of one process, sums in
  rank order, the reference semantics used by tests;
- :class:`SocketCollective` (``sockets``): the tasks of one Spark barrier stage connected
  directly over authenticated sockets (see that module for the protocol), built on the
  listeners, handshake and framed peer sockets of ``transport``.

For bit-for-bit reproducible models an implementation sums in a fixed order (rank order or a
fixed tree): floating-point addition is not associative. The sums then differ from a
single-worker run only by rounding (~1e-16 relative).
"""
from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from .local import InProcessCollective, InProcessGroup, LocalCollective
from .sockets import SocketCollective
from .transport import new_authkey, open_listener, tree_children, tree_parent


@runtime_checkable
class Collective(Protocol):
    """What the training kernels call; ``rank`` in ``[0, world_size)``."""

    rank: int
    world_size: int

    def allreduce_sum(self, arr: np.ndarray, consume: bool = False) -> np.ndarray:
        """Element-wise float64 sum over all ranks, returned on every rank. ``consume=True``:
        the caller gives ``arr`` up and it may be summed into (and returned) in place."""

    def reduce_and_decide(self, local: np.ndarray, decide: Callable[[np.ndarray], np.ndarray],
                          consume: bool = False) -> np.ndarray:
        """Sum the 1-D float64 ``local`` arrays onto rank 0; rank 0 calls ``decide(summed)``
        (only there, so it may keep state), whose 1-D float64 result every rank returns.
        ``consume=True``: the caller gives ``local`` up and it may be summed into in place."""

    def broadcast(self, arr: np.ndarray | None) -> np.ndarray:
        """Rank 0's 1-D float64 ``arr`` on every rank (the others pass None)."""

    def ordered_fold(self, init: np.ndarray, add: Callable[[np.ndarray], None]) -> np.ndarray:
        """Fold ``add`` (which updates its argument in place) over the ranks in rank order,
        from a copy of rank 0's ``init``; every rank gets the final accumulator, so a sum of
        per-row terms is the sequential sum whatever the number of ranks."""

    def barrier(self) -> None:
        """Return once every rank has called it."""

    def close(self) -> None:
        """Release connections; idempotent."""


__all__ = ["Collective", "LocalCollective", "InProcessGroup", "InProcessCollective",
           "SocketCollective", "new_authkey", "open_listener", "tree_parent", "tree_children"]
