"""Connections between the tasks of one barrier stage: the binomial tree's ranks, listeners
and their addresses, the authenticated handshake and one peer's framed socket.

``sockets.SocketCollective`` builds its reductions and broadcasts on these; the progress
channel (``sparkxml_kernels.progress``) uses the handshake and addresses alone. The protocol
is described in ``sockets``.
"""
from __future__ import annotations

import os
import queue
import selectors
import socket
import struct
import threading
from multiprocessing.connection import (
    AuthenticationError,
    Connection,
    answer_challenge,
    deliver_challenge,
)

_HELLO = struct.Struct("!ii")  # (rank, world_size) sent by a child after authentication


def new_authkey() -> bytes:
    """A fresh random key for one fit (32 bytes)."""
    return os.urandom(32)


def tree_parent(rank: int) -> int:
    """Parent of ``rank`` in the binomial tree rooted at 0 (-1 for rank 0)."""
    return -1 if rank == 0 else rank & (rank - 1)


def tree_children(rank: int, world_size: int) -> list[int]:
    """Children of ``rank`` in increasing order (the order sums are added in)."""
    low = (rank & -rank) if rank else 1 << max(world_size - 1, 0).bit_length()
    out, step = [], 1
    while step < low and rank + step < world_size:
        out.append(rank + step)
        step <<= 1
    return out


def _default_host() -> str:
    try:
        host = socket.gethostbyname(socket.gethostname())
    except OSError:
        host = "127.0.0.1"
    return host


def _bind_address(host: str) -> str:
    """The interface to listen on for peers that connect to ``host``: the address ``host``
    resolves to here, or "0.0.0.0" (all interfaces) when that cannot be bound to.

    A name that resolves to a loopback address here while not being a loopback name itself
    (Debian's ``127.0.1.1 hostname`` line) gets all interfaces too: remote peers resolve
    the name to a routable address, which a loopback bind would not serve.
    """
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        return "0.0.0.0"
    if ip.startswith("127.") and not (host.startswith("127.") or host == "localhost"):
        return "0.0.0.0"
    return ip


def open_listener(advertise_host: str | None = None, bind_host: str | None = None,
                  backlog: int = 64):
    """Open a TCP listening socket on an ephemeral port.

    Parameters
    ----------
    advertise_host : str, optional
        The host name or IP the peers should connect to (in a Spark task: the executor's host
        from ``BarrierTaskContext.getTaskInfos()``). Default: this machine's address.
    bind_host : str, optional
        Interface to listen on. Default: the address ``advertise_host`` resolves to on this
        machine, so that only that interface accepts connections; "0.0.0.0" (all
        interfaces) when that address is not local (NAT, containers) or is a loopback
        address under a routable name. Connections are authenticated either way, and a
        connection that does not complete the handshake within ``sockets.HANDSHAKE_SECONDS`` is
        dropped without delaying the real peers.

    Returns
    -------
    (socket.socket, str)
        The listening socket (give it to ``SocketCollective(listener=...)``) and the
        ``"host:port"`` to publish to the peers.
    """
    host = advertise_host or _default_host()
    candidates = [bind_host] if bind_host is not None else [_bind_address(host), "0.0.0.0"]
    err = None
    for where in dict.fromkeys(candidates):  # (once each, in order)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((where, 0))
            sock.listen(backlog)
        except OSError as e:  # EADDRNOTAVAIL: not an address of this machine
            sock.close()
            err = e
            continue
        except BaseException:
            sock.close()
            raise
        port = sock.getsockname()[1]
        return sock, f"{host}:{port}"
    raise OSError(f"cannot listen on {candidates}: {err}")


def parse_address(addr: str) -> tuple[str, int]:
    host, _, port = str(addr).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"peer address {addr!r} is not 'host:port'")
    return host.strip("[]"), int(port)


