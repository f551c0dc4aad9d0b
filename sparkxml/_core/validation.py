"""Column checks every estimator runs before any Spark job: the column exists and has the
expected type; the message names the param and the column."""
from __future__ import annotations

from pyspark.ml.linalg import VectorUDT
from pyspark.sql import types as T


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


def check_output_columns(columns, names) -> None:
    """Refuse a transform whose output column is already in the frame (``columns``: the
    frame's column names; ``names``: the output columns, as names or ``(name, type)``)."""
    present = set(columns)
    for item in names:
        name = item[0] if isinstance(item, tuple) else item
        if name in present:
            raise ValueError(f"output column '{name}' already exists in the DataFrame")
