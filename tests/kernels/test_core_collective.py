"""SocketCollective on loopback: sums, decisions, determinism, and failure bounds."""
import multiprocessing as mp
import threading
import time

import numpy as np
import pytest

from sparkxml_kernels.collective import (
    LocalCollective,
    SocketCollective,
    new_authkey,
    open_listener,
    tree_children,
    tree_parent,
)


def _run_ranks(world, body, authkey=None, timeout_s=10.0, listeners=None):
    """Run body(coll) for every rank in threads; return (results, errors) indexed by rank."""
    authkey = authkey or new_authkey()
    if listeners is None:
        listeners = [open_listener("127.0.0.1") for _ in range(world)]
    addrs = [a for _, a in listeners]
    results, errors = [None] * world, [None] * world
    _run_ranks.finished = finished = [None] * world

    def worker(r):
        coll = None
        try:
            coll = SocketCollective(r, world, addrs, authkey, timeout_s, listener=listeners[r][0])
            results[r] = body(coll)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors[r] = e
        finally:
            finished[r] = time.monotonic()
            if coll is not None:
                coll.close()

    threads = [threading.Thread(target=worker, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results, errors


def test_tree_topology_covers_every_rank_once():
    for world in range(1, 20):
        seen = {0}
        for r in range(world):
            for c in tree_children(r, world):
                assert tree_parent(c) == r
                assert c not in seen
                seen.add(c)
        assert seen == set(range(world))


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5])
def test_allreduce_and_decide_sum(world):
    rng = np.random.default_rng(world)
    local = [rng.normal(size=(3, 7, 2)) for _ in range(world)]
    ints = [rng.integers(0, 100, size=11) for _ in range(world)]
    expected = sum(local)

    def body(coll):
        out = []
        for it in range(3):  # repeated rounds reuse the buffers
            s = coll.allreduce_sum(local[coll.rank] * (it + 1))
            out.append(s)
        si = coll.allreduce_sum(ints[coll.rank])
        seen = []

        def decide(summed):
            seen.append(summed.copy())
            return np.array([summed.sum(), float(summed.shape[0]), 7.0])

        dec = coll.reduce_and_decide(local[coll.rank], decide)
        dec2 = coll.reduce_and_decide(local[coll.rank][:1], lambda s: np.arange(5000.0))
        b = coll.broadcast(np.array([1.5, 2.5]) if coll.rank == 0 else None)
        coll.barrier()
        return out, si, dec, dec2, b, seen

    results, errors = _run_ranks(world, body)
    assert errors == [None] * world, errors
    for r, (out, si, dec, dec2, b, seen) in enumerate(results):
        for it, s in enumerate(out):
            np.testing.assert_allclose(s, expected * (it + 1), rtol=1e-12)
        assert si.dtype == ints[0].dtype
        np.testing.assert_array_equal(si, sum(ints))
        np.testing.assert_allclose(dec, [expected.sum(), 3.0, 7.0], rtol=1e-12)
        np.testing.assert_array_equal(dec2, np.arange(5000.0))
        np.testing.assert_array_equal(b, [1.5, 2.5])
        assert (len(seen) == 1) == (r == 0)  # only rank 0 decides
    # every rank holds bit-identical sums
    for r in range(1, world):
        np.testing.assert_array_equal(results[r][0][0], results[0][0][0])


def test_sum_order_is_deterministic():
    world = 5
    rng = np.random.default_rng(0)
    local = [rng.normal(size=1000) * 10.0 ** rng.integers(-8, 8, size=1000) for _ in range(world)]
    runs = [_run_ranks(world, lambda c: c.allreduce_sum(local[c.rank]))[0][0] for _ in range(3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])


@pytest.mark.parametrize("world", [1, 2, 3])
def test_allreduce_consume_sums_in_place_with_the_same_bits(world):
    rng = np.random.default_rng(7)
    local = [rng.normal(size=500) * 10.0 ** rng.integers(-8, 8, size=500) for _ in range(world)]

    def body(coll):
        mine = local[coll.rank].copy()
        plain = coll.allreduce_sum(mine)
        np.testing.assert_array_equal(mine, local[coll.rank])  # left as it was
        given = local[coll.rank].copy()
        consumed = coll.allreduce_sum(given, consume=True)
        return plain, consumed, consumed is given

    results, errors = _run_ranks(world, body)
    assert errors == [None] * world, errors
    for plain, consumed, same in results:
        np.testing.assert_array_equal(consumed, plain)
        np.testing.assert_array_equal(consumed, results[0][0])
        assert same  # summed into the caller's array, no copy


