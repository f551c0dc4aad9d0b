"""sparkxml._core.compat: the PySpark 3.5 paths (closure-carried DataFrame creation, Arrow IPC
collection) are checked on whatever pyspark runs the suite, against the native path."""
import numpy as np
import pyarrow as pa
import pytest
from pyspark.ml.linalg import DenseVector, SparseVector, VectorUDT
from pyspark.sql import types as T

from sparkxml._core import compat as _compat
from sparkxml.datasets import vector_array

SCHEMA = T.StructType([T.StructField("features", VectorUDT(), False),
                       T.StructField("label", T.DoubleType(), False),
                       T.StructField("ids", T.ArrayType(T.IntegerType(), False), False)])


def _table(n=5):
    indptr = np.arange(0, 2 * n + 1, 2)
    indices = np.tile([0, 3], n)
    data = np.arange(2 * n, dtype=np.float64)
    ids = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)),
                                   pa.array(np.arange(n, dtype=np.int32)))
    return pa.Table.from_arrays([vector_array(indptr, indices, data, 4),
                                 pa.array(np.arange(n, dtype=np.float64) / 2), ids],
                                names=["features", "label", "ids"])


def _rows(df):
    return [(r.features, r.label, list(r.ids)) for r in df.collect()]


def test_closure_path_equals_native_create(spark, monkeypatch):
    table = _table(7)
    native = _compat.create_dataframe(spark, table, SCHEMA)
    monkeypatch.setattr(_compat, "_SLICE_BYTES", table.nbytes // 3 + 1)   # 3 slices, 3 tasks
    carried = _compat._create_from_closure(spark, table, SCHEMA)
    assert carried.schema == native.schema
    got = _rows(carried)
    assert got == _rows(native)
    assert got[1][0] == SparseVector(4, [0, 3], [2.0, 3.0]) and got[6][1:] == (3.0, [6])
    empty = _compat._create_from_closure(spark, table.slice(0, 0), SCHEMA)
    assert empty.count() == 0 and empty.schema == native.schema


def test_to_arrow_paths_agree_and_keep_order(spark):
    df = _compat.create_dataframe(spark, _table(9), SCHEMA, num_partitions=None)
    a = _compat.to_arrow(df)
    b = _compat._to_arrow_via_ipc(df)
    assert a.num_rows == 9 and a.equals(b)
    assert a.column("label").to_pylist() == [i / 2 for i in range(9)]
    # vectors arrive in Spark ML's struct layout on every version
    assert [f.name for f in a.schema.field("features").type] == ["type", "size", "indices",
                                                                 "values"]
    none = df.filter("label < 0")
    for got in (_compat.to_arrow(none), _compat._to_arrow_via_ipc(none)):
        assert got.num_rows == 0 and got.column_names == ["features", "label", "ids"]


def test_create_from_numpy_columns_and_errors(spark):
    df = _compat.create_dataframe(spark, {"x": np.array([1.5, 2.5]), "k": np.array([3, 4])})
    assert dict(df.dtypes) == {"x": "double", "k": "bigint"}
    assert [tuple(r) for r in df.collect()] == [(1.5, 3), (2.5, 4)]
    dense = _compat.create_dataframe(
        spark, pa.table({"v": pa.StructArray.from_arrays(
            [pa.array([1], pa.int8()), pa.nulls(1, pa.int32()), pa.nulls(1, pa.list_(pa.int32())),
             pa.array([[1.0, 2.0]], pa.list_(pa.float64()))], ["type", "size", "indices",
                                                               "values"])}),
        T.StructType([T.StructField("v", VectorUDT())]))
    assert dense.first().v == DenseVector([1.0, 2.0])
    with pytest.raises(ValueError, match="1-D"):
        _compat.create_dataframe(spark, {"x": np.zeros((2, 2))})
    with pytest.raises(ValueError, match="do not match"):
        _compat.create_dataframe(spark, _table(2), T.StructType(SCHEMA.fields[:2]))
    with pytest.raises(TypeError, match="pyarrow Table"):
        _compat.create_dataframe(spark, [1, 2, 3])
    assert not _compat.is_connect(spark) and _compat.PYSPARK_VERSION >= (3, 5)
