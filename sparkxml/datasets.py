"""Load extreme classification and learning-to-rank text files as Spark DataFrames.

The file is parsed on the driver by ``sparkxml_kernels.formats`` (vectorised numpy/Arrow),
then turned into a DataFrame without a Python object per row: the CSR arrays become an Arrow
table whose ``features`` column has the struct layout of Spark ML's ``VectorUDT``
(``type int8, size int32, indices list<int32>, values list<float64>``), the table is handed
to ``_compat.create_dataframe``, which declares the column a ``VectorUDT`` (Spark SQL cannot
cast a struct to a UDT; building ``SparseVector`` objects in pandas is about 3x slower). Only
DataFrame APIs are used, so this works over Spark Connect.

Rows keep the file's order (no shuffle unless ``numPartitions`` is given). The readers need
the whole file in driver memory, and fewer than 2**31 non-zeros.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sparkxml._core.compat import create_dataframe, to_arrow
from sparkxml_kernels import formats
from sparkxml_kernels.arrow_io import lists_to_csr, vectors_to_csr

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["read_xc", "read_smat", "read_arff_multilabel", "read_svmlight", "read_tsv",
           "from_csr", "from_dense", "to_csr", "labels_to_csr"]


def _list_array(indptr: npt.ArrayLike, values: npt.ArrayLike, typ: Any) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(np.asarray(indptr, np.int32), pa.int32()),
                                    pa.array(values, type=typ))


def vector_array(indptr: np.ndarray, indices: npt.ArrayLike, data: npt.ArrayLike,
                 size: int) -> pa.StructArray:
    n = len(indptr) - 1
    fields = [pa.field("type", pa.int8(), nullable=False), pa.field("size", pa.int32()),
              pa.field("indices", pa.list_(pa.int32())), pa.field("values", pa.list_(pa.float64()))]
    return pa.StructArray.from_arrays(
        [pa.array(np.zeros(n, np.int8)), pa.array(np.full(n, size, np.int32)),
         _list_array(indptr, np.asarray(indices, np.int32), pa.int32()),
         _list_array(indptr, np.asarray(data, np.float64), pa.float64())], fields=fields)


def from_csr(spark: "SparkSession", indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
             num_features: int, labels: Optional[tuple] = None,
             columns: Optional[dict] = None, featuresCol: str = "features",
             labelsCol: str = "labels", numPartitions: Optional[int] = None) -> "DataFrame":
    """Build a DataFrame from CSR arrays.

    Parameters
    ----------
    spark : SparkSession (classic or Spark Connect)
    indptr : int (n + 1,)
    indices : int (nnz,), sorted within rows
    data : float (nnz,)
    num_features : int
        Size of every vector.
    labels : (indptr int (n + 1,), ids int (m,)), optional
        Multi-label targets, becomes an ``array<int>`` column ``labelsCol``.
    columns : dict name -> 1-D numpy array (n,), optional
        Further columns, in order (e.g. ``label`` float64, ``qid`` int64).
    numPartitions : int, optional
        Repartition (round robin) to this many partitions; default: as created.

    Returns
    -------
    DataFrame with ``featuresCol`` (VectorUDT, sparse vectors; its metadata records the size
    as ``ml_attr.num_attrs``), then ``labelsCol`` (array<int>) when ``labels`` is given, then
    ``columns``.
    """
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        IntegerType,
        LongType,
        StructField,
        StructType,
    )

    names, arrays, fields = [featuresCol], [vector_array(indptr, indices, data, num_features)], \
        [StructField(featuresCol, VectorUDT(), False)]
    if labels is not None:
        names.append(labelsCol)
        arrays.append(_list_array(labels[0], np.asarray(labels[1], np.int32), pa.int32()))
        fields.append(StructField(labelsCol, ArrayType(IntegerType(), False), False))
    for name, values in (columns or {}).items():
        values = np.asarray(values)
        if np.issubdtype(values.dtype, np.integer):
            arrays.append(pa.array(values.astype(np.int64)))
            fields.append(StructField(name, LongType(), False))
        else:
            arrays.append(pa.array(values.astype(np.float64)))
            fields.append(StructField(name, DoubleType(), False))
        names.append(name)
    table = pa.Table.from_arrays(arrays, names=names)
    return _with_width(create_dataframe(spark, table, StructType(fields), numPartitions),
                       featuresCol, num_features)


def read_xc(spark: "SparkSession", path: PathLike,
            numPartitions: Optional[int] = None) -> "DataFrame":
    """Read an Extreme Classification Repository file (``N D L`` header, then
    ``l1,l2 f:v ...`` lines) as a DataFrame of ``features`` (VectorUDT of size D) and
    ``labels`` (array<int>, ids < L).

    Raises ``ValueError`` naming the file and line of a malformed line.
    """
    xi, xx, xd, yi, yy, n_feat, _ = formats.read_xc(path)
    return from_csr(spark, xi, xx, xd, n_feat, labels=(yi, yy), numPartitions=numPartitions)


def read_smat(spark: "SparkSession", features_path: PathLike, labels_path: PathLike,
              numPartitions: Optional[int] = None) -> "DataFrame":
    """Read a FastXML C++ pair of sparse text files (features ``trn_X_Xf.txt`` and labels
    ``trn_X_Y.txt``, header ``rows cols`` then ``idx:val`` lines) as a DataFrame of
    ``features`` and ``labels`` (the label ids of the non-zero entries of each row).
    """
    xi, xx, xd, n_feat = formats.read_smat(features_path)
    yi, yy, yd, _ = formats.read_smat(labels_path)
    if len(yi) != len(xi):
        raise ValueError(f"{features_path} has {len(xi) - 1} rows but {labels_path} has "
                         f"{len(yi) - 1}")
    if (yd == 0).any():
        keep = yd != 0
        rows = np.repeat(np.arange(len(yi) - 1), np.diff(yi))[keep]
        yi = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=len(yi) - 1))))
        yy = yy[keep]
    return from_csr(spark, xi, xx, xd, n_feat, labels=(yi, yy), numPartitions=numPartitions)


def read_arff_multilabel(spark: "SparkSession", arff_path: PathLike, xml_path: PathLike,
                         numPartitions: Optional[int] = None) -> "DataFrame":
    """Read a Mulan dataset (ARFF + labels XML) as a DataFrame of ``features`` (the
    non-label attributes, renumbered) and ``labels`` (ids in the XML's order).

    The label names, in id order, are in the ``labels`` column's metadata
    (``df.schema["labels"].metadata["labelNames"]``).
    """
    xi, xx, xd, yi, yy, n_feat, names = formats.read_arff_multilabel(arff_path, xml_path)
    df = from_csr(spark, xi, xx, xd, n_feat, labels=(yi, yy), numPartitions=numPartitions)
    return df.withMetadata("labels", {"labelNames": list(names)})


def read_svmlight(spark: "SparkSession", path: PathLike, query_path: Optional[PathLike] = None,
                  num_features: Optional[int] = None, zero_based: bool = False,
                  numPartitions: Optional[int] = None) -> "DataFrame":
    """Read an svmlight / LightGBM file as a DataFrame of ``label`` (double), ``features``
    (VectorUDT) and, when the file has ``qid:`` tokens or ``query_path`` (a LightGBM
    ``.query`` file of group sizes) is given, ``qid`` (long).

    Feature indices are 1-based in the file unless ``zero_based`` (see
    ``sparkxml_kernels.formats.read_svmlight``).
    """
    y, qid, xi, xx, xd, n_feat = formats.read_svmlight(path, query_path, num_features,
                                                       zero_based)
    cols = {"label": y}
    if qid is not None:
        cols["qid"] = qid
    df = from_csr(spark, xi, xx, xd, n_feat, columns=cols, numPartitions=numPartitions)
    return df.select("label", "features", *(["qid"] if qid is not None else []))


def _dense_vector_array(X: np.ndarray) -> pa.StructArray:
    n, d = X.shape
    fields = [pa.field("type", pa.int8(), nullable=False), pa.field("size", pa.int32()),
              pa.field("indices", pa.list_(pa.int32())), pa.field("values", pa.list_(pa.float64()))]
    return pa.StructArray.from_arrays(
        [pa.array(np.ones(n, np.int8)), pa.nulls(n, pa.int32()), pa.nulls(n, pa.list_(pa.int32())),
         _list_array(np.arange(0, n * d + 1, d, dtype=np.int64),
                     np.ascontiguousarray(X, np.float64).ravel(), pa.float64())], fields=fields)


def from_dense(spark: "SparkSession", X: np.ndarray, columns: Optional[dict] = None,
               featuresCol: str = "features",
               numPartitions: Optional[int] = None) -> "DataFrame":
    """Build a DataFrame of dense vectors from a 2-D array.

    Parameters
    ----------
    X : float (n, d); NaN stays NaN (missing for the GBT estimators)
    columns : dict name -> 1-D numpy array (n,), optional
        Further columns after ``featuresCol`` (integers become long, the rest double).

    Returns
    -------
    DataFrame with ``featuresCol`` (VectorUDT, dense vectors), then ``columns``.
    """
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    X = np.asarray(X, np.float64)
    if X.ndim != 2:
        raise ValueError(f"from_dense: X must be 2-D, got shape {X.shape}")
    names, arrays = [featuresCol], [_dense_vector_array(X)]
    fields = [StructField(featuresCol, VectorUDT(), False)]
    for name, values in (columns or {}).items():
        values = np.asarray(values)
        if len(values) != X.shape[0]:
            raise ValueError(f"from_dense: column '{name}' has {len(values)} rows, X has "
                             f"{X.shape[0]}")
        integer = np.issubdtype(values.dtype, np.integer)
        arrays.append(pa.array(values.astype(np.int64 if integer else np.float64)))
        fields.append(StructField(name, LongType() if integer else DoubleType(), False))
        names.append(name)
    table = pa.Table.from_arrays(arrays, names=names)
    return _with_width(create_dataframe(spark, table, StructType(fields), numPartitions),
                       featuresCol, X.shape[1])


def _with_width(df: "DataFrame", col: str, width: int) -> "DataFrame":
    # Spark ML's attribute-group metadata (as VectorAssembler writes it): the vector size is
    # known from the schema without a job.
    return df.withMetadata(col, {"ml_attr": {"num_attrs": int(width)}})


def num_features(df: "DataFrame", featuresCol: str = "features") -> Optional[int]:
    """The vector size recorded in ``featuresCol``'s Spark ML metadata (``ml_attr.num_attrs``,
    set by these readers and by ``VectorAssembler``), or None."""
    meta = df.schema[featuresCol].metadata or {}
    n = (meta.get("ml_attr") or {}).get("num_attrs")
    return None if n is None else int(n)


def read_tsv(spark: "SparkSession", path: PathLike, query_path: Optional[PathLike] = None,
             delimiter: str = "\t", num_features: Optional[int] = None,
             numPartitions: Optional[int] = None) -> "DataFrame":
    """Read a dense delimited text file with the label first (LightGBM's ``binary.train``
    layout) as a DataFrame of ``label`` (double), ``features`` (dense VectorUDT; an empty
    field or ``nan`` is NaN, i.e. missing) and, with ``query_path`` (a LightGBM ``.query``
    file of group sizes), ``qid`` (long). ``num_features``, when given, is checked.

    Raises ``ValueError`` naming the file and line of a malformed line.
    """
    y, qid, X = formats.read_tsv(path, query_path, delimiter)
    if num_features is not None and X.shape[1] != num_features:
        raise ValueError(f"{path} has {X.shape[1]} features a row, expected {num_features}")
    cols = {"label": y}
    if qid is not None:
        cols["qid"] = qid
    df = from_dense(spark, X, columns=cols, numPartitions=numPartitions)
    return df.select("label", "features", *(["qid"] if qid is not None else []))


def to_csr(df: "DataFrame", featuresCol: str = "features", num_features: Optional[int] = None,
           value_dtype: npt.DTypeLike = np.float64) -> tuple:
    """Collect a vector column to the driver as CSR (rows in the DataFrame's order): the
    ``(indptr, indices, data, num_features)`` of
    :func:`sparkxml_kernels.arrow_io.vectors_to_csr`, which checks ``num_features``."""
    table = to_arrow(df.select(featuresCol))
    return vectors_to_csr(table.column(0), featuresCol, num_features, value_dtype)


def labels_to_csr(df: "DataFrame", labelsCol: str = "labels") -> tuple:
    """Collect an ``array<int>`` column to the driver as (indptr int64, ids int32)."""
    table = to_arrow(df.select(labelsCol))
    return lists_to_csr(table.column(0), labelsCol)
