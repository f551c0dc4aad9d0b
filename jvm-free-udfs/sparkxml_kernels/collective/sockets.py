"""The socket collective: direct, authenticated connections between the tasks of one Spark
barrier stage.

Used inside one Spark barrier stage: every task opens a listener
(``transport.open_listener``), the tasks exchange their ``host:port`` once (over sockets too:
``rendezvous``), then build a ``SocketCollective`` and talk to each other directly for the
whole training: one round trip per tree level instead of one Spark job (or one
``BarrierTaskContext.allGather``, ~1 s each) per level.

Protocol
--------
- Authentication: the stdlib HMAC challenge of ``multiprocessing.connection``
  (``deliver_challenge`` / ``answer_challenge`` on a ``Connection``, exactly what
  ``Listener.accept()`` / ``Client()`` do) with a per-fit random ``authkey``, both ways. The
  socket-level set-up is done here rather than by ``Listener``/``Client`` because those have no
  deadline: ``Listener.accept()`` and ``Client()`` block forever on a peer that never answers.
- Payloads are raw bytes in ``Connection.send_bytes``'s framing (length header, then the
  bytes of a numpy buffer), received with ``socket.recv_into`` straight into a preallocated
  buffer (``Connection.recv_bytes_into`` stages each message in a ``BytesIO`` and copies it
  twice, which costs ~1 s per GB). Nothing a peer sends is ever unpickled.
- Topology: a binomial tree rooted at rank 0. The parent of rank ``r > 0`` is ``r`` with its
  lowest set bit cleared; its children are ``r + 2**j`` for ``2**j`` below that bit. A reduce
  takes ``ceil(log2(world_size))`` hops; each node adds its children in increasing rank order,
  so the floating-point sum is the same on every run.
- Deadlines: every socket operation carries ``timeout_s`` (accepting with ``select``, the
  handshake with ``SO_RCVTIMEO``/``SO_SNDTIMEO``, then the socket timeout), so a peer that
  never connects, stalls mid-message or stops reading cannot block us for longer. A silent
  peer raises ``TimeoutError`` naming its rank; a dead peer raises ``ConnectionError`` naming
  its rank (at once: its socket is closed).
- Strangers: the listener binds to the executor's own address (``open_listener``), and every
  incoming connection is authenticated on its own thread within ``HANDSHAKE_SECONDS``: one
  that sends nothing, sends garbage or holds another key is dropped without delaying the real
  peers, and is named in the error should a real peer fail to arrive.
- Errors on rank 0's ``decide`` are sent down the tree, so the other ranks fail at once with
  rank 0's message instead of waiting out the timeout.
"""
from __future__ import annotations

import contextlib
import socket
import struct
import time
from multiprocessing.connection import AuthenticationError

import numpy as np

from .local import ContextCollective
from .transport import (
    _HELLO,
    HandshakeServer,
    _Peer,
    handshake,
    parse_address,
    tree_children,
    tree_parent,
)

__all__ = ["SocketCollective"]

_OK = b"\x00"
_ERR = b"\x01"
# Bound on the handshake of one incoming connection (a peer answers in milliseconds: it is
# already waiting for the challenge when its connection is accepted).
HANDSHAKE_SECONDS = 5.0
# Incoming connections authenticated at once; more are closed at once (and counted).
MAX_PENDING_HANDSHAKES = 64
# a reduction is received and added in slices of this size (``SocketCollective._recv_add``)
REDUCE_CHUNK_BYTES = 1 << 20


def _dropped_summary(dropped, n_pending: int) -> str:
    """'; meanwhile ...' naming what happened to the connections that were not peers."""
    if not dropped and not n_pending:
        return ""
    counts: dict = {}
    for host, reason in dropped:
        counts[(host, reason)] = counts.get((host, reason), 0) + 1
    parts = [f"{k} from {host} {reason}" for (host, reason), k in counts.items()]
    if n_pending:
        parts.append(f"{n_pending} still in their handshake")
    return (f"; meanwhile {len(dropped) + n_pending} other connection(s) reached this rank's "
            f"port and were not a peer: " + ", ".join(parts))


