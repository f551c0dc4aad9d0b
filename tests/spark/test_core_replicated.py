"""Replicated training input (sparkxml._core.replicated.group_tables): each group's rows in
(_k1, _k2) order whatever the batches' order, nested columns included, one chunk a column."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkxml._core.replicated import group_tables


def _batches(seed):
    rng = np.random.default_rng(seed)
    out = []
    for b in range(6):
        n = 40
        idx = [rng.integers(0, 1000, rng.integers(0, 6)).astype(np.int32) for _ in range(n)]
        val = [rng.random(len(i)) for i in idx]
        feats = pa.StructArray.from_arrays(
            [pa.array(idx, pa.list_(pa.int32())), pa.array(val, pa.list_(pa.float64()))],
            ["indices", "values"])
        out.append(pa.RecordBatch.from_arrays(
            [pa.array(rng.integers(0, 2, n)), pa.array(rng.integers(0, 5, n)),
             pa.array(np.arange(b * n, (b + 1) * n)), feats,
             pa.array([[int(k)] for k in rng.integers(0, 9, n)], pa.list_(pa.int32()))],
            ["_g", "_k1", "_k2", "features", "labels"]))
    return out


def test_groups_come_ordered_whatever_the_batch_order():
    batches = _batches(0)
    everything = pa.Table.from_batches(batches).combine_chunks()
    got = dict(group_tables(iter(batches[::-1])))  # the shuffle may deliver any order
    assert sorted(got) == [0, 1]
    for key, table in got.items():
        part = everything.filter(pc.equal(everything.column("_g"), key))
        order = np.lexsort((part.column("_k2").to_numpy(), part.column("_k1").to_numpy()))
        assert table.equals(part.take(pa.array(order)))
        assert all(c.num_chunks == 1 for c in table.columns)
        k1 = table.column("_k1").to_numpy()
        assert (np.diff(k1) >= 0).all() and table.num_rows == part.num_rows > 0