def test_local_collective():
    c = LocalCollective()
    x = np.arange(4.0)
    np.testing.assert_array_equal(c.allreduce_sum(x), x)
    assert c.allreduce_sum(x) is not x and c.allreduce_sum(x, consume=True) is x
    np.testing.assert_array_equal(c.reduce_and_decide(x, lambda s: s * 2), x * 2)


def test_decide_error_reaches_every_rank_fast():
    world = 3

    def body(coll):
        def decide(s):
            raise ValueError("no split possible")
        coll.reduce_and_decide(np.ones(4), decide)

    t0 = time.monotonic()
    _, errors = _run_ranks(world, body, timeout_s=30)
    assert time.monotonic() - t0 < 10
    assert isinstance(errors[0], ValueError)
    for r in (1, 2):
        assert isinstance(errors[r], RuntimeError) and "no split possible" in str(errors[r])


def test_silent_peer_times_out_naming_it():
    """Rank 2 connects and then stops answering: the others raise TimeoutError in time."""
    world, timeout = 3, 1.5
    release = threading.Event()

    def body(coll):
        coll.allreduce_sum(np.ones(3))
        if coll.rank == 2:
            release.wait(20)  # hangs: never sends its next contribution
            return None
        return coll.allreduce_sum(np.ones(3))

    t0 = time.monotonic()
    threading.Timer(4.0, release.set).start()
    _, errors = _run_ranks(world, body, timeout_s=timeout)
    elapsed = max(_run_ranks.finished[0], _run_ranks.finished[1]) - t0
    # rank 0 waits for rank 2 (its child) and names it; rank 1 waits on rank 0
    assert isinstance(errors[0], TimeoutError) and "rank 2" in str(errors[0]), errors
    assert errors[1] is not None
    assert elapsed < timeout * 3 + 2


def test_peer_that_never_connects_times_out():
    world, timeout = 2, 1.0
    listeners = [open_listener("127.0.0.1") for _ in range(world)]
    addrs = [a for _, a in listeners]
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=r"ranks \[1\] did not connect"):
        SocketCollective(0, world, addrs, new_authkey(), timeout, listener=listeners[0][0])
    assert time.monotonic() - t0 < timeout + 2
    listeners[1][0].close()


def test_wrong_authkey_is_rejected():
    world = 2
    listeners = [open_listener("127.0.0.1") for _ in range(world)]
    addrs = [a for _, a in listeners]
    errors = {}

    def rank(r, key):
        try:
            SocketCollective(r, world, addrs, key, 1.5, listener=listeners[r][0]).close()
        except BaseException as e:  # noqa: BLE001
            errors[r] = e

    ts = [threading.Thread(target=rank, args=(0, b"a" * 32)),
          threading.Thread(target=rank, args=(1, b"b" * 32))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert isinstance(errors.get(0), TimeoutError)  # the stranger is ignored, never accepted
    assert isinstance(errors.get(1), (ConnectionError, TimeoutError))


def _process_rank(r, world, addrs, authkey, listener_fd_addr, die, q):
    import socket as _s
    sock = _s.socket(fileno=listener_fd_addr) if listener_fd_addr is not None else None
    try:
        coll = SocketCollective(r, world, addrs, authkey, 3.0, listener=sock)
        coll.allreduce_sum(np.ones(2))
        if die:
            import os
            os._exit(1)  # the process dies abruptly mid-training
        coll.allreduce_sum(np.ones(2))
        q.put((r, "ok"))
    except BaseException as e:  # noqa: BLE001
        q.put((r, f"{type(e).__name__}: {e}"))


def test_dead_peer_process_fails_fast():
    """A rank whose process dies: the others raise naming it, well before the timeout."""
    world = 3
    ctx = mp.get_context("fork")
    listeners = [open_listener("127.0.0.1") for _ in range(world)]
    addrs = [a for _, a in listeners]
    key = new_authkey()
    q = ctx.Queue()
    procs = []
    for r in range(world):
        p = ctx.Process(target=_process_rank,
                        args=(r, world, addrs, key, listeners[r][0].fileno(), r == 2, q))
        p.start()
        procs.append(p)
    for s, _ in listeners:
        s.close()
    t0 = time.monotonic()
    got = dict(q.get(timeout=20) for _ in range(2))
    for p in procs:
        p.join(10)
    assert time.monotonic() - t0 < 3.0  # EOF is seen at once, not after the 3 s timeout
    assert "rank 2" in got[0] and "ConnectionError" in got[0], got
    assert got[1] != "ok"


# ------------------------------------------------------------------ strangers on the port
def _strays(address, silent=0, garbage=0, wrong_key=0):
    """Open connections to ``address`` that are not peers: silent ones (connect, send
    nothing), ones that send bytes that are no handshake, and ones that answer the challenge
    with another key. Returns the sockets (the caller closes them)."""
    import socket
    from multiprocessing.connection import Connection, answer_challenge

    host, port = address.rsplit(":", 1)
    socks = []
    for _ in range(silent):
        socks.append(socket.create_connection((host, int(port))))
    for _ in range(garbage):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 4)
        socks.append(s)
    for _ in range(wrong_key):
        s = socket.create_connection((host, int(port)))
        socks.append(s)

        def answer(fd=s.fileno()):
            import os
            try:
                answer_challenge(Connection(os.dup(fd)), b"x" * 32)
            except Exception:  # noqa: BLE001 - refused, as it should be
                pass
        threading.Thread(target=answer, daemon=True).start()
    return socks