class SocketCollective(ContextCollective):
    """Tree-structured reduce / broadcast among ``world_size`` processes over TCP.

    Parameters
    ----------
    rank : int
        This process's rank, 0 <= rank < world_size.
    world_size : int
    addresses : list of str
        ``"host:port"`` of every rank's listener, indexed by rank.
    authkey : bytes
        Shared secret of this fit (``new_authkey()``), the same on every rank.
    timeout_s : float
        Bound on every wait for a peer (connecting, receiving, sending).
    listener : socket.socket, optional
        This rank's listening socket from ``open_listener``. Required when this rank has
        children (all ranks but the leaves); closed once the children are connected.

    Every rank must call the same sequence of collective methods with arrays of the same
    shape and dtype (lockstep), as the booster does.
    """

    def __init__(self, rank: int, world_size: int, addresses, authkey: bytes,
                 timeout_s: float = 600.0, listener: socket.socket | None = None):
        if not (0 <= rank < world_size):
            raise ValueError(f"rank {rank} is outside [0, {world_size})")
        if len(addresses) != world_size:
            raise ValueError(f"{len(addresses)} addresses for world_size {world_size}")
        if not isinstance(authkey, bytes) or not authkey:
            raise ValueError("authkey must be non-empty bytes")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.timeout_s = float(timeout_s)
        self._authkey = authkey
        self._addresses = [str(a) for a in addresses]
        self._parent_rank = tree_parent(self.rank)
        self._child_ranks = tree_children(self.rank, self.world_size)
        self._parent: _Peer | None = None
        self._children: dict[int, _Peer] = {}
        self._buffers: dict[int, np.ndarray] = {}
        self._dec_buf = bytearray(1 << 12)
        self.bytes_sent = 0
        self.bytes_received = 0
        self.wait_seconds = 0.0  # time spent blocked on peers (for diagnostics)
        try:
            if self._parent_rank >= 0:
                self._parent = self._connect(self._parent_rank)
            if self._child_ranks:
                if listener is None:
                    raise ValueError(f"rank {rank} has children {self._child_ranks} but no "
                                     f"listener")
                self._accept_children(listener)
        except BaseException:
            self.close()
            raise
        finally:
            if listener is not None:
                listener.close()

    # ------------------------------------------------------------------ connection set-up
    def _connect(self, peer: int) -> _Peer:
        """Connect to ``peer``'s listener and authenticate, retrying until the deadline while
        the peer is not listening yet or drops the connection before the handshake is done
        (a peer busy with other connections); a wrong key fails at once."""
        host, port = parse_address(self._addresses[peer])
        deadline = time.monotonic() + self.timeout_s
        last_err = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"rank {self.rank}: could not connect to rank {peer} at "
                                   f"{host}:{port} within {self.timeout_s:g}s: {last_err}")
            try:
                sock = socket.create_connection((host, port), timeout=min(remaining, 10.0))
            except OSError as e:  # refused / unreachable: retry until the deadline
                last_err = e
                time.sleep(min(0.05, max(remaining, 0)))
                continue
            try:
                handshake(sock, self._authkey, False, max(1e-3, deadline - time.monotonic()))
                sock.settimeout(max(1e-3, deadline - time.monotonic()))
                sock.sendall(struct.pack("!i", _HELLO.size) + _HELLO.pack(self.rank,
                                                                           self.world_size))
            except AuthenticationError:
                sock.close()
                raise ConnectionError(f"rank {self.rank}: authentication with rank {peer} "
                                      f"failed (a different fit's key?)") from None
            except (BlockingIOError, TimeoutError):
                sock.close()
                raise TimeoutError(f"rank {self.rank}: rank {peer} did not complete the "
                                   f"handshake within {self.timeout_s:g}s") from None
            except (EOFError, OSError) as e:  # dropped by the peer: try again
                sock.close()
                last_err = f"the handshake failed: {e!r}"
                time.sleep(min(0.05, max(deadline - time.monotonic(), 0)))
                continue
            return _Peer(sock, peer, self.timeout_s)

    def _accept_children(self, listener: socket.socket) -> None:
        """Accept until every child rank has connected and authenticated.

        Each incoming connection is authenticated on its own thread with a short deadline
        (``HANDSHAKE_SECONDS``), so a connection that sends nothing, sends garbage or holds
        another key is dropped without delaying the real peers queued behind it; the reason
        is kept for the error message should a child not arrive in time.
        """
        deadline = time.monotonic() + self.timeout_s
        expected = set(self._child_ranks)
        hs_timeout = min(self.timeout_s, HANDSHAKE_SECONDS)
        with HandshakeServer(listener, self._authkey, hs_timeout,
                             MAX_PENDING_HANDSHAKES) as server:
            while expected:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"rank {self.rank}: ranks {sorted(expected)} did not connect within "
                        f"{self.timeout_s:g}s"
                        + _dropped_summary(server.dropped, len(server.pending)))
                for sock, (peer, peer_world) in server.accepted(remaining):
                    if peer not in expected or peer_world != self.world_size:
                        sock.close()
                        raise ConnectionError(f"rank {self.rank}: unexpected peer rank {peer} "
                                              f"(world {peer_world}); expected "
                                              f"{sorted(expected)}")
                    self._children[peer] = _Peer(sock, peer, self.timeout_s)
                    expected.discard(peer)

    # ------------------------------------------------------------------ primitives
    @contextlib.contextmanager
    def _receiving(self, p: _Peer, silent: str, closed: str, failed: str, timed: bool):
        """Turn a failed receive from ``p`` into one error naming both ranks: TimeoutError
        "rank p ``silent``", ConnectionError "rank p closed the connection``closed``" or
        "``failed``: <error>" (``{peer}`` there is p's rank); ``timed``: the time spent counts
        as waiting (``wait_seconds``)."""
        t0 = time.perf_counter()
        try:
            yield
        except (TimeoutError, BlockingIOError):
            raise TimeoutError(f"rank {self.rank}: rank {p.rank} {silent}") from None
        except EOFError:
            raise ConnectionError(f"rank {self.rank}: rank {p.rank} closed the connection"
                                  f"{closed} (the peer failed or exited)") from None
        except OSError as e:
            raise ConnectionError(f"rank {self.rank}: {failed.format(peer=p.rank)}: "
                                  f"{e!r}") from None
        finally:
            if timed:
                self.wait_seconds += time.perf_counter() - t0

    def _recv_size(self, p: _Peer) -> int:
        with self._receiving(p, f"sent nothing within {self.timeout_s:g}s (timeoutSeconds); "
                                f"the peer stopped answering", "",
                             "lost the connection to rank {peer}", timed=True):
            return p.recv_size()

    def _recv_payload(self, p: _Peer, buf, n: int) -> None:
        with self._receiving(p, f"stalled mid-message for {self.timeout_s:g}s", " mid-message",
                             "receiving from rank {peer} failed", timed=False):
            p.recv_payload_into(buf, n)
        self.bytes_received += n

    def _recv_exact(self, p: _Peer, arr: np.ndarray, what: str) -> None:
        """Receive one message that must be exactly ``arr.nbytes`` long, into ``arr``."""
        n = self._recv_size(p)
        if n != arr.nbytes:
            raise RuntimeError(f"rank {self.rank}: rank {p.rank} sent {n} bytes for {what}, "
                               f"expected {arr.nbytes}; the ranks are out of step")
        self._recv_payload(p, arr.reshape(-1).view(np.uint8), n)

    def _send(self, p: _Peer, payload) -> None:
        if isinstance(payload, np.ndarray):
            payload = np.ascontiguousarray(payload).reshape(-1).view(np.uint8)
        try:
            self.bytes_sent += p.send(payload)
        except (TimeoutError, BlockingIOError):
            raise TimeoutError(f"rank {self.rank}: rank {p.rank} accepted no data for "
                               f"{self.timeout_s:g}s; the peer stopped answering") from None
        except OSError as e:
            raise ConnectionError(f"rank {self.rank}: sending to rank {p.rank} failed (the "
                                  f"peer failed or exited): {e!r}") from None

    def _buffer(self, dtype, size: int) -> np.ndarray:
        """A reusable 1-D receive buffer of ``size`` elements (one kept: rounds repeat the
        same sizes)."""
        key = int(size) * np.dtype(dtype).itemsize
        buf = self._buffers.get(key)
        if buf is None:
            buf = np.empty(key, dtype=np.uint8)
            self._buffers = {key: buf}
        return buf.view(dtype)

    def _recv_add(self, p: _Peer, acc: np.ndarray, what: str) -> None:
        """Receive one message of exactly ``acc.nbytes`` and add it into ``acc`` (C order),
        ``REDUCE_CHUNK_BYTES`` at a time: a large reduction (a LinearSVC polish gathers rows
        this way) costs its receiver a small buffer, not a second copy of the payload.
        Element-wise sums: the same bits as adding the whole message at once."""
        n = self._recv_size(p)
        if n != acc.nbytes:
            raise RuntimeError(f"rank {self.rank}: rank {p.rank} sent {n} bytes for {what}, "
                               f"expected {acc.nbytes}; the ranks are out of step")
        flat = acc.reshape(-1)
        step = max(1, min(flat.size, REDUCE_CHUNK_BYTES // max(acc.itemsize, 1)))
        buf = self._buffer(acc.dtype, step)
        for i in range(0, flat.size, step):
            m = min(step, flat.size - i)
            self._recv_payload(p, buf[:m].view(np.uint8), m * acc.itemsize)
            flat[i:i + m] += buf[:m]

    def _reduce_to_root(self, local: np.ndarray, consume: bool = False) -> np.ndarray:
        """Sum ``local`` over the subtree of this rank; rank 0 ends with the total.
        ``consume``: add into ``local`` itself (a C-contiguous array the caller gives up)."""
        if consume and local.flags.c_contiguous and local.flags.writeable:
            acc = local
        else:
            acc = np.array(local, copy=True, order="C")
        for child in self._child_ranks:  # fixed order: deterministic sums
            self._recv_add(self._children[child], acc, "a reduction")
        if self._parent is not None:
            self._send(self._parent, acc)
        return acc

    def _bcast_payload(self, payload: bytes | None) -> bytes:
        """Broadcast a framed message from rank 0 down the tree; return it on every rank."""
        if self._parent is not None:
            n = self._recv_size(self._parent)
            if n > len(self._dec_buf):
                self._dec_buf = bytearray(max(n, 2 * len(self._dec_buf)))
            self._recv_payload(self._parent, self._dec_buf, n)
            payload = bytes(memoryview(self._dec_buf)[:n])
        for child in self._child_ranks:
            self._send(self._children[child], payload)
        return payload

    @staticmethod
    def _unframe(payload: bytes, what: str) -> np.ndarray:
        if payload[:1] == _ERR:
            raise RuntimeError(f"{what} failed on rank 0: "
                               f"{payload[1:].decode('utf-8', 'replace')}")
        return np.frombuffer(payload, dtype=np.float64, offset=1).copy()

    # ------------------------------------------------------------------ public API
    def allreduce_sum(self, arr: np.ndarray, consume: bool = False) -> np.ndarray:
        """Element-wise sum of ``arr`` over all ranks; every rank gets the result.

        ``arr`` must have the same shape and dtype on every rank; the result keeps them.
        ``consume=True``: ``arr`` may be summed into and returned (no copy of a large
        payload; the caller must not use it afterwards).
        """
        arr = np.asarray(arr)
        total = self._reduce_to_root(arr, consume)
        if self._parent is not None:
            self._recv_exact(self._parent, total, "a broadcast sum")
        for child in self._child_ranks:
            self._send(self._children[child], total)
        return total

    def reduce_and_decide(self, local: np.ndarray, decide, consume: bool = False) -> np.ndarray:
        """Sum ``local`` onto rank 0, which calls ``decide(summed)``; all ranks get the result.

        ``decide`` must return a 1-D float64 array (any length). If it raises on rank 0, the
        other ranks raise ``RuntimeError`` with its message (and rank 0 re-raises it).
        ``consume=True``: ``local`` may be summed into in place (no copy of a large payload;
        the caller must not use it afterwards).
        """
        summed = self._reduce_to_root(np.asarray(local), consume)
        if self.rank == 0:
            try:
                dec = np.ascontiguousarray(np.asarray(decide(summed), dtype=np.float64).ravel())
            except BaseException as e:
                if self.world_size > 1:
                    try:
                        self._bcast_payload(_ERR + f"{type(e).__name__}: {e}".encode()[:4000])
                    except Exception:
                        pass
                raise
            if self._child_ranks:
                self._bcast_payload(_OK + dec.tobytes())
            return dec
        return self._unframe(self._bcast_payload(None), "decide")

    def broadcast(self, arr: np.ndarray | None) -> np.ndarray:
        """Rank 0's 1-D float64 ``arr`` on every rank (others pass None)."""
        if self.rank == 0:
            dec = np.ascontiguousarray(np.asarray(arr, dtype=np.float64).ravel())
            if self._child_ranks:
                self._bcast_payload(_OK + dec.tobytes())
            return dec
        return self._unframe(self._bcast_payload(None), "broadcast")

    def ordered_fold(self, init: np.ndarray, add) -> np.ndarray:
        """Fold ``add`` over the ranks in rank order; every rank gets the final accumulator.

        Rank 0 starts from a copy of ``init`` and calls ``add(acc)`` (which updates ``acc`` in
        place); rank 1 then receives that ``acc`` and calls its own ``add``, and so on up to the
        last rank, whose ``acc`` is returned on every rank. When each rank's ``add`` adds its
        rows' terms one by one and the ranks hold consecutive rows, the result is the
        sequential sum over all rows, bit for bit, whatever the number of ranks (a tree
        reduction would round differently). On arrival ``acc`` holds the fold over the lower
        ranks, so an ``add`` can also read its exclusive prefix there.

        ``init`` must have the same shape and dtype on every rank (only rank 0's values are
        used). The accumulator travels the binomial tree depth first (each subtree is a
        contiguous rank range, children in increasing order): 2 (world_size - 1) messages in
        sequence, then the result goes down to the ranks that have not seen it.
        """
        last = self.world_size - 1

        def holds_last(r):  # r's subtree is [r, r + lowbit(r)); rank 0's is every rank
            return r == 0 or r <= last < r + (r & -r)

        if self._parent is None:
            acc = np.array(init, copy=True, order="C")
        else:
            acc = np.empty_like(np.asarray(init), order="C")
            self._recv_exact(self._parent, acc, "an ordered fold")
        add(acc)
        for child in self._child_ranks:
            self._send(self._children[child], acc)
            self._recv_exact(self._children[child], acc, "an ordered fold")
        if self._parent is not None:
            self._send(self._parent, acc)
            if not holds_last(self.rank):
                self._recv_exact(self._parent, acc, "an ordered fold's result")
        for child in self._child_ranks:
            if not holds_last(child):
                self._send(self._children[child], acc)
        return acc

    def barrier(self) -> None:
        """Return once every rank has called ``barrier``."""
        self.allreduce_sum(np.zeros(1, dtype=np.int64))

    def close(self) -> None:
        """Close every connection (peers blocked on us then fail at once)."""
        peers = list(self._children.values())
        if self._parent is not None:
            peers.append(self._parent)
        self._children = {}
        self._parent = None
        for p in peers:
            p.close()
