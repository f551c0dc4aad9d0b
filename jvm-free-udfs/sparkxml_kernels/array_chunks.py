"""Numpy arrays as rows of bytes: how model arrays travel and how they are stored.

A dict of arrays becomes rows ``(name, dtype, shape, part, data)``, each ``data`` at most
``chunk_bytes`` long (large arrays span several parts). The same rows carry a model back from a
training task (``sparkxml._core.barrier``) and hold it on disk (``persist``, as parquet); no
pickle anywhere. Only fixed-size numeric, bool and bytes dtypes are encoded, plus 0-d unicode
arrays (a name such as GBT's ``objective``), which travel as UTF-8 with dtype ``"U"``
(other unicode arrays are fixed-width, stored as they are).

Decoding copies every array once into fresh, writable memory (numba compiles a second
version of a kernel for read-only arrays, so nothing returned here is read-only).
"""
from __future__ import annotations

import zlib
from typing import Iterator

import numpy as np
import pyarrow as pa

UNICODE = "U"
MIN_CHUNK = 1 << 10  # a chunkBytes below this is corrupt metadata
MAX_CHUNKS = 10_000_000
# the Arrow fields of one row; the saved data rows and a training task's result rows put
# their own key fields (a save id, a rank) before these
CHUNK_FIELDS = [
    pa.field("name", pa.string(), False),
    pa.field("dtype", pa.string(), False),
    pa.field("shape", pa.list_(pa.field("element", pa.int64(), False)), False),
    pa.field("part", pa.int32(), False),
    pa.field("data", pa.binary(), False),
]


def _payload(name: str, a) -> tuple:
    """(dtype string, shape, uint8 view of the bytes) of one array."""
    a = np.asarray(a)
    if a.dtype.kind == "U" and a.ndim == 0:
        return UNICODE, (), np.frombuffer(str(a).encode("utf-8"), np.uint8)
    if a.dtype.kind == "O" or a.dtype.fields is not None or a.dtype.itemsize == 0:
        raise TypeError(f"array {name!r} has dtype {a.dtype}, which cannot be stored")
    shape = a.shape  # (np.ascontiguousarray would turn 0-d into 1-d)
    return a.dtype.str, shape, np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def iter_chunks(arrays: dict, chunk_bytes: int) -> Iterator[tuple]:
    """Yield ``(name, dtype, shape, part, data)`` per chunk, arrays in dict order; ``data`` is
    a uint8 view into the array (no copy). An empty array yields one empty part."""
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    for name, a in arrays.items():
        dtype, shape, raw = _payload(name, a)
        for part, start in enumerate(range(0, max(raw.size, 1), chunk_bytes)):
            yield name, dtype, tuple(int(s) for s in shape), part, raw[start:start + chunk_bytes]


