"""Replicated training input (sparkxml._core.replicated): each group's rows in (_k1, _k2)
order whatever the batches' order, as Arrow tables (nested columns included, one chunk a
column) or converted batch by batch into CSR matrices."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from sparkxml._core.replicated import converted_groups, group_tables
from sparkxml_kernels import arrow_io


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


def _csr(batch):
    feats = batch.column("features")
    xi, xj = arrow_io.lists_to_csr(feats.field("indices"))
    xv = np.array(feats.field("values").flatten().to_numpy(zero_copy_only=False))
    yi, yj = arrow_io.lists_to_csr(batch.column("labels"))
    n = len(xi) - 1
    return (sp.csr_matrix((xv, xj.copy(), xi), shape=(n, 1000)),
            sp.csr_matrix((np.ones(len(yj), bool), yj.copy(), yi), shape=(n, 9)))


def test_converted_groups_equal_the_ordered_tables_converted():
    batches = _batches(1)
    want = {key: (table.column("_k1").to_numpy(), _csr(table.to_batches()[0]))
            for key, table in group_tables(iter(batches))}
    for order in (batches, batches[::-1], batches[2:] + batches[:2]):
        got = {key: (k1, mats) for key, k1, mats in converted_groups(iter(order), _csr)}
        assert sorted(got) == sorted(want) == [0, 1]
        for key, (k1, mats) in got.items():
            assert k1.dtype == np.int64 and np.array_equal(k1, want[key][0])
            for a, b in zip(mats, want[key][1]):
                assert a.shape == b.shape and a.dtype == b.dtype
                for part in ("indptr", "indices", "data"):
                    assert np.array_equal(getattr(a, part), getattr(b, part)), part
                    assert getattr(a, part).dtype == getattr(b, part).dtype, part


def test_converted_groups_single_batch_and_empty_input():
    batch = _batches(2)[0]
    one = batch.filter(pc.equal(batch.column("_g"), 0))
    (key, k1, (X, Y)), = converted_groups(iter([one]), _csr)
    order = np.lexsort((one.column("_k2").to_numpy(), one.column("_k1").to_numpy()))
    assert key == 0 and np.array_equal(k1, one.column("_k1").to_numpy()[order])
    assert (X != _csr(one)[0][order]).nnz == 0
    empty = batch.slice(0, 0)
    assert list(converted_groups(iter([empty]), _csr)) == []