def test_stray_connections_do_not_delay_the_peers():
    """Silent, garbage and wrong-key connections queued ahead of the real children: the
    collective still forms at once (they are authenticated concurrently and dropped), and
    computes the right sums. Before, each silent connection held the accept loop for 30 s."""
    world = 3  # rank 0 has two children
    listeners = [open_listener("127.0.0.1") for _ in range(world)]
    socks = []
    for _, addr in listeners:
        socks += _strays(addr, silent=3, garbage=2, wrong_key=2)
    t0 = time.monotonic()
    results, errors = _run_ranks(world, lambda c: c.allreduce_sum(np.full(3, c.rank + 1.0)),
                                 timeout_s=30, listeners=listeners)
    elapsed = time.monotonic() - t0
    for s in socks:
        s.close()
    assert errors == [None] * world, errors
    for r in results:
        np.testing.assert_array_equal(r, [6.0, 6.0, 6.0])
    assert elapsed < 2.0, elapsed  # not bounded by the 5 s handshake deadline of the strays


def test_missing_peer_error_names_the_dropped_strangers(monkeypatch):
    """A child that never comes: the error says so, and what the strangers did."""
    from sparkxml_kernels.collective import sockets as collective

    monkeypatch.setattr(collective, "HANDSHAKE_SECONDS", 0.3)
    listeners = [open_listener("127.0.0.1") for _ in range(2)]
    addrs = [a for _, a in listeners]
    socks = _strays(addrs[0], silent=2, wrong_key=1)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        SocketCollective(0, 2, addrs, new_authkey(), 1.5, listener=listeners[0][0])
    assert time.monotonic() - t0 < 1.5 + 1.0
    msg = str(info.value)
    assert "ranks [1] did not connect within 1.5s" in msg, msg
    assert "2 from 127.0.0.1 did not complete the handshake within 0.3s" in msg, msg
    assert "1 from 127.0.0.1 failed authentication" in msg, msg
    for s in socks:
        s.close()
    listeners[1][0].close()


def test_peer_dropped_while_the_port_is_flooded_retries(monkeypatch):
    """More silent connections than handshake slots: the real child is turned away at first,
    retries, and gets in once the strangers' short handshake deadline has dropped them."""
    from sparkxml_kernels.collective import sockets as collective

    monkeypatch.setattr(collective, "MAX_PENDING_HANDSHAKES", 2)
    monkeypatch.setattr(collective, "HANDSHAKE_SECONDS", 0.5)
    listeners = [open_listener("127.0.0.1") for _ in range(2)]
    socks = _strays(listeners[0][1], silent=2)
    time.sleep(0.2)
    results, errors = _run_ranks(2, lambda c: c.allreduce_sum(np.ones(2)), timeout_s=10,
                                 listeners=listeners)
    for s in socks:
        s.close()
    assert errors == [None, None], errors
    np.testing.assert_array_equal(results[0], [2.0, 2.0])