def num_parts(nbytes: int, chunk_bytes: int) -> int:
    return max(1, -(-int(nbytes) // int(chunk_bytes)))


def binary_array(views: list) -> pa.Array:
    """An Arrow binary array over uint8 numpy views, copied once into one buffer (the views
    of one batch must stay under 2 GiB together: binary offsets are int32)."""
    sizes = np.fromiter((v.size for v in views), np.int64, len(views))
    offsets = np.zeros(len(views) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    if offsets[-1] >= 2 ** 31:
        raise ValueError(f"{int(offsets[-1])} bytes in one Arrow batch; the limit is 2 GiB")
    data = np.empty(int(offsets[-1]), np.uint8)
    for v, start in zip(views, offsets[:-1]):
        data[start:start + v.size] = v
    return pa.Array.from_buffers(pa.binary(), len(views),
                                 [None, pa.py_buffer(offsets.astype(np.int32)),
                                  pa.py_buffer(data)])


def array_from_bytes(dtype: str, shape, payload) -> np.ndarray:
    """One array from its dtype string, shape and bytes (a bytes-like or uint8 array)."""
    raw = np.frombuffer(payload, np.uint8) if not isinstance(payload, np.ndarray) else payload
    if dtype == UNICODE:
        return np.asarray(raw.tobytes().decode("utf-8"))
    out = empty_array(dtype, shape)
    if out.nbytes != raw.size:
        raise ValueError(f"{raw.size} bytes do not hold a {dtype} array of shape {out.shape}")
    out.reshape(-1).view(np.uint8)[:] = raw
    return out


def empty_array(dtype: str, shape) -> np.ndarray:
    """A fresh array of a stored fixed-size dtype string and shape, for the
    chunks of one array to be copied into."""
    dt = np.dtype(dtype)
    if dt.kind == "O" or dt.itemsize == 0:
        raise ValueError(f"dtype {dtype!r} is not a storable dtype")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape {shape} has a negative dimension")
    return np.empty(shape, dt)


class Assembler:
    """Collects the chunks of known arrays and checks that each arrives exactly once.

    Parameters
    ----------
    manifest : list of (name, dtype, shape)
        The arrays expected, as ``manifest_of`` returns.
    chunk_bytes : int
        The chunk size the arrays were cut with.
    where : str
        Named in every error (e.g. the model directory).
    rows : int, optional
        How many chunk rows the data holds, when known before reading them (a parquet
        footer): checked against the manifest before any array memory is allocated, so that
        a corrupt manifest cannot make a reader allocate what the data does not hold.
    checksums : list of int, optional
        The CRC-32 (``zlib.crc32``) of every chunk's bytes in seq order: a chunk whose bytes
        do not match is refused.
    """

    def __init__(self, manifest: list, chunk_bytes: int, where: str, rows: int | None = None,
                 checksums: list | None = None):
        self.where = where
        self.chunk_bytes = int(chunk_bytes)
        if not MIN_CHUNK <= self.chunk_bytes < 2 ** 31:
            raise ValueError(f"{where}: chunkBytes {chunk_bytes} is outside "
                             f"[{MIN_CHUNK}, 2**31)")
        self.arrays = []  # (name, dtype, shape, nbytes, first seq, parts)
        seq = 0
        for entry in manifest:
            name, dtype, shape = entry
            shape = tuple(shape)
            if not isinstance(name, str) or not all(isinstance(s, int) and s >= 0
                                                    for s in shape):
                raise ValueError(f"{where}: bad manifest entry {entry!r}")
            if dtype == UNICODE:
                if shape != ():
                    raise ValueError(f"{where}: unicode array {name!r} must be 0-d")
                nbytes, parts = -1, 1
            else:
                dt = np.dtype(dtype)
                if dt.hasobject or dt.fields is not None:
                    raise ValueError(f"{where}: array {name!r} has dtype {dtype!r}")
                nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
                parts = num_parts(nbytes, self.chunk_bytes)
            self.arrays.append((name, dtype, shape, nbytes, seq, parts))
            seq += parts
            if seq > MAX_CHUNKS:
                raise ValueError(f"{where}: the manifest lists more than {MAX_CHUNKS} chunks")
        if len({a[0] for a in self.arrays}) != len(self.arrays):
            raise ValueError(f"{where}: the manifest names an array twice")
        if rows is not None and rows != seq:
            raise ValueError(f"{where} is incomplete or corrupt: the data holds {rows} chunks, "
                             f"the metadata lists {seq}")
        self._starts = np.array([a[4] for a in self.arrays], np.int64)
        self.buffers = {}
        self.seen = np.zeros(seq, bool)
        self.checksums = None
        if checksums is not None:
            if not isinstance(checksums, list) or len(checksums) != seq or not all(
                    isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2 ** 32
                    for c in checksums):
                raise ValueError(f"{where}: the chunk checksums do not match the manifest's "
                                 f"{seq} chunks")
            self.checksums = checksums

    @property
    def num_chunks(self) -> int:
        return self.seen.size

    def add(self, seq: int, name: str, dtype: str, shape, part: int, data) -> None:
        seq = int(seq)
        if not 0 <= seq < self.seen.size:
            raise ValueError(f"{self.where}: chunk {seq} is not one of the "
                             f"{self.seen.size} chunks the metadata lists")
        i = int(np.searchsorted(self._starts, seq, side="right")) - 1
        exp_name, exp_dtype, exp_shape, nbytes, first, _ = self.arrays[i]
        exp_part = seq - first
        if (name, int(part), dtype, tuple(shape)) != (exp_name, exp_part, exp_dtype, exp_shape):
            raise ValueError(f"{self.where}: chunk {seq} holds {name!r} part {part} "
                             f"({dtype}, {tuple(shape)}), the metadata says {exp_name!r} part "
                             f"{exp_part} ({exp_dtype}, {exp_shape})")
        if self.seen[seq]:
            raise ValueError(f"{self.where}: chunk {seq} ({name!r} part {part}) appears twice")
        raw = np.frombuffer(data, np.uint8)
        if nbytes >= 0:
            start = exp_part * self.chunk_bytes
            size = min(self.chunk_bytes, nbytes - start)
            if raw.size != size:
                raise ValueError(f"{self.where}: chunk {seq} ({name!r} part {part}) has "
                                 f"{raw.size} bytes, expected {size}")
        if self.checksums is not None and zlib.crc32(raw) != self.checksums[seq]:
            raise ValueError(f"{self.where}: chunk {seq} ({name!r} part {part}) does not match "
                             f"its checksum: the data was changed or damaged after the save")
        if nbytes < 0:  # unicode: one part of any length
            self.buffers[name] = raw.copy()
        else:
            if name not in self.buffers:
                self.buffers[name] = np.empty(nbytes, np.uint8)
            self.buffers[name][start:start + size] = raw
        self.seen[seq] = True

    def add_batch(self, batch) -> None:
        """Add every row of an Arrow batch/table with columns seq, name, dtype, shape, part,
        data (other columns are ignored)."""
        if isinstance(batch, pa.Table):
            for b in batch.to_batches():
                self.add_batch(b)
            return
        cols = {c: batch.column(c).to_pylist() for c in ("seq", "name", "dtype", "shape",
                                                           "part")}
        data = batch.column("data")
        for i in range(len(cols["seq"])):
            self.add(cols["seq"][i], cols["name"][i], cols["dtype"][i], cols["shape"][i],
                     cols["part"][i], _binary_value(data, i))

    def result(self) -> dict:
        missing = np.flatnonzero(~self.seen)
        if missing.size:
            i = int(np.searchsorted(self._starts, missing[0], side="right")) - 1
            raise ValueError(f"{self.where} is incomplete: {missing.size} of {self.seen.size} "
                             f"chunks are missing (the first: {self.arrays[i][0]!r} part "
                             f"{int(missing[0]) - self.arrays[i][4]})")
        out = {}
        for name, dtype, shape, nbytes, _, _ in self.arrays:
            buf = self.buffers.get(name, np.empty(0, np.uint8))
            out[name] = (array_from_bytes(dtype, shape, buf) if dtype == UNICODE
                         else buf.view(np.dtype(dtype)).reshape(shape))
        return out


def _binary_value(arr: pa.Array, i: int):
    """Row ``i`` of an Arrow binary array as a zero-copy buffer."""
    offsets = np.frombuffer(arr.buffers()[1], np.int32 if arr.type == pa.binary()
                            else np.int64)[arr.offset:arr.offset + len(arr) + 1]
    buf = arr.buffers()[2]
    start, end = int(offsets[i]), int(offsets[i + 1])
    return memoryview(buf)[start:end] if buf is not None else b""


def manifest_of(arrays: dict) -> list:
    """``[[name, dtype, shape], ...]`` in dict order (dtype as ``iter_chunks`` writes it)."""
    out = []
    for name, a in arrays.items():
        a = np.asarray(a)
        dtype = UNICODE if a.dtype.kind == "U" and a.ndim == 0 else a.dtype.str
        out.append([name, dtype, [int(s) for s in a.shape]])
    return out
