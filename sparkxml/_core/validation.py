"""Column checks every estimator runs before any Spark job: the column exists and has the
expected type; the message names the param and the column. And the one-job aggregate the
data checks of a fit run (:func:`aggregate_once`)."""
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


def inferred_classes(label: str, label_max, distinct, limit: int,
                     explicit: bool = True) -> int:
    """numClasses from the largest label (at least 2), refused on the driver, before any
    training, when it exceeds ``limit`` or is much larger than the number of distinct labels
    (``distinct``, approximate; None: unknown): a label such as 10**9 among 0 and 1 would
    otherwise size every per-class array by a billion. ``explicit``: the estimator has a
    numClasses param that can ask for that many classes anyway."""
    k = max(2, int(min(label_max, 2.0**62)) + 1)
    if k > limit:
        raise ValueError(f"labelCol: column '{label}' holds the label {label_max!r}, so "
                         f"numClasses would be {k}, above the limit of {limit} classes; "
                         f"class labels must be 0, 1, ..., numClasses-1 (re-index them, e.g. "
                         f"with StringIndexer)")
    if distinct is not None and k > 2 * int(distinct) + 10:
        anyway = (f", or set numClasses explicitly to train {k} classes anyway"
                  if explicit else "")
        raise ValueError(f"labelCol: column '{label}' holds the label {label_max!r}, so "
                         f"numClasses would be {k}, but only about {int(distinct)} distinct "
                         f"labels occur: re-index the labels to 0..{int(distinct) - 1} (e.g. "
                         f"with StringIndexer){anyway}")
    return k


# bound on the values a model or its training state holds per feature, dense (2 GiB of
# float64): a vector column's size is the user's to choose (a SparseVector of size 2**31 - 1
# with 3 non-zeros is valid), and every family that keeps per-feature arrays would otherwise
# ask for that much memory in each task before it could say why
MAX_DENSE_VALUES = 1 << 28


def check_dense_width(col: str, d: int, per_feature: int, what: str,
                      limit: int = MAX_DENSE_VALUES) -> None:
    """Refuse, on the driver, a vector size ``d`` whose dense per-feature arrays
    (``per_feature`` values a feature: ``what``, e.g. "factorSize + 1 = 9 values") exceed
    ``limit`` values."""
    if int(d) * int(per_feature) > limit:
        raise ValueError(f"featuresCol: column '{col}' holds vectors of size {d}: {what} a "
                         f"feature make {int(d) * int(per_feature)} values, above the limit "
                         f"of {limit}; re-index the features to those that occur (or hash "
                         f"them into fewer)")


def refuse_null_vectors(dataset, col: str, param: str = "featuresCol") -> None:
    """Raise naming ``col`` when it holds a null vector (one small job; call it where a check
    already failed in a way a null explains, e.g. a vector "of size 0")."""
    from pyspark.sql import functions as F

    n = dataset.where(F.col("`" + col.replace("`", "``") + "`").isNull()).limit(1000).count()
    if n:
        raise ValueError(f"{param}: column '{col}' holds {n if n < 1000 else 'at least 1000'} "
                         f"null vector(s); drop or fill those rows")


def aggregate_once(dataset, aggs) -> dict:
    """``dataset.agg(*aggs)`` as a dict, in ONE Spark job without a shuffle: the aggregates
    ride along a no-op write as observed metrics (``DataFrame.observe``: each task keeps a
    partial aggregate, the driver merges them). A plain ``agg`` shuffles its partial
    aggregates to one partition, which adaptive query execution runs as a job of its own
    before the final one. Falls back to ``agg`` on Spark Connect 3.5 (whose clients do not
    take an ``Observation``)."""
    from sparkxml._core.compat import PYSPARK_VERSION, is_connect

    def plain():
        return dataset.agg(*aggs).collect()[0].asDict()

    if is_connect(dataset) and PYSPARK_VERSION < (4, 0):
        return plain()
    try:
        import uuid

        from pyspark.sql import Observation

        # a name of its own: fits in other threads observe their frames at the same time
        obs = Observation(f"sparkxml_checks_{uuid.uuid4().hex}")
        observed = dataset.observe(obs, *aggs)
    except Exception:  # noqa: BLE001 - no Observation on this client
        return plain()
    observed.write.format("noop").mode("overwrite").save()
    return dict(obs.get)
