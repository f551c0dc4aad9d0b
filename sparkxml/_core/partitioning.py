"""Partition keys that Spark's hash partitioner sends to distinct partitions (Spark's
Murmur3 of a long, computed here), so that ``repartition(n, key)`` puts block ``i`` in
partition ``i``."""
from __future__ import annotations

_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _M32
    return (_rotl(k1, 15) * 0x1B873593) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def spark_hash_long(value: int, seed: int = 42) -> int:
    """Spark SQL's ``hash(bigint)`` (Murmur3 x86_32, seed 42) as a signed 32-bit int.

    ``repartition(n, col)`` puts a row in partition ``pmod(hash(col), n)``; knowing the hash
    lets us choose key values that land in distinct partitions (one training group a task).
    """
    h1 = _mix_h1(seed & _M32, _mix_k1(value & _M32))
    h1 = _mix_h1(h1, _mix_k1((value >> 32) & _M32))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_keys(n: int) -> list[int]:
    """Return n bigint keys k_0..k_{n-1} such that ``repartition(n, key)`` sends k_p to
    partition p."""
    keys = [None] * n
    missing, candidate = n, 0
    while missing:
        p = spark_hash_long(candidate) % n
        if keys[p] is None:
            keys[p] = candidate
            missing -= 1
        candidate += 1
    return keys