def _bindable(ip):
    import socket

    s = socket.socket()
    try:
        s.bind((ip, 0))
        return True
    except OSError:
        return False
    finally:
        s.close()


def test_listener_binds_to_the_advertised_address():
    sock, addr = open_listener("127.0.0.1")
    assert sock.getsockname()[0] == "127.0.0.1" and addr.startswith("127.0.0.1:")
    sock.close()
    sock, addr = open_listener("localhost")
    assert sock.getsockname()[0] == "127.0.0.1" and addr.startswith("localhost:")
    sock.close()
    # not an address of this machine: all interfaces, still advertised as given
    foreign = next(ip for ip in ("203.0.113.7", "198.51.100.7", "192.0.2.7")
                   if not _bindable(ip))
    sock, addr = open_listener(foreign)
    assert sock.getsockname()[0] == "0.0.0.0" and addr.startswith(foreign + ":")
    sock.close()
    sock, addr = open_listener("127.0.0.1", bind_host="0.0.0.0")  # explicit choice wins
    assert sock.getsockname()[0] == "0.0.0.0"
    sock.close()


@pytest.mark.parametrize("chunk", [8, 24, 1 << 20])
def test_chunked_reduction_adds_the_same_bits(monkeypatch, chunk):
    """Reductions are received and added REDUCE_CHUNK_BYTES at a time (a receiver holds no
    second copy of a large payload): the sums are the tree's whole-message sums, bit for bit,
    for sizes that are not a multiple of the chunk, and in place when consumed."""
    import sparkxml_kernels.collective.sockets as C

    world = 5
    rng = np.random.default_rng(7)
    local = [rng.normal(size=(13, 3)) * 10.0 ** rng.integers(-8, 8, size=(13, 3))
             for _ in range(world)]
    ints = [rng.integers(-2**62, 2**62, size=29) for _ in range(world)]

    def tree_sum(arrs, r=0):  # the reference: every subtree summed whole, children in order
        acc = arrs[r].copy()
        for c in tree_children(r, world):
            acc += tree_sum(arrs, c)
        return acc

    monkeypatch.setattr(C, "REDUCE_CHUNK_BYTES", chunk)

    def body(coll):
        s = coll.allreduce_sum(local[coll.rank])
        mine = ints[coll.rank].copy()
        got = coll.reduce_and_decide(mine, lambda summed: summed.astype(np.float64),
                                     consume=True)
        return s, got, mine

    results, errors = _run_ranks(world, body)
    assert errors == [None] * world, errors
    expected_i = tree_sum(ints)
    for s, got, _ in results:
        np.testing.assert_array_equal(s, tree_sum(local))
        np.testing.assert_array_equal(got, expected_i.astype(np.float64))
    np.testing.assert_array_equal(results[0][2], expected_i)  # rank 0 summed in place


def test_every_collective_implements_the_protocol_and_in_process_matches_sequential():
    """LocalCollective, InProcessGroup's members and SocketCollective are all a
    ``Collective``; the thread group's broadcast and ordered fold give every rank rank 0's
    array and the rank-order fold, as the socket collective does."""
    import threading

    import numpy as np

    from sparkxml_kernels.collective import Collective, InProcessGroup, LocalCollective
    from sparkxml_kernels.collective import SocketCollective as S

    assert isinstance(LocalCollective(), Collective)
    for name in ("allreduce_sum", "reduce_and_decide", "broadcast", "ordered_fold",
                 "barrier", "close"):
        assert callable(getattr(S, name))
    group = InProcessGroup(3, timeout=60)
    out = [None] * 3
    terms = np.random.default_rng(0).normal(size=(3, 5))

    def work(rank):
        c = group.collective(rank)
        assert isinstance(c, Collective)
        with c:
            b = c.broadcast(np.arange(4.0) if rank == 0 else None)

            def add(acc):  # acc holds the fold over the lower ranks on arrival
                acc += terms[rank]

            f = c.ordered_fold(np.zeros(5), add)
            c.barrier()
            out[rank] = (b, f)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seq = np.zeros(5)
    for r in range(3):
        seq += terms[r]
    for b, f in out:
        np.testing.assert_array_equal(b, np.arange(4.0))
        np.testing.assert_array_equal(f, seq)
