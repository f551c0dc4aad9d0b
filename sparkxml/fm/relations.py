"""Relation blocks of FMRegressor / FMClassifier on the driver: the blocks as CSR arrays, and
the checks of the index columns.

A relation block (``relationBlocks[r]``) holds features once per block row (a user, an item);
a training row takes block row ``relationCols[r]`` of it. The blocks travel to the barrier
tasks in the training function's payload, as the other params do (DataFrame APIs only: a
DataFrame block is collected to the driver once), and the kernels
(``sparkxml_kernels.fm.relation``) use the block structure in the MCMC sweep. The fitted model
is an ordinary FM over the concatenated features [featuresCol, block 0, block 1, ...].
"""
from __future__ import annotations

import numpy as np
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.validation import check_column

__all__ = ["RelationSpec", "relation_spec"]

_INTEGER = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


class RelationSpec:
    """The checked relation blocks of one fit: index columns, block CSR arrays (dicts with
    indptr, indices, data, d, name), and the total block width."""

    def __init__(self, cols, blocks):
        self.cols = list(cols)
        self.blocks = blocks
        self.width = sum(b["d"] for b in blocks)


def _frame_block(df, where: str):
    """A DataFrame block: rows (index, features) -> CSR with n_rows = max index + 1 (block rows
    no row lists are all-zero)."""
    import scipy.sparse as sp
    from pyspark.ml.linalg import VectorUDT

    check_column(df, "index", where, _INTEGER, "an integer column 'index'")
    check_column(df, "features", where, (VectorUDT,), "a vector column 'features'")
    rows = df.select("index", "features").collect()
    if not rows:
        raise ValueError(f"{where} is an empty DataFrame")
    idx = np.array([-1 if r["index"] is None else r["index"] for r in rows], np.int64)
    if (idx < 0).any():
        raise ValueError(f"{where}: column 'index' holds the value "
                         f"{rows[int(np.flatnonzero(idx < 0)[0])]['index']!r}; block row "
                         f"indices must be non-null and >= 0")
    uniq, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{where}: column 'index' repeats the value "
                         f"{int(uniq[counts > 1][0])}")
    sizes = {r["features"].size for r in rows if r["features"] is not None}
    if len(sizes) != 1 or any(r["features"] is None for r in rows):
        raise ValueError(f"{where}: column 'features' must hold non-null vectors of one size, "
                         f"got sizes {sorted(sizes)}")
    d = sizes.pop()
    ri, ci, vals = [], [], []
    for b, r in zip(idx, rows):
        v = r["features"]
        if hasattr(v, "indices"):
            ci.append(np.asarray(v.indices, np.int64))
            vals.append(np.asarray(v.values, np.float64))
        else:
            a = v.toArray()
            nz = np.flatnonzero(a)
            ci.append(nz)
            vals.append(a[nz])
        ri.append(np.full(ci[-1].size, b, np.int64))
    X = sp.csr_matrix((np.concatenate(vals), (np.concatenate(ri), np.concatenate(ci))),
                      shape=(int(idx.max()) + 1, d))
    return X


def _block_arrays(block, where: str, name: str) -> dict:
    import scipy.sparse as sp

    if hasattr(block, "columns") and hasattr(block, "select"):
        X = _frame_block(block, where)
    else:
        X = sp.csr_matrix(block, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{where} has shape {X.shape}; a block needs at least one row and "
                         f"one feature")
    if X.data.size and not np.isfinite(X.data).all():
        raise ValueError(f"{where} holds the value {X.data[~np.isfinite(X.data)][0]!r}; "
                         f"features must be finite")
    return {"indptr": X.indptr.astype(np.int64), "indices": X.indices.astype(np.int32),
            "data": X.data.astype(np.float64), "d": int(X.shape[1]), "name": name}


def relation_spec(dataset, cols, blocks, solver: str) -> RelationSpec | None:
    """The checked relation blocks, or None without relationCols. Checks, naming the
    param/column/value at fault: the pairing of relationCols and relationBlocks, the solver,
    the index columns' types, the blocks, and (one Spark job) that every index is non-null and
    within its block."""
    if not cols and not blocks:
        return None
    cols, blocks = list(cols or []), list(blocks or [])
    if len(cols) != len(blocks):
        raise ValueError(f"relationCols has {len(cols)} column(s) and relationBlocks "
                         f"{len(blocks)} block(s); give one block per column")
    if solver != "mcmc":
        raise ValueError(f"relationCols needs solver 'mcmc' (the sampler that uses the block "
                         f"structure), got {solver!r}")
    for c in cols:
        check_column(dataset, c, "relationCols", _INTEGER, "an integer column")
    arrays = [_block_arrays(b, f"relationBlocks[{r}]", cols[r]) for r, b in enumerate(blocks)]
    aggs = []
    for c in cols:
        aggs += [F.min(c), F.max(c), F.count(F.when(F.col(c).isNull(), 1))]
    row = dataset.select(*cols).agg(*aggs).first()
    for r, (c, blk) in enumerate(zip(cols, arrays)):
        lo, hi, nulls = row[3 * r], row[3 * r + 1], row[3 * r + 2]
        n_b = blk["indptr"].size - 1
        if nulls:
            raise ValueError(f"relationCols: column '{c}' has {nulls} null value(s)")
        for v in (lo, hi):
            if v is not None and not 0 <= v < n_b:
                raise ValueError(f"relationCols: column '{c}' holds the index {v}; "
                                 f"relationBlocks[{r}] has {n_b} rows (indices 0..{n_b - 1})")
    return RelationSpec(cols, arrays)
