"""The barrier stage's address exchange over sockets (``collective.rendezvous``) on loopback:
every rank gets every message in rank order, whoever starts first and whatever holds the
candidate ports; strangers, a wrong key and a second hello for a rank fail or wait as said."""
import socket
import threading
import time

import pytest

from sparkxml_kernels.collective import new_authkey
from sparkxml_kernels.collective.rendezvous import (
    CANDIDATE_PORTS,
    Rendezvous,
    candidate_ports,
    rendezvous_key,
)
from sparkxml_kernels.collective.transport import handshake

HOST = "127.0.0.1"


def _messages(world):
    return [f"10.0.0.{r}:{4000 + r}#{r:016x}" for r in range(world)]


def _gather(world, key, order=None, delay=0.0, timeout_s=10.0):
    """Start the ranks in ``order`` (``delay`` s apart); their results or errors by rank."""
    msgs = _messages(world)
    out = [None] * world
    started = {}
    for r in order or range(world):
        started[r] = Rendezvous(r, world, HOST, key, msgs[r], timeout_s)
        time.sleep(delay)
    for r, g in started.items():
        try:
            out[r] = g.result()
        except Exception as e:  # noqa: BLE001 - reported to the test
            out[r] = e
    return msgs, out


def test_candidate_ports_are_fixed_by_the_key_and_in_the_ephemeral_range():
    k = rendezvous_key(b"k" * 32, 7)
    ports = candidate_ports(k)
    assert ports == candidate_ports(rendezvous_key(b"k" * 32, 7))
    assert len(set(ports)) == CANDIDATE_PORTS
    assert all(32768 <= p <= 60999 for p in ports)
    assert ports != candidate_ports(rendezvous_key(b"k" * 32, 8))
    assert ports != candidate_ports(rendezvous_key(b"j" * 32, 7))


@pytest.mark.parametrize("order", [None, [3, 2, 1, 0], [2, 0, 3, 1]])
def test_every_rank_gets_every_message_in_rank_order(order):
    """Rank 0 first, last or in between (peers retry until it listens)."""
    key = rendezvous_key(new_authkey(), 1)
    msgs, out = _gather(4, key, order, delay=0.05)
    assert out == [msgs] * 4


def _strangers_key(stage, n=2, tries=50):
    """A key whose first ``n`` candidate ports are free here, and listening sockets bound
    to them: those ports lie in the ephemeral range, where another process's connection
    may hold one at the moment (the rendezvous itself passes such ports over)."""
    for _ in range(tries):
        key = rendezvous_key(new_authkey(), stage)
        socks = []
        try:
            for p in candidate_ports(key)[:n]:
                srv = socket.socket()
                socks.append(srv)
                srv.bind((HOST, p))
            return key, socks
        except OSError:
            for srv in socks:
                srv.close()
    raise RuntimeError(f"no key with {n} free candidate ports in {tries} tries")


def _hold(srv, behaviour, stop):
    """A stranger on the bound socket ``srv``: accepts and stays silent, or answers the
    handshake with another key."""
    srv.listen(8)
    srv.settimeout(0.1)
    held = []

    def run():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            held.append(c)
            if behaviour == "wrong key":
                try:
                    handshake(c, b"another fit's key", True, 2.0)
                except Exception:  # noqa: BLE001 - the peer refuses it
                    pass
        srv.close()
        for c in held:
            c.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("behaviour", ["silent", "wrong key"])
def test_strangers_on_the_first_candidate_ports_are_passed_over(behaviour):
    """Rank 0 cannot bind the first two candidates (held by strangers) and listens on the
    third; the peers try the strangers first, fail their handshake, and find rank 0."""
    key, socks = _strangers_key(3)
    stop = threading.Event()
    threads = [_hold(srv, behaviour, stop) for srv in socks]
    try:
        msgs, out = _gather(3, key, order=[1, 2, 0])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert out == [msgs] * 3


def test_a_rank_with_another_key_never_joins_and_rank_0_names_who_is_missing():
    key = rendezvous_key(new_authkey(), 4)
    msgs = _messages(3)
    r0 = Rendezvous(0, 3, HOST, key, msgs[0], 2.0)
    r1 = Rendezvous(1, 3, HOST, key, msgs[1], 2.0)
    r2 = Rendezvous(2, 3, HOST, rendezvous_key(new_authkey(), 4), msgs[2], 2.0)
    with pytest.raises(TimeoutError, match=r"ranks \[2\] did not reach the rendezvous"):
        r0.result()
    with pytest.raises(TimeoutError, match="rank 0 was not found"):
        r2.result()
    with pytest.raises((ConnectionError, TimeoutError, OSError)):
        r1.result()  # rank 0 gave up: its connection closed before the list came


def test_a_second_hello_for_a_rank_fails_the_rendezvous():
    """What a task of a failed attempt of the same stage would cause, were it still looking
    for rank 0: an error at once, not a list naming the wrong task."""
    key = rendezvous_key(new_authkey(), 5)
    msgs = _messages(3)
    r0 = Rendezvous(0, 3, HOST, key, msgs[0], 5.0)
    a = Rendezvous(1, 3, HOST, key, msgs[1], 5.0)
    b = Rendezvous(1, 3, HOST, key, "stale:1#00", 5.0)
    with pytest.raises(ConnectionError, match="unexpected rendezvous hello"):
        r0.result()
    for g in (a, b):
        with pytest.raises((ConnectionError, TimeoutError, OSError)):
            g.result()


@pytest.mark.parametrize("rank", [0, 1])
def test_a_given_up_rendezvous_stops_instead_of_waiting_for_its_deadline(rank):
    """A task that fails before it needs the addresses closes its exchange: rank 0 stops
    listening (its port is free again) and a rank looking for rank 0 stops looking, long
    before the 60 s deadline."""
    key, socks = _strangers_key(6, n=1)  # a key whose first candidate is free: rank 0's port
    for srv in socks:
        srv.close()
    g = Rendezvous(rank, 2, HOST, key, _messages(2)[rank], 60.0)
    time.sleep(0.3)
    t0 = time.monotonic()
    g.close()
    with pytest.raises(ConnectionError, match="abandoned"):
        g.result()
    assert time.monotonic() - t0 < 10.0
    if rank == 0:  # the first candidate port can be bound again
        s = socket.socket()
        s.bind((HOST, candidate_ports(key)[0]))
        s.close()
