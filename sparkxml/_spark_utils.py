"""Small DataFrame-only helpers shared by the estimators (Spark Connect safe)."""
from __future__ import annotations

from pyspark.ml.linalg import VectorUDT
from pyspark.sql import types as T

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


def check_column(dataset, name: str, param: str, kinds: tuple, what: str) -> T.DataType:
    """Check that ``dataset`` has column ``name`` of one of ``kinds``; return its type."""
    if name not in dataset.columns:
        raise ValueError(f"{param}: column '{name}' is not in the DataFrame (columns: "
                         f"{dataset.columns})")
    dtype = dataset.schema[name].dataType
    if not isinstance(dtype, kinds):
        raise TypeError(f"{param}: column '{name}' must be {what}, got {dtype.simpleString()}")
    return dtype


def check_vector_column(dataset, name: str, param: str = "featuresCol") -> None:
    check_column(dataset, name, param, (VectorUDT,), "a Spark ML vector (VectorUDT)")


def check_int_array_column(dataset, name: str, param: str = "labelsCol") -> None:
    dtype = check_column(dataset, name, param, (T.ArrayType,), "array<int>")
    if not isinstance(dtype.elementType, (T.IntegerType, T.LongType, T.ShortType, T.ByteType)):
        raise TypeError(f"{param}: column '{name}' must be array<int>, got "
                        f"{dtype.simpleString()}")


def physical_memory_bytes() -> int:
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


def parse_bytes(text: str) -> int:
    """Parse a Spark memory string ('512m', '2g', '1024') into bytes (plain numbers are MiB)."""
    s = str(text).strip().lower()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if s.endswith("b"):
        s = s[:-1]
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(float(s) * (1 << 20))
