"""Arrow <-> numpy conversions for the columns Spark hands to ``mapInArrow`` tasks.

Spark ML's ``VectorUDT`` reaches Arrow as its SQL type, a struct
``{type: int8, size: int32, indices: list<int32>, values: list<float64>}`` where ``type`` is 0
for sparse and 1 for dense rows. These helpers turn such a column into CSR arrays without a
Python loop over rows, and list columns into (indptr, ids).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._dtypes import INDEX, INDPTR


def _flat_list(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Return (lengths int64 (n,), flat values) of a list array, honouring slices and nulls."""
    lengths = arr.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = arr.flatten().to_numpy(zero_copy_only=False)
    return lengths, flat


def _sizes(column, vlen):
    sparse = column.field("type").to_numpy(zero_copy_only=False) == 0
    sizes = np.where(sparse, column.field("size").fill_null(-1).to_numpy(zero_copy_only=False),
                     vlen).astype(np.int64)
    return sparse, sizes


def _dense_nonzeros(values, sparse_mask, vlen, indptr):
    """Dense rows keep their zeros in Arrow; CSR holds only their non-zeros. Returns (the
    mask of the entries kept, or None when all are, and the kept entries per row)."""
    keep = ~((~sparse_mask) & (values == 0))
    if keep.all():
        return None, vlen
    counts = np.add.reduceat(keep.astype(np.int64), indptr[:-1]) if len(values) else vlen * 0
    counts[vlen == 0] = 0
    return keep, counts


def stored_counts(column) -> np.ndarray:
    """int64 (n,): the entries ``vectors_to_csr`` keeps of each row of a VectorUDT column (a
    sparse row's stored entries, a dense row's non-zeros), without building the CSR. Null
    vectors count 0 (``vectors_to_csr`` refuses them)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    vlen, values = _flat_list(column.field("values"))
    sparse = column.field("type").fill_null(0).to_numpy(zero_copy_only=False) == 0
    if sparse.all():
        return vlen
    indptr = np.zeros(len(vlen) + 1, dtype=INDPTR)
    np.cumsum(vlen, out=indptr[1:])
    return _dense_nonzeros(values, np.repeat(sparse, vlen), vlen, indptr)[1]


def vector_stats(column, column_name: str = "features"):
    """(rows, stored entries, smallest size, largest size) of a VectorUDT column, without
    raising on mixed sizes: callers report those on the driver with the full picture."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_struct(column.type) or column.type.get_field_index("values") < 0:
        raise TypeError(f"column '{column_name}' must be a Spark ML vector (VectorUDT), "
                        f"got Arrow type {column.type}")
    vlen = column.field("values").value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    _, sizes = _sizes(column, vlen)
    if len(sizes) == 0:
        return 0, 0, -1, -1
    return len(sizes), int(vlen.sum()), int(sizes.min()), int(sizes.max())


def vectors_to_csr(column, column_name: str = "features", num_features: int | None = None,
                   value_dtype=np.float32):
    """Convert an Arrow VectorUDT column to CSR.

    Parameters
    ----------
    column : pyarrow.Array or ChunkedArray of struct<type, size, indices, values>
    column_name : str
        Used in error messages.
    num_features : int, optional
        Expected dimension; a vector of another size raises ``ValueError``.
    value_dtype : numpy dtype
        dtype of the returned ``data``.

    Returns
    -------
    indptr : int64 (n + 1,)
    indices : int32 (nnz,)
    data : value_dtype (nnz,)
    num_features : int
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_struct(column.type) or column.type.get_field_index("values") < 0:
        raise TypeError(f"column '{column_name}' must be a Spark ML vector (VectorUDT), "
                        f"got Arrow type {column.type}")
    n = len(column)
    if column.null_count:
        row = int(np.flatnonzero(~column.is_valid().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"column '{column_name}' has a null vector (row {row} of this partition)")
    vlen, values = _flat_list(column.field("values"))
    sparse, sizes = _sizes(column, vlen)
    if n:
        dims = np.unique(sizes)
        if num_features is None and len(dims) > 1:
            raise ValueError(f"column '{column_name}' holds vectors of different sizes: "
                             f"{dims[:5].tolist()}")
        if num_features is not None and (dims != num_features).any():
            bad = int(dims[dims != num_features][0])
            raise ValueError(f"column '{column_name}' has a vector of size {bad}, expected "
                             f"{num_features}")
        num_features = int(dims[0]) if num_features is None else num_features
    elif num_features is None:
        num_features = 0
    indptr = np.zeros(n + 1, dtype=INDPTR)
    np.cumsum(vlen, out=indptr[1:])
    if sparse.all():
        _, indices = _flat_list(column.field("indices"))
        indices = indices.astype(INDEX, copy=False)
    else:
        total = int(indptr[-1])
        indices = np.arange(total, dtype=np.int64) - np.repeat(indptr[:-1], vlen)
        mask = np.repeat(sparse, vlen)
        if mask.any():
            ilen, iflat = _flat_list(column.field("indices"))
            indices[mask] = iflat[np.repeat(sparse, ilen)]
        indices = indices.astype(INDEX)
        keep, counts = _dense_nonzeros(values, mask, vlen, indptr)
        if keep is not None:
            indptr[1:] = np.cumsum(counts)
            indices, values = indices[keep], values[keep]
    return indptr, indices, np.ascontiguousarray(values, dtype=value_dtype), int(num_features)


def lists_to_csr(column, column_name: str = "labels", dtype=np.int32):
    """Convert an Arrow list<int> column to (indptr int64 (n+1,), ids dtype (nnz,)).

    A null list counts as an empty one.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        raise TypeError(f"column '{column_name}' must be array<int>, got Arrow type {column.type}")
    if not pa.types.is_integer(column.type.value_type):
        raise TypeError(f"column '{column_name}' must be array<int>, got array of "
                        f"{column.type.value_type}")
    lengths, flat = _flat_list(column)
    if column.flatten().null_count:
        raise ValueError(f"column '{column_name}' contains a null label id")
    indptr = np.zeros(len(column) + 1, dtype=INDPTR)
    np.cumsum(lengths, out=indptr[1:])
    return indptr, np.ascontiguousarray(flat, dtype=dtype)


def topk_to_arrow(labels: np.ndarray, scores: np.ndarray, counts: np.ndarray | None = None):
    """Build (list<int32>, list<float32>) Arrow arrays from (n, k) top-k matrices.

    ``counts`` (n,) trims each row to its first ``counts[i]`` entries (rows with fewer than k
    labels with a positive score).
    """
    n, k = labels.shape
    if counts is None:
        counts = np.full(n, k, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    mask = np.arange(k)[None, :] < counts[:, None]
    lab = pa.ListArray.from_arrays(pa.array(offsets), pa.array(labels[mask].astype(np.int32)))
    sco = pa.ListArray.from_arrays(pa.array(offsets), pa.array(scores[mask].astype(np.float32)))
    return lab, sco
