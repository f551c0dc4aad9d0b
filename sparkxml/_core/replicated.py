"""Replicated training jobs: every task gets every row.

The rows of a DataFrame are copied to ``workers`` tasks with DataFrame operations only (each
row exploded into one copy per group key, ``repartition`` by the key, ``mapInArrow``): no
broadcast and no RDD, so it runs over Spark Connect too. FastXML, the label trees and the
replayed scikit-learn forest train this way.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from pyspark.sql import functions as F

from sparkxml._core.barrier import RESULT_SCHEMA, collect_ranks, decode_ranks
from sparkxml._core.compat import to_arrow
from sparkxml._core.partitioning import partition_keys
from sparkxml_kernels.csr_rows import rows_in_order


def replicated_job(data, workers: int, make_train, spread: bool = True):
    """Run replicated training: the rows of ``data`` copied to ``workers`` tasks (one copy
    of each row per group key, ``explode`` of the keys: unlike a cross join with a frame of
    them, no broadcast job; then ``repartition`` by the key) and ``make_train(keys)``
    applied to each with ``mapInArrow`` (``RESULT_SCHEMA`` rows), collected through
    ``collect_ranks`` when ``spread``. Returns ({rank: arrays}, {rank: info}) as
    ``decode_ranks`` does."""
    keys = partition_keys(workers)
    group = F.explode(F.array(*[F.lit(int(k)).cast("long") for k in keys]))
    out = (data.withColumn("_g", group).repartition(workers, "_g")
           .mapInArrow(make_train(keys), RESULT_SCHEMA))
    return collect_ranks(out) if spread else decode_ranks(to_arrow(out))


def group_tables(batches):
    """(group key, its rows as one Arrow table ordered by (_k1, _k2)) for each ``_g`` group
    of a replicated training task's batches: the order must not depend on how the shuffle
    delivered the rows. While the caller holds a group, only that group's ordered table is
    alive (no batch, no unordered copy), so a caller that converts it and drops it can hand
    its Arrow memory back (``sparkxml_kernels.memory.release_freed``)."""
    by_group = _by_group(batches)
    for key in list(by_group):
        yield key, _ordered(by_group.pop(key))


def _by_group(batches) -> dict:
    by_group: dict = {}
    for key, sel in _group_slices(batches):
        by_group.setdefault(key, []).append(sel)
    return by_group


def _group_slices(batches):
    """(group key, the batch's rows of that ``_g`` group) for each non-empty batch."""
    for b in batches:
        if b.num_rows == 0:
            continue
        g = b.column("_g").to_numpy()
        keys = np.unique(g)
        for key in keys:
            yield int(key), (b if len(keys) == 1 else b.filter(pa.array(g == key)))


def _ordered(parts) -> pa.Table:
    # taken from the batches as they are: no combined copy of the whole group first (the
    # peak was the batches, their combined copy and the ordered one), and the caller's list
    # lets go of the batches, so each column's source is freed once it is taken
    table = pa.Table.from_batches(parts)
    parts.clear()
    schema = table.schema
    order = pa.array(np.lexsort((table.column("_k2").to_numpy(),
                                 table.column("_k1").to_numpy())))
    columns = []
    for name in schema.names:
        columns.append(table.column(name).take(order).combine_chunks())
        table = table.drop_columns([name])
    return pa.Table.from_arrays(columns, schema=schema)



def converted_groups(batches, convert):
    """(group key, its ``_k1`` (n,) int64, its converted matrices) for each ``_g`` group of a
    task's batches, the rows ordered by (_k1, _k2) as :func:`group_tables` orders them.

    ``convert(batch)`` returns a tuple of CSR matrices with one row a batch row (and no view
    of the batch's memory). Each batch is converted as it arrives and then dropped, and the
    converted pieces are written to their places in the order
    (``sparkxml_kernels.csr_rows.rows_in_order``), so the task's peak is about its converted
    rows once, not the Arrow input, its ordered copy and the conversion together.
    """
    pieces: dict = {}
    for key, sel in _group_slices(batches):
        mats = convert(sel)
        # copies: a view of an IPC batch's column keeps the whole batch alive
        pieces.setdefault(key, []).append(
            (np.array(sel.column("_k1").to_numpy(), np.int64),
             np.array(sel.column("_k2").to_numpy(), np.int64),
             [(m.indptr, m.indices, m.data) for m in mats], [m.shape[1] for m in mats]))
        del sel, mats
    for key in list(pieces):
        parts = pieces.pop(key)
        k1 = np.concatenate([p[0] for p in parts])
        order = np.lexsort((np.concatenate([p[1] for p in parts]), k1))
        widths = parts[0][3]
        columns = [[p[2][m] for p in parts] for m in range(len(widths))]
        parts.clear()
        out = []
        for width, column in zip(widths, columns):
            indptr, indices, data = rows_in_order(column, order)
            out.append(sp.csr_matrix((data, indices, indptr), shape=(len(order), width)))
        yield key, k1[order], tuple(out)
