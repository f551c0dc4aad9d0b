"""How the tasks of one barrier stage learn each other's addresses, over sockets.

Spark's ``BarrierTaskContext.allGather`` takes about a second whatever the tasks do: the
executor checks its barrier RPC once a second (measured: 1.00-1.02 s with both tasks of
local[2] calling it at once). :func:`start` does the same gather in milliseconds:

- every rank derives the same key from the fit's key and the stage (:func:`rendezvous_key`),
  and from it ``CANDIDATE_PORTS`` ports in the range Linux hands out for ephemeral ports
  (:func:`candidate_ports`);
- rank 0 listens on the first of them it can bind, on its executor's host (the address
  Spark reports for its task);
- every other rank tries the candidates in order on that host until one completes the
  mutual HMAC handshake (``transport.handshake``) with the key, then sends its hello and its
  message; a port held by another program fails the handshake and the rank moves on;
- once rank 0 holds every rank's message, it sends the list (in rank order) to all of them.

Rank 0 authenticates each incoming connection on its own thread
(``transport.HandshakeServer``), so silent or foreign connections do not delay the ranks.

PySpark does not tell a task its stage attempt, so a retried stage's attempts share the key.
A failed attempt's tasks are killed by Spark before they could join the next one; should one
still be looking for rank 0, a second hello for a rank fails that attempt at once, or the
attempt times out, and Spark runs the stage again. The training that follows is keyed by every
task's random nonce (``sparkxml._core.barrier.attempt_key``), so it is never shared across
attempts.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import socket
import struct
import threading
import time

from .transport import (
    _HELLO,
    AuthenticationError,
    HandshakeServer,
    _abort,
    _bind_address,
    _Peer,
    handshake,
)

# Linux's default ephemeral range (net.ipv4.ip_local_port_range): the ports the ranks'
# own listeners already get, so a network that lets the ranks connect lets these through
PORT_LOW, PORT_HIGH = 32768, 60999
CANDIDATE_PORTS = 16
# a candidate that accepts but does not finish the handshake within this is not rank 0
ATTEMPT_SECONDS = 2.0
_MAX_PENDING = 64
_POLL = 0.2  # how often a waiting rank 0 sees that its task gave the rendezvous up


def rendezvous_key(authkey: bytes, stage_id: int) -> bytes:
    """The key of one stage's rendezvous (HMAC-SHA256 of the fit's key and the stage)."""
    msg = f"sparkxml-rendezvous|{int(stage_id)}".encode()
    return hmac.new(authkey, msg, hashlib.sha256).digest()


def candidate_ports(key: bytes, n: int = CANDIDATE_PORTS) -> list[int]:
    """The ports rank 0 tries to listen on, in order (every rank computes the same)."""
    span = PORT_HIGH - PORT_LOW + 1
    out: list[int] = []
    i = 0
    while len(out) < n:
        h = hashlib.sha256(key + i.to_bytes(4, "big")).digest()
        port = PORT_LOW + int.from_bytes(h[:8], "big") % span
        if port not in out:
            out.append(port)
        i += 1
    return out


def _listen(host: str, key: bytes) -> socket.socket:
    where = _bind_address(host)
    err = None
    for port in candidate_ports(key):
        for addr in dict.fromkeys((where, "0.0.0.0")):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((addr, port))
                sock.listen(_MAX_PENDING)
                return sock
            except OSError as e:  # in use, or not an address of this machine
                sock.close()
                err = e
    raise OSError(f"rank 0 could not listen on any of its {CANDIDATE_PORTS} rendezvous "
                  f"ports on {host}: {err}")


def _recv(p: _Peer) -> bytes:
    n = p.recv_size()
    buf = bytearray(n)
    p.recv_payload_into(buf, n)
    return bytes(buf)


def _serve(host: str, key: bytes, world: int, message: str, deadline: float,
           stop: threading.Event) -> list[str]:
    """Rank 0: accept every other rank's message, then send each the full list."""
    listener = _listen(host, key)
    messages: list = [None] * world
    messages[0] = message
    peers: list[_Peer] = []
    try:
        with HandshakeServer(listener, key, ATTEMPT_SECONDS, _MAX_PENDING) as server:
            while any(m is None for m in messages):
                if stop.is_set():
                    raise ConnectionError("rank 0: the rendezvous was abandoned")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = [r for r, m in enumerate(messages) if m is None]
                    raise TimeoutError(
                        f"rank 0: ranks {missing} did not reach the rendezvous in time"
                        + (f"; refused {server.dropped[:3]}" if server.dropped else ""))
                for sock, (rank, peer_world) in server.accepted(min(remaining, _POLL)):
                    p = _Peer(sock, rank, max(1e-3, deadline - time.monotonic()))
                    peers.append(p)
                    if peer_world != world or not 0 < rank < world or messages[rank] is not None:
                        raise ConnectionError(f"rank 0: unexpected rendezvous hello (rank "
                                              f"{rank}, world {peer_world}) in a world of "
                                              f"{world}")
                    messages[rank] = _recv(p).decode()
        payload = json.dumps(messages).encode()
        for p in peers:
            p.send(payload)
        return messages
    finally:
        for p in peers:
            p.close()
        listener.close()


