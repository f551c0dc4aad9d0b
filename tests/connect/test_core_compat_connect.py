"""sparkxml._core.compat over Spark Connect: the native path and the version-agnostic fallbacks
(closure-carried creation, Arrow IPC collection) give the same data."""
import numpy as np
import pyarrow as pa
from pyspark.ml.linalg import SparseVector, VectorUDT
from pyspark.sql import types as T

from sparkxml._core import compat as _compat
from sparkxml.datasets import vector_array


def test_compat_paths_over_connect(spark_connect):
    table = pa.Table.from_arrays([vector_array(np.array([0, 1, 3]), np.array([2, 0, 1]),
                                                np.array([1.0, 2.0, 3.0]), 3),
                                  pa.array([0.5, 1.5])], names=["features", "label"])
    schema = T.StructType([T.StructField("features", VectorUDT(), False),
                           T.StructField("label", T.DoubleType(), False)])
    assert _compat.is_connect(spark_connect)
    native = _compat.create_dataframe(spark_connect, table, schema)
    carried = _compat._create_from_closure(spark_connect, table, schema)
    want = [(SparseVector(3, [2], [1.0]), 0.5), (SparseVector(3, [0, 1], [2.0, 3.0]), 1.5)]
    assert [tuple(r) for r in native.collect()] == want
    assert [tuple(r) for r in carried.collect()] == want
    a, b = _compat.to_arrow(native), _compat._to_arrow_via_ipc(carried)
    assert a.equals(b) and a.column("label").to_pylist() == [0.5, 1.5]
