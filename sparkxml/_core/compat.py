"""The one place where sparkxml bridges PySpark versions (3.5.x and 4.x, classic and Connect).

Everything in sparkxml that moves data between the driver and Spark as Arrow goes through
these functions; estimators never call a version-specific API themselves. What differs:

=========================  ==================================  ================================
operation                  PySpark >= 4.0 (classic, Connect)   PySpark 3.5
=========================  ==================================  ================================
DataFrame -> ``pa.Table``  ``df.toArrow()``                    classic: ``_collect_as_arrow()``;
                                                               Connect: the client's
                                                               ``to_table`` (both private but
                                                               stable in 3.5); otherwise a
                                                               ``mapInArrow`` that ships Arrow
                                                               IPC bytes, then ``collect``
``pa.Table`` -> DataFrame  ``spark.createDataFrame(table)``    ``spark.range(k).mapInArrow``
                                                               whose tasks emit the table from
                                                               their closure (3.5 rejects a
                                                               table: cannot infer its schema)
=========================  ==================================  ================================

Public functions (the estimators, readers and evaluators use only these):

``to_arrow(df) -> pa.Table``
    Collect a DataFrame to the driver as one Arrow table, in the DataFrame's row order.
    Vector (``VectorUDT``) columns arrive as their struct layout
    ``struct<type int8, size int32, indices list<int32>, values list<float64>>`` on every
    version. Replaces ``df.toArrow()``.
``create_dataframe(spark, data, schema=None, num_partitions=None) -> DataFrame``
    A DataFrame from an Arrow table (or record batch) or from a mapping ``name -> 1-D numpy
    array``, without a Python object per row. ``schema`` (a ``StructType``) declares the
    Spark types, e.g. ``VectorUDT`` for a struct column laid out as above (Spark SQL cannot
    cast a struct to a UDT; the declaration is a no-op ``mapInArrow``). Replaces
    ``spark.createDataFrame(table)``.
``is_connect(obj) -> bool``
    Whether a SparkSession or DataFrame is a Spark Connect one.
``PYSPARK_VERSION``
    ``(major, minor)`` of the installed pyspark.

On 3.5, ``create_dataframe`` carries the data in the task closure: classic PySpark
broadcasts a closure over 1 MiB, a Connect 3.5 server accepts plans up to
``spark.connect.grpc.maxInboundMessageSize`` (128 MiB by default). The readers that use it
hold the whole file in driver memory anyway.
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Union

import numpy as np
import pyarrow as pa

__all__ = ["PYSPARK_VERSION", "to_arrow", "create_dataframe", "is_connect"]


def _pyspark_version() -> tuple:
    import pyspark

    parts = pyspark.__version__.split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


PYSPARK_VERSION = _pyspark_version()

# One emitted slice at most this big on 3.5 (every task unpickles the whole closure, so
# slices only bound the Arrow decoding each task does).
_SLICE_BYTES = 16 << 20


def is_connect(obj) -> bool:
    """True when ``obj`` (a SparkSession or DataFrame) belongs to Spark Connect."""
    return type(obj).__module__.startswith("pyspark.sql.connect")


def to_arrow(df) -> pa.Table:
    """Collect ``df`` to the driver as a ``pyarrow.Table`` (the DataFrame's row order).

    Parameters
    ----------
    df : pyspark.sql.DataFrame (classic or Spark Connect, PySpark 3.5 or 4.x)

    Returns
    -------
    pa.Table with one column per DataFrame column; ``VectorUDT`` columns as Arrow structs.
    """
    if hasattr(df, "toArrow"):
        return df.toArrow()
    if is_connect(df):
        client = getattr(df._session, "client", None)
        if client is not None and hasattr(client, "to_table"):
            table, _ = client.to_table(df._plan.to_proto(client))
            return table
    elif hasattr(df, "_collect_as_arrow"):
        batches = df._collect_as_arrow()
        if batches:
            return pa.Table.from_batches(batches)
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(df.schema).empty_table()
    return _to_arrow_via_ipc(df)


def _to_arrow_via_ipc(df) -> pa.Table:
    # Version-agnostic fallback: every task writes its batches as one Arrow IPC stream into a
    # binary row; the driver collects the rows and reads the streams back in partition order.
    from pyspark.sql import functions as F

    def encode(batches):
        from pyspark import TaskContext

        sink = pa.BufferOutputStream()
        writer = None
        for b in batches:
            if writer is None:
                writer = pa.ipc.new_stream(sink, b.schema)
            writer.write_batch(b)
        if writer is None:
            return
        writer.close()
        part = TaskContext.get().partitionId()
        yield pa.RecordBatch.from_arrays(
            [pa.array([part], pa.int32()), pa.array([sink.getvalue().to_pybytes()], pa.binary())],
            names=["part", "ipc"])

    rows = (df.mapInArrow(encode, "part int, ipc binary").orderBy(F.col("part")).collect())
    tables = [pa.ipc.open_stream(r["ipc"]).read_all() for r in rows]
    if tables:
        return pa.concat_tables(tables)
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema).empty_table()


def _as_table(data) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, Mapping):
        arrays, names = [], []
        for name, values in data.items():
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                arrays.append(values)
            else:
                values = np.asarray(values)
                if values.ndim != 1:
                    raise ValueError(f"create_dataframe: column '{name}' must be 1-D, got shape "
                                     f"{values.shape}")
                arrays.append(pa.array(values))
            names.append(str(name))
        return pa.Table.from_arrays(arrays, names=names)
    raise TypeError("create_dataframe: data must be a pyarrow Table/RecordBatch or a mapping "
                    f"name -> 1-D numpy array, got {type(data).__name__}")


def _declare(batches):
    # The batches already have the layout the declared schema wants (e.g. VectorUDT's struct).
    yield from batches


def create_dataframe(spark, data: Union[pa.Table, pa.RecordBatch, Mapping[str, np.ndarray]],
                     schema=None, num_partitions: Optional[int] = None):
    """Make a DataFrame from Arrow data without a Python object per row.

    Parameters
    ----------
    spark : SparkSession (classic or Spark Connect, PySpark 3.5 or 4.x)
    data : pa.Table, pa.RecordBatch, or mapping name -> 1-D numpy array / Arrow array
    schema : pyspark.sql.types.StructType, optional
        Spark types to declare, field for field (same names, same order as ``data``), e.g.
        ``VectorUDT()`` for a struct column in Spark ML's vector layout. Default: the types
        Spark infers from the Arrow schema.
    num_partitions : int, optional
        Repartition (round robin) to this many partitions. Default: as created (rows keep
        their order).

    Returns
    -------
    pyspark.sql.DataFrame
    """
    table = _as_table(data)
    if schema is not None and list(schema.fieldNames()) != table.column_names:
        raise ValueError(f"create_dataframe: schema fields {schema.fieldNames()} do not match "
                         f"the data's columns {table.column_names}")
    if PYSPARK_VERSION >= (4, 0):
        df = spark.createDataFrame(table)
        if schema is not None:
            df = df.mapInArrow(_declare, schema)
    else:
        df = _create_from_closure(spark, table, schema)
    if num_partitions is not None:
        df = df.repartition(int(num_partitions))
    return df


def _create_from_closure(spark, table: pa.Table, schema):
    # PySpark 3.5: spark.range(k) has one id per partition; task i emits slice i of the table
    # it carries (as Arrow IPC bytes) in its closure.
    if schema is None:
        from pyspark.sql.pandas.types import from_arrow_schema

        schema = from_arrow_schema(table.schema)
    n = table.num_rows
    k = max(1, min(n, math.ceil(table.nbytes / _SLICE_BYTES)))
    step = math.ceil(n / k) if n else 0
    slices = []
    for i in range(k):
        part = table.slice(i * step, step) if n else table
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(part)
        slices.append(sink.getvalue().to_pybytes())

    def emit(batches):
        for b in batches:
            for i in b.column(0).to_pylist():
                yield from pa.ipc.open_stream(slices[i]).read_all().to_batches()

    return spark.range(0, k, 1, k).mapInArrow(emit, schema)