def _join(rank: int, world: int, host: str, key: bytes, message: str, deadline: float,
          stop: threading.Event) -> list[str]:
    """A rank above 0: find rank 0 among the candidate ports, send, receive the list."""
    ports = candidate_ports(key)
    last = None
    while True:
        for port in ports:
            if stop.is_set():
                raise ConnectionError(f"rank {rank}: the rendezvous was abandoned")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"rank {rank}: rank 0 was not found at {host} on its "
                                   f"rendezvous ports in time (last: {last!r})")
            try:
                sock = socket.create_connection((host, port),
                                                timeout=min(remaining, ATTEMPT_SECONDS))
            except OSError as e:  # nobody there (yet)
                last = e
                continue
            try:
                handshake(sock, key, False, min(remaining, ATTEMPT_SECONDS))
            except (AuthenticationError, EOFError, OSError) as e:  # another program
                last = e
                _abort(sock)
                continue
            p = _Peer(sock, 0, max(1e-3, deadline - time.monotonic()))
            try:
                p.send(_HELLO.pack(rank, world))
                p.send(message.encode())
                out = json.loads(_recv(p).decode())
            except (OSError, EOFError, struct.error, ValueError) as e:
                raise ConnectionError(f"rank {rank}: the rendezvous with rank 0 broke: "
                                      f"{e!r}") from None
            finally:
                p.close()
            if not isinstance(out, list) or len(out) != world or out[rank] != message:
                raise ConnectionError(f"rank {rank}: rank 0 answered the rendezvous with "
                                      f"another list")
            return [str(m) for m in out]
        time.sleep(0.01)  # rank 0 is not listening yet


class Rendezvous:
    """Every rank's ``message`` in rank order, gathered on a helper thread.

    Parameters
    ----------
    rank, world : int
        This task's rank and the number of tasks.
    host0 : str
        Rank 0's host (where it listens).
    key : bytes
        :func:`rendezvous_key` of the fit's key and the stage.
    message : str
        What this rank tells the others (its listener's address and a nonce).
    timeout_s : float
        Bound on the whole exchange.
    """

    def __init__(self, rank: int, world: int, host0: str, key: bytes, message: str,
                 timeout_s: float):
        self._out: list | None = None
        self._err: BaseException | None = None
        self._stop = threading.Event()
        deadline = time.monotonic() + float(timeout_s)
        if rank == 0:
            target, args = _serve, (host0, key, world, message, deadline, self._stop)
        else:
            target, args = _join, (rank, world, host0, key, message, deadline, self._stop)
        self._thread = threading.Thread(target=self._run, args=(target, args), daemon=True,
                                        name="sparkxml-rendezvous")
        self._thread.start()

    def _run(self, target, args):
        try:
            self._out = target(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised in result()
            self._err = e

    def close(self) -> None:
        """Give the exchange up (the task failed before it needed the addresses): the
        helper thread stops within ``_POLL`` s instead of listening until the deadline."""
        self._stop.set()

    def result(self) -> list[str]:
        """Wait for the exchange; every rank's message, in rank order."""
        self._thread.join()
        if self._err is not None:
            raise self._err
        assert self._out is not None
        return list(self._out)


__all__ = ["Rendezvous", "candidate_ports", "rendezvous_key", "CANDIDATE_PORTS",
           "ATTEMPT_SECONDS"]