def set_io_timeouts(sock: socket.socket, timeout_s: float) -> None:
    # Kernel-level deadlines on a blocking socket: a read or write that makes no progress for
    # timeout_s fails with EAGAIN (BlockingIOError) instead of blocking forever.
    sec = int(timeout_s)
    usec = int(round((timeout_s - sec) * 1e6))
    tv = struct.pack("ll", sec, usec)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Peer:
    """A connected, authenticated peer: framed raw bytes over a TCP socket.

    Framing is ``multiprocessing.connection``'s (a 4-byte big-endian length, or -1 and an
    8-byte length for messages over 2 GiB, then the payload), so the stream is what
    ``Connection.send_bytes`` writes. Receiving reads straight into the caller's preallocated
    buffer with ``socket.recv_into`` (``Connection.recv_bytes_into`` would stage every message
    in a ``BytesIO`` and copy it twice). The socket's timeout bounds every wait.
    """

    __slots__ = ("sock", "rank", "_hdr")

    def __init__(self, sock: socket.socket, rank: int, timeout_s: float):
        self.sock = sock
        self.rank = rank
        self._hdr = bytearray(8)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(timeout_s)

    def send(self, payload) -> int:
        mv = memoryview(payload).cast("B")
        n = mv.nbytes
        if n > 0x7FFFFFFF:
            self.sock.sendall(struct.pack("!iQ", -1, n))
            self.sock.sendall(mv)
        elif n > 16384:
            self.sock.sendall(struct.pack("!i", n))
            self.sock.sendall(mv)
        else:  # one segment for small messages (no Nagle/delayed-ACK stall)
            self.sock.sendall(struct.pack("!i", n) + mv.tobytes())
        return n

    def _fill(self, mv: memoryview) -> None:
        got, n = 0, mv.nbytes
        while got < n:
            k = self.sock.recv_into(mv[got:], n - got)
            if k == 0:
                raise EOFError
            got += k

    def recv_size(self) -> int:
        """Block (up to the timeout) for the next message header; return the payload size."""
        hdr = memoryview(self._hdr)
        self._fill(hdr[:4])
        (n,) = struct.unpack("!i", hdr[:4])
        if n == -1:
            self._fill(hdr[:8])
            (n,) = struct.unpack("!Q", hdr[:8])
        return n

    def recv_payload_into(self, buf, n: int) -> None:
        self._fill(memoryview(buf).cast("B")[:n])

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def handshake(sock: socket.socket, authkey: bytes, server: bool, timeout_s: float) -> None:
    """The stdlib HMAC challenge both ways (what Listener.accept()/Client() do), on a
    Connection over a duplicate of the socket's descriptor, bounded by ``timeout_s``."""
    sock.settimeout(None)
    set_io_timeouts(sock, timeout_s)
    conn = Connection(os.dup(sock.fileno()))
    try:
        if server:
            deliver_challenge(conn, authkey)
            answer_challenge(conn, authkey)
        else:
            answer_challenge(conn, authkey)
            deliver_challenge(conn, authkey)
    finally:
        conn.close()


def _abort(sock: socket.socket) -> None:
    # shutdown() wakes a thread blocked in recv on this socket (close() alone does not)
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _serve_handshake(sock, addr, authkey: bytes, timeout_s: float, done, wake) -> None:
    """Server side of one incoming connection, on its own thread: the HMAC challenge both
    ways, then the (rank, world_size) hello, all within ``timeout_s``. Puts (sock, addr,
    hello or None, reason it was refused or None) on ``done`` and pokes ``wake``."""
    hello, reason = None, None
    try:
        handshake(sock, authkey, True, timeout_s)
        p = _Peer(sock, -1, timeout_s)
        n = p.recv_size()
        if n != _HELLO.size:
            raise struct.error(f"a {n}-byte hello")
        buf = bytearray(n)
        p.recv_payload_into(buf, n)
        hello = _HELLO.unpack(bytes(buf))
    except AuthenticationError:
        reason = "failed authentication (a different fit's key?)"
    except (BlockingIOError, TimeoutError):
        reason = f"did not complete the handshake within {timeout_s:g}s"
    except EOFError:
        reason = "closed the connection during the handshake"
    except (OSError, struct.error, ValueError) as e:
        reason = f"broke the protocol ({e!r})"
    done.put((sock, addr, hello, reason))
    try:
        wake.send(b"\x00")
    except OSError:  # the accept loop is over
        pass


class HandshakeServer:
    """A listener's incoming connections, each authenticated on its own thread
    (:func:`_serve_handshake`, within ``hs_timeout``), so that a connection that sends
    nothing, sends garbage or holds another key never delays the real peers queued behind
    it. :meth:`accepted` waits for the next authenticated ones; the refused ones are kept in
    ``dropped`` as (host, reason) for error messages. Use as a context manager: on exit the
    connections still in their handshake are aborted (their threads fail and exit)."""

    def __init__(self, listener: socket.socket, authkey: bytes, hs_timeout: float,
                 max_pending: int):
        self._listener = listener
        self._authkey = authkey
        self._hs_timeout = hs_timeout
        self._max_pending = max_pending
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        # (a selector, not select.select: an executor may hold descriptors above 1024)
        self._sel = selectors.DefaultSelector()
        self._sel.register(listener, selectors.EVENT_READ)
        self._sel.register(self._wake_r, selectors.EVENT_READ)
        self.pending: dict = {}  # id -> socket still in its handshake
        self.dropped: list = []  # (peer host, reason) of connections that were not peers

    def accepted(self, timeout_s: float) -> list:
        """(socket, hello) of each connection authenticated within ``timeout_s``: the hello
        is the (rank, world_size) the peer sent."""
        ready = [key.fileobj for key, _ in self._sel.select(timeout_s)]
        if self._listener in ready:
            sock, addr = self._listener.accept()
            if len(self.pending) >= self._max_pending:
                sock.close()
                self.dropped.append((addr[0], "too many connections in their handshake"))
            else:
                self.pending[id(sock)] = sock
                threading.Thread(
                    target=_serve_handshake, name="sparkxml-handshake", daemon=True,
                    args=(sock, addr, self._authkey, self._hs_timeout, self._done,
                          self._wake_w)).start()
        if self._wake_r in ready:
            self._wake_r.recv(4096)
        out = []
        while True:
            try:
                sock, addr, hello, reason = self._done.get_nowait()
            except queue.Empty:
                return out
            self.pending.pop(id(sock), None)
            if reason is not None:
                sock.close()
                self.dropped.append((addr[0], reason))
            else:
                out.append((sock, hello))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for sock in self.pending.values():
            _abort(sock)
        self._sel.close()
        self._wake_r.close()
        self._wake_w.close()

